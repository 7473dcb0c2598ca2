"""The LdSM estimator: an ensemble of logarithmic-depth multi-leaf trees.

LdSM (Majzoubi & Choromanska, AISTATS 2020) grows M-ary trees whose nodes
hold one linear regressor per child. Training (``xmltree._ldsm.build_tree``)
pushes each node's regressors to split the labels of the node into balanced,
pure children; at prediction an example may descend to several children, and
its histogram scores are the average (or, as an option, the sum) of the label
histograms of the leaves it reaches, averaged again over the trees of the
ensemble.

Beyond the paper, and by default: features are scaled at ``fit`` (tf-idf for
counts, unit rows otherwise; ``xmltree._scaling``), and *linear leaves*
(``xmltree._linear_leaves``) re-score an example's best histogram labels
with per-label linear classifiers trained on the labels' tree neighbourhoods,
blended with the histograms. ``LdSM(leaf_model="histogram",
leaf_scores="distribution", feature_scaling=None, epochs=20)`` is the paper's
LdSM.

This module is the thin Python layer: hyper-parameter and input validation,
seeding, parallel training with joblib threads (the compiled builder releases
the GIL), and safe persistence. Prediction runs in :class:`xmltree._tree.Forest`.
"""

from __future__ import annotations

import logging
import math
import warnings

import joblib
import numpy as np
import scipy.sparse as sp

from ._auto_settings import (
    auto_node_budget,
    auto_weight_floor,
    resolve_descent_threshold,
    resolve_epochs,
    resolve_histogram_weight,
    resolve_max_leaf_labels,
    resolve_max_row_features,
    resolve_max_wide_branches,
)
from ._base import (
    MAX_EPOCHS,
    MAX_INDEX,
    MAX_LEARNING_RATE,
    MAX_NODES,
    MAX_TREES,
    TopKEstimator,
    check_choice,
    check_int,
    check_real,
    check_seed,
    is_int,
    n_threads,
    warn_renamed,
)
from ._fit_progress import PhaseClock, TreeProgress
from ._flat_tree import LEAF_AGGREGATIONS, LEAF_SCORES, MAX_ARITY, ROUTING_THRESHOLDS, TREE_ARRAYS
from ._linear_leaves import (
    LEAF_MODELS,
    LINEAR_LEAF_ARRAYS,
    MARGIN_SCALE,
    check_linear_leaves,
    fit_linear_leaves,
)
from ._scaling import FEATURE_SCALINGS, FeatureScaler
from ._streaming import predict_xc_file
from ._strongest import keep_strongest
from ._tree import Forest
from ._validation import check_features, check_labels, take_rows
from .exceptions import DataFormatError, ModelFormatError, NotFittedError
from .rerank import STATE_PREFIX as RERANK_PREFIX
from .rerank import Reranker, make_reranker, rerank_top_k, same_reranker, upgrade_reranker_state

__all__ = ["LdSM", "NotFittedError", "merge"]

logger = logging.getLogger(__name__)

_OPTIMIZERS = ("nag", "sgd")

#: Largest max_wide_branches: the descent counts a path's wide branches in a byte.
MAX_WIDE_LIMIT = 255


class LdSM(TopKEstimator):
    """Ensemble of LdSM trees for extreme multi-label classification.

    Parameters
    ----------
    n_trees : int, default=10
        Number of trees; they differ only by their random seed.
    arity : int, default=2
        Children per internal node (M), in [2, 8]: node training searches
        all 2^M - 1 non-empty subsets of children for each example.
    max_nodes : int or None, default=None
        Largest number of nodes per tree, >= 1. None adapts the trees to the
        data: enough nodes for leaves of about ``LEAF_SIZE`` (8) training
        examples, ``(M L - 1) / (M - 1)`` nodes for ``L = n_samples / 8``
        leaves of arity M, at most ``LEAVES_PER_LABEL`` (8) leaves per label
        and ``MAX_AUTO_NODES`` (131072) nodes. Small leaves
        make the histograms local (neighbour-like) and the candidate labels
        precise; on the Amazon-670K shape at scale 0.1 they raise P@1 by
        more than 20 points over 1000-node trees (``benchmarks/README.md``).
        Beyond ``FULL_FLOOR_NODES`` (32768) nodes, i.e. about 131,000
        training examples for M = 2, the weight floor
        ``max_weights_per_regressor`` shrinks in proportion, so that a
        tree's memory stays that of 32768 nodes.
    epochs : int or "auto", default="auto"
        Passes over a node's examples when training its regressors, >= 1
        (the paper uses 20). "auto": 3, or ``SHORT_ROW_EPOCHS`` (10) when
        the training rows have fewer than ``MAX_ROW_FEATURES`` (48)
        non-zero features on average and the trees descend by the training
        rule (see `descent_threshold`). With linear leaves, 3 rank long rows
        as well as 5 or 20 on held-out rows of the development sets and
        train several times faster; short rows gain from more passes and
        each pass costs less (measured in ``benchmarks/README.md``,
        "Epochs for short rows").
    lambda1 : float, default=2.0
        Weight of the purity term of the node objective, >= 0.
    lambda2 : float, default=1.0
        Weight of the term keeping the children's shares summing to 1, >= 0.
        For arity M >= 3 the paper's Lemma 2 needs ``lambda2 / lambda1 >
        M - 3`` for the objective to be lowest at a balanced, pure split;
        :meth:`fit` warns when the values (the defaults from M = 4 on) break it.
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
        stores fewer weights than the authors' choice at equal or better
        precision (measured in ``benchmarks/README.md``).
    leaf_scores : {"distribution", "frequency"}, default="frequency"
        What a leaf scores each label of its training examples with: its
        share of their label occurrences (the paper's normalised histogram,
        so the histogram scores of a prediction sum to 1), or the fraction
        of the examples that carry it (an estimate of P(label | leaf), which
        does not penalise leaves whose examples have many labels, and is on
        the scale of the classifiers' probabilities that linear leaves blend
        it with). With histogram leaves alone, "frequency" suits data with
        few labels per example (Bibtex rather than Delicious; measured in
        ``benchmarks/README.md``).
    leaf_aggregation : {"mean", "sum"}, default="mean"
        How a tree scores an example that reaches several of its leaves:
        with the average of their scores (the paper's Algorithm 2), or with
        their sum, so that a tree that sends the example down several paths
        weighs more in the ensemble's average and labels found on several of
        those paths rank higher. Used at prediction only.
        ``leaf_scores="frequency", leaf_aggregation="sum"`` is the best
        setting found for data with few labels per example, a small gain
        there and a loss on data with many (``benchmarks/README.md``).
    leaf_model : {"linear", "histogram"}, default="linear"
        What scores an example's labels. "histogram": the leaf histograms
        alone (the paper). "linear": every label also has a sparse linear
        classifier (L2-regularised squared hinge, solved by dual coordinate
        descent as in LIBLINEAR), trained on the label's *tree
        neighbourhood* (the training examples that have the label among
        their own ``n_candidates`` best histogram labels, plus every example
        carrying it); an example's ``n_candidates`` best labels by histogram
        score ``h`` are then scored ``sigmoid(4 z) ** (1 - histogram_weight)
        * h ** histogram_weight``, with ``z`` the classifier's margin, and
        the other labels get no score. Training and prediction cost per
        example grow with ``n_candidates``, not with the number of labels.
    C : float, default=0.35
        Weight of the classifiers' squared hinge loss against their L2
        regulariser ("linear" leaves), > 0; larger fits the training data
        more closely.
    n_candidates : int, default=200
        Labels per example that linear leaves re-score at prediction, and
        that make up the label neighbourhoods at training, >= 1.
    histogram_weight : float or "auto", default="auto"
        Exponent of the histogram score in the linear leaves' blend, in
        [0, 1]: 0 ranks by the classifiers alone, 1 by the histograms alone.
        "auto": 0 when the trees descend more widely than they were trained
        (see `descent_threshold`: the histograms of the many leaves reached
        then choose the candidates, and the classifiers alone rank them) or
        when the rows have more than ``MANY_FEATURES`` (65536) features, else
        0.3 (measured in ``benchmarks/README.md``, "Histogram weight with the
        wider descent" and "Defaults on the eight-set suite").
    descent_threshold : float, None or "auto", default="auto"
        Score at or above which an example descends to a child after
        training (when predicting, and when the linear leaves gather each
        label's training neighbourhood); an example that qualifies for no
        child still goes to the best-scoring one. None: the routing rule of
        training, as in the paper. A lower value reaches more leaves, which
        finds more of an example's labels when labels are many and each has
        few examples, but blurs the histograms when labels are few, and
        costs prediction time. "auto": 0.05 with ``routing="margin"`` and
        more than ``WIDE_DESCENT_MIN_LABELS`` (2000) labels, else None
        (measured in ``benchmarks/README.md``, "Wider descent").
    max_wide_branches : int, None or "auto", default="auto"
        With a `descent_threshold` below the training rule's: how many
        children a path may take that only `descent_threshold` admits, in
        [0, 255] (the children the training rule chooses are always taken).
        Bounds the leaves an example reaches as trees grow: more children
        then clear the lower threshold by their bias alone. None: no limit.
        "auto": 3, or 2 once a tree has more than ``FULL_FLOOR_NODES``
        (32768) nodes (measured in ``benchmarks/README.md``, "Amazon-670K
        shape").
    max_leaf_labels : int, None or "auto", default="auto"
        Labels a leaf stores at most, >= 1: its most frequent, ties to the
        labels fewer training examples carry, with the scores they have
        among all of the leaf's labels. None: all. Fewer labels make the
        histograms cheaper to add up at prediction and the candidates
        cheaper to find when fitting linear leaves. "auto": 32 with linear
        leaves and the training rule's descent (see `descent_threshold`),
        else None (measured in ``benchmarks/README.md``, "Labels a leaf
        keeps").
    max_row_features : int, None or "auto", default="auto"
        Features of a row that grow the trees (training rows) and route it
        down them (every row), >= 1: its largest (scaled) values, ties to
        smaller feature ids. None: all. Node training costs time in
        proportion to the features of its rows, and a router needs few of a
        long document's; the label classifiers of linear leaves see every
        feature. "auto": 48 when the training rows have more than 48
        non-zero features on average and the trees descend by the training
        rule (see `descent_threshold`), else None (measured in
        ``benchmarks/README.md``, "Features a row grows the trees with").
    feature_scaling : {"auto", "tfidf", "l2", None}, default="auto"
        Feature scaling learned at :meth:`fit` and applied to every input
        of :meth:`predict`, :meth:`predict_file` and the re-ranker (see
        ``xmltree._scaling``): "tfidf" (sublinear tf, smoothed idf of the
        training rows, unit rows), "l2" (unit rows), None (features as
        given), or "auto": "tfidf" when every training value is a
        non-negative integer (counts, 0/1), "l2" otherwise.
    max_weights_per_regressor : int or None, default=2048
    max_weights_per_example : float or None, default=4.0
        Weight budget of a regressor (biases aside): at most ``max(
        max_weights_per_regressor, max_weights_per_example * n)`` weights for
        a node trained on ``n`` examples, keeping the largest magnitudes (ties
        to smaller feature ids), applied when the node's weights are stored.
        Without a budget a node keeps a weight for most features its
        examples touch, and a tree grows like nodes x min(n_features,
        examples per node x non-zeros per example), which is gigabytes per
        tree on Amazon-670K-shaped data. With it, the wide nodes near the
        root keep weights in proportion to their data, every other node at
        most ``max_weights_per_regressor`` (less with ``max_nodes=None`` on
        more than 32768 nodes, see `max_nodes`). The defaults never bind when
        ``n_features <= 2048`` (Bibtex, Delicious); on large feature spaces
        they make the model several times smaller (``benchmarks/README.md``,
        "Scale" and "Weight budget"). One of
        them ``None``: the other alone sets the budget; both: no budget.
    random_state : int or None, default=None
        Seed of the whole ensemble. Each tree gets its own 64-bit seed from
        ``numpy.random.SeedSequence(random_state)``, so a given seed gives
        bit-identical models whatever ``n_jobs`` is. ``None`` draws fresh
        entropy.
    first_tree : int, default=0
        Index of this model's first tree in the ensemble seeded by
        ``random_state``: the model grows trees ``first_tree`` to
        ``first_tree + n_trees - 1`` of ``LdSM(n_trees=first_tree + n_trees,
        random_state=random_state)``, bit for bit. Shards trained apart with
        the same ``random_state`` and consecutive ranges (``first_tree=0,
        n_trees=5``, then ``first_tree=5, n_trees=5``) and joined with
        :func:`merge` reproduce the single fit exactly.
    rerank : bool or dict, default=False
        Also fit a tail-label re-ranker (:class:`xmltree.rerank.Reranker`,
        PfastreXML-style) on the training data, for ``predict(..., rerank=True)``:
        ``True`` with its default settings, or a dict of its parameters, e.g.
        ``{"tail_scorer": "ridge", "ridge_penalty": 3.0, "alpha": 0.3,
        "propensity_exponent": 2.0}`` (the setting tuned for Bibtex in
        ``benchmarks/README.md``; for Delicious, ``{"tail_scorer": "logistic",
        "logistic_penalty": 0.03, "alpha": 0.6, "propensity_exponent": 1.5}``).
        The dict is checked when fitting starts.
        The fitted re-ranker is ``reranker_``; its blend settings can still
        be changed there with ``set_params``.
    n_jobs : int or None, default=-1
        Threads for training (one tree per thread) and prediction (examples
        split across threads), with joblib's convention: ``None`` means 1,
        ``-1`` all cores, ``-2`` all but one, and so on. Results do not
        depend on it. Inside ``joblib.parallel_backend("dask")`` the trees
        are trained as tasks of a Dask cluster instead, with the same result.
    verbose : bool, default=False
        Show a progress bar of trees (and nodes expanded) while fitting.

    Attributes
    ----------
    n_features_in_ : int
        Number of features seen by :meth:`fit` (``n_features_`` is a
        deprecated alias).
    n_labels_ : int
        Number of labels seen by :meth:`fit`.
    trees_ : list of dict
        One flat tree per member, as read-only NumPy arrays (see
        ``xmltree._flat_tree.TREE_ARRAYS``).
    n_nodes_, n_leaves_, depth_ : numpy.ndarray of int, shape (n_trees,)
        Size, leaf count and maximum depth of each tree.
    max_row_features_ : int or None
        The features of an example that route it down the trees, its
        strongest (`max_row_features` resolved; None: all).
    scaler_ : xmltree._scaling.FeatureScaler
        The fitted feature scaling (``scaler_.kind_`` tells which).
    label_weights_ : scipy.sparse.csr_matrix of float32, shape (n_labels, n_features) or None
        The label classifiers of linear leaves (None for histogram leaves).
    label_bias_ : numpy.ndarray of float32, shape (n_labels,) or None
        Their biases.
    reranker_ : xmltree.rerank.Reranker or None
        The tail-label re-ranker when fitted with ``rerank`` set.
    fit_seconds_ : dict of str to float
        Wall-clock seconds of each phase of the last :meth:`fit`
        (``"scaling"``, ``"trees"``, ``"linear_leaves"``, ``"reranker"``);
        not saved with the model.

    Examples
    --------
    >>> from xmltree.ldsm import LdSM
    >>> model = LdSM(n_trees=5, random_state=0).fit(X_train, Y_train)  # doctest: +SKIP
    >>> labels, scores = model.predict(X_test, k=5)  # doctest: +SKIP
    """

    _KIND = "ldsm"

    def __init__(self, n_trees=10, arity=2, max_nodes=None, epochs="auto", lambda1=2.0,
                 lambda2=1.0, optimizer="nag", learning_rate=0.1, routing="margin",
                 weight_threshold=0.05, leaf_scores="frequency", leaf_aggregation="mean",
                 leaf_model="linear", C=0.35, n_candidates=200, histogram_weight="auto",
                 descent_threshold="auto", max_wide_branches="auto",
                 max_leaf_labels="auto", max_row_features="auto", feature_scaling="auto",
                 max_weights_per_regressor=2048, max_weights_per_example=4.0, rerank=False,
                 random_state=None, first_tree=0, n_jobs=-1, verbose=False):
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
        self.leaf_scores = leaf_scores
        self.leaf_aggregation = leaf_aggregation
        self.leaf_model = leaf_model
        self.C = C
        self.n_candidates = n_candidates
        self.histogram_weight = histogram_weight
        self.descent_threshold = descent_threshold
        self.max_wide_branches = max_wide_branches
        self.max_leaf_labels = max_leaf_labels
        self.max_row_features = max_row_features
        self.feature_scaling = feature_scaling
        self.max_weights_per_regressor = max_weights_per_regressor
        self.max_weights_per_example = max_weights_per_example
        self.rerank = rerank
        self.random_state = random_state
        self.first_tree = first_tree
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
        check_int("n_trees", params["n_trees"], 1, MAX_TREES)
        check_int("arity", params["arity"], 2, MAX_ARITY)
        if params["max_nodes"] is not None:
            check_int("max_nodes", params["max_nodes"], 1, MAX_NODES)
        _check_int_or_auto("epochs", params["epochs"], 1, MAX_EPOCHS, none=False)
        check_real("lambda1", params["lambda1"], 0.0, strict=False)
        check_real("lambda2", params["lambda2"], 0.0, strict=False)
        check_real("learning_rate", params["learning_rate"], 0.0, MAX_LEARNING_RATE, strict=True)
        if params["weight_threshold"] is not None:
            check_real("weight_threshold", params["weight_threshold"], 0.0, strict=False)
        if params["max_weights_per_regressor"] is not None:
            check_int("max_weights_per_regressor", params["max_weights_per_regressor"], 1,
                      MAX_INDEX)
        if params["max_weights_per_example"] is not None:
            check_real("max_weights_per_example", params["max_weights_per_example"], 0.0,
                       strict=True)
        check_choice("optimizer", params["optimizer"], _OPTIMIZERS)
        check_choice("routing", params["routing"], ROUTING_THRESHOLDS)
        check_choice("leaf_scores", params["leaf_scores"], LEAF_SCORES)
        check_choice("leaf_aggregation", params["leaf_aggregation"], LEAF_AGGREGATIONS)
        check_choice("leaf_model", params["leaf_model"], LEAF_MODELS)
        check_real("C", params["C"], 0.0, strict=True)
        check_int("n_candidates", params["n_candidates"], 1, MAX_INDEX)
        weight = params["histogram_weight"]
        if not (isinstance(weight, str) and weight == "auto"):
            try:
                check_real("histogram_weight", weight, 0.0, strict=False)
                if weight > 1:
                    raise ValueError
            except ValueError:
                raise ValueError("histogram_weight must be 'auto' or a number in [0, 1], "
                                 f"got {weight!r}") from None
        threshold = params["descent_threshold"]
        if not (threshold is None or isinstance(threshold, str) and threshold == "auto"):
            try:
                check_real("descent_threshold", threshold, -math.inf)
            except ValueError:
                raise ValueError("descent_threshold must be None, 'auto' or a finite number, "
                                 f"got {threshold!r}") from None
        _check_int_or_auto("max_wide_branches", params["max_wide_branches"], 0, MAX_WIDE_LIMIT)
        for name in ("max_leaf_labels", "max_row_features"):
            _check_int_or_auto(name, params[name], 1, MAX_INDEX)
        check_choice("feature_scaling", params["feature_scaling"], FEATURE_SCALINGS)
        make_reranker(params["rerank"])
        check_seed(params["random_state"])
        check_int("first_tree", params["first_tree"], 0, MAX_TREES)
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
        _warn_unless_lemma_2_holds(params["arity"], params["lambda1"], params["lambda2"])
        X = check_features(X)
        Y = check_labels(Y, n_samples=X.shape[0])
        if X.shape[1] == 0:
            raise DataFormatError("X: has no features")
        X, Y = _drop_unlabelled(X, Y)
        clock = PhaseClock()
        scaler = FeatureScaler(params["feature_scaling"]).fit(X)
        X = scaler.transform(X)
        clock.lap("scaling")
        if params["weight_threshold"] is None:
            params["weight_threshold"] = 1.0 / X.shape[1]
        if params["max_nodes"] is None:
            params["max_nodes"] = auto_node_budget(X.shape[0], params["arity"], Y.shape[1])
            params["max_weights_per_regressor"] = auto_weight_floor(
                params["max_weights_per_regressor"], params["max_nodes"])
        training_threshold = ROUTING_THRESHOLDS[params["routing"]]
        descent_threshold = resolve_descent_threshold(params["descent_threshold"],
                                                      params["routing"], Y.shape[1])
        fitted_threshold = training_threshold if descent_threshold is None else descent_threshold
        params["max_leaf_labels"] = resolve_max_leaf_labels(
            params["max_leaf_labels"], params["leaf_model"], fitted_threshold,
            training_threshold)
        # generate_state(n)[:m] == generate_state(m): tree t always gets word t,
        # which is what makes first_tree shards merge into the single fit.
        first = params["first_tree"]
        seed_sequence = np.random.SeedSequence(params["random_state"])
        seeds = seed_sequence.generate_state(first + params["n_trees"], dtype=np.uint64)[first:]
        max_row_features = resolve_max_row_features(params["max_row_features"], X.shape[0],
                                                    X.nnz, fitted_threshold, training_threshold)
        params["epochs"] = resolve_epochs(params["epochs"], X.shape[0], X.nnz, fitted_threshold,
                                          training_threshold)
        X_grow = X if max_row_features is None else keep_strongest(X, max_row_features)
        trees = _build_trees(X_grow, Y, params, seeds)
        del X_grow  # before the forest copies the trees, the peak of fit's memory
        _check_trees_finite(trees, params["learning_rate"])
        # fit owns the trees: the forest may take their arrays as it copies them.
        self._set_trees(trees, X.shape[1], Y.shape[1], max_row_features, release=True,
                        check_trees=False)
        self.scaler_ = scaler
        clock.lap("trees")
        if params["leaf_model"] == "linear":
            label_seed = seed_sequence.spawn(1)[0].generate_state(1, dtype=np.uint64)[0]
            self._set_linear_leaves(*fit_linear_leaves(
                self._forest, X, Y, C=params["C"], n_candidates=params["n_candidates"],
                seed=int(label_seed), n_threads=n_threads(params["n_jobs"])))
            clock.lap("linear_leaves")
        reranker = make_reranker(params["rerank"])
        if reranker is not None:
            self.reranker_ = reranker._fit(X, Y)
            clock.lap("reranker")
        self.fit_seconds_ = clock.seconds
        logger.info("LdSM fit, seconds by phase: %s", clock.seconds)
        return self

    def _set_trees(self, trees: list[dict], n_features: int, n_labels: int,
                   max_row_features: int | None = None, release: bool = False,
                   check_trees: bool = True) -> None:
        """Install trees as the fitted state, checking them first (ModelFormatError).

        `max_row_features`: the features of an example that route it, as the
        trees were grown (None: all).

        With ``release``, the trees' weight and leaf arrays are moved into the
        forest (removed from the dicts), which the caller must own.
        ``check_trees=False`` is for trees that were just grown or that
        fitted models already hold.
        """
        # np.size: the trees are not checked yet (Forest does it).
        n_nodes = np.array([np.size(t["first_child"]) for t in trees], dtype=np.int64)
        forest = Forest(trees, arity=self.arity, n_features=n_features,
                        n_labels=n_labels, routing=self.routing, leaf_scores=self.leaf_scores,
                        leaf_aggregation=self.leaf_aggregation,
                        descent_threshold=resolve_descent_threshold(
                            self.descent_threshold, self.routing, n_labels),
                        max_wide_branches=resolve_max_wide_branches(
                            self.max_wide_branches, int(n_nodes.max())),
                        max_row_features=max_row_features, release=release,
                        check_trees=check_trees)
        self._forest = forest
        self.max_row_features_ = max_row_features
        self.n_features_in_ = n_features
        self.n_labels_ = n_labels
        self.trees_ = _share_forest_arrays(forest, trees)
        self.n_nodes_ = n_nodes
        self.n_leaves_ = np.array([np.sum(t["first_child"] < 0) for t in trees], dtype=np.int64)
        self.depth_ = np.array([t["depth"].max() for t in trees], dtype=np.int64)
        self.label_weights_, self.label_bias_ = None, None
        self.scaler_ = FeatureScaler.from_state({"kind": "none"}, {}, n_features)
        self.reranker_ = None

    def _set_linear_leaves(self, weights: sp.csr_matrix, bias: np.ndarray) -> None:
        """Install checked label classifiers: the forest re-scores with them."""
        self.label_weights_, self.label_bias_ = weights, bias
        histogram_weight = resolve_histogram_weight(
            self.histogram_weight, self._forest.threshold, ROUTING_THRESHOLDS[self.routing],
            self.n_features_in_)
        self._forest.use_label_models(weights, bias, n_candidates=self.n_candidates,
                                      histogram_weight=histogram_weight,
                                      margin_scale=MARGIN_SCALE)

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
            the tail-label re-ranker fitted as the ``rerank`` parameter asked,
            which favours rare labels (higher PSP@k at a small cost in P@k).

        Returns
        -------
        labels : numpy.ndarray of int32, shape (n_samples, k)
            Best first; equal scores are ordered by increasing label id. A
            sample whose reached leaves hold fewer than ``k`` labels is
            padded with label ``-1`` and score ``0``.
        scores : numpy.ndarray of float32, shape (n_samples, k)
            With linear leaves, the blend of classifier probabilities and
            histogram scores (see ``leaf_model``), in [0, 1]; with histogram
            leaves, the ensemble-averaged histogram scores, in [0, 1] unless
            ``leaf_aggregation="sum"`` (then at most the largest number of
            leaves a tree gives the sample).

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
        if not rerank:
            return self.predict_top_k(X, k)
        self._check_fitted()
        k = check_int("k", k, 1)
        if self.reranker_ is None:
            raise ValueError("this model has no re-ranker; fit it with LdSM(rerank=True) "
                             "or LdSM(rerank={...Reranker settings...})")
        labels, scores = rerank_top_k(self, self.reranker_, self._validate_X(X), k)
        return labels, scores.astype(np.float32)

    def predict_file(self, path_in, path_out, k: int = 5, chunk_size: int = 10000,
                     rerank: bool = False) -> int:
        """Predict every row of an XC data file and write the ranked labels to disk.

        The input is read ``chunk_size`` rows at a time and each chunk's
        predictions are appended to a temporary file, which replaces
        ``path_out`` once all rows are done; memory stays bounded by one
        chunk however large the file. The output is exactly what
        ``write_predictions(path_out, *self.predict(X, k, rerank), n_labels_)``
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
            Labels per row, as in :meth:`predict`.
        chunk_size : int, default=10000
            Rows read and predicted at a time, >= 1.
        rerank : bool, default=False
            As in :meth:`predict`.

        Returns
        -------
        int
            Number of rows predicted.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        ValueError
            On an invalid ``k``, ``chunk_size`` or ``rerank``.
        DataFormatError
            If the input file is malformed or wider than the training data;
            ``path_out`` is then left as it was.
        """
        self._check_fitted()
        return predict_xc_file(self, path_in, path_out, k=k, chunk_size=chunk_size,
                               rerank=rerank)

    def predict_scores(self, X) -> sp.csr_matrix:
        """Return all non-zero ensemble scores.

        Parameters
        ----------
        X : array-like or scipy sparse matrix of shape (n_samples, n_features)
            Samples, as in :meth:`predict`.

        Returns
        -------
        scipy.sparse.csr_matrix of float32, shape ``(n_samples, n_labels_)``
            With linear leaves, the blended scores of each sample's
            ``n_candidates`` best histogram labels. With histogram leaves,
            ``leaf_scores="distribution"`` and ``leaf_aggregation="mean"``,
            each row sums to 1 up to rounding: every sample reaches at least
            one leaf of every tree, and leaf histograms are normalised.
        """
        self._check_fitted()
        return self._forest.predict_scores(self._validate_X(X), n_threads(self.n_jobs),
                                           check_input=False)

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
        self._check_fitted()
        return self._forest.leaves_reached(self._validate_X(X), n_threads(self.n_jobs),
                                           check_input=False)

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
        self._check_fitted()
        if not is_int(tree) or not 0 <= tree < len(self.trees_):
            raise ValueError(f"tree must be in [0, {len(self.trees_)}), got {tree!r}")
        arrays = self.trees_[tree]
        n_nodes = arrays["first_child"].shape[0]
        if not is_int(node) or not 0 <= node < n_nodes:
            raise ValueError(f"node must be in [0, {n_nodes}), got {node!r}")
        indptr = arrays["trace_indptr"]
        return arrays["trace_values"][indptr[node]:indptr[node + 1]].copy()

    @property
    def n_features_(self) -> int:
        """Deprecated alias of ``n_features_in_``."""
        warn_renamed("LdSM.n_features_", "n_features_in_")
        return self.n_features_in_

    def _check_fitted(self) -> None:
        if getattr(self, "_forest", None) is None:
            raise NotFittedError(
                "this LdSM instance is not fitted yet; call fit(X, Y) or LdSM.load(path) first"
            )

    def _validate_X(self, X) -> sp.csr_matrix:
        return self.scaler_.transform(check_features(X, n_features=self.n_features_in_))

    def _predict_top_k(self, X: sp.csr_matrix, k: int) -> tuple[np.ndarray, np.ndarray]:
        return self._forest.predict_top_k(X, k, n_threads(self.n_jobs), check_input=False)

    # ------------------------------------------------------------------
    # Persistence
    # ------------------------------------------------------------------

    def _get_state(self) -> tuple[dict, dict]:
        """Return the JSON parameters and numeric arrays that define the model."""
        self._check_fitted()
        params = {
            "hyper_parameters": self._json_params(),
            "n_features": int(self.n_features_in_),
            "n_labels": int(self.n_labels_),
            "n_trees": len(self.trees_),
            "max_row_features": self.max_row_features_,
        }
        arrays = {
            f"tree{t}/{name}": tree[name] for t, tree in enumerate(self.trees_)
            for name in TREE_ARRAYS
        }
        params["scaling"], scaling_arrays = self.scaler_.get_state()
        arrays.update(scaling_arrays)
        if self.label_weights_ is not None:
            arrays.update(zip(LINEAR_LEAF_ARRAYS, (
                self.label_weights_.indptr, self.label_weights_.indices,
                self.label_weights_.data, self.label_bias_)))
        if self.reranker_ is not None:
            params["reranker"], reranker_arrays = self.reranker_._get_state()
            arrays.update(reranker_arrays)
        return params, arrays

    @classmethod
    def _upgrade_state(cls, version: int, params: dict, arrays: dict) -> tuple[dict, dict]:
        """Older files load as they are, but for their re-ranker's settings."""
        if isinstance(params, dict) and "reranker" in params:
            reranker = upgrade_reranker_state(
                version, params["reranker"], arrays,
                "train the model again with LdSM(rerank=...), or load it with the xmltree "
                "that wrote it, set model.reranker_ = None, save it, load it here and fit "
                "xmltree.rerank.Reranked(model, Reranker(...)).fit(X, Y)")
            params = {**params, "reranker": reranker}
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
        # Files written before these options existed hold distributions,
        # average the leaves, score with histograms, take features as given and
        # descend as they were trained.
        hyper = {"leaf_scores": "distribution", "leaf_aggregation": "mean",
                 "leaf_model": "histogram", "feature_scaling": None, "descent_threshold": None,
                 "max_leaf_labels": None, "max_wide_branches": None, "max_row_features": None,
                 **params["hyper_parameters"]}
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
        scaler = FeatureScaler.from_state(params.get("scaling", {"kind": "none"}), arrays,
                                          sizes["n_features"])
        other = set(scaler.get_state()[1])
        if model.leaf_model == "linear":
            other.update(LINEAR_LEAF_ARRAYS)
        tree_arrays = {name for name in arrays if not name.startswith(RERANK_PREFIX)} - other
        if len(tree_arrays) != sizes["n_trees"] * len(TREE_ARRAYS):  # before believing n_trees
            raise ModelFormatError(f"LdSM model: n_trees={sizes['n_trees']} disagrees with "
                                   f"the {len(tree_arrays)} tree arrays of the file")
        expected = {f"tree{t}/{name}" for t in range(sizes["n_trees"]) for name in TREE_ARRAYS}
        if tree_arrays != expected:
            missing, extra = sorted(expected - tree_arrays), sorted(tree_arrays - expected)
            raise ModelFormatError(
                f"LdSM model: arrays do not match (missing {missing[:3]}, unexpected {extra[:3]})"
            )
        trees = [
            {name: arrays[f"tree{t}/{name}"] for name in TREE_ARRAYS}
            for t in range(sizes["n_trees"])
        ]
        reranker = None
        if "reranker" in params:  # its arrays confirm the counts before the forest allocates
            reranker = Reranker._from_state(params["reranker"], arrays)
            scorer = reranker.scorer_
            if (scorer.n_labels_, scorer.n_features_) != (sizes["n_labels"], sizes["n_features"]):
                raise ModelFormatError("LdSM model: the re-ranker's label or feature count "
                                       "differs")
        # Files from before the option route with all features, as they grew.
        max_row_features = params.get("max_row_features")
        if max_row_features is not None and not (is_int(max_row_features)
                                                 and 1 <= max_row_features <= MAX_INDEX):
            raise ModelFormatError("LdSM model: max_row_features must be null or a positive "
                                   "integer")
        model._set_trees(trees, sizes["n_features"], sizes["n_labels"], max_row_features)
        model.scaler_ = scaler
        if model.leaf_model == "linear":
            model._set_linear_leaves(*check_linear_leaves(arrays, sizes["n_features"],
                                                          sizes["n_labels"]))
        model.reranker_ = reranker
        return model


# ----------------------------------------------------------------------
# Merging shards of one ensemble
# ----------------------------------------------------------------------

#: Hyper-parameters that may differ between the shards given to :func:`merge`.
_SHARD_PARAMS = ("n_trees", "random_state", "first_tree", "n_jobs", "verbose")


def merge(models) -> LdSM:
    """Join fitted LdSM models into one ensemble holding all their trees.

    Use it to train an ensemble in shards (on different machines, or at
    different times) and serve it as one model. The merged model's scores
    are the average over all its trees, i.e. the tree-count-weighted average
    of the shards' scores.

    To reproduce ``LdSM(n_trees=N, random_state=s).fit(X, Y)`` bit for bit,
    train the shards with the same ``random_state=s`` and consecutive tree
    ranges, e.g. ``LdSM(n_trees=3, random_state=s, first_tree=0)`` and
    ``LdSM(n_trees=2, random_state=s, first_tree=3)``, and merge them in
    that order. The merged model then records ``random_state=s`` and the
    first shard's ``first_tree``; otherwise it records ``random_state=None``.

    Parameters
    ----------
    models : sequence of LdSM
        Fitted models, in tree order. They must agree on ``n_features_in_``,
        ``n_labels_`` and every hyper-parameter except ``n_trees``,
        ``random_state``, ``first_tree``, ``n_jobs`` and ``verbose``; with
        ``rerank=True`` their re-rankers must be identical (fitted on the
        same data with the same settings).

    Returns
    -------
    LdSM
        A new fitted model; the inputs are not modified.

    Raises
    ------
    ValueError
        If fewer than one model is given, a model is not an LdSM, the models
        are incompatible, or two shards hold the same tree (same
        ``random_state`` and overlapping tree ranges).
    NotFittedError
        If a model is not fitted.
    """
    models = list(models)
    if not models or not all(isinstance(model, LdSM) for model in models):
        raise ValueError("merge needs a non-empty sequence of LdSM models")
    for model in models:
        model._check_fitted()
        if model.label_weights_ is not None:
            raise ValueError(
                "cannot merge models with leaf_model='linear': their label classifiers are "
                "trained on all the trees of the model; train shards with "
                "leaf_model='histogram', or train the whole model inside "
                "joblib.parallel_backend('dask') to spread its trees over a cluster")
    _check_compatible(models)
    hyper = models[0].get_params()
    hyper["n_trees"] = sum(len(model.trees_) for model in models)
    if not _consecutive_shards(models):
        hyper["random_state"], hyper["first_tree"] = None, 0
    merged = LdSM(**hyper)
    trees = [tree for model in models for tree in model.trees_]
    merged._set_trees(trees, models[0].n_features_in_, models[0].n_labels_,
                      models[0].max_row_features_, check_trees=False)
    merged.scaler_ = models[0].scaler_
    if models[0].reranker_ is not None:
        params, arrays = models[0].reranker_._get_state()
        merged.reranker_ = Reranker._from_state(params, arrays)
    return merged


def _check_compatible(models: list[LdSM]) -> None:
    """Raise ValueError naming the first property on which the models differ."""
    reference = _merge_signature(models[0])
    for index, model in enumerate(models[1:], start=1):
        for name, value in _merge_signature(model).items():
            if value != reference[name]:
                raise ValueError(f"cannot merge: model {index} has {name}={value!r}, "
                                 f"model 0 has {reference[name]!r}")
        if models[0].reranker_ is not None and not same_reranker(models[0].reranker_,
                                                                 model.reranker_):
            raise ValueError(f"cannot merge: the re-ranker of model {index} differs from "
                             "model 0's (fitted on other data or with other settings)")
    _check_no_shared_trees(models)


def _merge_signature(model: LdSM) -> dict:
    """What must be equal for two models to be shards of one ensemble."""
    # ``rerank`` is compared through the fitted re-rankers (same_reranker):
    # True and {} ask for the same one.
    signature = {name: value for name, value in model.get_params().items()
                 if name not in _SHARD_PARAMS and name != "rerank"}
    signature["has_reranker"] = model.reranker_ is not None
    scaling, idf = model.scaler_.get_state()
    signature["scaling"] = (scaling["kind"], tuple(idf.get("scaling/idf", ())))
    signature["n_features_in_"], signature["n_labels_"] = model.n_features_in_, model.n_labels_
    signature["max_row_features_"] = model.max_row_features_
    return signature


def _tree_range(model: LdSM) -> range:
    """Indices of the model's trees in the ensemble seeded by its random_state."""
    return range(model.first_tree, model.first_tree + len(model.trees_))


def _check_no_shared_trees(models: list[LdSM]) -> None:
    """Refuse shards that would put the same tree twice in the ensemble."""
    for i, a in enumerate(models):
        for j in range(i + 1, len(models)):
            b = models[j]
            overlap = range(max(_tree_range(a).start, _tree_range(b).start),
                            min(_tree_range(a).stop, _tree_range(b).stop))
            if a.random_state is not None and a.random_state == b.random_state and overlap:
                raise ValueError(
                    f"cannot merge: models {i} and {j} both hold tree {overlap.start} of "
                    f"random_state={a.random_state} (give shards consecutive first_tree ranges)"
                )


def _consecutive_shards(models: list[LdSM]) -> bool:
    """True when the models are consecutive tree ranges of one seeded ensemble."""
    if models[0].random_state is None:
        return False
    next_tree = models[0].first_tree
    for model in models:
        if model.random_state != models[0].random_state or model.first_tree != next_tree:
            return False
        next_tree += len(model.trees_)
    return True


# ----------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------

def _check_int_or_auto(name: str, value, low: int, high: int, none: bool = True) -> None:
    """Raise ValueError unless `value` is "auto", an integer in [`low`, `high`]
    or, with `none`, None."""
    if isinstance(value, str) and value == "auto" or none and value is None:
        return
    try:
        check_int(name, value, low, high)
    except ValueError:
        words = "None, 'auto'" if none else "'auto'"
        raise ValueError(f"{name} must be {words} or an integer in [{low}, {high}], "
                         f"got {value!r}") from None


def _check_trees_finite(trees: list[dict], learning_rate: float) -> None:
    """Refuse regressors that diverged: a fit must not make a model its loader refuses."""
    for tree in trees:
        if not (np.all(np.isfinite(tree["weight_values"])) and np.all(np.isfinite(tree["bias"]))):
            raise ValueError(f"LdSM training diverged (non-finite regressor weights) with "
                             f"learning_rate={learning_rate!r}; use a smaller learning_rate")


def _warn_unless_lemma_2_holds(arity: int, lambda1: float, lambda2: float) -> None:
    """Warn when ``lambda2 / lambda1 > arity - 3`` (Lemma 2 of the paper) fails.

    Without it, a split that is not balanced and pure can have the lowest
    objective, so the nodes may learn lopsided or mixed splits; binary trees
    always satisfy it, ternary ones unless ``lambda2`` is 0.
    """
    if arity - 3 >= 0 and lambda2 <= lambda1 * (arity - 3):
        warnings.warn(
            f"LdSM(arity={arity}, lambda1={lambda1}, lambda2={lambda2}): the objective is "
            f"lowest at a balanced, pure split only if lambda2 / lambda1 > arity - 3 "
            f"(Majzoubi & Choromanska 2020, Lemma 2); use lambda2 > {lambda1 * (arity - 3)}",
            UserWarning, stacklevel=3)


def _drop_unlabelled(X: sp.csr_matrix, Y: sp.csr_matrix):
    """Remove samples without labels; refuse data where none remain."""
    labelled = np.diff(Y.indptr) > 0
    n_dropped = int(labelled.size - labelled.sum())
    if n_dropped == labelled.size:
        raise DataFormatError("Y: no training sample has a label")
    if n_dropped:
        logger.info("dropping %d of %d training samples that have no label",
                    n_dropped, labelled.size)
        X, Y = take_rows(X, labelled), take_rows(Y, labelled)
    return X, Y


def _share_forest_arrays(forest: Forest, trees: list[dict]) -> list[dict]:
    """Return read-only trees whose large arrays are slices of the forest's.

    The forest concatenates the trees for prediction; handing out its slices
    instead of the trees' own arrays keeps one copy of the model in memory.
    Only per-node arrays (a few numbers per node) are the trees' own.
    """
    arity = forest.arity
    offsets = forest.tree_offset
    views = []
    for t, tree in enumerate(trees):
        first, last = int(offsets[t]), int(offsets[t + 1])
        weights = slice(int(forest.weight_indptr[first * arity]),
                        int(forest.weight_indptr[last * arity]))
        leaves = slice(int(forest.leaf_indptr[first]), int(forest.leaf_indptr[last]))
        view = dict(
            weight_indices=forest.weight_indices[weights],
            weight_values=forest.weight_values[weights],
            leaf_labels=forest.leaf_labels[leaves],
            leaf_values=forest.leaf_values[leaves],
            bias=forest.bias[first * arity:last * arity].reshape(-1, arity),
        )
        view.update((name, tree[name].view()) for name in TREE_ARRAYS if name not in view)
        for array in view.values():
            array.flags.writeable = False
        views.append(view)
    return views


def _build_trees(X: sp.csr_matrix, Y: sp.csr_matrix, params: dict,
                 seeds: np.ndarray) -> list[dict]:
    """Train one tree per seed with joblib, sharing X and Y.

    Threads by default; inside ``joblib.parallel_backend("dask")`` the trees
    are tasks of the Dask cluster. X and Y are the same objects in every
    task, so joblib's Dask backend scatters each once per ``fit`` and workers
    fetch them once, whatever the number of trees.
    """
    # Imported here so that prediction works with a build lacking the trainer.
    from ._ldsm import build_tree

    settings = {name: params[name] for name in (
        "arity", "max_nodes", "epochs", "lambda1", "lambda2", "optimizer",
        "learning_rate", "routing", "weight_threshold", "leaf_scores", "max_leaf_labels")}
    settings["max_weights"] = params["max_weights_per_regressor"]
    settings["weights_per_row"] = params["max_weights_per_example"]
    progress = TreeProgress(len(seeds)) if params["verbose"] else None
    # Node callbacks must run in this process; other backends (processes, a
    # Dask cluster) only report finished trees.
    backend, _ = joblib.parallel.get_active_backend(prefer="threads")
    node_progress = progress is not None and getattr(backend, "uses_threads", False)
    jobs = (
        joblib.delayed(build_tree)(
            X, Y, **settings, seed=int(seed),
            progress=progress.node_callback(t) if node_progress else None,
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
