"""Raw documents in, label names out: a text vectorizer and a learner as one model.

:class:`TextClassifier` fits a :class:`~xmltree.text.TextVectorizer`
(vocabulary words, frequent word pairs and optionally hashed word n-grams,
tf-idf weighted by default) on
the training documents, numbers their label names, and trains a copy of any
learner of label sets (:class:`~xmltree.LdSM` by default, or
:class:`~xmltree.LearnedTree`) on the features and label ids. Predictions
map the learner's label ids back to names. The vectorizer, the names and
the learner are saved in one model file of kind ``"text_classifier"``.

The vectorizer's output is all the learner sees: whatever the learner does
with its features (LdSM may scale them itself) applies on top of it, with
one exception: the route knows its rows are word tf-idf, and resolves an
LdSM's ``histogram_weight="auto"`` and ``descent_threshold="auto"`` for them
(``TEXT_ROUTE_SETTINGS``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import scipy.sparse as sp

from ._base import TopKEstimator, check_int, estimator_class, label_id_count, upgrade_learner_state
from .exceptions import DataFormatError, ModelFormatError, NotFittedError
from .ldsm._auto_settings import WIDE_DESCENT_THRESHOLD
from .text import TextVectorizer, decode_strings, encode_strings

__all__ = ["TextClassifier"]

#: Prefixes of the learner's and the vectorizer's arrays in a model file.
ESTIMATOR_PREFIX = "estimator/"
VECTORIZER_PREFIX = "vectorizer/"

#: What an LdSM's ``histogram_weight="auto"`` becomes on this route. LdSM
#: cannot tell word tf-idf rows from other rows of their size (its own rule
#: gives the classifiers alone only over more than ``MANY_FEATURES``
#: features, more words than the vectorizer keeps on the corpora measured);
#: on the vectorizer's rows the classifiers alone ranked held-out documents
#: better than the blend in every split of Reuters-21578 and of the debtags
#: documents (``benchmarks/history/2026-11-lab-notebook.md``, "The histogram
#: weight chosen on rows set aside").
TEXT_HISTOGRAM_WEIGHT = 0.0

#: What an LdSM's ``descent_threshold="auto"`` becomes on this route: the
#: wider descent that LdSM takes where labels are many. With the histogram
#: weight at 0 the leaves' histograms only choose the candidates that the
#: classifiers train on and re-score, so leaves blurred by the extra
#: branches cost nothing, while the candidates give every label a wider
#: neighbourhood; LdSM's other "auto" settings follow the wider descent (its
#: candidates, and C checked on rows set aside). On held-out documents of
#: both corpora measured it raised P@1, P@5 and PSP@5 (lab notebook, "The
#: wider descent on the text route").
TEXT_DESCENT_THRESHOLD = WIDE_DESCENT_THRESHOLD

#: The "auto" settings of an LdSM that this route resolves, and to what.
TEXT_ROUTE_SETTINGS = {"histogram_weight": TEXT_HISTOGRAM_WEIGHT,
                       "descent_threshold": TEXT_DESCENT_THRESHOLD}


class TextClassifier(TopKEstimator):
    """Documents to their top-k label names: text features and any learner, as one model.

    Parameters
    ----------
    estimator : LdSM or LearnedTree, optional
        The learner's settings (``None``: ``LdSM()``); :meth:`fit` trains a
        copy, ``estimator_``, on label ids. Any learner fitted on label sets
        works; LOMTree, which learns one class per sample, does not. In the
        copy, an LdSM's ``histogram_weight="auto"`` becomes
        ``TEXT_HISTOGRAM_WEIGHT`` (0: its label classifiers alone rank the
        candidates) and its ``descent_threshold="auto"`` becomes
        ``TEXT_DESCENT_THRESHOLD`` (the wider descent); settings given
        otherwise are kept.
    ngrams : int, default=1
        Longest word n-gram; n-grams of 2..ngrams words are hashed into
        ``buckets`` features (see :class:`~xmltree.text.TextVectorizer`).
        No hashed n-grams by default: with LdSM, hashed word bigrams lowered
        every held-out metric of Reuters-21578 and debtags and made fitting
        slower (``benchmarks/README.md``, "Raw text"); the word pairs below
        keep the frequent bigrams only, each with an id of its own.
    buckets : int, default=1_048_576
        Hash buckets of the n-grams (unused when ``ngrams == 1``).
    min_count : int, default=2
        Words seen fewer times in the training documents are dropped.
    pair_min_documents : int or None, default=20
        Adjacent word pairs found in at least this many training documents
        are features of their own (None: no pairs; see
        :class:`~xmltree.text.TextVectorizer`).
    pair_weight : float, default=0.4
        Norm of a row's pairs against its words' (tf-idf). These two defaults
        ranked held-out documents better than words alone on average over
        debtags and Reuters-21578 (on debtags every metric, on Reuters P@1 a
        little lower) and better than the hashed bigrams of ``ngrams=2``
        (``benchmarks/README.md``, "Raw text").
    weighting : {"tfidf", "count"}, default="tfidf"
        Feature weights (see :class:`~xmltree.text.TextVectorizer`).

    Attributes
    ----------
    vectorizer_ : TextVectorizer
        Fitted on the training documents.
    estimator_ : LdSM or LearnedTree
        The fitted learner; its label id ``i`` is ``classes_[i]``.
    classes_ : numpy.ndarray of str
        The label names seen in training, sorted.
    n_features_in_ : int
        Width of the vectorizer's feature space.

    Examples
    --------
    >>> model = TextClassifier(LdSM(n_trees=5)).fit(texts, label_names)  # doctest: +SKIP
    >>> names, scores = model.predict(["wheat exports rose ..."], k=3)   # doctest: +SKIP
    >>> model.save("topics.npz")                                         # doctest: +SKIP
    """

    _KIND = "text_classifier"
    _TAGS = {"X_types": ["string"]}

    def __init__(self, estimator=None, ngrams=1, buckets=1 << 20, min_count=2,
                 weighting="tfidf", pair_min_documents=20, pair_weight=0.4):
        self.estimator = estimator
        self.ngrams = ngrams
        self.buckets = buckets
        self.min_count = min_count
        self.weighting = weighting
        self.pair_min_documents = pair_min_documents
        self.pair_weight = pair_weight

    def _validate_params(self) -> dict:
        """Check the learner and the text settings; return them, the learner resolved."""
        estimator = self.estimator
        if estimator is None:
            from .ldsm._estimator import LdSM

            estimator = LdSM()
        if not isinstance(estimator, TopKEstimator) or _is_stage(estimator):
            raise ValueError(f"estimator must be a learner such as LdSM or LearnedTree, got "
                             f"{type(estimator).__name__}")
        self._vectorizer()._validate_params()
        return {**self.get_params(deep=False), "estimator": estimator}

    def _vectorizer(self) -> TextVectorizer:
        """An unfitted vectorizer with this model's text settings."""
        return TextVectorizer(self.ngrams, self.buckets, self.min_count, weighting=self.weighting,
                              pair_min_documents=self.pair_min_documents,
                              pair_weight=self.pair_weight)

    def fit(self, X, Y) -> TextClassifier:
        """Fit the vectorizer, number the labels, and train a copy of the learner.

        Parameters
        ----------
        X : sequence of str
            Training documents.
        Y : sequence
            Each document's label names: a list of names, or one name.

        Returns
        -------
        TextClassifier
            ``self``, fitted.

        Raises
        ------
        ValueError
            On an invalid setting.
        DataFormatError
            On a document that is not a string, a document without labels, a
            label that is not a non-empty string, or lengths that differ.
        """
        params = self._validate_params()
        texts = _documents(X)
        _refuse_surrogates("X", "document", texts)
        classes, Y_ids = _number_labels(Y, len(texts))
        vectorizer = self._vectorizer()
        features = vectorizer.fit_transform(texts)
        estimator = _text_route_copy(params["estimator"]).fit(features, Y_ids)
        self.vectorizer_, self.classes_, self.estimator_ = vectorizer, classes, estimator
        return self

    def predict(self, X, k: int = 5) -> tuple[np.ndarray, np.ndarray]:
        """Same as :meth:`predict_top_k`: the ``k`` best label names of each document.

        Returns
        -------
        names : numpy.ndarray of str, shape (n_documents, k)
            Best first; a document with fewer than ``k`` labels scored by
            the learner is padded with ``""`` and score 0.
        scores : numpy.ndarray of shape (n_documents, k)
            The learner's scores (see its ``predict_top_k``).
        """
        return self.predict_top_k(X, k)

    @property
    def n_features_in_(self) -> int:
        return self.vectorizer_.n_features_

    @property
    def n_jobs(self):
        """The fitted learner's threads (the vectorizer runs in Python)."""
        self._check_fitted()
        return self.estimator_.n_jobs

    @n_jobs.setter
    def n_jobs(self, value) -> None:
        self._check_fitted()
        self.estimator_.n_jobs = value

    def _check_fitted(self) -> None:
        if not hasattr(self, "estimator_"):
            raise NotFittedError("this TextClassifier is not fitted yet; call fit(texts, "
                                 "labels) first")

    def _validate_X(self, X) -> sp.csr_matrix:
        return self.estimator_._validate_X(self.vectorizer_.transform(_documents(X)))

    def _predict_top_k(self, X, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The learner's ranking as names; a document without features gets no label.

        Such a document (empty, blank, or all of its words unseen in training)
        carries no evidence, and a learner would still rank labels for it (an
        LdSM tree routes an empty row by its biases alone) with scores that
        look as confident as any other's.
        """
        ids, scores = self.estimator_._predict_top_k(X, k)
        featureless = (np.diff(X.indptr) == 0)[:, None]
        ids = np.where(featureless, -1, np.asarray(ids))
        scores = np.where(featureless, 0, scores).astype(scores.dtype, copy=False)
        return np.where(ids >= 0, self.classes_[np.maximum(ids, 0)], ""), scores

    def _get_state(self) -> tuple[dict, dict]:
        """The vectorizer's, the learner's and the names' state, side by side."""
        self._check_fitted()
        learner_params, learner_arrays = self.estimator_._get_state()
        vectorizer_params, vectorizer_arrays = self.vectorizer_._get_state()
        names_data, names_offsets = encode_strings(self.classes_.tolist())
        params = {"estimator_kind": self.estimator_._KIND, "estimator": learner_params,
                  "vectorizer": vectorizer_params, "n_train_samples": int(self.n_train_samples_)}
        arrays = {"classes_data": names_data, "classes_offsets": names_offsets,
                  "train_label_counts": self.train_label_counts_,
                  **{ESTIMATOR_PREFIX + name: a for name, a in learner_arrays.items()},
                  **{VECTORIZER_PREFIX + name: a for name, a in vectorizer_arrays.items()}}
        return params, arrays

    @classmethod
    def _upgrade_state(cls, version: int, params: dict, arrays: dict) -> tuple[dict, dict]:
        """An older file's state, its learner's part upgraded by the learner."""
        return upgrade_learner_state(version, params, arrays, ESTIMATOR_PREFIX)

    @classmethod
    def _from_state(cls, params: dict, arrays: dict) -> TextClassifier:
        """Rebuild the vectorizer, the learner and the names, checking that they agree.

        Raises
        ------
        ModelFormatError
            On a missing or nested learner, invalid names or label counts, or
            a learner that does not fit the vectorizer's features or the names.
        """
        try:
            learner_class = estimator_class(params["estimator_kind"])
            learner_params = params["estimator"]
            vectorizer = TextVectorizer._from_state(params["vectorizer"],
                                                    _unprefixed(arrays, VECTORIZER_PREFIX))
            classes = _stored_names(arrays)
            counts = _stored_counts(arrays, classes.shape[0])
            n_train = check_int("n_train_samples", params["n_train_samples"], 1)
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, ModelFormatError):
                raise
            raise ModelFormatError(f"text classifier: invalid state ({exc})") from None
        if not issubclass(learner_class, TopKEstimator) or _is_stage(learner_class):
            raise ModelFormatError(f"text classifier: cannot hold a {learner_class.__name__}")
        learner = learner_class._from_state(learner_params, _unprefixed(arrays, ESTIMATOR_PREFIX))
        if (learner.n_features_in_ != vectorizer.n_features_
                or label_id_count(learner) > classes.shape[0]):
            raise ModelFormatError("text classifier: the learner does not match the "
                                   "vectorizer's features or the label names")
        model = cls(type(learner)(**learner.get_params(deep=False)), vectorizer.ngrams,
                    vectorizer.buckets, vectorizer.min_count, vectorizer.weighting,
                    vectorizer.pair_min_documents, vectorizer.pair_weight)
        model.vectorizer_, model.classes_, model.estimator_ = vectorizer, classes, learner
        model.train_label_counts_, model.n_train_samples_ = counts, n_train
        return model


def _is_stage(estimator) -> bool:
    """True for a stage (an instance or class) that wraps another learner."""
    from .rerank import Reranked

    kind = estimator if isinstance(estimator, type) else type(estimator)
    return issubclass(kind, (Reranked, TextClassifier))


def _text_route_copy(learner):
    """An unfitted copy of `learner`, its "auto" settings of ``TEXT_ROUTE_SETTINGS`` resolved
    for text rows."""
    params = learner.get_params(deep=False)
    for name, value in TEXT_ROUTE_SETTINGS.items():
        if params.get(name) == "auto":
            params[name] = value
    return type(learner)(**params)


def _documents(X) -> list[str]:
    """``X`` as a list of documents; DataFormatError unless it is a sequence of strings."""
    if isinstance(X, str) or not isinstance(X, (Sequence, np.ndarray)):
        raise DataFormatError(f"X: expected a sequence of documents (strings), got "
                              f"{type(X).__name__}")
    texts = list(X)
    for row, text in enumerate(texts):
        if not isinstance(text, str):
            raise DataFormatError(f"X: document {row} is a {type(text).__name__}, not a string")
    return texts


def _number_labels(Y, n_samples: int) -> tuple[np.ndarray, sp.csr_matrix]:
    """Sorted label names and the documents' label-id indicator matrix.

    Raises
    ------
    DataFormatError
        If ``Y`` is not one name or list of names per document, a document
        has no label, or a name is not a non-empty string.
    """
    rows = [[names] if isinstance(names, str) else names for names in Y]
    if len(rows) != n_samples:
        raise DataFormatError(f"Y: has {len(rows)} rows but X has {n_samples} documents")
    for row, names in enumerate(rows):
        if not isinstance(names, Iterable) or not _non_empty_names(names):
            raise DataFormatError(f"Y: row {row} must be one label name or a non-empty list "
                                  "of non-empty names")
    for row, names in enumerate(rows):
        _refuse_surrogates("Y", "row", names, row)
    classes, ids = np.unique(np.asarray([name for names in rows for name in names]),
                             return_inverse=True)
    offsets = np.cumsum([0] + [len(names) for names in rows])
    indicator = sp.csr_matrix((np.ones(ids.shape[0], dtype=np.float32), ids, offsets),
                              shape=(n_samples, classes.shape[0]))
    indicator.sum_duplicates()
    indicator.data[:] = 1.0  # a name given twice for one document is one label
    return classes, indicator


def _refuse_surrogates(argument: str, what: str, strings, row: int | None = None) -> None:
    """Raise DataFormatError, naming the row, if a string holds a lone surrogate.

    Such a string (from bytes decoded with ``errors="surrogateescape"``, say)
    has no UTF-8 form, so the model's vocabulary or names could not be saved.
    """
    for position, text in enumerate(strings):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            where = f"{what} {position if row is None else row}"
            raise DataFormatError(f"{argument}: {where} holds a lone surrogate "
                                  f"({text[exc.start]!r} at character {exc.start}), which "
                                  "is not text that UTF-8 can encode") from None


def _non_empty_names(names) -> bool:
    names = list(names)
    return bool(names) and all(isinstance(name, str) and name for name in names)


def _unprefixed(arrays: dict, prefix: str) -> dict:
    """The arrays stored under ``prefix``, with it removed from their names."""
    return {name[len(prefix):]: array for name, array in arrays.items()
            if name.startswith(prefix)}


def _stored_names(arrays: dict) -> np.ndarray:
    """The sorted, unique, non-empty label names of a model file."""
    names = decode_strings(arrays["classes_data"], arrays["classes_offsets"])
    if not names or not all(names) or any(a >= b for a, b in zip(names, names[1:])):
        raise ValueError("label names must be non-empty, sorted and unique")
    return np.asarray(names)


def _stored_counts(arrays: dict, n_labels: int) -> np.ndarray:
    """The training label counts of a model file: non-negative int64, one per name."""
    counts = arrays["train_label_counts"]
    if counts.dtype != np.int64 or counts.shape != (n_labels,) or np.any(counts < 0):
        raise ValueError("train_label_counts must be non-negative int64, one per label name")
    return counts

