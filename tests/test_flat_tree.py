"""Tests of xmltree.ldsm._tree_arrays: the flat-tree contract that model files must meet.

Every property the kernels rely on is broken in turn on a valid random tree,
and check_tree must refuse it, naming what is wrong.
"""

import numpy as np
import pytest
from test_tree import random_flat_tree, regressor_rows

from xmltree.exceptions import ModelFormatError
from xmltree.ldsm._tree_arrays import (
    MAX_ARITY,
    ROUTING_THRESHOLDS,
    check_tree,
    routing_threshold,
    weights_by_node,
)

# ----------------------------------------------------------------------
# Tree validation: everything the kernels rely on
# ----------------------------------------------------------------------


def _first_internal(tree):
    return int(np.flatnonzero(tree["first_child"] >= 0)[0])


def _set(name, index, value):
    def mutate(tree):
        tree[name] = tree[name].copy()
        tree[name][index] = value
    return mutate


def _child_out_of_range(tree):
    tree["first_child"][_first_internal(tree)] = tree["first_child"].size - 1


def _child_not_above_parent(tree):
    tree["first_child"][_first_internal(tree)] = 0


def _shared_children(tree):
    internal = np.flatnonzero(tree["first_child"] >= 0)
    tree["first_child"][internal[0]] = tree["first_child"][internal[1]]


def _weight_index_too_large(tree):
    row = np.flatnonzero(np.diff(tree["weight_indptr"]))[0]
    tree["weight_indices"][tree["weight_indptr"][row + 1] - 1] = 20


def _weight_indices_unsorted(tree):
    row = np.flatnonzero(np.diff(tree["weight_indptr"]) >= 2)[0]
    start = tree["weight_indptr"][row]
    tree["weight_indices"][start:start + 2] = tree["weight_indices"][start:start + 2][::-1]


def _indptr_decreasing(tree):
    tree["weight_indptr"][2] = tree["weight_indptr"][3] + 1


def _indptr_end_mismatch(tree):
    tree["leaf_indptr"][-1] += 1


def _label_too_large(tree):
    tree["leaf_labels"][-1] = 30


def _empty_leaf(tree):
    leaf = int(np.flatnonzero(tree["first_child"] < 0)[0])
    start, stop = tree["leaf_indptr"][leaf], tree["leaf_indptr"][leaf + 1]
    tree["leaf_labels"] = np.delete(tree["leaf_labels"], np.arange(start, stop))
    tree["leaf_values"] = np.delete(tree["leaf_values"], np.arange(start, stop))
    tree["leaf_indptr"][leaf + 1:] -= stop - start


def _histogram_not_normalised(tree):
    tree["leaf_values"][0] += 0.5


def _wrong_dtype(tree):
    tree["weight_indices"] = tree["weight_indices"].astype(np.int64)


def _missing_array(tree):
    del tree["leaf_values"]


def _bias_wrong_shape(tree):
    tree["bias"] = tree["bias"].ravel()


def _wrong_depth(tree):
    tree["depth"][-1] += 1


def _weights_on_leaf(tree):
    leaf = int(np.flatnonzero(tree["first_child"] < 0)[0])
    start = tree["weight_indptr"][leaf]
    tree["weight_indices"] = np.insert(tree["weight_indices"], start, 0)
    tree["weight_values"] = np.insert(tree["weight_values"], start, 1.0, axis=0)
    tree["weight_indptr"][leaf + 1:] += 1


def _weights_per_regressor(tree):
    tree["weight_values"] = tree["weight_values"][:, :1].copy()


def _weights_flat(tree):
    tree["weight_values"] = tree["weight_values"].ravel()


@pytest.mark.parametrize("mutate, message", [
    (_child_out_of_range, "child id"),
    (_child_not_above_parent, "child id"),
    (_shared_children, "disagree"),
    (_weight_index_too_large, "out of range"),
    (_weight_indices_unsorted, "unsorted"),
    (_indptr_decreasing, "weight indices: indptr"),
    (_indptr_end_mismatch, "leaf labels: indptr"),
    (_label_too_large, "out of range"),
    (_empty_leaf, "empty label histogram"),
    (_histogram_not_normalised, "more than 1"),
    (_set("weight_values", 0, np.inf), "NaN or infinite"),
    (_set("bias", (0, 0), np.nan), "NaN or infinite"),
    (_set("leaf_values", 0, -0.1), "not positive|more than 1"),
    (_set("leaf_values", 0, 0.0), "not positive|more than 1"),
    (_set("parent", 0, 0), "root"),
    (_wrong_dtype, "dtype"),
    (_missing_array, "missing"),
    (_bias_wrong_shape, "dimensions"),
    (_wrong_depth, "depth"),
    (_weights_on_leaf, "weights on a leaf"),
    (_weights_per_regressor, "one row of arity weights per feature id"),
    (_weights_flat, "dimensions"),
])
def test_malformed_trees_are_refused(rng, mutate, message):
    tree = random_flat_tree(rng, arity=2, n_features=20, n_labels=30, expand=1.0, max_nodes=15)
    check_tree(tree, 2, 20, 30)  # the unmodified tree is valid
    tree = {name: array.copy() for name, array in tree.items()}
    mutate(tree)
    with pytest.raises(ModelFormatError, match=message):
        check_tree(tree, 2, 20, 30)


def test_one_table_of_options():
    assert routing_threshold("margin") == 0.5 and routing_threshold("sigmoid") == 0.0
    assert set(ROUTING_THRESHOLDS) == {"margin", "sigmoid"} and MAX_ARITY == 8
    with pytest.raises(ValueError, match="routing must be one of"):
        routing_threshold("hinge")


# ----------------------------------------------------------------------
# The regressor-by-regressor layout of format version 4 and older
# ----------------------------------------------------------------------


def test_weights_by_node_take_the_union_of_the_regressors_ids():
    # Node 0: regressor 0 has ids 1 and 4, regressor 1 ids 4 and 7; node 1
    # (a leaf) has none; node 2: only regressor 1 has a weight.
    indptr = np.array([0, 2, 4, 4, 4, 4, 5], dtype=np.int64)
    indices = np.array([1, 4, 4, 7, 3], dtype=np.int32)
    values = np.array([0.5, -1.0, 2.0, 3.0, -4.0], dtype=np.float32)
    node_indptr, ids, weights = weights_by_node(indptr, indices, values, 2)
    np.testing.assert_array_equal(node_indptr, [0, 3, 3, 4])
    np.testing.assert_array_equal(ids, [1, 4, 7, 3])
    np.testing.assert_array_equal(weights, [[0.5, 0.0], [-1.0, 2.0], [0.0, 3.0], [0.0, -4.0]])
    assert (node_indptr.dtype, ids.dtype, weights.dtype) == (np.int64, np.int32, np.float32)


@pytest.mark.parametrize("arity", [2, 3])
def test_weights_by_node_invert_the_old_layout(rng, arity):
    tree = random_flat_tree(rng, arity=arity, n_features=20, n_labels=30, expand=1.0)
    converted = weights_by_node(*regressor_rows(tree, arity), arity)
    for name, array in zip(("weight_indptr", "weight_indices", "weight_values"), converted):
        np.testing.assert_array_equal(array, tree[name])


@pytest.mark.parametrize("indptr, indices, values, message", [
    ([0, 1, 2, 2], [1, 3], [1.0, 1.0], "one CSR row per regressor"),  # 3 rows, arity 2
    ([0, 2, 2], [3, 1], [1.0, 1.0], "unsorted or duplicate"),
    ([0, 2, 2], [3, 3], [1.0, 1.0], "unsorted or duplicate"),
    ([0, 3, 2], [1, 3], [1.0, 1.0], "indptr"),
    ([0, 1, 2], [-1, 3], [1.0, 1.0], "out of range|negative"),
    ([0, 1, 2], [1, 3], [1.0], "one CSR row per regressor"),
])
def test_malformed_old_weights_are_refused(indptr, indices, values, message):
    with pytest.raises(ModelFormatError, match=message):
        weights_by_node(np.array(indptr, dtype=np.int64), np.array(indices, dtype=np.int32),
                        np.array(values, dtype=np.float32), 2)


def test_old_weights_of_the_wrong_dtype_are_refused():
    with pytest.raises(ModelFormatError, match="weight_values"):
        weights_by_node(np.array([0, 1, 1]), np.array([1], dtype=np.int32),
                        np.array([1.0]), 2)
