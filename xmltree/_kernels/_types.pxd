# Fixed-width types shared by every compiled module of xmltree.
# This is the only place where they are defined: kernels cimport them from here.
#
# The failure policy of every kernel, stated here because every kernel
# cimports this file:
#
# * Kernels run without the GIL on input the Python layer checked once
#   (xmltree/_validation.py, the CSRView of _sparse.pxd, check_tree for model
#   files); they do not check it again and cannot fail on data.
# * What is left is running out of memory. A kernel that grows plain C
#   buffers as it goes (realloc) is `noexcept nogil` and reports the failure
#   by its return value (-1, NULL, False) or a `failed` flag; its Python
#   caller raises MemoryError (_tree's prediction scratch, _learned_tree's).
# * A C++ container never grows inside a `noexcept` function, where a
#   bad_alloc could not propagate: its capacity is reserved before the
#   kernel runs (LOMTreeBuilder's nodes, NodeTrainer's scratch), or the
#   function that grows it is declared `except -1` / `except NULL`, so that
#   Cython turns the C++ exception into MemoryError, taking the GIL only to
#   raise (LdSM's TreeBuilder, the LOMtree class statistics). An exception
#   raised by a Python callback (a progress callback) travels the same way.

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

ctypedef float float32_t      # feature values, weights, scores
ctypedef double float64_t     # accumulators where float32 would lose precision
ctypedef int32_t index_t      # feature, label, node and example ids
ctypedef int64_t offset_t     # CSR indptr entries (nnz may exceed 2**31)
