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

import numbers
from collections.abc import Iterable

import numpy as np
import scipy.sparse as sp

from .exceptions import DataFormatError

__all__ = ["check_features", "check_labels", "check_csr_structure", "kernel_csr", "make_csr",
           "take_rows", "widen"]


def kernel_csr(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray,
               shape: tuple[int, int]) -> sp.csr_matrix:
    """Wrap canonical CSR arrays in the layout the compiled kernels read.

    int32 feature ids and int64 row pointers, whatever the size: the arrays
    are assigned after construction, because scipy's constructor may narrow
    the pointers to int32. Marked canonical; shares the arrays it can.
    """
    matrix = sp.csr_matrix(shape, dtype=data.dtype)
    matrix.data = data
    matrix.indices = indices.astype(np.int32, copy=False)
    matrix.indptr = indptr.astype(np.int64, copy=False)
    matrix.has_canonical_format = True
    return matrix


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
    _check_pointers(indptr, indices.shape[0], n_rows, what)
    _check_ids(indices, n_cols, "column id", what)
    if indices.size:
        # Within a row, indices must strictly increase; across a row
        # boundary they may drop. Boolean masks only: this runs on every
        # matrix given to a kernel, so it costs ~3 bytes per entry, not a
        # row id per entry.
        row_lengths = np.diff(indptr)
        row_start = np.zeros(indices.shape[0], dtype=bool)
        row_start[indptr[:-1][row_lengths > 0]] = True
        bad = np.flatnonzero((indices[1:] <= indices[:-1]) & ~row_start[1:])
        if bad.size:
            row = int(np.searchsorted(indptr, bad[0] + 1, side="right")) - 1
            raise DataFormatError(f"{what}: row {row} has unsorted or duplicate column indices")


def _check_pointers(indptr: np.ndarray, n_entries: int, n_rows: int, what: str) -> None:
    """``indptr`` must run from 0 to `n_entries` without decreasing, one step per row."""
    if indptr.shape[0] != n_rows + 1 or indptr[0] != 0 or indptr[-1] != n_entries:
        raise DataFormatError(f"{what}: CSR indptr does not match the stored entries")
    if np.any(indptr[1:] < indptr[:-1]):
        raise DataFormatError(f"{what}: CSR indptr is not non-decreasing")


def _check_ids(ids: np.ndarray, n_ids: int, name: str, what: str) -> None:
    """Every id must be in ``[0, n_ids)``, whatever its integer dtype (nothing wraps)."""
    if ids.size:
        low, high = ids.min(), ids.max()
        if low < 0 or high >= n_ids:
            raise DataFormatError(f"{what}: {name} {low if low < 0 else high} out of range "
                                  f"[0, {n_ids})")


def _index_array(matrix, name: str, what: str) -> np.ndarray:
    """One index array of a sparse matrix, which must be a 1-D integer array."""
    array = getattr(matrix, name)
    if not isinstance(array, np.ndarray) or array.ndim != 1 or array.dtype.kind not in "iu":
        raise DataFormatError(f"{what}: sparse {name} must be a 1-D integer array")
    return array


def _check_sparse_structure(matrix, what: str):
    """Check the raw arrays of a scipy sparse matrix before scipy converts it.

    scipy's own routines (sorting, summing duplicates, format conversions)
    trust these arrays and read out of bounds, or abort, when they are
    inconsistent; a caller may have built or modified them by hand.

    Returns
    -------
    scipy sparse matrix or array
        ``matrix`` itself for the CSR, CSC, COO and BSR formats, whose
        pointers and ids are now known to be in range; other formats, which
        scipy stores as Python containers, converted to COO and checked.

    Raises
    ------
    DataFormatError
        On a matrix that is not 2-D, too large for the kernels' int32 ids,
        or whose pointers, ids or value arrays disagree.
    """
    if len(matrix.shape) != 2:
        raise DataFormatError(f"{what}: expected a 2-D matrix, got {len(matrix.shape)}-D")
    _check_index_range(matrix.shape, what)
    if matrix.format not in ("csr", "csc", "coo", "bsr"):
        try:
            matrix = matrix.tocoo()
        except (TypeError, ValueError, IndexError) as exc:
            raise DataFormatError(f"{what}: malformed {matrix.format} matrix ({exc})") from exc
    data = matrix.data
    if not isinstance(data, np.ndarray):
        raise DataFormatError(f"{what}: sparse data must be an array")
    if matrix.format == "coo":
        rows, columns = (_index_array(matrix, name, what) for name in ("row", "col"))
        if not rows.shape == columns.shape == data.shape:
            raise DataFormatError(f"{what}: COO row, col and data differ in length")
        _check_ids(rows, matrix.shape[0], "row id", what)
        _check_ids(columns, matrix.shape[1], "column id", what)
        return matrix
    n_major, n_minor = matrix.shape if matrix.format != "csc" else matrix.shape[::-1]
    block = (1, 1)
    if matrix.format == "bsr":
        block = matrix.blocksize
        if matrix.shape[0] % block[0] or matrix.shape[1] % block[1]:
            raise DataFormatError(f"{what}: BSR blocks {block} do not tile shape {matrix.shape}")
        n_major, n_minor = matrix.shape[0] // block[0], matrix.shape[1] // block[1]
    indptr, indices = (_index_array(matrix, name, what) for name in ("indptr", "indices"))
    if data.shape != (indices.shape[0],) + (block if matrix.format == "bsr" else ()):
        raise DataFormatError(f"{what}: sparse data and indices differ in length")
    _check_pointers(indptr, indices.shape[0], n_major, what)
    _check_ids(indices, n_minor, "row id" if matrix.format == "csc" else "column id", what)
    return matrix


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
        duplicates or stored zeros, no NaN or infinite values. Values too
        small for float32 (such as 1e-50) become zeros and, like explicit
        zeros, are not stored: the same data gives the same matrix however
        it was stored. A copy is made only when a conversion is needed.

    Raises
    ------
    DataFormatError
        On non-2-D input, values that are not real numbers (strings,
        complex numbers), NaN or infinite values, finite values too large
        for float32, too many columns, or a sparse matrix whose own arrays
        are inconsistent (checked before scipy touches them).
    """
    if sp.issparse(X):
        X = _check_sparse_structure(X, what)
        _check_values(X.data, what)
        X = _canonical_csr(X, what, drop_zeros=True)
    else:
        dense = _check_values(_dense_array(X, what), what)
        if dense.ndim != 2:
            raise DataFormatError(f"{what}: expected a 2-D array, got {dense.ndim}-D")
        X = sp.csr_matrix(dense.astype(np.float32, copy=False))
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


def _dense_array(X, what: str) -> np.ndarray:
    """``X`` as a NumPy array of real numbers, without parsing strings as numbers.

    Object arrays (mixed Python numbers) are converted element by element to
    float64 only when every element is a real number.
    """
    try:
        array = np.asarray(X)
        if array.dtype == object and all(isinstance(value, numbers.Real)
                                         for value in array.flat):
            array = array.astype(np.float64)
    except (TypeError, ValueError, OverflowError) as exc:
        raise DataFormatError(f"{what}: cannot be converted to a float array ({exc})") from exc
    return array


def _check_values(values: np.ndarray, what: str) -> np.ndarray:
    """Refuse values float32 cannot hold: non-real, NaN or infinite, or too large.

    Checked before the conversion to float32, which would turn 1e300 into
    infinity and complex numbers into their real part.

    Returns
    -------
    numpy.ndarray
        ``values`` itself.
    """
    if values.dtype.kind == "c":
        raise DataFormatError(f"{what}: has complex values; features must be real numbers")
    if values.dtype.kind not in "biuf":
        raise DataFormatError(f"{what}: has values of type {values.dtype}, not real numbers")
    if values.dtype.kind == "f" and not np.all(np.isfinite(values)):
        raise DataFormatError(f"{what}: contains NaN or infinite values")
    if values.dtype.kind == "f" and values.dtype.itemsize > 4 and values.size:
        # max and min rather than abs: no temporary copy of a large array.
        largest = max(float(values.max()), -float(values.min()))
        if largest > _FLOAT32_MAX:
            raise DataFormatError(f"{what}: value {largest:g} is too large for float32 "
                                  f"(at most {_FLOAT32_MAX:g})")
    return values


#: The largest finite float32, the features' storage type.
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def check_labels(Y, *, n_samples: int | None = None, n_labels: int | None = None,
                 what: str = "Y") -> sp.csr_matrix:
    """Return the label sets ``Y`` as a validated binary CSR matrix.

    Parameters
    ----------
    Y : array-like, scipy sparse matrix, or iterable of label lists
        Either a 0/1 indicator matrix of shape (n_samples, n_labels), as a
        NumPy array or a sparse matrix (whose stored values must all be 1
        or 0; stored zeros are dropped, and repeated entries of a sparse
        matrix add up, so a label given twice is refused), or one iterable
        of distinct non-negative integer label ids per sample (``[[0, 3], [], [2]]``);
        an empty list is a sample with no labels. Lists of lists are always
        label ids: an indicator row given as a list repeats 0 or 1, which is
        refused rather than read as ids.
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
        On negative, out-of-range, repeated or non-integer ids, non-binary
        values, or a row count that disagrees with ``n_samples``.
    """
    if sp.issparse(Y):
        Y = _check_binary(_canonical_csr(_check_sparse_structure(Y, what), what,
                                         drop_zeros=True), what)
    elif isinstance(Y, np.ndarray):
        Y = _check_binary(_canonical_csr(Y, what, drop_zeros=True), what)
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


def _check_binary(Y: sp.csr_matrix, what: str) -> sp.csr_matrix:
    """Refuse an indicator matrix with a stored value other than 1 (zeros are dropped)."""
    if Y.data.size and not np.all(Y.data == 1):
        bad = int(np.flatnonzero(Y.data != 1)[0])
        row = int(np.searchsorted(Y.indptr, bad, side="right")) - 1
        raise DataFormatError(
            f"{what}: label indicator matrix must contain only 0 and 1; row {row} has "
            f"{Y.data[bad]:g} for label {Y.indices[bad]} (repeated sparse entries add up)")
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
    for count, name in zip(shape, ("rows", "columns")):
        if count >= _INDEX_LIMIT:
            raise DataFormatError(f"{what}: {count} {name} exceed the int32 ids of the kernels "
                                  f"(at most {_INDEX_LIMIT - 1})")


#: Row, column and label counts must stay below this (int32 ids, see _check_index_range).
_INDEX_LIMIT = np.iinfo(np.int32).max


def _canonical_csr(matrix, what: str, drop_zeros: bool = False) -> sp.csr_matrix:
    """Return a float32 CSR copy of ``matrix`` with sorted, summed duplicates.

    A sparse ``matrix`` must have passed :func:`_check_sparse_structure`. The
    caller's arrays are never modified: scipy's in-place helpers would
    rewrite them (and need indices and indptr of one dtype).
    """
    try:
        matrix = sp.csr_matrix(matrix, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise DataFormatError(f"{what}: cannot be converted to a float32 sparse matrix "
                              f"({exc})") from exc
    if matrix.has_canonical_format and not (drop_zeros and not matrix.data.all()):
        return matrix
    matrix = matrix.copy()
    matrix.indices = matrix.indices.astype(matrix.indptr.dtype)
    matrix.sum_duplicates()
    if drop_zeros:
        matrix.eliminate_zeros()
    return matrix


def _label_lists_to_csr(rows: Iterable, n_labels: int | None, what: str) -> sp.csr_matrix:
    """Convert one iterable of distinct integer label ids per sample to binary CSR."""
    limit = _INDEX_LIMIT - 1 if n_labels is None else n_labels
    indptr = [0]
    indices: list[int] = []
    for i, row in enumerate(rows):
        try:
            ids = [_label_id(label) for label in row]
        except (TypeError, ValueError) as exc:
            raise DataFormatError(f"{what}: row {i} is not a list of integer label ids "
                                  f"({exc})") from exc
        unique = sorted(set(ids))
        if len(unique) != len(ids):
            repeated = next(label for label in unique if ids.count(label) > 1)
            raise DataFormatError(
                f"{what}: row {i} lists label id {repeated} twice; a row of label ids lists "
                "each label once (a 0/1 indicator matrix must be a NumPy array or a sparse "
                "matrix)")
        if unique and unique[0] < 0:
            raise DataFormatError(f"{what}: row {i} has a negative label id {unique[0]}")
        if unique and unique[-1] >= limit:
            raise DataFormatError(f"{what}: row {i} has label id {unique[-1]}, out of range "
                                  f"[0, {limit})")
        indices.extend(unique)
        indptr.append(len(indices))
    if n_labels is None:
        n_labels = max(indices) + 1 if indices else 0
    data = np.ones(len(indices), dtype=np.float32)
    return sp.csr_matrix(
        (data, np.asarray(indices, dtype=np.int32), np.asarray(indptr, dtype=np.int64)),
        shape=(len(indptr) - 1, n_labels),
    )


def _label_id(label) -> int:
    """A label id as an int: an integer, or a float with an integral value (never rounded)."""
    if isinstance(label, numbers.Integral) and not isinstance(label, (bool, np.bool_)):
        return int(label)
    if isinstance(label, (float, np.floating)) and float(label).is_integer():
        return int(label)
    raise TypeError(f"label {label!r} is not an integer")
