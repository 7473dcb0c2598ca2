"""Each metric as a scikit-learn scorer, and a fitted learner's evaluation."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from .._checks import check_int
from .._sklearn import final_step, predicted_ids, true_label_sets
from .._validation import widen
from ._metrics import _METRICS, _PROPENSITY_SCORED, _as_list, evaluate
from ._propensity import inverse_propensity_from_counts


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
