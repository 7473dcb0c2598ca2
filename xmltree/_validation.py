"""Conversion and validation of user-supplied feature and label matrices.

Compiled kernels run with bounds checking off, so everything they read must
pass through here first: CSR structure, dtypes, sorted in-range indices and
finite values are all checked at this Python boundary, once per ``fit`` and
once per ``predict``, by the estimator that receives the data. Kernels and
the estimators' private helpers take the checked matrices as they are
(scikit-learn's ``check_input=False``); model files are checked on loading by
each estimator's ``_from_state``.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import scipy.sparse as sp

from .exceptions import DataFormatError

__all__ = ["check_features", "check_labels", "check_csr_structure", "make_csr", "take_rows",
           "widen"]


def make_csr(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray,
             shape: tuple[int, int]) -> sp.csr_matrix:
    """Wrap canonical CSR arrays as the matrix handed to users.

    ``indices`` and ``indptr`` get one common dtype, int32 unless the matrix
    is too large for it, which is what scipy's own sparse routines require
    (several of them refuse mixed index dtypes). Kernels get their int64
    ``indptr`` from :func:`check_features` / :func:`check_labels` instead.

    Parameters
    ----------
    data, indices, indptr : numpy.ndarray
        CSR arrays with sorted, unique column indices in every row.
    shape : tuple of int
        ``(n_rows, n_cols)``.

    Returns
    -------
    scipy.sparse.csr_matrix
        Marked as canonical; shares ``data`` (and the index arrays when no
        conversion is needed).
    """
    fits_int32 = indices.shape[0] < 2**31 and max(shape) < 2**31
    index_dtype = np.int32 if fits_int32 else np.int64
    matrix = sp.csr_matrix(
        (data, indices.astype(index_dtype, copy=False), indptr.astype(index_dtype, copy=False)),
        shape=shape, copy=False,
    )
    matrix.has_canonical_format = True
    return matrix


def check_csr_structure(indptr: np.ndarray, indices: np.ndarray, shape: tuple[int, int],
                        what: str) -> None:
    """Check that CSR arrays describe a valid matrix with sorted unique columns.

    Used on every matrix handed to compiled code, including the CSR blocks
    stored inside model files.

    Parameters
    ----------
    indptr : numpy.ndarray of shape (n_rows + 1,)
        Row pointers.
    indices : numpy.ndarray of shape (nnz,)
        Column indices.
    shape : tuple of int
        ``(n_rows, n_cols)``.
    what : str
        Name used in error messages (e.g. ``"X"``).

    Raises
    ------
    DataFormatError
        If ``indptr`` is not monotone, its ends disagree with the stored
        entries, or a column index is out of range, unsorted or duplicated.
    """
    n_rows, n_cols = shape
    if indptr.shape[0] != n_rows + 1 or indptr[0] != 0 or indptr[-1] != indices.shape[0]:
        raise DataFormatError(f"{what}: CSR indptr does not match the stored entries")
    row_lengths = np.diff(indptr)
    if np.any(row_lengths < 0):
        raise DataFormatError(f"{what}: CSR indptr is not non-decreasing")
    if indices.size:
        if indices.min() < 0 or indices.max() >= n_cols:
            raise DataFormatError(f"{what}: column index out of range [0, {n_cols})")
        # Within a row, indices must strictly increase; across a row
        # boundary they may drop. Boolean masks only: this runs on every
        # matrix given to a kernel, so it costs ~3 bytes per entry, not a
        # row id per entry.
        row_start = np.zeros(indices.shape[0], dtype=bool)
        row_start[indptr[:-1][row_lengths > 0]] = True
        bad = np.flatnonzero((indices[1:] <= indices[:-1]) & ~row_start[1:])
        if bad.size:
            row = int(np.searchsorted(indptr, bad[0] + 1, side="right")) - 1
            raise DataFormatError(f"{what}: row {row} has unsorted or duplicate column indices")


def check_features(X, *, n_features: int | None = None, what: str = "X") -> sp.csr_matrix:
    """Return ``X`` as a validated CSR matrix for the compiled kernels.

    Parameters
    ----------
    X : array-like or scipy sparse matrix of shape (n_samples, n_features)
        Feature matrix, dense or sparse.
    n_features : int, optional
        Expected number of columns (e.g. from a fitted model). Inputs with
        fewer columns are widened with empty columns; more columns is an error.
    what : str, default="X"
        Name used in error messages.

    Returns
    -------
    scipy.sparse.csr_matrix
        float32 values, int32 indices, int64 indptr, sorted without
        duplicates, no NaN or infinite values. A copy is made only when a
        conversion is needed.

    Raises
    ------
    DataFormatError
        On non-2-D input, non-finite values, or too many columns.
    """
    if sp.issparse(X):
        X = _canonical_csr(X)
    else:
        try:
            dense = np.asarray(X, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise DataFormatError(f"{what}: cannot be converted to a float array ({exc})") from exc
        if dense.ndim != 2:
            raise DataFormatError(f"{what}: expected a 2-D array, got {dense.ndim}-D")
        if not np.all(np.isfinite(dense)):
            raise DataFormatError(f"{what}: contains NaN or infinite values")
        X = sp.csr_matrix(dense)
    if X.data.size and not np.all(np.isfinite(X.data)):
        raise DataFormatError(f"{what}: contains NaN or infinite values")
    if n_features is not None:
        if X.shape[1] > n_features:
            raise DataFormatError(
                f"{what}: has {X.shape[1]} features but the model was fitted with {n_features}"
            )
        if X.shape[1] < n_features:
            X = widen(X, n_features)
    _check_index_range(X.shape, what)
    X.indices = X.indices.astype(np.int32, copy=False)
    X.indptr = X.indptr.astype(np.int64, copy=False)
    check_csr_structure(X.indptr, X.indices, X.shape, what)
    return X


def check_labels(Y, *, n_samples: int | None = None, n_labels: int | None = None,
                 what: str = "Y") -> sp.csr_matrix:
    """Return the label sets ``Y`` as a validated binary CSR matrix.

    Parameters
    ----------
    Y : array-like, scipy sparse matrix, or iterable of label lists
        Either a 0/1 indicator matrix of shape (n_samples, n_labels), dense
        or sparse, or one iterable of non-negative integer label ids per
        sample (``[[0, 3], [], [2]]``); an empty list is a sample with no
        labels.
    n_samples : int, optional
        Expected number of rows.
    n_labels : int, optional
        Number of labels; for label lists it defaults to ``max id + 1``.
    what : str, default="Y"
        Name used in error messages.

    Returns
    -------
    scipy.sparse.csr_matrix
        float32 ones, int32 sorted unique indices, int64 indptr.

    Raises
    ------
    DataFormatError
        On negative or out-of-range ids, non-binary values, or a row count
        that disagrees with ``n_samples``.
    """
    if sp.issparse(Y) or isinstance(Y, np.ndarray):
        Y = _canonical_csr(Y, drop_zeros=True)
        if Y.data.size and not np.all(Y.data == 1):
            raise DataFormatError(f"{what}: label indicator matrix must contain only 0 and 1")
        if n_labels is not None and Y.shape[1] != n_labels:
            if Y.shape[1] > n_labels:
                raise DataFormatError(f"{what}: has {Y.shape[1]} labels, expected {n_labels}")
            Y = widen(Y, n_labels)
    else:
        Y = _label_lists_to_csr(Y, n_labels, what)
    if n_samples is not None and Y.shape[0] != n_samples:
        raise DataFormatError(f"{what}: has {Y.shape[0]} rows but X has {n_samples}")
    _check_index_range(Y.shape, what)
    Y.indices = Y.indices.astype(np.int32, copy=False)
    Y.indptr = Y.indptr.astype(np.int64, copy=False)
    check_csr_structure(Y.indptr, Y.indices, Y.shape, what)
    return Y


def take_rows(matrix: sp.csr_matrix, rows: np.ndarray) -> sp.csr_matrix:
    """Select rows of a checked matrix, keeping the kernels' layout.

    Row selection keeps every row sorted and finite, but scipy may shrink
    the index dtypes; they are restored here rather than checking the
    result again.
    """
    taken = matrix[rows]
    taken.indices = taken.indices.astype(np.int32, copy=False)
    taken.indptr = taken.indptr.astype(np.int64, copy=False)
    return taken


def widen(matrix: sp.csr_matrix, n_cols: int) -> sp.csr_matrix:
    """The same rows with empty columns appended up to `n_cols` (arrays shared)."""
    return sp.csr_matrix((matrix.data, matrix.indices, matrix.indptr),
                         shape=(matrix.shape[0], n_cols))


def _check_index_range(shape: tuple[int, int], what: str) -> None:
    """Row and column ids must fit the kernels' int32 ``index_t``."""
    if max(shape) >= np.iinfo(np.int32).max:
        raise DataFormatError(f"{what}: shape {shape} exceeds the int32 index range")


def _canonical_csr(matrix, drop_zeros: bool = False) -> sp.csr_matrix:
    """Return a float32 CSR copy of ``matrix`` with sorted, summed duplicates.

    The caller's arrays are never modified: scipy's in-place helpers would
    rewrite them (and need indices and indptr of one dtype).
    """
    matrix = sp.csr_matrix(matrix, dtype=np.float32)
    if matrix.has_canonical_format and not (drop_zeros and not matrix.data.all()):
        return matrix
    matrix = matrix.copy()
    matrix.indices = matrix.indices.astype(matrix.indptr.dtype)
    matrix.sum_duplicates()
    if drop_zeros:
        matrix.eliminate_zeros()
    return matrix


def _label_lists_to_csr(rows: Iterable, n_labels: int | None, what: str) -> sp.csr_matrix:
    """Convert one iterable of integer label ids per sample to binary CSR."""
    indptr = [0]
    indices: list[int] = []
    for i, row in enumerate(rows):
        try:
            ids = sorted({int(label) for label in row})
        except (TypeError, ValueError) as exc:
            raise DataFormatError(f"{what}: row {i} is not a list of integer label ids") from exc
        if ids and ids[0] < 0:
            raise DataFormatError(f"{what}: row {i} has a negative label id {ids[0]}")
        indices.extend(ids)
        indptr.append(len(indices))
    max_id = max(indices) if indices else -1
    if n_labels is None:
        n_labels = max_id + 1
    elif max_id >= n_labels:
        raise DataFormatError(f"{what}: label id {max_id} out of range [0, {n_labels})")
    data = np.ones(len(indices), dtype=np.float32)
    return sp.csr_matrix(
        (data, np.asarray(indices, dtype=np.int32), np.asarray(indptr, dtype=np.int64)),
        shape=(len(indptr) - 1, n_labels),
    )
