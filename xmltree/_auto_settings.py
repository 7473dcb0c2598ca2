"""Settings LdSM derives from the training data when left to "auto" or None.

Each rule was chosen on held-out rows of the development sets and checked on
their test splits (``benchmarks/README.md``).
"""

from __future__ import annotations

__all__ = ["LEAF_SIZE", "MAX_AUTO_NODES", "WIDE_DESCENT_MIN_LABELS", "WIDE_DESCENT_THRESHOLD",
           "auto_node_budget", "resolve_descent_threshold"]

#: Training examples per leaf that ``max_nodes=None`` aims at.
LEAF_SIZE = 8

#: Most nodes per tree that ``max_nodes=None`` gives, whatever the data size:
#: bounds the memory of a tree on the largest sets.
MAX_AUTO_NODES = 32768

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


def auto_node_budget(n_samples: int, arity: int) -> int:
    """Nodes of an M-ary tree with a leaf per ``LEAF_SIZE`` examples, capped.

    A full M-ary tree with L leaves has ``(M L - 1) / (M - 1)`` nodes.
    """
    n_leaves = max(1, -(-n_samples // LEAF_SIZE))
    return int(min((arity * n_leaves - 1) // (arity - 1), MAX_AUTO_NODES))


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
