"""The LdSM estimator: an ensemble of logarithmic-depth multi-leaf trees.

LdSM (Majzoubi & Choromanska, AISTATS 2020) grows M-ary trees whose nodes
hold one linear regressor per child. Training (``xmltree.ldsm._builder.build_tree``)
pushes each node's regressors to split the labels of the node into balanced,
pure children; at prediction an example may descend to several children, and
its histogram scores are the average (or, as an option, the sum) of the label
histograms of the leaves it reaches, averaged again over the trees of the
ensemble.

Beyond the paper, and by default: features are scaled at ``fit`` (tf-idf for
counts, unit rows otherwise; ``xmltree._scaling``), and *linear leaves*
(``xmltree.ldsm._linear_leaves``) re-score an example's best histogram labels
with per-label linear classifiers trained on the labels' tree neighbourhoods,
blended with the histograms. ``LdSM.paper()`` is the paper's LdSM.

This module is the thin estimator: parameter and input checks, then
``_training.fit_model`` (scaling, settings, trees in parallel, leaf model),
``_state`` for model files. Prediction reads one ``FittedLdSM`` and runs in
:class:`xmltree.ldsm._forest.Forest`.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp

from .._base import TopKEstimator, is_int, n_threads
from .._params import check_params
from .._scaling import FeatureScaler
from .._validation import check_features, check_labels
from ..exceptions import DataFormatError, ModelFormatError, NotFittedError
from ._fitted import FittedLdSM
from ._leaf_models import LEAF_MODELS
from ._params import LDSM_PARAMS, PAPER_CONFIGURATION
from ._state import fitted_from_state, get_state, upgrade_state
from ._training import fit_model, resolve_for_prediction

__all__ = ["LdSM"]


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
        leaves of arity M, at most ``LEAVES_PER_LABEL`` (2) leaves per label
        and ``MAX_AUTO_NODES`` (131072) nodes. Small leaves
        make the histograms local (neighbour-like) and the candidate labels
        precise, most of all with many labels (``benchmarks/README.md``).
        Beyond ``FULL_FLOOR_NODES`` (65536) nodes, i.e. about 262,000
        training examples for M = 2, the weight floor
        ``max_weights_per_regressor`` shrinks in proportion, so that a
        tree's memory stays that of 65536 nodes.
    epochs : int or "auto", default="auto"
        Passes over a node's examples when training its regressors, >= 1
        (the paper uses 20); at most, with `epoch_tolerance`. "auto": 3, or
        ``SHORT_ROW_EPOCHS`` (10) when the training rows have fewer than
        ``MAX_ROW_FEATURES`` (48) non-zero features on average and the
        trees descend by the training rule (see `descent_threshold`). With
        linear leaves, 3 rank long rows as well as 5 or 20 on held-out rows
        of the development sets and train several times faster; short rows
        gain from more passes and each pass costs less (measured in ``benchmarks/README.md``,
        "Epochs for short rows").
    epoch_tolerance : float or "auto", default="auto"
        A node ends its passes early, once one changes the mean objective of
        the directions it chose by at most this fraction of the previous
        pass's, >= 0 (0: every node takes all `epochs`). "auto":
        ``EPOCH_TOLERANCE`` when `epochs` is "auto", else 0. Nodes of many
        examples settle in fewer passes than the small ones deep in a tree,
        so the trees' training follows what their nodes need ("Fit cost that
        follows the problem (#34)" in the benchmarks' lab notebook).
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
        sparse; ``None`` uses ``1 / n_features`` as the authors do. With
        ``feature_scaling=None`` the threshold is divided by the root mean
        square of the values the trees grow on (as a power of two, so 1 for
        binary data): weights shrink as features grow, and features around
        100 would otherwise lose every weight. 0.05 stores fewer weights
        than the authors' choice at equal or better precision (measured in
        ``benchmarks/README.md``).
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
        carrying it); an example's ``predict_candidates`` best labels by
        histogram score ``h`` are then scored
        ``sigmoid(4 z) ** (1 - histogram_weight) * h ** histogram_weight``,
        with ``z`` the classifier's margin (its bias logit-adjusted: raised
        by ``-0.05 log(prior) / 4`` for a label carried by that share of the
        training examples, so that the regulariser's pull on rare labels
        does not rank them too low), and the other labels get no score.
        Training and prediction cost per example grow with the candidates,
        not with the number of labels.
    C : float or "auto", default="auto"
        Weight of the classifiers' squared hinge loss against their L2
        regulariser ("linear" leaves), > 0; larger fits the training data
        more closely. "auto": 0.35 where the trees descend as trained (at
        most 2000 labels, see `descent_threshold`), the best single value on
        the real development sets. Under the wider descent it is chosen at
        fit: the classifiers of a random tenth of the labels (at least 100,
        at most 25,000) are trained without a random tenth of the training
        rows (at most 5000), to convergence, at 0.35, then at 4, 16 and 64
        times that while the step ranks those labels among the set-aside
        rows' candidates better by more than two standard errors of nDCG@5;
        the model's classifiers are then trained on all the rows at the C
        chosen, which ``resolved_params_`` shows. A larger C pays where
        labels follow the features with little noise and keeps more weights
        (``benchmarks/README.md``, "Choosing C at fit").
    n_candidates : int or "auto", default="auto"
        Labels per training example, its best by histogram score, that make
        up the label neighbourhoods the linear leaves train on, >= 1; at
        most the number of labels is used (memory and the classifiers'
        training grow with rows x candidates). "auto": 1000 when the trees
        descend more widely than they were trained (see `descent_threshold`:
        they then reach more of an example's labels than the best 200 keep),
        else 200 (``benchmarks/README.md``, "More candidates, at fit and at
        prediction").
    predict_candidates : int or "auto", default="auto"
        Labels per example, its best by histogram score, that linear leaves
        re-score at prediction, >= 1; at most the number of labels is used.
        Prediction time grows slowly with it, fit time not at all. "auto":
        4000 when the trees descend more widely than they were trained,
        else the resolved `n_candidates` (``benchmarks/README.md``,
        "Candidates at prediction").
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
        "auto": 3, or 2 once a tree has more than ``LARGE_TREE_NODES``
        (32768) nodes or the trees grew on cut rows (`max_row_features`
        resolved to a number) (measured in ``benchmarks/README.md``,
        "Amazon-670K shape" and "Cut trees, routed whole").
    max_leaf_labels : int, None or "auto", default="auto"
        Labels a leaf stores at most, >= 1: its most frequent, ties to the
        labels fewer training examples carry, with the scores they have
        among all of the leaf's labels. None: all. Fewer labels make the
        histograms cheaper to add up at prediction and the candidates
        cheaper to find when fitting linear leaves. "auto": 32 with linear
        leaves, the training rule's descent (see `descent_threshold`) and
        the histograms in the blend (`histogram_weight` above 0), else None:
        leaves whose histograms only choose the candidates keep every label
        (measured in ``benchmarks/README.md``, "Labels a leaf keeps").
    max_row_features : int, None or "auto", default="auto"
        Features of a training row that grow the trees, >= 1: its largest
        (scaled) values, ties to smaller feature ids. None: all. Node
        training costs time in proportion to the features of its rows, and
        a router needs few of a long document's; the label classifiers of
        linear leaves see every feature. "auto": 48 when the training rows
        have more than 48 non-zero features on average, unless the trees
        descend by the wider rule (see `descent_threshold`) and either may
        grow more than 32768 nodes (`max_nodes`) or the rows average more
        than 192 features, else None (measured in ``benchmarks/README.md``,
        "Features a row grows the trees with" and "Cut trees, routed
        whole").
    route_row_features : int, None or "auto", default="auto"
        Features of a row that route it down the fitted trees (when
        predicting, and when the linear leaves gather each label's training
        neighbourhood), >= 1: its largest (scaled) values, ties to smaller
        feature ids. None: all. "auto": the resolved `max_row_features`
        when the trees descend by the training rule (see
        `descent_threshold`), so that rows follow the paths they were
        trained on; None with the wider descent, whose paths through
        children below the training threshold are decided by the weaker
        features too (measured in ``benchmarks/README.md``, "Cut trees,
        routed whole").
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
        more than 65536 nodes, see `max_nodes`). The defaults never bind when
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
        Number of features seen by :meth:`fit`.
    n_labels_ : int
        Number of labels seen by :meth:`fit`.
    trees_ : list of dict
        One flat tree per member, as read-only NumPy arrays (see
        ``xmltree.ldsm._tree_arrays.TREE_ARRAYS``).
    n_nodes_, n_leaves_, depth_ : numpy.ndarray of int, shape (n_trees,)
        Size, leaf count and maximum depth of each tree.
    max_row_features_ : int or None
        The features of a training row that grew the trees, its strongest
        (`max_row_features` resolved; None: all).
    route_row_features_ : int or None
        The features of an example that route it down the trees, its
        strongest (`route_row_features` resolved; None: all).
    scaler_ : xmltree._scaling.FeatureScaler
        The fitted feature scaling (``scaler_.kind_`` tells which).
    label_weights_ : scipy.sparse.csr_matrix of float32, shape (n_labels, n_features) or None
        The label classifiers of linear leaves (None for histogram leaves).
    label_bias_ : numpy.ndarray of float32, shape (n_labels,) or None
        Their biases.
    resolved_params_ : dict
        Every hyper-parameter as the model was fitted and predicts: "auto"
        and data-dependent None values resolved (saved with the model).
        Changing a parameter with ``set_params`` takes effect at the next
        :meth:`fit`; until then the model predicts, and saves, as fitted.
    fit_seconds_ : dict of str to float
        Wall-clock seconds of each phase of the last :meth:`fit`
        (``"scaling"``, ``"trees"``, ``"<leaf_model>_leaves"``); not saved
        with the model.

    Examples
    --------
    >>> from xmltree.ldsm import LdSM
    >>> model = LdSM(n_trees=5, random_state=0).fit(X_train, Y_train)  # doctest: +SKIP
    >>> labels, scores = model.predict(X_test, k=5)  # doctest: +SKIP
    """

    _KIND = "ldsm"

    _KIND = "ldsm"

    def __init__(self, n_trees=10, arity=2, max_nodes=None, epochs="auto",
                 epoch_tolerance="auto", lambda1=2.0, lambda2=1.0, optimizer="nag",
                 learning_rate=0.1, routing="margin",
                 weight_threshold=0.05, leaf_scores="frequency", leaf_aggregation="mean",
                 leaf_model="linear", C="auto", n_candidates="auto", predict_candidates="auto",
                 histogram_weight="auto", descent_threshold="auto", max_wide_branches="auto",
                 max_leaf_labels="auto", max_row_features="auto", route_row_features="auto",
                 feature_scaling="auto",
                 max_weights_per_regressor=2048, max_weights_per_example=4.0,
                 random_state=None, first_tree=0, n_jobs=-1, verbose=False):
        self.n_trees = n_trees
        self.arity = arity
        self.max_nodes = max_nodes
        self.epochs = epochs
        self.epoch_tolerance = epoch_tolerance
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
        self.predict_candidates = predict_candidates
        self.histogram_weight = histogram_weight
        self.descent_threshold = descent_threshold
        self.max_wide_branches = max_wide_branches
        self.max_leaf_labels = max_leaf_labels
        self.max_row_features = max_row_features
        self.route_row_features = route_row_features
        self.feature_scaling = feature_scaling
        self.max_weights_per_regressor = max_weights_per_regressor
        self.max_weights_per_example = max_weights_per_example
        self.random_state = random_state
        self.first_tree = first_tree
        self.n_jobs = n_jobs
        self.verbose = verbose

    @classmethod
    def paper(cls, **overrides) -> LdSM:
        """The LdSM of Majzoubi & Choromanska (2020), with `overrides` on top.

        Histogram leaves storing label distributions, on the features as
        given, trees of 1000 nodes trained 20 epochs and descending by the
        training rule (``xmltree.ldsm._params.PAPER_CONFIGURATION``).
        """
        return cls(**{**PAPER_CONFIGURATION, **overrides})

    def _validate_params(self) -> dict:
        """Check every hyper-parameter against ``LDSM_PARAMS``; return them.

        Raises
        ------
        ValueError
            Naming the parameter, its value and the allowed range.
        """
        return check_params(LDSM_PARAMS, self.get_params())

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
        fitted, self.fit_seconds_ = fit_model(params, X, Y)
        self._install(fitted)
        return self

    def _install(self, fitted: FittedLdSM) -> None:
        """Make `fitted` the model's state, in one assignment (see ``_fitted``)."""
        self._fitted = fitted

    def _set_trees(self, trees: list[dict], n_features: int, n_labels: int) -> None:
        """Install checked trees with histogram leaves, on features as given.

        The hyper-parameters are resolved as ``fit`` would for `n_labels`
        labels; a way to build a model from trees made elsewhere (tests,
        tree surgery in ``benchmarks/``).
        """
        hyper = self._validate_params()
        settings = {**hyper, "feature_scaling": None, "max_row_features": None,
                    "leaf_model": "histogram"}
        settings = resolve_for_prediction(settings, hyper, n_features, n_labels, trees)
        scaler = FeatureScaler.from_state({"kind": "none"}, {}, n_features)
        fitted = FittedLdSM.from_trees(trees, settings, scaler, n_features, n_labels)
        self._install(fitted.with_leaves(LEAF_MODELS["histogram"]()))

    # ------------------------------------------------------------------
    # Prediction and introspection
    # ------------------------------------------------------------------

    def predict(self, X, k: int = 5) -> tuple[np.ndarray, np.ndarray]:
        """Return the ``k`` best labels of each sample.

        Parameters
        ----------
        X : array-like or scipy sparse matrix of shape (n_samples, n_features)
            Samples. Fewer columns than seen in :meth:`fit` are treated as
            missing trailing features; more columns is an error.
        k : int, default=5
            Labels per sample, >= 1.

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
            If ``k`` is not an integer >= 1.
        DataFormatError
            If ``X`` is malformed or wider than the training data.
        """
        return self.predict_top_k(X, k)

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
        fitted = self._fitted_state()
        return fitted.forest.predict_scores(_checked_rows(fitted, X), n_threads(self.n_jobs),
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
        fitted = self._fitted_state()
        return fitted.forest.leaves_reached(_checked_rows(fitted, X), n_threads(self.n_jobs),
                                            check_input=False)

    def objective_trace(self, tree: int, node: int) -> np.ndarray:
        """Return the mean node objective J of each training pass.

        Parameters
        ----------
        tree : int
            Tree index in ``[0, n_trees)``.
        node : int
            Node id in ``[0, n_nodes_[tree])``.

        Returns
        -------
        numpy.ndarray of float32, shape (passes,) or (0,)
            One value per pass the node took (`epochs`, or fewer with
            `epoch_tolerance`); empty for a node never trained (a leaf).
        """
        trees = self._fitted_state().trees
        if not is_int(tree) or not 0 <= tree < len(trees):
            raise ValueError(f"tree must be in [0, {len(trees)}), got {tree!r}")
        arrays = trees[tree]
        n_nodes = arrays["first_child"].shape[0]
        if not is_int(node) or not 0 <= node < n_nodes:
            raise ValueError(f"node must be in [0, {n_nodes}), got {node!r}")
        indptr = arrays["trace_indptr"]
        return arrays["trace_values"][indptr[node]:indptr[node + 1]].copy()

    # ------------------------------------------------------------------
    # Fitted attributes: views of the one fitted state
    # ------------------------------------------------------------------

    def _fitted_state(self) -> FittedLdSM:
        fitted = self.__dict__.get("_fitted")
        if fitted is None:
            raise NotFittedError(
                "this LdSM instance is not fitted yet; call fit(X, Y) or LdSM.load(path) first"
            )
        return fitted

    @property
    def _forest(self):
        """The compiled forest (for tests and benchmarks that look inside it)."""
        return self._fitted_state().forest

    @property
    def n_features_in_(self) -> int:
        return self._fitted_state().n_features

    @property
    def n_labels_(self) -> int:
        return self._fitted_state().n_labels

    @property
    def trees_(self) -> list:
        return self._fitted_state().trees

    @property
    def n_nodes_(self) -> np.ndarray:
        return self._fitted_state().n_nodes

    @property
    def n_leaves_(self) -> np.ndarray:
        return self._fitted_state().n_leaves

    @property
    def depth_(self) -> np.ndarray:
        return self._fitted_state().depth

    @property
    def max_row_features_(self):
        return self._fitted_state().settings["max_row_features"]

    @property
    def route_row_features_(self):
        return self._fitted_state().settings["route_row_features"]

    @property
    def scaler_(self):
        return self._fitted_state().scaler

    @property
    def resolved_params_(self) -> dict:
        return dict(self._fitted_state().settings)

    @property
    def label_weights_(self):
        return getattr(self._fitted_state().leaves, "weights", None)

    @property
    def label_bias_(self):
        return getattr(self._fitted_state().leaves, "bias", None)

    def _check_fitted(self) -> None:
        self._fitted_state()

    def _validate_X(self, X) -> sp.csr_matrix:
        return _checked_rows(self._fitted_state(), X)

    def _predict_top_k(self, X: sp.csr_matrix, k: int) -> tuple[np.ndarray, np.ndarray]:
        return self._fitted_state().forest.predict_top_k(X, k, n_threads(self.n_jobs),
                                                         check_input=False)

    # ------------------------------------------------------------------
    # Persistence
    # ------------------------------------------------------------------

    def _get_state(self) -> tuple[dict, dict]:
        """Return the JSON parameters and numeric arrays that define the model.

        Raises
        ------
        ValueError
            If ``set_params`` gave a hyper-parameter a value the file could
            not be loaded with (it is named).
        """
        fitted = self._fitted_state()
        self._validate_params()
        return get_state(self._json_params(), fitted)

    @classmethod
    def _upgrade_state(cls, version: int, params: dict, arrays: dict) -> tuple[dict, dict]:
        return upgrade_state(version, params, arrays, defaults=cls().get_params())

    @classmethod
    def _from_state(cls, params: dict, arrays: dict):
        """Rebuild a fitted model from :meth:`_get_state` output, checking everything.

        A file written with ``LdSM(rerank=...)`` by an older xmltree loads as
        the :class:`xmltree.rerank.Reranked` stage it now is.

        Raises
        ------
        ModelFormatError
            On missing or ill-typed parameters, missing or unexpected arrays,
            or trees that break the flat-tree contract.
        """
        # fitted_from_state names what is wrong with parameters that are no dict.
        old = isinstance(params, dict) and "reranker" in params
        reranker = _old_reranker(params, arrays) if old else None
        hyper, fitted = fitted_from_state(params, arrays)
        model = cls(**hyper)
        model._install(fitted)
        if reranker is None:
            return model
        from ..rerank import Reranked, Reranker

        stage = Reranked(model, Reranker(**reranker.get_params()))
        stage.reranker_ = reranker
        return stage


def _checked_rows(fitted: FittedLdSM, X) -> sp.csr_matrix:
    """`X` checked against the fitted feature space and scaled as at fit."""
    return fitted.scaler.transform(check_features(X, n_features=fitted.n_features))


def _old_reranker(params: dict, arrays: dict):
    """The re-ranker an older LdSM file holds, checked against the sizes the
    file claims before the forest allocates by them."""
    from ..rerank import Reranker

    reranker = Reranker._from_state(params["reranker"], arrays)
    scorer = reranker.scorer_
    if (scorer.n_labels_, scorer.n_features_) != (params.get("n_labels"),
                                                  params.get("n_features")):
        raise ModelFormatError("LdSM model: the re-ranker's label or feature count differs")
    return reranker


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
