"""Ranking metrics for extreme multi-label classification.

The definitions follow the Extreme Classification Repository (Jain, Prabhu
and Varma, KDD 2016). All but coverage are means over *all* test rows:

* ``P@k = (1/k) sum_{l in top-k} y_l``
* ``nDCG@k = DCG@k / sum_{j=1}^{min(k, |y|)} 1 / log2(j + 1)`` with
  ``DCG@k = sum_{j=1}^{k} y_{r_j} / log2(j + 1)``
* ``R@k = |top-k  intersect  y| / |y|``
* ``PSP@k`` and ``PSnDCG@k``: the same sums with the gain of a correct label
  ``l`` multiplied by its inverse propensity ``q_l``, each divided by the
  value an oracle obtains when it ranks every row's true labels by
  descending ``q_l``; a perfect prediction therefore scores 1.
* ``coverage@k``: the fraction of the distinct labels present in
  ``Y_true`` that are predicted correctly in the top ``k`` of some row.

Each metric is also a scikit-learn scorer, for ``GridSearchCV``,
``cross_validate`` and the like: ``scoring=scorer("P@5")`` (see
:func:`scorer`).

Conventions shared by every function
------------------------------------
*Predictions.* ``Y_pred`` is either a **score matrix** or a **ranking**, told
apart by type alone:

* any scipy sparse matrix, and any dense array of floating dtype, is a score
  matrix of shape ``(n_samples, n_labels)``; higher is better. In a dense
  matrix every entry, zeros included, is a candidate; in a sparse matrix
  only stored entries are (an explicitly stored zero is a score, a missing
  entry is not). In both kinds a score of ``-inf`` means "not predicted".
  NaN is an error.
* a dense array of integer dtype is a ranking of shape
  ``(n_samples, k')``, ``k' >= 1``: label ids best first, ``-1`` for an
  empty slot. A label may appear at most once per row. An integer-valued
  *score* matrix must therefore be cast to float first.

*Ties* between equal scores go to the lower label id, so results never
depend on the sort algorithm.

*Short rankings.* When fewer than ``k`` labels are predicted (``k`` larger
than ``n_labels``, rows with few stored scores, rankings narrower than
``k``, ``-1`` slots), the missing slots count as wrong; P@k still divides
by ``k``.

*Rows without true labels* count as 0 for every metric and stay in the mean
(the repository's convention for P@k, applied to nDCG@k and R@k as well so
that all metrics average over the same rows).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ._checks import check_int
from ._sklearn import final_step, predicted_ids, true_label_sets
from ._validation import check_csr_structure, check_labels, widen
from .exceptions import DataFormatError

__all__ = [
    "PROPENSITY_PRESETS",
    "RankingScorer",
    "coverage_at_k",
    "evaluate",
    "evaluate_model",
    "inverse_propensity",
    "inverse_propensity_from_counts",
    "ndcg_at_k",
    "precision_at_k",
    "psndcg_at_k",
    "psprecision_at_k",
    "recall_at_k",
    "scorer",
    "scorers",
    "top_k",
]

#: ``(A, B)`` of :func:`inverse_propensity` recommended by Jain et al. (2016)
#: for most data sets, for Amazon product data sets, and for Wikipedia.
PROPENSITY_PRESETS: dict[str, tuple[float, float]] = {
    "default": (0.55, 1.5),
    "amazon": (0.6, 2.6),
    "wikipedia": (0.5, 0.4),
}

# Dense score matrices are ranked a block of rows at a time so that the
# boolean and cumulative-count temporaries stay near 32 MB whatever the size.
_DENSE_BLOCK_ENTRIES = 1 << 22

# Rankings up to this depth are built by repeated row maxima: ``k`` linear
# passes beat an O(nnz log nnz) sort until ``k`` reaches a few dozen
# (measured on 10M stored scores: 5 passes 0.9 s, one stable sort 8 s).
_MAX_K_BY_PASSES = 32


# ------------------------------------------------------------------------- ranking


def top_k(scores, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Rank each row of a score matrix and keep the ``k`` best labels.

    Parameters
    ----------
    scores : array-like or scipy sparse matrix of shape (n_samples, n_labels)
        Real scores, higher is better; unlike in the metric functions, an
        integer array is read as scores here. In a sparse matrix only stored
        entries are candidates; in either kind, ``-inf`` marks a label that
        is not predicted. A sparse matrix is never densified.
    k : int
        Number of labels to keep per row, ``k >= 1``; may exceed ``n_labels``.

    Returns
    -------
    labels : numpy.ndarray of shape (n_samples, k), dtype int64
        Label ids, best first; among equal scores the lower id comes first.
        Slots beyond a row's candidates hold ``-1``.
    values : numpy.ndarray of shape (n_samples, k), dtype float64
        The matching scores; padded slots hold ``-inf``.

    Raises
    ------
    ValueError
        If ``k < 1`` or ``scores`` is not two-dimensional.
    DataFormatError
        If ``scores`` contains NaN, is not numeric, or is a malformed sparse
        matrix.
    """
    k = check_int("k", k, 1)
    if sp.issparse(scores):
        return _rank_scores(_canonical_csr(scores, "scores"), k)
    return _rank_scores(_dense_scores(scores, "scores"), k)


def _rank_scores(scores, k: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`top_k` of scores already checked by ``_canonical_csr`` or ``_dense_scores``."""
    if sp.issparse(scores):
        return _top_k_sparse(scores, k)
    return _top_k_dense(scores, k)


def _top_k_dense(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`top_k` of a 2-D real array, ranked in blocks of rows."""
    n_rows, n_labels = scores.shape
    labels = np.full((n_rows, k), -1, dtype=np.int64)
    values = np.full((n_rows, k), -np.inf)
    width = min(k, n_labels)
    block_rows = max(1, _DENSE_BLOCK_ENTRIES // max(n_labels, 1))
    for start in range(0, n_rows if width else 0, block_rows):
        # A float64 copy: the selection below overwrites chosen scores.
        block = np.array(scores[start : start + block_rows], dtype=np.float64)
        nan_rows = np.flatnonzero(np.isnan(block).any(axis=1))
        if nan_rows.size:
            raise DataFormatError(f"scores: row {start + nan_rows[0]} contains NaN")
        stop = start + block.shape[0]
        if width <= _MAX_K_BY_PASSES:
            ranked = _select_dense_by_passes(block, width)
        else:
            ranked = _select_dense_by_sort(block, width)
        labels[start:stop, :width], values[start:stop, :width] = ranked
    labels[values == -np.inf] = -1
    return labels, values


def _select_dense_by_passes(block: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Best ``width`` (label, score) pairs per row by repeated row maxima.

    ``np.argmax`` returns the first maximum, i.e. the lowest label id among
    ties. Each chosen score is then overwritten with ``-inf`` in ``block``;
    once a row's maximum is ``-inf`` it has no candidates left, and the
    caller turns those slots into ``-1``.
    """
    rows = np.arange(block.shape[0])
    columns = np.empty((block.shape[0], width), dtype=np.int64)
    picked = np.empty((block.shape[0], width))
    for slot in range(width):
        best = np.argmax(block, axis=1)
        columns[:, slot] = best
        picked[:, slot] = block[rows, best]
        block[rows, best] = -np.inf
    return columns, picked


def _select_dense_by_sort(block: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Best ``width`` (label, score) pairs per row by partition and sort.

    ``np.argpartition`` alone would pick arbitrary members of a tie at the
    cut-off, so the cut-off score is found first and tied labels are then
    admitted in increasing id order until each row holds exactly ``width``.
    """
    n_rows, n_labels = block.shape
    if width < n_labels:
        cutoff = np.partition(block, n_labels - width, axis=1)[:, n_labels - width, None]
        above = block > cutoff
        tied = block == cutoff
        room = width - above.sum(axis=1, keepdims=True)
        keep = above | (tied & (np.cumsum(tied, axis=1, dtype=np.int32) <= room))
        columns = np.nonzero(keep)[1].reshape(n_rows, width)
    else:
        columns = np.broadcast_to(np.arange(n_labels, dtype=np.int64), block.shape)
    picked = np.take_along_axis(block, columns, axis=1)
    # ``columns`` is increasing along each row, so a stable sort on the
    # score alone leaves tied labels in increasing id order.
    order = np.argsort(-picked, axis=1, kind="stable")
    return np.take_along_axis(columns, order, axis=1), np.take_along_axis(picked, order, axis=1)


def _top_k_sparse(scores: sp.csr_matrix, k: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`top_k` of a canonical CSR matrix, touching stored entries only."""
    n_rows = scores.shape[0]
    # A float64 copy: the selection by passes overwrites chosen scores.
    data = np.array(scores.data, dtype=np.float64)
    nan_entries = np.flatnonzero(np.isnan(data))
    if nan_entries.size:
        row = np.searchsorted(scores.indptr, nan_entries[0], side="right") - 1
        raise DataFormatError(f"scores: row {row} contains NaN")
    labels = np.full((n_rows, k), -1, dtype=np.int64)
    values = np.full((n_rows, k), -np.inf)
    if data.size:
        select = _select_sparse_by_passes if k <= _MAX_K_BY_PASSES else _select_sparse_by_sort
        select(scores.indptr, scores.indices, data, labels, values)
    return labels, values


def _select_sparse_by_passes(indptr, indices, data, labels, values) -> None:
    """Fill ``labels``/``values`` by repeated segmented row maxima.

    Each pass takes every row's largest remaining score (``reduceat`` over
    the CSR segments), keeps its first occurrence, the lowest label id, and
    overwrites it with ``-inf``. A row whose maximum is ``-inf`` has no
    candidates left and keeps the padding.
    """
    lengths = np.diff(indptr)
    busy_rows = np.flatnonzero(lengths)
    starts = indptr[busy_rows]
    position = np.arange(data.size, dtype=np.int64)
    for slot in range(labels.shape[1]):
        best = np.maximum.reduceat(data, starts)
        is_best = data == np.repeat(best, lengths[busy_rows])
        first = np.minimum.reduceat(np.where(is_best, position, data.size), starts)
        found = best > -np.inf
        if not found.any():
            break
        labels[busy_rows[found], slot] = indices[first[found]]
        values[busy_rows[found], slot] = best[found]
        data[first] = -np.inf


def _select_sparse_by_sort(indptr, indices, data, labels, values) -> None:
    """Fill ``labels``/``values`` by one stable sort of all stored entries."""
    rows = np.repeat(np.arange(indptr.size - 1, dtype=np.int64), np.diff(indptr))
    candidate = data > -np.inf
    rows, columns, data = rows[candidate], indices[candidate], data[candidate]
    # Entries arrive sorted by (row, label); a stable sort by (row, -score)
    # therefore breaks ties by the lower label id.
    order = np.lexsort((-data, rows))
    rows, columns, data = rows[order], columns[order], data[order]
    row_starts = np.searchsorted(rows, np.arange(indptr.size - 1, dtype=np.int64))
    rank = np.arange(rows.size, dtype=np.int64) - row_starts[rows]
    kept = rank < labels.shape[1]
    labels[rows[kept], rank[kept]] = columns[kept]
    values[rows[kept], rank[kept]] = data[kept]


# ---------------------------------------------------------------------- propensity


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


# ------------------------------------------------------------------ public metrics


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


# ---------------------------------------------------------------- shared internals


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


def _dense_scores(scores, what: str) -> np.ndarray:
    """Check that ``scores`` is a 2-D real array; values are checked when ranked."""
    array = _as_array(scores, what)
    if array.dtype.kind not in "fiu":
        raise DataFormatError(
            f"{what}: scores must be real numbers, got dtype {array.dtype} "
            f"(cast booleans to float; integer arrays are rankings)"
        )
    if array.ndim != 2:
        raise ValueError(f"{what}: expected a 2-D score matrix, got shape {array.shape}")
    return array


def _as_array(values, what: str) -> np.ndarray:
    """``np.asarray`` with a clear error for ragged nested lists."""
    try:
        return np.asarray(values)
    except ValueError as exc:
        raise DataFormatError(f"{what}: not a rectangular array ({exc})") from exc


def _canonical_csr(matrix, what: str) -> sp.csr_matrix:
    """Return a sparse matrix as CSR with sorted, unique, in-range columns."""
    csr = sp.csr_matrix(matrix)
    if csr.dtype.kind not in "fiu":
        raise DataFormatError(f"{what}: scores must be real numbers, got dtype {csr.dtype}")
    if not csr.has_canonical_format:
        csr = csr.copy()
        csr.sum_duplicates()
    check_csr_structure(csr.indptr, csr.indices, csr.shape, what)
    return csr


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
    return float(gains[:, :k].sum() / (k * gains.shape[0]))


def _mean_ndcg(gains: np.ndarray, n_true: np.ndarray, k: int) -> float:
    """Mean over rows of DCG@k divided by the count-based ideal DCG."""
    discounts = 1.0 / np.log2(np.arange(2, k + 2))
    dcg = gains[:, :k] @ discounts
    # ideal[c] is the ideal DCG of a row with c true labels (c <= k); rows
    # without true labels have DCG 0, and dividing by 1 keeps them at 0.
    ideal = np.concatenate(([1.0], np.cumsum(discounts)))
    return float(np.mean(dcg / ideal[np.minimum(n_true, k)]))


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
    found = judged.hits[:, :k].sum(axis=1)
    return float(np.mean(found / np.maximum(judged.n_true, 1)))


def _coverage(judged: _Judgement, k: int) -> float:
    covered = np.unique(judged.labels[:, :k][judged.hits[:, :k]]).size
    return covered / judged.n_present if judged.n_present else 0.0


#: Metric name (as in :func:`evaluate`'s keys) -> its function of a judgement.
_METRICS = {"P": _precision, "nDCG": _ndcg, "PSP": _psprecision, "PSnDCG": _psndcg,
            "R": _recall, "coverage": _coverage}

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


# ------------------------------------------------------------------------- scorers


class RankingScorer:
    """One metric at one cut-off as a scikit-learn scorer: ``scorer(estimator, X, Y)``.

    Made by :func:`scorer`; pass it as ``scoring=`` to ``GridSearchCV``,
    ``RandomizedSearchCV``, ``cross_validate`` or ``cross_val_score``. It
    asks the fitted learner (or the learner at the end of a ``Pipeline``,
    after the pipeline's transforms) for its top ``k`` labels of ``X`` and
    scores them against ``Y`` (an indicator matrix, label lists, or one
    label per sample; for a learner of named labels, names). Larger is
    better, as scikit-learn expects.

    Propensity-scored metrics weigh labels by the inverse propensities of
    Jain et al. (2016) computed from the learner's *own* training data: the
    ``train_label_counts_`` and ``n_train_samples_`` that every xmltree
    ``fit`` records. In a cross-validation these are the training fold's,
    which the scorer itself never sees. A learner loaded from a file has
    none (but for :class:`xmltree.TextClassifier`, which saves them) and
    cannot be scored by them.

    Parameters
    ----------
    metric : {"P", "nDCG", "PSP", "PSnDCG", "R", "coverage"}
        As the keys of :func:`evaluate`.
    k : int
        Cut-off, >= 1.
    A, B : float
        Propensity-model constants (:data:`PROPENSITY_PRESETS`); used by
        PSP and PSnDCG only.
    """

    def __init__(self, metric: str, k: int, A: float = 0.55, B: float = 1.5):
        if metric not in _METRICS:
            raise ValueError(f"unknown metric {metric!r}; valid: {list(_METRICS)}")
        self.metric = metric
        self.k = check_int("k", k, 1)
        self.A = A
        self.B = B

    def __call__(self, estimator, X, Y) -> float:
        """Score the fitted ``estimator`` on ``(X, Y)``.

        Raises
        ------
        ValueError
            For a propensity-scored metric when the learner recorded no
            training label counts.
        DataFormatError
            If ``Y`` is not a valid label form for the learner.
        """
        learner, X = final_step(estimator, X)
        if (self.metric in _PROPENSITY_SCORED
                and getattr(learner, "train_label_counts_", None) is None):
            raise ValueError(
                f"{self!r} needs the training label counts that fit records "
                f"(train_label_counts_), and this {type(learner).__name__} has none: it was "
                "loaded from a file, or fitted on targets that are not labels it ranks")
        results = _evaluate_learner(learner, X, Y, [self.k], self.A, self.B)
        return results[f"{self.metric}@{self.k}"]

    def __repr__(self) -> str:
        return f"scorer({self.metric + '@' + str(self.k)!r})"


def evaluate_model(model, X, Y, ks: Iterable[int] = (1, 3, 5), *, A: float = 0.55,
                   B: float = 1.5) -> dict[str, float]:
    """:func:`evaluate` a fitted model's ranking of ``X`` against the true labels ``Y``.

    The model ranks ``X`` once, to the largest cut-off. Labels may be given
    in any form the learner ranks: label ids (indicator matrix, label
    lists, one id per sample) or, for a learner of named labels such as
    :class:`xmltree.TextClassifier`, names; true labels the model never saw
    count as misses.

    Parameters
    ----------
    model : xmltree learner, or a scikit-learn ``Pipeline`` ending with one
        Fitted.
    X : array-like, sparse matrix or sequence of documents
        Samples, as the model takes them.
    Y : indicator matrix, list of label lists, or one label per sample
        True labels.
    ks : iterable of int, default=(1, 3, 5)
        Cut-offs.
    A, B : float, default=0.55, 1.5
        Propensity-model constants.

    Returns
    -------
    dict of str to float
        As :func:`evaluate`; PSP@k and PSnDCG@k are included when the
        learner recorded its training label counts (``train_label_counts_``,
        set by ``fit``), with the propensities of its training data.
    """
    learner, X = final_step(model, X)
    return _evaluate_learner(learner, X, Y, _as_list(ks), A, B)


def _evaluate_learner(learner, X, Y, ks: list, A: float, B: float) -> dict[str, float]:
    """:func:`evaluate_model` of the learner itself (not a pipeline)."""
    ks = sorted({check_int("k", k, 1) for k in ks})
    labels, _ = learner.predict_top_k(X, ks[-1])
    ranking = predicted_ids(learner, labels)
    truth = true_label_sets(learner, Y)
    counts = getattr(learner, "train_label_counts_", None)
    n_labels = max(truth.shape[1], int(ranking.max(initial=-1)) + 1,
                   0 if counts is None else len(counts))
    weights = None
    if counts is not None:
        padded = np.zeros(n_labels, dtype=np.int64)
        padded[:len(counts)] = counts
        weights = inverse_propensity_from_counts(padded, learner.n_train_samples_, A, B)
    return evaluate(widen(truth, n_labels), ranking, ks, weights)


def scorer(name: str, *, A: float = 0.55, B: float = 1.5) -> RankingScorer:
    """The scikit-learn scorer of a metric named as :func:`evaluate` names it.

    Parameters
    ----------
    name : str
        ``"<metric>@<k>"``: ``"P@1"``, ``"nDCG@3"``, ``"PSP@5"``,
        ``"PSnDCG@5"``, ``"R@10"`` or ``"coverage@5"``.
    A, B : float, default=0.55, 1.5
        Propensity-model constants of PSP and PSnDCG (see
        :data:`PROPENSITY_PRESETS`).

    Returns
    -------
    RankingScorer

    Raises
    ------
    ValueError
        On a name of another form, an unknown metric or a cut-off < 1.

    Examples
    --------
    >>> from sklearn.model_selection import GridSearchCV          # doctest: +SKIP
    >>> search = GridSearchCV(LdSM(), {"max_nodes": [7, 15]},     # doctest: +SKIP
    ...                       scoring=scorer("P@5")).fit(X, Y)
    """
    metric, at, k = name.partition("@")
    if not at or not k.isdigit():
        raise ValueError(f"scorer name must look like 'P@5', got {name!r}")
    return RankingScorer(metric, int(k), A=A, B=B)


def scorers(*names: str, A: float = 0.55, B: float = 1.5) -> dict[str, RankingScorer]:
    """Several scorers by name, as the dict ``cross_validate(scoring=...)`` takes.

    Examples
    --------
    >>> cross_validate(LdSM(), X, Y, scoring=scorers("P@1", "PSP@5"))  # doctest: +SKIP
    """
    return {name: scorer(name, A=A, B=B) for name in names}
