# Fixed-width types shared by every compiled module of xmltree.
# This is the only place where they are defined: kernels cimport them from here.

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

ctypedef float float32_t      # feature values, weights, scores
ctypedef double float64_t     # accumulators where float32 would lose precision
ctypedef int32_t index_t      # feature, label, node and example ids
ctypedef int64_t offset_t     # CSR indptr entries (nnz may exceed 2**31)
