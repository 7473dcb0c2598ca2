"""What every xmltree estimator shares: parameters, their checks, model files, protocol.

Estimators follow scikit-learn's conventions without depending on it:
``__init__`` only stores its arguments, :meth:`get_params` / :meth:`set_params`
read and write them, and hyper-parameters are checked when training starts,
with a ``ValueError`` naming the parameter, its value and what is allowed.
The learners (LdSM, LOMTree, LearnedTree) and the re-ranking stage share one
protocol, :class:`TopKEstimator`.
"""

from __future__ import annotations

import joblib
import numpy as np
import scipy.sparse as sp

from ._checks import (  # noqa: F401 - the estimators' checks, imported from here
    check_bool,
    check_choice,
    check_int,
    check_k,
    check_real,
    check_seed,
    is_int,
)
from ._persistence import ModelFile, load_model, save_model
from ._sklearn import (
    DEFAULT_TAGS,
    named_labels,
    predicted_ids,
    records_label_counts,
    sklearn_tags,
)
from ._validation import take_rows
from .exceptions import ModelFormatError, NotFittedError
from .metrics import RankingScorer

__all__ = [
    "Estimator", "TopKEstimator", "estimator_class", "upgrade_learner_state", "class_values",
    "label_id_count", "is_int", "check_int", "check_real", "check_choice", "check_bool",
    "check_seed", "check_k",
    "n_threads", "MAX_INDEX", "MAX_NODES", "MAX_TREES", "MAX_EPOCHS", "MAX_WIDTH",
    "MAX_DEPTH", "MAX_NGRAMS", "MAX_LEARNING_RATE", "MAX_N_JOBS", "THREADS_PER_CORE",
]

# ----------------------------------------------------------------------------- bounds
# The upper bounds of every size hyper-parameter, in one place: an absurd
# value fails at once with a ValueError naming it, instead of an OverflowError
# in a kernel's int32 argument, a MemoryError or hours of work later. Each is
# far above any useful setting.

#: Ids of the compiled kernels are int32 (``index_t``): counts of features,
#: labels, candidates or stored weights are at most this.
MAX_INDEX = 2**31 - 1

#: Node budgets (LdSM's ``max_nodes``, LOMTree's ``max_internal_nodes``):
#: node ids, and the ids of their children, stay within int32.
MAX_NODES = 2**30

#: Trees of an ensemble (``n_trees``, and ``first_tree``): one 64-bit seed is
#: drawn per tree up to ``first_tree + n_trees``.
MAX_TREES = 100_000

#: Passes over the data (``epochs``; LearnedTree's ``n_tree_updates``). LdSM
#: keeps an objective value per node and epoch, LearnedTree plans one training
#: segment per epoch and update.
MAX_EPOCHS = 10_000

#: Widths of dense per-node or per-feature rows: LearnedTree's ``dim`` and
#: ``arity`` (a node holds ``arity x dim`` weights), LOMTree's ``beam_width``.
MAX_WIDTH = 2**16

#: LearnedTree's ``max_depth``: a label tree of this depth has room for
#: ``2**64`` labels, so a deeper bound never binds.
MAX_DEPTH = 64

#: Longest word n-gram of the text features (``ngrams``); each document is
#: scanned once per length.
MAX_NGRAMS = 64

#: Step sizes: far above any useful one (the papers' grids stop at 8, and NAG
#: normalises its steps), far below those (about 1e38) at which LdSM's float32
#: weights overflow unnoticed.
MAX_LEARNING_RATE = 1e6

#: ``n_jobs`` is an integer in ``[-MAX_N_JOBS, MAX_N_JOBS]``, 0 excluded. A
#: fixed bound, so that a model saved on a large machine loads on a small one.
MAX_N_JOBS = 2**16

#: Threads actually started are capped at this many per core (see
#: :func:`n_threads`): the kernels are CPU-bound, and thousands of threads
#: exhaust the thread stacks (libgomp then exits the process).
THREADS_PER_CORE = 2


#: Model kind -> estimator class, filled as the classes are defined.
_KINDS: dict[str, type] = {}


#: The key of a model file's parameters under which ``save`` stores ``training_``.
TRAINING_KEY = "training"


def estimator_class(kind) -> type:
    """The estimator class of a model kind read from a file.

    Raises
    ------
    ModelFormatError
        For a kind no estimator has.
    """
    if not isinstance(kind, str) or kind not in _KINDS:
        raise ModelFormatError(f"unknown model kind {kind!r}")
    return _KINDS[kind]


def upgrade_learner_state(version: int, params: dict, arrays: dict,
                          prefix: str) -> tuple[dict, dict]:
    """The state of a model that holds a learner, its learner's part upgraded.

    Models such as ``Reranked`` and ``TextClassifier`` store their learner's
    parameters under ``params["estimator"]`` (its kind under
    ``params["estimator_kind"]``) and its arrays under `prefix`; the
    learner's own ``_upgrade_state`` converts them from format `version`.
    A state without a known learner is left as it is, for ``_from_state`` to
    refuse.
    """
    try:
        learner_class = estimator_class(params["estimator_kind"])
    except (KeyError, TypeError, ModelFormatError):
        return params, arrays
    inner = {name[len(prefix):]: array for name, array in arrays.items()
             if name.startswith(prefix)}
    learner_params, inner = learner_class._upgrade_state(version, params.get("estimator"),
                                                         inner)
    outer = {name: array for name, array in arrays.items() if not name.startswith(prefix)}
    return ({**params, "estimator": learner_params},
            {**outer, **{prefix + name: array for name, array in inner.items()}})


class Estimator:
    """Base class: parameter access, ``repr``, and safe ``save`` / ``load``.

    Subclasses set ``_KIND`` (the model kind written in model files) and
    implement ``_get_state() -> (params, arrays)`` and the class method
    ``_from_state(params, arrays)``, which must validate everything it reads.
    A subclass whose stored layout changed in some format version overrides
    ``_upgrade_state`` to convert or refuse files of older versions.
    """

    _KIND: str

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "_KIND" in cls.__dict__:
            _KINDS[cls._KIND] = cls

    @classmethod
    def _param_names(cls) -> list[str]:
        code = cls.__init__.__code__
        return list(code.co_varnames[1:code.co_argcount + code.co_kwonlyargcount])

    def get_params(self, deep: bool = True) -> dict:
        """Return the constructor parameters.

        Parameters
        ----------
        deep : bool, default=True
            Also return the parameters of nested estimators (a stage's
            learner) as ``<parameter>__<name>``, as scikit-learn does, so
            that a grid search can tune them.

        Returns
        -------
        dict
        """
        params = {name: getattr(self, name) for name in self._param_names()}
        if deep:
            for name, value in list(params.items()):
                if hasattr(value, "get_params") and not isinstance(value, type):
                    params.update((f"{name}__{key}", item)
                                  for key, item in value.get_params().items())
        return params

    def set_params(self, **params):
        """Set constructor parameters; they are checked when training starts.

        ``<parameter>__<name>`` sets parameter ``name`` of the nested
        estimator ``<parameter>``.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            On a name that is not a constructor parameter.
        """
        valid = self._param_names()
        nested: dict[str, dict] = {}
        for full_name, value in params.items():
            name, nests, inner = full_name.partition("__")
            if name not in valid or (nests and not hasattr(getattr(self, name), "set_params")):
                raise ValueError(
                    f"invalid parameter {full_name!r} for {type(self).__name__}; valid: {valid}"
                )
            if nests:
                nested.setdefault(name, {})[inner] = value
            else:
                setattr(self, name, value)
        for name, inner_params in nested.items():
            getattr(self, name).set_params(**inner_params)
        return self

    def _json_params(self) -> dict:
        """The constructor parameters as plain Python values ``json`` can store."""
        return {name: _plain(value) for name, value in self.get_params(deep=False).items()}

    def __repr__(self) -> str:
        defaults = type(self)().get_params(deep=False)
        changed = [
            f"{name}={value!r}" for name, value in self.get_params(deep=False).items()
            if value is not defaults[name] and value != defaults[name]
        ]
        return f"{type(self).__name__}({', '.join(changed)})"

    def save(self, path) -> None:
        """Write the fitted model to ``path``.

        The file is a versioned ``.npz`` archive of numeric arrays plus JSON
        metadata, written atomically; loading it never unpickles anything.

        Raises
        ------
        NotFittedError
            Before the model is fitted.
        """
        params, arrays = self._get_state()
        training = getattr(self, "training_", None)
        if training is not None:
            # Beside the state, not in it: read by ``xmltree info``, never by a prediction.
            params = {**params, TRAINING_KEY: training}
        save_model(path, self._KIND, params, arrays)

    def __reduce__(self):
        """Pickle through the model-file state, for joblib and Dask workers.

        Compiled parts (a fitted forest, say) cannot be pickled themselves, so
        a fitted estimator travels as its ``_get_state`` parameters and arrays
        and is rebuilt, validated, by ``_from_state`` on the other side: a
        copy that predicts exactly like a model saved and loaded. Model files
        never use this; they are read without unpickling anything.
        """
        try:
            params, arrays = self._get_state()
        except NotFittedError:
            return _unfitted, (type(self), self.get_params(deep=False))
        return _fitted, (type(self), params, arrays)

    def __sizeof__(self) -> int:
        """Bytes of the fitted model's arrays, not just of the Python object.

        Dask's ``sizeof`` reads this, so that joblib's Dask backend treats a
        fitted model as the large object it is and scatters it to the
        workers once instead of sending it with every task.
        """
        try:
            _, arrays = self._get_state()
        except NotFittedError:
            return object.__sizeof__(self)
        return object.__sizeof__(self) + sum(array.nbytes for array in arrays.values())

    @classmethod
    def load(cls, path):
        """Read a model written by :meth:`save`.

        Raises
        ------
        ModelFormatError
            If the file is not a valid model of this kind and of a supported
            format version, or any stored array is inconsistent.
        """
        return cls._from_file(load_model(path, kind=cls._KIND), path)

    @classmethod
    def _from_file(cls, stored: ModelFile, path):
        """Rebuild a fitted estimator from a :func:`load_model` result of any readable version.

        Raises
        ------
        ModelFormatError
            Naming `path`, the file `stored` was read from.
        """
        try:
            params, arrays = cls._upgrade_state(stored.version, stored.params, stored.arrays)
            model = cls._from_state(params, arrays)
        except ModelFormatError as exc:
            raise ModelFormatError(f"{path}: {exc}") from exc
        training = stored.params.get(TRAINING_KEY)
        if isinstance(training, dict):  # kept when the model is saved again
            model.training_ = training
        return model

    @classmethod
    def _upgrade_state(cls, version: int, params: dict, arrays: dict) -> tuple[dict, dict]:
        """Return the state of a file of format `version` in the current layout.

        The default keeps it as it is: the estimator's layout has not changed
        since ``OLDEST_READABLE_VERSION``. Overrides raise ``ModelFormatError``
        for files they cannot convert, saying what to do.
        """
        return params, arrays


class TopKEstimator(Estimator):
    """The protocol of every xmltree learner: rank the labels of each sample.

    A fitted learner has ``n_features_in_`` (the width of the feature space
    it was fitted on; text learners: of their vectorizer's), answers
    :meth:`predict_top_k`, accepts joblib's ``n_jobs`` convention, saves,
    loads and pickles. Subclasses implement the private hooks:

    ``_validate_params() -> dict``
        Check every hyper-parameter, in one place; return them.
    ``_check_fitted()``
        Raise :class:`~xmltree.exceptions.NotFittedError` before ``fit``.
    ``_validate_X(X)``
        Check (and convert) the samples of a prediction, once; the result is
        what ``_predict_top_k`` and a re-ranking stage take as they are.
    ``_predict_top_k(X, k)``
        The ranking of checked samples, ``k >= 1``.
    ``_get_state()`` / ``_from_state(params, arrays)``
        Model files and pickles (see :class:`Estimator`).

    Every learner also works with scikit-learn, which it does not depend on
    (``xmltree._sklearn``): tags, nested parameters, :meth:`score` (P@1)
    and, recorded by every ``fit`` (wrapped when the subclass is defined),
    ``train_label_counts_`` and ``n_train_samples_``, from which the
    PSP@k scorers of :func:`xmltree.metrics.scorer` compute the training
    data's propensities. :meth:`predict_above` keeps the labels whose score
    reaches a threshold.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "fit" in cls.__dict__:
            cls.fit = records_label_counts(cls.__dict__["fit"])

    def predict_top_k(self, X, k: int = 5) -> tuple[np.ndarray, np.ndarray]:
        """Return the ``k`` best labels of each sample and their scores.

        Parameters
        ----------
        X : array-like or scipy sparse matrix of shape (n_samples, n_features)
            Samples (a sequence of documents for a text learner). Fewer
            columns than seen in ``fit`` are missing trailing features; more
            is an error.
        k : int, default=5
            Labels per sample, >= 1; capped at the number of labels the
            learner knows (``n_labels_``, or ``len(classes_)``).

        Returns
        -------
        labels : numpy.ndarray of shape (n_samples, min(k, n_labels))
            Best first; equal scores in increasing label order. Labels are
            label ids for LdSM and values of ``classes_`` for the
            classifiers; a sample with fewer known labels (those of the
            leaves it reached) is padded with label -1 and score 0.
        scores : numpy.ndarray of shape (n_samples, min(k, n_labels))
            Non-negative, larger is better: LdSM's ensemble-averaged leaf
            scores, LOMTree's class shares, LearnedTree's probabilities
            ``p(label | x)``.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        ValueError
            If ``k`` is not an integer >= 1.
        DataFormatError
            If ``X`` is malformed or wider than the training data.
        """
        model = self._snapshot()
        model._check_fitted()
        k = check_k(k, model._n_outputs())
        return model._predict_top_k(model._validate_X(X), k)

    def predict_file(self, path_in, path_out, k: int = 5, chunk_size: int = 10000) -> int:
        """Predict every row of an XC data file and write the ranked labels to disk.

        The input is read ``chunk_size`` rows at a time and each chunk's
        predictions are appended to a temporary file, which replaces
        ``path_out`` once all rows are done; memory stays bounded by one
        chunk however large the file. The output is exactly what
        ``write_predictions(path_out, *self.predict_top_k(X, k), n_labels)``
        writes for the whole file. Inside a joblib backend that does not use
        threads, such as ``joblib.parallel_backend("dask")``, the chunks are
        that backend's tasks (the model is scattered to the workers once).

        Parameters
        ----------
        path_in : str or os.PathLike
            Data in the Extreme Classification Repository format (header
            ``N D L``; the labels are checked but not used).
        path_out : str or os.PathLike
            Destination: header ``N L``, then one line of ``label:score``
            tokens per row, best first (see
            :func:`xmltree.datasets.write_predictions`).
        k : int, default=5
            Labels per row, as in :meth:`predict_top_k`.
        chunk_size : int, default=10000
            Rows read and predicted at a time, >= 1.

        Returns
        -------
        int
            Number of rows predicted.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        ValueError
            On an invalid ``k`` or ``chunk_size``, or for a learner whose
            labels are not label ids (names, or classes that are not
            non-negative integers).
        DataFormatError
            If the input file is malformed or wider than the training data;
            ``path_out`` is then left as it was.
        """
        from ._streaming import predict_xc_file

        model = self._snapshot()
        model._check_fitted()
        return predict_xc_file(model, path_in, path_out, k=k, chunk_size=chunk_size,
                               n_labels=label_id_count(model))

    def predict_above(self, X, threshold: float) -> sp.csr_matrix:
        """Return every label whose score is at least ``threshold``, with its score.

        The multi-label decision that a top-k ranking leaves open: each row
        keeps as many labels as score ``>= threshold`` (possibly none). What
        a score means, and so which threshold suits, depends on the learner
        (see :meth:`predict_top_k` and the "Scores and thresholds" page of
        the documentation).

        Parameters
        ----------
        X : array-like or scipy sparse matrix of shape (n_samples, n_features)
            Samples, as for :meth:`predict_top_k`.
        threshold : float
            A finite number > 0.

        Returns
        -------
        scipy.sparse.csr_matrix of shape (n_samples, n_labels)
            The kept scores, of the dtype of :meth:`predict_top_k`'s
            scores. Columns are label ids; for a learner whose labels are
            names, positions in its ``classes_`` (the row's labels are
            ``classes_[row.indices]``). It is a score matrix the functions
            of :mod:`xmltree.metrics` take.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        ValueError
            If ``threshold`` is not a finite number > 0.
        DataFormatError
            If ``X`` is malformed or wider than the training data.
        """
        model = self._snapshot()
        model._check_fitted()
        threshold = check_real("threshold", threshold, 0.0, strict=True)
        X = model._validate_X(X)
        n_labels = _label_space(model)
        labels, scores = model._labels_above(X, threshold, n_labels)
        ids = predicted_ids(model, labels)
        keep = (ids >= 0) & (scores >= threshold)
        rows = np.repeat(np.arange(X.shape[0]), keep.sum(axis=1))
        return sp.csr_matrix((scores[keep], (rows, ids[keep])), shape=(X.shape[0], n_labels),
                             dtype=scores.dtype)

    def _labels_above(self, X, threshold: float,
                      n_labels: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k rankings of checked samples, deep enough to hold every score >= threshold.

        ``k`` doubles, for the rows whose k-th score still reaches the
        threshold only, until every row's ranking ends below it, in
        padding, or holds all ``n_labels`` labels.
        """
        k = min(8, n_labels)
        labels, scores = self._predict_top_k(X, k)
        open_rows = np.flatnonzero(scores[:, -1] >= threshold)
        while open_rows.size and k < n_labels:
            k = min(2 * k, n_labels)
            deeper_labels, deeper_scores = self._predict_top_k(take_rows(X, open_rows), k)
            labels = _widen_ranking(labels, k, deeper_labels.dtype)
            scores = _widen_ranking(scores, k, deeper_scores.dtype)
            labels[open_rows], scores[open_rows] = deeper_labels, deeper_scores
            open_rows = open_rows[deeper_scores[:, -1] >= threshold]
        return labels, scores

    def score(self, X, Y) -> float:
        """Return the precision at 1 of the top label of each sample.

        scikit-learn's default score of an estimator (``GridSearchCV``,
        ``cross_validate`` without ``scoring``); pass
        ``scoring=xmltree.metrics.scorer("P@5")`` (or nDCG@k, PSP@k ...) to
        select by another metric. :class:`xmltree.LearnedTree` keeps its own
        ``score``, the mean log-likelihood.

        Parameters
        ----------
        X : array-like or scipy sparse matrix of shape (n_samples, n_features)
            Samples.
        Y : indicator matrix, list of label lists, or one label per sample
            True labels: label ids, or names for a learner of named labels.

        Returns
        -------
        float
            The share of samples whose best label is one of their labels
            (accuracy for one label per sample).
        """
        return RankingScorer("P", 1)(self, X, Y)

    #: The learner's scikit-learn tags that differ from ``xmltree._sklearn.DEFAULT_TAGS``.
    _TAGS: dict = {}

    def _more_tags(self) -> dict:
        """scikit-learn's tags, in the dict form read by scikit-learn < 1.6.

        ``DEFAULT_TAGS`` updated with the class's ``_TAGS``: learners declare
        how their inputs differ, and this method and :meth:`__sklearn_tags__`
        stay defined once, as scikit-learn's checks require.
        """
        return {**DEFAULT_TAGS, **self._TAGS}

    def __sklearn_tags__(self):
        """scikit-learn's tags (>= 1.6), translated from :meth:`_more_tags`."""
        return sklearn_tags(self._more_tags())

    def __sklearn_is_fitted__(self) -> bool:
        """Whether the learner is fitted, for scikit-learn's ``check_is_fitted``."""
        try:
            self._check_fitted()
        except NotFittedError:
            return False
        return True

    def _snapshot(self) -> TopKEstimator:
        """A shallow copy that every step of one prediction reads.

        A ``fit`` running in another thread replaces the fitted state of
        ``self``; the copy keeps the state it was made with, so that a
        prediction checks and scores its samples with one model.
        """
        snapshot = object.__new__(type(self))
        snapshot.__dict__.update(self.__dict__)
        return snapshot

    def _n_outputs(self) -> int:
        """How many distinct labels the learner can rank: what ``k`` is capped at."""
        n_labels = getattr(self, "n_labels_", None)
        return int(n_labels) if n_labels is not None else len(self.classes_)

    def _check_fitted(self) -> None:
        raise NotImplementedError

    def _validate_X(self, X):
        raise NotImplementedError

    def _predict_top_k(self, X, k: int) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError


def _label_space(estimator: TopKEstimator) -> int:
    """Number of columns of :meth:`TopKEstimator.predict_above`'s matrix."""
    return len(estimator.classes_) if named_labels(estimator) else label_id_count(estimator)


def _widen_ranking(values: np.ndarray, k: int, dtype) -> np.ndarray:
    """A ``(n, k)`` copy of ``(n, k')`` rankings, k' <= k, for deeper rows to fill.

    The new slots of the other rows hold label 0 with score 0, which no
    threshold (> 0) keeps.
    """
    wider = np.zeros((values.shape[0], k), dtype=np.result_type(values.dtype, dtype))
    wider[:, :values.shape[1]] = values
    return wider


def class_values(classes: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """``classes[ids]``, keeping the padding id -1 as label -1.

    Raises
    ------
    ValueError
        If there is padding but the classes are not integers.
    """
    if not (ids < 0).any():
        return classes[ids]
    if classes.dtype.kind not in "iu":
        raise ValueError(f"k exceeds the {classes.shape[0]} classes, whose labels are not "
                         "integers: there is no label -1 to pad with")
    return np.where(ids >= 0, classes[np.maximum(ids, 0)], -1)


def label_id_count(estimator: TopKEstimator) -> int:
    """Size of the label-id space that a learner's ``predict_top_k`` draws from.

    LdSM's ``n_labels_``; for a classifier, its largest class + 1, which
    needs non-negative integer classes (label ids, as ``to_multiclass`` makes).

    Raises
    ------
    ValueError
        For classes that are not non-negative integers.
    """
    n_labels = getattr(estimator, "n_labels_", None)
    if n_labels is not None:
        return int(n_labels)
    classes = estimator.classes_
    if classes.dtype.kind not in "iu" or classes.min() < 0:
        raise ValueError(f"{type(estimator).__name__} has classes {classes[:3]}..., not "
                         "label ids (non-negative integers)")
    return int(classes.max()) + 1


def _plain(value):
    """``value`` with NumPy scalars, also inside a dict of settings, made Python scalars."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value.item() if isinstance(value, np.generic) else value


def _unfitted(cls, params: dict) -> Estimator:
    return cls(**params)


def _fitted(cls, params: dict, arrays: dict) -> Estimator:
    return cls._from_state(params, arrays)


def n_threads(n_jobs) -> int:
    """Resolve joblib's ``n_jobs`` convention (None: 1, -1: all cores) to a thread count.

    The count is capped at ``THREADS_PER_CORE`` threads per core (per worker
    thread of the active joblib backend, for a Dask cluster): more only
    oversubscribes the cores, and thousands exhaust the thread stacks.

    Raises
    ------
    ValueError
        If ``n_jobs`` is 0, not an integer, or beyond ``[-MAX_N_JOBS, MAX_N_JOBS]``.
    """
    if n_jobs is not None and (not is_int(n_jobs) or n_jobs == 0 or abs(n_jobs) > MAX_N_JOBS):
        raise ValueError(f"n_jobs must be None or a non-zero integer in [-{MAX_N_JOBS}, "
                         f"{MAX_N_JOBS}], got {n_jobs!r}")
    cores = max(1, joblib.effective_n_jobs(-1))
    return min(max(1, joblib.effective_n_jobs(n_jobs)), THREADS_PER_CORE * cores)
