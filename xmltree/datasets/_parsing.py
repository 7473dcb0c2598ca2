"""What the readers of the text formats share: the rules, the parser's errors, the checks.

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

from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .._validation import make_csr
from ..exceptions import DataFormatError
from ._checks import MAX_DIMENSION
from ._parse import ParseErrorCode, parse_sparse_rows

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
