"""MULAN's ARFF format: dense or sparse rows, the labels as binary attributes.

The rules every text format follows are in :mod:`._parsing`.
"""

from __future__ import annotations

import re

import numpy as np

from ..exceptions import DataFormatError
from ._checks import check_dimension
from ._parsing import (
    _FLOAT32_OVERFLOW,
    _csr,
    _label_matrix,
)

__all__ = ["read_arff"]


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
