"""Feature weighting, in one place: smoothed idf, sublinear term frequency, unit rows.

The feature scaler of the estimators (``_scaling``), the text vectoriser
(``text``), the re-ranker's tail scorers (``rerank._tail_scorers``) and the
synthetic data (``datasets._synthetic``) weigh features the same way, with
these functions. They compute in float64; the callers store float32.
"""

from __future__ import annotations

import numpy as np

__all__ = ["smoothed_idf", "sublinear_tf", "unit_rows"]


def smoothed_idf(document_frequency: np.ndarray, n_documents: int) -> np.ndarray:
    """``log((1 + n) / (1 + df)) + 1`` of every feature, as float64.

    Parameters
    ----------
    document_frequency : numpy.ndarray of int
        Documents (rows) each feature occurs in.
    n_documents : int
        Number of documents ``n``.
    """
    return np.log((1.0 + n_documents) / (1.0 + document_frequency)) + 1.0


def sublinear_tf(magnitude: np.ndarray) -> np.ndarray:
    """``1 + log m`` for ``m >= 1``, ``m`` below: never negative, unchanged on counts.

    ``1 + log m`` alone turns a fractional weight below 1/e (0.1 -> -1.3)
    into a negative one, flipping its sign.
    """
    magnitude = np.asarray(magnitude, dtype=np.float64)
    return np.where(magnitude >= 1.0, 1.0 + np.log(np.maximum(magnitude, 1.0)), magnitude)


def unit_rows(values: np.ndarray, indptr: np.ndarray) -> np.ndarray:
    """``values`` of each CSR row divided by the row's Euclidean norm (if non-zero), float64."""
    values = np.asarray(values, dtype=np.float64)
    rows = np.repeat(np.arange(indptr.shape[0] - 1), np.diff(indptr))
    norms = np.sqrt(np.bincount(rows, weights=values * values, minlength=indptr.shape[0] - 1))
    norms[norms == 0] = 1.0
    return values / norms[rows]
