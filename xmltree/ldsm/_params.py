"""LdSM's hyper-parameters, declared once (see :mod:`xmltree._params`).

The docstring of :class:`xmltree.LdSM` explains each one; this table says
what values it takes, and is what ``fit``, ``load``, the command line and the
benchmark scripts check them with. ``PAPER_CONFIGURATION`` is the one
spelling of the settings of Majzoubi & Choromanska (2020).
"""

from __future__ import annotations

from .._base import MAX_EPOCHS, MAX_INDEX, MAX_LEARNING_RATE, MAX_NODES, MAX_TREES
from .._params import Param
from .._scaling import FEATURE_SCALINGS
from ._leaf_models import LEAF_MODELS
from ._tree_arrays import LEAF_AGGREGATIONS, LEAF_SCORES, MAX_ARITY, ROUTING_THRESHOLDS

__all__ = ["LDSM_PARAMS", "PAPER_CONFIGURATION", "PREDICTION_ONLY", "PREDICTION_SETTINGS",
           "SHARD_PARAMS"]

#: Largest max_wide_branches: the descent counts a path's wide branches in a byte.
MAX_WIDE_LIMIT = 255

AUTO = ("auto",)
AUTO_OR_NONE = ("auto", None)

LDSM_PARAMS = (
    Param("n_trees", "int", 1, MAX_TREES, help="trees in the ensemble"),
    Param("arity", "int", 2, MAX_ARITY, help="children per node (M)"),
    Param("max_nodes", "int", 1, MAX_NODES, words=(None,),
          help="node budget per tree (default: a leaf per 8 training rows)"),
    Param("epochs", "int", 1, MAX_EPOCHS, words=AUTO,
          help="passes over each node's examples (auto: follows the rows' length)"),
    Param("epoch_tolerance", "real", 0.0, words=AUTO,
          help="a node stops its passes once one changes its mean objective by at most this "
          "fraction (0: all epochs; auto: with epochs='auto' only)"),
    Param("lambda1", "real", 0.0, help="weight of the class-integrity term"),
    Param("lambda2", "real", 0.0, help="weight of the multi-way penalty"),
    Param("optimizer", "choice", choices=("nag", "sgd"), help="update rule of the routers"),
    Param("learning_rate", "real", 0.0, MAX_LEARNING_RATE, strict=True,
          help="step size of the routers"),
    Param("routing", "choice", choices=tuple(ROUTING_THRESHOLDS),
          help="how an example chooses children during training"),
    Param("weight_threshold", "real", 0.0, words=(None,),
          help="smallest router weight kept (none: 1 / n_features)"),
    Param("leaf_scores", "choice", choices=LEAF_SCORES, help="what leaves score labels with"),
    Param("leaf_aggregation", "choice", choices=LEAF_AGGREGATIONS,
          help="how a tree combines the leaves an example reaches"),
    # The registry itself: a leaf model registered later is a valid choice.
    Param("leaf_model", "choice", choices=LEAF_MODELS,
          help="what scores the candidates: label classifiers blended with the leaf "
          "histograms (linear) or the histograms alone"),
    Param("C", "real", 0.0, strict=True, words=AUTO,
          help="loss weight of the label classifiers (inverse regularisation; auto: "
          "0.35, or chosen on training rows set aside with the wider descent)"),
    Param("n_candidates", "int", 1, MAX_INDEX, words=AUTO,
          help="labels per example the label classifiers train on (auto: 1000 with the "
          "wider descent, else 200)"),
    Param("predict_candidates", "int", 1, MAX_INDEX, words=AUTO,
          help="labels per example the label classifiers re-score at prediction (auto: "
          "4000 with the wider descent, else n_candidates)"),
    Param("histogram_weight", "real", 0.0, 1.0, words=AUTO,
          help="weight of the leaf histograms in the blend, in [0, 1]"),
    Param("descent_threshold", "real", words=AUTO_OR_NONE,
          help="score at which a fitted tree sends an example to a child (none: as in "
          "training)"),
    Param("max_wide_branches", "int", 0, MAX_WIDE_LIMIT, words=AUTO_OR_NONE,
          help="children a path of the wider descent may take that only its threshold "
          "admits (none: no limit)"),
    Param("max_leaf_labels", "int", 1, MAX_INDEX, words=AUTO_OR_NONE,
          help="labels a leaf keeps, its most frequent (none: all)"),
    Param("max_row_features", "int", 1, MAX_INDEX, words=AUTO_OR_NONE,
          help="features of a training row that grow the trees, its largest (none: all)"),
    Param("route_row_features", "int", 1, MAX_INDEX, words=AUTO_OR_NONE,
          help="features of a row that route it down the trees, its largest (none: all; "
          "auto: as grown under the training rule's descent, else all)"),
    Param("feature_scaling", "choice", choices=FEATURE_SCALINGS,
          help="feature scaling learned at fit (auto: tf-idf for counts, else l2)"),
    Param("max_weights_per_regressor", "int", 1, MAX_INDEX, words=(None,),
          help="weight budget floor of a router (none: no floor)"),
    Param("max_weights_per_example", "real", 0.0, strict=True, words=(None,),
          help="weight budget of a router per training example (none: no such budget)"),
    Param("random_state", "seed", cli=False, help="seed of the whole ensemble (the command "
          "line's --seed)"),
    Param("first_tree", "int", 0, MAX_TREES, cli=False,
          help="index of the model's first tree in its seeded ensemble"),
    Param("n_jobs", "n_jobs", help="threads (-1: all cores)"),
    Param("verbose", "bool", cli=False, help="show progress while fitting"),
)

#: The settings of the paper's LdSM: histogram leaves storing label
#: distributions, on the features as given, trees of 1000 nodes trained 20
#: epochs, descending by the training rule; ``LdSM.paper()`` builds it.
PAPER_CONFIGURATION = {"leaf_model": "histogram", "leaf_scores": "distribution",
                       "feature_scaling": None, "epochs": 20, "max_nodes": 1000,
                       "descent_threshold": None, "max_wide_branches": None,
                       "max_leaf_labels": None, "max_row_features": None,
                       "route_row_features": None}

#: Settings that only prediction reads: ``merge`` (and older model files)
#: take them from the hyper-parameters and resolve them anew.
PREDICTION_ONLY = ("descent_threshold", "max_wide_branches", "leaf_aggregation",
                   "histogram_weight", "route_row_features", "predict_candidates")

#: Settings a fitted model must hold resolved (never "auto").
PREDICTION_SETTINGS = ("descent_threshold", "max_wide_branches", "max_row_features",
                       "route_row_features", "histogram_weight", "n_candidates",
                       "predict_candidates")

#: Hyper-parameters that may differ between the shards given to ``merge``.
SHARD_PARAMS = ("n_trees", "random_state", "first_tree", "n_jobs", "verbose")
