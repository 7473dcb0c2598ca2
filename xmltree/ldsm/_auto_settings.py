"""Settings LdSM derives from the training data when left to "auto" or None.

Each rule was chosen on held-out rows of the development sets and checked on
their test splits. The comments say why; the measurements are in the
benchmarks' lab notebook (``benchmarks/history/``), under the section named
in quotes, and the current results on ``benchmarks/README.md``.
"""

from __future__ import annotations

__all__ = ["LEAF_SIZE", "LEAVES_PER_LABEL", "MAX_AUTO_NODES", "FULL_FLOOR_NODES",
           "LARGE_TREE_NODES", "WIDE_DESCENT_MIN_LABELS", "WIDE_DESCENT_THRESHOLD",
           "HISTOGRAM_WEIGHT", "WIDE_DESCENT_HISTOGRAM_WEIGHT", "MANY_FEATURES",
           "MANY_FEATURES_HISTOGRAM_WEIGHT", "MAX_LEAF_LABELS", "MAX_WIDE_BRANCHES",
           "FEW_WIDE_BRANCHES", "MAX_ROW_FEATURES", "MAX_CUT_ROW_LENGTH", "EPOCHS",
           "SHORT_ROW_EPOCHS", "EPOCH_TOLERANCE", "CANDIDATES", "WIDE_DESCENT_CANDIDATES",
           "WIDE_DESCENT_PREDICT_CANDIDATES", "auto_node_budget", "auto_weight_floor",
           "resolve_descent_threshold", "resolve_histogram_weight", "resolve_max_wide_branches",
           "resolve_max_leaf_labels", "resolve_max_row_features", "resolve_route_row_features",
           "resolve_epochs", "resolve_epoch_tolerance", "resolve_n_candidates",
           "resolve_predict_candidates", "CLASSIFIER_C", "resolve_C"]

#: Training examples per leaf that ``max_nodes=None`` aims at: small leaves
#: make the histograms local and the candidates precise.
LEAF_SIZE = 8

#: Leaves per label that ``max_nodes=None`` gives at most: with few labels
#: and many rows, more leaves only repeat each other's histograms while the
#: linear leaves rank every label anyway, and each level of a tree costs a
#: pass over its rows ("Defaults on the eight-set suite", "Two leaves a
#: label").
LEAVES_PER_LABEL = 2

#: Most nodes per tree that ``max_nodes=None`` gives, whatever the data size:
#: there the weight floor (``FULL_FLOOR_NODES``) has shrunk to a half.
MAX_AUTO_NODES = 131072

#: Trees of up to this many nodes keep the weight floor
#: (``max_weights_per_regressor``) as given when ``max_nodes=None``; larger
#: ones get a floor shrunk in proportion, so that a tree's memory stays that
#: of this many nodes. Most of a large tree's memory is the floor times its
#: nodes, and fewer weights a router cost less precision than fewer, larger
#: leaves ("Amazon-670K shape"), down to a point: a floor shrunk to a third
#: starved the routers of the largest trees ("The weight floor at scale 1").
FULL_FLOOR_NODES = 65536

#: Trees of more than this many nodes are large: their paths take fewer wide
#: branches (``FEW_WIDE_BRANCHES``).
LARGE_TREE_NODES = 32768

#: With many labels, the few leaves an example reaches under the training
#: rule (children scoring >= 0.5) hold few of its labels: the fitted trees
#: then also descend to children scoring >= ``WIDE_DESCENT_THRESHOLD``. With
#: few labels the extra leaves blur the histograms instead, and below 0.05
#: children qualify by their bias alone ("Wider descent").
WIDE_DESCENT_MIN_LABELS = 2000
WIDE_DESCENT_THRESHOLD = 0.05

#: Exponent of the histogram score in the linear leaves' blend. The many
#: leaves of the wide descent say which labels are *near* an example more
#: than which are its own: they choose the candidates, which the classifiers
#: alone then rank. Under the training rule the histograms are sharp and
#: help ("Histogram weight with the wider descent").
HISTOGRAM_WEIGHT = 0.3
WIDE_DESCENT_HISTOGRAM_WEIGHT = 0.0

#: Features above which the training rule's descent gives the histograms
#: ``MANY_FEATURES_HISTOGRAM_WEIGHT`` too: over a vocabulary this large the
#: per-label classifiers separate the labels by themselves, and the few rows
#: of a leaf add their neighbours' labels as noise. A threshold set on one
#: development set (the widest); weighing the two on held-out rows at fit is
#: the better-founded rule still to build ("Defaults on the eight-set suite").
MANY_FEATURES = 65536
MANY_FEATURES_HISTOGRAM_WEIGHT = 0.0

#: Labels per example that make up the labels' training neighbourhoods (and
#: that the linear leaves re-score under the training rule's descent). Under
#: the training rule's descent ten trees reach a few hundred labels at most.
#: The wide descent reaches several times as many true labels as the best 200
#: by histogram keep, and keeping 1000 turns that recall into precision once
#: the classifiers are trained on the same wider neighbourhoods ("More
#: candidates, at fit and at prediction").
CANDIDATES = 200
WIDE_DESCENT_CANDIDATES = 1000

#: Labels per example that the linear leaves re-score at prediction under the
#: wide descent. The classifiers trained on ``WIDE_DESCENT_CANDIDATES``
#: neighbourhoods rank a longer list well, and the true labels the histograms
#: place beyond the first 1000 are many once the trees are large; re-scoring
#: them costs a little prediction time and no fit time ("Candidates at
#: prediction").
WIDE_DESCENT_PREDICT_CANDIDATES = 4000

#: Children a path of the wide descent may take that only its threshold
#: admits (the training rule's are always taken): as the trees grow, more
#: children clear the threshold by their bias alone and the leaves reached
#: multiply. Trees of more than ``LARGE_TREE_NODES`` nodes take fewer
#: ("Amazon-670K shape"), and so do trees grown on cut rows
#: (``MAX_ROW_FEATURES``): routed whole, a row clears more thresholds, and a
#: third wide branch bought a little precision for several times the
#: candidates' time ("Cut trees, routed whole").
MAX_WIDE_BRANCHES = 3
FEW_WIDE_BRANCHES = 2

#: Labels a leaf keeps with linear leaves under the training rule's descent,
#: its most frequent, when the blend weighs the histograms in: adding up long
#: histograms was most of the prediction time, and the classifiers re-rank
#: the candidates anyway. The wide descent and histogram leaves keep all:
#: there the histograms choose among many labels, or are the whole
#: prediction ("Labels a leaf keeps"). So do leaves whose histograms have no
#: weight (``MANY_FEATURES``): they only choose the candidates, and a leaf's
#: rarer labels are candidates the classifiers can rank ("Leaves that only
#: choose candidates keep every label").
MAX_LEAF_LABELS = 32

#: Features of a training row that grow the trees: its strongest ones. A
#: node's training costs time in proportion to its rows' features, and long
#: documents pay most for features that barely move a router; the label
#: classifiers still see every feature ("Features a row grows the trees
#: with"). Under the training rule's descent rows are routed by the same
#: features; the wide descent routes them whole, since a path it takes on a
#: child scoring below the training threshold is decided by the weak
#: features the cut drops: cut rows there lost precision as the trees grew.
#: Under the wide descent, trees that may grow more than ``LARGE_TREE_NODES``
#: nodes, or on rows longer than ``MAX_CUT_ROW_LENGTH``, grow on whole rows
#: ("Cut trees, routed whole").
MAX_ROW_FEATURES = 48

#: Non-zero features a training row may average for the wide descent's
#: trees to grow on its strongest ``MAX_ROW_FEATURES``: a cut that drops
#: most of a long row lost precision however the rows were routed, one that
#: keeps a third or more of it did not ("Cut trees, routed whole").
MAX_CUT_ROW_LENGTH = 4 * MAX_ROW_FEATURES

#: Passes over a node's examples. A pass costs time in proportion to the
#: rows' features, and rows shorter than ``MAX_ROW_FEATURES`` on average
#: gain from more of them at about the cost of fewer passes over long rows
#: ("Epochs for short rows").
EPOCHS = 3
SHORT_ROW_EPOCHS = 10

#: With ``epochs="auto"`` those passes are at most: a node stops once a pass
#: changes the mean objective of its chosen directions by at most this
#: fraction of the previous pass's. What a node needs follows its examples:
#: a node of many rows takes many steps a pass and settles in a few, while
#: the small nodes deep in a tree keep more passes; most of a tree's training
#: is in its top levels, whose nodes hold every row. A node takes at least
#: ``EPOCHS`` passes whatever the tolerance (``MIN_PASSES`` of
#: ``_node_trainer``), so sets of long rows grow the trees they grew ("Fit
#: cost that follows the problem (#34)").
EPOCH_TOLERANCE = 0.1


def auto_node_budget(n_samples: int, arity: int, n_labels: int | None = None) -> int:
    """Nodes of an M-ary tree with a leaf per ``LEAF_SIZE`` examples, capped.

    With `n_labels`, the leaves are also at most ``LEAVES_PER_LABEL`` per
    label. A full M-ary tree with L leaves has ``(M L - 1) / (M - 1)`` nodes.
    """
    n_leaves = max(1, -(-n_samples // LEAF_SIZE))
    if n_labels is not None:
        n_leaves = max(1, min(n_leaves, LEAVES_PER_LABEL * n_labels))
    return int(min((arity * n_leaves - 1) // (arity - 1), MAX_AUTO_NODES))


def auto_weight_floor(floor: int | None, n_nodes: int) -> int | None:
    """The weight floor of trees of `n_nodes` sized by ``max_nodes=None``.

    `floor` (``max_weights_per_regressor``) up to ``FULL_FLOOR_NODES``
    nodes, then ``floor * FULL_FLOOR_NODES / n_nodes`` (at least 1); None
    stays None (no floor).
    """
    if floor is None or n_nodes <= FULL_FLOOR_NODES:
        return floor
    return max(1, floor * FULL_FLOOR_NODES // n_nodes)


def resolve_descent_threshold(setting, routing: str, n_labels: int) -> float | None:
    """The score an example needs to descend to a child after fit (None: as trained).

    "auto" widens the descent of margin-routed trees over more than
    ``WIDE_DESCENT_MIN_LABELS`` labels to children scoring at least
    ``WIDE_DESCENT_THRESHOLD``, instead of the training rule's 0.5.
    """
    if setting != "auto":
        return setting
    if routing == "margin" and n_labels > WIDE_DESCENT_MIN_LABELS:
        return WIDE_DESCENT_THRESHOLD
    return None


def resolve_histogram_weight(setting, descent_threshold: float, training_threshold: float,
                             n_features: int) -> float:
    """The histogram weight of the linear leaves' blend.

    "auto" gives ``WIDE_DESCENT_HISTOGRAM_WEIGHT`` when the fitted trees send
    examples to children scoring below the training rule's threshold
    (`descent_threshold` < `training_threshold`),
    ``MANY_FEATURES_HISTOGRAM_WEIGHT`` when the rows have more than
    ``MANY_FEATURES`` `n_features`, else ``HISTOGRAM_WEIGHT``.
    """
    if setting != "auto":
        return setting
    if descent_threshold < training_threshold:
        return WIDE_DESCENT_HISTOGRAM_WEIGHT
    if n_features > MANY_FEATURES:
        return MANY_FEATURES_HISTOGRAM_WEIGHT
    return HISTOGRAM_WEIGHT


def resolve_max_wide_branches(setting, n_nodes: int, max_row_features: int | None) -> int | None:
    """The wide branches a path may take (None: no limit).

    "auto" gives ``MAX_WIDE_BRANCHES`` for trees of at most
    ``LARGE_TREE_NODES`` nodes (`n_nodes`: the largest tree's) grown on
    whole rows (`max_row_features` None), else ``FEW_WIDE_BRANCHES``.
    """
    if setting != "auto":
        return setting
    if n_nodes <= LARGE_TREE_NODES and max_row_features is None:
        return MAX_WIDE_BRANCHES
    return FEW_WIDE_BRANCHES


def resolve_max_leaf_labels(setting, rescores_candidates: bool, descent_threshold: float,
                            training_threshold: float, histogram_weight: float) -> int | None:
    """The labels a leaf keeps at most (None: all).

    "auto" gives ``MAX_LEAF_LABELS`` with a leaf model that re-scores a few
    candidates per example (linear leaves) when the fitted trees descend by
    the training rule (`descent_threshold` >= `training_threshold`) and the
    histograms are in its scores (`histogram_weight` > 0), else None.
    """
    if setting != "auto":
        return setting
    if (rescores_candidates and descent_threshold >= training_threshold
            and histogram_weight > 0):
        return MAX_LEAF_LABELS
    return None


def resolve_max_row_features(setting, n_rows: int, n_entries: int, max_nodes: int,
                             descent_threshold: float, training_threshold: float) -> int | None:
    """The features of a training row that grow the trees (None: all).

    "auto" gives ``MAX_ROW_FEATURES`` when the `n_rows` training rows hold
    more than ``MAX_ROW_FEATURES`` non-zero `n_entries` per row on average
    and either the fitted trees descend by the training rule
    (`descent_threshold` >= `training_threshold`) or they may grow at most
    ``LARGE_TREE_NODES`` nodes (`max_nodes`) on rows of at most
    ``MAX_CUT_ROW_LENGTH`` non-zero features on average, else None.
    """
    if setting != "auto":
        return setting
    if n_entries <= MAX_ROW_FEATURES * n_rows:
        return None
    if descent_threshold >= training_threshold:
        return MAX_ROW_FEATURES
    if max_nodes <= LARGE_TREE_NODES and n_entries <= MAX_CUT_ROW_LENGTH * n_rows:
        return MAX_ROW_FEATURES
    return None


def resolve_route_row_features(setting, max_row_features: int | None, descent_threshold: float,
                               training_threshold: float) -> int | None:
    """The features of a row that route it down the fitted trees (None: all).

    "auto" gives `max_row_features` (the features the trees grew on, resolved)
    when the fitted trees descend by the training rule (`descent_threshold`
    >= `training_threshold`), else None: the wide descent routes rows whole.
    """
    if setting != "auto":
        return setting
    if descent_threshold >= training_threshold:
        return max_row_features
    return None


def resolve_epoch_tolerance(setting, epochs_setting) -> float:
    """The convergence tolerance that ends a node's passes early (0: never).

    "auto" gives ``EPOCH_TOLERANCE`` when `epochs_setting` (the
    ``epochs`` hyper-parameter, unresolved) is "auto", else 0: passes asked
    for by number are all taken.
    """
    if setting != "auto":
        return setting
    return EPOCH_TOLERANCE if epochs_setting == "auto" else 0.0


def resolve_epochs(setting, n_rows: int, n_entries: int, descent_threshold: float,
                   training_threshold: float) -> int:
    """The passes over a node's examples.

    "auto" gives ``SHORT_ROW_EPOCHS`` when the `n_rows` training rows hold
    fewer than ``MAX_ROW_FEATURES`` non-zero `n_entries` per row on average
    and the fitted trees descend by the training rule (`descent_threshold`
    >= `training_threshold`), else ``EPOCHS``.
    """
    if setting != "auto":
        return setting
    if n_entries < MAX_ROW_FEATURES * n_rows and descent_threshold >= training_threshold:
        return SHORT_ROW_EPOCHS
    return EPOCHS


def resolve_n_candidates(setting, descent_threshold: float, training_threshold: float,
                         n_labels: int) -> int:
    """The labels per training example the linear leaves train on.

    "auto" gives ``WIDE_DESCENT_CANDIDATES`` when the fitted trees send
    examples to children scoring below the training rule's threshold
    (`descent_threshold` < `training_threshold`), else ``CANDIDATES``.
    Never more than the `n_labels` labels: more would only cost memory.
    """
    if setting == "auto":
        wide = descent_threshold < training_threshold
        setting = WIDE_DESCENT_CANDIDATES if wide else CANDIDATES
    return min(setting, n_labels)


def resolve_predict_candidates(setting, n_candidates: int, descent_threshold: float,
                               training_threshold: float, n_labels: int) -> int:
    """The labels per example the linear leaves re-score at prediction.

    "auto" gives ``WIDE_DESCENT_PREDICT_CANDIDATES`` when the fitted trees
    descend more widely than they were trained (`descent_threshold` <
    `training_threshold`), else `n_candidates` (those the classifiers were
    trained on, resolved). Never more than the `n_labels` labels.
    """
    if setting == "auto":
        wide = descent_threshold < training_threshold
        setting = WIDE_DESCENT_PREDICT_CANDIDATES if wide else n_candidates
    return min(setting, n_labels)


#: The label classifiers' C where the trees descend as trained (few labels):
#: the best single value on held-out rows of the real development sets, and
#: the one that the check of ``C="auto"`` kept on every one of them. With
#: the wider descent (many labels) "auto" checks C on training rows set
#: aside (``xmltree.ldsm._linear_leaves.choose_C``): there a sample of the
#: labels judges it at a small share of the fit, and the synthetic shapes,
#: whose labels follow their features with little noise, want a larger C
#: ("Choosing C at fit", "C checked where labels are many").
CLASSIFIER_C = 0.35


def resolve_C(setting, descent_threshold: float, training_threshold: float):
    """The label classifiers' C, or "auto" for the check at fit.

    "auto" gives ``CLASSIFIER_C`` when the fitted trees descend as trained
    (`descent_threshold` >= `training_threshold`); under the wider descent
    it stays "auto", for the linear leaves to choose on rows set aside.
    """
    if setting == "auto" and descent_threshold >= training_threshold:
        return CLASSIFIER_C
    return setting
