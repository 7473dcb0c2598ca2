"""Tests of the learned-tree kernels and the LearnedTree estimator."""

import numpy as np
import pytest
import scipy.sparse as sp

from xmltree._validation import check_features, check_labels
from xmltree.exceptions import DataFormatError, ModelFormatError, NotFittedError
from xmltree.learned_tree import LearnedTree, fit_text_file
from xmltree.learned_tree import _learned_tree as kernels
from xmltree.learned_tree.label_tree import EMPTY, huffman_tree, random_tree
from xmltree.text import context_windows


def random_model(rng, tree, n_features=12, dim=5, scale=1.0):
    """Arrays of a model with random parameters over ``tree``."""
    embeddings = rng.normal(0, scale, (n_features, dim)).astype(np.float32)
    weights = rng.normal(0, scale, (tree.n_nodes, tree.arity, dim)).astype(np.float32)
    biases = rng.normal(0, scale, (tree.n_nodes, tree.arity)).astype(np.float32)
    return (embeddings, weights, biases, tree.children, tree.path_nodes, tree.path_slots,
            tree.label_depth)


def random_rows(rng, n_rows, n_features, density=0.4):
    X = sp.random(n_rows, n_features, density=density, format="csr", random_state=rng,
                  data_rvs=lambda n: rng.integers(1, 4, n).astype(np.float32))
    return check_features(X)


def softmax_masked(logits, mask):
    z = np.where(mask, logits, -np.inf)
    z = np.exp(z - z.max())
    return z / z.sum()


def descend(param, squares, grad, lr):
    """SGD step in place, or Adagrad if ``squares`` (updated in place) is given."""
    if squares is None:
        param -= lr * grad
    else:
        squares += grad ** 2
        param -= lr * grad / (np.sqrt(squares) + 1e-8)


def reference_step(model, rows, row, label, lr, squares=None):
    """NumPy float64 step of one example (SGD, or Adagrad with accumulators
    ``squares``, updated in place); returns updated parameter copies and the loss."""
    emb, w, b, children, path_nodes, path_slots, depth = model
    emb, w, b = emb.astype(np.float64), w.astype(np.float64), b.astype(np.float64)
    sq_emb, sq_w, sq_b = [None] * 3 if squares is None else squares
    indptr, indices, values = rows.indptr, rows.indices, rows.data
    feats, vals = indices[indptr[row]:indptr[row + 1]], values[indptr[row]:indptr[row + 1]]
    h = (vals[:, None] * emb[feats]).sum(0) / vals.sum()
    grad_h = np.zeros_like(h)
    loss = 0.0
    for d in range(depth[label]):
        node, slot = path_nodes[label, d], path_slots[label, d]
        mask = children[node] != EMPTY
        p = softmax_masked(w[node] @ h + b[node], mask)
        loss -= np.log(p[slot])
        g = p - np.eye(len(p))[slot]
        g[~mask] = 0
        grad_h += g @ w[node]
        for j in np.flatnonzero(mask):     # empty slots are never touched
            descend(w[node, j], None if sq_w is None else sq_w[node, j], g[j] * h, lr)
            descend(b[node, j:j + 1], None if sq_b is None else sq_b[node, j:j + 1],
                    g[j:j + 1], lr)
    for f, v in zip(feats, vals):
        descend(emb[f], None if sq_emb is None else sq_emb[f], v / vals.sum() * grad_h, lr)
    return emb, w, b, loss


def test_node_gradients_match_finite_differences(rng):
    tree = huffman_tree([1, 2, 3, 4, 5, 6], 3)   # 6 labels + 1 dummy: an empty slot
    model = random_model(rng, tree, scale=0.5)
    node = int(np.flatnonzero((tree.children == EMPTY).any(axis=1))[0])
    target = int(np.flatnonzero(tree.children[node] != EMPTY)[0])
    hidden = rng.normal(0, 1, 5).astype(np.float32)
    w0, b0 = model[1][node].astype(np.float64), model[2][node].astype(np.float64)
    mask = tree.children[node] != EMPTY

    def loss_of(w, b, h):
        return -np.log(softmax_masked(w @ h + b, mask)[target])

    lr = 1e-3
    weights_before = model[1].copy()
    biases_before = model[2].copy()
    loss, grad_hidden, probas = kernels._py_node_step(model, hidden, node, target, lr)
    h0 = hidden.astype(np.float64)
    assert loss == pytest.approx(loss_of(w0, b0, h0), rel=1e-5)
    np.testing.assert_allclose(probas, softmax_masked(w0 @ h0 + b0, mask), atol=1e-6)
    eps = 1e-6
    fd_h = [(loss_of(w0, b0, h0 + eps * e) - loss_of(w0, b0, h0 - eps * e)) / (2 * eps)
            for e in np.eye(5)]
    np.testing.assert_allclose(grad_hidden, fd_h, atol=1e-4)
    fd_w = np.zeros_like(w0)
    for j in range(w0.shape[0]):
        for k in range(w0.shape[1]):
            step = np.zeros_like(w0)
            step[j, k] = eps
            fd_w[j, k] = (loss_of(w0 + step, b0, h0) - loss_of(w0 - step, b0, h0)) / (2 * eps)
    applied = (weights_before[node] - model[1][node]) / lr
    np.testing.assert_allclose(applied, fd_w, atol=2e-3)
    fd_b = [(loss_of(w0, b0 + eps * e, h0) - loss_of(w0, b0 - eps * e, h0)) / (2 * eps)
            for e in np.eye(3)]
    np.testing.assert_allclose((biases_before[node] - model[2][node]) / lr, fd_b, atol=2e-3)
    assert np.all(model[1][node][~mask] == weights_before[node][~mask])


def test_adagrad_node_step_matches_hand_computation(rng):
    """Two Adagrad steps of one node softmax with an empty slot, against
    the update written out in NumPy: the accumulators add the squared
    gradients, each coordinate steps by lr * g / sqrt(accumulator)."""
    tree = huffman_tree([1, 2, 3, 4, 5, 6], 3)   # 6 labels + 1 dummy: an empty slot
    model = random_model(rng, tree, dim=4, scale=0.5)
    node = int(np.flatnonzero((tree.children == EMPTY).any(axis=1))[0])
    mask = tree.children[node] != EMPTY
    target = int(np.flatnonzero(mask)[-1])
    hidden = np.array([0.5, -1.0, 0.0, 2.0], np.float32)
    squares = tuple(rng.uniform(0.1, 1.0, a.shape).astype(np.float32) for a in model[:3])
    w = model[1][node].astype(np.float64)
    b = model[2][node].astype(np.float64)
    sq_w = squares[1][node].astype(np.float64)
    sq_b = squares[2][node].astype(np.float64)
    untouched = [a.copy() for a in (model[0], squares[0])]
    lr = 0.3
    for _ in range(2):
        p = softmax_masked(w @ hidden + b, mask)
        g = np.where(mask, p - (np.arange(3) == target), 0.0)
        loss, grad_hidden, probas = kernels._py_node_step(model, hidden, node, target, lr,
                                                          squares)
        np.testing.assert_allclose(probas, p, atol=1e-6)
        assert loss == pytest.approx(-np.log(p[target]), rel=1e-5)
        np.testing.assert_allclose(grad_hidden, g @ w, atol=1e-5)
        grad_w = np.outer(g, hidden)
        sq_w = sq_w + grad_w ** 2
        sq_b = sq_b + g ** 2
        w = w - lr * grad_w / np.sqrt(sq_w)
        b = b - lr * g / np.sqrt(sq_b)
        np.testing.assert_allclose(squares[1][node], sq_w, rtol=1e-5)
        np.testing.assert_allclose(squares[2][node], sq_b, rtol=1e-5)
        np.testing.assert_allclose(model[1][node], w, atol=1e-5)
        np.testing.assert_allclose(model[2][node], b, atol=1e-5)
    # the embeddings (and their accumulators) are not the node step's business
    for got, before in zip((model[0], squares[0]), untouched):
        np.testing.assert_array_equal(got, before)
    with pytest.raises(ValueError, match="squares"):
        kernels._py_node_step(model, hidden, node, target, lr, (squares[0], squares[1][:1],
                                                                 squares[2]))


@pytest.mark.parametrize("optimizer", ["sgd", "adagrad"])
@pytest.mark.parametrize("with_stats", [False, True])
def test_training_step_matches_numpy_reference(rng, with_stats, optimizer):
    tree = random_tree(7, 3, seed=2)
    model = random_model(rng, tree, scale=0.3)
    rows = random_rows(rng, 4, 12, density=0.5)
    row, label, lr = 2, 5, 0.05
    squares = expected_squares = None
    if optimizer == "adagrad":
        squares = tuple(rng.uniform(0, 0.5, a.shape).astype(np.float32) for a in model[:3])
        expected_squares = tuple(a.astype(np.float64) for a in squares)
    expected = reference_step(model, rows, row, label, lr, expected_squares)
    stats = None
    if with_stats:
        stats = (np.zeros((7, tree.max_depth, 3), np.float32),
                 np.zeros((7, tree.max_depth), np.float32))
    one_label = check_labels([[0], [0], [label], [0]], n_labels=7)
    loss = kernels.train_epoch_part(model, rows, one_label, np.array([row], np.int32), lr, 0.0,
                                    0.1, stats, 1, 0, squares)
    assert loss == pytest.approx(expected[3], rel=1e-5)
    for got, want in zip(model[:3], expected[:3]):
        np.testing.assert_allclose(got, want, atol=1e-5)
    if squares is not None:
        for got, want in zip(squares, expected_squares):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    if with_stats:
        assert np.all(stats[1][label, :tree.label_depth[label]] == 1)
        assert stats[1].sum() == tree.label_depth[label]
        np.testing.assert_allclose(stats[0][label, :tree.label_depth[label]].sum(1), 1, atol=1e-6)


@pytest.mark.parametrize("arity,seed", [(2, 0), (3, 1), (4, 2), (5, 3)])
@pytest.mark.parametrize("k", [1, 3, 7])
def test_branch_and_bound_equals_exhaustive_top_k(rng, arity, seed, k):
    tree = random_tree(23, arity, seed) if seed % 2 else huffman_tree(np.arange(1, 24), arity)
    model = random_model(rng, tree, scale=1.5)
    rows = random_rows(rng, 40, 12)
    labels, scores = kernels.predict_top_k(model, rows, k, 1)
    full = kernels.all_log_proba(model, rows, tree.node_order, 23, 1)
    np.testing.assert_allclose(np.exp(full).sum(1), 1, atol=1e-5)
    expected = np.argsort(-full, axis=1, kind="stable")[:, :k]
    np.testing.assert_array_equal(labels, expected)
    np.testing.assert_allclose(scores, np.take_along_axis(full, expected, 1), atol=1e-9)
    threaded, _ = kernels.predict_top_k(model, rows, k, 2)
    np.testing.assert_array_equal(threaded, labels)


def test_log_likelihood_matches_full_distribution(rng):
    tree = huffman_tree(np.arange(1, 12), 3)
    model = random_model(rng, tree)
    rows = random_rows(rng, 30, 12)
    targets = rng.integers(0, 11, 30).astype(np.int32)
    full = kernels.all_log_proba(model, rows, tree.node_order, 11, 1)
    got = kernels.log_likelihood(model, rows, targets, 2)
    np.testing.assert_allclose(got, full[np.arange(30), targets], atol=1e-9)


def synthetic_text(rng, n, n_classes=12, vocab=80):
    signature = rng.integers(0, vocab, (n_classes, 4))
    y = rng.integers(0, n_classes, n)
    docs = [" ".join(f"w{w}" for w in np.concatenate([rng.choice(signature[c], 2),
                                                        rng.integers(0, vocab, 2)]))
            for c in y]
    return docs, y


@pytest.mark.parametrize("tree", ["learned", "huffman", "random", "flat"])
def test_estimator_learns_synthetic_text(rng, tree):
    docs, y = synthetic_text(rng, 1200)
    model = LearnedTree(arity=3, dim=16, epochs=5, learning_rate=0.5, optimizer="sgd",
                        tree=tree, n_tree_updates=5, random_state=0)
    model.fit(docs[:900], y[:900])
    accuracy = np.mean(model.predict(docs[900:])[:, 0] == y[900:])
    assert accuracy > 0.6          # chance is 1/12; the noise caps it near 0.8
    assert model.train_loss_[-1] < model.train_loss_[0]
    assert model.score(docs[900:], y[900:]) > np.log(1 / 12)
    # every label keeps exactly one leaf after the re-assignments
    codes = model.tree_.children[model.tree_.children <= -2]
    assert sorted(-codes - 2) == list(range(12))


def test_adagrad_estimator_learns_and_is_saved(tmp_path, rng):
    docs, y = synthetic_text(rng, 1200)
    model = LearnedTree(arity=3, dim=16, epochs=5, n_tree_updates=5,
                        random_state=0).fit(docs[:900], y[:900])
    assert model.optimizer == "adagrad"            # the default
    assert np.mean(model.predict(docs[900:])[:, 0] == y[900:]) > 0.6
    model.save(tmp_path / "model.npz")
    again = LearnedTree.load(tmp_path / "model.npz")
    assert again.optimizer == "adagrad"
    np.testing.assert_array_equal(again.predict(docs[900:], 2), model.predict(docs[900:], 2))
    # files written before the option existed load as SGD models
    params, arrays = model._get_state()
    del params["optimizer"]
    assert LearnedTree._from_state(params, arrays).optimizer == "sgd"


def test_training_is_reproducible_with_one_thread(rng):
    docs, y = synthetic_text(rng, 300)
    params = dict(arity=3, dim=8, epochs=2, tree="learned", n_tree_updates=3, random_state=5)
    a = LearnedTree(**params).fit(docs, y)
    b = LearnedTree(**params).fit(docs, y)
    np.testing.assert_array_equal(a.embeddings_, b.embeddings_)
    np.testing.assert_array_equal(a.tree_.children, b.tree_.children)
    hogwild = LearnedTree(**dict(params, n_jobs=2)).fit(docs, y)
    assert np.all(np.isfinite(hogwild.weights_))


def test_multilabel_rows_and_extra_classes(rng):
    X = sp.csr_matrix(rng.integers(0, 2, (50, 10)).astype(np.float32))
    Y = [[i % 4, (i + 1) % 4] for i in range(50)]
    model = LearnedTree(arity=2, dim=4, epochs=1, tree="huffman", random_state=0)
    model.fit(X, Y, classes=6)
    assert model.classes_.tolist() == list(range(6))
    assert model.label_counts_[4] == 0
    labels, probabilities = model.predict_top_k(X, 6)
    assert labels.shape == (50, 6) and np.all(np.sort(labels, axis=1) == np.arange(6))
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-6)
    indices, log_proba = model._top_k_indices(model._validate_X(X), 6)
    np.testing.assert_array_equal(indices, labels)
    np.testing.assert_array_equal(np.exp(log_proba), probabilities)


def test_language_model_depth_constrained(rng):
    # A deterministic cycle over 9 words: the next word is predictable.
    ids = np.tile(np.arange(9), 60)
    X, y = context_windows(ids, 9, context=2)
    model = LearnedTree(arity=3, dim=8, epochs=5, learning_rate=0.5, tree="learned",
                        max_depth=2, objective="likelihood", n_tree_updates=4, random_state=0)
    model.fit(X, y, classes=np.arange(9))
    assert model.tree_.label_depth.max() <= 2
    assert model.perplexity(X[10:], y[10:]) < 2.0


def test_reassignment_carries_leaf_parameters_with_labels(rng):
    """A label moved by AssignLabels takes its old leaf slot's weights along:
    they score that label, not whatever the new slot held before."""
    tree = huffman_tree([1, 1, 1, 1], 2)
    model = LearnedTree(arity=2, tree="learned")
    model.tree_ = tree
    model.weights_ = rng.normal(size=(tree.n_nodes, 2, 3)).astype(np.float32)
    model.biases_ = rng.normal(size=(tree.n_nodes, 2)).astype(np.float32)
    # The root statistics send labels {0, 3} left and {1, 2} right.
    counts = np.full((4, tree.max_depth), 10.0)
    probas = np.full((4, tree.max_depth, 2), 5.0)
    probas[[0, 3], 0] = [10, 0]
    probas[[1, 2], 0] = [0, 10]
    old_nodes, old_slots = tree.leaves()
    old_weights = model.weights_[old_nodes, old_slots]
    old_biases = model.biases_[old_nodes, old_slots]
    old_root = model.weights_[0].copy()
    model._update_tree((probas, counts))
    new_nodes, new_slots = model.tree_.leaves()
    assert set(model.tree_.labels_under(int(model.tree_.children[0, 0]))) == {0, 3}
    np.testing.assert_array_equal(model.weights_[new_nodes, new_slots], old_weights)
    np.testing.assert_array_equal(model.biases_[new_nodes, new_slots], old_biases)
    # The root keeps its node parameters: its slots stay internal.
    np.testing.assert_array_equal(model.weights_[0], old_root)


def test_save_load_round_trip(tmp_path, rng):
    docs, y = synthetic_text(rng, 200)
    labels = np.array([f"intent_{c}" for c in y])
    model = LearnedTree(arity=3, dim=6, epochs=1, ngrams=2, buckets=31, random_state=1,
                        n_tree_updates=2).fit(docs, labels)
    path = tmp_path / "model.npz"
    model.save(path)
    again = LearnedTree.load(path)
    np.testing.assert_array_equal(again.predict(docs, 3), model.predict(docs, 3))
    np.testing.assert_allclose(again.predict_log_proba(docs[:5]),
                               model.predict_log_proba(docs[:5]))
    assert again.classes_.tolist() == model.classes_.tolist()
    assert again.describe_tree() == model.describe_tree()


@pytest.mark.parametrize("name,corrupt", [
    ("children", lambda a: np.full_like(a, 0)),
    ("children", lambda a: a - 1000),
    ("weights", lambda a: a[:, :, :-1].copy()),
    ("embeddings", lambda a: np.where(a == a.flat[0], np.nan, a).astype(np.float32)),
    ("biases", lambda a: a.astype(np.float64)),
])
def test_corrupt_model_files_are_rejected(tmp_path, rng, name, corrupt):
    X = sp.csr_matrix(rng.integers(0, 2, (40, 8)).astype(np.float32))
    model = LearnedTree(arity=3, dim=4, epochs=1, tree="huffman").fit(X, rng.integers(0, 5, 40))
    params, arrays = model._get_state()
    arrays[name] = corrupt(arrays[name])
    with pytest.raises(ModelFormatError):
        LearnedTree._from_state(params, arrays)


def test_bad_input_is_reported(rng):
    X = sp.csr_matrix(np.ones((4, 3), dtype=np.float32))
    with pytest.raises(DataFormatError, match="non-negative"):
        LearnedTree().fit(-X, [0, 1, 0, 1])
    with pytest.raises(DataFormatError, match="row 2 has no label"):
        LearnedTree().fit(X, [[0], [1], [], [0]])
    with pytest.raises(DataFormatError, match="expected 4 labels"):
        LearnedTree().fit(X, [0, 1])
    with pytest.raises(ValueError, match="arity"):
        LearnedTree(arity=1).fit(X, [0, 1, 0, 1])
    with pytest.raises(ValueError, match="optimizer"):
        LearnedTree(optimizer="adam").fit(X, [0, 1, 0, 1])
    with pytest.raises(ValueError, match="max_depth applies"):
        LearnedTree(tree="huffman", max_depth=2).fit(X, [0, 1, 0, 1])
    with pytest.raises(NotFittedError, match="not fitted"):
        LearnedTree().predict(X)
    model = LearnedTree(dim=2, epochs=1).fit(X, [0, 1, 0, 1])
    with pytest.raises(ValueError, match="k must be"):
        model.predict(X, k=0)
    assert model.predict(X, k=3).shape == (4, 2)  # capped at the 2 labels
    with pytest.raises(DataFormatError, match="not seen"):
        model.score(X, [0, 1, 2, 1])
    with pytest.raises(DataFormatError, match="features"):
        model.predict(sp.csr_matrix(np.ones((2, 5), dtype=np.float32)))
    with pytest.raises(DataFormatError, match="not on text"):
        model.predict(["some text"])


def test_fit_text_file_with_named_multilabels(tmp_path, rng):
    docs, y = synthetic_text(rng, 120)
    path = tmp_path / "train.txt"
    lines = [f"__label__c{c} __label__all {doc}" for doc, c in zip(docs, y)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    model = fit_text_file(path, tmp_path / "m.npz", dim=4, epochs=1, random_state=0)
    assert "all" in model.classes_.tolist() and len(model.classes_) == 13
    again = LearnedTree.load(tmp_path / "m.npz")
    np.testing.assert_array_equal(again.predict(docs[:10], 2), model.predict(docs[:10], 2))


def small_problem(rng, n_samples=200, n_labels=15):
    """Count features that determine the label, for the estimator tests below."""
    y = rng.integers(0, n_labels, n_samples)
    X = sp.csr_matrix((np.ones(n_samples, np.float32), y, np.arange(n_samples + 1)),
                      shape=(n_samples, n_labels + 5))
    return X, y


def test_a_diverging_fit_raises_naming_the_learning_rate(tmp_path, rng):
    X, y = small_problem(rng)
    model = LearnedTree(optimizer="sgd", learning_rate=10, dim=8, epochs=3, random_state=0)
    # It used to train NaN parameters to the end, and save a file load refuses.
    with pytest.raises(ValueError, match="diverged .*learning_rate=10.*optimizer='adagrad'"):
        model.fit(X, y)
    with pytest.raises(NotFittedError):
        model.save(tmp_path / "model.npz")
    assert not (tmp_path / "model.npz").exists()


@pytest.mark.parametrize(("y", "words"), [
    ([0.0, np.nan, 1.0, 2.0], "got np.float64\\(nan\\)"),  # was a class
    ([0.0, 1.5, 1.0, 2.0], "got np.float64\\(1.5\\)"),  # saved as the string '1.5'
    ([True, False, True, False], "got dtype bool"),  # saved as 'True'
    (np.array([2**63, 1, 2, 3], dtype=np.uint64), "got np.uint64\\(9223372036854775808\\)"),
])
def test_class_labels_that_a_file_would_change_are_refused(y, words):
    with pytest.raises(DataFormatError, match=f"y: class labels must be integers or strings, "
                                              f"{words}"):
        LearnedTree(dim=2, epochs=1).fit(np.eye(4), y)


def test_integral_float_and_text_classes_survive_a_round_trip(tmp_path):
    for y, expected in (([0.0, 3.0, 1.0, 3.0], np.array([0, 1, 3])),
                        (["b", "a", "b", "c"], np.array(["a", "b", "c"]))):
        model = LearnedTree(dim=2, epochs=1).fit(np.eye(4), y)
        model.save(tmp_path / "model.npz")
        loaded = LearnedTree.load(tmp_path / "model.npz")
        np.testing.assert_array_equal(loaded.classes_, expected)
        assert loaded.classes_.dtype.kind == expected.dtype.kind


def test_named_labels_repeated_in_a_row_count_once():
    model = LearnedTree(dim=2, epochs=1).fit(np.eye(3), [["a", "a"], ["b"], ["a", "b", "b"]])
    np.testing.assert_array_equal(model.classes_, ["a", "b"])


def test_a_deep_depth_bound_never_overflows_the_assignment(rng):
    X, y = small_problem(rng, n_samples=60, n_labels=6)
    # arity ** (max_depth - 1) used to overflow the int32 limit of AssignLabels.
    model = LearnedTree(tree="learned", max_depth=40, n_tree_updates=2, dim=4, epochs=2,
                        random_state=0).fit(X, y)
    assert model.predict(X).shape == (60, 1)


def test_a_depth_too_small_for_the_labels_is_refused_naming_the_parameters():
    with pytest.raises(ValueError, match="arity=2 and max_depth=1"):
        LearnedTree(tree="random", max_depth=1, dim=2).fit(np.eye(3), [0, 1, 2])


def test_no_features_is_refused_at_fit_and_at_load(tmp_path):
    # With no embedding row, the kernels took the address of an element that
    # does not exist (IndexError in the bounds-checked build).
    with pytest.raises(DataFormatError, match="X: has no features"):
        LearnedTree(dim=2).fit(np.zeros((3, 0)), [0, 1, 2])
    with pytest.raises(DataFormatError, match="no word occurs min_count times"):
        LearnedTree(dim=2, min_count=5).fit(["a b", "c d", "e f"], [0, 1, 2])
    model = LearnedTree(dim=2, epochs=1).fit(np.eye(3), [0, 1, 2])
    model.embeddings_ = model.embeddings_[:0]
    model.save(tmp_path / "model.npz")
    with pytest.raises(ModelFormatError, match="at least one"):
        LearnedTree.load(tmp_path / "model.npz")
