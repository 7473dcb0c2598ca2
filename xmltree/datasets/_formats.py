"""Readers and writers of the file formats used by XMC benchmark data.

Every reader returns ``(X, Y)``: ``X`` a ``scipy.sparse.csr_matrix`` of
float32 features with sorted, unique column indices (int32 indices and
``indptr``, as scipy makes them); ``Y`` a binary (float32 ones) CSR label matrix with the same
number of rows, in the same canonical form.

Rules shared by the text formats (XC single-file, libsvm/svmlight and BoW
pair files), whose rows are parsed by the compiled :mod:`._parse` module:

* Every line of the body is exactly one row, so row ``r`` is always on line
  ``r + 2`` after a header (``r + 1`` without one). Rows without labels keep
  their position. A blank line is a row with no labels and no features, so
  it must be counted by the header's row count; nothing is ever skipped.
* The last line must end with a newline: a file that does not is reported as
  truncated rather than guessed at.
* Feature ids within a row may come in any order (they are sorted), but a
  feature or label id may appear only once per row.
* Explicit zero values (``3:0``) are legal and dropped, as the learners treat
  absent and zero features alike.
* Tokens are separated by spaces and tabs; a line may end with CRLF. Any
  other control character in a line (vertical tab, form feed, a lone CR,
  NUL...) is an error, never a separator or a line end.
* Values are ASCII decimals ``[+-]digits[.digits][e[+-]digits]`` (also
  ``1.`` and ``.5``), correctly rounded to float32; hexadecimal, ``1_0``
  and other digits are errors. Values with an exponent or many digits are
  converted by C ``strtof``, which follows the C ``LC_NUMERIC`` locale:
  Python leaves it at ``"C"``; under a locale whose decimal point is not
  ``.`` such a value is reported as an error, never misread. NaN and
  infinite values are errors.

Any problem raises :class:`~xmltree.exceptions.DataFormatError` carrying the
file, the 1-based line number (the header is line 1) and what is wrong.
"""

from __future__ import annotations

import itertools
import logging
import re
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .._atomic import atomic_write
from .._base import check_int
from .._validation import check_features, check_labels, make_csr
from ..exceptions import DataFormatError
from ._checks import MAX_DIMENSION, check_dimension
from ._parse import ParseErrorCode, parse_sparse_rows

__all__ = ["read_xc", "write_xc", "read_xc_split", "read_bow_pair", "read_libsvm", "read_arff"]

logger = logging.getLogger(__name__)

#: The smallest magnitude that rounds to infinity in float32: halfway from the
#: largest float32 to 2**128, where round-half-to-even goes up.
_FLOAT32_OVERFLOW = 2.0**128 - 2.0**103

_PARSE_PROBLEMS = {
    ParseErrorCode.BAD_LABEL_LIST: "malformed label list {token!r} (expected ids like 3,17,42)",
    ParseErrorCode.BAD_FEATURE_TOKEN: "malformed {entry} token {token!r} (expected id:value)",
    ParseErrorCode.BAD_VALUE: "value in {token!r} is not a number",
    ParseErrorCode.NON_FINITE_VALUE: (
        "value in {token!r} is NaN or infinite, or too large for float32"
    ),
    ParseErrorCode.NEGATIVE_ID: "negative id in {token!r}",
    ParseErrorCode.ID_TOO_LARGE: "id in {token!r} does not fit in a 32-bit integer",
    ParseErrorCode.DUPLICATE_FEATURE: "{entry} id {value} appears more than once in the row",
    ParseErrorCode.DUPLICATE_LABEL: "label id {value} appears more than once in the row",
    ParseErrorCode.QID_TOKEN: "{token!r}: qid (ranking) tokens are not supported",
    ParseErrorCode.NO_FINAL_NEWLINE: (
        "the last line does not end with a newline (file truncated mid-line?)"
    ),
    ParseErrorCode.CONTROL_CHARACTER: (
        "control character {value:#04x} in the row (only spaces and tabs separate tokens)"
    ),
}


# --------------------------------------------------------------------------
# Shared helpers of the text formats
# --------------------------------------------------------------------------


def _read_bytes(path) -> bytes:
    """Return the content of ``path``; an empty file is a format error."""
    data = Path(path).read_bytes()
    if not data:
        raise DataFormatError("file is empty", path=path, line=1)
    return data


def _token_at(data: bytes, offset: int) -> str:
    """Return the whitespace-delimited token starting at ``offset``, for messages."""
    end = offset
    while end < len(data) and end - offset < 60 and data[end] not in b" \t\r\n":
        end += 1
    return data[offset:end].decode("utf-8", errors="replace")


def _parse_body(
    data: bytes, start: int, first_line: int, labels_first: bool, path, entry: str = "feature"
):
    """Run the compiled parser on ``data[start:]``; raise on the first bad row.

    ``entry`` names the ``id:value`` tokens in messages ("label" in the
    labels file of a BoW pair).

    Returns ``(feature_indptr, feature_indices, feature_values, label_indptr,
    label_indices)`` as described in :func:`._parse.parse_sparse_rows`.
    """
    arrays, error = parse_sparse_rows(data, start, labels_first, first_line)
    if error is not None:
        code, offset, line, value = error
        problem = _PARSE_PROBLEMS[ParseErrorCode(code)]
        token = _token_at(data, offset)
        message = problem.format(token=token, value=value, entry=entry)
        raise DataFormatError(message, path=path, line=line)
    return arrays


def _read_header(data: bytes, names: tuple[str, ...], path) -> tuple[list[int], int]:
    """Parse a header line of non-negative integers named ``names``.

    Returns the values and the byte offset where the body starts.
    """
    end = data.find(b"\n")
    if end < 0:
        raise DataFormatError(
            "the header line does not end with a newline (file truncated?)", path=path, line=1
        )
    tokens = _blank_tokens(data[:end])
    expected = " ".join(names)
    if len(tokens) != len(names) or not all(token.isdigit() for token in tokens):
        shown = data[:end].decode("utf-8", errors="replace")[:80]
        raise DataFormatError(f"header {shown!r} is not '{expected}'", path=path, line=1)
    values = [int(token) for token in tokens]
    for name, value in zip(names[1:], values[1:]):
        if value > MAX_DIMENSION:
            raise DataFormatError(
                f"header {name}={value} exceeds the supported {MAX_DIMENSION}", path=path, line=1
            )
    return values, end + 1


def _blank_tokens(line: bytes) -> list[bytes]:
    """Split a line (without its '\n') at spaces and tabs, as the parser does.

    ``bytes.split()`` would also split at vertical tabs, form feeds and lone
    CRs, which are errors in a row; they stay inside a token here and fail
    its check. A CR ending the line (CRLF) is dropped.
    """
    return [token for token in line.removesuffix(b"\r").replace(b"\t", b" ").split(b" ") if token]


def _check_row_count(n_rows: int, expected: int, first_line: int, path) -> None:
    """Raise unless the body has exactly the ``expected`` rows of the header."""
    if n_rows > expected:
        raise DataFormatError(
            f"the header declares {expected} rows but the file has {n_rows} "
            "(every line is a row, blank lines included)",
            path=path,
            line=first_line + expected,
        )
    if n_rows < expected:
        raise DataFormatError(
            f"the header declares {expected} rows but the file ends after {n_rows} "
            "(missing rows or truncated file?)",
            path=path,
            line=first_line + n_rows,
        )


def _check_ids(indptr, indices, bad, what: str, why: str, first_line: int, path) -> None:
    """Raise if any entry is flagged in the boolean mask ``bad``, naming its line."""
    flagged = np.flatnonzero(bad)
    if flagged.size:
        row = int(np.searchsorted(indptr, flagged[0], side="right")) - 1
        raise DataFormatError(
            f"{what} id {int(indices[flagged[0]])} is out of range: {why}",
            path=path,
            line=first_line + row,
        )


def _widened(declared: int, requested: int | None, name: str, path) -> int:
    """Return the column count: ``requested`` if given, which must be >= ``declared``."""
    if requested is None:
        return declared
    if requested < declared:
        raise DataFormatError(
            f"{name}={requested} is smaller than the {declared} the file declares", path=path
        )
    return int(requested)


def _csr(indptr, indices, values, n_columns: int) -> sp.csr_matrix:
    """Wrap parsed canonical CSR arrays as a matrix."""
    return make_csr(values, indices, indptr, (indptr.shape[0] - 1, n_columns))


def _label_matrix(indptr, indices, n_labels: int) -> sp.csr_matrix:
    """Binary CSR label matrix from parsed label ids."""
    return _csr(indptr, indices, np.ones(indices.shape[0], dtype=np.float32), n_labels)


# --------------------------------------------------------------------------
# XC repository single-file format
# --------------------------------------------------------------------------


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


# --------------------------------------------------------------------------
# XC repository split files
# --------------------------------------------------------------------------


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


# --------------------------------------------------------------------------
# BoW pair files
# --------------------------------------------------------------------------


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


# --------------------------------------------------------------------------
# Prediction files (a sparse score matrix, one ranked row per line)
# --------------------------------------------------------------------------


def write_predictions(path, labels: np.ndarray, scores: np.ndarray, n_labels: int) -> None:
    """Write ranked predictions as a sparse score-matrix text file.

    The layout is the BoW file layout of the Extreme Classification
    Repository: a header ``N L``, then one line per row of ``label:score``
    tokens, best first. Slots with label ``-1`` (no prediction) are omitted.
    Written atomically.

    Parameters
    ----------
    path : str or os.PathLike
        Destination file.
    labels : numpy.ndarray of shape (n_samples, k)
        Label ids ranked best first, ``-1`` for an empty slot.
    scores : numpy.ndarray of shape (n_samples, k)
        The matching scores.
    n_labels : int
        Size of the label space, written in the header.

    Raises
    ------
    ValueError
        If the arrays disagree in shape, ``n_labels`` is not an integer in
        ``[0, 2**31 - 1]``, or the file could not be read back: labels that
        are not integers in ``[-1, n_labels)``, a label twice in a row, or a
        NaN or infinite score (also after rounding to float32) for a label.
    """
    check_dimension("n_labels", n_labels)
    labels = np.asarray(labels)
    # Scores beyond the float32 range become infinite here, refused below.
    with np.errstate(over="ignore"):
        scores = np.asarray(scores, dtype=np.float32)
    if labels.ndim != 2 or labels.shape != scores.shape:
        raise ValueError(
            f"labels {labels.shape} and scores {scores.shape} must be equal 2-D shapes"
        )
    _check_ranked_labels(labels, scores, n_labels)
    with atomic_write(path, "w", encoding="ascii", newline="\n") as handle:
        handle.write(f"{labels.shape[0]} {n_labels}\n")
        handle.write(_prediction_lines(labels, scores))


def _check_ranked_labels(labels: np.ndarray, scores: np.ndarray, n_labels: int) -> None:
    """Raise ``ValueError`` unless ``read_predictions`` could read these rows back."""
    if labels.dtype.kind not in "iu":
        raise ValueError(f"labels must be integer label ids, got dtype {labels.dtype}")
    if labels.size and (labels.min() < -1 or labels.max() >= n_labels):
        raise ValueError(f"label ids must lie in [-1, {n_labels})")
    ranked = np.sort(labels, axis=1)
    if np.any((ranked[:, 1:] == ranked[:, :-1]) & (ranked[:, 1:] >= 0)):
        raise ValueError("a label appears more than once in a row of labels")
    if not np.isfinite(scores[labels >= 0]).all():
        raise ValueError("scores of predicted labels must be finite float32 numbers")


def _prediction_lines(labels: np.ndarray, scores: np.ndarray) -> str:
    """Rows of ``label:score`` tokens, best first, label ``-1`` slots left out."""
    present = labels >= 0
    tokens = np.char.add(np.char.add(labels[present].astype(str), ":"),
                         _value_strings(np.asarray(scores, dtype=np.float32)[present])).tolist()
    ends = np.cumsum(present.sum(axis=1))
    starts = np.concatenate(([0], ends[:-1]))
    return "".join(" ".join(tokens[start:end]) + "\n" for start, end in zip(starts, ends))


def read_predictions(path, n_labels: int | None = None) -> sp.csr_matrix:
    """Read a prediction file written by :func:`write_predictions`.

    Parameters
    ----------
    path : str or os.PathLike
        The prediction file.
    n_labels : int, optional
        Widen the label space to this size (it may not be smaller than the
        header's).

    Returns
    -------
    scipy.sparse.csr_matrix of shape (N, n_labels or L)
        The scores; labels not listed in a row have no entry. Zero scores are
        not stored.

    Raises
    ------
    DataFormatError
        If the file is malformed (see :func:`read_bow_pair`).
    ValueError
        If ``n_labels`` is not None or an integer in ``[0, 2**31 - 1]``.
    """
    check_dimension("n_labels", n_labels, optional=True)
    scores, _ = _read_bow_file(path, "L", "label")
    n_columns = _widened(scores.shape[1], n_labels, "n_labels", path)
    return _csr(scores.indptr, scores.indices, scores.data, n_columns)


# --------------------------------------------------------------------------
# libsvm / svmlight
# --------------------------------------------------------------------------


def read_libsvm(
    path,
    *,
    n_features: int | None = None,
    n_labels: int | None = None,
    zero_based: bool | str = True,
):
    """Read a multi-label libsvm/svmlight file.

    Each line is ``l1,l2,... f:v f:v ...`` as in :func:`read_xc`. An optional
    ``N D L`` header is recognised when the first line has exactly three
    integer tokens and no ``:``; it is then checked like in :func:`read_xc`.
    ``qid:`` tokens (ranking data) are rejected with an error, and ``#``
    comments are not supported.

    Parameters
    ----------
    path : str or os.PathLike
        File to read.
    n_features, n_labels : int, optional
        Number of columns of ``X`` / ``Y``. Without a header they default to
        the largest id + 1; with one, to ``D`` / ``L``. Ids beyond them are
        errors.
    zero_based : bool or "auto", default=True
        Whether feature ids start at 0 (True) or 1 (False, shifted down by
        one); ``"auto"`` assumes 1-based ids when no feature id is 0. As in
        scikit-learn, this applies to feature ids only: label ids are used as
        they are.

    Returns
    -------
    X, Y : scipy.sparse.csr_matrix
        Features and binary labels, one row per line of the body.

    Raises
    ------
    DataFormatError
        On malformed rows, ids out of range (without a header, an id of
        ``2**31 - 1`` or more, whose column count int32 cannot hold), feature
        id 0 with ``zero_based=False``, or a header that disagrees with the
        rows.
    ValueError
        If ``zero_based`` is not True, False or "auto", or ``n_features`` or
        ``n_labels`` is not None or an integer in ``[0, 2**31 - 1]``.
    """
    check_dimension("n_features", n_features, optional=True)
    check_dimension("n_labels", n_labels, optional=True)
    if zero_based not in (True, False, "auto"):
        raise ValueError(f"zero_based must be True, False or 'auto', got {zero_based!r}")
    data = _read_bytes(path)
    header, start = _libsvm_header(data, path)
    first_line = 1 if header is None else 2
    arrays = _parse_body(data, start, first_line, True, path)
    feature_indptr, feature_indices = arrays[0], arrays[1]
    one_based = zero_based is False or (
        zero_based == "auto" and feature_indices.size > 0 and feature_indices.min() > 0
    )
    if one_based:
        _check_ids(
            feature_indptr,
            feature_indices,
            feature_indices == 0,
            "feature",
            "zero_based=False means ids start at 1",
            first_line,
            path,
        )
        feature_indices -= 1
    if header is not None:
        return _xc_matrices(arrays, header, n_features, n_labels, path)
    return _headerless_matrices(arrays, n_features, n_labels, path)


def _libsvm_header(data: bytes, path) -> tuple[list[int] | None, int]:
    """Detect an ``N D L`` header; return it (or None) and the body offset."""
    end = data.find(b"\n")
    first = data if end < 0 else data[:end]
    tokens = _blank_tokens(first)
    if len(tokens) == 3 and b":" not in first and all(token.isdigit() for token in tokens):
        return _read_header(data, ("N", "D", "L"), path)
    return None, 0


def _headerless_matrices(arrays, n_features, n_labels, path):
    """Build ``(X, Y)`` from a headerless body, sizing columns from the ids."""
    feature_indptr, feature_indices, values, label_indptr, label_indices = arrays
    shapes = []
    for indptr, indices, requested, what in (
        (feature_indptr, feature_indices, n_features, "feature"),
        (label_indptr, label_indices, n_labels, "label"),
    ):
        if requested is None:
            # The column count is the largest id + 1, and must fit int32
            # like a header's D and L (MAX_DIMENSION).
            why = f"without a header, ids must be below {MAX_DIMENSION} (int32 column counts)"
            _check_ids(indptr, indices, indices >= MAX_DIMENSION, what, why, 1, path)
            shapes.append(int(indices.max()) + 1 if indices.size else 0)
        else:
            why = f"n_{what}s={requested}"
            _check_ids(indptr, indices, indices >= requested, what, why, 1, path)
            shapes.append(int(requested))
    X = _csr(feature_indptr, feature_indices, values, shapes[0])
    return X, _label_matrix(label_indptr, label_indices, shapes[1])


# --------------------------------------------------------------------------
# MULAN ARFF
# --------------------------------------------------------------------------


def read_arff(path, n_labels: int, labels_first: bool = False):
    """Read a MULAN multi-label ARFF file (dense or sparse rows).

    The label attributes are the last ``n_labels`` attributes (the first ones
    with ``labels_first=True``) and must be declared nominal ``{0,1}``. The
    other attributes become features: numeric (``numeric``, ``real``,
    ``integer``) or nominal with numeric values (e.g. ``{0,1}``). Dense rows
    are ``v1,v2,...``; sparse rows ``{i v, j w, ...}`` with 0-based attribute
    indices, omitted attributes being 0. ``%`` comments and blank lines are
    ignored, as the ARFF format specifies. Missing values (``?``), string and
    date attributes and instance weights are not supported.

    Parameters
    ----------
    path : str or os.PathLike
        File to read.
    n_labels : int
        Number of label attributes.
    labels_first : bool, default=False
        Whether the label attributes come first instead of last.

    Returns
    -------
    X, Y : scipy.sparse.csr_matrix
        Features (one column per non-label attribute, in order) and binary
        labels, one row per data line.

    Raises
    ------
    DataFormatError
        On malformed declarations or rows, with the offending line number.
    ValueError
        If ``n_labels`` is not an integer in ``[1, 2**31 - 1]``.
    """
    check_dimension("n_labels", n_labels, low=1)
    # Undecodable bytes become U+FFFD and then fail as bad names or values.
    # Lines end at "\n" only, as in the other text formats: a lone "\r" is
    # no line end, so errors name the line a text editor shows.
    with open(path, encoding="utf-8", errors="replace", newline="\n") as handle:
        lines = enumerate(handle, start=1)
        attributes = _read_arff_header(lines, path)
        roles = _arff_roles(attributes, int(n_labels), labels_first, path)
        sparse_problem = _sparse_default_problem(attributes)
        rows = [
            _arff_row(line, number, attributes, roles, sparse_problem, path)
            for number, line in lines
            if line.strip() and not line.lstrip().startswith("%")
        ]
    return _arff_matrices(rows, roles)


#: The numbers of the text formats: ASCII decimals, the compiled parser's
#: grammar. float() alone would also take "1_0", other scripts' digits,
#: surrounding white space, NaN and infinities.
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _decimal(text: str) -> float | None:
    """``text`` as a float if it is an ASCII decimal, else None."""
    return float(text) if _DECIMAL.fullmatch(text) else None


class _ArffAttribute:
    """One ``@attribute`` declaration: name, nominal values (None if numeric), line."""

    def __init__(self, name: str, nominal: list[str] | None, line: int):
        self.name = name
        self.nominal = nominal
        self.line = line

    def value(self, text: str, path, line: int) -> float:
        """Return the number that ``text`` stands for in this attribute."""
        text = _unquote(text.strip())
        if text == "?":
            raise DataFormatError(f"missing value for attribute {self.name!r}", path, line)
        if self.nominal is not None and text not in self.nominal:
            raise DataFormatError(
                f"{text!r} is not a declared value of attribute {self.name!r}", path, line
            )
        number = _decimal(text)
        if number is None and text.lstrip("+-").lower() not in ("nan", "inf", "infinity"):
            raise DataFormatError(
                f"value {text!r} of attribute {self.name!r} is not a number", path, line
            )
        if number is None or not abs(number) < _FLOAT32_OVERFLOW:
            raise DataFormatError(
                f"value {text!r} is NaN or infinite (or beyond the float32 range)", path, line
            )
        return number



def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _read_arff_header(lines, path) -> list[_ArffAttribute]:
    """Consume lines up to ``@data``; return the attribute declarations."""
    attributes = []
    for number, line in lines:
        text = line.strip()
        keyword = text.split(None, 1)[0].lower() if text else ""
        if not text or text.startswith("%") or keyword == "@relation":
            continue
        if keyword == "@data":
            if not attributes:
                raise DataFormatError("no @attribute declarations before @data", path, number)
            return attributes
        if keyword != "@attribute":
            raise DataFormatError(
                f"unexpected line in the ARFF header: {text[:60]!r}", path, number
            )
        attributes.append(_parse_attribute(text[len("@attribute") :].strip(), path, number))
    raise DataFormatError("no @data section", path, None)


def _parse_attribute(text: str, path, number: int) -> _ArffAttribute:
    """Parse the part of an ``@attribute`` line after the keyword."""
    if text[:1] in ("'", '"'):
        close = text.find(text[0], 1)
        if close < 0:
            raise DataFormatError("unterminated quoted attribute name", path, number)
        name, kind = text[1:close], text[close + 1 :].strip()
    else:
        parts = text.split(None, 1)
        name, kind = parts[0] if parts else "", parts[1].strip() if len(parts) > 1 else ""
    if kind.startswith("{") and kind.endswith("}"):
        values = [_unquote(value.strip()) for value in kind[1:-1].split(",")]
        return _ArffAttribute(name, values, number)
    if kind.lower() in ("numeric", "real", "integer"):
        return _ArffAttribute(name, None, number)
    raise DataFormatError(f"unsupported type {kind!r} of attribute {name!r}", path, number)


def _arff_roles(attributes, n_labels: int, labels_first: bool, path):
    """Map each attribute to ``("feature"|"label", column)``; check label types."""
    n_features = len(attributes) - n_labels
    if n_features < 0:
        raise DataFormatError(
            f"n_labels={n_labels} but the file declares only {len(attributes)} attributes", path
        )
    roles = []
    for index, attribute in enumerate(attributes):
        is_label = index < n_labels if labels_first else index >= n_features
        if is_label:
            if attribute.nominal != ["0", "1"]:
                raise DataFormatError(
                    f"label attribute {attribute.name!r} must be declared {{0,1}}",
                    path,
                    attribute.line,
                )
            roles.append(("label", index if labels_first else index - n_features))
        else:
            roles.append(("feature", index - n_labels if labels_first else index))
    return roles


def _sparse_default_problem(attributes) -> str | None:
    """Why sparse rows cannot be read with these attributes, or None.

    A sparse row leaves out attributes at their default: 0 for numeric ones
    but the *first declared value* for nominal ones, which must then be 0.
    """
    for attribute in attributes:
        if attribute.nominal is None:
            continue
        first = attribute.nominal[0]
        if _decimal(first) != 0:
            return (
                f"sparse rows imply the first value {first!r} of nominal attribute "
                f"{attribute.name!r} when it is omitted; only 0 is supported"
            )
    return None


def _arff_row(line: str, number: int, attributes, roles, sparse_problem, path):
    """Parse one data line into ``(feature_entries, label_ids)``."""
    text = line.strip()
    if text.startswith("{"):
        if sparse_problem is not None:
            raise DataFormatError(sparse_problem, path, number)
        pairs = _sparse_arff_pairs(text, number, len(attributes), path)
    else:
        values = text.split(",")
        if len(values) != len(attributes):
            raise DataFormatError(
                f"dense row has {len(values)} values, expected {len(attributes)}", path, number
            )
        pairs = list(enumerate(values))
    features, labels = {}, []
    for index, raw in pairs:
        attribute = attributes[index]
        value = attribute.value(raw, path, number)
        role, column = roles[index]
        if role == "label":
            if value == 1:
                labels.append(column)
        elif value != 0:
            features[column] = value
    return features, labels


def _sparse_arff_pairs(text: str, number: int, n_attributes: int, path):
    """Split a sparse row ``{i v, j w}`` into ``(index, value text)`` pairs."""
    if not text.endswith("}") or "{" in text[1:] or "}" in text[:-1]:
        raise DataFormatError(
            "malformed sparse row (instance weights are not supported)", path, number
        )
    body = text[1:-1].strip()
    pairs, seen = [], set()
    for item in body.split(",") if body else []:
        parts = item.split(None, 1)
        # isdigit() alone would take other scripts' digits, and '²'.
        if len(parts) != 2 or not (parts[0].isascii() and parts[0].isdigit()):
            raise DataFormatError(f"malformed sparse entry {item.strip()!r}", path, number)
        index = int(parts[0])
        if index >= n_attributes:
            raise DataFormatError(
                f"attribute index {index} out of range [0, {n_attributes})", path, number
            )
        if index in seen:
            raise DataFormatError(f"attribute index {index} appears twice", path, number)
        seen.add(index)
        pairs.append((index, parts[1]))
    return pairs


def _arff_matrices(rows, roles):
    """Build ``(X, Y)`` from parsed ARFF rows."""
    n_features = sum(role == "feature" for role, _ in roles)
    n_labels = len(roles) - n_features
    feature_indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    label_indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    feature_indices, values, label_indices = [], [], []
    for row, (features, labels) in enumerate(rows):
        columns = sorted(features)
        feature_indices.extend(columns)
        values.extend(features[column] for column in columns)
        label_indices.extend(sorted(labels))
        feature_indptr[row + 1] = len(feature_indices)
        label_indptr[row + 1] = len(label_indices)
    X = _csr(
        feature_indptr,
        np.asarray(feature_indices, dtype=np.int32),
        np.asarray(values, dtype=np.float32),
        n_features,
    )
    Y = _label_matrix(label_indptr, np.asarray(label_indices, dtype=np.int32), n_labels)
    return X, Y
