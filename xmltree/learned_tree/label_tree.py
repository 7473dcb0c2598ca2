"""M-ary label trees for hierarchical softmax, and their re-assignment.

A :class:`LabelTree` places every label at exactly one leaf of a tree whose
internal nodes have at most ``arity`` child *slots*. Slot ``j`` of node ``n``
holds either an internal node id, a label (a leaf), or nothing. Node
parameters in the compiled model are indexed by ``(node, slot)``, so slots are
kept stable when the tree is rebuilt: the label assignment of Jernite et al.
(2017, Algorithm 2) decides which labels go below each slot, and a slot that
stays internal keeps its node id (and hence its learned weights).

Well-formedness
---------------
A full M-ary tree over ``K`` leaves exists only when ``K ≡ 1 (mod M − 1)``.
As in M-ary Huffman coding, the label set is padded with *dummy* labels
(ids ``n_labels`` and up) to reach that count; dummies are assigned last and
their leaves become empty slots, which the model masks out of the softmax. The
depth-constrained variant (supplement, Algorithm 3) instead bounds every child
of a node at depth ``d`` by ``M ** (D - d - 1)`` labels and needs no padding.

Encoding of a slot (``children[n, j]``): ``c >= 0`` is an internal node id,
``c == EMPTY`` (-1) an empty slot, ``c <= -2`` the leaf of label ``-c - 2``.

This is NumPy (it runs a few dozen times per training run), except the
greedy pair walk of AssignLabels, ``_learned_tree.greedy_assign``.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from ._learned_tree import greedy_assign, random_permutation

__all__ = [
    "EMPTY",
    "LabelTree",
    "huffman_tree",
    "random_tree",
    "flat_tree",
    "balanced_depth_tree",
    "assign_children",
    "reassign_tree",
    "n_padded_labels",
]

#: Code of an empty child slot in ``LabelTree.children``.
EMPTY = -1

#: Largest ``n_labels x max_depth`` of the dense root-to-leaf path arrays of a
#: :class:`LabelTree` (1 GiB each); balanced and Huffman trees stay far below.
MAX_PATH_ENTRIES = 2**28


def leaf_code(label: int) -> int:
    """Return the slot code of the leaf holding ``label``."""
    return -int(label) - 2


def n_padded_labels(n_labels: int, arity: int) -> int:
    """Return the smallest ``K >= n_labels`` with ``K ≡ 1 (mod arity − 1)``."""
    if arity == 2 or n_labels <= 1:
        return max(n_labels, 1)
    remainder = (n_labels - 1) % (arity - 1)
    return n_labels if remainder == 0 else n_labels + (arity - 1 - remainder)


@dataclass
class LabelTree:
    """An M-ary label tree as a struct of arrays.

    Attributes
    ----------
    arity : int
        Maximum number of children of a node (``M``).
    n_labels : int
        Number of real labels; each owns exactly one leaf.
    children : numpy.ndarray of shape (n_nodes, arity), int32
        Slot codes (see module docstring). Node 0 is the root.
    """

    arity: int
    n_labels: int
    children: np.ndarray

    def __post_init__(self):
        self.children = np.ascontiguousarray(self.children, dtype=np.int32)
        self._compute_paths()

    @property
    def n_nodes(self) -> int:
        """Number of internal nodes (rows of ``children``)."""
        return self.children.shape[0]

    def _compute_paths(self) -> None:
        """Derive per-label root-to-leaf paths and a top-down node order.

        Fills ``path_nodes`` / ``path_slots`` (shape ``(n_labels,
        max_depth)``, -1 past the end), ``label_depth`` (edges from the root
        to the label's leaf), ``node_depth`` and ``node_order`` (every node
        after its parent). Raises ``ValueError`` if a label has no leaf or
        several, a node is unreachable or reached twice, or the paths would
        take more than ``MAX_PATH_ENTRIES`` entries (a chain-like tree: its
        paths grow as ``n_labels x depth``, far beyond the tree itself).
        """
        n_nodes, arity = self.children.shape
        node_depth = np.full(n_nodes, -1, dtype=np.int32)
        parent_slot = [(-1, -1)] * n_nodes
        leaf_of = {}
        order = []
        stack = [0]
        node_depth[0] = 0
        while stack:
            node = stack.pop()
            order.append(node)
            for slot, code in enumerate(self.children[node]):
                code = int(code)
                if code >= 0:
                    if code >= n_nodes or node_depth[code] != -1:
                        raise ValueError(f"node {code} is out of range or reached twice")
                    node_depth[code] = node_depth[node] + 1
                    parent_slot[code] = (node, slot)
                    stack.append(code)
                elif code <= -2:
                    label = -code - 2
                    if label >= self.n_labels or label in leaf_of:
                        raise ValueError(f"label {label} is out of range or has two leaves")
                    leaf_of[label] = (node, slot)
        if len(order) != n_nodes:
            raise ValueError("some internal nodes are not reachable from the root")
        if len(leaf_of) != self.n_labels:
            raise ValueError(f"{self.n_labels - len(leaf_of)} labels have no leaf")
        label_depth = np.zeros(self.n_labels, dtype=np.int32)
        for label, (node, _) in leaf_of.items():
            label_depth[label] = node_depth[node] + 1
        max_depth = int(label_depth.max()) if self.n_labels else 0
        if self.n_labels * max_depth > MAX_PATH_ENTRIES:
            raise ValueError(f"the paths of {self.n_labels} labels, {max_depth} deep, exceed "
                             f"{MAX_PATH_ENTRIES} entries")
        path_nodes = np.full((self.n_labels, max_depth), -1, dtype=np.int32)
        path_slots = np.full((self.n_labels, max_depth), -1, dtype=np.int32)
        for label, (node, slot) in leaf_of.items():
            for level in range(label_depth[label] - 1, -1, -1):
                path_nodes[label, level] = node
                path_slots[label, level] = slot
                node, slot = parent_slot[node]
        self.path_nodes = path_nodes
        self.path_slots = path_slots
        self.label_depth = label_depth
        self.node_depth = node_depth
        self.node_order = np.asarray(order, dtype=np.int32)

    @property
    def max_depth(self) -> int:
        """Length of the longest root-to-leaf path (in edges)."""
        return self.path_nodes.shape[1]

    def leaves(self) -> tuple[np.ndarray, np.ndarray]:
        """Return the ``(node, slot)`` of every label's leaf, two arrays of shape (n_labels,)."""
        labels = np.arange(self.n_labels)
        last = self.label_depth - 1
        return self.path_nodes[labels, last], self.path_slots[labels, last]

    def labels_under(self, node: int) -> np.ndarray:
        """Return the sorted labels whose leaf lies below internal ``node``."""
        hits = np.any(self.path_nodes == node, axis=1)
        return np.flatnonzero(hits).astype(np.int32)

    def describe(self, names=None, max_labels: int = 4, weights=None, max_nodes: int = 50) -> str:
        """Return a text rendering of the tree, one internal node per line.

        Like Figure 3 of the paper, each node lists its depth and the
        ``max_labels`` most frequent labels below it.

        Parameters
        ----------
        names : sequence of str, optional
            Display name of each label (default: the label id).
        max_labels : int, default=4
            Labels shown per node.
        weights : array-like of shape (n_labels,), optional
            Label frequencies used to pick the labels shown (default: ids).
        max_nodes : int, default=50
            Stop after this many nodes (top-down order).
        """
        weights = np.zeros(self.n_labels) if weights is None else np.asarray(weights)
        lines = []
        for node in self.node_order[:max_nodes]:
            labels = self.labels_under(int(node))
            top = labels[np.argsort(-weights[labels], kind="stable")[:max_labels]]
            shown = ", ".join(str(names[i]) if names is not None else str(i) for i in top)
            indent = "  " * int(self.node_depth[node])
            lines.append(f"{indent}node {int(node)} ({labels.size} labels): {shown}")
        return "\n".join(lines)


# --------------------------------------------------------------------------
# Building trees from label groups
# --------------------------------------------------------------------------

def _tree_from_nested(nested, arity: int, n_labels: int) -> LabelTree:
    """Build a LabelTree from nested lists (a list is a node, an int a label).

    Labels ``>= n_labels`` are dummies and become empty slots.
    """
    rows = []

    def build(group) -> int:
        node = len(rows)
        rows.append(None)
        row = np.full(arity, EMPTY, dtype=np.int32)
        for slot, child in enumerate(group):
            if isinstance(child, list):
                row[slot] = build(child)
            elif child < n_labels:
                row[slot] = leaf_code(child)
        rows[node] = row
        return node

    root = nested if isinstance(nested, list) else [nested]
    build(root)
    return LabelTree(arity, n_labels, np.vstack(rows))


def huffman_tree(frequencies, arity: int) -> LabelTree:
    """Return the M-ary Huffman tree of the label frequencies.

    Dummy zero-frequency labels pad the set to ``K ≡ 1 (mod M − 1)`` so that
    every merge takes exactly ``arity`` subtrees. Ties are broken by label
    id, which makes the tree deterministic.
    """
    frequencies = np.asarray(frequencies, dtype=np.float64)
    n_labels = frequencies.shape[0]
    n_total = n_padded_labels(n_labels, arity)
    heap = [(float(frequencies[i]) if i < n_labels else 0.0, i, i) for i in range(n_total)]
    heapq.heapify(heap)
    groups = {i: i for i in range(n_total)}
    next_id = n_total
    while len(heap) > 1:
        merged = [heapq.heappop(heap) for _ in range(arity)]
        groups[next_id] = [groups.pop(key) for _, _, key in merged]
        heapq.heappush(heap, (sum(w for w, _, _ in merged), next_id, next_id))
        next_id += 1
    return _tree_from_nested(groups[heap[0][2]], arity, n_labels)


def _balanced_sizes(n: int, arity: int) -> list[int]:
    """Split ``n ≡ 1 (mod arity − 1)`` labels into ``arity`` valid child sizes."""
    blocks = (n - arity) // (arity - 1) if arity > 2 else n - 2
    step = arity - 1
    sizes = [1 + step * (blocks // arity + (j < blocks % arity)) for j in range(arity)]
    return sizes


def _split_balanced(labels: list, arity: int):
    """Nest ``labels`` into a balanced well-formed M-ary tree."""
    if len(labels) == 1:
        return labels[0]
    if len(labels) <= arity:
        return list(labels)
    out, start = [], 0
    for size in _balanced_sizes(len(labels), arity):
        out.append(_split_balanced(labels[start:start + size], arity))
        start += size
    return out


def random_tree(n_labels: int, arity: int, seed: int) -> LabelTree:
    """Return a random balanced M-ary tree (labels shuffled, then split evenly)."""
    n_total = n_padded_labels(n_labels, arity)
    order = list(random_permutation(n_total, seed))
    return _tree_from_nested(_split_balanced([int(i) for i in order], arity), arity, n_labels)


def flat_tree(n_labels: int) -> LabelTree:
    """Return the one-node tree of a flat softmax (arity ``n_labels``)."""
    return LabelTree(n_labels, n_labels, np.array([[leaf_code(i) for i in range(n_labels)]]))


def balanced_depth_tree(n_labels: int, arity: int, max_depth: int, seed: int) -> LabelTree:
    """Return a random tree whose leaves are all at depth <= ``max_depth``.

    Labels are shuffled then cut into ``arity`` contiguous groups at every
    level, each no larger than ``arity ** (remaining depth)``.
    """
    if n_labels > arity ** max_depth:
        raise ValueError(f"{n_labels} labels do not fit in a tree of arity={arity} and "
                         f"max_depth={max_depth} (it holds at most arity ** max_depth)")
    order = [int(i) for i in random_permutation(n_labels, seed)]

    def split(labels, depth):
        if len(labels) == 1 and depth > 0:
            return labels[0]
        chunks = np.array_split(np.asarray(labels), min(arity, len(labels)))
        return [split([int(i) for i in c], depth + 1) for c in chunks]

    return _tree_from_nested(split(order, 0), arity, n_labels)


# --------------------------------------------------------------------------
# Algorithm 2 / Algorithm 3: greedy re-assignment of labels to child slots
# --------------------------------------------------------------------------

def assignment_scores(sum_probas, counts, log_gradient: bool = False):
    """Return the greedy keys of AssignLabels for every (label, child) pair.

    Parameters
    ----------
    sum_probas : numpy.ndarray of shape (n, M)
        Per label, the sum of the node's predicted child distributions over
        the examples of that label that reached the node.
    counts : numpy.ndarray of shape (n,)
        Number of such examples.
    log_gradient : bool, default=False
        Use ``∂J_n / ∂ log p_{j|i}`` (eq. 12, density estimation) instead of
        ``∂J_n / ∂ p_{j|i}`` (eq. 10).

    Returns
    -------
    gradient : numpy.ndarray of shape (n, M)
        ``(2/M) q_i (1 − q_i) sign(p_{j|i} − p_j)`` (times ``p_{j|i}``).
    margin : numpy.ndarray of shape (n, M)
        ``p_{j|i} − p_j``, the tie-breaker among equal gradients. A label
        without statistics has gradient and margin 0 everywhere.
    """
    sum_probas = np.asarray(sum_probas, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    arity = sum_probas.shape[1]
    total = counts.sum()
    if total <= 0:
        zeros = np.zeros_like(sum_probas)
        return zeros, zeros
    seen = counts > 0
    q = counts / total
    p_global = sum_probas.sum(axis=0) / total
    p_cond = np.where(seen[:, None], sum_probas / np.maximum(counts, 1)[:, None], p_global)
    margin = p_cond - p_global
    gradient = (2.0 / arity) * (q * (1 - q))[:, None] * np.sign(margin)
    if log_gradient:
        gradient = gradient * p_cond
    return gradient, margin


#: Margin given to the current slot of a label without statistics: positive,
#: but below any margin a seen label can have in practice.
_STAY = 1e-12


def assign_children(sum_probas, counts, arity: int, *, n_real: int | None = None,
                    levels_below: int | None = None, log_gradient: bool = False,
                    current=None) -> np.ndarray:
    """Greedily assign the labels reaching a node to its child slots.

    This is AssignLabels for one node (Algorithm 2, or Algorithm 3 when
    ``levels_below`` is given): pairs (label, child) are taken in decreasing
    order of ``∂J_n/∂p_{j|i}`` (ties broken by the margin ``p_{j|i} − p_j``,
    then by label and child order), skipping assigned labels and full
    children. Dummy labels (rows ``>= n_real``) are placed last, in the
    remaining room.

    Parameters
    ----------
    sum_probas : array-like of shape (n, arity)
    counts : array-like of shape (n,)
        Statistics of the ``n`` labels reaching the node (see
        :func:`assignment_scores`).
    arity : int
    n_real : int, optional
        Rows ``n_real:`` are dummy labels (default: none).
    levels_below : int, optional
        Depth-constrained mode: each child holds at most
        ``arity ** levels_below`` labels. Otherwise every child ends with a
        label count ≡ 1 (mod arity − 1), which needs ``n ≡ 1 (mod arity − 1)``.
    log_gradient : bool, default=False
        See :func:`assignment_scores`.
    current : array-like of shape (n,), optional
        Current child slot of each label (-1 if none). A label without
        statistics prefers to stay there rather than move to slot 0, which
        keeps rarely seen labels from churning between re-assignments.

    Returns
    -------
    numpy.ndarray of shape (n,), int32
        Child slot of every label.
    """
    sum_probas = np.asarray(sum_probas, dtype=np.float64)
    n = sum_probas.shape[0]
    n_real = n if n_real is None else n_real
    if levels_below is None:
        if arity > 2 and (n - 1) % (arity - 1) != 0:
            raise ValueError(f"{n} labels cannot fill a well-formed {arity}-ary subtree")
        limit = 0
    else:
        limit = arity ** levels_below
        if n > arity * limit:
            raise ValueError(f"{n} labels exceed the depth constraint")
        limit = min(limit, n)  # a child never holds more than n: keeps it in int32
    gradient, margin = assignment_scores(sum_probas[:n_real], counts[:n_real], log_gradient)
    if current is not None:
        current = np.asarray(current)[:n_real]
        unseen = np.flatnonzero((np.asarray(counts)[:n_real] <= 0) & (current >= 0))
        margin[unseen, current[unseen]] = _STAY
    # lexsort sorts by its last key first: gradient, then margin, descending;
    # it is stable, so remaining ties keep (label, child) order.
    flat_order = np.lexsort((-margin.ravel(), -gradient.ravel()))
    pair_labels, pair_children = np.unravel_index(flat_order, gradient.shape)
    return greedy_assign(pair_labels.astype(np.int32), pair_children.astype(np.int32),
                         n_real, n, arity, limit)


def reassign_tree(tree: LabelTree, sum_probas, counts, *, max_depth: int | None = None,
                  log_gradient: bool = False) -> tuple[LabelTree, np.ndarray]:
    """Re-run AssignLabels top-down on the whole tree (Algorithm 1, line 8).

    Statistics are indexed by ``(label, depth)``: row ``[i, d]`` describes
    label ``i`` at the node of depth ``d`` on its *current* path. They are
    used at a node only for labels whose current path passes through that
    same node at that depth.

    Parameters
    ----------
    tree : LabelTree
        The current tree.
    sum_probas : numpy.ndarray of shape (n_labels, tree.max_depth, arity)
    counts : numpy.ndarray of shape (n_labels, tree.max_depth)
    max_depth : int, optional
        Use the depth-constrained assignment (Algorithm 3) with this depth.
    log_gradient : bool, default=False
        Use eq. 12 (density estimation).

    Returns
    -------
    new_tree : LabelTree
        The re-assigned tree. A slot that stays internal keeps its node
        (under a possibly new id, see ``source``).
    source : numpy.ndarray of shape (new_tree.n_nodes,), int32
        Old id of each new node, whose parameters it inherits, or -1 for a
        node created by this re-assignment.
    """
    arity, n_labels = tree.arity, tree.n_labels
    n_total = n_labels if max_depth is not None else n_padded_labels(n_labels, arity)
    rows: dict[int, np.ndarray] = {}
    # New internal nodes get provisional keys above every old id.
    provisional = iter(range(max(tree.n_nodes, 1) + _PROVISIONAL, 2 ** 31 - 1))

    def stats_at(node: int, depth: int, labels: np.ndarray):
        """Statistics and current slot of the labels whose path uses `node`."""
        probas = np.zeros((labels.size, arity))
        cnt = np.zeros(labels.size)
        current = np.full(labels.size, -1)
        if depth < tree.max_depth:
            real = labels < n_labels
            here = np.zeros(labels.size, dtype=bool)
            here[real] = tree.path_nodes[labels[real], depth] == node
            probas[here] = sum_probas[labels[here], depth]
            cnt[here] = counts[labels[here], depth]
            current[here] = tree.path_slots[labels[here], depth]
        return probas, cnt, current

    def build(node: int, depth: int, labels: np.ndarray) -> None:
        probas, cnt, current = stats_at(node, depth, labels)
        levels = None if max_depth is None else max_depth - depth - 1
        n_real = int(np.count_nonzero(labels < n_labels))
        slots = assign_children(probas, cnt, arity, n_real=n_real, levels_below=levels,
                                log_gradient=log_gradient, current=current)
        row = np.full(arity, EMPTY, dtype=np.int64)
        order = np.argsort(slots, kind="stable")      # keeps dummies last in each group
        sizes = np.bincount(slots, minlength=arity)
        ends = np.cumsum(sizes)
        for slot in np.flatnonzero(sizes):
            group = labels[order[ends[slot] - sizes[slot]:ends[slot]]]
            real = group[group < n_labels]
            if real.size == 1:
                row[slot] = leaf_code(real[0])
            elif real.size:
                old = int(tree.children[node, slot]) if node < tree.n_nodes else EMPTY
                child = old if old >= 0 else next(provisional)
                row[slot] = child
                build(child, depth + 1, group)
        rows[node] = row

    # Real labels first: assign_children expects dummies in the last rows.
    build(0, 0, np.arange(n_total))
    return _renumber(rows, arity, n_labels)


#: Offset of the provisional keys of nodes created by :func:`reassign_tree`.
_PROVISIONAL = 1 << 24


def _renumber(rows: dict, arity: int, n_labels: int):
    """Number the nodes of ``rows`` 0..n-1 (old ids first, in order).

    Returns the tree and, per new id, the old id whose parameters it
    inherits (-1 for a node that did not exist before).
    """
    keys = sorted(rows)
    new_id = {key: i for i, key in enumerate(keys)}
    children = np.full((len(keys), arity), EMPTY, dtype=np.int32)
    for key, row in rows.items():
        internal = row >= 0
        new_row = row.copy()
        new_row[internal] = [new_id[int(c)] for c in row[internal]]
        children[new_id[key]] = new_row
    source = np.array([key if key < _PROVISIONAL else -1 for key in keys], dtype=np.int32)
    return LabelTree(arity, n_labels, children), source
