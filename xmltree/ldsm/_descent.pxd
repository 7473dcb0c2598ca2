# The forest descent of prediction (see ``_descent.pyx``).

from ._forest_arrays cimport ForestArrays, Scratch
from .._kernels._sparse cimport CSRView
from .._kernels._types cimport index_t


cdef void descend_block(const ForestArrays* f, Scratch* s, const CSRView* rows,
                        index_t first, index_t n_rows) noexcept nogil
