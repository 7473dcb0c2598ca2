"""Tail-label re-ranking of a model's top candidates, after PfastreXML.

Tree ensembles rank frequent ("head") labels well and rare ("tail") labels
badly: a leaf holds few examples of a tail label, so its empirical score is
small or noisy. PfastreXML (Jain, Prabhu & Varma, KDD 2016) corrects this by
re-scoring the ensemble's top candidates with a simple classifier per label
that needs few examples to be reliable: the distance of the unit-normalised
point to the centroid of the unit-normalised training points carrying the
label,

    t_l(x) = 1 / (1 + exp(gamma * ||x_hat - mu_l||^2)),

and blending it with the ensemble's score ``p_l``. Two blends are offered:

``"geometric"`` (PfastreXML)
    ``s_l = p_l**alpha * t_l**(1 - alpha)``, computed as
    ``alpha log p_l + (1 - alpha) log t_l`` so that tiny tail scores never
    underflow to ties.
``"linear"`` (LdSM, Majzoubi & Choromanska 2020)
    ``s_l = beta * p_l + (1 - beta) * t_l``.

Either blend is then multiplied by ``q_l**lambda``, the label's inverse
propensity (Jain et al.) raised to ``propensity_exponent``: ranking by
``p_l q_l`` is what maximises the expected PSP@k when ``p_l`` is a
probability, and it is how PfastreXML's propensity-scored training targets
act on a leaf's label scores. Here it acts on the candidates' scores, so the
base model is left untouched.

The tail classifier is written as issue 4 states it (``t_l <= 1/2``, reached
at zero distance). Only the *ranking* of candidates depends on the form, and
for the geometric blend ``(1 - alpha) log t_l`` is, up to a term that
vanishes for ``gamma d >> 1``, just ``-(1 - alpha) gamma d``: a distance
penalty. Two choices make the distance more telling for rare labels, and are
on by default: features are weighted by their inverse document frequency
before rows are unit-normalised (``feature_weighting="idf"``; rare, specific
words then dominate the centroids), and the centroids themselves are
unit-normalised (``unit_centroids=True``), so that ``d = 2 - 2 cos`` and a
frequent label's diffuse, short centroid is not closer to every point than a
rare label's sharp one.

The defaults (``alpha = 0.7, gamma = 2, propensity_exponent = 0.25``) were
chosen on held-out training rows of Bibtex and Delicious, for 10- and 50-tree
LdSM ensembles, as a setting that raises PSP@k on all four while costing
none of them more than 0.2 points of P@1. The best setting differs a lot
between data sets (Bibtex gains most from a strong tail classifier, e.g.
``alpha = 0.3-0.4, gamma = 30-50``; Delicious from the propensity weight), so
where PSP matters, tune them with ``benchmarks/bench_rerank.py``
(``benchmarks/README.md``).

Cost: one sparse dot product ``x_hat . mu_l`` per (row, candidate) pair in a
compiled kernel (``_rerank.tail_log_scores``); nothing dense over
``n_labels`` or ``n_features x n_labels`` is built.

Examples
--------
>>> reranker = Reranker(n_candidates=100).fit(X_train, Y_train)   # doctest: +SKIP
>>> labels, scores = model.predict(X_test, k=100)                 # doctest: +SKIP
>>> top5, top5_scores = reranker.rerank_predictions(X_test, labels, scores, k=5)  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from numbers import Integral, Real

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from . import _rerank
from ._base import Estimator
from ._validation import check_csr_structure, check_features, check_labels
from .exceptions import DataFormatError, ModelFormatError, NotFittedError
from .metrics import inverse_propensity

__all__ = [
    "TailScorer",
    "RidgeTailScorer",
    "Reranker",
    "make_reranker",
    "rerank",
    "propensity_weighted_targets",
]

logger = logging.getLogger(__name__)

#: Blend names accepted by :func:`rerank` and :class:`Reranker`.
METHODS = ("geometric", "linear")

#: Feature weightings accepted by :class:`TailScorer` and :class:`Reranker`.
FEATURE_WEIGHTINGS = ("idf", "none")

#: Tail scorers accepted by :class:`Reranker` (``tail_scorer``).
TAIL_SCORERS = ("centroid", "ridge")

#: Largest dense system :class:`RidgeTailScorer` solves, in bytes (float64).
MAX_RIDGE_BYTES = 2**31

#: Floor of a ridge score before its log is blended: least-squares outputs
#: may be 0 or negative, and 1e-4 is below any label's share of a leaf.
RIDGE_FLOOR = 1e-4

#: Scores computed at once by :meth:`RidgeTailScorer._log_score` (rows x labels).
_SCORE_BLOCK = 2**22

#: Prefix of the array names in :meth:`Reranker._get_state`, so that an
#: estimator can store the re-ranker's arrays beside its own in one file.
STATE_PREFIX = "rerank."


# ----------------------------------------------------------------------------- parameters


def _check_real(value, name: str, low: float, high: float, *, low_open: bool = False) -> float:
    """Return ``value`` as a float in ``[low, high]`` (``(low, high]`` if `low_open`)."""
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite real number, got {value!r}")
    too_low = value <= low if low_open else value < low
    if too_low or value > high:
        interval = f"{'(' if low_open else '['}{low}, {high}]"
        raise ValueError(f"{name} must be in {interval}, got {value!r}")
    return float(value)


def _check_blend(method, alpha, beta) -> tuple[str, float, float]:
    """Validate the blend settings shared by :func:`rerank` and :class:`Reranker`."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    return (method, _check_real(alpha, "alpha", 0.0, 1.0), _check_real(beta, "beta", 0.0, 1.0))


def _check_gamma(gamma) -> float:
    """Return the tail classifier's sharpness as a finite float > 0."""
    return _check_real(gamma, "gamma", 0.0, math.inf, low_open=True)


def _check_penalty(value) -> float:
    """Return the ridge penalty as a finite float > 0."""
    return _check_real(value, "ridge_penalty", 0.0, math.inf, low_open=True)


def _check_exponent(value) -> float:
    """Return the inverse-propensity exponent as a finite float >= 0."""
    return _check_real(value, "propensity_exponent", 0.0, math.inf)


def _check_tail_scorer(tail_scorer) -> str:
    """Validate the tail-classifier kind."""
    if tail_scorer not in TAIL_SCORERS:
        raise ValueError(f"tail_scorer must be one of {TAIL_SCORERS}, got {tail_scorer!r}")
    return tail_scorer


def _check_tail_settings(feature_weighting, unit_centroids) -> tuple[str, bool]:
    """Validate how :class:`TailScorer` builds its centroids."""
    if feature_weighting not in FEATURE_WEIGHTINGS:
        raise ValueError(
            f"feature_weighting must be one of {FEATURE_WEIGHTINGS}, got {feature_weighting!r}"
        )
    if not isinstance(unit_centroids, (bool, np.bool_)):
        raise ValueError(f"unit_centroids must be True or False, got {unit_centroids!r}")
    return feature_weighting, bool(unit_centroids)


def _check_count(value, name: str) -> int:
    """Return ``value`` as an int >= 1 (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


# ----------------------------------------------------------------------------- candidates


def _check_candidate_labels(labels, n_labels: int | None = None) -> np.ndarray:
    """Return candidate ids as a C int32 array: label ids in ``[0, n_labels)`` or -1."""
    labels = np.asarray(labels)
    if labels.ndim != 2:
        raise DataFormatError(f"labels: expected a 2-D array, got {labels.ndim}-D")
    if labels.size and not np.issubdtype(labels.dtype, np.integer):
        raise DataFormatError(f"labels: expected integer label ids, got dtype {labels.dtype}")
    if labels.size and labels.min() < -1:
        raise DataFormatError("labels: ids must be >= 0, or -1 for an empty slot")
    limit = np.iinfo(np.int32).max + 1 if n_labels is None else n_labels
    if labels.size and labels.max() >= limit:
        raise DataFormatError(f"labels: id {int(labels.max())} out of range [0, {limit})")
    return np.ascontiguousarray(labels, dtype=np.int32)


def _check_candidate_scores(scores, labels: np.ndarray, what: str = "scores") -> np.ndarray:
    """Return scores as a C float64 array shaped like `labels`, finite where a label is.

    Empty slots' scores are never read, so they may hold anything.
    """
    try:
        scores = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataFormatError(f"{what}: cannot be converted to a float array ({exc})") from exc
    if scores.shape != labels.shape:
        raise DataFormatError(f"{what}: shape {scores.shape} differs from labels {labels.shape}")
    if not np.all(np.isfinite(scores[labels >= 0])):
        raise DataFormatError(f"{what}: contains NaN or infinite values")
    return np.ascontiguousarray(scores)


def _check_geometric_scores(scores: np.ndarray, labels: np.ndarray) -> None:
    """The geometric blend takes a power of each base score: refuse negative ones."""
    if np.any(scores[labels >= 0] < 0.0):
        raise DataFormatError("scores: the geometric blend needs non-negative scores")


def _take_ranked(
    labels: np.ndarray, values: np.ndarray, order: np.ndarray, k: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Reorder (and cut to `k` columns, padding with -1 / 0) labels and values by `order`."""
    if k is not None:
        order = order[:, :k]
    ranked_labels = np.take_along_axis(labels, order, axis=1)
    ranked_values = np.take_along_axis(values, order, axis=1)
    ranked_values[ranked_labels < 0] = 0.0
    missing = 0 if k is None else k - ranked_labels.shape[1]
    if missing > 0:
        ranked_labels = np.pad(ranked_labels, ((0, 0), (0, missing)), constant_values=-1)
        ranked_values = np.pad(ranked_values, ((0, 0), (0, missing)), constant_values=0.0)
    return ranked_labels, ranked_values


def _weighted_log(weight: float, values: np.ndarray) -> np.ndarray:
    """Return ``weight * log(values)`` with ``0 * log(0)`` taken as 0 (no NaN)."""
    if weight == 0.0:
        return np.zeros_like(values)
    # Empty slots may hold anything; their keys are overwritten afterwards.
    with np.errstate(divide="ignore", invalid="ignore"):
        return weight * np.log(values)


def _blend_and_rank(labels, scores, log_tail, method, alpha, beta, k=None, log_weights=None):
    """Blend validated base scores with log tail scores; return the ranked (top `k`).

    `log_weights`, if given, holds the log of a positive factor per candidate
    (the label's weight) that multiplies its blended score.
    """
    if method == "geometric":
        # 0 * (-inf) would be NaN: a zero weight must silence its factor.
        tail_term = np.zeros_like(log_tail) if alpha == 1.0 else (1.0 - alpha) * log_tail
        keys = _weighted_log(alpha, scores) + tail_term
        if log_weights is not None:
            keys += log_weights
        blended = np.exp(keys)
    else:
        blended = beta * scores + (1.0 - beta) * np.exp(log_tail)
        if log_weights is not None:
            blended *= np.exp(log_weights)
        keys = blended
    keys[labels < 0] = -np.inf
    order = _rerank.rank_candidates(labels, keys, -1 if k is None else k)
    return _take_ranked(labels, blended, order, k)


def rerank(
    labels,
    scores,
    tail_scores,
    *,
    method: str = "geometric",
    alpha: float = 0.8,
    beta: float = 0.8,
    label_weights=None,
) -> tuple[np.ndarray, np.ndarray]:
    """Blend candidate scores with tail-classifier scores and re-sort each row.

    Parameters
    ----------
    labels : array-like of shape (n_samples, n_candidates), int
        Candidate label ids per row, -1 for an empty slot.
    scores : array-like of shape (n_samples, n_candidates)
        The base model's score ``p_l`` of each candidate; for the geometric
        blend they must be non-negative (e.g. probabilities or vote shares).
    tail_scores : array-like of shape (n_samples, n_candidates)
        Tail-classifier scores ``t_l`` in ``[0, 1]`` (:meth:`TailScorer.score`).
    method : {"geometric", "linear"}, default="geometric"
        ``p**alpha * t**(1 - alpha)`` (PfastreXML) or
        ``beta * p + (1 - beta) * t`` (LdSM).
    alpha : float in [0, 1], default=0.8
        Weight of the base score in the geometric blend; 1 keeps the base ranking.
    beta : float in [0, 1], default=0.8
        Weight of the base score in the linear blend; 1 keeps the base ranking.
    label_weights : array-like of shape (n_labels,), optional
        A positive factor per label id that multiplies its blended score
        (e.g. inverse propensities to a power); ``n_labels`` must exceed
        every candidate id.

    Returns
    -------
    labels : numpy.ndarray of shape (n_samples, n_candidates), int32
        Candidates by decreasing blended score, ties by lower label id,
        empty slots (-1) last.
    scores : numpy.ndarray of shape (n_samples, n_candidates), float64
        The blended scores, 0 in empty slots. The ranking itself is made on
        ``log s_l`` for the geometric blend, so it stays exact even where
        ``s_l`` underflows to 0.

    Raises
    ------
    ValueError
        On an unknown method or out-of-range weights.
    DataFormatError
        On arrays of mismatched shapes, ids below -1, non-finite scores,
        negative scores (geometric blend), tail scores outside ``[0, 1]``, or
        label weights that are not finite and positive or do not cover every
        candidate id.
    """
    method, alpha, beta = _check_blend(method, alpha, beta)
    labels = _check_candidate_labels(labels)
    log_weights = None
    if label_weights is not None:
        log_weights = _candidate_log_weights(labels, label_weights)
    scores = _check_candidate_scores(scores, labels)
    tail = _check_candidate_scores(tail_scores, labels, "tail_scores")
    real = labels >= 0
    if not np.all((tail[real] >= 0.0) & (tail[real] <= 1.0)):
        raise DataFormatError("tail_scores: values must be in [0, 1]")
    if method == "geometric":
        _check_geometric_scores(scores, labels)
    with np.errstate(divide="ignore"):
        log_tail = np.log(np.where(real, tail, 0.0))
    return _blend_and_rank(labels, scores, log_tail, method, alpha, beta, log_weights=log_weights)


def _candidate_log_weights(labels: np.ndarray, label_weights) -> np.ndarray:
    """Return ``log label_weights[label]`` per candidate slot (0 in empty slots)."""
    weights = np.asarray(label_weights, dtype=np.float64)
    if weights.ndim != 1 or not np.all(np.isfinite(weights)) or np.any(weights <= 0.0):
        raise DataFormatError("label_weights: expected a 1-D array of finite positive values")
    if labels.size and labels.max() >= weights.shape[0]:
        raise DataFormatError(
            f"label_weights: has {weights.shape[0]} entries but label id {int(labels.max())} "
            "is a candidate"
        )
    return np.where(labels >= 0, np.log(weights)[np.maximum(labels, 0)], 0.0)


# ----------------------------------------------------------------------------- tail scorer


def _unit_rows(matrix) -> sp.csr_matrix:
    """Return `matrix` (sparse) with each non-zero row scaled to unit L2 norm."""
    matrix = sp.csr_matrix(matrix)
    row_norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1), dtype=np.float64).ravel())
    inverse_norms = np.divide(1.0, row_norms, out=np.zeros_like(row_norms), where=row_norms > 0)
    return sp.csr_matrix(sp.diags(inverse_norms.astype(np.float32)) @ matrix)


def _feature_weights(X: sp.csr_matrix, feature_weighting: str) -> np.ndarray:
    """Per-feature factors (float32): smoothed IDF of the training rows, or ones."""
    if feature_weighting == "none":
        return np.ones(X.shape[1], dtype=np.float32)
    document_frequency = np.bincount(X.indices, minlength=X.shape[1])
    idf = 1.0 + np.log((1.0 + X.shape[0]) / (1.0 + document_frequency))
    return idf.astype(np.float32)


class _Scorer:
    """What the tail scorers share: fitted check and ``score`` from ``_log_score``."""

    def _check_fitted(self) -> None:
        if not hasattr(self, "feature_weights_"):
            raise NotFittedError(
                f"this {type(self).__name__} is not fitted yet; call fit(X, Y) first"
            )

    def score(self, X, labels) -> np.ndarray:
        """Return the tail score of each row's candidate labels.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Points to score.
        labels : array-like of shape (n_samples, n_candidates), int
            Label ids per row, -1 for an empty slot.

        Returns
        -------
        numpy.ndarray of shape (n_samples, n_candidates), float64
            Scores, 0 in empty slots; finite for rows with no feature and for
            labels never seen in training.
        """
        self._check_fitted()
        return np.exp(self._log_score(X, _check_candidate_labels(labels, self.n_labels_)))


class TailScorer(_Scorer):
    """Nearest-centroid classifier per label, used to rescue tail labels.

    Parameters
    ----------
    gamma : float, default=2.0
        Sharpness of ``t_l(x) = 1 / (1 + exp(gamma * ||x_hat - mu_l||^2))``;
        larger values trust only candidates very close to their centroid.
    feature_weighting : {"idf", "none"}, default="idf"
        Scale each feature by its smoothed inverse document frequency in the
        training rows, ``1 + log((1 + n) / (1 + df_f))``, before rows are
        unit-normalised (both in training and when scoring), or leave the
        features as they are.
    unit_centroids : bool, default=True
        Unit-normalise each centroid, making ``||x_hat - mu_l||^2`` equal to
        ``2 - 2 cos(x, mu_l)``; otherwise ``mu_l`` is the plain mean.

    Attributes
    ----------
    centroids_ : scipy.sparse.csr_matrix of shape (n_labels, n_features), float32
        ``mu_l``: mean of the weighted, unit-L2-normalised training rows
        carrying label ``l`` (unit-normalised if `unit_centroids`); an empty
        row for a label never seen in training.
    feature_weights_ : numpy.ndarray of shape (n_features,), float32
        The factor applied to each feature (all 1 without weighting).
    label_counts_ : numpy.ndarray of shape (n_labels,), int64
        Training rows per label.
    n_features_, n_labels_ : int
        Dimensions seen in :meth:`fit`.
    """

    def __init__(
        self, gamma: float = 2.0, feature_weighting: str = "idf", unit_centroids: bool = True
    ):
        self.gamma = _check_gamma(gamma)
        self.feature_weighting, self.unit_centroids = _check_tail_settings(
            feature_weighting, unit_centroids
        )

    def fit(self, X, Y, n_labels: int | None = None) -> TailScorer:
        """Compute the label centroids.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Training features; rows with no feature contribute zero vectors.
        Y : indicator matrix of shape (n_samples, n_labels) or list of label lists
            Training labels.
        n_labels : int, optional
            Size of the label space, if larger than ``Y`` shows (e.g. the
            base model's); extra labels get empty centroids.

        Returns
        -------
        TailScorer
            ``self``.
        """
        X = check_features(X)
        Y = check_labels(Y, n_samples=X.shape[0], n_labels=n_labels)
        weights = _feature_weights(X, self.feature_weighting)
        X_unit = _unit_rows(X @ sp.diags(weights))
        counts = np.diff(Y.tocsc().indptr).astype(np.int64)
        inverse_counts = np.divide(1.0, counts, out=np.zeros(counts.shape), where=counts > 0)
        centroids = sp.diags(inverse_counts.astype(np.float32)) @ (Y.T.tocsr() @ X_unit)
        if self.unit_centroids:
            centroids = _unit_rows(centroids)
        self._set_centroids(sp.csr_matrix(centroids, dtype=np.float32), counts, weights)
        logger.debug(
            "fitted %d label centroids (%d stored values)", counts.size, self.centroids_.nnz
        )
        return self

    def _set_centroids(
        self, centroids: sp.csr_matrix, counts: np.ndarray, feature_weights: np.ndarray
    ) -> None:
        """Install centroids in the layout the kernel reads and cache their norms."""
        self.feature_weights_ = np.ascontiguousarray(feature_weights, dtype=np.float32)
        centroids.sum_duplicates()
        centroids.sort_indices()
        centroids.indices = centroids.indices.astype(np.int32, copy=False)
        centroids.indptr = centroids.indptr.astype(np.int64, copy=False)
        self.centroids_ = centroids
        self.label_counts_ = counts
        self.n_labels_, self.n_features_ = centroids.shape
        # The kernel also walks centroids feature by feature (see _rerank).
        by_feature = centroids.tocsc()
        by_feature.sort_indices()
        self._centroids_by_feature = (
            by_feature.indptr.astype(np.int64),
            by_feature.indices.astype(np.int32),
            by_feature.data,
        )
        row_of_value = np.repeat(np.arange(self.n_labels_), np.diff(centroids.indptr))
        self._centroid_sq_norms = np.bincount(
            row_of_value,
            weights=centroids.data.astype(np.float64) ** 2,
            minlength=self.n_labels_,
        ).astype(np.float64)  # bincount of nothing is int64

    def _log_score(self, X, labels: np.ndarray) -> np.ndarray:
        """``log t_l(x)`` for validated int32 candidate ids; -inf in empty slots."""
        X = check_features(X, n_features=self.n_features_)
        if X.shape[0] != labels.shape[0]:
            raise DataFormatError(f"labels: has {labels.shape[0]} rows but X has {X.shape[0]}")
        centroids = self.centroids_
        return _rerank.tail_log_scores(
            X.indptr,
            X.indices,
            X.data,
            centroids.indptr,
            centroids.indices,
            centroids.data,
            *self._centroids_by_feature,
            self._centroid_sq_norms,
            self.feature_weights_,
            labels,
            self.gamma,
        )

    def _state_arrays(self) -> dict[str, np.ndarray]:
        """The arrays that define the fitted scorer, by state name."""
        return {
            "centroid_indptr": self.centroids_.indptr,
            "centroid_indices": self.centroids_.indices,
            "centroid_data": self.centroids_.data,
            "label_counts": self.label_counts_,
            "feature_weights": self.feature_weights_,
        }

    def _load_arrays(self, arrays: dict, n_features: int, n_labels: int) -> None:
        """Install :meth:`_state_arrays` output read from a file, checking it."""
        indptr = _state_array(arrays, "centroid_indptr", np.int64, (n_labels + 1,))
        indices = _state_array(arrays, "centroid_indices", np.int32, None)
        data = _state_array(arrays, "centroid_data", np.float32, indices.shape)
        counts = _state_array(arrays, "label_counts", np.int64, (n_labels,))
        weights = _state_feature_weights(arrays, n_features)
        try:
            check_csr_structure(indptr, indices, (n_labels, n_features), "re-ranker centroids")
        except DataFormatError as exc:
            raise ModelFormatError(str(exc)) from exc
        if not np.all(np.isfinite(data)) or np.any(counts < 0):
            raise ModelFormatError("re-ranker centroids: non-finite values or negative counts")
        self._set_centroids(
            sp.csr_matrix((data, indices, indptr), shape=(n_labels, n_features)), counts, weights
        )


class RidgeTailScorer(_Scorer):
    """One-vs-rest ridge regression: a linear least-squares classifier per label.

    The centroid scorer compares a point with the mean of each label's
    points; least squares also weighs features by how they co-occur, which
    tells labels with similar centroids apart. All labels are fitted at once
    in closed form,

        W = argmin ||[A 1] W - Y||^2 + penalty ||W||^2,

    with ``A`` the (IDF-weighted) unit-normalised training rows, by one dense
    ``(n_features + 1)``-square solve; the score ``r_l(x) = [x_hat 1] . W_l``
    estimates ``P(l | x)``, and is floored at ``RIDGE_FLOOR`` before its log
    enters the blend (below it a candidate is ranked by its base score and
    propensity alone). ``W`` is dense, so this scorer is for up to a few
    thousand features (Bibtex, Delicious); :meth:`fit` refuses systems
    larger than ``MAX_RIDGE_BYTES``.

    Parameters
    ----------
    penalty : float > 0, default=1.0
        Ridge penalty on the weights (and bias).
    feature_weighting : {"idf", "none"}, default="idf"
        As for :class:`TailScorer`.

    Attributes
    ----------
    coef_ : numpy.ndarray of shape (n_features + 1, n_labels), float32
        ``W``; its last row holds the biases.
    feature_weights_ : numpy.ndarray of shape (n_features,), float32
    n_features_, n_labels_ : int
    """

    def __init__(self, penalty: float = 1.0, feature_weighting: str = "idf"):
        self.penalty = _check_penalty(penalty)
        self.feature_weighting, _ = _check_tail_settings(feature_weighting, True)

    def fit(self, X, Y, n_labels: int | None = None) -> RidgeTailScorer:
        """Solve the ridge system for every label.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Training features.
        Y : indicator matrix of shape (n_samples, n_labels) or list of label lists
            Training labels.
        n_labels : int, optional
            Size of the label space, if larger than ``Y`` shows; extra labels
            get zero weights.

        Returns
        -------
        RidgeTailScorer
            ``self``.

        Raises
        ------
        ValueError
            If the dense system would exceed ``MAX_RIDGE_BYTES``.
        """
        X = check_features(X)
        Y = check_labels(Y, n_samples=X.shape[0], n_labels=n_labels)
        n_features, n_labels = X.shape[1], Y.shape[1]
        needed = 8 * (n_features + 1) * (n_features + 1 + n_labels)
        if needed > MAX_RIDGE_BYTES:
            raise ValueError(
                f"tail_scorer='ridge' needs {needed / 2**30:.1f} GiB of dense matrices for "
                f"{n_features} features and {n_labels} labels (limit "
                f"{MAX_RIDGE_BYTES / 2**30:.0f} GiB); use tail_scorer='centroid'"
            )
        weights = _feature_weights(X, self.feature_weighting)
        A = sp.hstack([_unit_rows(X @ sp.diags(weights)), np.ones((X.shape[0], 1))], "csr")
        gram = (A.T @ A).toarray().astype(np.float64)
        gram[np.diag_indices_from(gram)] += self.penalty
        targets = (A.T @ Y).toarray().astype(np.float64)
        coef = scipy.linalg.solve(gram, targets, assume_a="pos")
        self._set_coef(coef.astype(np.float32), weights)
        return self

    def _set_coef(self, coef: np.ndarray, feature_weights: np.ndarray) -> None:
        self.coef_ = np.ascontiguousarray(coef)
        self.feature_weights_ = np.ascontiguousarray(feature_weights, dtype=np.float32)
        self.n_features_, self.n_labels_ = coef.shape[0] - 1, coef.shape[1]

    def _log_score(self, X, labels: np.ndarray) -> np.ndarray:
        """``log max(r_l(x), RIDGE_FLOOR)`` for validated int32 ids; -inf in empty slots."""
        X = check_features(X, n_features=self.n_features_)
        if X.shape[0] != labels.shape[0]:
            raise DataFormatError(f"labels: has {labels.shape[0]} rows but X has {X.shape[0]}")
        A = _unit_rows(X @ sp.diags(self.feature_weights_))
        log_scores = np.full(labels.shape, -np.inf)
        # All labels' scores for a block of rows at a time: dense, but bounded.
        block = max(1, _SCORE_BLOCK // self.n_labels_)
        for start in range(0, X.shape[0], block):
            rows = slice(start, start + block)
            scores = A[rows] @ self.coef_[:-1] + self.coef_[-1]
            picked = np.take_along_axis(scores, np.maximum(labels[rows], 0), axis=1)
            floored = np.log(np.maximum(picked.astype(np.float64), RIDGE_FLOOR))
            log_scores[rows] = np.where(labels[rows] >= 0, floored, -np.inf)
        return log_scores

    def _state_arrays(self) -> dict[str, np.ndarray]:
        """The arrays that define the fitted scorer, by state name."""
        return {"ridge_coef": self.coef_, "feature_weights": self.feature_weights_}

    def _load_arrays(self, arrays: dict, n_features: int, n_labels: int) -> None:
        """Install :meth:`_state_arrays` output read from a file, checking it."""
        coef = _state_array(arrays, "ridge_coef", np.float32, (n_features + 1, n_labels))
        if not np.all(np.isfinite(coef)):
            raise ModelFormatError("re-ranker ridge weights: non-finite values")
        self._set_coef(coef, _state_feature_weights(arrays, n_features))


# ----------------------------------------------------------------------------- re-ranker


class Reranker(Estimator):
    """Re-rank a model's top candidates with :class:`TailScorer` scores.

    Parameters
    ----------
    method : {"geometric", "linear"}, default="geometric"
        Blend of base score ``p`` and tail score ``t`` (see :func:`rerank`).
    alpha : float in [0, 1], default=0.7
        Base-score exponent of the geometric blend (PfastreXML uses 0.8).
    beta : float in [0, 1], default=0.8
        Base-score weight of the linear blend.
    gamma : float, default=2.0
        Sharpness of the tail classifier (PfastreXML uses 30).
    n_candidates : int, default=100
        How many of the base model's top candidates to re-rank; callers
        should ask the base model for this many, and more are cut to the
        best ``n_candidates`` by base score.
    feature_weighting : {"idf", "none"}, default="idf"
        Feature weighting of the tail classifier (see :class:`TailScorer`).
    unit_centroids : bool, default=True
        Unit-normalise the tail classifier's centroids (see :class:`TailScorer`).
    tail_scorer : {"centroid", "ridge"}, default="centroid"
        The tail classifier: nearest centroid (:class:`TailScorer`, PfastreXML's,
        any size) or one-vs-rest ridge regression (:class:`RidgeTailScorer`,
        dense, for up to a few thousand features; its score replaces ``t_l``
        and ``gamma`` and ``unit_centroids`` are unused).
    ridge_penalty : float > 0, default=1.0
        Penalty of the ridge tail scorer.
    propensity_exponent : float >= 0, default=0.25
        ``lambda``: each blended score is multiplied by the label's inverse
        propensity ``q_l**lambda``; 0 turns this off, 1 ranks by
        ``p_l q_l`` (the expected-PSP ranking when ``p_l`` is a probability).
    propensity_a, propensity_b : float, default=0.55, 1.5
        Constants of the propensity model fitted on the training labels
        (:func:`xmltree.metrics.inverse_propensity`; see its presets).

    Attributes
    ----------
    scorer_ : TailScorer or RidgeTailScorer
        The fitted tail classifier.
    inverse_propensity_ : numpy.ndarray of shape (n_labels,), float64
        ``q_l`` of each label, from the training labels.

    Notes
    -----
    The blend settings (``method``, ``alpha``, ``beta``,
    ``propensity_exponent``) are read at re-ranking time and may be changed
    with :meth:`set_params` after fitting; the others take effect at
    :meth:`fit`. The defaults raise PSP@k on both Bibtex and Delicious for at
    most 1 point of P@1 (chosen on held-out training rows); per data set,
    tuned with ``benchmarks/bench_rerank.py`` for a 50-tree LdSM, Bibtex
    prefers a much stronger tail classifier (see ``benchmarks/README.md``).
    Accuracy barely changes beyond 20-50 candidates.
    """

    _KIND = "reranker"

    def __init__(
        self,
        method: str = "geometric",
        alpha: float = 0.7,
        beta: float = 0.8,
        gamma: float = 2.0,
        n_candidates: int = 100,
        feature_weighting: str = "idf",
        unit_centroids: bool = True,
        tail_scorer: str = "centroid",
        ridge_penalty: float = 1.0,
        propensity_exponent: float = 0.25,
        propensity_a: float = 0.55,
        propensity_b: float = 1.5,
    ):
        self.method, self.alpha, self.beta = _check_blend(method, alpha, beta)
        self.gamma = _check_gamma(gamma)
        self.n_candidates = _check_count(n_candidates, "n_candidates")
        self.feature_weighting, self.unit_centroids = _check_tail_settings(
            feature_weighting, unit_centroids
        )
        self.tail_scorer = _check_tail_scorer(tail_scorer)
        self.ridge_penalty = _check_penalty(ridge_penalty)
        self.propensity_exponent = _check_exponent(propensity_exponent)
        self.propensity_a = _check_real(propensity_a, "propensity_a", -math.inf, math.inf)
        self.propensity_b = _check_real(propensity_b, "propensity_b", 0.0, math.inf, low_open=True)

    def fit(self, X, Y, n_labels: int | None = None) -> Reranker:
        """Fit the tail classifier on the training data of the base model.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Training features.
        Y : indicator matrix of shape (n_samples, n_labels) or list of label lists
            Training labels.
        n_labels : int, optional
            Size of the base model's label space, if larger than ``Y`` shows.

        Returns
        -------
        Reranker
            ``self``.
        """
        # Re-check settings that set_params may have changed since __init__.
        self.gamma = _check_gamma(self.gamma)
        self.propensity_a = _check_real(self.propensity_a, "propensity_a", -math.inf, math.inf)
        self.propensity_b = _check_real(
            self.propensity_b, "propensity_b", 0.0, math.inf, low_open=True
        )
        scorer = self._new_scorer()
        self.scorer_ = scorer.fit(X, Y, n_labels=n_labels)
        self.inverse_propensity_ = inverse_propensity(
            Y, A=self.propensity_a, B=self.propensity_b, n_labels=scorer.n_labels_
        )
        return self

    def _new_scorer(self) -> TailScorer | RidgeTailScorer:
        """An unfitted tail scorer with this re-ranker's (re-checked) settings."""
        if _check_tail_scorer(self.tail_scorer) == "ridge":
            return RidgeTailScorer(self.ridge_penalty, self.feature_weighting)
        return TailScorer(self.gamma, self.feature_weighting, self.unit_centroids)

    def rerank_predictions(self, X, labels, scores, k: int = 5) -> tuple[np.ndarray, np.ndarray]:
        """Return the top `k` of the base model's candidates after re-ranking.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            The points the candidates were predicted for.
        labels : array-like of shape (n_samples, n_candidates), int
            Candidate label ids, -1 for an empty slot (any order).
        scores : array-like of shape (n_samples, n_candidates)
            The base model's scores (non-negative for the geometric blend).
        k : int, default=5
            Number of labels to return per row.

        Returns
        -------
        labels : numpy.ndarray of shape (n_samples, k), int32
            Best first, ties by lower label id, -1 padding last.
        scores : numpy.ndarray of shape (n_samples, k), float64
            Blended scores, 0 in padded slots.
        """
        if not hasattr(self, "scorer_"):
            raise NotFittedError("this Reranker is not fitted yet; call fit(X, Y) first")
        k = _check_count(k, "k")
        # Blend settings may have been changed with set_params: check them here.
        method, alpha, beta = _check_blend(self.method, self.alpha, self.beta)
        exponent = _check_exponent(self.propensity_exponent)
        n_candidates = _check_count(self.n_candidates, "n_candidates")
        labels = _check_candidate_labels(labels, self.scorer_.n_labels_)
        scores = _check_candidate_scores(scores, labels)
        if method == "geometric":
            _check_geometric_scores(scores, labels)
        if labels.shape[1] > n_candidates:
            keys = np.where(labels >= 0, scores, -np.inf)
            order = _rerank.rank_candidates(labels, keys, n_candidates)
            labels, scores = _take_ranked(labels, scores, order, n_candidates)
        log_tail = self.scorer_._log_score(X, labels)
        log_weights = None
        if exponent > 0.0:
            log_q = np.log(self.inverse_propensity_)[np.maximum(labels, 0)]
            log_weights = np.where(labels >= 0, exponent * log_q, 0.0)
        return _blend_and_rank(labels, scores, log_tail, method, alpha, beta, k, log_weights)

    # ------------------------------------------------------------------------- persistence

    def _get_state(self) -> tuple[dict, dict[str, np.ndarray]]:
        """Return JSON-able settings and ``STATE_PREFIX``-named arrays of a fitted re-ranker."""
        scorer = self.scorer_
        params = {
            **{name: getattr(self, name) for name in _SETTINGS},
            "n_features": int(scorer.n_features_),
            "n_labels": int(scorer.n_labels_),
        }
        arrays = {**scorer._state_arrays(), "inverse_propensity": self.inverse_propensity_}
        return params, {STATE_PREFIX + name: array for name, array in arrays.items()}

    @classmethod
    def _upgrade_state(cls, version: int, params: dict, arrays: dict) -> tuple[dict, dict]:
        """Upgrade a version-1 re-ranker (see :func:`upgrade_version_1`)."""
        return upgrade_version_1(version, params, arrays, "fit the re-ranker again"), arrays

    @classmethod
    def _from_state(cls, params: dict, arrays: dict[str, np.ndarray]) -> Reranker:
        """Rebuild a fitted re-ranker from :meth:`_get_state` output, checking everything.

        `arrays` may hold other (unprefixed) arrays of an enclosing model; they
        are ignored.

        Raises
        ------
        ModelFormatError
            On missing or ill-typed settings, missing arrays, wrong dtypes or
            shapes, a broken CSR structure, or non-finite values.
        """
        try:
            reranker = cls(**{name: params[name] for name in _SETTINGS})
            n_features = _check_count(params["n_features"], "n_features")
            n_labels = _check_count(params["n_labels"], "n_labels")
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelFormatError(f"re-ranker settings are invalid ({exc})") from exc
        q = _state_array(arrays, "inverse_propensity", np.float64, (n_labels,))
        if not (np.all(np.isfinite(q)) and np.all(q > 0)):
            raise ModelFormatError("re-ranker inverse propensities: must be finite and > 0")
        scorer = reranker._new_scorer()
        scorer._load_arrays(arrays, n_features, n_labels)
        reranker.scorer_ = scorer
        reranker.inverse_propensity_ = q
        return reranker


def make_reranker(setting) -> Reranker | None:
    """Return the unfitted re-ranker that an estimator's ``rerank`` parameter asks for.

    Parameters
    ----------
    setting : bool or dict
        ``False``: no re-ranker; ``True``: one with the default settings; a
        dict: keyword arguments of :class:`Reranker` (the others keep their
        defaults), e.g. ``{"alpha": 0.8, "gamma": 1.0, "propensity_exponent": 1.0}``.

    Returns
    -------
    Reranker or None

    Raises
    ------
    ValueError
        On another type, a key that is not a :class:`Reranker` parameter, or
        an invalid value; the message names the key.
    """
    if isinstance(setting, (bool, np.bool_)):
        return Reranker() if setting else None
    if not isinstance(setting, Mapping):
        raise ValueError(
            f"rerank must be True, False or a dict of Reranker parameters, got {setting!r}"
        )
    valid = Reranker._param_names()
    unknown = [key for key in setting if key not in valid]
    if unknown:
        raise ValueError(f"rerank: unknown re-ranker parameter {unknown[0]!r}; valid: {valid}")
    try:
        return Reranker(**setting)
    except ValueError as exc:
        raise ValueError(f"rerank: {exc}") from None


#: Constructor parameters stored with a fitted re-ranker.
_SETTINGS = (
    "method",
    "alpha",
    "beta",
    "gamma",
    "n_candidates",
    "feature_weighting",
    "unit_centroids",
    "tail_scorer",
    "ridge_penalty",
    "propensity_exponent",
    "propensity_a",
    "propensity_b",
)


def upgrade_version_1(version: int, params: dict, arrays: dict, remedy: str) -> dict:
    """Return re-ranker settings of a format-version-1 file in the current layout.

    Version 1 re-rankers were all nearest-centroid ones: they get
    ``tail_scorer="centroid"`` (and the default, unused, ``ridge_penalty``).
    Those of the first released layout, without feature weights and label
    propensities, are refused: the propensities need the number of training
    rows, which that layout did not keep; `remedy` tells the user what to do.

    Raises
    ------
    ModelFormatError
        For a first-layout re-ranker.
    """
    if version != 1 or not isinstance(params, dict):
        return params
    if STATE_PREFIX + "inverse_propensity" not in arrays:
        raise ModelFormatError(
            "this model file (format version 1) holds a tail-label re-ranker in its first "
            "layout, without the feature weights and label propensities this xmltree "
            f"needs and cannot recompute: {remedy}"
        )
    return {"tail_scorer": "centroid", "ridge_penalty": 1.0, **params}


def _state_feature_weights(arrays: dict, n_features: int) -> np.ndarray:
    """Fetch and check the stored feature weights (finite, >= 0)."""
    weights = _state_array(arrays, "feature_weights", np.float32, (n_features,))
    if not (np.all(np.isfinite(weights)) and np.all(weights >= 0)):
        raise ModelFormatError("re-ranker feature weights: must be finite and >= 0")
    return weights


def _state_array(arrays: dict, name: str, dtype, shape) -> np.ndarray:
    """Fetch ``STATE_PREFIX + name`` with exactly `dtype` and `shape` (None: any 1-D)."""
    key = STATE_PREFIX + name
    if key not in arrays:
        raise ModelFormatError(f"re-ranker array {key!r} is missing")
    array = np.asarray(arrays[key])
    if array.dtype != dtype or (array.ndim != 1 if shape is None else array.shape != shape):
        raise ModelFormatError(
            f"re-ranker array {key!r} has dtype {array.dtype} and shape {array.shape}, "
            f"expected {np.dtype(dtype)} and {shape if shape is not None else '1-D'}"
        )
    return np.ascontiguousarray(array)


# ----------------------------------------------------------------------------- targets


def propensity_weighted_targets(Y, A: float = 0.55, B: float = 1.5) -> sp.csr_matrix:
    """Return the label matrix with each label's 1s replaced by its inverse propensity.

    PfastreXML trains on such targets so that rare labels, more often
    missing from the ground truth, weigh more (Jain et al., 2016).

    Parameters
    ----------
    Y : indicator matrix of shape (n_samples, n_labels) or list of label lists
        Training labels.
    A, B : float, default=0.55, 1.5
        Propensity-model constants (see ``xmltree.metrics.inverse_propensity``).

    Returns
    -------
    scipy.sparse.csr_matrix of shape (n_samples, n_labels), float32
        ``Y[i, l] = 1 / p_l`` where ``Y[i, l] = 1``.
    """
    Y = check_labels(Y)
    weights = np.asarray(inverse_propensity(Y, A=A, B=B), dtype=np.float32)
    weighted = Y.copy()
    weighted.data = weights[weighted.indices]
    return weighted
