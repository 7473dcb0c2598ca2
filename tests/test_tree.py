"""Tests of the forest storage and prediction kernels (xmltree.ldsm._forest).

The kernels are compared with a slow pure-Python descent on random flat
trees generated here, so they are exercised without the training code.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from xmltree.exceptions import DataFormatError, ModelFormatError
from xmltree.ldsm._forest import Forest
from xmltree.ldsm._tree_arrays import TREE_ARRAYS, routing_threshold, weights_by_node

# ----------------------------------------------------------------------
# Random flat trees and a pure-Python reference (also used by test_ldsm.py)
# ----------------------------------------------------------------------


def random_flat_tree(rng, *, arity, n_features, n_labels, max_nodes=40, expand=0.75,
                     weight_densities=(0.05, 0.6), max_leaf_labels=5, epochs=3):
    """Return a random tree obeying the build_tree contract.

    Nodes are expanded breadth first with probability ``expand`` while the
    node budget allows, so ids of children exceed their parent's. Each
    internal node draws its weight density from ``weight_densities``, so
    that both the sparse and the dense scoring paths of the forest are used.
    """
    first_child, parent, depth = [-1], [-1], [0]
    queue = [0]
    while queue:
        node = queue.pop(0)
        if rng.random() < expand and len(first_child) + arity <= max_nodes:
            first_child[node] = len(first_child)
            for _ in range(arity):
                queue.append(len(first_child))
                first_child.append(-1)
                parent.append(node)
                depth.append(depth[node] + 1)
    n_nodes = len(first_child)
    first_child = np.array(first_child, dtype=np.int32)
    is_leaf = first_child < 0
    weight_rows, leaf_rows, trace_rows = [], [], []
    bias = np.zeros((n_nodes, arity), dtype=np.float32)
    for node in range(n_nodes):
        if is_leaf[node]:
            weight_rows.extend([np.zeros(0, dtype=np.int32)] * arity)
            size = rng.integers(1, max_leaf_labels + 1)
            labels = np.sort(rng.choice(n_labels, size=size, replace=False)).astype(np.int32)
            values = rng.random(size) + 0.05
            leaf_rows.append((labels, (values / values.sum()).astype(np.float32)))
            trace_rows.append(np.zeros(0, dtype=np.float32))
        else:
            density = rng.choice(weight_densities)
            for _ in range(arity):
                weight_rows.append(np.flatnonzero(rng.random(n_features) < density))
            bias[node] = rng.normal(0.2, 0.6, size=arity)
            leaf_rows.append((np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)))
            trace_rows.append(rng.normal(size=epochs).astype(np.float32))
    weight_indices = np.concatenate(weight_rows).astype(np.int32)
    weight_indptr, weight_indices, weight_values = weights_by_node(
        _indptr([len(row) for row in weight_rows]), weight_indices,
        rng.normal(0.0, 1.0, size=weight_indices.size).astype(np.float32), arity)
    return {
        "first_child": first_child,
        "parent": np.array(parent, dtype=np.int32),
        "depth": np.array(depth, dtype=np.int32),
        "n_samples": rng.integers(0, 100, size=n_nodes).astype(np.int64),
        "weight_indptr": weight_indptr,
        "weight_indices": weight_indices,
        "weight_values": weight_values,
        "bias": bias,
        "leaf_indptr": _indptr([len(labels) for labels, _ in leaf_rows]),
        "leaf_labels": np.concatenate([labels for labels, _ in leaf_rows]).astype(np.int32),
        "leaf_values": np.concatenate([values for _, values in leaf_rows]),
        "trace_indptr": _indptr([len(row) for row in trace_rows]),
        "trace_values": np.concatenate(trace_rows).astype(np.float32),
    }


def _indptr(lengths):
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def regressor_rows(tree, arity):
    """The weights of `tree` as format version 4 stored them: CSR row
    ``node * arity + m`` for regressor m, its non-zero weights only."""
    n_nodes = tree["weight_indptr"].size - 1
    node_of_id = np.repeat(np.arange(n_nodes), np.diff(tree["weight_indptr"]))
    ids, child = np.nonzero(tree["weight_values"])
    regressor = node_of_id[ids] * arity + child
    order = np.lexsort((tree["weight_indices"][ids], regressor))
    indptr = np.zeros(n_nodes * arity + 1, dtype=np.int64)
    np.cumsum(np.bincount(regressor, minlength=indptr.size - 1), out=indptr[1:])
    return (indptr, tree["weight_indices"][ids[order]],
            tree["weight_values"][ids[order], child[order]])


def with_regressor_rows(arrays):
    """A model file's `arrays` with every LdSM tree's weights as format
    version 4 and older stored them (see `regressor_rows`)."""
    arrays = dict(arrays)
    for key in [key for key in arrays
                if key.endswith("weight_values") and arrays[key].ndim == 2]:
        tree = key[:-len("weight_values")]
        names = [tree + name for name in ("weight_indptr", "weight_indices", "weight_values")]
        rows = regressor_rows(dict(zip(("weight_indptr", "weight_indices", "weight_values"),
                                       (arrays[name] for name in names))),
                              arrays[key].shape[1])
        arrays.update(zip(names, rows))
    return arrays


def regressor_lengths(tree, arity):
    """Weights each regressor of `tree` keeps, shape (n_nodes, arity)."""
    return np.diff(regressor_rows(tree, arity)[0]).reshape(-1, arity)


def random_features(rng, n_samples, n_features, density=0.3):
    """Random non-negative CSR features; some rows may be empty."""
    return sp.random(n_samples, n_features, density=density, format="csr", dtype=np.float32,
                     random_state=np.random.RandomState(rng.integers(2**31)))


def reference_leaves(tree, x, arity, threshold, training_threshold=None, max_wide=None):
    """Leaves reached by dense example ``x``, left to right (Algorithm 2).

    With `max_wide`, a path takes at most that many children that
    `threshold` admits and `training_threshold` would not.
    """
    leaves = []

    def chosen(scores, bar):
        return [m for m in range(arity) if scores[m] >= bar] or [int(np.argmax(scores))]

    def visit(node, wide):
        child = tree["first_child"][node]
        if child < 0:
            leaves.append(node)
            return
        scores = []
        for m in range(arity):
            # The routing contract: bias first, then features in increasing order.
            total = float(tree["bias"][node, m])
            for p in range(tree["weight_indptr"][node], tree["weight_indptr"][node + 1]):
                total += float(x[tree["weight_indices"][p]]) * float(tree["weight_values"][p, m])
            scores.append(total)
        trained = chosen(scores, training_threshold) if max_wide is not None else []
        for m in chosen(scores, threshold):
            if max_wide is None or m in trained:
                visit(child + m, wide)
            elif wide < max_wide:
                visit(child + m, wide + 1)

    visit(0, 0)
    return leaves


def reference_scores(trees, X, arity, threshold, n_labels, leaf_aggregation="mean"):
    """Dense (n_samples, n_labels) ensemble scores and leaf counts: each tree
    averages (or sums) the histograms of its reached leaves, the ensemble
    averages the trees."""
    dense = X.toarray()
    scores = np.zeros((X.shape[0], n_labels))
    counts = np.zeros((X.shape[0], len(trees)), dtype=np.int32)
    for i, x in enumerate(dense):
        for t, tree in enumerate(trees):
            leaves = reference_leaves(tree, x, arity, threshold)
            counts[i, t] = len(leaves)
            share = 1 if leaf_aggregation == "sum" else len(leaves)
            for leaf in leaves:
                span = slice(tree["leaf_indptr"][leaf], tree["leaf_indptr"][leaf + 1])
                scores[i, tree["leaf_labels"][span]] += (
                    tree["leaf_values"][span] / share / len(trees)
                )
    return scores, counts


def reference_top_k(scores, k):
    """Top k of each row by float32 score, ties by label id, padded with -1/0."""
    labels = np.full((scores.shape[0], k), -1, dtype=np.int32)
    values = np.zeros((scores.shape[0], k), dtype=np.float32)
    for i, row in enumerate(scores.astype(np.float32)):
        candidates = np.flatnonzero(row > 0)
        order = candidates[np.lexsort((candidates, -row[candidates]))][:k]
        labels[i, :order.size] = order
        values[i, :order.size] = row[order]
    return labels, values


def in_rank_order(labels, values):
    """Each row's (label, value) pairs best first, ties by label id, padding last."""
    order = np.lexsort((np.where(labels < 0, np.iinfo(np.int32).max, labels), -values))
    return (np.take_along_axis(labels, order, axis=1),
            np.take_along_axis(values, order, axis=1))


def make_forest(rng, *, n_trees=3, arity=2, n_features=20, n_labels=30, routing="margin",
                leaf_aggregation="mean", **tree_options):
    trees = [random_flat_tree(rng, arity=arity, n_features=n_features, n_labels=n_labels,
                              **tree_options) for _ in range(n_trees)]
    forest = Forest(trees, arity=arity, n_features=n_features, n_labels=n_labels,
                    routing=routing, leaf_aggregation=leaf_aggregation)
    return forest, trees


# ----------------------------------------------------------------------
# Prediction against the reference
# ----------------------------------------------------------------------


@pytest.mark.parametrize("arity", [2, 3, 4])
@pytest.mark.parametrize("routing", ["margin", "sigmoid"])
@pytest.mark.parametrize("n_labels", [30, 6])
@pytest.mark.parametrize("leaf_aggregation", ["mean", "sum"])
def test_prediction_matches_reference(rng, arity, routing, n_labels, leaf_aggregation):
    forest, trees = make_forest(rng, n_trees=4, arity=arity, routing=routing,
                                n_labels=n_labels, leaf_aggregation=leaf_aggregation)
    # 4 trees of leaves with 3 labels on average: 6 labels are scored
    # densely, 30 through the touched-label list.
    assert forest.dense_scores == (n_labels == 6)
    X = random_features(rng, 150, 20)
    expected, expected_counts = reference_scores(
        trees, X, arity, routing_threshold(routing), n_labels, leaf_aggregation
    )
    counts = forest.leaves_reached(X)
    np.testing.assert_array_equal(counts, expected_counts)
    assert counts.min() >= 1

    scores = forest.predict_scores(X)
    assert scores.dtype == np.float32 and scores.has_canonical_format
    np.testing.assert_allclose(scores.toarray(), expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(scores.toarray() > 0, expected > 0)

    for k in (1, 5, 40):
        labels, values = forest.predict_top_k(X, k)
        expected_labels, expected_values = reference_top_k(expected, k)
        np.testing.assert_array_equal(labels, expected_labels)
        np.testing.assert_allclose(values, expected_values, rtol=1e-6)
        np.testing.assert_array_equal(
            in_rank_order(*forest.predict_top_k(X, k, ordered=False)), (labels, values))


@pytest.mark.parametrize("threshold", [-0.5, 0.05, 2.0])
def test_descent_threshold_matches_reference(rng, threshold):
    trees = [random_flat_tree(rng, arity=3, n_features=20, n_labels=30) for _ in range(3)]
    forest = Forest(trees, arity=3, n_features=20, n_labels=30, routing="margin",
                    descent_threshold=threshold)
    X = random_features(rng, 150, 20)
    expected, expected_counts = reference_scores(trees, X, 3, threshold, 30)
    np.testing.assert_array_equal(forest.leaves_reached(X), expected_counts)
    np.testing.assert_allclose(forest.predict_scores(X).toarray(), expected, rtol=1e-6,
                               atol=1e-7)
    # A lower threshold than the training rule's 0.5 reaches a superset of its
    # leaves (the best child always qualifies when any does), a higher one a subset.
    trained = Forest(trees, arity=3, n_features=20, n_labels=30, routing="margin")
    trained_counts = trained.leaves_reached(X)
    if threshold < 0.5:
        assert np.all(expected_counts >= trained_counts)
    else:
        assert np.all(expected_counts <= trained_counts)


@pytest.mark.parametrize("max_wide", [0, 1, 2])
def test_wide_branches_per_path_match_reference(rng, max_wide):
    trees = [random_flat_tree(rng, arity=3, n_features=20, n_labels=30) for _ in range(3)]
    X = random_features(rng, 150, 20)
    limited = Forest(trees, arity=3, n_features=20, n_labels=30, routing="margin",
                     descent_threshold=-0.5, max_wide_branches=max_wide)
    expected = [[len(reference_leaves(tree, x, 3, -0.5, 0.5, max_wide)) for tree in trees]
                for x in X.toarray()]
    counts = limited.leaves_reached(X)
    np.testing.assert_array_equal(counts, expected)
    trained = Forest(trees, arity=3, n_features=20, n_labels=30, routing="margin")
    wide = Forest(trees, arity=3, n_features=20, n_labels=30, routing="margin",
                  descent_threshold=-0.5)
    assert np.all(trained.leaves_reached(X) <= counts)
    assert np.all(counts <= wide.leaves_reached(X))
    if max_wide > 0:  # the limit binds, and wide branches are taken
        assert np.any(counts < wide.leaves_reached(X))
        assert np.any(counts > trained.leaves_reached(X))
    if max_wide == 0:  # no wide branch at all: the training rule's descent
        for got, want in zip(limited.predict_top_k(X, 5), trained.predict_top_k(X, 5)):
            np.testing.assert_array_equal(got, want)
    # The limit means nothing without a wider descent.
    same = Forest(trees, arity=3, n_features=20, n_labels=30, routing="margin",
                  max_wide_branches=max_wide)
    np.testing.assert_array_equal(same.leaves_reached(X), trained.leaves_reached(X))


@pytest.mark.parametrize("n_threads", [2, 3])
def test_block_boundaries_do_not_change_results(rng, n_threads):
    # Rows are shared out in one descent block per thread, so examples of one
    # tree are split across blocks and threads.
    forest, trees = make_forest(rng, n_trees=2, arity=3)
    X = random_features(rng, 2100, 20)
    expected, expected_counts = reference_scores(trees, X, 3, routing_threshold("margin"), 30)
    np.testing.assert_array_equal(forest.leaves_reached(X, n_threads), expected_counts)
    labels, _ = forest.predict_top_k(X, 5, n_threads)
    np.testing.assert_array_equal(labels, reference_top_k(expected, 5)[0])


def test_random_trees_exercise_multiway_routing_and_fallback(rng):
    # Guard on the generator: the reference comparison above is only
    # meaningful if examples reach several leaves, and sometimes none of a
    # node's regressors passes the threshold.
    forest, trees = make_forest(rng, n_trees=4, arity=3)
    X = random_features(rng, 60, 20)
    assert forest.leaves_reached(X).max() > 1
    dense = X.toarray()
    fallback = 0
    for tree in trees:
        for x in dense:
            root = slice(tree["weight_indptr"][0], tree["weight_indptr"][1])
            z = tree["bias"][0] + [
                sum(float(x[j]) * float(w) for j, w in zip(
                    tree["weight_indices"][root], tree["weight_values"][root, m]))
                for m in range(3)
            ]
            fallback += tree["first_child"][0] >= 0 and np.all(z < 0.5)
    assert fallback > 0


def test_feature_slots_order_the_used_features_by_usage(rng):
    forest, _ = make_forest(rng, n_trees=2, arity=2, n_features=200, max_nodes=7, expand=1.0,
                            weight_densities=(0.05,))
    usage = np.bincount(forest.weight_indices, minlength=forest.feature_slot.shape[0])
    used = usage > 0
    assert not np.all(used)
    np.testing.assert_array_equal(np.sort(forest.feature_slot[used]), np.arange(used.sum()))
    # Features no regressor has share the last slot, which stays zero.
    assert forest.n_slots == used.sum() + 1
    assert np.all(forest.feature_slot[~used] == forest.n_slots - 1)
    by_slot = usage[used][np.argsort(forest.feature_slot[used])]
    assert np.all(np.diff(by_slot) <= 0)


def test_examples_reaching_every_leaf(rng):
    # Huge biases send every example to every child: the whole tree is
    # visited, which also grows the per-thread buffer of reached leaves.
    trees = [random_flat_tree(rng, arity=3, n_features=20, n_labels=30, max_nodes=40, expand=1.0)
             for _ in range(2)]
    for tree in trees:
        tree["bias"][tree["first_child"] >= 0] = 1e6
    forest = Forest(trees, arity=3, n_features=20, n_labels=30, routing="margin")
    X = random_features(rng, 300, 20)
    n_leaves = [np.sum(tree["first_child"] < 0) for tree in trees]
    assert min(n_leaves) > 4
    np.testing.assert_array_equal(forest.leaves_reached(X), np.tile(n_leaves, (300, 1)))
    expected = np.zeros(30)
    for tree, count in zip(trees, n_leaves):
        np.add.at(expected, tree["leaf_labels"], tree["leaf_values"] / count / len(trees))
    np.testing.assert_allclose(forest.predict_scores(X).toarray(),
                               np.tile(expected, (300, 1)), rtol=1e-6, atol=1e-7)


def test_scores_sum_to_one_per_row(rng):
    forest, _ = make_forest(rng, n_trees=5, arity=3)
    X = random_features(rng, 50, 20)
    sums = np.asarray(forest.predict_scores(X).sum(axis=1)).ravel()
    np.testing.assert_allclose(sums, 1.0, rtol=1e-5)


def test_summed_leaves_give_rows_summing_to_the_mean_leaf_count(rng):
    # Each reached leaf's histogram sums to 1, so a tree that sums its
    # leaves contributes its leaf count, and the ensemble their mean.
    forest, _ = make_forest(rng, n_trees=5, arity=3, leaf_aggregation="sum")
    X = random_features(rng, 80, 20)
    counts = forest.leaves_reached(X)
    assert counts.max() > 1
    sums = np.asarray(forest.predict_scores(X).sum(axis=1)).ravel()
    np.testing.assert_allclose(sums, counts.mean(axis=1), rtol=1e-5)


@pytest.mark.parametrize("leaf_aggregation", ["mean", "sum"])
def test_thread_count_does_not_change_results(rng, leaf_aggregation):
    forest, _ = make_forest(rng, n_trees=6, arity=2, max_nodes=60,
                            leaf_aggregation=leaf_aggregation)
    X = random_features(rng, 500, 20)
    one = forest.predict_top_k(X, 7, n_threads=1)
    two = forest.predict_top_k(X, 7, n_threads=2)
    np.testing.assert_array_equal(one[0], two[0])
    np.testing.assert_array_equal(one[1], two[1])
    a, b = forest.predict_scores(X, n_threads=1), forest.predict_scores(X, n_threads=2)
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_array_equal(a.data, b.data)
    np.testing.assert_array_equal(forest.leaves_reached(X, 1), forest.leaves_reached(X, 2))


def test_searched_and_spread_weights_route_alike(rng):
    # A node that few examples of a block reach has them search its sparse
    # weights; one that many reach spreads them into a dense block. A row
    # predicted alone searches every node with many weights, the same row
    # among 400 finds them spread near the roots: same leaves, same scores.
    forest, trees = make_forest(rng, n_trees=3, arity=2, n_features=300, max_nodes=30)
    X = random_features(rng, 400, 300, density=0.1)
    labels, scores = forest.predict_top_k(X, 6)
    for row in range(0, 400, 23):
        alone = forest.predict_top_k(X[row:row + 1], 6)
        np.testing.assert_array_equal(alone[0][0], labels[row])
        np.testing.assert_array_equal(alone[1][0], scores[row])
    expected, _ = reference_scores(trees, X, 2, routing_threshold("margin"), 30)
    np.testing.assert_array_equal(labels, reference_top_k(expected, 6)[0])


# ----------------------------------------------------------------------
# Top-k ordering, ties, padding
# ----------------------------------------------------------------------


def single_leaf_tree(labels, values, arity=2):
    """A tree that is only a root leaf with the given histogram."""
    labels = np.asarray(labels, dtype=np.int32)
    return {
        "first_child": np.array([-1], dtype=np.int32),
        "parent": np.array([-1], dtype=np.int32),
        "depth": np.array([0], dtype=np.int32),
        "n_samples": np.array([1], dtype=np.int64),
        "weight_indptr": np.zeros(2, dtype=np.int64),
        "weight_indices": np.zeros(0, dtype=np.int32),
        "weight_values": np.zeros((0, arity), dtype=np.float32),
        "bias": np.zeros((1, arity), dtype=np.float32),
        "leaf_indptr": np.array([0, labels.size], dtype=np.int64),
        "leaf_labels": labels,
        "leaf_values": np.asarray(values, dtype=np.float32),
        "trace_indptr": np.zeros(2, dtype=np.int64),
        "trace_values": np.zeros(0, dtype=np.float32),
    }


def test_ties_are_broken_by_label_id_and_short_rows_padded():
    tree = single_leaf_tree([1, 3, 5, 7, 9], [0.25, 0.125, 0.25, 0.125, 0.25])
    forest = Forest([tree], arity=2, n_features=4, n_labels=10, routing="margin")
    X = sp.csr_matrix(np.ones((2, 4), dtype=np.float32))
    labels, scores = forest.predict_top_k(X, 7)
    np.testing.assert_array_equal(labels[0], [1, 5, 9, 3, 7, -1, -1])
    np.testing.assert_array_equal(scores[0], [0.25, 0.25, 0.25, 0.125, 0.125, 0, 0])
    labels, scores = forest.predict_top_k(X, 2)
    np.testing.assert_array_equal(labels, [[1, 5], [1, 5]])
    # k larger than the number of labels: padded, no overflow.
    labels, scores = forest.predict_top_k(X, 25)
    assert labels.shape == (2, 25) and np.all(labels[:, 5:] == -1)
    assert np.all(scores[:, 5:] == 0)


def test_unordered_top_k_holds_the_same_labels_and_ties_alike():
    tree = single_leaf_tree([1, 3, 5, 7, 9], [0.25, 0.125, 0.25, 0.125, 0.25])
    forest = Forest([tree], arity=2, n_features=4, n_labels=10, routing="margin")
    X = sp.csr_matrix(np.ones((2, 4), dtype=np.float32))
    for k in (1, 2, 4, 7):
        np.testing.assert_array_equal(in_rank_order(*forest.predict_top_k(X, k, ordered=False)),
                                      forest.predict_top_k(X, k))


@pytest.mark.parametrize("n_levels", [3, 50, 100_000])
def test_unordered_top_k_of_a_long_leaf_matches_the_ordered_one(rng, n_levels):
    """The selection over thousands of labels in no order of score, with few
    distinct scores (ties everywhere) or almost none; k far below their number
    (the first pivot from a sample) and close to it."""
    labels = np.sort(rng.permutation(2500)[:2000])
    # A histogram: at most 1 in all.
    values = (rng.integers(1, n_levels + 1, labels.size) / n_levels / 2000).astype(np.float32)
    forest = Forest([single_leaf_tree(labels, values)], arity=2, n_features=4, n_labels=2500,
                    routing="margin")
    X = sp.csr_matrix(np.ones((1, 4), dtype=np.float32))
    for k in (1, 2, 3, 10, 100, 500, 1000, 1001, 1500, 1998, 1999, 2000, 2001, 2500):
        unordered = forest.predict_top_k(X, k, ordered=False)
        np.testing.assert_array_equal(in_rank_order(*unordered), forest.predict_top_k(X, k))


def test_averaging_over_trees_with_disjoint_leaves():
    trees = [single_leaf_tree([0, 2], [0.5, 0.5]), single_leaf_tree([2, 4], [0.75, 0.25])]
    forest = Forest(trees, arity=2, n_features=3, n_labels=5, routing="sigmoid")
    X = sp.csr_matrix((1, 3), dtype=np.float32)
    labels, scores = forest.predict_top_k(X, 3)
    np.testing.assert_array_equal(labels, [[2, 0, 4]])
    np.testing.assert_allclose(scores, [[0.625, 0.25, 0.125]])


def test_k_must_be_positive(rng):
    forest, _ = make_forest(rng)
    with pytest.raises(ValueError, match="k must be"):
        forest.predict_top_k(random_features(rng, 2, 20), 0)


def test_labels_are_written_into_the_array_given(rng):
    forest, _ = make_forest(rng)
    X = random_features(rng, 7, 20)
    expected_labels, expected_scores = forest.predict_top_k(X, 35)  # 30 labels: padded
    assert np.any(expected_labels == -1)
    out = np.full((9, 35), 123, dtype=np.int32)
    labels, scores = forest.predict_top_k(X, 35, labels=out[1:8])
    assert np.shares_memory(labels, out)
    np.testing.assert_array_equal(out[1:8], expected_labels)
    np.testing.assert_array_equal(scores, expected_scores)
    assert np.all(out[[0, 8]] == 123)
    read_only = np.zeros((7, 35), dtype=np.int32)
    read_only.flags.writeable = False
    for wrong in (np.zeros((7, 35), dtype=np.int64), np.zeros((7, 34), dtype=np.int32),
                  np.zeros((35, 7), dtype=np.int32).T, read_only, [[0] * 35] * 7):
        with pytest.raises(ValueError, match="labels must be"):
            forest.predict_top_k(X, 35, labels=wrong)


# ----------------------------------------------------------------------
# Inputs
# ----------------------------------------------------------------------


def test_narrower_input_is_widened_and_wider_refused(rng):
    forest, _ = make_forest(rng)
    X = random_features(rng, 20, 20)
    X.data[X.indices >= 15] = 0  # the columns the narrow copy lacks
    X.eliminate_zeros()
    narrow = sp.csr_matrix(X.toarray()[:, :15])
    np.testing.assert_array_equal(forest.predict_top_k(narrow, 5)[0],
                                  forest.predict_top_k(X, 5)[0])
    with pytest.raises(DataFormatError, match="21 features"):
        forest.predict_top_k(sp.csr_matrix((3, 21), dtype=np.float32), 5)


def test_explicit_zeros_dense_input_and_empty_batches(rng):
    forest, _ = make_forest(rng)
    X = random_features(rng, 30, 20)
    with_zeros = X.copy()
    with_zeros.data[::3] = 0.0  # stored zeros must act as absent features
    cleaned = with_zeros.copy()
    cleaned.eliminate_zeros()
    np.testing.assert_array_equal(forest.predict_scores(with_zeros).toarray(),
                                  forest.predict_scores(cleaned).toarray())
    np.testing.assert_array_equal(forest.predict_top_k(X.toarray(), 3)[0],
                                  forest.predict_top_k(X, 3)[0])
    empty = sp.csr_matrix((0, 20), dtype=np.float32)
    labels, scores = forest.predict_top_k(empty, 4)
    assert labels.shape == (0, 4) and scores.shape == (0, 4)
    assert forest.predict_scores(empty).shape == (0, 30)
    assert forest.leaves_reached(empty).shape == (0, 3)


def test_nan_input_is_refused(rng):
    forest, _ = make_forest(rng)
    X = np.zeros((2, 20), dtype=np.float32)
    X[1, 3] = np.nan
    with pytest.raises(DataFormatError, match="NaN"):
        forest.predict_scores(X)




def test_forest_checks_trees_read_from_files(rng):
    tree = random_flat_tree(rng, arity=2, n_features=20, n_labels=30)
    with pytest.raises(ModelFormatError, match="at least one tree"):
        Forest([], arity=2, n_features=20, n_labels=30, routing="margin")
    with pytest.raises(ModelFormatError, match="shape"):
        Forest([tree], arity=3, n_features=20, n_labels=30, routing="margin")


def test_frequency_leaves_need_not_sum_to_one(rng):
    tree = random_flat_tree(rng, arity=2, n_features=20, n_labels=30)
    tree["leaf_values"] = np.minimum(2 * tree["leaf_values"], 1).astype(np.float32)
    with pytest.raises(ModelFormatError, match="more than 1"):
        Forest([tree], arity=2, n_features=20, n_labels=30, routing="margin")
    forest = Forest([tree], arity=2, n_features=20, n_labels=30, routing="margin",
                    leaf_scores="frequency")
    X = random_features(rng, 40, 20)
    expected, _ = reference_scores([tree], X, 2, 0.5, 30)
    np.testing.assert_allclose(forest.predict_scores(X).toarray(), expected, rtol=1e-6,
                               atol=1e-7)


def test_forest_layout_concatenates_trees(rng):
    forest, trees = make_forest(rng, n_trees=3)
    sizes = [tree["first_child"].size for tree in trees]
    np.testing.assert_array_equal(forest.tree_offset, np.cumsum([0] + sizes))
    assert forest.n_trees == 3
    assert set(TREE_ARRAYS) == set(trees[0])
    second = forest.first_child[sizes[0]:sizes[0] + sizes[1]]
    expected = np.where(trees[1]["first_child"] >= 0, trees[1]["first_child"] + sizes[0], -1)
    np.testing.assert_array_equal(second, expected)


def test_release_moves_the_large_arrays_into_the_forest(rng):
    trees = [random_flat_tree(rng, arity=2, n_features=20, n_labels=30) for _ in range(3)]
    kept = Forest(trees, arity=2, n_features=20, n_labels=30, routing="margin")
    assert all(set(tree) == set(TREE_ARRAYS) for tree in trees)
    released = Forest([dict(tree) for tree in trees], arity=2, n_features=20, n_labels=30,
                      routing="margin", release=True)
    owned = [dict(tree) for tree in trees]
    Forest(owned, arity=2, n_features=20, n_labels=30, routing="margin", release=True)
    moved = {"weight_indices", "weight_values", "leaf_labels", "leaf_values"}
    assert all(set(tree) == set(TREE_ARRAYS) - moved for tree in owned)
    for name in moved:
        joined = np.concatenate([tree[name] for tree in trees])
        np.testing.assert_array_equal(getattr(released, name), joined)
        assert getattr(released, name).dtype == joined.dtype
    X = random_features(rng, 50, 20)
    for a, b in zip(kept.predict_top_k(X, 5), released.predict_top_k(X, 5)):
        np.testing.assert_array_equal(a, b)
