"""LdSM training kernels: optimiser steps, node training and tree growth.

Node training is compared with the slow pure-Python reference of
``tests/ldsm_reference.py`` (same random draws); the grown tree is checked
for its structural invariants and by descending every training example with
the stored weights in plain Python.
"""

import mmap

import numpy as np
import pytest
import scipy.sparse as sp
from ldsm_reference import MIN_PASSES, Xoshiro, nag_step, sgd_step, store_weights, train_node
from test_tree import regressor_lengths

from xmltree import LdSM
from xmltree._kernels._optim import _py_nag_step, _py_sgd_step
from xmltree._kernels._random import _py_draw
from xmltree.ldsm._builder import _py_train_node, build_tree
from xmltree.ldsm._node_trainer import _py_magnitude_of_rank
from xmltree.ldsm._tree_arrays import MAX_ARITY, OWN_MAPPING_BYTES, concatenate_trees, mapped_empty

NODE_SETTINGS = dict(epochs=3, lambda1=2.0, lambda2=1.0, learning_rate=0.3)
TREE_SETTINGS = dict(arity=2, max_nodes=41, epochs=3, lambda1=2.0, lambda2=1.0,
                     optimizer="nag", learning_rate=0.1, routing="margin",
                     weight_threshold=0.01, seed=7)
ROUTING_THRESHOLD = {"margin": 0.5, "sigmoid": 0.0}


def make_csr(dense, dtype=np.float32):
    """CSR in the kernels' layout (float32 values, int32 indices, int64 indptr)."""
    matrix = sp.csr_matrix(np.asarray(dense, dtype=dtype))
    matrix.indices = matrix.indices.astype(np.int32)
    matrix.indptr = matrix.indptr.astype(np.int64)
    return matrix


def random_problem(rng, n_samples=30, n_features=12, n_labels=6, clusters=3):
    """Features of mixed sign and scale; labels correlated with feature clusters."""
    centre = rng.integers(0, clusters, n_samples)
    dense_x = rng.uniform(-2.0, 3.0, (n_samples, n_features))
    dense_x *= rng.random((n_samples, n_features)) < 0.35
    dense_x[np.arange(n_samples), centre] += 2.0
    dense_y = rng.random((n_samples, n_labels)) < 0.15
    dense_y[np.arange(n_samples), centre] = True
    return make_csr(dense_x), make_csr(dense_y)


# ----------------------------------------------------------------------------- RNG and steps


def test_reference_generator_matches_the_compiled_one():
    rng = Xoshiro(12345)
    assert [rng.next() for _ in range(5)] == [int(v) for v in _py_draw(12345, 5)]
    rng = Xoshiro(9)
    assert [rng.below(7) for _ in range(50)] == list(_py_draw(9, 50, 7))


def random_step_input(rng, n_features=8):
    indices = np.sort(rng.choice(n_features, 4, replace=False)).astype(np.int32)
    values = rng.uniform(-3, 3, 4).astype(np.float32)
    return indices, values


def test_sgd_step_matches_reference(rng):
    weights = rng.normal(size=9).astype(np.float32).astype(np.float64)  # as the state holds them
    expected = weights.copy()
    for _ in range(5):
        indices, values = random_step_input(rng)
        target = float(rng.integers(0, 2))
        z = _py_sgd_step(weights, indices, values, target, 0.2)
        z_ref = sgd_step(expected, indices, values.astype(np.float64), target, 0.2)
        assert z == pytest.approx(z_ref, rel=1e-12, abs=1e-12)
        np.testing.assert_allclose(weights, expected, rtol=1e-12, atol=1e-14)


def test_nag_steps_match_reference(rng):
    state = [np.zeros(9), np.zeros(9), np.zeros(9)]
    state[0][-1] = 0.0625
    expected = [array.copy() for array in state]
    norm = norm_ref = 0.0
    t = t_ref = 0
    for _ in range(8):
        indices, values = random_step_input(rng)
        target = float(rng.integers(0, 2))
        z, norm, t = _py_nag_step(*state, norm, t, indices, values, target, 0.3)
        z_ref, norm_ref, t_ref = nag_step(*expected, norm_ref, t_ref, indices,
                                          values.astype(np.float64), target, 0.3)
        assert z == pytest.approx(z_ref, rel=1e-12, abs=1e-12)
        assert norm == pytest.approx(norm_ref, rel=1e-12) and t == t_ref
        for array, array_ref in zip(state, expected):
            np.testing.assert_allclose(array, array_ref, rtol=1e-12, atol=1e-14)
            # Stored in float32.
            np.testing.assert_array_equal(array, array.astype(np.float32))


@pytest.mark.parametrize("step", ["sgd", "nag"])
def test_explicit_zeros_change_nothing(step):
    indices = np.array([1, 3, 4], dtype=np.int32)
    values = np.array([0.5, -2.0, 1.5], dtype=np.float32)
    with_zeros = (np.array([0, 1, 2, 3, 4, 5], dtype=np.int32),
                  np.array([0, 0.5, 0, -2.0, 1.5, 0], dtype=np.float32))
    results = []
    for x in ((indices, values), with_zeros):
        state = [np.full(7, 0.1), np.zeros(7), np.zeros(7)]
        if step == "sgd":
            z = _py_sgd_step(state[0], *x, 1.0, 0.5)
        else:
            z = _py_nag_step(*state, 0.0, 0, *x, 1.0, 0.5)
        results.append((z, state))
    assert results[0][0] == results[1][0]
    for a, b in zip(results[0][1], results[1][1]):
        assert np.array_equal(a, b)
    assert np.all(np.isfinite(results[1][1][0]))


def test_nag_rescales_a_weight_when_its_feature_grows():
    weights, scale, sum_sq = np.zeros(3), np.zeros(3), np.zeros(3)
    weights[0] = 0.5
    indices = np.array([0], dtype=np.int32)
    tiny = 1e-12  # the gradient step is negligible: only the rescale shows
    # First sight of the feature only sets its scale (the initial weight survives).
    _py_nag_step(weights, scale, sum_sq, 0.0, 0, indices, np.array([1.0], np.float32), 1.0, tiny)
    assert scale[0] == 1.0 and weights[0] == pytest.approx(0.5, abs=1e-9)
    _py_nag_step(weights, scale, sum_sq, 1.0, 1, indices, np.array([-4.0], np.float32), 1.0,
                 tiny)
    assert scale[0] == 4.0 and weights[0] == pytest.approx(0.125, abs=1e-9)
    # A smaller value leaves scale and weight alone.
    _py_nag_step(weights, scale, sum_sq, 2.0, 2, indices, np.array([2.0], np.float32), 1.0, tiny)
    assert scale[0] == 4.0 and weights[0] == pytest.approx(0.125, abs=1e-9)


def test_step_wrappers_reject_out_of_range_features():
    with pytest.raises(ValueError, match="out of range"):
        _py_sgd_step(np.zeros(3), np.array([2], np.int32), np.array([1.0], np.float32), 1, 0.1)


# ----------------------------------------------------------------------------- node training


# MAX_ARITY: the M regressors of a node are one group of the _optim kernels,
# which hold up to MAX_GROUP_SIZE regressors.
@pytest.mark.parametrize("arity", [2, 3, MAX_ARITY])
@pytest.mark.parametrize("optimizer,routing", [("nag", "margin"), ("sgd", "margin"),
                                               ("nag", "sigmoid"), ("sgd", "sigmoid")])
def test_train_node_matches_reference(rng, arity, optimizer, routing):
    X, Y = random_problem(rng)
    Y = Y.tolil()
    Y[4, :] = 0  # an unlabelled example is skipped, not a crash
    Y = make_csr(Y.toarray())
    rows = rng.permutation(X.shape[0])[:25]
    settings = dict(NODE_SETTINGS, arity=arity, optimizer=optimizer, routing=routing, seed=3)
    got = _py_train_node(X, Y, rows, **settings)
    want = train_node(X, Y, rows, **settings)
    assert np.array_equal(got["directions"], want["directions"])
    assert got["total_count"] == want["total_count"]
    assert np.array_equal(got["labels"], want["labels"])
    assert np.array_equal(got["label_count"], want["label_count"])
    for key in ("prob", "label_prob", "weights", "bias", "trace"):
        np.testing.assert_allclose(got[key], want[key], rtol=1e-9, atol=1e-12, err_msg=key)
    # The search really explores: several subsets are chosen, ties were broken.
    assert len(np.unique(got["directions"])) >= 2


@pytest.mark.parametrize("optimizer", ["nag", "sgd"])
def test_weight_cap_cuts_the_stored_weights_as_the_reference(rng, optimizer):
    X, Y = random_problem(rng)
    rows = rng.permutation(X.shape[0])[:25]
    settings = dict(NODE_SETTINGS, arity=2, optimizer=optimizer, routing="margin", seed=3)
    got = _py_train_node(X, Y, rows, **settings, max_weights=4)
    free = _py_train_node(X, Y, rows, **settings)
    want = train_node(X, Y, rows, **settings)
    # The cap leaves training alone and cuts what is stored.
    for key in ("directions", "weights", "bias", "trace"):
        assert np.array_equal(got[key], free[key]), key
    np.testing.assert_allclose(got["weights"], want["weights"], rtol=1e-9, atol=1e-12)
    stored = np.array([store_weights(w, 4) for w in got["weights"]])
    assert np.array_equal(got["stored_weights"], stored)
    assert np.all(np.count_nonzero(stored, axis=1) == 4)
    assert not np.array_equal(stored, free["stored_weights"])


def test_weight_cap_keeps_the_smaller_ids_of_equal_magnitudes(rng):
    # Every feature twice (columns j and j + 12 equal), so every weight has a
    # twin of the same magnitude, and every odd cap falls between two twins.
    X, Y = random_problem(rng)
    X = make_csr(sp.hstack([X, X]).toarray())
    rows = rng.permutation(X.shape[0])[:25]
    settings = dict(NODE_SETTINGS, arity=2, optimizer="nag", routing="margin", seed=3)
    free = _py_train_node(X, Y, rows, **settings)
    for cap in range(1, np.count_nonzero(free["stored_weights"], axis=1).max()):
        got = _py_train_node(X, Y, rows, **settings, max_weights=cap)
        stored = np.array([store_weights(w, cap) for w in got["weights"]])
        assert np.array_equal(got["stored_weights"], stored), cap


@pytest.mark.parametrize("cap", [3, 200, 1500, 2390])
def test_weight_cap_over_many_features_cuts_as_the_reference(rng, cap):
    # Regressors of ~2,400 weights, in twins of equal magnitude, so that the
    # selection runs through a sample's cuts, at central ranks and at the ends.
    dense = rng.uniform(-2.0, 3.0, (40, 1200)) * (rng.random((40, 1200)) < 0.5)
    X = make_csr(np.hstack([dense, dense]))
    Y = make_csr(rng.random((40, 6)) < 0.3)
    settings = dict(NODE_SETTINGS, arity=2, optimizer="nag", routing="margin", seed=3)
    got = _py_train_node(X, Y, np.arange(40), **settings, max_weights=cap)
    assert np.count_nonzero(got["weights"], axis=1).min() > 2 * 1024
    stored = np.array([store_weights(w, cap) for w in got["weights"]])
    assert np.array_equal(got["stored_weights"], stored)


@pytest.mark.parametrize("n", [5, 1023, 1024, 5000])
def test_magnitude_of_rank_is_the_sorted_magnitude(rng, n):
    values = rng.choice([-3.0, -1.5, 0.25, 0.5, 2.0, 7.0], n) * rng.integers(1, 40, n)
    magnitudes = np.sort(np.abs(values.astype(np.float32)))
    for rank in sorted({0, 1, n // 20, n // 2, n - 1 - n // 20, n - 2, n - 1}):
        assert _py_magnitude_of_rank(values, rank) == magnitudes[rank], rank


def test_magnitude_of_rank_survives_a_sample_that_misleads():
    # Every sampled position holds the largest magnitude: both cuts fall on
    # it, above the middle rank, and the selection runs over all of them.
    n = 4096
    values = np.ones(n, dtype=np.float32)
    values[np.arange(256) * n // 256] = 100.0
    for rank, magnitude in [(50, 1.0), (n // 2, 1.0), (n - 300, 1.0), (n - 10, 100.0)]:
        assert _py_magnitude_of_rank(values, rank) == magnitude, rank
    with pytest.raises(ValueError):
        _py_magnitude_of_rank(values, n)


def test_train_node_zero_epochs_keeps_initial_biases(rng):
    X, Y = random_problem(rng)
    got = _py_train_node(X, Y, np.arange(10), **dict(NODE_SETTINGS, epochs=0), arity=2,
                         optimizer="nag", routing="margin", seed=1)
    assert np.all(got["weights"] == 0)
    assert np.all(np.abs(got["bias"]) <= 0.01) and np.any(got["bias"] != 0)


@pytest.mark.parametrize("rows", [[0, 3, 3], [0, -1], [0, 10**6], [[0, 1]]])
def test_train_node_refuses_rows_a_node_cannot_hold(rng, rows):
    # A node's rows are distinct row ids: its trainer copies them into room for X once.
    X, Y = random_problem(rng)
    with pytest.raises(ValueError, match="distinct row ids"):
        _py_train_node(X, Y, np.array(rows), **NODE_SETTINGS, arity=2, optimizer="nag",
                       routing="margin", seed=1)


def test_train_node_stops_at_convergence_as_the_reference(rng):
    X, Y = random_problem(rng)
    rows = rng.permutation(X.shape[0])[:25]
    settings = dict(NODE_SETTINGS, epochs=40, arity=2, optimizer="nag", routing="margin", seed=3)
    every_pass = _py_train_node(X, Y, rows, **settings)
    passes = []
    for tolerance in (0.001, 0.02, 0.2):
        got = _py_train_node(X, Y, rows, **settings, epoch_tolerance=tolerance)
        want = train_node(X, Y, rows, **settings, epoch_tolerance=tolerance)
        assert np.array_equal(got["directions"], want["directions"])
        for key in ("prob", "label_prob", "weights", "bias", "trace"):
            np.testing.assert_allclose(got[key], want[key], rtol=1e-9, atol=1e-12, err_msg=key)
        # The passes taken are the first ones of the run that takes them all.
        n_passes = got["trace"].size
        np.testing.assert_array_equal(got["trace"], every_pass["trace"][:n_passes])
        passes.append(n_passes)
    # A looser tolerance stops no later, and the loosest stops before the 40 passes.
    assert MIN_PASSES <= passes[2] <= passes[1] <= passes[0] <= 40 and passes[2] < 40


# ----------------------------------------------------------------------------- tree growth


def descend(tree, X, row, arity, threshold):
    """Return the nodes an example visits, using the stored weights (pure Python)."""
    start, end = X.indptr[row], X.indptr[row + 1]
    x = dict(zip(X.indices[start:end].tolist(), X.data[start:end].astype(np.float64).tolist()))
    visited, stack = [], [0]
    while stack:
        node = stack.pop()
        visited.append(node)
        first = tree["first_child"][node]
        if first < 0:
            continue
        scores = []
        lo, hi = tree["weight_indptr"][node:node + 2]
        for m in range(arity):
            z = float(tree["bias"][node, m])
            for j, w in zip(tree["weight_indices"][lo:hi], tree["weight_values"][lo:hi, m]):
                z += x.get(int(j), 0.0) * float(w)
            scores.append(z)
        goes = [m for m in range(arity) if scores[m] >= threshold]
        stack.extend(first + m for m in (goes or [int(np.argmax(scores))]))
    return visited


def check_tree(tree, X, Y, arity, max_nodes, epochs, weight_threshold, threshold,
               leaf_scores="distribution"):
    first_child, parent, depth = tree["first_child"], tree["parent"], tree["depth"]
    n_nodes = first_child.size
    assert 1 <= n_nodes <= max_nodes
    assert parent[0] == -1 and depth[0] == 0 and tree["n_samples"][0] == X.shape[0]
    assert tree["weight_indptr"].shape == (n_nodes + 1,)
    assert tree["weight_values"].shape == (tree["weight_indices"].size, arity)
    assert tree["bias"].shape == (n_nodes, arity)
    internal = np.flatnonzero(first_child >= 0)
    children = (first_child[internal, None] + np.arange(arity)).ravel()
    assert np.array_equal(np.sort(children), np.arange(1, n_nodes))  # each node once
    assert np.all(first_child[internal] > internal)
    assert np.array_equal(parent[children], np.repeat(internal, arity))
    assert np.array_equal(depth[children], np.repeat(depth[internal] + 1, arity))
    weight_rows = np.diff(tree["weight_indptr"])
    leaf_sizes = np.diff(tree["leaf_indptr"])
    trace_sizes = np.diff(tree["trace_indptr"])
    leaves = first_child < 0
    assert np.all(weight_rows[leaves] == 0) and np.all(tree["bias"][leaves] == 0)
    assert np.all(leaf_sizes[~leaves] == 0) and np.all(leaf_sizes[leaves] > 0)
    assert np.all(trace_sizes[~leaves] == epochs) and np.all(trace_sizes[leaves] == 0)
    # A node lists the ids its regressors kept, each with a weight per
    # regressor: 0 where that one dropped it, at least one kept.
    kept = tree["weight_values"] != 0
    assert np.all(kept.any(axis=1))
    assert np.all(np.abs(tree["weight_values"][kept]) >= weight_threshold)
    assert np.all((tree["weight_indices"] >= 0) & (tree["weight_indices"] < X.shape[1]))
    for lo, hi in zip(tree["weight_indptr"][:-1], tree["weight_indptr"][1:]):
        assert np.all(np.diff(tree["weight_indices"][lo:hi]) > 0)
    visits = np.zeros(n_nodes, dtype=np.int64)
    leaf_hist = {}
    for row in range(X.shape[0]):
        visited = descend(tree, X, row, arity, threshold)
        assert any(leaves[v] for v in visited)
        visits[visited] += 1
        for v in visited:
            if leaves[v]:
                counts = leaf_hist.setdefault(v, np.zeros(Y.shape[1]))
                counts[Y.indices[Y.indptr[row]:Y.indptr[row + 1]]] += 1
    # Training routed exactly as the stored weights route.
    assert np.array_equal(visits, tree["n_samples"])
    for v in np.flatnonzero(leaves):
        lo, hi = tree["leaf_indptr"][v:v + 2]
        labels, values = tree["leaf_labels"][lo:hi], tree["leaf_values"][lo:hi]
        assert np.all(np.diff(labels) > 0)
        source = v if visits[v] else parent[v]  # an empty leaf copies its parent
        counts = (leaf_hist[v] if visits[v] else
                  np.asarray(Y[visits_rows(tree, X, source, arity, threshold)].sum(0)).ravel())
        if leaf_scores == "distribution":
            assert values.sum() == pytest.approx(1.0, abs=1e-5)
            np.testing.assert_allclose(values, counts[labels] / counts.sum(), rtol=1e-6)
        else:  # the fraction of the leaf's (or its parent's) examples with the label
            np.testing.assert_allclose(values, counts[labels] / visits[source], rtol=1e-6)
            assert np.all(values <= 1)
        assert np.count_nonzero(counts) == labels.size


def visits_rows(tree, X, node, arity, threshold):
    return [row for row in range(X.shape[0]) if node in descend(tree, X, row, arity, threshold)]


@pytest.mark.parametrize("routing", ["margin", "sigmoid"])
@pytest.mark.parametrize("arity", [2, 3])
@pytest.mark.parametrize("leaf_scores", ["distribution", "frequency"])
def test_build_tree_invariants(rng, routing, arity, leaf_scores):
    X, Y = random_problem(rng, n_samples=120, n_features=20, n_labels=10, clusters=5)
    settings = dict(TREE_SETTINGS, routing=routing, arity=arity)
    tree = build_tree(X, Y, **settings, leaf_scores=leaf_scores)
    assert tree["first_child"].size > 1 + arity  # it grew beyond one split
    check_tree(tree, X, Y, arity, settings["max_nodes"], settings["epochs"],
               settings["weight_threshold"], ROUTING_THRESHOLD[routing], leaf_scores)
    # The leaf scores change nothing else in the tree.
    other = build_tree(X, Y, **settings, leaf_scores=({"distribution", "frequency"}
                                                      - {leaf_scores}).pop())
    for name in tree:
        if name != "leaf_values":
            np.testing.assert_array_equal(tree[name], other[name])
    if arity == 3:  # these data give empty children: their leaves copy the parent
        assert np.any(tree["n_samples"] == 0)
    # Every split makes progress: no child receives all of its parent's examples.
    children = tree["parent"] >= 0
    assert np.all(tree["n_samples"][children] < tree["n_samples"][tree["parent"][children]])


def test_converged_nodes_stop_before_their_epochs_and_no_later(rng):
    X, Y = random_problem(rng, n_samples=120, n_features=20, n_labels=10, clusters=5)
    tolerance, epochs = 0.02, 30
    settings = dict(TREE_SETTINGS, epochs=epochs, max_nodes=81)
    tree = build_tree(X, Y, **settings, epoch_tolerance=tolerance)
    internal = np.flatnonzero(tree["first_child"] >= 0)
    indptr, values = tree["trace_indptr"], tree["trace_values"].astype(np.float64)
    stopped = 0
    for node in internal:
        trace = values[indptr[node]:indptr[node + 1]]
        assert MIN_PASSES <= trace.size <= epochs
        change = np.abs(np.diff(trace)) / np.abs(trace[:-1])
        # The trace is stored as float32: a hair of slack either side of the tolerance.
        assert np.all(change[MIN_PASSES - 2:-1] > tolerance * (1 - 1e-5)), node
        if trace.size < epochs:
            assert change[-1] <= tolerance * (1 + 1e-5), node
            stopped += 1
    assert stopped > 0
    # Tolerance 0 is the fixed number of passes.
    fixed = build_tree(X, Y, **settings, epoch_tolerance=0.0)
    assert np.all(np.diff(fixed["trace_indptr"])[fixed["first_child"] >= 0] == epochs)
    np.testing.assert_array_equal(fixed["first_child"],
                                  build_tree(X, Y, **settings)["first_child"])


def test_nodes_of_few_epochs_take_them_all_whatever_the_tolerance(rng):
    X, Y = random_problem(rng, n_samples=120, n_features=20, n_labels=10, clusters=5)
    settings = dict(TREE_SETTINGS, epochs=MIN_PASSES)
    fixed = build_tree(X, Y, **settings)
    loose = build_tree(X, Y, **settings, epoch_tolerance=1e9)
    for name in fixed:
        np.testing.assert_array_equal(loose[name], fixed[name], err_msg=name)


@pytest.mark.parametrize("arity", [2, 3])  # 3: empty children copy their parent's leaf
@pytest.mark.parametrize("leaf_scores", ["distribution", "frequency"])
def test_leaves_keep_their_most_frequent_labels(rng, arity, leaf_scores):
    X, Y = random_problem(rng, n_samples=120, n_features=20, n_labels=10, clusters=5)
    settings = dict(TREE_SETTINGS, arity=arity, leaf_scores=leaf_scores, max_nodes=15)
    full = build_tree(X, Y, **settings)
    kept = build_tree(X, Y, **settings, max_leaf_labels=3)
    for name in full:  # only the leaves change
        if not name.startswith("leaf_"):
            np.testing.assert_array_equal(full[name], kept[name])
    label_total = np.asarray(Y.sum(0)).ravel()
    pruned = 0
    for node in np.flatnonzero(full["first_child"] < 0):
        lo, hi = full["leaf_indptr"][node:node + 2]
        labels, values = full["leaf_labels"][lo:hi], full["leaf_values"][lo:hi]
        # Largest score (the count), then fewer training examples, then smaller id.
        best = np.lexsort((labels, label_total[labels], -values))[:3]
        expected = np.sort(labels[best])
        lo, hi = kept["leaf_indptr"][node:node + 2]
        np.testing.assert_array_equal(kept["leaf_labels"][lo:hi], expected)
        np.testing.assert_array_equal(kept["leaf_values"][lo:hi],
                                      values[np.searchsorted(labels, expected)])
        pruned += labels.size > 3
    assert pruned > 0


@pytest.mark.parametrize("leaf_model", ["histogram", "linear"])
def test_distributions_cut_to_their_most_frequent_labels_save_and_load(rng, tmp_path,
                                                                        leaf_model):
    # Found by tools/fuzz_models.py (seed 7731): a kept label holds its share
    # among all of the leaf's labels, so a cut histogram sums to less than 1,
    # and loading refused the file the fit had saved.
    X, Y = random_problem(rng, n_samples=120, n_features=20, n_labels=10, clusters=5)
    model = LdSM(n_trees=2, max_nodes=15, max_leaf_labels=1, leaf_scores="distribution",
                 leaf_model=leaf_model, random_state=0).fit(X, Y)
    model.save(tmp_path / "model.npz")
    loaded = LdSM.load(tmp_path / "model.npz")
    for expected, got in zip(model.predict(X, k=3), loaded.predict(X, k=3)):
        np.testing.assert_array_equal(got, expected)


def priority(Y, rows):
    counts = np.asarray(Y[rows].sum(0)).ravel()
    return counts.sum() - counts.max()


@pytest.mark.parametrize("seed", [0, 5, 6, 9])  # 5, 6, 9 expand node 2
def test_second_expansion_is_the_root_child_of_highest_priority(rng, seed):
    X, Y = random_problem(rng, n_samples=100, n_features=20, n_labels=10, clusters=4)
    # Budget for exactly two expansions of a binary tree: root, then one child.
    tree = build_tree(X, Y, **dict(TREE_SETTINGS, max_nodes=5, seed=seed))
    assert tree["first_child"][0] == 1
    expanded = np.flatnonzero(tree["first_child"][1:3] >= 0) + 1
    assert expanded.size == 1
    reach = {1: [], 2: []}
    for row in range(X.shape[0]):
        for node in descend(tree, X, row, 2, ROUTING_THRESHOLD["margin"]):
            if node in reach:
                reach[node].append(row)
    other = 3 - expanded[0]
    # Ties go to the smaller id, so the expanded node wins strictly or is node 1.
    assert (priority(Y, reach[expanded[0]]) > priority(Y, reach[other])
            or (expanded[0] == 1 and priority(Y, reach[1]) == priority(Y, reach[2])))


def test_build_tree_is_deterministic_and_seed_dependent(rng):
    X, Y = random_problem(rng, n_samples=80, n_features=15, n_labels=8)
    first = build_tree(X, Y, **TREE_SETTINGS)
    again = build_tree(X, Y, **TREE_SETTINGS)
    other = build_tree(X, Y, **dict(TREE_SETTINGS, seed=8))
    assert first.keys() == again.keys()
    for key in first:
        assert first[key].dtype == again[key].dtype
        assert np.array_equal(first[key], again[key]), key
    assert any(not np.array_equal(first[key], other[key]) for key in first)


def own_mapping(array):
    """Whether `array`'s memory is an anonymous memory mapping of its own."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return isinstance(array.base, memoryview) and isinstance(array.base.obj, mmap.mmap)


def test_large_arrays_of_a_grown_tree_are_mappings_of_their_own(rng):
    # Freed when the forest has copied them: a mapping goes back to the
    # system, memory of a worker thread's malloc arena mostly does not.
    X, Y = random_problem(rng, n_samples=1500, n_features=100, n_labels=10, clusters=5)
    tree = build_tree(X, Y, **dict(TREE_SETTINGS, max_nodes=401))
    large = {name for name, array in tree.items() if array.nbytes >= OWN_MAPPING_BYTES}
    assert {"weight_indices", "weight_values"} <= large
    for name, array in tree.items():
        assert own_mapping(array) == (name in large and "indptr" not in name), name
        assert array.flags.writeable and array.flags.c_contiguous


def test_forest_joins_the_trees_into_mappings_of_its_own(rng):
    # Its pages can then be those the released trees give back.
    X, Y = random_problem(rng, n_samples=1500, n_features=100, n_labels=10, clusters=5)
    trees = [build_tree(X, Y, **dict(TREE_SETTINGS, max_nodes=401, seed=seed))
             for seed in (3, 4)]
    expected = {name: np.concatenate([tree[name] for tree in trees])
                for name in ("weight_indices", "weight_values", "leaf_labels")}
    forest = concatenate_trees(trees, TREE_SETTINGS["arity"], release=True)
    for name, joined in expected.items():
        assert np.array_equal(forest[name], joined), name
        assert own_mapping(forest[name]) == (joined.nbytes >= OWN_MAPPING_BYTES), name
        assert name not in trees[0] and name not in trees[1]
    assert own_mapping(forest["weight_values"])


@pytest.mark.parametrize("shape, dtype", [
    ((3,), np.int32),
    ((OWN_MAPPING_BYTES // 8, 2), np.float32),
    ((OWN_MAPPING_BYTES // 4 - 1,), np.int32),
    ((0,), np.int64),
])
def test_mapped_empty_maps_large_arrays_only(shape, dtype):
    array = mapped_empty(shape, dtype)
    assert array.shape == shape and array.dtype == dtype and array.flags.c_contiguous
    assert own_mapping(array) == (array.nbytes >= OWN_MAPPING_BYTES)
    array[...] = 1
    assert np.all(array == 1)


@pytest.mark.parametrize("cap", [dict(max_weights=6), dict(weights_per_row=0.1)])
def test_weight_caps_are_respected(rng, cap):
    X, Y = random_problem(rng, n_samples=120, n_features=20, n_labels=10, clusters=5)
    free = build_tree(X, Y, **TREE_SETTINGS)
    capped = build_tree(X, Y, **TREE_SETTINGS, **cap)
    again = build_tree(X, Y, **TREE_SETTINGS, **cap)
    assert all(np.array_equal(capped[key], again[key]) for key in capped)
    lengths = regressor_lengths(capped, TREE_SETTINGS["arity"])
    limit = cap.get("max_weights") or np.maximum(1, np.floor(0.1 * capped["n_samples"]))
    assert np.all(lengths <= np.reshape(limit, (-1, 1)))
    assert lengths.sum() < regressor_lengths(free, TREE_SETTINGS["arity"]).sum()
    check_tree(capped, X, Y, TREE_SETTINGS["arity"], TREE_SETTINGS["max_nodes"],
               TREE_SETTINGS["epochs"], TREE_SETTINGS["weight_threshold"],
               ROUTING_THRESHOLD["margin"])


def test_weight_caps_that_never_bind_change_nothing(rng):
    X, Y = random_problem(rng, n_samples=120, n_features=20, n_labels=10, clusters=5)
    free = build_tree(X, Y, **TREE_SETTINGS)
    for cap in (dict(max_weights=X.shape[1]), dict(weights_per_row=X.shape[1])):
        loose = build_tree(X, Y, **TREE_SETTINGS, **cap)
        assert all(np.array_equal(free[key], loose[key]) for key in free)


def test_pure_labels_and_tiny_budgets_give_a_single_leaf(rng):
    X, Y = random_problem(rng)
    pure = make_csr(np.eye(1, Y.shape[1], 2).repeat(X.shape[0], axis=0))
    for labels, max_nodes in ((pure, 41), (Y, 1), (Y, 2)):
        tree = build_tree(X, labels, **dict(TREE_SETTINGS, max_nodes=max_nodes))
        assert np.array_equal(tree["first_child"], [-1])
        assert tree["weight_values"].size == 0 and tree["trace_values"].size == 0
        lo, hi = tree["leaf_indptr"]
        expected = np.asarray(labels.sum(0)).ravel()
        np.testing.assert_allclose(tree["leaf_values"],
                                   expected[tree["leaf_labels"]] / expected.sum(), rtol=1e-6)


def test_node_count_ends_at_the_nodes_expanded(rng):
    X, Y = random_problem(rng, n_samples=60)
    node_count = np.full(1, -1, dtype=np.int64)
    tree = build_tree(X, Y, **TREE_SETTINGS, node_count=node_count)
    assert node_count[0] == np.sum(tree["first_child"] >= 0) > 0
    plain = build_tree(X, Y, **TREE_SETTINGS)
    for name in plain:
        np.testing.assert_array_equal(tree[name], plain[name])


@pytest.mark.parametrize("node_count", [np.zeros(1, dtype=np.int32), np.zeros(2, dtype=np.int64),
                                        [0]])
def test_node_count_of_the_wrong_kind_is_refused(rng, node_count):
    X, Y = random_problem(rng, n_samples=20)
    with pytest.raises(ValueError, match="node_count must be"):
        build_tree(X, Y, **TREE_SETTINGS, node_count=node_count)


def test_unlabelled_examples_do_not_crash(rng):
    X, Y = random_problem(rng, n_samples=40)
    Y = make_csr(np.vstack([Y.toarray(), np.zeros((5, Y.shape[1]))]))
    X = make_csr(np.vstack([X.toarray(), np.ones((5, X.shape[1]))]))
    tree = build_tree(X, Y, **TREE_SETTINGS)
    assert tree["n_samples"][0] == 45
