"""The metrics: P@k, nDCG@k, PSP@k, PSnDCG@k, recall@k, coverage@k (see the package docstring)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._checks import check_int
from .._validation import check_labels
from ..exceptions import DataFormatError
from ._ranking import _as_array, _canonical_csr, _dense_scores, _rank_scores, _top_k_sparse


def precision_at_k(Y_true, Y_pred, k: int) -> float:
    """Precision at ``k``, averaged over rows.

    Parameters
    ----------
    Y_true : array-like, scipy sparse matrix, or iterable of label lists
        True labels: a 0/1 matrix of shape (n_samples, n_labels) or one list
        of label ids per row.
    Y_pred : array-like or scipy sparse matrix
        Score matrix (float dense or any sparse) or ranking (integer dense);
        see the module docstring.
    k : int
        Cut-off, ``k >= 1``.

    Returns
    -------
    float
        Rows without true labels count as 0; missing predictions are wrong.

    Raises
    ------
    ValueError
        On ``k < 1`` or mismatched shapes.
    DataFormatError
        On malformed labels, NaN scores, or out-of-range or repeated ranked
        ids (a subclass of :class:`ValueError`).
    """
    return _precision(_judge(Y_true, Y_pred, k), k)


def ndcg_at_k(Y_true, Y_pred, k: int) -> float:
    """Normalised discounted cumulative gain at ``k``, averaged over rows.

    The ideal DCG of a row with ``|y|`` true labels is
    ``sum_{j=1}^{min(k, |y|)} 1 / log2(j + 1)``; rows without true labels
    score 0 and stay in the mean. Parameters, return value and errors are
    those of :func:`precision_at_k`.
    """
    return _ndcg(_judge(Y_true, Y_pred, k), k)


def recall_at_k(Y_true, Y_pred, k: int) -> float:
    """Recall at ``k``: the share of each row's true labels in its top ``k``.

    Rows without true labels score 0 and stay in the mean. Parameters,
    return value and errors are those of :func:`precision_at_k`.
    """
    return _recall(_judge(Y_true, Y_pred, k), k)


def coverage_at_k(Y_true, Y_pred, k: int) -> float:
    """Share of the labels present in ``Y_true`` found in some row's top ``k``.

    A label counts as covered when it is ranked in the top ``k`` of a row
    that is tagged with it. Returns 0.0 when ``Y_true`` has no labels at all.
    Parameters and errors are those of :func:`precision_at_k`.
    """
    return _coverage(_judge(Y_true, Y_pred, k), k)


def psprecision_at_k(Y_true, Y_pred, inv_propensity, k: int) -> float:
    """Propensity-scored precision at ``k``, normalised by the oracle.

    Parameters
    ----------
    Y_true, Y_pred, k
        As in :func:`precision_at_k`.
    inv_propensity : array-like of shape (n_labels,)
        Finite weight ``q_l`` of each label, usually from
        :func:`inverse_propensity`.

    Returns
    -------
    float
        Mean PSP@k of the predictions divided by that of an oracle ranking
        each row's true labels by descending ``q_l`` (ties to the lower id),
        so 1.0 for a perfect prediction; 0.0 when the oracle scores 0.

    Raises
    ------
    ValueError, DataFormatError
        As in :func:`precision_at_k`; also when ``inv_propensity`` is not a
        finite 1-D array with one entry per label.
    """
    return _psprecision(_judge(Y_true, Y_pred, k, inv_propensity), k)


def psndcg_at_k(Y_true, Y_pred, inv_propensity, k: int) -> float:
    """Propensity-scored nDCG at ``k``, normalised by the oracle.

    A correct label ``l`` at rank ``j`` gains ``q_l / log2(j + 1)``; a row's
    DCG is divided by the same count-based ideal DCG as :func:`ndcg_at_k`,
    and the mean over rows by the oracle's mean (see
    :func:`psprecision_at_k`). Parameters and errors are those of
    :func:`psprecision_at_k`.
    """
    return _psndcg(_judge(Y_true, Y_pred, k, inv_propensity), k)


def evaluate(
    Y_true, Y_pred, ks: Iterable[int] = (1, 3, 5), inv_propensity=None
) -> dict[str, float]:
    """Compute every metric at several cut-offs, ranking the predictions once.

    Parameters
    ----------
    Y_true, Y_pred
        As in :func:`precision_at_k`.
    ks : iterable of int, default=(1, 3, 5)
        Cut-offs, each ``>= 1``; duplicates are ignored.
    inv_propensity : array-like of shape (n_labels,), optional
        Label weights; without them the PSP and PSnDCG entries are omitted.

    Returns
    -------
    dict of str to float
        Keys ``"P@k"``, ``"nDCG@k"``, ``"PSP@k"``, ``"PSnDCG@k"``, ``"R@k"``
        and ``"coverage@k"`` for every ``k``, grouped by metric, ``k``
        increasing.

    Raises
    ------
    ValueError, DataFormatError
        As in :func:`psprecision_at_k`, and when ``ks`` is empty.
    """
    ks = sorted({check_int("k", k, 1) for k in _as_list(ks)})
    if not ks:
        raise ValueError("ks must hold at least one cut-off")
    judged = _judge(Y_true, Y_pred, ks[-1], inv_propensity)
    return {f"{name}@{k}": metric(judged, k) for name, metric in _METRICS.items()
            for k in ks if inv_propensity is not None or name not in _PROPENSITY_SCORED}


@dataclass(frozen=True)
class _Judgement:
    """A ranking compared with the truth, ready for any metric up to ``k_max``."""

    labels: np.ndarray  # (n, k_max) int64 predicted ids, best first; -1 = empty slot
    hits: np.ndarray  # (n, k_max) bool, labels[i, j] is a true label of row i
    n_true: np.ndarray  # (n,) int64 number of true labels of each row
    n_present: int  # distinct labels with at least one true occurrence
    gains: np.ndarray | None  # (n, k_max) q of each hit, 0 elsewhere; None without q
    ideal_gains: np.ndarray | None  # (n, k_max) gains of the descending-q oracle


def _judge(Y_true, Y_pred, k_max: int, inv_propensity=None) -> _Judgement:
    """Validate the inputs, rank ``Y_pred`` to depth ``k_max`` and mark hits."""
    k_max = check_int("k", k_max, 1)
    kind, predictions = _read_predictions(Y_pred)
    weights = None if inv_propensity is None else _check_weights(inv_propensity)
    Y = _check_truth(Y_true, kind, predictions, weights)
    if predictions.shape[0] != Y.shape[0]:
        raise ValueError(f"Y_true has {Y.shape[0]} rows but Y_pred has {predictions.shape[0]}")
    if Y.shape[0] == 0:
        raise ValueError("Y_true has no rows to evaluate")
    if kind == "scores":
        labels = _rank_scores(predictions, k_max)[0]
    else:
        labels = _pad_ranking(predictions, k_max)
    hits = _find_hits(Y, labels)
    gains = ideal_gains = None
    if weights is not None:
        gains = _weigh(labels, hits, weights)
        weighted_truth = sp.csr_matrix((weights[Y.indices], Y.indices, Y.indptr), shape=Y.shape)
        ideal_labels = _top_k_sparse(weighted_truth, k_max)[0]
        ideal_gains = _weigh(ideal_labels, ideal_labels >= 0, weights)
    return _Judgement(
        labels=labels,
        hits=hits,
        n_true=np.diff(Y.indptr),
        n_present=int(np.unique(Y.indices).size),
        gains=gains,
        ideal_gains=ideal_gains,
    )


def _read_predictions(Y_pred) -> tuple[str, object]:
    """Classify ``Y_pred`` as ``"scores"`` or ``"rankings"`` by its type."""
    if sp.issparse(Y_pred):
        return "scores", _canonical_csr(Y_pred, "Y_pred")
    array = _as_array(Y_pred, "Y_pred")
    if array.dtype.kind in "iu":
        if array.ndim != 2 or array.shape[1] < 1:
            raise ValueError(
                f"Y_pred: an integer ranking must have shape (n_samples, k') "
                f"with k' >= 1, got {array.shape}"
            )
        return "rankings", array.astype(np.int64, copy=False)
    return "scores", _dense_scores(array, "Y_pred")


def _check_truth(Y_true, kind: str, predictions, weights) -> sp.csr_matrix:
    """Validate ``Y_true`` and agree on one label count with the predictions.

    An indicator matrix, a score matrix and the weight vector each fix the
    number of labels and must agree. Label lists and rankings only bound it
    from below, so the largest id seen decides when nothing else does.
    """
    is_matrix = sp.issparse(Y_true) or isinstance(Y_true, np.ndarray)
    Y = check_labels(Y_true, what="Y_true")
    widths = {}
    if is_matrix:
        widths["Y_true"] = Y.shape[1]
    if kind == "scores":
        widths["Y_pred"] = predictions.shape[1]
    if weights is not None:
        widths["inv_propensity"] = weights.shape[0]
    if len(set(widths.values())) > 1:
        shown = ", ".join(f"{name} {width}" for name, width in widths.items())
        raise ValueError(f"inconsistent number of labels: {shown}")
    largest_ranked = int(predictions.max(initial=-1)) if kind == "rankings" else -1
    n_labels = next(iter(widths.values())) if widths else max(Y.shape[1], largest_ranked + 1)
    if kind == "rankings":
        _check_ranking(predictions, n_labels)
    if Y.shape[1] > n_labels:
        raise DataFormatError(f"Y_true: label id {Y.shape[1] - 1} out of range [0, {n_labels})")
    if Y.shape[1] < n_labels:
        Y = sp.csr_matrix((Y.data, Y.indices, Y.indptr), shape=(Y.shape[0], n_labels))
    return Y


def _check_ranking(ranking: np.ndarray, n_labels: int) -> None:
    """Reject ranked ids outside ``[-1, n_labels)`` and labels ranked twice in a row."""
    if ranking.size and (ranking.min() < -1 or ranking.max() >= n_labels):
        raise DataFormatError(f"Y_pred: ranked label ids must lie in [-1, {n_labels})")
    ordered = np.sort(ranking, axis=1)
    repeated = (ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)
    bad_rows = np.flatnonzero(repeated.any(axis=1))
    if bad_rows.size:
        row = int(bad_rows[0])
        label = int(ordered[row, 1:][repeated[row]][0])
        raise DataFormatError(f"Y_pred: row {row} ranks label {label} more than once")


def _check_weights(inv_propensity) -> np.ndarray:
    """Return the label weights as a finite 1-D float64 array."""
    try:
        weights = np.asarray(inv_propensity, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataFormatError(f"inv_propensity: not an array of numbers ({exc})") from exc
    if weights.ndim != 1:
        raise ValueError(f"inv_propensity: expected a 1-D array, got shape {weights.shape}")
    if not np.all(np.isfinite(weights)):
        raise DataFormatError("inv_propensity: contains NaN or infinite values")
    return weights


def _pad_ranking(ranking: np.ndarray, k: int) -> np.ndarray:
    """First ``k`` columns of a ranking, padded with ``-1`` when narrower."""
    labels = np.full((ranking.shape[0], k), -1, dtype=np.int64)
    width = min(k, ranking.shape[1])
    labels[:, :width] = ranking[:, :width]
    return labels


def _find_hits(Y: sp.csr_matrix, labels: np.ndarray) -> np.ndarray:
    """Mark which ranked labels are true labels of their row.

    Each (row, label) pair is encoded as ``row * n_labels + label``; the
    keys of a canonical CSR matrix are then globally sorted, so one
    ``searchsorted`` answers every membership query at once.
    """
    n_rows, n_labels = Y.shape
    rows = np.repeat(np.arange(n_rows, dtype=np.int64), np.diff(Y.indptr))
    true_keys = rows * n_labels + Y.indices
    if true_keys.size == 0:
        return np.zeros(labels.shape, dtype=bool)
    query = np.arange(n_rows, dtype=np.int64)[:, None] * n_labels + labels
    position = np.minimum(np.searchsorted(true_keys, query), true_keys.size - 1)
    # An empty slot (-1) encodes to the last label of the previous row, so
    # it must be excluded explicitly.
    return (true_keys[position] == query) & (labels >= 0)


def _weigh(labels: np.ndarray, hits: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Gain ``q_l`` for each hit, 0 for misses and empty slots."""
    gains = np.zeros(labels.shape)
    gains[hits] = weights[labels[hits]]
    return gains


def _mean_cut_sum(gains: np.ndarray, k: int) -> float:
    """Mean over rows of the gains summed over the top ``k``, divided by ``k``."""
    return float(np.mean(_row_cut_sums(gains, k)))


def _mean_ndcg(gains: np.ndarray, n_true: np.ndarray, k: int) -> float:
    """Mean over rows of DCG@k divided by the count-based ideal DCG."""
    return float(np.mean(_row_ndcg(gains, n_true, k)))


def _row_ndcg(gains: np.ndarray, n_true: np.ndarray, k: int) -> np.ndarray:
    """Each row's DCG@k divided by its count-based ideal DCG."""
    discounts = 1.0 / np.log2(np.arange(2, k + 2))
    dcg = gains[:, :k] @ discounts
    # ideal[c] is the ideal DCG of a row with c true labels (c <= k); rows
    # without true labels have DCG 0, and dividing by 1 keeps them at 0.
    ideal = np.concatenate(([1.0], np.cumsum(discounts)))
    return dcg / ideal[np.minimum(n_true, k)]


def ndcg_by_row(Y: sp.csr_matrix, labels: np.ndarray, k: int) -> np.ndarray:
    """nDCG@k of every row, for callers whose inputs are checked already.

    Parameters
    ----------
    Y : scipy.sparse.csr_matrix of shape (n_samples, n_labels)
        True labels, canonical (sorted indices, no duplicates).
    labels : numpy.ndarray of int, shape (n_samples, >= k)
        Each row's ranked labels, best first, -1 padded.
    k : int
        Depth, >= 1.

    Returns
    -------
    numpy.ndarray of float64, shape (n_samples,)
    """
    labels = _pad_ranking(labels, k)
    return _row_ndcg(_find_hits(Y, labels).astype(np.float64), np.diff(Y.indptr), k)


def paired_difference(Y_true, Y_pred_a, Y_pred_b, metric: str, k: int,
                      inv_propensity=None) -> tuple[float, float]:
    """Difference of one metric between two predictions of the same rows, with its
    standard error over the rows.

    Every metric here but coverage is a mean over rows (the propensity-scored
    ones divided by their oracle's mean, the same for both predictions), so
    the difference is the mean of the rows' differences and its standard error
    that of a paired mean: far smaller than the two scores' own errors when
    the predictions agree on most rows, which is what tells a real lead from
    the noise of one test split.

    Parameters
    ----------
    Y_true, Y_pred_a, Y_pred_b
        As ``Y_true`` and ``Y_pred`` in :func:`precision_at_k`.
    metric : {"P", "nDCG", "PSP", "PSnDCG", "R"}
        The metric, named as in :func:`evaluate`'s keys.
    k : int
        Cut-off, ``k >= 1``.
    inv_propensity : array-like of shape (n_labels,), optional
        Label weights, needed by "PSP" and "PSnDCG".

    Returns
    -------
    difference : float
        The metric of `Y_pred_a` minus that of `Y_pred_b`.
    standard_error : float
        ``std(row differences, ddof=1) / sqrt(n_rows)``; NaN for one row.

    Raises
    ------
    ValueError, DataFormatError
        As in :func:`psprecision_at_k`; on an unknown `metric`, or a
        propensity-scored one without `inv_propensity`.
    """
    if metric not in _ROW_METRICS:
        raise ValueError(f"metric must be one of {sorted(_ROW_METRICS)}, got {metric!r}")
    if metric in _PROPENSITY_SCORED and inv_propensity is None:
        raise ValueError(f"{metric} needs inv_propensity")
    weights = inv_propensity if metric in _PROPENSITY_SCORED else None
    rows_a, rows_b = (_ROW_METRICS[metric](_judge(Y_true, Y_pred, k, weights), k)
                      for Y_pred in (Y_pred_a, Y_pred_b))
    differences = rows_a - rows_b
    if differences.size < 2:
        return float(differences.mean()), float("nan")
    return (float(differences.mean()),
            float(differences.std(ddof=1) / np.sqrt(differences.size)))


def _row_cut_sums(gains: np.ndarray, k: int) -> np.ndarray:
    """Each row's gains summed over the top ``k``, divided by ``k``."""
    return gains[:, :k].sum(axis=1) / k


def _scaled(rows: np.ndarray, oracle: float) -> np.ndarray:
    """Rows' scores over their oracle's mean: they average to the normalised metric."""
    return rows / oracle if oracle != 0 else np.zeros_like(rows)


def _precision(judged: _Judgement, k: int) -> float:
    return _mean_cut_sum(judged.hits, k)


def _ndcg(judged: _Judgement, k: int) -> float:
    return _mean_ndcg(judged.hits, judged.n_true, k)


def _psprecision(judged: _Judgement, k: int) -> float:
    return _ratio(_mean_cut_sum(judged.gains, k), _mean_cut_sum(judged.ideal_gains, k))


def _psndcg(judged: _Judgement, k: int) -> float:
    return _ratio(
        _mean_ndcg(judged.gains, judged.n_true, k),
        _mean_ndcg(judged.ideal_gains, judged.n_true, k),
    )


def _recall(judged: _Judgement, k: int) -> float:
    return float(np.mean(_recall_by_row(judged, k)))


def _recall_by_row(judged: _Judgement, k: int) -> np.ndarray:
    return judged.hits[:, :k].sum(axis=1) / np.maximum(judged.n_true, 1)


def _coverage(judged: _Judgement, k: int) -> float:
    covered = np.unique(judged.labels[:, :k][judged.hits[:, :k]]).size
    return covered / judged.n_present if judged.n_present else 0.0


#: Metric name (as in :func:`evaluate`'s keys) -> its function of a judgement.
_METRICS = {"P": _precision, "nDCG": _ndcg, "PSP": _psprecision, "PSnDCG": _psndcg,
            "R": _recall, "coverage": _coverage}

#: Metric name -> each row's share of it: the mean of the rows is the metric.
_ROW_METRICS = {
    "P": lambda judged, k: _row_cut_sums(judged.hits, k),
    "nDCG": lambda judged, k: _row_ndcg(judged.hits, judged.n_true, k),
    "PSP": lambda judged, k: _scaled(_row_cut_sums(judged.gains, k),
                                     _mean_cut_sum(judged.ideal_gains, k)),
    "PSnDCG": lambda judged, k: _scaled(_row_ndcg(judged.gains, judged.n_true, k),
                                        _mean_ndcg(judged.ideal_gains, judged.n_true, k)),
    "R": _recall_by_row,
}

#: The metrics that weigh labels by their inverse propensity.
_PROPENSITY_SCORED = ("PSP", "PSnDCG")


def _ratio(value: float, oracle: float) -> float:
    """``value / oracle``, defined as 0 when the oracle scores 0."""
    return value / oracle if oracle != 0 else 0.0


def _as_list(ks) -> list:
    """``ks`` as a list, accepting a single integer for convenience."""
    if isinstance(ks, (int, np.integer)):
        return [ks]
    return list(ks)
