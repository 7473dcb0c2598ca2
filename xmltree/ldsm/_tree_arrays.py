"""The flat LdSM tree: its options, its model-file contract and its checks.

One flat tree is a dict of NumPy arrays (:data:`TREE_ARRAYS`), as
``xmltree.ldsm._builder.build_tree`` returns it and as model files store it; a
:class:`xmltree.ldsm._forest.Forest` concatenates several for prediction. The
kernels trust these arrays completely (bounds checks are off), so a tree read
from a file goes through :func:`check_tree` first; a tree the builder just
grew does not need to.

This module also holds the options shared by training, prediction and the
estimator (:data:`ROUTING_THRESHOLDS`, :data:`MAX_ARITY`, :data:`LEAF_SCORES`,
:data:`LEAF_AGGREGATIONS`): one table, read by all three.
"""

from __future__ import annotations

import mmap

import numpy as np
import scipy.sparse as sp

from .._validation import check_csr_structure, kernel_csr
from ..exceptions import DataFormatError, ModelFormatError

__all__ = ["TREE_ARRAYS", "ROUTING_THRESHOLDS", "MAX_ARITY", "LEAF_SCORES", "LEAF_AGGREGATIONS",
           "MIN_DIRECT_IDS", "DIRECT_IDS_PER_WEIGHT", "FeatureIds", "routing_threshold",
           "check_tree", "weights_by_node", "concatenate_trees", "feature_slots",
           "OWN_MAPPING_BYTES", "mapped_empty"]

#: Routing threshold on the raw regressor score for each routing mode: the
#: authors' 0.5 on the margin, or sigmoid(z) >= 0.5, i.e. z >= 0.
ROUTING_THRESHOLDS = {"margin": 0.5, "sigmoid": 0.0}

#: Largest arity M: node training enumerates the 2^M - 1 non-empty subsets of
#: children for every example.
MAX_ARITY = 8

#: What leaves may store per label: a normalised histogram, or the fraction
#: of the leaf's training examples carrying the label (``_ldsm.build_tree``).
LEAF_SCORES = ("distribution", "frequency")

#: How a tree combines the leaves an example reaches: their average (the
#: paper's Algorithm 2) or their sum, which gives a tree that sends the
#: example down several paths a larger say (see ``LdSM``).
LEAF_AGGREGATIONS = ("mean", "sum")

#: The arrays of one flat tree, with their dtypes (the build_tree contract).
TREE_ARRAYS = {
    "first_child": np.int32,
    "parent": np.int32,
    "depth": np.int32,
    "n_samples": np.int64,
    "weight_indptr": np.int64,
    "weight_indices": np.int32,
    "weight_values": np.float32,
    "bias": np.float32,
    "leaf_indptr": np.int64,
    "leaf_labels": np.int32,
    "leaf_values": np.float32,
    "trace_indptr": np.int64,
    "trace_values": np.float32,
}


def routing_threshold(routing):
    """Return the threshold on the raw score z used by a routing mode.

    Parameters
    ----------
    routing : {"margin", "sigmoid"}
        Routing mode of the trees.

    Returns
    -------
    float
    """
    try:
        return ROUTING_THRESHOLDS[routing]
    except KeyError:
        raise ValueError(
            f"routing must be one of {sorted(ROUTING_THRESHOLDS)}, got {routing!r}"
        ) from None


# --------------------------------------------------------------------------
# Validation of one flat tree (Python, vectorised): everything the kernels
# rely on, so that a tampered model file can never make them read out of
# bounds or loop forever.
# --------------------------------------------------------------------------

def check_tree(tree, arity, n_features, n_labels, leaf_scores="distribution"):
    """Check that a flat tree satisfies the ``build_tree`` contract.

    Parameters
    ----------
    tree : dict of str to numpy.ndarray
        The arrays listed in :data:`TREE_ARRAYS`.
    arity : int
        Children per internal node.
    n_features, n_labels : int
        Sizes of the feature and label spaces.
    leaf_scores : {"distribution", "frequency"}, default="distribution"
        What the leaves store (see ``xmltree.ldsm._builder.build_tree``): histograms
        summing to at most 1, or label frequencies in (0, 1].

    Raises
    ------
    ModelFormatError
        Naming the first violated property: a missing array, a wrong dtype
        or shape, a broken parent/child structure, a non-monotone or
        inconsistent ``indptr``, an out-of-range index, a non-finite value,
        or a leaf histogram that is empty, not positive, or sums to more
        than 1 (distributions; less when a leaf kept only its most frequent
        labels) or exceeds 1 (frequencies).
    """
    _check_dtypes(tree)
    n_nodes = tree["first_child"].shape[0]
    if n_nodes < 1:
        raise ModelFormatError("tree has no nodes")
    _check_shapes(tree, n_nodes, arity)
    _check_structure(tree, n_nodes, arity)
    is_leaf = tree["first_child"] < 0
    _check_csr(tree["weight_indptr"], tree["weight_indices"], "weight indices", n_features)
    _check_csr(tree["leaf_indptr"], tree["leaf_labels"], "leaf labels", n_labels)
    _check_csr(tree["trace_indptr"], tree["trace_values"], "objective trace")
    _check_rows_present(tree, is_leaf, arity)
    for name in ("weight_values", "bias", "leaf_values"):
        if not np.all(np.isfinite(tree[name])):
            raise ModelFormatError(f"tree array {name!r} has NaN or infinite values")
    _check_histograms(tree, is_leaf, leaf_scores)


def _check_dtypes(tree):
    for name, dtype in TREE_ARRAYS.items():
        array = tree.get(name)
        if not isinstance(array, np.ndarray):
            raise ModelFormatError(f"tree array {name!r} is missing")
        if array.dtype != np.dtype(dtype):
            raise ModelFormatError(
                f"tree array {name!r} has dtype {array.dtype}, expected {np.dtype(dtype)}"
            )
        if array.ndim != (2 if name in ("bias", "weight_values") else 1):
            raise ModelFormatError(f"tree array {name!r} has {array.ndim} dimensions")


def _check_shapes(tree, n_nodes, arity):
    expected = {
        "parent": (n_nodes,),
        "depth": (n_nodes,),
        "n_samples": (n_nodes,),
        "bias": (n_nodes, arity),
        "weight_indptr": (n_nodes + 1,),
        "leaf_indptr": (n_nodes + 1,),
        "trace_indptr": (n_nodes + 1,),
    }
    for name, shape in expected.items():
        if tree[name].shape != shape:
            raise ModelFormatError(
                f"tree array {name!r} has shape {tree[name].shape}, expected {shape}"
            )


def _check_structure(tree, n_nodes, arity):
    """Root 0; every internal node owns `arity` consecutive later nodes whose
    parent it is; every other node is owned by its parent. Hence each node is
    reached from exactly one parent, and a descent visits it at most once."""
    first_child, parent, depth = tree["first_child"], tree["parent"], tree["depth"]
    nodes = np.arange(n_nodes, dtype=np.int64)
    if parent[0] != -1 or depth[0] != 0:
        raise ModelFormatError("tree root must be node 0 with parent -1 and depth 0")
    if n_nodes > 1 and np.any((parent[1:] < 0) | (parent[1:] >= nodes[1:])):
        raise ModelFormatError("tree has a parent id that is not smaller than its child's id")
    internal = np.flatnonzero(first_child >= 0)
    if np.any(first_child < -1):
        raise ModelFormatError("tree array 'first_child' has a negative id other than -1")
    children = first_child[internal].astype(np.int64)
    if np.any(children <= internal) or np.any(children + arity > n_nodes):
        raise ModelFormatError("tree has a child id out of range or not above its parent")
    owner = np.full(n_nodes, -1, dtype=np.int64)
    for m in range(arity):
        owner[children + m] = internal
    if np.any(owner[1:] != parent[1:]):
        raise ModelFormatError("tree 'parent' and 'first_child' arrays disagree")
    if n_nodes > 1 and np.any(depth[1:] != depth[parent[1:]] + 1):
        raise ModelFormatError("tree 'depth' is not parent depth + 1")


def _check_csr(indptr, entries, name, n_cols=None):
    """Check one CSR block of a tree: `indptr` consistent with `entries`, and
    for `n_cols` given, sorted unique column indices below `n_cols`."""
    if indptr[0] != 0 or indptr[-1] != entries.shape[0] or np.any(np.diff(indptr) < 0):
        raise ModelFormatError(f"tree {name}: indptr is not a valid CSR row pointer")
    if n_cols is not None:
        try:
            check_csr_structure(indptr, entries, (indptr.shape[0] - 1, n_cols), f"tree {name}")
        except DataFormatError as exc:
            raise ModelFormatError(str(exc)) from None


def _check_rows_present(tree, is_leaf, arity):
    """Internal nodes have regressors and no histogram; leaves the opposite."""
    if tree["weight_values"].shape != (tree["weight_indices"].shape[0], arity):
        raise ModelFormatError("tree weight values are not one row of arity weights "
                               "per feature id")
    if tree["leaf_values"].shape != tree["leaf_labels"].shape:
        raise ModelFormatError("tree leaf labels and values differ in length")
    if np.any(np.diff(tree["weight_indptr"])[is_leaf] != 0):
        raise ModelFormatError("tree has regressor weights on a leaf, which must have none")
    histogram_sizes = np.diff(tree["leaf_indptr"])
    if np.any(histogram_sizes[~is_leaf] != 0):
        raise ModelFormatError("tree has a label histogram on an internal node")
    if np.any(histogram_sizes[is_leaf] == 0):
        raise ModelFormatError("tree has a leaf with an empty label histogram")


def _check_histograms(tree, is_leaf, leaf_scores):
    values = tree["leaf_values"]
    # Positive values make a label's score non-zero exactly when one of its
    # leaves was reached, which the dense accumulation relies on.
    if np.any(values <= 0):
        raise ModelFormatError("tree has a leaf histogram value that is not positive")
    if leaf_scores == "frequency":
        if np.any(values > 1):
            raise ModelFormatError("tree has a leaf label frequency above 1")
        return
    # A distribution sums to 1, or to less when the leaf kept only its most
    # frequent labels (``max_leaf_labels``), with their shares among all.
    starts = tree["leaf_indptr"][:-1][is_leaf]
    sums = np.add.reduceat(values.astype(np.float64), starts) if values.size else np.zeros(0)
    if np.any(sums > 1.0 + 1e-3):
        raise ModelFormatError("tree has a leaf histogram that sums to more than 1")


#: Feature ids are below this (int32): a node and an id pack into one int64 key.
_ID_RANGE = 2**31


def weights_by_node(indptr, indices, values, arity):
    """A tree's weights stored regressor by regressor, in the layout of today's trees.

    Model files of format version 4 and older keep regressor m of node v as
    CSR row ``v * arity + m`` of ``(weight_indptr, weight_indices,
    weight_values)``; today a node has one sorted list of feature ids, the
    union of its regressors', with a weight per regressor (0 where it kept
    none): see ``xmltree.ldsm._builder.build_tree``.

    Parameters
    ----------
    indptr : numpy.ndarray of int64, shape (n_nodes * arity + 1,)
    indices : numpy.ndarray of int32
    values : numpy.ndarray of float32, same length
    arity : int

    Returns
    -------
    weight_indptr, weight_indices, weight_values : numpy.ndarray
        int64 (n_nodes + 1,), int32 (n_ids,) and float32 (n_ids, arity).

    Raises
    ------
    ModelFormatError
        If the arrays are not one CSR row of sorted unique feature ids per
        regressor.
    """
    for name, array, dtype in (("weight_indptr", indptr, np.int64),
                               ("weight_indices", indices, np.int32),
                               ("weight_values", values, np.float32)):
        if not isinstance(array, np.ndarray) or array.dtype != dtype or array.ndim != 1:
            raise ModelFormatError(f"tree array {name!r} is missing or not a 1-D "
                                   f"{np.dtype(dtype).name} array")
    if indptr.shape[0] < 1 or (indptr.shape[0] - 1) % arity or values.shape != indices.shape:
        raise ModelFormatError("tree weights are not one CSR row per regressor")
    _check_csr(indptr, indices, "weight indices", _ID_RANGE - 1)
    n_nodes = (indptr.shape[0] - 1) // arity
    regressor = np.repeat(np.arange(n_nodes * arity, dtype=np.int64), np.diff(indptr))
    keys, position = np.unique(regressor // arity * _ID_RANGE + indices, return_inverse=True)
    by_node = np.zeros((keys.size, arity), dtype=np.float32)
    by_node[position, regressor % arity] = values
    node_indptr = np.zeros(n_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys // _ID_RANGE, minlength=n_nodes), out=node_indptr[1:])
    return node_indptr, (keys % _ID_RANGE).astype(np.int32), by_node


# --------------------------------------------------------------------------
# Concatenation of several trees into one forest
# --------------------------------------------------------------------------

def concatenate_trees(trees: list[dict], arity: int, release: bool = False) -> dict:
    """Join flat trees into the arrays of one forest, node ids made global.

    Tree t owns global nodes ``tree_offset[t] .. tree_offset[t + 1] - 1``;
    see ``_forest_arrays.pxd`` for every array. The result is read-only: the kernels
    trust it. With ``release``, each tree's weight and leaf arrays are taken
    out of its dict as soon as they are copied, so that a caller owning the
    dicts holds them once (and one tree's array twice) rather than twice.

    Raises
    ------
    ModelFormatError
        If the forest has too many nodes for 32-bit node ids.
    """
    n_nodes = np.array([tree["first_child"].shape[0] for tree in trees], dtype=np.int64)
    node_offset = np.concatenate([[0], np.cumsum(n_nodes)])
    if node_offset[-1] >= 2**31 // arity:
        raise ModelFormatError("forest too large for 32-bit node ids")
    forest = {
        "tree_offset": node_offset,
        "first_child": np.concatenate([
            np.where(tree["first_child"] >= 0, tree["first_child"] + offset, -1)
            for tree, offset in zip(trees, node_offset)
        ]).astype(np.int32),
        "weight_indptr": _concatenate_indptr([tree["weight_indptr"] for tree in trees]),
        "weight_indices": _join(trees, "weight_indices", release),
        "weight_values": _join(trees, "weight_values", release),
        "bias": np.concatenate([tree["bias"].ravel() for tree in trees]),
        "leaf_indptr": _concatenate_indptr([tree["leaf_indptr"] for tree in trees]),
        "leaf_labels": _join(trees, "leaf_labels", release),
        "leaf_values": _join(trees, "leaf_values", release),
    }
    for array in forest.values():
        array.flags.writeable = False
    return forest


# --------------------------------------------------------------------------
# Feature ids as the prediction kernels index them
# --------------------------------------------------------------------------

#: The kernels index their per-feature tables (a node-block slot per
#: feature, an example spread out for the label classifiers) by the feature
#: ids themselves while the width a set of weights needs (its largest id + 1)
#: is at most MIN_DIRECT_IDS or DIRECT_IDS_PER_WEIGHT ids per stored weight: a table
#: (4 bytes an id, one per thread for the examples) then costs at most what
#: the weights do (8 bytes each). A model file may claim 2**31 - 2 features
#: and put a weight at the last id, and a model over a hashed feature space
#: uses a few ids among millions: there, ids are ranked among the used ones
#: instead (``FeatureIds``).
MIN_DIRECT_IDS = 2**16
DIRECT_IDS_PER_WEIGHT = 2

#: Ids counted at a time by ``feature_slots``: np.bincount copies its input
#: as 64-bit integers, and a copy of several MB, once freed, stays in the
#: process's heap (glibc) at the peak of the fit; a small one costs no time.
COUNT_CHUNK = 2**16


class FeatureIds:
    """The feature ids of a set of weights, as the prediction kernels index them.

    Either directly, in tables of ``width`` = the largest id used + 1 (a
    row's larger ids are features no weight has: the kernels skip them), or,
    when the weights are too few to justify such tables (see
    :data:`MIN_DIRECT_IDS`), compactly: every id replaced by its rank among
    the ids used, in a copy of the weights' ids and in the rows given at
    prediction (:meth:`of_rows`), which then lose the features no weight uses.
    Ranks keep the order of the ids, so sorted rows and weights stay sorted
    and sums keep their order.

    Parameters
    ----------
    indices : numpy.ndarray of int32
        The weights' feature ids (checked: non-negative, below n_features).

    Attributes
    ----------
    compact : bool
        Whether the ids are ranked.
    width : int
        Length of the kernels' tables indexed by feature id.
    kernel_indices : numpy.ndarray of int32
        The weights' ids as the kernels see them: `indices` itself, or
        their ranks.
    """

    def __init__(self, indices: np.ndarray):
        largest = int(indices.max(initial=-1)) + 1
        self.compact = largest > max(MIN_DIRECT_IDS, DIRECT_IDS_PER_WEIGHT * indices.shape[0])
        if self.compact:
            self._used = np.unique(indices)
            self.width = self._used.shape[0]
            self.kernel_indices = np.searchsorted(self._used, indices).astype(np.int32)
            self.kernel_indices.flags.writeable = False
        else:
            self.width = largest
            self.kernel_indices = indices

    def of_rows(self, X: sp.csr_matrix) -> sp.csr_matrix:
        """Rows in the ids the kernels see.

        Parameters
        ----------
        X : scipy.sparse.csr_matrix
            As ``xmltree._validation.check_features`` returns it.

        Returns
        -------
        scipy.sparse.csr_matrix
            `X` itself for direct ids; for compact ids, a copy holding the
            ranks of the features some weight uses, the others dropped (they
            would add zero products only).
        """
        if not self.compact:
            return X
        ranks = np.searchsorted(self._used, X.indices)
        kept = ranks < self.width
        kept[kept] = self._used[ranks[kept]] == X.indices[kept]
        kept_before = np.concatenate([[0], np.cumsum(kept, dtype=np.int64)])
        return kernel_csr(X.data[kept], ranks[kept], kept_before[X.indptr],
                          (X.shape[0], self.width))


def feature_slots(ids: np.ndarray, n_ids: int) -> tuple[np.ndarray, int]:
    """Slot in a node block of every feature below `n_ids`, and the number of slots.

    Features kept by many regressors are the frequent ones (weights only
    move where x is non-zero): they get neighbouring slots, so that a few
    cache lines of a block serve most examples. So the features in `ids`
    take slots by decreasing use, ties by id; every other feature shares
    the last slot, which no weight fills: it stays zero.

    Parameters
    ----------
    ids : numpy.ndarray of int32
        The feature id of every weight (as the kernels see them), < `n_ids`.
    n_ids : int
        Length of the table.

    Returns
    -------
    slots : numpy.ndarray of int32, shape (n_ids,)
    n_slots : int
        The distinct ids in `ids`, + 1.
    """
    # Counted in a table of n_ids, not by np.unique: its sorted copy of the
    # ids doubled the memory of a large forest while it was built, and
    # n_ids is at most a few ids per weight (see FeatureIds).
    uses = np.zeros(n_ids, dtype=np.int64)
    for start in range(0, ids.shape[0], COUNT_CHUNK):
        uses += np.bincount(ids[start:start + COUNT_CHUNK], minlength=n_ids)
    used = np.flatnonzero(uses)
    slots = np.full(n_ids, used.shape[0], dtype=np.int32)
    slots[used[np.argsort(-uses[used], kind="stable")]] = np.arange(used.shape[0],
                                                                     dtype=np.int32)
    return slots, used.shape[0] + 1


def _join(trees: list[dict], name: str, release: bool) -> np.ndarray:
    """Concatenate one array of every tree; with ``release``, take it out of the dicts.

    The trees are copied one by one into the joined array, and a released
    tree's array is dropped before the next is copied: at the end of ``fit``
    the model's largest arrays are then held once, plus one tree's, instead
    of twice while a single ``np.concatenate`` runs.
    """
    sizes = [tree[name].shape[0] for tree in trees]
    joined = mapped_empty((sum(sizes),) + trees[0][name].shape[1:],
                          np.result_type(*[tree[name] for tree in trees]))
    start = 0
    for tree, size in zip(trees, sizes):
        joined[start:start + size] = tree.pop(name) if release else tree[name]
        start += size
    return joined


#: Bytes from which ``mapped_empty`` gives an array a memory mapping of its own.
OWN_MAPPING_BYTES = 1 << 16


def mapped_empty(shape: int | tuple[int, ...], dtype) -> np.ndarray:
    """An uninitialised C-ordered array, in an anonymous memory mapping of its
    own if it takes ``OWN_MAPPING_BYTES`` or more.

    For the large arrays of a fit that are written once, right after they
    are made: a grown tree's and the forest's. Trees grow in joblib's worker
    threads, whose allocations glibc serves from per-thread arenas, and
    memory freed in an arena mostly stays with the process, adding to the
    peak of the fit; a mapping goes back to the system as soon as its array
    is freed. And numpy asks for transparent huge pages, each taken fresh
    and cleared when first touched (compacted first, under the kernel's
    usual ``defrag`` setting), while a mapping's ordinary pages can be those
    the process has just given back: the forest's arrays fill as the trees'
    are released ("The forest's copy of the trees" in the benchmarks' lab
    notebook).

    Parameters
    ----------
    shape : int or tuple of int
        The array's shape.
    dtype : numpy.dtype or type
        Its element type.

    Returns
    -------
    numpy.ndarray
        A writeable, C-contiguous array whose entries are not set.
    """
    dtype = np.dtype(dtype)
    n_bytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if n_bytes < OWN_MAPPING_BYTES:
        return np.empty(shape, dtype=dtype)
    return np.frombuffer(mmap.mmap(-1, n_bytes), dtype=dtype).reshape(shape)


def _concatenate_indptr(indptrs: list[np.ndarray]) -> np.ndarray:
    """Join CSR row pointers of consecutive blocks into one."""
    shifted = [indptrs[0]]
    offset = indptrs[0][-1]
    for indptr in indptrs[1:]:
        shifted.append(indptr[1:] + offset)
        offset += indptr[-1]
    return np.concatenate(shifted).astype(np.int64)
