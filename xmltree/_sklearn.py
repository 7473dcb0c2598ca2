"""scikit-learn compatibility, without depending on scikit-learn.

Everything the learners need to work inside ``Pipeline``, ``clone``,
``GridSearchCV`` / ``RandomizedSearchCV`` and ``cross_validate`` lives here
and in the few methods of :class:`xmltree._base.TopKEstimator` that call it:

* tags: scikit-learn >= 1.6 asks ``__sklearn_tags__()`` for a ``Tags``
  object, older releases read the ``_more_tags()`` dict. The dict is the one
  source; :func:`sklearn_tags` translates it, importing scikit-learn only
  when scikit-learn itself asks (so xmltree never needs it installed).
* label encoding: a learner's labels are label ids (LdSM, and classifiers
  with integer classes) or values of its ``classes_`` (names). Scorers and
  :meth:`~xmltree._base.TopKEstimator.score` compare rankings with true
  labels in one id space, :func:`predicted_ids` and :func:`true_label_sets`.
* training label counts: every ``fit`` records how many training rows carry
  each label (:func:`records_label_counts`), so that a PSP@k scorer can
  compute propensities from the *training fold* of a cross-validation, which
  the scorer itself never sees.
"""

from __future__ import annotations

import datetime
import functools
import inspect
import time
from collections.abc import Iterable, Iterator

import numpy as np
import scipy.sparse as sp

from ._validation import check_labels
from .exceptions import DataFormatError

__all__ = ["DEFAULT_TAGS", "sklearn_tags", "records_label_counts", "count_labels",
           "named_labels", "predicted_ids", "true_label_sets", "final_step"]

#: The tags every learner starts from, in scikit-learn's dict form (< 1.6).
#: Learners predict labels of samples given as a 2-D (dense or sparse)
#: feature matrix, and need targets to fit.
DEFAULT_TAGS: dict = {
    "X_types": ["2darray", "sparse"],
    "requires_y": True,
    "requires_fit": True,
    "requires_positive_X": False,
    "allow_nan": False,
    "non_deterministic": False,
}


def sklearn_tags(legacy: dict):
    """The ``sklearn.utils.Tags`` equivalent to a ``_more_tags()`` dict.

    ``estimator_type`` stays ``None``: xmltree's learners rank labels, and
    scikit-learn's classifier contract (``predict`` returns one class per
    sample, ``predict_proba`` ...) does not describe them. It also keeps
    cross-validation on plain ``KFold``, which accepts label sets in any
    form (a ``"classifier"`` would have its targets inspected by
    ``type_of_target``, which refuses lists of label lists).
    """
    from sklearn.utils import InputTags, Tags, TargetTags

    types = legacy["X_types"]
    input_tags = InputTags(two_d_array="2darray" in types, sparse="sparse" in types,
                           string="string" in types,
                           positive_only=legacy["requires_positive_X"],
                           allow_nan=legacy["allow_nan"])
    return Tags(estimator_type=None, target_tags=TargetTags(required=legacy["requires_y"]),
                input_tags=input_tags, requires_fit=legacy["requires_fit"],
                non_deterministic=legacy["non_deterministic"])


# ----------------------------------------------------------------------------- labels


def named_labels(estimator) -> bool:
    """True when the learner's labels are values of ``classes_`` that are not integers."""
    classes = getattr(estimator, "classes_", None)
    return classes is not None and np.asarray(classes).dtype.kind not in "iu"


def predicted_ids(estimator, labels: np.ndarray) -> np.ndarray:
    """The label ids of a ranking returned by the learner's ``predict_top_k``.

    Integer labels are ids already (-1: an empty slot). Names are mapped to
    their position in the sorted ``classes_``; padding (anything that is not
    a class) becomes -1.
    """
    labels = np.asarray(labels)
    if not named_labels(estimator):
        return labels.astype(np.int64)
    classes = np.asarray(estimator.classes_)
    return _positions(classes, labels)


def _positions(classes: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Index of each value in the sorted ``classes``, -1 where it is not one."""
    positions = np.minimum(np.searchsorted(classes, values), classes.shape[0] - 1)
    return np.where(classes[positions] == values, positions, -1).astype(np.int64)


def true_label_sets(estimator, Y) -> sp.csr_matrix:
    """True labels as a CSR indicator matrix in the id space of ``predicted_ids``.

    ``Y`` is an indicator matrix, a list of label lists, or one label per
    sample (1-D). For a learner with named labels, labels that are not
    among its ``classes_`` (seen in a test fold only) get fresh ids after
    them: they count as true labels no ranking can hit.

    Raises
    ------
    DataFormatError
        If ``Y`` is not in one of those forms, or holds names for a learner
        of label ids.
    """
    rows = _label_rows(Y)
    if rows is None:
        return check_labels(Y)
    ids, offsets, n_labels = _row_ids(estimator, rows)
    rows = [ids[a:b] for a, b in zip(offsets[:-1], offsets[1:])]
    if named_labels(estimator):
        # A name given twice for one document is one label, as in fit.
        rows = [np.unique(row) for row in rows]
    return check_labels(rows, n_labels=n_labels)


def _label_rows(Y) -> list | None:
    """``Y`` as one list of labels per sample, or None for an indicator matrix.

    A 1-D array or a list of scalars (strings included) is one label per
    sample; a list of collections is a list of label sets.
    """
    if sp.issparse(Y) or (isinstance(Y, np.ndarray) and Y.ndim == 2):
        return None
    if isinstance(Y, np.ndarray):
        return [[label] for label in Y.tolist()]
    return [[row] if isinstance(row, str) or not isinstance(row, Iterable) else list(row)
            for row in Y]


def _row_ids(estimator, rows: list) -> tuple[np.ndarray, np.ndarray, int]:
    """Flat label ids of label rows, the rows' offsets into them, and the id-space width."""
    offsets = np.cumsum([0] + [len(row) for row in rows])
    values = np.asarray([label for row in rows for label in row])
    if not named_labels(estimator):
        if values.size and (values.dtype.kind not in "iu" or values.min() < 0):
            raise DataFormatError("Y: labels must be non-negative integer label ids")
        ids = values.astype(np.int64)
        return ids, offsets, int(ids.max(initial=-1)) + 1
    classes = np.asarray(estimator.classes_)
    ids = _positions(classes, values) if values.size else np.zeros(0, dtype=np.int64)
    unknown, fresh = np.unique(values[ids < 0], return_inverse=True)
    ids[ids < 0] = classes.shape[0] + fresh
    return ids, offsets, classes.shape[0] + unknown.shape[0]


def count_labels(estimator, Y) -> tuple[np.ndarray, int] | None:
    """Training rows per label id, and the number of training rows, of fitted targets.

    ``fit`` has checked ``Y`` already, so nothing is checked again here.
    Returns None when ``Y`` cannot be read as labels of the fitted learner
    (the fit itself accepted it, so this never fails a fit).
    """
    try:
        rows = _label_rows(Y)
        if rows is None:
            return np.asarray((Y != 0).sum(axis=0), dtype=np.int64).ravel(), Y.shape[0]
        ids, offsets, n_labels = _row_ids(estimator, rows)
    except (DataFormatError, TypeError, ValueError):
        return None
    # A label listed twice in a row counts once, as in an indicator matrix.
    row_of = np.repeat(np.arange(len(rows), dtype=np.int64), np.diff(offsets))
    pairs = np.unique(row_of * n_labels + ids)
    return np.bincount(pairs % max(n_labels, 1), minlength=n_labels).astype(np.int64), len(rows)


def records_label_counts(fit):
    """Wrap a learner's ``fit`` to record ``train_label_counts_`` and ``n_train_samples_``.

    After a successful fit, ``train_label_counts_`` holds the number of
    training rows of each label id (None if the targets are not labels the
    learner can rank, e.g. a classifier's names unknown to ``classes_``) and
    ``n_train_samples_`` the number of training rows, unlabelled ones
    included, as :func:`xmltree.metrics.inverse_propensity` counts them.
    Targets given as a one-shot iterator are read into a list first, so
    that both the fit and the count see them. A ``fit`` without a targets
    parameter (after ``self`` and ``X``) is returned as it is.
    """
    signature = inspect.signature(fit)
    if len(signature.parameters) < 3:
        return fit
    targets = list(signature.parameters)[2]

    @functools.wraps(fit)
    def fit_and_count(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        if isinstance(bound.arguments.get(targets), Iterator):
            bound.arguments[targets] = list(bound.arguments[targets])
        start = time.perf_counter()
        fitted = fit(*bound.args, **bound.kwargs)
        seconds = time.perf_counter() - start
        counted = count_labels(self, bound.arguments.get(targets, ()))
        self.train_label_counts_, self.n_train_samples_ = counted or (None, 0)
        self.training_ = training_facts(self, seconds)
        return fitted

    return fit_and_count


def training_facts(learner, seconds: float) -> dict:
    """What a fit saw and took, as JSON values (``training_``, stored by ``save``).

    Read by ``xmltree info``; nothing predicts with it.
    """
    from . import __version__

    counts = learner.train_label_counts_
    return {"n_samples": int(learner.n_train_samples_),
            "n_features": int(getattr(learner, "n_features_in_", 0)),
            "n_labels": None if counts is None else int(len(counts)),
            "fit_seconds": round(seconds, 3), "xmltree_version": __version__,
            "fitted_at": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds")}


def final_step(estimator, X):
    """The learner at the end of a scikit-learn ``Pipeline``, and ``X`` as it receives it.

    Any other estimator is returned as it is, with ``X`` unchanged.
    """
    steps = getattr(estimator, "steps", None)
    if steps is None:
        return estimator, X
    return steps[-1][1], estimator[:-1].transform(X)
