"""Readers and writers of the Extreme Classification Repository formats: the single
file, the split files and the BoW pair files.

The rules every text format follows are in :mod:`._parsing`.
"""

from __future__ import annotations

import itertools
import logging
import sys

import numpy as np
import scipy.sparse as sp

from .._atomic import atomic_write
from .._base import check_int
from .._validation import check_features, check_labels
from ..exceptions import DataFormatError
from ._checks import check_dimension
from ._parsing import (
    _blank_tokens,
    _check_ids,
    _check_row_count,
    _csr,
    _label_matrix,
    _parse_body,
    _read_bytes,
    _read_header,
    _widened,
)

__all__ = ["read_xc", "write_xc", "iter_xc_chunks", "read_xc_split", "read_bow_pair"]

logger = logging.getLogger(__name__)


def read_xc(path, *, n_features: int | None = None, n_labels: int | None = None):
    """Read a file in the Extreme Classification Repository single-file format.

    The first line is ``N D L`` (rows, features, labels); then exactly ``N``
    lines ``l1,l2,... f:v f:v ...`` with 0-based ids. A line that begins with
    a space, or whose first token is ``f:v``, has no labels; a blank line is a
    row with no labels and no features and counts towards ``N``.

    Parameters
    ----------
    path : str or os.PathLike
        File to read.
    n_features, n_labels : int, optional
        Widen ``X`` / ``Y`` to this many columns (e.g. to match the training
        file); must be at least the header's ``D`` / ``L``.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (N, n_features or D)
        float32 features, sorted int32 indices and indptr, no zeros stored.
    Y : scipy.sparse.csr_matrix of shape (N, n_labels or L)
        Binary float32 label matrix.

    Raises
    ------
    DataFormatError
        If the header disagrees with the rows (row count, an id >= D or >= L),
        or a row is malformed (see the module documentation).
    ValueError
        If ``n_features`` or ``n_labels`` is not None or an integer in
        ``[0, 2**31 - 1]``.
    """
    check_dimension("n_features", n_features, optional=True)
    check_dimension("n_labels", n_labels, optional=True)
    data = _read_bytes(path)
    (n_rows, n_declared_features, n_declared_labels), start = _read_header(
        data, ("N", "D", "L"), path
    )
    arrays = _parse_body(data, start, 2, True, path)
    return _xc_matrices(
        arrays, (n_rows, n_declared_features, n_declared_labels), n_features, n_labels, path
    )


def _xc_matrices(arrays, header, n_features, n_labels, path):
    """Check parsed rows against an ``N D L`` header and build ``(X, Y)``."""
    feature_indptr, feature_indices, values, label_indptr, label_indices = arrays
    n_rows, n_declared_features, n_declared_labels = header
    _check_row_count(feature_indptr.shape[0] - 1, n_rows, 2, path)
    _check_ids(
        feature_indptr,
        feature_indices,
        feature_indices >= n_declared_features,
        "feature",
        f"the header declares D={n_declared_features}",
        2,
        path,
    )
    _check_ids(
        label_indptr,
        label_indices,
        label_indices >= n_declared_labels,
        "label",
        f"the header declares L={n_declared_labels}",
        2,
        path,
    )
    X = _csr(
        feature_indptr,
        feature_indices,
        values,
        _widened(n_declared_features, n_features, "n_features", path),
    )
    Y = _label_matrix(
        label_indptr, label_indices, _widened(n_declared_labels, n_labels, "n_labels", path)
    )
    return X, Y


def write_xc(path, X, Y) -> None:
    """Write ``(X, Y)`` in the Extreme Classification Repository single-file format.

    ``read_xc`` on the written file returns the same matrices (float32
    values are written in their shortest round-tripping form; explicitly
    stored zeros are not written). A row without labels starts with a space;
    a row without labels or features is a blank line. The file is written to
    a temporary file in the same directory and renamed over ``path``, so a
    failure never leaves a partial file behind.

    Parameters
    ----------
    path : str or os.PathLike
        Destination file.
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Features.
    Y : array-like, sparse matrix or list of label lists
        Labels, as accepted by :func:`xmltree._validation.check_labels`.

    Raises
    ------
    DataFormatError
        If ``X`` or ``Y`` is invalid, their row counts differ, or they have
        more columns than 32-bit ids can number.
    """
    # The checks refuse ids beyond int32 before converting them: nothing is
    # written wrapped (2**32 + 1 as 1).
    X = check_features(X)  # stored zeros dropped: never written
    Y = check_labels(Y, n_samples=X.shape[0])
    with atomic_write(path, "w", encoding="ascii", newline="\n") as handle:
        handle.write(f"{X.shape[0]} {X.shape[1]} {Y.shape[1]}\n")
        for block in _xc_lines(X, Y):
            handle.write(block)
    logger.debug("wrote %d rows to %s", X.shape[0], path)


def _value_strings(values: np.ndarray) -> np.ndarray:
    """Shortest decimal strings that read back to exactly the same float32 values.

    numpy's float32 -> str conversion is shortest-round-trip; whole numbers
    below 2**24 (exact in float32) are written without the trailing ``.0``.
    """
    whole = (values == np.round(values)) & (np.abs(values) < 2**24)
    # np.where picks a string width that fits both alternatives.
    return np.where(
        whole, np.where(whole, values, 0).astype(np.int64).astype(str), values.astype(str)
    )


def _xc_lines(X: sp.csr_matrix, Y: sp.csr_matrix, rows_per_block: int = 65536):
    """Yield the body of an XC file in blocks of text, one line per row."""
    for first in range(0, X.shape[0], rows_per_block):
        last = min(first + rows_per_block, X.shape[0])
        x_block, y_block = X[first:last], Y[first:last]
        tokens = np.char.add(
            np.char.add(x_block.indices.astype(str), ":"), _value_strings(x_block.data)
        ).tolist()
        labels = y_block.indices.astype(str).tolist()
        lines = []
        for row in range(last - first):
            row_labels = ",".join(labels[y_block.indptr[row] : y_block.indptr[row + 1]])
            row_features = " ".join(tokens[x_block.indptr[row] : x_block.indptr[row + 1]])
            lines.append(f"{row_labels} {row_features}" if row_features else row_labels)
        yield "\n".join(lines) + "\n"


def iter_xc_chunks(path, chunk_size: int):
    """Yield the feature matrix of an XC data file, ``chunk_size`` rows at a time.

    Parameters
    ----------
    path : str or os.PathLike
        File in the XC single-file format (header ``N D L``).
    chunk_size : int
        Rows per chunk, >= 1; the last chunk may be shorter.

    The rows are checked exactly as :func:`read_xc` checks a whole file
    (malformed rows, ids beyond the header's ``D`` and ``L``, row count), with
    the same line numbers in messages; memory holds one chunk at a time.

    Yields
    ------
    n_rows : int
        The header's row count ``N`` (the same in every item).
    X : scipy.sparse.csr_matrix of shape (rows in chunk, D)
        float32 features of the chunk's rows, in file order. Labels are
        checked against ``L`` but not returned.

    Raises
    ------
    DataFormatError
        As :func:`xmltree.datasets.read_xc` would, naming the file and line;
        a row count that disagrees with the header is found when the file
        ends (or as soon as the excess rows are read).
    ValueError
        If ``chunk_size`` is not an integer >= 1.
    """
    check_int("chunk_size", chunk_size, 1)
    with open(path, "rb") as handle:
        header = handle.readline()
        if not header:
            raise DataFormatError("file is empty", path=path, line=1)
        (n_rows, n_features, n_labels), _ = _read_header(header, ("N", "D", "L"), path)
        rows_read = 0
        while True:
            # islice takes at most sys.maxsize lines, more than any file has.
            block = b"".join(itertools.islice(handle, min(chunk_size, sys.maxsize)))
            if not block:
                break
            first_line = 2 + rows_read
            f_indptr, f_indices, values, l_indptr, l_indices = _parse_body(
                block, 0, first_line, True, path)
            rows_read += f_indptr.shape[0] - 1
            if rows_read > n_rows:
                _check_row_count(rows_read, n_rows, 2, path)
            _check_ids(f_indptr, f_indices, f_indices >= n_features, "feature",
                       f"the header declares D={n_features}", first_line, path)
            _check_ids(l_indptr, l_indices, l_indices >= n_labels, "label",
                       f"the header declares L={n_labels}", first_line, path)
            yield n_rows, _csr(f_indptr, f_indices, values, n_features)
    _check_row_count(rows_read, n_rows, 2, path)


def read_xc_split(data_path, split_path, column: int):
    """Read one split of an XC repository data set stored as data + split files.

    Parameters
    ----------
    data_path : str or os.PathLike
        Data file in the single-file format (e.g. ``Bibtex_data.txt``).
    split_path : str or os.PathLike
        Split file (e.g. ``bibtex_trSplit.txt``): one whitespace-separated
        column per split, each line giving 1-based row ids of ``data_path``.
    column : int
        0-based index of the split column to use.

    Returns
    -------
    X, Y : scipy.sparse.csr_matrix
        The rows of the data file listed in that column, in the listed order.

    Raises
    ------
    DataFormatError
        If the data file is malformed, ``column`` is beyond the split file's
        columns, the split file is ragged or has a non-integer or
        out-of-range row id.
    ValueError
        If ``column`` is not an integer in ``[0, 2**31 - 1]``.
    """
    check_dimension("column", column)
    X, Y = read_xc(data_path)
    rows = _read_split_column(split_path, column, X.shape[0])
    return _select_rows(X, rows), _select_rows(Y, rows)


def _select_rows(matrix: sp.csr_matrix, rows: np.ndarray) -> sp.csr_matrix:
    """Rows of a canonical CSR matrix, as a canonical CSR matrix."""
    selected = matrix[rows]
    return _csr(selected.indptr, selected.indices, selected.data, matrix.shape[1])


def _read_split_column(split_path, column: int, n_rows: int) -> np.ndarray:
    """Return the 0-based row ids of one column of a split file."""
    ids = []
    n_columns = None
    # Bytes, so that isdigit() accepts ASCII digits only.
    with open(split_path, "rb") as lines:
        for line_number, line in enumerate(lines, start=1):
            tokens = _blank_tokens(line.removesuffix(b"\n"))
            if n_columns is None:
                n_columns = len(tokens)
                if not 0 <= column < n_columns:
                    raise DataFormatError(
                        f"split column {column} does not exist (the file has {n_columns})",
                        path=split_path,
                        line=line_number,
                    )
            if len(tokens) != n_columns:
                raise DataFormatError(
                    f"ragged split file: {len(tokens)} columns, the first line has {n_columns}",
                    path=split_path,
                    line=line_number,
                )
            token = tokens[column]
            if not token.isdigit() or not 1 <= int(token) <= n_rows:
                shown = token.decode("utf-8", errors="replace")
                raise DataFormatError(
                    f"row id {shown!r} is not in [1, {n_rows}] (ids are 1-based)",
                    path=split_path,
                    line=line_number,
                )
            ids.append(int(token) - 1)
    if n_columns is None:
        raise DataFormatError("file is empty", path=split_path, line=1)
    return np.asarray(ids, dtype=np.int64)


def read_bow_pair(features_path, labels_path):
    """Read a BoW pair (e.g. ``trn_X_Xf.txt`` and ``trn_X_Y.txt``).

    Each file starts with a header ``N D`` (resp. ``N L``) followed by exactly
    ``N`` lines of ``id:value`` tokens. In the labels file every listed label
    with a non-zero value is present (``l:1``, or any other non-zero value,
    gives a one in ``Y``); ``l:0`` is dropped like a zero feature.

    Parameters
    ----------
    features_path, labels_path : str or os.PathLike
        The features and labels files.

    Returns
    -------
    X, Y : scipy.sparse.csr_matrix
        Features of shape (N, D) and binary labels of shape (N, L).

    Raises
    ------
    DataFormatError
        If either file is malformed or their row counts disagree.
    """
    X, n_rows = _read_bow_file(features_path, "D", "feature")
    labels, n_label_rows = _read_bow_file(labels_path, "L", "label")
    if n_label_rows != n_rows:
        raise DataFormatError(
            f"the labels file has {n_label_rows} rows but the features file "
            f"{features_path} has {n_rows}",
            path=labels_path,
            line=1,
        )
    return X, _label_matrix(labels.indptr, labels.indices, labels.shape[1])


def _read_bow_file(path, dimension: str, what: str):
    """Read one ``N D`` BoW file; return the matrix and its row count."""
    data = _read_bytes(path)
    (n_rows, n_columns), start = _read_header(data, ("N", dimension), path)
    indptr, indices, values, _, _ = _parse_body(data, start, 2, False, path, entry=what)
    _check_row_count(indptr.shape[0] - 1, n_rows, 2, path)
    why = f"the header declares {dimension}={n_columns}"
    _check_ids(indptr, indices, indices >= n_columns, what, why, 2, path)
    return _csr(indptr, indices, values, n_columns), n_rows
