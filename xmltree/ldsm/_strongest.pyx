# distutils: language = c++
"""Each row's strongest features: what LdSM trees grow on and route by.

A router needs few of a long document's features, and node training costs
time in proportion to them (see ``LdSM(max_row_features=...)`` and
``route_row_features``). The cut
runs once per ``fit`` and once per prediction call, so it is a kernel: a
partial selection per row instead of two stable sorts of every entry (which
took a tenth of yahoo_arts' whole fit).
"""

from libc.math cimport fabsf
from libcpp.algorithm cimport nth_element, sort
from libcpp.utility cimport pair
from libcpp.vector cimport vector

import numpy as np
import scipy.sparse as sp

from .._kernels._sparse cimport CSRView, csr_view
from .._kernels._types cimport float32_t, index_t, offset_t

__all__ = ["keep_strongest"]


def keep_strongest(matrix, index_t max_per_row):
    """Each row's `max_per_row` entries of largest magnitude, in the kernels' layout.

    Parameters
    ----------
    matrix : scipy.sparse.csr_matrix
        As ``xmltree._validation.check_features`` returns it.
    max_per_row : int
        Entries a row keeps at most, >= 1.

    Returns
    -------
    scipy.sparse.csr_matrix
        Of equal magnitudes, the smaller column ids stay; kept entries keep
        their order. `matrix` itself when no row is longer.
    """
    lengths = np.diff(matrix.indptr)
    if lengths.max(initial=0) <= max_per_row:
        return matrix
    indptr = np.zeros(matrix.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.minimum(lengths, max_per_row), out=indptr[1:])
    n_kept = indptr[matrix.shape[0]]
    indices = np.empty(n_kept, dtype=np.int32)
    values = np.empty(n_kept, dtype=np.float32)
    cdef CSRView rows = csr_view(matrix)
    cdef offset_t[::1] out_indptr = indptr
    cdef index_t[::1] out_indices = indices
    cdef float32_t[::1] out_values = values
    with nogil:
        _select_rows(&rows, max_per_row, &out_indptr[0],
                     &out_indices[0] if out_indices.shape[0] else NULL,
                     &out_values[0] if out_values.shape[0] else NULL)
    strongest = sp.csr_matrix((values, indices, indptr), shape=matrix.shape, copy=False)
    # scipy may have shrunk the index dtypes; the kernels read int32 / int64.
    strongest.indices = indices
    strongest.indptr = indptr
    strongest.has_canonical_format = True
    return strongest


cdef void _select_rows(const CSRView* rows, index_t max_per_row, const offset_t* out_indptr,
                       index_t* out_indices, float32_t* out_values) noexcept nogil:
    """Write the kept entries of every row at ``out_indptr[row]``."""
    # (-|value|, position): ascending order puts the strongest first and, of
    # equal magnitudes, the smaller positions (column ids).
    cdef vector[pair[float32_t, index_t]] ranked
    cdef vector[index_t] kept
    cdef index_t row, k, n_entries
    cdef offset_t start, at
    for row in range(rows.n_rows):
        start = rows.indptr[row]
        n_entries = <index_t>(rows.indptr[row + 1] - start)
        at = out_indptr[row]
        if n_entries <= max_per_row:
            for k in range(n_entries):
                out_indices[at + k] = rows.indices[start + k]
                out_values[at + k] = rows.values[start + k]
            continue
        ranked.clear()
        for k in range(n_entries):
            ranked.push_back(pair[float32_t, index_t](-fabsf(rows.values[start + k]), k))
        nth_element(ranked.begin(), ranked.begin() + max_per_row, ranked.end())
        kept.clear()
        for k in range(max_per_row):
            kept.push_back(ranked[k].second)
        sort(kept.begin(), kept.end())
        for k in range(max_per_row):
            out_indices[at + k] = rows.indices[start + kept[k]]
            out_values[at + k] = rows.values[start + kept[k]]
