"""LOMtree: online logarithmic-time multiclass trees (Choromanska & Langford, 2015).

:class:`LOMTree` grows a binary tree online, one example at a time. Each
internal node trains a linear regressor (the shared SGD / NAG updates of
:mod:`xmltree._kernels._optim`, by default with the hinge-type margin steps of Vowpal
Wabbit's ``--log_multi``) to send an example left when the node's mean score
exceeds that of the example's class, which pushes towards splits that are
both balanced and pure. Leaves predict the most frequent class that reached
them. When the budget of internal nodes is spent, rarely used subtrees are
recycled by the *swap* procedure, controlled by the swap resistance.

The compiled kernels live in :mod:`xmltree.lomtree._lomtree`; this module validates
parameters and data, encodes class labels and handles model files.
"""

from __future__ import annotations

import logging
import math

import numpy as np

from .._base import (
    TopKEstimator,
    class_values,
    n_threads,
)
from .._params import check_param, check_params
from .._validation import check_features
from ..exceptions import DataFormatError, ModelFormatError, NotFittedError
from ._lomtree import (
    NODE_FIELDS,
    REGRESSOR_FIELDS,
    STATS_FIELDS,
    LOMTreeBuilder,
    builder_from_state,
)
from ._params import LOMTREE_PARAMS

__all__ = ["LOMTree", "to_multiclass"]

#: The prediction settings, checked again at every prediction.
_BEAM = tuple(param for param in LOMTREE_PARAMS if param.name in ("beam_width", "beam_scale"))

logger = logging.getLogger(__name__)



class LOMTree(TopKEstimator):
    """Online logarithmic-depth multiclass tree (LOMtree, Algorithm 1 of the paper).

    Parameters
    ----------
    max_internal_nodes : int, optional
        Budget T of internal nodes (each holds one linear regressor), below
        ``2**30``. Defaults to ``n_classes - 1``, enough for one leaf per
        class. Memory is reserved for T nodes but used as they grow.
    swap_resistance : float, default=4
        RS of Inequality 2: a leaf may recycle the smallest leaf of the tree
        when ``C_j - max_y l_j(y) > RS * (C_root + 1)``. Lemma 3 bounds the
        number of times a node is recycled by log2 of the stream length when
        RS >= 4. Below 1 the smallest leaf itself may qualify; it cannot
        recycle itself, so it waits (as a leaf below the root does).
    epochs : int, default=1
        Passes over the data made by :meth:`fit`, at most 10,000.
    optimizer : {"nag", "sgd"}, default="nag"
        Online update of the node regressors: normalized adaptive gradient
        (Ross et al., 2013) or plain stochastic gradient descent.
    learning_rate : float, default=0.5
        Step size of the node regressors, at most ``1e6``. Training that
        diverges to infinite or NaN scores stops with a ``ValueError``.
    loss : {"hinge", "logistic"}, default="hinge"
        Loss of the node regressors against their binary target. ``"hinge"``
        is what Vowpal Wabbit's ``--log_multi`` uses (its quantile loss on
        the score clipped to [-1, 1]): targets -1 / +1, no update once the
        score is beyond the target, and steps that never overshoot it.
        ``"logistic"``: cross-entropy of ``sigmoid(score)`` against 0 / 1.
    beam_width : int, default=8
        Nodes kept by the beam search of prediction. Going right at a node
        has probability ``sigmoid(beam_scale * score / margin)``, where the
        margin is half the gap between the node's mean training scores of
        the classes it sends right and of those it sends left; classes are
        ranked by their share in the mixture of the final beam's leaf
        histograms, each leaf weighted by its probability. 1 follows the
        single path of the score signs, as in the paper and Vowpal Wabbit; a
        prediction evaluates at most about ``beam_width * depth`` regressors.
        Training is not affected. At most ``2**16``.
    beam_scale : float, default=2.0
        The scale c of the beam's routing probabilities: larger values trust
        the sign of each node's score more. Dividing the score by the node's
        margin makes one c fit every node, loss and data set; 2 was chosen
        on held-out training rows (see the benchmarks). Prediction only; it
        can be changed on a fitted model.
    shuffle : bool, default=False
        Visit the examples of every :meth:`fit` epoch in a random order drawn
        from ``random_state``. :meth:`partial_fit` always keeps the order.
    n_jobs : int or None, default=1
        Threads used for prediction (training is sequential by nature), with
        joblib's convention: ``None`` means 1, ``-1`` all cores; at most
        ``2**16`` in absolute value, and at most twice the cores are started.
        Results do not depend on it.
    random_state : int or None, default=None
        Seed of the shuffling order; unused when ``shuffle`` is False.

    Attributes
    ----------
    classes_ : numpy.ndarray of int64
        The class labels, sorted.
    n_features_in_ : int
        Number of features seen by the first fit.
    max_internal_nodes_ : int
        The effective budget T.

    Notes
    -----
    Regressor weights are dense over the feature space, one row of
    ``n_features + 1`` float32 values (times three for the optimiser state)
    per internal node; rows are allocated lazily by the operating system, so
    memory grows with the nodes actually used.
    """

    _KIND = "lomtree"

    def __init__(self, max_internal_nodes: int | None = None, swap_resistance: float = 4.0,
                 epochs: int = 1, optimizer: str = "nag", learning_rate: float = 0.5,
                 loss: str = "hinge", beam_width: int = 8, beam_scale: float = 2.0,
                 shuffle: bool = False, n_jobs: int = 1, random_state: int | None = None):
        self.max_internal_nodes = max_internal_nodes
        self.swap_resistance = swap_resistance
        self.epochs = epochs
        self.optimizer = optimizer
        self.learning_rate = learning_rate
        self.loss = loss
        self.beam_width = beam_width
        self.beam_scale = beam_scale
        self.shuffle = shuffle
        self.n_jobs = n_jobs
        self.random_state = random_state

    # ------------------------------------------------------------------ validation

    def _validate_params(self) -> dict:
        """Check every hyper-parameter; return them.

        Raises
        ------
        ValueError
            Naming the first invalid hyper-parameter.
        """
        check_params(LOMTREE_PARAMS, self.get_params())
        return self.get_params()

    def _check_fitted(self) -> None:
        if getattr(self, "_builder", None) is None:
            raise NotFittedError("this LOMTree is not fitted yet; call fit or partial_fit first")

    def _validate_X(self, X):
        return check_features(X, n_features=self.n_features_in_)

    # ------------------------------------------------------------------ training

    def _start(self, X, classes: np.ndarray) -> None:
        """Create an empty tree for the checked ``classes`` and the width of ``X``."""
        self._validate_params()
        self.classes_ = classes
        self.n_features_in_ = int(X.shape[1])
        n_classes = self.classes_.shape[0]
        self.max_internal_nodes_ = int(self.max_internal_nodes or max(1, n_classes - 1))
        try:
            self._builder = LOMTreeBuilder(self.n_features_in_, n_classes,
                                           self.max_internal_nodes_, float(self.swap_resistance),
                                           self.optimizer, float(self.learning_rate), self.loss)
        except MemoryError as exc:
            raise ValueError(
                f"max_internal_nodes={self.max_internal_nodes_}: the node budget cannot be "
                f"reserved for {self.n_features_in_} features on this machine (it needs "
                f"{_budget_gib(self.max_internal_nodes_, self.n_features_in_):.0f} GiB of "
                "address space); give a smaller max_internal_nodes") from exc

    def _learn(self, X, encoded: np.ndarray, order: np.ndarray) -> None:
        """Train on rows ``order`` of checked ``X``; refuse a diverged tree.

        Raises
        ------
        ValueError
            If the regressors diverged to infinite or NaN scores; the model
            is then unfitted (its tree is lost).
        """
        self._builder.learn(X, encoded, order)
        if not self._builder.is_finite():
            self._builder = None
            raise ValueError(f"LOMTree training diverged (infinite or NaN regressor scores) "
                             f"with learning_rate={self.learning_rate}: lower learning_rate")

    def fit(self, X, y) -> LOMTree:
        """Grow a new tree on ``(X, y)`` with ``epochs`` passes.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Features.
        y : array-like of int, shape (n_samples,)
            One class label per sample (multiclass, not multi-label).

        Returns
        -------
        self
        """
        X = check_features(X)
        labels = _check_targets(y, X.shape[0])
        if labels.shape[0] == 0:
            raise DataFormatError("y: fit needs at least one sample")
        classes = np.unique(labels)
        encoded = _encode(classes, labels)
        self._start(X, classes)
        n = X.shape[0]
        rng = np.random.default_rng(self.random_state)
        # One epoch at a time: the visiting order is never epochs x n long.
        for _ in range(self.epochs):
            order = rng.permutation(n) if self.shuffle else np.arange(n, dtype=np.int64)
            self._learn(X, encoded, order)
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("LOMTree fitted: %s", self.tree_statistics())
        return self

    def partial_fit(self, X, y, classes=None) -> LOMTree:
        """Continue training on one batch, in order (one pass), keeping all node state.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Features of the batch.
        y : array-like of int, shape (n_samples,)
            Class labels of the batch.
        classes : array-like of int, optional
            All classes of the stream; required on the first call (it sets
            the default node budget), and must match ``classes_`` later.

        Returns
        -------
        self
        """
        first = getattr(self, "_builder", None) is None
        X = check_features(X) if first else self._validate_X(X)
        labels = _check_targets(y, X.shape[0])
        if first:
            if classes is None:
                raise ValueError("classes must be given on the first call to partial_fit")
            classes = _check_classes(classes)
            encoded = _encode(classes, labels)  # before _start: bad labels leave no tree
            self._start(X, classes)
        else:
            if classes is not None and not np.array_equal(_check_classes(classes),
                                                          self.classes_):
                raise ValueError("classes differ from those of the first partial_fit call")
            encoded = _encode(self.classes_, labels)
        self._learn(X, encoded, np.arange(X.shape[0], dtype=np.int64))
        return self

    # ------------------------------------------------------------------ prediction

    def predict(self, X) -> np.ndarray:
        """Return the most frequent class of the leaf each sample reaches.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        numpy.ndarray of int64, shape (n_samples,)
        """
        return self.predict_top_k(X, 1)[0][:, 0]

    def _predict_top_k(self, X, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The top-k classes of checked samples (see :meth:`predict_top_k`).

        With ``beam_width=1``, classes are ranked by how many training
        examples of each reached the sample's leaf, and the score is that
        count's share of the leaf. With a beam, the score is the class's
        share in the probability-weighted mixture of the histograms of the
        beam's leaves (a leaf no training example reached lends its nearest
        ancestor's). If fewer than k classes are listed, the list continues
        with the classes of the most probable leaf and of its ancestors
        (nearest first), then with any class never seen, all with score 0;
        past ``len(classes_)``, with label -1.
        """
        ids, scores = self._builder.predict_top_k(X, k, n_threads(self.n_jobs), *self._beam())
        n_classes = self.classes_.shape[0]
        for row in np.flatnonzero(ids[:, -1] < 0):  # only when some class was never seen
            listed = ids[row][ids[row] >= 0]
            unseen = np.setdiff1d(np.arange(n_classes), listed)[:k - listed.shape[0]]
            ids[row, listed.shape[0]:listed.shape[0] + unseen.shape[0]] = unseen
        return class_values(self.classes_, ids), scores

    def apply(self, X) -> np.ndarray:
        """Return the id of each sample's leaf (int32): the most probable one of the beam."""
        self._check_fitted()
        return self._builder.leaves(self._validate_X(X), *self._beam())

    def _beam(self) -> tuple[int, float]:
        """Return the checked ``(beam_width, beam_scale)``.

        Checked at every prediction too: both may be changed on a fitted model.
        """
        width, scale = (check_param(param, getattr(self, param.name)) for param in _BEAM)
        return int(width), float(scale)

    # ------------------------------------------------------------------ statistics

    def tree_statistics(self) -> dict:
        """Size and shape of the tree.

        Returns
        -------
        dict
            ``n_nodes``, ``n_internal_nodes``, ``n_leaves``, ``depth`` (of the
            deepest leaf), ``mean_leaf_depth`` (weighted by the training
            examples that reached each leaf), ``log2_classes``, ``n_swaps``,
            ``max_times_recycled`` and ``n_examples_seen``.
        """
        self._check_fitted()
        state = {**self._builder.node_arrays(), **self._builder.stats_arrays()}
        left, right = state["left"], state["right"]
        depth = _node_depths(left, right)
        leaves = left < 0
        reached = _node_reached(state)[leaves]
        mean_depth = (float(np.average(depth[leaves], weights=reached)) if reached.sum()
                      else float(depth[leaves].mean()))
        return {
            "n_nodes": int(left.shape[0]),
            "n_internal_nodes": int(self._builder.n_internal),
            "n_leaves": int(leaves.sum()),
            "depth": int(depth.max()),
            "mean_leaf_depth": mean_depth,
            "log2_classes": math.log2(self.classes_.shape[0]),
            "n_swaps": int(self._builder.n_swaps),
            "max_times_recycled": int(state["n_recycled"].max()),
            "n_examples_seen": int(self._builder.n_examples_seen),
        }

    @property
    def depth_(self) -> int:
        """Depth of the deepest leaf (the root alone has depth 0)."""
        return self.tree_statistics()["depth"]

    @property
    def node_depth_(self) -> np.ndarray:
        """Depth of every node (int64, root 0); ``node_depth_[apply(X)]`` gives path lengths."""
        self._check_fitted()
        nodes = self._builder.node_arrays()
        return _node_depths(nodes["left"], nodes["right"])

    @property
    def node_recycle_counts_(self) -> np.ndarray:
        """How many times each node was recycled by a swap (int32 per node)."""
        self._check_fitted()
        return self._builder.node_arrays()["n_recycled"]

    # ------------------------------------------------------------------ persistence

    def _get_state(self) -> tuple[dict, dict]:
        """Return ``(params, arrays)`` describing the model, including optimiser state."""
        self._check_fitted()
        params = self._json_params()
        params.update(n_features=int(self.n_features_in_),
                      n_classes=int(self.classes_.shape[0]),
                      effective_max_internal_nodes=int(self.max_internal_nodes_),
                      n_swaps=int(self._builder.n_swaps),
                      n_examples_seen=int(self._builder.n_examples_seen))
        arrays = self._builder.get_state()
        arrays["classes"] = self.classes_.astype(np.int64)
        return params, arrays

    @classmethod
    def _from_state(cls, params: dict, arrays: dict) -> LOMTree:
        """Rebuild a model, checking every array before the kernels see it.

        Raises
        ------
        ModelFormatError
            On missing, mistyped, mis-shaped, out-of-range or structurally
            inconsistent content.
        """
        try:
            # Files written before these options existed: logistic regressors, one path.
            params = {"loss": "logistic", "beam_width": 1, "beam_scale": cls().beam_scale,
                      **params}
            model = cls(**{name: params[name] for name in cls._param_names()})
            model._validate_params()
            classes = _check_classes(_typed(arrays, "classes", np.int64, 1))
            sizes = {name: _count(params, name) for name in
                     ("n_features", "n_classes", "effective_max_internal_nodes", "n_swaps",
                      "n_examples_seen")}
            if classes.shape[0] != sizes["n_classes"]:
                raise ValueError("classes disagree with n_classes")
            checked = _check_tree_arrays(arrays, sizes)
            builder = _builder_from_state(
                {"n_features": sizes["n_features"], "n_classes": sizes["n_classes"],
                 "max_internal_nodes": sizes["effective_max_internal_nodes"],
                 "swap_resistance": float(model.swap_resistance),
                 "optimizer": model.optimizer, "learning_rate": float(model.learning_rate),
                 "loss": model.loss,
                 "n_swaps": sizes["n_swaps"], "n_examples_seen": sizes["n_examples_seen"]},
                checked)
        except ModelFormatError:
            raise
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelFormatError(f"invalid lomtree model ({exc})") from exc
        model.classes_ = classes
        model.n_features_in_ = sizes["n_features"]
        model.max_internal_nodes_ = sizes["effective_max_internal_nodes"]
        model._builder = builder
        return model


# ---------------------------------------------------------------------- helpers


def to_multiclass(Y, *, rule: str = "single", label_counts=None):
    """Turn label sets into one class per row, for training :class:`LOMTree`.

    Parameters
    ----------
    Y : array-like, sparse matrix or iterable of label lists
        Label sets, in any form accepted by :func:`xmltree._validation.check_labels`.
    rule : {"single", "most_frequent"}, default="single"
        ``"single"``: every row must have exactly one label. ``"most_frequent"``:
        keep the label of each row with the largest ``label_counts`` (ties go
        to the smaller id) and drop rows without labels.
    label_counts : array-like of shape (n_labels,), optional
        Label frequencies for ``"most_frequent"``, e.g. from the training set
        when converting a test set; defaults to the column sums of ``Y``.

    Returns
    -------
    y : numpy.ndarray of int64
        One label per kept row.
    rows : numpy.ndarray of int64
        Indices of the kept rows (all rows for ``"single"``).

    Raises
    ------
    DataFormatError
        With ``"single"``, on the first row without exactly one label.
    """
    from .._validation import check_labels

    Y = check_labels(Y)
    sizes = np.diff(Y.indptr)
    if rule == "single":
        bad = np.flatnonzero(sizes != 1)
        if bad.size:
            raise DataFormatError(f"Y: row {bad[0]} has {sizes[bad[0]]} labels; LOMTree needs "
                                  "exactly one per row (use rule='most_frequent')")
        return Y.indices.astype(np.int64), np.arange(Y.shape[0], dtype=np.int64)
    if rule != "most_frequent":
        raise ValueError(f"rule must be 'single' or 'most_frequent', got {rule!r}")
    counts = (np.asarray(Y.sum(axis=0)).ravel() if label_counts is None
              else np.asarray(label_counts, dtype=np.float64))
    if counts.shape != (Y.shape[1],):
        raise ValueError(f"label_counts must have one entry per label ({Y.shape[1]})")
    rows = np.flatnonzero(sizes > 0)
    y = np.empty(rows.shape[0], dtype=np.int64)
    for position, row in enumerate(rows):
        labels = Y.indices[Y.indptr[row]:Y.indptr[row + 1]]  # sorted: argmax keeps the smallest
        y[position] = labels[np.argmax(counts[labels])]
    return y, rows.astype(np.int64)


def _check_targets(y, n_samples: int | None) -> np.ndarray:
    """Return ``y`` as a 1-D int64 array of class labels, or raise DataFormatError."""
    if hasattr(y, "toarray") or hasattr(y, "tocsr"):
        raise DataFormatError("y: got a sparse matrix; LOMTree is multiclass and needs one "
                              "integer label per sample, not multi-label indicators")
    try:
        labels = np.asarray(y)
    except ValueError as exc:  # ragged lists of label lists
        raise DataFormatError("y: LOMTree is multiclass and needs one integer label per "
                              "sample; got multi-label input") from exc
    if labels.ndim != 1 or labels.dtype == object:
        raise DataFormatError(f"y: LOMTree is multiclass and needs a 1-D array of integer "
                              f"labels; got a {labels.ndim}-D {labels.dtype} array "
                              f"(multi-label input is not supported)")
    if n_samples is not None and labels.shape[0] != n_samples:
        raise DataFormatError(f"y: has {labels.shape[0]} labels but X has {n_samples} rows")
    if labels.dtype.kind == "f":
        if not np.all(np.isfinite(labels)) or np.any(labels != np.round(labels)):
            raise DataFormatError("y: class labels must be integers")
    elif labels.dtype.kind not in "iub":
        raise DataFormatError(f"y: class labels must be integers, got dtype {labels.dtype}")
    # Converted to int64 below, which must not wrap (uint64 2**63 would become negative).
    if labels.dtype.kind in "uf" and labels.size and np.abs(labels).max() >= 2.0**63:
        raise DataFormatError(f"y: class label {np.abs(labels).max()} is beyond the int64 range")
    return labels.astype(np.int64)


def _encode(classes: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Map class labels to ids ``0 .. n_classes - 1``; unknown labels are an error."""
    ids = np.minimum(np.searchsorted(classes, labels), classes.shape[0] - 1)
    unknown = classes[ids] != labels
    if np.any(unknown):
        raise DataFormatError(f"y: label {labels[unknown][0]} is not one of the classes")
    return ids.astype(np.int32)


def _check_classes(classes) -> np.ndarray:
    """Return the sorted unique integer class labels; at least one is needed."""
    values = _check_targets(classes, None)
    unique = np.unique(values)
    if unique.shape[0] == 0:
        raise ValueError("classes must not be empty")
    if unique.shape[0] != values.shape[0]:
        raise ValueError("classes must not contain duplicates")
    return unique


def _node_depths(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Depth of every node of a tree given by child arrays (root 0 at depth 0)."""
    depth = np.zeros(left.shape[0], dtype=np.int64)
    frontier = np.array([0])
    level = 0
    while frontier.size:
        depth[frontier] = level
        internal = frontier[left[frontier] >= 0]
        frontier = np.concatenate((left[internal], right[internal]))
        level += 1
    return depth


def _node_reached(state: dict) -> np.ndarray:
    """Examples that reached each node since it was last (re)created."""
    cumulative = np.concatenate(([0], np.cumsum(state["stats_reached"])))
    ptr = state["stats_ptr"]
    return cumulative[ptr[1:]] - cumulative[ptr[:-1]]


def _budget_gib(n_nodes: int, n_features: int) -> float:
    """GiB of address space reserved for the regressors of `n_nodes` internal nodes."""
    return 3 * 8 * n_nodes * (n_features + 1) / 2**30


def _builder_from_state(params: dict, arrays: dict):
    """:func:`builder_from_state`, with a budget this machine cannot reserve a format error."""
    try:
        return builder_from_state(params, arrays)
    except MemoryError as exc:
        # The budget is a count the file's arrays cannot confirm (a tree may
        # use fewer nodes); it is believed only as far as it can be reserved.
        raise ModelFormatError(
            f"invalid lomtree model (its node budget of {params['max_internal_nodes']} over "
            f"{params['n_features']} features, "
            f"{_budget_gib(params['max_internal_nodes'], params['n_features']):.0f} GiB, "
            "cannot be reserved)") from exc


def _typed(arrays: dict, name: str, dtype, ndim: int) -> np.ndarray:
    """Fetch ``arrays[name]`` and check its dtype and number of dimensions."""
    array = arrays[name]
    if not isinstance(array, np.ndarray) or array.dtype != dtype or array.ndim != ndim:
        raise ValueError(f"array {name!r} must be a {ndim}-D {np.dtype(dtype)} array")
    return np.ascontiguousarray(array)


def _count(params: dict, name: str) -> int:
    """Fetch a non-negative integer parameter that fits the kernels' int32 ids."""
    value = params[name]
    limit = 2**62 if name in ("n_swaps", "n_examples_seen") else 2**30
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < limit:
        raise ValueError(f"parameter {name!r} must be an integer in [0, {limit})")
    return value


def _check_tree_arrays(arrays: dict, sizes: dict) -> dict:
    """Check every tree, statistics and regressor array; return them typed.

    The kernels trust these arrays completely (no bounds checks), so the tree
    must be one binary tree rooted at node 0 in which every node is reached
    exactly once, and every index must be in range.
    """
    checked = {name: _typed(arrays, name, dtype, 1) for name, dtype in NODE_FIELDS}
    checked["stats_ptr"] = _typed(arrays, "stats_ptr", np.int64, 1)
    checked.update({name: _typed(arrays, name, dtype, 1) for name, dtype in STATS_FIELDS})
    for name, dtype in REGRESSOR_FIELDS:
        checked[name] = _typed(arrays, name, dtype, 2 if name in ("weights", "scale",
                                                                 "sum_sq_grad") else 1)
    n_nodes = checked["parent"].shape[0]
    n_internal = checked["weights"].shape[0]
    if n_internal > sizes["effective_max_internal_nodes"] or n_nodes != 2 * n_internal + 1:
        raise ValueError("node count disagrees with the number of regressors")
    if any(checked[name].shape[0] != n_nodes for name, _ in NODE_FIELDS):
        raise ValueError("node arrays have different lengths")
    for name in ("weights", "scale", "sum_sq_grad"):
        if checked[name].shape != (n_internal, sizes["n_features"] + 1):
            raise ValueError(f"{name} has the wrong shape")
    for name in ("regressor_norm", "regressor_n_updates"):
        if checked[name].shape != (n_internal,):
            raise ValueError(f"{name} has the wrong shape")
    _check_structure(checked, n_internal)
    _check_statistics(checked, sizes["n_classes"])
    for name in ("weights", "scale", "sum_sq_grad", "regressor_norm", "score_sum"):
        if not np.all(np.isfinite(checked[name])):
            raise ValueError(f"{name} has non-finite values")
    for name in ("scale", "sum_sq_grad", "regressor_norm", "regressor_n_updates",
                 "min_count", "n_recycled"):
        if np.any(checked[name] < 0):
            raise ValueError(f"{name} has negative values")
    return checked


def _check_structure(checked: dict, n_internal: int) -> None:
    """Check that parent/left/right/regressor describe one binary tree rooted at 0."""
    parent, left, right = checked["parent"], checked["left"], checked["right"]
    regressor = checked["regressor"]
    n_nodes = parent.shape[0]
    for name, values in (("parent", parent), ("left", left), ("right", right)):
        if np.any(values < -1) or np.any(values >= n_nodes):
            raise ValueError(f"{name} holds an out-of-range node id")
    internal = left >= 0
    if np.any(internal != (right >= 0)) or np.any(internal != (regressor >= 0)):
        raise ValueError("a node has one child, or a regressor without children")
    if not np.array_equal(np.sort(regressor[internal]), np.arange(n_internal)):
        raise ValueError("internal nodes must own distinct regressor slots")
    if parent[0] != -1 or np.any(parent[1:] < 0):
        raise ValueError("node 0 must be the only root")
    visited = np.zeros(n_nodes, dtype=bool)
    frontier = np.array([0])
    while frontier.size:
        if np.any(visited[frontier]) or np.unique(frontier).size != frontier.size:
            raise ValueError("the nodes do not form a tree (a node is reached twice)")
        visited[frontier] = True
        inner = frontier[internal[frontier]]
        for children in (left[inner], right[inner]):
            if np.any(parent[children] != inner):
                raise ValueError("child and parent links disagree")
        frontier = np.concatenate((left[inner], right[inner]))
    if not visited.all():
        raise ValueError("some nodes are not reachable from the root")
    inner = np.flatnonzero(internal)
    counts = checked["min_count"]
    if np.any(counts[inner] != np.minimum(counts[left[inner]], counts[right[inner]])):
        raise ValueError("min_count of an internal node is not the min of its children")


def _check_statistics(checked: dict, n_classes: int) -> None:
    """Check the per-(node, class) statistics and their agreement with node totals."""
    ptr = checked["stats_ptr"]
    labels = checked["stats_label"]
    n_entries = labels.shape[0]
    if ptr.shape[0] != checked["parent"].shape[0] + 1 or ptr[0] != 0 or ptr[-1] != n_entries:
        raise ValueError("stats_ptr does not match the statistics arrays")
    if np.any(np.diff(ptr) < 0):
        raise ValueError("stats_ptr is not non-decreasing")
    if any(checked[name].shape[0] != n_entries for name, _ in STATS_FIELDS):
        raise ValueError("statistics arrays have different lengths")
    if n_entries and (labels.min() < 0 or labels.max() >= n_classes):
        raise ValueError(f"a class id is out of range [0, {n_classes})")
    same_node = np.repeat(np.arange(ptr.shape[0] - 1), np.diff(ptr))
    if np.any((same_node[1:] == same_node[:-1]) & (labels[1:] <= labels[:-1])):
        raise ValueError("class statistics of a node are not sorted by class id")
    reached, trained = checked["stats_reached"], checked["stats_trained"]
    if np.any(reached < 1) or np.any(trained < 0) or np.any(trained > reached):
        raise ValueError("class counts are inconsistent")
    if not np.all(np.isfinite(checked["stats_score_sum"])):
        raise ValueError("stats_score_sum has non-finite values")
    cumulative = np.concatenate(([0], np.cumsum(trained)))
    if not np.array_equal(cumulative[ptr[1:]] - cumulative[ptr[:-1]], checked["n_trained"]):
        raise ValueError("n_trained disagrees with the class statistics")
