"""The re-ranker estimators: :class:`Reranker`, :class:`Reranked` and the blends.

The method is described in the package docstring (:mod:`xmltree.rerank`)."""

from __future__ import annotations

import inspect
from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp

from .._base import (
    MAX_INDEX,
    Estimator,
    check_bool,
    check_choice,
    check_int,
    check_k,
    check_real,
)
from .._validation import check_features, check_labels
from ..exceptions import DataFormatError, ModelFormatError, NotFittedError
from ..metrics import inverse_propensity
from ..metrics._propensity import _propensity_weights
from . import _rerank
from ._tail_scorers import (
    FEATURE_WEIGHTINGS,
    STATE_PREFIX,
    LogisticTailScorer,
    RidgeTailScorer,
    TailScorer,
    _check_candidate_labels,
    _state_array,
    check_rows_match,
    check_training_data,
)

__all__ = [
    "TailScorer",
    "RidgeTailScorer",
    "LogisticTailScorer",
    "Reranker",
    "make_reranker",
    "rerank",
    "propensity_weighted_targets",
]

#: Blend names accepted by :func:`rerank` and :class:`Reranker`.
METHODS = ("geometric", "linear")

#: Tail scorers accepted by :class:`Reranker` (``tail_scorer``).
TAIL_SCORERS = ("centroid", "ridge", "logistic")

#: Largest ``propensity_exponent``. Tuned values are 0.25 to 2; inverse
#: propensities reach a few tens, and to this power still leave blended
#: scores far inside float32 (1e6 made every score infinite).
MAX_PROPENSITY_EXPONENT = 10.0

#: Ranges of the propensity model's constants: the published ones are
#: A = 0.5-0.6 and B = 0.4-2.6; far beyond, ``(B + 1)**A`` overflows.
PROPENSITY_A_RANGE = (0.0, 10.0)
PROPENSITY_B_RANGE = (0.0, 100.0)

#: Blended scores are reported at most this large (float32's largest), so
#: that they stay finite in every dtype; the ranking itself is made before.
_MAX_SCORE = float(np.finfo(np.float32).max)

# ----------------------------------------------------------------------------- parameters


def _check_blend(method, alpha, beta) -> tuple[str, float, float]:
    """Validate the blend settings shared by :func:`rerank` and :class:`Reranker`."""
    return (check_choice("method", method, METHODS), check_real("alpha", alpha, 0.0, 1.0),
            check_real("beta", beta, 0.0, 1.0))


# ----------------------------------------------------------------------------- candidates


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
    (the label's weight) that multiplies its blended score. Blended scores
    are capped at ``_MAX_SCORE``: huge label weights (inverse propensities of
    extreme ``propensity_a``, ``propensity_b``) overflow them otherwise.
    """
    with np.errstate(over="ignore"):  # capped below
        if method == "geometric":
            # 0 * (-inf) would be NaN: a zero weight must silence its factor.
            tail_term = np.zeros_like(log_tail) if alpha == 1.0 else (1.0 - alpha) * log_tail
            keys = _weighted_log(alpha, scores) + tail_term
            if log_weights is not None:
                keys += log_weights
            blended = np.exp(keys)  # ranked by the keys: exact even where this overflows
        else:
            blended = beta * scores + (1.0 - beta) * np.exp(log_tail)
            if log_weights is not None:
                blended *= np.exp(log_weights)
            keys = blended
    keys[labels < 0] = -np.inf
    order = _rerank.rank_candidates(labels, keys, -1 if k is None else k)
    ranked_labels, ranked_scores = _take_ranked(labels, blended, order, k)
    return ranked_labels, np.minimum(ranked_scores, _MAX_SCORE, out=ranked_scores)


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
        best ``n_candidates`` by base score. At most ``2**31 - 1``; a learner
        is never asked for more candidates than it has labels.
    feature_weighting : {"idf", "none"}, default="idf"
        Feature weighting of the tail classifier (see :class:`TailScorer`).
    unit_centroids : bool, default=True
        Unit-normalise the tail classifier's centroids (see :class:`TailScorer`).
    tail_scorer : {"centroid", "ridge", "logistic"}, default="centroid"
        The tail classifier: nearest centroid (:class:`TailScorer`, PfastreXML's,
        any size), one-vs-rest ridge regression (:class:`RidgeTailScorer`) or
        one-vs-rest logistic regression (:class:`LogisticTailScorer`). The
        last two are dense, for up to a few thousand features; their score
        replaces ``t_l``, and ``gamma`` and ``unit_centroids`` are unused.
    ridge_penalty : float > 0, default=1.0
        Penalty of the ridge tail scorer (unused by the others).
    logistic_penalty : float > 0, default=1.0
        L2 penalty on the weights of the logistic tail scorer (unused by the
        others).
    propensity_exponent : float in [0, 10], default=0.25
        ``lambda``: each blended score is multiplied by the label's inverse
        propensity ``q_l**lambda``; 0 turns this off, 1 ranks by
        ``p_l q_l`` (the expected-PSP ranking when ``p_l`` is a probability).
        Blended scores are reported at most float32's largest value.
    propensity_a, propensity_b : float, default=0.55, 1.5
        Constants of the propensity model fitted on the training labels
        (:func:`xmltree.metrics.inverse_propensity`; see its presets), A in
        [0, 10] and B in (0, 100].

    Attributes
    ----------
    scorer_ : TailScorer, RidgeTailScorer or LogisticTailScorer
        The fitted tail classifier.
    inverse_propensity_ : numpy.ndarray of shape (n_labels,), float64
        ``q_l`` of each label, from the training labels.

    Notes
    -----
    The blend settings (``method``, ``alpha``, ``beta``,
    ``propensity_exponent``) are read at re-ranking time and may be changed
    with :meth:`set_params` after fitting; the others take effect at
    :meth:`fit`. The defaults raise PSP@k on both Bibtex and Delicious at a
    small cost in P@1 (chosen on held-out training rows); per data set,
    tuned with ``benchmarks/bench_rerank.py`` for a 50-tree LdSM, Bibtex
    prefers the ridge tail scorer (``alpha=0.3, ridge_penalty=3,
    propensity_exponent=2``) and Delicious the propensity weight alone
    (``alpha=1.0, propensity_exponent=1.0``; see ``benchmarks/README.md``,
    "Tail-label re-ranking"). The dense scorers are for up to a few
    thousand features; the logistic one fits in seconds to a minute
    (iterations grow as its penalty falls), the others in well under a
    second. Accuracy barely changes beyond 20-50 candidates.
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
        logistic_penalty: float = 1.0,
        propensity_exponent: float = 0.25,
        propensity_a: float = 0.55,
        propensity_b: float = 1.5,
    ):
        self.method = method
        self.alpha = alpha
        self.beta = beta
        self.gamma = gamma
        self.n_candidates = n_candidates
        self.feature_weighting = feature_weighting
        self.unit_centroids = unit_centroids
        self.tail_scorer = tail_scorer
        self.ridge_penalty = ridge_penalty
        self.logistic_penalty = logistic_penalty
        self.propensity_exponent = propensity_exponent
        self.propensity_a = propensity_a
        self.propensity_b = propensity_b
        # Checked at once as well as when used, so that an estimator's
        # ``rerank={...}`` setting or a command line fails before training.
        self._validate_params()

    def _validate_params(self) -> dict:
        """Check every setting (``set_params`` may have changed them); return them typed.

        Raises
        ------
        ValueError
            Naming the setting, its value and what is allowed.
        """
        method, alpha, beta = _check_blend(self.method, self.alpha, self.beta)
        return {
            "method": method, "alpha": alpha, "beta": beta,
            "gamma": check_real("gamma", self.gamma, 0.0, strict=True),
            "n_candidates": check_int("n_candidates", self.n_candidates, 1, MAX_INDEX),
            "feature_weighting": check_choice("feature_weighting", self.feature_weighting,
                                              FEATURE_WEIGHTINGS),
            "unit_centroids": check_bool("unit_centroids", self.unit_centroids),
            "tail_scorer": check_choice("tail_scorer", self.tail_scorer, TAIL_SCORERS),
            "ridge_penalty": check_real("ridge_penalty", self.ridge_penalty, 0.0, strict=True),
            "logistic_penalty": check_real("logistic_penalty", self.logistic_penalty, 0.0,
                                           strict=True),
            "propensity_exponent": check_real("propensity_exponent", self.propensity_exponent,
                                              0.0, MAX_PROPENSITY_EXPONENT),
            "propensity_a": check_real("propensity_a", self.propensity_a, *PROPENSITY_A_RANGE),
            "propensity_b": check_real("propensity_b", self.propensity_b, *PROPENSITY_B_RANGE,
                                       strict=True),
        }

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
        return self._fit(*check_training_data(X, Y, n_labels))

    def _fit(self, X: sp.csr_matrix, Y: sp.csr_matrix) -> Reranker:
        """:meth:`fit` on checked data (the path of the estimators that re-rank)."""
        params = self._validate_params()
        inverse_propensity = _propensity_weights(Y, params["propensity_a"],
                                                 params["propensity_b"])
        # Checked as the loader checks them: a fit never makes an unloadable model.
        if not (np.all(np.isfinite(inverse_propensity)) and np.all(inverse_propensity > 0)):
            raise ValueError(
                f"propensity_a={params['propensity_a']} and propensity_b="
                f"{params['propensity_b']} give inverse propensities that are not finite and "
                f"positive on these {Y.shape[0]} training rows (the propensity model needs "
                "at least two rows, and moderate constants)")
        self.scorer_ = _new_scorer(params)._fit(X, Y)
        self.inverse_propensity_ = inverse_propensity
        return self

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
            Number of labels to return per row, capped at the number of labels.

        Returns
        -------
        labels : numpy.ndarray of shape (n_samples, k), int32
            Best first, ties by lower label id, -1 padding last.
        scores : numpy.ndarray of shape (n_samples, k), float64
            Blended scores, 0 in padded slots.
        """
        self._check_fitted()
        return self._rerank(check_features(X, n_features=self.scorer_.n_features_), labels,
                            scores, k)

    def _check_fitted(self) -> None:
        if not hasattr(self, "scorer_"):
            raise NotFittedError("this Reranker is not fitted yet; call fit(X, Y) first")

    def _rerank(self, X: sp.csr_matrix, labels, scores, k: int) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`rerank_predictions` of checked points (the candidates are checked here)."""
        labels = _check_candidate_labels(labels, self.scorer_.n_labels_)
        check_rows_match(X, labels)
        k = check_k(k, self.scorer_.n_labels_)
        # Blend settings may have been changed with set_params since fit.
        params = self._validate_params()
        method, alpha, beta = params["method"], params["alpha"], params["beta"]
        exponent, n_candidates = params["propensity_exponent"], params["n_candidates"]
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
        self._check_fitted()
        scorer = self.scorer_
        params = {
            **self._json_params(),
            "n_features": int(scorer.n_features_),
            "n_labels": int(scorer.n_labels_),
        }
        arrays = {**scorer._state_arrays(), "inverse_propensity": self.inverse_propensity_}
        return params, {STATE_PREFIX + name: array for name, array in arrays.items()}

    @classmethod
    def _upgrade_state(cls, version: int, params: dict, arrays: dict) -> tuple[dict, dict]:
        """Upgrade an older re-ranker state (see :func:`upgrade_reranker_state`)."""
        return upgrade_reranker_state(version, params, arrays, "fit the re-ranker again"), arrays

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
            reranker = cls(**{name: params[name] for name in cls._param_names()})
            n_features = check_int("n_features", params["n_features"], 1)
            n_labels = check_int("n_labels", params["n_labels"], 1)
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelFormatError(f"re-ranker settings are invalid ({exc})") from exc
        q = _state_array(arrays, "inverse_propensity", np.float64, (n_labels,))
        if not (np.all(np.isfinite(q)) and np.all(q > 0)):
            raise ModelFormatError("re-ranker inverse propensities: must be finite and > 0")
        scorer = _new_scorer(reranker._validate_params())
        scorer._load_arrays(arrays, n_features, n_labels)
        reranker.scorer_ = scorer
        reranker.inverse_propensity_ = q
        return reranker


def _new_scorer(params: dict) -> TailScorer | RidgeTailScorer | LogisticTailScorer:
    """An unfitted tail scorer with a re-ranker's checked settings."""
    if params["tail_scorer"] == "ridge":
        return RidgeTailScorer(params["ridge_penalty"], params["feature_weighting"])
    if params["tail_scorer"] == "logistic":
        return LogisticTailScorer(params["logistic_penalty"], params["feature_weighting"])
    return TailScorer(params["gamma"], params["feature_weighting"], params["unit_centroids"])


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




def upgrade_reranker_state(version: int, params: dict, arrays: dict, remedy: str) -> dict:
    """Return re-ranker settings read from a file of format `version` in the current layout.

    Version 1 re-rankers were all nearest-centroid ones: they get
    ``tail_scorer="centroid"`` (and the default, unused, ``ridge_penalty``).
    Those of the first released layout, without feature weights and label
    propensities, are refused: the propensities need the number of training
    rows, which that layout did not keep; `remedy` tells the user what to do.
    Re-rankers saved (in version 1 or 2) before the logistic tail scorer
    existed get the default, unused, ``logistic_penalty``.

    Raises
    ------
    ModelFormatError
        For a first-layout re-ranker.
    """
    if not isinstance(params, dict):
        return params  # _from_state refuses it
    if version == 1:
        if STATE_PREFIX + "inverse_propensity" not in arrays:
            raise ModelFormatError(
                "this model file (format version 1) holds a tail-label re-ranker in its first "
                "layout, without the feature weights and label propensities this xmltree "
                f"needs and cannot recompute: {remedy}"
            )
        params = {"tail_scorer": "centroid", "ridge_penalty": 1.0, **params}
    if params.get("tail_scorer") != "logistic" and "logistic_penalty" not in params:
        params = {**params, "logistic_penalty": _default("logistic_penalty")}
    return params


def _default(name: str):
    """The default value of :class:`Reranker`'s parameter `name`."""
    return inspect.signature(Reranker).parameters[name].default


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
