"""Per-thread growing CSR output, gathered into one matrix (see ``_row_buffer.pxd``)."""

cimport cython
from libc.stdlib cimport calloc, free, realloc

import numpy as np
import scipy.sparse as sp

from ._types cimport float32_t, index_t, offset_t


cdef bint reserve_pairs(RowBuffer* buffer, offset_t extra) noexcept nogil:
    """Make room for `extra` more pairs; False (and `failed` set) if memory runs out."""
    cdef offset_t needed = buffer.size + extra, capacity
    cdef void* grown
    if buffer.failed:
        return False
    if needed <= buffer.capacity:
        return True
    capacity = max(needed, 2 * buffer.capacity, 1024)
    grown = realloc(buffer.indices, capacity * sizeof(index_t))
    if grown == NULL:
        buffer.failed = True
        return False
    buffer.indices = <index_t*>grown
    grown = realloc(buffer.values, capacity * sizeof(float32_t))
    if grown == NULL:
        buffer.failed = True
        return False
    buffer.values = <float32_t*>grown
    buffer.capacity = capacity
    return True


cdef RowBuffer* allocate_row_buffers(int n_buffers) except NULL:
    """Return `n_buffers` empty buffers (release them with `free_row_buffers`)."""
    cdef RowBuffer* buffers = <RowBuffer*>calloc(n_buffers, sizeof(RowBuffer))
    if buffers == NULL:
        raise MemoryError()
    return buffers


cdef void _empty_buffer(RowBuffer* buffer) noexcept nogil:
    """Free a buffer's arrays and leave it empty (freeing it again does nothing)."""
    free(buffer.indices)
    free(buffer.values)
    buffer.indices = NULL
    buffer.values = NULL
    buffer.size = 0
    buffer.capacity = 0


cdef void free_row_buffers(RowBuffer* buffers, int n_buffers) noexcept nogil:
    """Release the buffers' arrays and the array of buffers itself."""
    cdef int b
    if buffers == NULL:
        return
    for b in range(n_buffers):
        _empty_buffer(&buffers[b])
    free(buffers)


cdef int check_row_buffers(const RowBuffer* buffers, int n_buffers) except -1:
    """Raise MemoryError if a buffer could not grow."""
    cdef int b
    for b in range(n_buffers):
        if buffers[b].failed:
            raise MemoryError("cannot allocate memory for the kernel's output")
    return 0


@cython.wraparound(True)
cdef object gather_rows(RowBuffer* buffers, int n_buffers, row_buffer, row_start, row_nnz,
                        index_t n_cols):
    """Move the rows spread over `buffers` into one float32 CSR matrix.

    Row ``i`` is ``row_nnz[i]`` pairs starting at ``row_start[i]`` in buffer
    ``row_buffer[i]``; the buffers must be checked with `check_row_buffers`.
    The rows are copied buffer after buffer, and each buffer's arrays are
    freed once its rows are copied, so that the matrix and all the buffers
    are never held at once (the label classifiers' weights at full scale:
    a gigabyte). `free_row_buffers` still releases the buffers themselves.
    """
    cdef index_t n_rows = row_nnz.shape[0]
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(row_nnz, out=indptr[1:])
    indices = np.empty(indptr[-1], dtype=np.int32)
    data = np.empty(indptr[-1], dtype=np.float32)
    cdef index_t[::1] indices_view = indices
    cdef float32_t[::1] data_view = data
    cdef const offset_t[::1] indptr_view = indptr
    cdef const index_t[::1] buffer_view = row_buffer
    cdef const offset_t[::1] start_view = row_start
    cdef index_t i
    cdef int b
    cdef offset_t p, source
    cdef RowBuffer* buffer
    with nogil:
        for b in range(n_buffers):
            buffer = &buffers[b]
            for i in range(n_rows):
                if buffer_view[i] != b:
                    continue
                source = start_view[i]
                for p in range(indptr_view[i], indptr_view[i + 1]):
                    indices_view[p] = buffer.indices[source]
                    data_view[p] = buffer.values[source]
                    source += 1
            _empty_buffer(buffer)
    return sp.csr_matrix((data, indices, indptr), shape=(n_rows, n_cols))
