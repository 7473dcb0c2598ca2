"""Tests of the LOMtree kernels (against a slow Python reference) and estimator."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from lomtree_reference import ReferenceLOMTree, ReferenceRegressor, log_sigmoid, rows_of

from xmltree._validation import check_features
from xmltree.exceptions import DataFormatError, ModelFormatError, NotFittedError
from xmltree.lomtree import LOMTree, _lomtree, to_multiclass


def drifting_stream(seed, n_samples=300, n_features=10, n_classes=8):
    """Signed sparse features; the first third uses half of the classes, then the rest.

    The drift strands the early leaves, so a small node budget forces swaps.
    """
    rng = np.random.default_rng(seed)
    X = sp.random(n_samples, n_features, density=0.3, random_state=seed, format="csr",
                  dtype=np.float32)
    X.data = (X.data * 4 - 2).astype(np.float32)
    y = np.empty(n_samples, dtype=np.int32)
    third = n_samples // 3
    y[:third] = rng.integers(0, n_classes // 2, third)
    y[third:] = rng.integers(n_classes // 2, n_classes, n_samples - third)
    return X, y


def separable_problem(seed, n_samples=1200, n_features=40, n_classes=12):
    """Each class has a prototype of a few active features, plus noise features."""
    rng = np.random.default_rng(seed)
    prototypes = rng.integers(0, n_features, size=(n_classes, 4))
    y = rng.integers(0, n_classes, n_samples)
    rows = []
    for label in y:
        x = np.zeros(n_features, dtype=np.float32)
        x[prototypes[label]] = 1.0
        x[rng.integers(0, n_features, 2)] += rng.random(2).astype(np.float32)
        rows.append(x)
    return sp.csr_matrix(np.array(rows)), y


def train_builder(X, y, max_internal_nodes, optimizer, swap_resistance=4.0, loss="hinge"):
    builder = _lomtree.LOMTreeBuilder(X.shape[1], int(y.max()) + 1, max_internal_nodes,
                                      swap_resistance, optimizer, 0.5, loss)
    builder.learn(check_features(X), y, np.arange(X.shape[0]))
    return builder


def train_both(X, y, max_internal_nodes, optimizer="nag", loss="hinge", swap_resistance=4.0):
    """The kernel's builder and the Python reference, trained on the same stream."""
    builder = train_builder(X, y, max_internal_nodes, optimizer, swap_resistance, loss)
    reference = ReferenceLOMTree(X.shape[1], max_internal_nodes, swap_resistance, optimizer,
                                 0.5, loss)
    for x, label in zip(rows_of(X), y):
        reference.learn_one(x, int(label))
    return builder, reference


def reference_arrays(reference):
    """The reference tree in the layout of LOMTreeBuilder.get_state."""
    nodes = reference.nodes
    out = {
        "parent": [v.parent for v in nodes], "left": [v.left for v in nodes],
        "right": [v.right for v in nodes], "regressor": [v.regressor for v in nodes],
        "min_count": [v.min_count for v in nodes], "score_sum": [v.total_score for v in nodes],
        "n_trained": [v.total_trained for v in nodes],
        "n_recycled": [v.n_recycled for v in nodes],
        "stats_ptr": np.cumsum([0] + [len(v.reached) for v in nodes]),
    }
    labels = [sorted(v.reached) for v in nodes]
    out["stats_label"] = [y for ys in labels for y in ys]
    out["stats_reached"] = [v.reached[y] for v, ys in zip(nodes, labels) for y in ys]
    out["stats_trained"] = [v.trained.get(y, 0) for v, ys in zip(nodes, labels) for y in ys]
    out["stats_score_sum"] = [v.score_sum.get(y, 0.0) for v, ys in zip(nodes, labels)
                              for y in ys]
    regs = reference.regressors
    out["weights"] = np.array([r.weights for r in regs]).reshape(len(regs), -1)
    out["scale"] = np.array([r.scale for r in regs]).reshape(len(regs), -1)
    out["sum_sq_grad"] = np.array([r.sum_sq_grad for r in regs]).reshape(len(regs), -1)
    out["regressor_norm"] = [r.norm for r in regs]
    out["regressor_n_updates"] = [r.n_updates for r in regs]
    return out


def assert_same_state(left, right):
    assert left.keys() == right.keys()
    for name in left:
        np.testing.assert_array_equal(np.asarray(left[name]), np.asarray(right[name]),
                                      err_msg=name)


# ---------------------------------------------------------------------- kernel vs reference


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
@pytest.mark.parametrize("optimizer", ["nag", "sgd"])
@pytest.mark.parametrize("seed", [0, 1])
def test_kernel_matches_reference_exactly(optimizer, seed, loss):
    X, y = drifting_stream(seed, n_samples=450)
    builder, reference = train_both(X, y, 3, optimizer, loss)
    assert reference.n_swaps >= 1, "the stream must exercise the swap procedure"
    assert builder.n_swaps == reference.n_swaps
    assert_same_state(builder.get_state(), reference_arrays(reference))
    expected_leaves = [reference.leaf_of(x) for x in rows_of(X)]
    np.testing.assert_array_equal(builder.leaves(check_features(X)),
                                  expected_leaves)


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_kernel_matches_reference_with_large_budget(loss):
    X, y = drifting_stream(3, n_samples=200, n_classes=10)
    builder, reference = train_both(X, y, 9, loss=loss)
    assert_same_state(builder.get_state(), reference_arrays(reference))


@pytest.mark.parametrize("loss, c", [("hinge", 4.0), ("hinge", 0.5), ("logistic", 1.0)])
def test_beam_search_matches_reference_and_brute_force(loss, c):
    X, y = drifting_stream(7, n_samples=300, n_classes=10)
    builder, reference = train_both(X, y, 9, loss=loss)
    X = check_features(X)
    for width in (1, 2, 3, 19):
        expected = [reference.leaf_of(x, width, c) for x in rows_of(X)]
        np.testing.assert_array_equal(builder.leaves(X, width, c),
                                      expected, err_msg=f"beam_width={width}")
    nodes = reference.nodes
    margins = builder.routing_margins()
    np.testing.assert_array_equal(margins, [reference.margin(j) for j in range(len(nodes))])
    assert np.sum(margins != 1.0) >= 3  # the margins are exercised
    # A beam as wide as the tree explores every path: it must find the leaf
    # of largest path log-probability, computed here leaf by leaf.
    leaves = [j for j, node in enumerate(nodes) if node.is_leaf()]
    found = builder.leaves(X, len(nodes), c)
    for x, leaf in zip(rows_of(X), found):
        def path_log_prob(j, x=x):
            total = 0.0
            while nodes[j].parent >= 0:
                parent = nodes[nodes[j].parent]
                s = (c * reference.regressors[parent.regressor].score(x)
                     / reference.margin(nodes[j].parent))
                total += log_sigmoid(s if parent.right == j else -s)
                j = nodes[j].parent
            return total
        assert path_log_prob(leaf) == pytest.approx(max(map(path_log_prob, leaves)), abs=1e-9)


@pytest.mark.parametrize("loss, c", [("hinge", 4.0), ("hinge", 0.5), ("logistic", 1.0)])
def test_predict_topk_matches_reference(loss, c):
    X, y = drifting_stream(8, n_samples=300, n_classes=10)
    builder, reference = train_both(X, y, 9, loss=loss)
    X = check_features(X)
    for width, k in ((1, 3), (2, 1), (3, 4), (8, 10), (19, 2)):
        labels, scores = builder.predict_top_k(X, k, 2, width, c)
        for row, x in enumerate(rows_of(X)):
            expected = reference.predict_topk(x, k, width, c)
            assert len(expected) == k  # every class was seen by this stream
            np.testing.assert_array_equal(labels[row], [label for label, _ in expected],
                                          err_msg=f"beam_width={width}, row {row}")
            np.testing.assert_array_equal(scores[row], np.float32([s for _, s in expected]))


@pytest.mark.parametrize("optimizer", ["nag", "sgd"])
def test_margin_steps_stop_at_the_target(optimizer):
    # The kernels equal the reference exactly, so checking the reference's
    # margin steps checks theirs: a step never carries the score past its
    # target sign (beyond the rounding of the weights it stores in float32),
    # and once the margin is met nothing changes.
    X, _ = drifting_stream(6, n_samples=200)
    regressor = ReferenceRegressor(X.shape[1])
    step = regressor.nag_margin_step if optimizer == "nag" else regressor.sgd_margin_step
    signs = np.where(np.random.default_rng(6).random(200) < 0.5, -1.0, 1.0)
    n_capped = 0
    for x, sign in zip(rows_of(X), signs):
        before = regressor.score(x)
        state = (list(regressor.weights), list(regressor.sum_sq_grad), regressor.n_updates)
        after = step(x, sign, 10.0)  # a large rate, so that the cap is exercised
        if sign * before >= 1.0:
            assert (list(regressor.weights), list(regressor.sum_sq_grad),
                    regressor.n_updates) == state
            assert after == before
        else:
            assert sign * after <= 1.0 + 1e-6
            n_capped += math.isclose(sign * after, 1.0, rel_tol=1e-6) or math.isclose(
                sign * after - sign * before, 2.0, rel_tol=1e-6)
    assert n_capped > 10


def test_swap_bound_on_adversarial_stream():
    # Class groups rotate every 20 examples, so leaves keep being stranded
    # and the budget of 7 internal nodes forces thousands of swap attempts.
    n = 20000
    rng = np.random.default_rng(0)
    X = sp.random(n, 20, density=0.3, random_state=0, format="csr", dtype=np.float32)
    group = np.repeat(np.arange(n // 20), 20) % 4
    y = (group * 4 + rng.integers(0, 4, n)).astype(np.int32)
    resistant = train_builder(X, y, 7, "nag", swap_resistance=4.0)
    assert resistant.n_swaps >= 5
    assert resistant.get_state()["n_recycled"].max() <= math.log2(n)
    # Control: without enough resistance the same stream recycles some node far
    # more often, so the bound above is a real check.
    weak = train_builder(X, y, 7, "nag", swap_resistance=1.0)
    assert weak.get_state()["n_recycled"].max() > math.log2(n)


@pytest.mark.parametrize("swap_resistance", [0.0, 0.5])
def test_a_low_swap_resistance_never_recycles_a_leaf_into_itself(tmp_path, swap_resistance):
    # Below RS = 1 the smallest leaf itself may pass Inequality 2. It used to
    # become its own child: nodes were left unreachable, and the saved model
    # could not be loaded (nor pickled).
    X, y = drifting_stream(0, n_samples=450)
    builder, reference = train_both(X, y, 3, swap_resistance=swap_resistance)
    assert reference.n_swaps >= 1
    assert_same_state(builder.get_state(), reference_arrays(reference))
    model = LOMTree(max_internal_nodes=3, swap_resistance=swap_resistance).fit(X, y)
    model.save(tmp_path / "model.npz")
    np.testing.assert_array_equal(LOMTree.load(tmp_path / "model.npz").predict(X),
                                  model.predict(X))


def test_tree_invariants_after_swaps():
    X, y = drifting_stream(1, n_samples=2000, n_classes=12)
    state = train_builder(X, y, 5, "nag").get_state()
    left, right, counts = state["left"], state["right"], state["min_count"]
    inner = np.flatnonzero(left >= 0)
    assert state["parent"].shape[0] == 2 * inner.size + 1
    np.testing.assert_array_equal(counts[inner], np.minimum(counts[left[inner]],
                                                            counts[right[inner]]))
    np.testing.assert_array_equal(state["parent"][left[inner]], inner)
    np.testing.assert_array_equal(state["parent"][right[inner]], inner)
    # Every training example ends in exactly one leaf's C or was counted
    # before a recycling reset, so the leaves never hold more than the stream.
    assert counts[left < 0].sum() <= X.shape[0]


# ---------------------------------------------------------------------- estimator


def test_learns_separable_problem():
    X, y = separable_problem(0)
    model = LOMTree(epochs=3).fit(X[:1000], y[:1000])
    assert np.mean(model.predict(X[1000:]) == y[1000:]) > 0.8
    stats = model.tree_statistics()
    assert stats["n_internal_nodes"] == 11
    assert stats["n_nodes"] == 2 * stats["n_internal_nodes"] + 1
    assert stats["depth"] >= math.ceil(math.log2(stats["n_leaves"]))
    assert model.depth_ == stats["depth"] == model.node_depth_.max()
    leaves = model.apply(X)
    assert np.all(model._builder.node_arrays()["left"][leaves] == -1)


def test_predict_topk_matches_leaf_histograms():
    # With the single path, the ranking is the histogram of the leaf reached.
    X, y = separable_problem(1, n_classes=9)
    labels = y * 10 + 3  # non-contiguous class labels must round-trip
    model = LOMTree(beam_width=1).fit(X, labels)
    top, scores = model.predict_top_k(X[:200], 4)
    state = model._builder.get_state()
    ptr = state["stats_ptr"]
    for row, leaf in enumerate(model.apply(X[:200])):
        ids = state["stats_label"][ptr[leaf]:ptr[leaf + 1]]
        counts = state["stats_reached"][ptr[leaf]:ptr[leaf + 1]]
        ranked = sorted(zip(-counts, ids))[:4]
        expected = model.classes_[[c for _, c in ranked]]
        np.testing.assert_array_equal(top[row, :len(ranked)], expected)
        np.testing.assert_allclose(scores[row, :len(ranked)],
                                   [-c / counts.sum() for c, _ in ranked], rtol=1e-6)
        assert len(set(top[row])) == 4
        assert np.all(np.diff(scores[row]) <= 0)
    np.testing.assert_array_equal(model.predict(X[:200]), top[:, 0])


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_beam_scale_reaches_the_kernel(loss):
    X, y = drifting_stream(4, n_samples=300, n_classes=10)
    model = LOMTree(loss=loss, beam_width=3).fit(X, y)
    checked = check_features(X)
    for c in (2.0, 0.3, 7.0):  # set on the fitted model: prediction only
        model.beam_scale = c
        np.testing.assert_array_equal(model.apply(X), model._builder.leaves(checked, 3, c))
        top, scores = model.predict_top_k(X, 3)
        expected = model._builder.predict_top_k(checked, 3, 1, 3, c)
        np.testing.assert_array_equal(top, model.classes_[expected[0]])
        np.testing.assert_array_equal(scores, expected[1])
    model.beam_scale = -1.0
    with pytest.raises(ValueError, match="beam_scale"):
        model.predict(X)


def test_partial_fit_over_batches_equals_fit():
    X, y = drifting_stream(2, n_samples=900, n_classes=10)
    whole = LOMTree(max_internal_nodes=4).fit(X, y)
    streamed = LOMTree(max_internal_nodes=4)
    for start in range(0, 900, 250):
        streamed.partial_fit(X[start:start + 250], y[start:start + 250],
                             classes=np.arange(10))
    assert whole._builder.n_swaps >= 1
    assert_same_state(whole._get_state()[1], streamed._get_state()[1])
    np.testing.assert_array_equal(whole.predict(X), streamed.predict(X))


def test_save_load_roundtrip_predicts_and_keeps_training(tmp_path):
    X, y = drifting_stream(4, n_samples=600, n_classes=10)
    model = LOMTree(max_internal_nodes=5, optimizer="sgd", learning_rate=0.3)
    model.partial_fit(X[:400], y[:400], classes=np.arange(10))
    model.save(tmp_path / "tree.npz")
    loaded = LOMTree.load(tmp_path / "tree.npz")
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_array_equal(loaded.predict_top_k(X, 3)[1], model.predict_top_k(X, 3)[1])
    model.partial_fit(X[400:], y[400:])
    loaded.partial_fit(X[400:], y[400:])
    assert_same_state(model._get_state()[1], loaded._get_state()[1])


def test_load_model_written_before_the_loss_option(tmp_path):
    from xmltree._persistence import save_model
    X, y = drifting_stream(4, n_samples=300, n_classes=8)
    model = LOMTree(max_internal_nodes=5, loss="logistic").fit(X, y)
    params, arrays = model._get_state()
    del params["loss"]
    save_model(tmp_path / "old.npz", "lomtree", params, arrays)
    loaded = LOMTree.load(tmp_path / "old.npz")
    assert loaded.loss == "logistic"
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


def test_predict_topk_completes_with_unseen_classes():
    X, y = separable_problem(4, n_samples=200, n_classes=3)
    model = LOMTree().partial_fit(X, y, classes=[0, 1, 2, 5, 9])
    top, scores = model.predict_top_k(X[:20], 5)
    for row in range(20):
        assert sorted(top[row]) == [0, 1, 2, 5, 9]
        np.testing.assert_array_equal(top[row, 3:], [5, 9])  # never seen: last, score 0
        np.testing.assert_array_equal(scores[row, 3:], 0)


def test_to_multiclass_rules():
    Y = [[2], [0, 3], [], [1, 3]]
    with pytest.raises(DataFormatError, match="row 1 has 2 labels"):
        to_multiclass(Y)
    y, rows = to_multiclass(Y, rule="most_frequent")
    np.testing.assert_array_equal(rows, [0, 1, 3])
    np.testing.assert_array_equal(y, [2, 3, 3])  # label 3 is the most frequent
    y, _ = to_multiclass(Y, rule="most_frequent", label_counts=[5, 9, 0, 1])
    np.testing.assert_array_equal(y, [2, 0, 1])
    y, rows = to_multiclass([[1], [0], [1]])
    np.testing.assert_array_equal(y, [1, 0, 1])
    with pytest.raises(ValueError, match="rule"):
        to_multiclass(Y, rule="first")


def test_fit_with_shuffle_is_reproducible():
    X, y = separable_problem(2, n_samples=400)
    a = LOMTree(shuffle=True, epochs=2, random_state=7).fit(X, y)
    b = LOMTree(shuffle=True, epochs=2, random_state=7).fit(X, y)
    assert_same_state(a._get_state()[1], b._get_state()[1])


# ---------------------------------------------------------------------- bad input


@pytest.mark.parametrize("bad_y", [
    np.zeros((10, 3), dtype=int),                       # indicator matrix
    sp.csr_matrix(np.eye(10, 3)),                      # sparse indicators
    [[0, 1], [2]] + [[1]] * 8,                          # label lists
    np.linspace(0, 1, 10),                             # non-integer labels
    np.array(["a"] * 10),                               # strings
])
def test_fit_rejects_multilabel_or_non_integer_y(bad_y):
    X = np.ones((10, 4))
    with pytest.raises(DataFormatError, match="y:"):
        LOMTree().fit(X, bad_y)


def test_fit_rejects_bad_X_and_length_mismatch():
    with pytest.raises(DataFormatError, match="NaN"):
        LOMTree().fit(np.full((3, 2), np.nan), [0, 1, 0])
    with pytest.raises(DataFormatError, match="3 labels"):
        LOMTree().fit(np.ones((4, 2)), [0, 1, 0])
    with pytest.raises(DataFormatError, match="at least one sample"):
        LOMTree().fit(np.ones((0, 2)), np.zeros(0, dtype=int))


def test_class_labels_beyond_int64_are_refused_not_wrapped():
    # uint64 2**63 used to become -2**63.
    with pytest.raises(DataFormatError, match="beyond the int64 range"):
        LOMTree().fit(np.eye(2), np.array([2**63, 1], dtype=np.uint64))


def test_a_diverging_fit_raises_and_leaves_no_model(monkeypatch):
    # Steps beyond MAX_LEARNING_RATE are refused; past that bound, scores overflow.
    import dataclasses

    from xmltree.lomtree._params import LOMTREE_PARAMS

    unbounded = tuple(dataclasses.replace(param, high=math.inf)
                      if param.name == "learning_rate" else param for param in LOMTREE_PARAMS)
    monkeypatch.setattr("xmltree.lomtree._estimator.LOMTREE_PARAMS", unbounded)
    X, y = separable_problem(0, n_samples=200)
    model = LOMTree(learning_rate=1e300, loss="logistic")
    with pytest.raises(ValueError, match="diverged .* lower learning_rate"):
        model.fit(X * 1e10, y)
    with pytest.raises(NotFittedError):
        model.save("never-written.npz")


def test_a_budget_beyond_the_address_space_is_a_value_error():
    X, y = separable_problem(0, n_samples=50)
    try:
        LOMTree(max_internal_nodes=2**30 - 1).fit(X, y)  # 300 GiB of regressor rows
    except ValueError as error:  # not a MemoryError: the message names the parameter
        assert "max_internal_nodes=1073741823" in str(error)


def test_single_class_and_empty_batches():
    X = np.eye(4)
    model = LOMTree().fit(X, [3, 3, 3, 3])
    np.testing.assert_array_equal(model.predict(X), [3, 3, 3, 3])
    assert model.tree_statistics()["n_nodes"] == 1
    streamed = LOMTree().partial_fit(np.zeros((0, 4)), [], classes=[1, 2])
    streamed.partial_fit(X, [1, 2, 1, 2]).partial_fit(np.zeros((0, 4)), [])
    assert streamed.tree_statistics()["n_examples_seen"] == 4


@pytest.mark.parametrize("params, name", [
    ({"swap_resistance": -1}, "swap_resistance"), ({"optimizer": "adam"}, "optimizer"),
    ({"learning_rate": 0}, "learning_rate"), ({"epochs": 0}, "epochs"), ({"loss": "log"}, "loss"),
    ({"beam_width": 0}, "beam_width"), ({"beam_scale": 0}, "beam_scale"),
    ({"beam_scale": math.inf}, "beam_scale"), ({"beam_scale": "4"}, "beam_scale"),
    ({"max_internal_nodes": 0}, "max_internal_nodes"), ({"n_jobs": 0}, "n_jobs"),
])
def test_rejects_bad_parameters(params, name):
    with pytest.raises(ValueError, match=name):
        LOMTree(**params).fit(np.eye(4), [0, 1, 2, 3])


def test_partial_fit_and_predict_misuse():
    X, y = separable_problem(3, n_samples=50, n_classes=4)
    with pytest.raises(NotFittedError, match="not fitted"):
        LOMTree().predict(X)
    with pytest.raises(ValueError, match="classes must be given"):
        LOMTree().partial_fit(X, y)
    fresh = LOMTree()
    with pytest.raises(DataFormatError, match="label 7"):
        fresh.partial_fit(X, np.full(50, 7), classes=[0, 1, 2, 3])
    with pytest.raises(NotFittedError, match="not fitted"):  # no half-made tree left behind
        fresh.predict(X)
    model = LOMTree().partial_fit(X, y, classes=[0, 1, 2, 3])
    with pytest.raises(DataFormatError, match="label 7"):
        model.partial_fit(X, np.full(50, 7))
    with pytest.raises(ValueError, match="classes differ"):
        model.partial_fit(X, y, classes=[0, 1, 2])
    with pytest.raises(DataFormatError, match="features"):
        model.predict(sp.hstack([X, X]).tocsr())
    with pytest.raises(ValueError, match="k must be"):
        model.predict_top_k(X, 0)
    top, scores = model.predict_top_k(X, 5)  # capped at the 4 classes
    assert top.shape == scores.shape == (X.shape[0], 4)


def _tampered(tmp_path, change):
    X, y = drifting_stream(5, n_samples=300, n_classes=8)
    model = LOMTree(max_internal_nodes=3).fit(X, y)
    params, arrays = model._get_state()
    change(params, arrays)
    from xmltree._persistence import save_model
    save_model(tmp_path / "bad.npz", "lomtree", params, arrays)
    return tmp_path / "bad.npz"


def _cycle(params, arrays):
    inner = np.flatnonzero(arrays["left"] >= 0)
    arrays["left"][inner[-1]] = 0  # a child pointing back to the root


def _set(name, index, value):
    def change(params, arrays):
        arrays[name][index] = value
    return change


@pytest.mark.parametrize("change", [
    _cycle,
    _set("regressor", 0, 5),
    _set("stats_label", 0, 99),
    _set("stats_ptr", 1, 10**6),
    _set("weights", (0, 0), np.inf),
    _set("min_count", 0, 10**9),
    lambda p, a: a.update(parent=a["parent"].astype(np.int64)),
    lambda p, a: a.update(weights=a["weights"][:, :-1]),
    lambda p, a: a.pop("scale"),
    lambda p, a: p.update(n_features=-1),
    lambda p, a: p.update(n_features=2**40),
    lambda p, a: p.update(optimizer="adam"),
    lambda p, a: p.update(loss="squared"),
])
def test_load_rejects_corrupt_models(tmp_path, change):
    path = _tampered(tmp_path, change)
    with pytest.raises(ModelFormatError):
        LOMTree.load(path)


def test_load_rejects_other_kind(tmp_path):
    from xmltree._persistence import save_model
    save_model(tmp_path / "other.npz", "ldsm", {}, {})
    with pytest.raises(ModelFormatError, match="lomtree"):
        LOMTree.load(tmp_path / "other.npz")
