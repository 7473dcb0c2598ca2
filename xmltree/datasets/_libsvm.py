"""The libsvm / svmlight multi-label format, with or without an XC-style header.

The rules every text format follows are in :mod:`._parsing`.
"""

from __future__ import annotations

from ._checks import MAX_DIMENSION, check_dimension
from ._parsing import (
    _blank_tokens,
    _check_ids,
    _csr,
    _label_matrix,
    _parse_body,
    _read_bytes,
    _read_header,
)
from ._xc import _xc_matrices

__all__ = ["read_libsvm"]


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
