"""The re-ranking stage: a fitted learner and a re-ranker as one model (:class:`Reranked`)."""

from __future__ import annotations

import numpy as np

from .._base import TopKEstimator, check_k, estimator_class, label_id_count, upgrade_learner_state
from .._validation import check_labels, widen
from ..exceptions import ModelFormatError, NotFittedError
from ._estimator import Reranker

__all__ = ["Reranked", "rerank_top_k", "reranking_stage"]


#: Prefix of the learner's array names in a :class:`Reranked` model file.
ESTIMATOR_PREFIX = "estimator/"


class Reranked(TopKEstimator):
    """A fitted learner whose top candidates a tail-label re-ranker re-orders, as one model.

    :meth:`fit` trains the re-ranker (not the learner) on the learner's
    training data; :meth:`predict_top_k` asks the learner for
    ``max(k, reranker.n_candidates)`` candidates and returns the best ``k``
    after re-ranking. The stage saves, loads and pickles as one model file.

    Parameters
    ----------
    estimator : LdSM, LOMTree or LearnedTree
        A fitted learner, used as it is. Its labels must be label ids, the
        columns of the ``Y`` given to :meth:`fit`: LdSM's are; a classifier's
        ``classes_`` must be non-negative integers (as
        :func:`xmltree.lomtree.to_multiclass` makes them).
    reranker : Reranker, optional
        The re-ranker's settings (``None``: ``Reranker()``); :meth:`fit`
        trains a copy.

    Attributes
    ----------
    reranker_ : Reranker
        The fitted re-ranker.
    n_features_in_ : int
        The learner's.
    n_labels_ : int
        The label ids the re-ranker knows: those of ``Y``, and at least the
        learner's.

    Notes
    -----
    The re-ranker reads the samples as the learner's own checks return them:
    the feature matrix, or for a LearnedTree fitted on text the features its
    vectorizer makes of the documents, so such a learner can be re-ranked as
    long as its labels are label ids (not names).

    Examples
    --------
    >>> model = LOMTree().fit(X_train, y_train)                            # doctest: +SKIP
    >>> reranked = Reranked(model, Reranker(alpha=0.5)).fit(X_train, Y_train)  # doctest: +SKIP
    >>> labels, scores = reranked.predict_top_k(X_test, k=5)               # doctest: +SKIP
    """

    _KIND = "reranked"

    def __init__(self, estimator=None, reranker=None):
        self.estimator = estimator
        self.reranker = reranker

    def _validate_params(self) -> dict:
        """Check the learner (fitted, not itself a stage) and the re-ranker's settings."""
        if not isinstance(self.estimator, TopKEstimator) or isinstance(self.estimator, Reranked):
            raise ValueError(f"estimator must be a fitted LdSM, LOMTree or LearnedTree, got "
                             f"{type(self.estimator).__name__}")
        self.estimator._check_fitted()
        if self.reranker is not None and not isinstance(self.reranker, Reranker):
            raise ValueError(f"reranker must be a Reranker or None, got {self.reranker!r}")
        reranker = Reranker() if self.reranker is None else self.reranker
        reranker._validate_params()
        return {"estimator": self.estimator, "reranker": reranker}

    def fit(self, X, Y) -> Reranked:
        """Fit the re-ranker on the learner's training data.

        Parameters
        ----------
        X : array-like, sparse matrix or sequence of documents
            Training samples, as the learner takes them.
        Y : indicator matrix of shape (n_samples, n_labels) or list of label lists
            The label sets of the samples, in the learner's label ids.

        Returns
        -------
        Reranked
            ``self``.

        Raises
        ------
        ValueError
            If the learner is not fitted or its labels are not label ids.
        DataFormatError
            On malformed data.
        """
        params = self._validate_params()
        n_labels = label_id_count(self.estimator)
        X = self.estimator._validate_X(X)
        Y = check_labels(Y, n_samples=X.shape[0])
        if Y.shape[1] < n_labels:
            Y = widen(Y, n_labels)
        self.reranker_ = Reranker(**params["reranker"].get_params())._fit(X, Y)
        return self

    def predict(self, X, k: int = 5) -> tuple[np.ndarray, np.ndarray]:
        """Same as :meth:`predict_top_k`."""
        return self.predict_top_k(X, k)

    @property
    def n_features_in_(self) -> int:
        return self.estimator.n_features_in_

    @property
    def n_labels_(self) -> int:
        """Size of the label-id space of the re-ranker (at least the learner's)."""
        return self.reranker_.scorer_.n_labels_

    @property
    def n_jobs(self):
        """The learner's threads (the re-ranker runs in NumPy and its kernel)."""
        return self.estimator.n_jobs

    @n_jobs.setter
    def n_jobs(self, value) -> None:
        self.estimator.n_jobs = value

    def _check_fitted(self) -> None:
        if not hasattr(self, "reranker_"):
            raise NotFittedError("this Reranked model is not fitted yet; call fit(X, Y) first")

    def _validate_X(self, X):
        return self.estimator._validate_X(X)

    def _predict_top_k(self, X, k: int) -> tuple[np.ndarray, np.ndarray]:
        return rerank_top_k(self.estimator, self.reranker_, X, k)

    def _get_state(self) -> tuple[dict, dict]:
        """The learner's state and the re-ranker's, side by side."""
        self._check_fitted()
        learner_params, learner_arrays = self.estimator._get_state()
        reranker_params, reranker_arrays = self.reranker_._get_state()
        params = {"estimator_kind": self.estimator._KIND, "estimator": learner_params,
                  "reranker": reranker_params}
        arrays = {ESTIMATOR_PREFIX + name: array for name, array in learner_arrays.items()}
        return params, {**arrays, **reranker_arrays}

    @classmethod
    def _upgrade_state(cls, version: int, params: dict, arrays: dict) -> tuple[dict, dict]:
        """An older file's state, its learner's part upgraded by the learner."""
        return upgrade_learner_state(version, params, arrays, ESTIMATOR_PREFIX)

    @classmethod
    def _from_state(cls, params: dict, arrays: dict) -> Reranked:
        """Rebuild the learner and the re-ranker, each checking what it reads.

        Raises
        ------
        ModelFormatError
            On a missing or nested learner, or a re-ranker that does not fit
            the learner's features and labels.
        """
        try:
            learner_class = estimator_class(params["estimator_kind"])
            learner_params, reranker_params = params["estimator"], params["reranker"]
        except (KeyError, TypeError) as exc:
            raise ModelFormatError(f"re-ranked model: no valid learner ({exc})") from None
        if not issubclass(learner_class, TopKEstimator) or learner_class is Reranked:
            raise ModelFormatError(f"re-ranked model: cannot re-rank a {learner_class.__name__}")
        # The re-ranker's arrays confirm the width the learner claims before
        # the learner allocates by it.
        reranker = Reranker._from_state(reranker_params, arrays)
        scorer = reranker.scorer_
        claimed = learner_params.get("n_features") if isinstance(learner_params, dict) else None
        if claimed is not None and claimed != scorer.n_features_:
            raise ModelFormatError("re-ranked model: the re-ranker does not match the learner's "
                                   "features or labels")
        estimator = learner_class._from_state(learner_params, {
            name[len(ESTIMATOR_PREFIX):]: array for name, array in arrays.items()
            if name.startswith(ESTIMATOR_PREFIX)})
        try:
            n_labels = label_id_count(estimator)
        except ValueError as exc:  # a learner whose classes are not label ids
            raise ModelFormatError(f"re-ranked model: {exc}") from None
        if scorer.n_features_ != estimator.n_features_in_ or scorer.n_labels_ < n_labels:
            raise ModelFormatError("re-ranked model: the re-ranker does not match the learner's "
                                   "features or labels")
        model = cls(estimator, Reranker(**reranker.get_params()))
        model.reranker_ = reranker
        return model


def rerank_top_k(estimator: TopKEstimator, reranker: Reranker, X,
                 k: int) -> tuple[np.ndarray, np.ndarray]:
    """The top `k` of a fitted learner's candidates for checked samples, re-ranked.

    The learner proposes ``max(k, reranker.n_candidates)`` candidates, at
    most as many as it has labels.
    """
    n_candidates = check_k(max(k, reranker.n_candidates), estimator._n_outputs())
    labels, scores = estimator._predict_top_k(X, n_candidates)
    labels, scores = reranker._rerank(X, labels, scores, k)
    # One score dtype for every ranking a learner returns.
    return labels, scores.astype(np.float32)


def reranking_stage(model: TopKEstimator) -> Reranked:
    """The re-ranking stage a loaded model is.

    Raises
    ------
    ValueError
        If the model is not a :class:`Reranked` stage.
    """
    if isinstance(model, Reranked):
        return model
    raise ValueError("this model has no re-ranker; train it with one (Python: "
                     "xmltree.rerank.Reranked; command line: --rerank)")
