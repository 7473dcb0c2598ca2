# The one view of a sparse matrix that every kernel of xmltree reads.
#
# A CSRView holds raw pointers into the arrays of a scipy.sparse.csr_matrix
# in the layout that xmltree._validation.check_features and check_labels
# return: int64 indptr, int32 column ids sorted and unique within each row,
# float32 values, no NaN or infinity. Kernels trust it (bounds checks are
# off); the Python caller checks the matrix once and keeps it referenced for
# as long as the view is used. A matrix without stored entries gives NULL
# `indices` and `values`, never dereferenced since every row is then empty.

from ._prefetch cimport prefetch
from ._types cimport float32_t, index_t, offset_t


cdef struct CSRView:
    const offset_t* indptr        # (n_rows + 1,) row pointers
    const index_t* indices        # column ids, sorted within each row
    const float32_t* values       # stored values (1 for a label matrix)
    index_t n_rows                # rows: examples
    index_t n_cols                # columns: features or labels


cdef inline CSRView csr_view(object matrix) except *:
    """Return the view of a checked CSR matrix (see the notes above)."""
    cdef const offset_t[::1] indptr = matrix.indptr
    cdef const index_t[::1] indices = matrix.indices
    cdef const float32_t[::1] values = matrix.data
    cdef CSRView view
    view.indptr = &indptr[0]
    view.indices = &indices[0] if indices.shape[0] else NULL
    view.values = &values[0] if values.shape[0] else NULL
    view.n_rows = <index_t>matrix.shape[0]
    view.n_cols = <index_t>matrix.shape[1]
    return view


cdef inline const index_t* row_indices(const CSRView* X, index_t row) noexcept nogil:
    """Column ids of `row` (NULL for a matrix without entries)."""
    return X.indices + X.indptr[row] if X.indices != NULL else NULL


cdef inline const float32_t* row_values(const CSRView* X, index_t row) noexcept nogil:
    """Values of `row`, aligned with :func:`row_indices`."""
    return X.values + X.indptr[row] if X.values != NULL else NULL


cdef inline index_t row_nnz(const CSRView* X, index_t row) noexcept nogil:
    """Number of stored entries of `row`."""
    return <index_t>(X.indptr[row + 1] - X.indptr[row])


cdef inline void prefetch_row(const CSRView* X, index_t row) noexcept nogil:
    """Start loading the column ids and values of `row`, for kernels that
    visit rows in an order of their own."""
    cdef const index_t* indices = row_indices(X, row)
    cdef const float32_t* values = row_values(X, row)
    cdef index_t k
    # 16 entries of 4 bytes fill one 64-byte cache line.
    for k in range(0, row_nnz(X, row), 16):
        prefetch(indices + k)
        prefetch(values + k)
