"""The LdSM estimator: an ensemble of logarithmic-depth multi-leaf trees.

LdSM (Majzoubi & Choromanska, AISTATS 2020) grows M-ary trees whose nodes
hold one linear regressor per child. Training (``xmltree._ldsm.build_tree``)
pushes each node's regressors to split the labels of the node into balanced,
pure children; at prediction an example may descend to several children, and
its scores are the average of the normalised label histograms of the leaves
it reaches, averaged again over the trees of the ensemble.

This module is the thin Python layer: hyper-parameter and input validation,
seeding, parallel training with joblib threads (the compiled builder releases
the GIL), and safe persistence. Prediction runs in :class:`xmltree._tree.Forest`.
"""

from __future__ import annotations

import logging
import threading

import joblib
import numpy as np
import scipy.sparse as sp
from tqdm.auto import tqdm

from ._base import Estimator, check_choice, check_int, check_real, check_seed, is_int, n_threads
from ._tree import TREE_ARRAYS, Forest
from ._validation import check_features, check_labels
from .exceptions import DataFormatError, ModelFormatError, NotFittedError
from .rerank import STATE_PREFIX as RERANK_PREFIX
from .rerank import Reranker

__all__ = ["LdSM", "NotFittedError"]

logger = logging.getLogger(__name__)

_OPTIMIZERS = ("nag", "sgd")
_ROUTINGS = ("margin", "sigmoid")
#: The subset search at each node enumerates 2^M - 1 directions.
_MAX_ARITY = 8


class LdSM(Estimator):
    """Ensemble of LdSM trees for extreme multi-label classification.

    Parameters
    ----------
    n_trees : int, default=10
        Number of trees; they differ only by their random seed.
    arity : int, default=2
        Children per internal node (M), in [2, 8]: node training searches
        all 2^M - 1 non-empty subsets of children for each example.
    max_nodes : int, default=1000
        Largest number of nodes per tree, >= 1.
    epochs : int, default=20
        Passes over a node's examples when training its regressors, >= 1.
    lambda1 : float, default=2.0
        Weight of the purity term of the node objective, >= 0.
    lambda2 : float, default=1.0
        Weight of the term keeping the children's shares summing to 1, >= 0.
    optimizer : {"nag", "sgd"}, default="nag"
        Regressor update: normalized adaptive gradient (Ross et al., 2013)
        or plain stochastic gradient descent.
    learning_rate : float, default=0.1
        Step size of the optimizer, > 0.
    routing : {"margin", "sigmoid"}, default="margin"
        How an example chooses children: raw score >= 0.5 (the authors'
        rule), or sigmoid(score) >= 0.5. In both cases an example that
        qualifies for no child goes to the best-scoring one.
    weight_threshold : float or None, default=0.05
        Trained weights with a smaller magnitude are dropped, keeping nodes
        sparse; ``None`` uses ``1 / n_features`` as the authors do. 0.05
        stores 1.5-2.5x fewer weights than the authors' choice on Bibtex and
        Delicious at equal or better precision (``benchmarks/README.md``).
    random_state : int or None, default=None
        Seed of the whole ensemble. Each tree gets its own 64-bit seed from
        ``numpy.random.SeedSequence(random_state)``, so a given seed gives
        bit-identical models whatever ``n_jobs`` is. ``None`` draws fresh
        entropy.
    rerank : bool, default=False
        Also fit a tail-label re-ranker (:class:`xmltree.rerank.Reranker`,
        PfastreXML-style) on the training data, for ``predict(..., rerank=True)``.
        Its blend settings can be changed on ``reranker_`` after fitting.
    n_jobs : int or None, default=-1
        Threads for training (one tree per thread) and prediction (examples
        split across threads), with joblib's convention: ``None`` means 1,
        ``-1`` all cores, ``-2`` all but one, and so on. Results do not
        depend on it.
    verbose : bool, default=False
        Show a progress bar of trees (and nodes expanded) while fitting.

    Attributes
    ----------
    n_features_ : int
        Number of features seen by :meth:`fit`.
    n_labels_ : int
        Number of labels seen by :meth:`fit`.
    trees_ : list of dict
        One flat tree per member, as read-only NumPy arrays (see
        ``xmltree._tree.TREE_ARRAYS``).
    n_nodes_, n_leaves_, depth_ : numpy.ndarray of int, shape (n_trees,)
        Size, leaf count and maximum depth of each tree.
    reranker_ : xmltree.rerank.Reranker or None
        The tail-label re-ranker when fitted with ``rerank=True``.

    Examples
    --------
    >>> from xmltree.ldsm import LdSM
    >>> model = LdSM(n_trees=5, random_state=0).fit(X_train, Y_train)  # doctest: +SKIP
    >>> labels, scores = model.predict(X_test, k=5)  # doctest: +SKIP
    """

    _KIND = "ldsm"

    def __init__(self, n_trees=10, arity=2, max_nodes=1000, epochs=20, lambda1=2.0,
                 lambda2=1.0, optimizer="nag", learning_rate=0.1, routing="margin",
                 weight_threshold=0.05, rerank=False, random_state=None, n_jobs=-1,
                 verbose=False):
        self.n_trees = n_trees
        self.arity = arity
        self.max_nodes = max_nodes
        self.epochs = epochs
        self.lambda1 = lambda1
        self.lambda2 = lambda2
        self.optimizer = optimizer
        self.learning_rate = learning_rate
        self.routing = routing
        self.weight_threshold = weight_threshold
        self.rerank = rerank
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _validate_params(self) -> dict:
        """Check every hyper-parameter; return them with defaults resolved.

        Raises
        ------
        ValueError
            Naming the parameter, its value and the allowed range.
        """
        params = self.get_params()
        check_int("n_trees", params["n_trees"], 1)
        check_int("arity", params["arity"], 2, _MAX_ARITY)
        check_int("max_nodes", params["max_nodes"], 1)
        check_int("epochs", params["epochs"], 1)
        check_real("lambda1", params["lambda1"], 0.0, strict=False)
        check_real("lambda2", params["lambda2"], 0.0, strict=False)
        check_real("learning_rate", params["learning_rate"], 0.0, strict=True)
        if params["weight_threshold"] is not None:
            check_real("weight_threshold", params["weight_threshold"], 0.0, strict=False)
        check_choice("optimizer", params["optimizer"], _OPTIMIZERS)
        check_choice("routing", params["routing"], _ROUTINGS)
        check_choice("rerank", params["rerank"], (True, False))
        check_seed(params["random_state"])
        n_threads(params["n_jobs"])
        return params

    # ------------------------------------------------------------------
    # Training
    # ------------------------------------------------------------------

    def fit(self, X, Y) -> LdSM:
        """Grow the ensemble.

        Parameters
        ----------
        X : array-like or scipy sparse matrix of shape (n_samples, n_features)
            Training features.
        Y : array-like, sparse matrix or list of label lists
            Binary indicator matrix of shape (n_samples, n_labels), or one
            list of label ids per sample. Samples without any label carry no
            training signal and are dropped (logged at INFO level).

        Returns
        -------
        LdSM
            ``self``, fitted.

        Raises
        ------
        ValueError
            On an invalid hyper-parameter.
        DataFormatError
            On malformed inputs, or when no sample has a label.
        """
        params = self._validate_params()
        X = check_features(X)
        Y = check_labels(Y, n_samples=X.shape[0])
        if X.shape[1] == 0:
            raise DataFormatError("X: has no features")
        X, Y = _drop_unlabelled(X, Y)
        if params["weight_threshold"] is None:
            params["weight_threshold"] = 1.0 / X.shape[1]
        seeds = np.random.SeedSequence(params["random_state"]).generate_state(
            params["n_trees"], dtype=np.uint64
        )
        trees = _build_trees(X, Y, params, seeds)
        self._set_trees(trees, X.shape[1], Y.shape[1])
        if params["rerank"]:
            self.reranker_ = Reranker().fit(X, Y)
        return self

    def _set_trees(self, trees: list[dict], n_features: int, n_labels: int) -> None:
        """Validate trees (ModelFormatError) and install them as the fitted state."""
        forest = Forest(trees, arity=self.arity, n_features=n_features,
                        n_labels=n_labels, routing=self.routing)
        self._forest = forest
        self.n_features_ = n_features
        self.n_labels_ = n_labels
        self.trees_ = [_read_only(tree) for tree in trees]
        self.n_nodes_ = np.array([t["first_child"].shape[0] for t in trees], dtype=np.int64)
        self.n_leaves_ = np.array([np.sum(t["first_child"] < 0) for t in trees], dtype=np.int64)
        self.depth_ = np.array([t["depth"].max() for t in trees], dtype=np.int64)
        self.reranker_ = None

    # ------------------------------------------------------------------
    # Prediction and introspection
    # ------------------------------------------------------------------

    def predict(self, X, k: int = 5, rerank: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Return the ``k`` best labels of each sample.

        Parameters
        ----------
        X : array-like or scipy sparse matrix of shape (n_samples, n_features)
            Samples. Fewer columns than seen in :meth:`fit` are treated as
            missing trailing features; more columns is an error.
        k : int, default=5
            Labels per sample, >= 1.
        rerank : bool, default=False
            Re-rank the ensemble's ``reranker_.n_candidates`` best labels with
            the tail-label re-ranker fitted with ``rerank=True``, which favours
            rare labels (higher PSP@k at a small cost in P@k).

        Returns
        -------
        labels : numpy.ndarray of int32, shape (n_samples, k)
            Best first; equal scores are ordered by increasing label id. A
            sample whose reached leaves hold fewer than ``k`` labels is
            padded with label ``-1`` and score ``0``.
        scores : numpy.ndarray of float32, shape (n_samples, k)
            Ensemble-averaged histogram scores, in [0, 1].

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        ValueError
            If ``k`` is not an integer >= 1, or ``rerank`` is asked of a model
            fitted without a re-ranker.
        DataFormatError
            If ``X`` is malformed or wider than the training data.
        """
        forest = self._fitted_forest()
        if not is_int(k) or k < 1:
            raise ValueError(f"k must be an integer >= 1, got {k!r}")
        if not rerank:
            return forest.predict_top_k(X, int(k), n_threads(self.n_jobs))
        if self.reranker_ is None:
            raise ValueError("this model has no re-ranker; fit it with LdSM(rerank=True)")
        X = check_features(X, n_features=self.n_features_)
        n_candidates = max(int(k), self.reranker_.n_candidates)
        labels, scores = forest.predict_top_k(X, n_candidates, n_threads(self.n_jobs))
        labels, scores = self.reranker_.rerank_predictions(X, labels, scores, int(k))
        return labels, scores.astype(np.float32)

    def predict_scores(self, X) -> sp.csr_matrix:
        """Return all non-zero ensemble scores.

        Parameters
        ----------
        X : array-like or scipy sparse matrix of shape (n_samples, n_features)
            Samples, as in :meth:`predict`.

        Returns
        -------
        scipy.sparse.csr_matrix of float32, shape (n_samples, n_labels_)
            Each row sums to 1 up to rounding: every sample reaches at least
            one leaf of every tree, and leaf histograms are normalised.
        """
        return self._fitted_forest().predict_scores(X, n_threads(self.n_jobs))

    def leaves_reached(self, X) -> np.ndarray:
        """Count the leaves each sample reaches in each tree.

        Parameters
        ----------
        X : array-like or scipy sparse matrix of shape (n_samples, n_features)
            Samples, as in :meth:`predict`.

        Returns
        -------
        numpy.ndarray of int32, shape (n_samples, n_trees)
            All entries are >= 1; values above 1 come from multi-way routing.
        """
        return self._fitted_forest().leaves_reached(X, n_threads(self.n_jobs))

    def objective_trace(self, tree: int, node: int) -> np.ndarray:
        """Return the mean node objective J of each training epoch.

        Parameters
        ----------
        tree : int
            Tree index in ``[0, n_trees)``.
        node : int
            Node id in ``[0, n_nodes_[tree])``.

        Returns
        -------
        numpy.ndarray of float32, shape (epochs,) or (0,)
            Empty for a node that was never trained (a leaf).
        """
        self._fitted_forest()
        if not is_int(tree) or not 0 <= tree < len(self.trees_):
            raise ValueError(f"tree must be in [0, {len(self.trees_)}), got {tree!r}")
        arrays = self.trees_[tree]
        n_nodes = arrays["first_child"].shape[0]
        if not is_int(node) or not 0 <= node < n_nodes:
            raise ValueError(f"node must be in [0, {n_nodes}), got {node!r}")
        indptr = arrays["trace_indptr"]
        return arrays["trace_values"][indptr[node]:indptr[node + 1]].copy()

    def _fitted_forest(self) -> Forest:
        forest = getattr(self, "_forest", None)
        if forest is None:
            raise NotFittedError(
                "this LdSM instance is not fitted yet; call fit(X, Y) or LdSM.load(path) first"
            )
        return forest

    # ------------------------------------------------------------------
    # Persistence
    # ------------------------------------------------------------------

    def _get_state(self) -> tuple[dict, dict]:
        """Return the JSON parameters and numeric arrays that define the model."""
        self._fitted_forest()
        params = {
            "hyper_parameters": self._json_params(),
            "n_features": int(self.n_features_),
            "n_labels": int(self.n_labels_),
            "n_trees": len(self.trees_),
        }
        arrays = {
            f"tree{t}/{name}": tree[name] for t, tree in enumerate(self.trees_)
            for name in TREE_ARRAYS
        }
        if self.reranker_ is not None:
            params["reranker"], reranker_arrays = self.reranker_._get_state()
            arrays.update(reranker_arrays)
        return params, arrays

    @classmethod
    def _from_state(cls, params: dict, arrays: dict) -> LdSM:
        """Rebuild a fitted model from :meth:`_get_state` output.

        Everything is checked before it can reach compiled code.

        Raises
        ------
        ModelFormatError
            On missing or ill-typed parameters, missing or unexpected arrays,
            or trees that break the flat-tree contract.
        """
        if not isinstance(params, dict) or not isinstance(params.get("hyper_parameters"), dict):
            raise ModelFormatError("LdSM model: missing hyper-parameters")
        hyper = params["hyper_parameters"]
        unknown = set(hyper) - set(cls._param_names())
        if unknown:
            raise ModelFormatError(f"LdSM model: unknown hyper-parameters {sorted(unknown)}")
        model = cls(**hyper)
        try:
            model._validate_params()
        except ValueError as exc:
            raise ModelFormatError(f"LdSM model: {exc}") from None
        sizes = {}
        for name in ("n_features", "n_labels", "n_trees"):
            value = params.get(name)
            if not is_int(value) or not 1 <= value < 2**31:
                raise ModelFormatError(f"LdSM model: {name} must be a positive integer")
            sizes[name] = int(value)
        expected = {f"tree{t}/{name}" for t in range(sizes["n_trees"]) for name in TREE_ARRAYS}
        tree_arrays = {name for name in arrays if not name.startswith(RERANK_PREFIX)}
        if tree_arrays != expected:
            missing, extra = sorted(expected - tree_arrays), sorted(tree_arrays - expected)
            raise ModelFormatError(
                f"LdSM model: arrays do not match (missing {missing[:3]}, unexpected {extra[:3]})"
            )
        trees = [
            {name: arrays[f"tree{t}/{name}"] for name in TREE_ARRAYS}
            for t in range(sizes["n_trees"])
        ]
        model._set_trees(trees, sizes["n_features"], sizes["n_labels"])
        if "reranker" in params:
            model.reranker_ = Reranker._from_state(params["reranker"], arrays)
            if model.reranker_.scorer_.n_labels_ != sizes["n_labels"]:
                raise ModelFormatError("LdSM model: the re-ranker's label count differs")
        return model


# ----------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------

def _drop_unlabelled(X: sp.csr_matrix, Y: sp.csr_matrix):
    """Remove samples without labels; refuse data where none remain."""
    labelled = np.diff(Y.indptr) > 0
    n_dropped = int(labelled.size - labelled.sum())
    if n_dropped == labelled.size:
        raise DataFormatError("Y: no training sample has a label")
    if n_dropped:
        logger.info("dropping %d of %d training samples that have no label",
                    n_dropped, labelled.size)
        X, Y = _select_rows(X, labelled), _select_rows(Y, labelled)
    return X, Y


def _select_rows(matrix: sp.csr_matrix, mask: np.ndarray) -> sp.csr_matrix:
    """Keep the masked rows, restoring the index dtypes scipy may shrink."""
    selected = matrix[mask]
    selected.indices = selected.indices.astype(np.int32, copy=False)
    selected.indptr = selected.indptr.astype(np.int64, copy=False)
    return selected


def _read_only(tree: dict) -> dict:
    """Return read-only views of a tree's arrays."""
    views = {}
    for name in TREE_ARRAYS:
        view = tree[name].view()
        view.flags.writeable = False
        views[name] = view
    return views


class _Progress:
    """Thread-safe tqdm bar counting finished trees and expanded nodes."""

    def __init__(self, n_trees: int):
        self._bar = tqdm(total=n_trees, desc="LdSM trees", unit="tree")
        self._lock = threading.Lock()
        self._nodes: dict[int, int] = {}

    def node_callback(self, tree: int):
        """Return the ``progress`` callback for one tree's builder."""
        def update(n_expanded: int) -> None:
            with self._lock:
                self._nodes[tree] = int(n_expanded)
                self._bar.set_postfix(nodes=sum(self._nodes.values()), refresh=False)
        return update

    def tree_done(self) -> None:
        with self._lock:
            self._bar.update(1)

    def close(self) -> None:
        self._bar.close()


def _build_trees(X: sp.csr_matrix, Y: sp.csr_matrix, params: dict,
                 seeds: np.ndarray) -> list[dict]:
    """Train one tree per seed with joblib threads, sharing X and Y."""
    # Imported here so that prediction works with a build lacking the trainer.
    from ._ldsm import build_tree

    settings = {name: params[name] for name in (
        "arity", "max_nodes", "epochs", "lambda1", "lambda2", "optimizer",
        "learning_rate", "routing", "weight_threshold")}
    progress = _Progress(len(seeds)) if params["verbose"] else None
    jobs = (
        joblib.delayed(build_tree)(
            X, Y, **settings, seed=int(seed),
            progress=None if progress is None else progress.node_callback(t),
        )
        for t, seed in enumerate(seeds)
    )
    trees = []
    try:
        runner = joblib.Parallel(n_jobs=n_threads(params["n_jobs"]), prefer="threads",
                                 return_as="generator")
        for tree in runner(jobs):
            trees.append(tree)
            if progress is not None:
                progress.tree_done()
    finally:
        if progress is not None:
            progress.close()
    logger.info("trained %d LdSM trees", len(trees))
    return trees
