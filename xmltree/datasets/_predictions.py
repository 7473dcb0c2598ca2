"""Prediction files: a ranked ``label:score`` row per line (a sparse score matrix).

The rules every text format follows are in :mod:`._parsing`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._atomic import atomic_write
from ._checks import check_dimension
from ._parsing import (
    _csr,
    _widened,
)
from ._xc import _read_bow_file, _value_strings

__all__ = ["write_predictions", "read_predictions"]


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
