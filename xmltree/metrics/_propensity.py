"""Inverse label propensities (Jain, Prabhu & Varma, 2016) for PSP@k and PSnDCG@k."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._validation import check_labels

#: ``(A, B)`` of :func:`inverse_propensity` recommended by Jain et al. (2016)
#: for most data sets, for Amazon product data sets, and for Wikipedia.
PROPENSITY_PRESETS: dict[str, tuple[float, float]] = {
    "default": (0.55, 1.5),
    "amazon": (0.6, 2.6),
    "wikipedia": (0.5, 0.4),
}


def inverse_propensity(
    Y_train, A: float = 0.55, B: float = 1.5, *, n_labels: int | None = None
) -> np.ndarray:
    """Inverse label propensities ``q_l`` of Jain et al. (2016).

    ``q_l = 1 + C (N_l + B)^(-A)`` with ``C = (ln N - 1)(B + 1)^A``, where
    ``N`` is the number of training rows and ``N_l`` the number of them
    tagged with label ``l``. Rare labels get large weights; a label never
    seen in training gets the largest, ``1 + C B^(-A)``. With ``N < e`` the
    constant ``C`` is negative and weights fall below 1; the formula is
    applied as published.

    Parameters
    ----------
    Y_train : array-like, scipy sparse matrix, or iterable of label lists
        Training labels, in any form accepted by
        :func:`xmltree._validation.check_labels`.
    A, B : float, default=0.55, 1.5
        Data-set constants; see :data:`PROPENSITY_PRESETS`. ``B`` must be
        positive.
    n_labels : int, optional
        Total number of labels, for label lists whose largest id is below
        ``n_labels - 1``.

    Returns
    -------
    numpy.ndarray of shape (n_labels,), dtype float64

    Raises
    ------
    ValueError
        If ``Y_train`` has no rows, or ``A`` or ``B`` is out of range.
    DataFormatError
        If ``Y_train`` is not a valid label matrix.
    """
    if not (np.isfinite(A) and np.isfinite(B) and B > 0):
        raise ValueError(f"inverse_propensity: need finite A and B > 0, got A={A}, B={B}")
    Y = check_labels(Y_train, n_labels=n_labels, what="Y_train")
    if Y.shape[0] == 0:
        raise ValueError("inverse_propensity: Y_train has no rows")
    return _propensity_weights(Y, A, B)


def _propensity_weights(Y: sp.csr_matrix, A: float, B: float) -> np.ndarray:
    """:func:`inverse_propensity` of a label matrix already checked (at least one row)."""
    return inverse_propensity_from_counts(np.bincount(Y.indices, minlength=Y.shape[1]),
                                          Y.shape[0], A, B)


def inverse_propensity_from_counts(label_counts, n_samples: int, A: float = 0.55,
                                   B: float = 1.5) -> np.ndarray:
    """:func:`inverse_propensity` from label counts instead of the label matrix.

    Parameters
    ----------
    label_counts : array-like of shape (n_labels,)
        ``N_l``, the number of training rows tagged with each label, as a
        learner's ``train_label_counts_`` records them.
    n_samples : int
        ``N``, the number of training rows (unlabelled ones included).
    A, B : float, default=0.55, 1.5
        As in :func:`inverse_propensity`.

    Returns
    -------
    numpy.ndarray of shape (n_labels,), dtype float64
    """
    frequency = np.asarray(label_counts, dtype=np.float64)
    c = (np.log(n_samples) - 1.0) * (B + 1.0) ** A
    return 1.0 + c * (frequency + B) ** (-A)
