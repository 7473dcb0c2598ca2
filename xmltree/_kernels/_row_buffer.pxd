# Per-thread growing CSR output of a parallel kernel.
#
# A kernel that produces a variable number of (column, value) pairs per row
# on several threads appends them to its thread's RowBuffer and records, per
# row, which buffer holds the row, where it starts and how many pairs it has;
# `gather_rows` then moves everything into one CSR matrix, rows in order.
# Buffers grow with realloc inside `noexcept nogil` code: a failed growth sets
# `failed` (the caller raises MemoryError), following the policy of _types.pxd.

from ._types cimport float32_t, index_t, offset_t


cdef struct RowBuffer:
    index_t* indices     # column ids, row after row
    float32_t* values    # values of `indices`
    offset_t size        # pairs written
    offset_t capacity    # pairs allocated
    bint failed          # an allocation failed; the output is incomplete


cdef bint reserve_pairs(RowBuffer* buffer, offset_t extra) noexcept nogil

cdef RowBuffer* allocate_row_buffers(int n_buffers) except NULL

cdef void free_row_buffers(RowBuffer* buffers, int n_buffers) noexcept nogil

cdef int check_row_buffers(const RowBuffer* buffers, int n_buffers) except -1

cdef object gather_rows(RowBuffer* buffers, int n_buffers, row_buffer, row_start, row_nnz,
                        index_t n_cols)
