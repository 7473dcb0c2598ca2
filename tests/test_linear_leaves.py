"""Linear leaves: the label classifiers' solver, their training sets, and LdSM's blend."""

import json

import numpy as np
import pytest
import scipy.sparse as sp
from label_models_reference import train_label_models as reference_train
from test_persistence import rewrite_meta
from test_tree import random_features, random_flat_tree

from xmltree import LdSM
from xmltree._validation import check_features
from xmltree.datasets import make_synthetic
from xmltree.exceptions import ModelFormatError
from xmltree.ldsm import _linear_leaves, merge
from xmltree.ldsm._forest import Forest
from xmltree.ldsm._label_models import train_label_models
from xmltree.ldsm._linear_leaves import (
    LOGIT_ADJUSTMENT,
    MARGIN_SCALE,
    _draw_negatives,
    check_linear_leaves,
    neighbourhoods,
)

SOLVER = dict(C=0.5, max_epochs=15, tolerance=0.01, first_negatives=0.3, weight_threshold=0.02,
              seed=7)


def random_problem(rng, n_samples=40, n_features=12, n_labels=5, density=0.3):
    """Random non-negative features and, per label, a random subset of rows."""
    X = sp.random(n_samples, n_features, density=density, random_state=rng, dtype=np.float32,
                  format="csr")
    X = check_features(X)
    indptr, examples, targets = [0], [], []
    for label in range(n_labels):
        # Label 2 has no examples: an empty classifier with a zero bias.
        size = 0 if label == 2 else int(rng.integers(3, n_samples))
        rows = np.sort(rng.choice(n_samples, size=size, replace=False)).astype(np.int32)
        examples.append(rows)
        targets.append(np.where(rng.random(size) < 0.4, 1, -1).astype(np.int8))
        indptr.append(indptr[-1] + size)
    return (X, np.asarray(indptr, dtype=np.int64), np.concatenate(examples),
            np.concatenate(targets))


@pytest.mark.parametrize("seed, first_negatives, max_epochs, tolerance", [
    (0, 0.3, 15, 0.01), (1, 0.0, 15, 0.01), (2, 1.0, 15, 0.01),
    # The sample never converges: every example joins after 2 of the 4 passes.
    (3, 0.3, 4, 0.0)])
def test_solver_matches_the_python_reference(seed, first_negatives, max_epochs, tolerance):
    X, indptr, examples, targets = random_problem(np.random.default_rng(seed))
    solver = {**SOLVER, "first_negatives": first_negatives, "max_epochs": max_epochs,
              "tolerance": tolerance}
    weights, bias = train_label_models(X, indptr, examples, targets, **solver)
    expected_weights, expected_bias = reference_train(X, indptr, examples, targets, **solver)
    # The reference sums and rounds as the kernel does: the same bits.
    np.testing.assert_array_equal(weights.toarray(), expected_weights)
    np.testing.assert_array_equal(bias, expected_bias)
    assert weights.indptr.dtype == np.int64 and weights.indices.dtype == np.int32
    assert weights[2].nnz == 0 and bias[2] == 0
    assert np.all(np.abs(weights.data) >= SOLVER["weight_threshold"])


def test_solver_results_do_not_depend_on_threads():
    X, indptr, examples, targets = random_problem(np.random.default_rng(3), n_labels=30)
    one = train_label_models(X, indptr, examples, targets, **SOLVER, n_threads=1)
    two = train_label_models(X, indptr, examples, targets, **SOLVER, n_threads=2)
    assert (one[0] != two[0]).nnz == 0 and np.array_equal(one[1], two[1])


@pytest.mark.parametrize("n_threads", [1, 2])
def test_solver_counts_each_label_it_finishes(n_threads):
    X, indptr, examples, targets = random_problem(np.random.default_rng(3), n_labels=30)
    done = np.zeros(n_threads, dtype=np.int64)
    counted = train_label_models(X, indptr, examples, targets, **SOLVER, n_threads=n_threads,
                                 progress=done)
    plain = train_label_models(X, indptr, examples, targets, **SOLVER, n_threads=n_threads)
    assert done.sum() == 30
    assert (counted[0] != plain[0]).nnz == 0 and np.array_equal(counted[1], plain[1])


@pytest.mark.parametrize("progress", [np.zeros(1, dtype=np.int64), np.zeros(2, dtype=np.int32),
                                      np.zeros((2, 1), dtype=np.int64), [0, 0]])
def test_solver_refuses_counters_it_cannot_write_one_per_thread(progress):
    X, indptr, examples, targets = random_problem(np.random.default_rng(3))
    with pytest.raises(ValueError, match="progress must be"):
        train_label_models(X, indptr, examples, targets, **SOLVER, n_threads=2,
                           progress=progress)


def test_a_sample_of_the_negatives_first_solves_the_same_problem():
    X, indptr, examples, targets = random_problem(np.random.default_rng(8), n_samples=200,
                                                  n_features=30, n_labels=6)
    tight = {**SOLVER, "max_epochs": 1000, "tolerance": 1e-6, "weight_threshold": 0.0}
    every = train_label_models(X, indptr, examples, targets, **{**tight, "first_negatives": 1.0})
    sample = train_label_models(X, indptr, examples, targets, **{**tight, "first_negatives": 0.1})
    np.testing.assert_allclose(sample[0].toarray(), every[0].toarray(), atol=1e-4)
    np.testing.assert_allclose(sample[1], every[1], atol=1e-4)


@pytest.mark.parametrize("first_negatives", [-0.1, 1.5, np.nan])
def test_solver_refuses_a_share_of_negatives_outside_0_1(first_negatives):
    X, indptr, examples, targets = random_problem(np.random.default_rng(0))
    with pytest.raises(ValueError, match="first_negatives"):
        train_label_models(X, indptr, examples, targets,
                           **{**SOLVER, "first_negatives": first_negatives})


def test_solver_separates_a_separable_label():
    rng = np.random.default_rng(4)
    X, indptr, examples, targets = random_problem(rng, n_labels=1, density=0.5)
    targets = np.where(X[examples].toarray()[:, 0] > 0, 1, -1).astype(np.int8)
    weights, bias = train_label_models(X, indptr, examples, targets, C=10.0, max_epochs=200,
                                       tolerance=1e-4, first_negatives=0.1,
                                       weight_threshold=0.0, seed=0)
    margins = X[examples] @ weights[0].toarray().ravel() + bias[0]
    assert np.all(np.sign(margins) == targets)


def test_neighbourhoods_hold_the_candidates_and_every_positive():
    candidates = np.array([[1, 3, -1], [0, 1, 2], [3, -1, -1]], dtype=np.int32)
    Y = sp.csr_matrix(np.array([[0, 1, 0, 0, 1], [0, 0, 0, 0, 0], [1, 0, 0, 1, 0]],
                               dtype=np.float32))
    indptr, examples, targets = neighbourhoods(candidates, Y)
    by_label = {label: dict(zip(examples[indptr[label]:indptr[label + 1]].tolist(),
                                targets[indptr[label]:indptr[label + 1]].tolist()))
                for label in range(5)}
    assert by_label == {0: {1: -1, 2: 1}, 1: {0: 1, 1: -1}, 2: {1: -1},
                        3: {0: -1, 2: 1}, 4: {0: 1}}
    assert indptr.dtype == np.int64 and examples.dtype == np.int32 and targets.dtype == np.int8


def reference_neighbourhoods(candidates, Y, draw_indptr, draw_labels):
    """Slow reference: {label: {example: target}} of candidates, labels and draws."""
    by_label = {label: {} for label in range(Y.shape[1])}
    for i in range(Y.shape[0]):
        own = set(Y.indices[Y.indptr[i]:Y.indptr[i + 1]].tolist())
        joined = own | {label for label in candidates[i].tolist() if label >= 0}
        joined |= set(draw_labels[draw_indptr[i]:draw_indptr[i + 1]].tolist())
        for label in joined:
            by_label[label][i] = 1 if label in own else -1
    return by_label


@pytest.mark.parametrize("seed", range(4))
def test_neighbourhoods_match_a_slow_reference(seed):
    rng = np.random.default_rng(seed)
    n_samples, n_labels = 120, 15
    Y = sp.random(n_samples, n_labels, density=0.15, format="csr", dtype=np.float32,
                  random_state=seed)
    candidates = rng.integers(-1, n_labels, (n_samples, 4)).astype(np.int32)
    indptr, examples, targets = neighbourhoods(candidates, Y, random_negatives=2, seed=seed)
    expected = reference_neighbourhoods(candidates, Y, *_draw_negatives(Y, 2, seed))
    for label in range(n_labels):
        span = slice(indptr[label], indptr[label + 1])
        assert np.all(np.diff(examples[span]) > 0)
        assert dict(zip(examples[span].tolist(), targets[span].tolist())) == expected[label]


def test_neighbourhoods_reject_candidates_out_of_range():
    Y = sp.csr_matrix(np.eye(3, dtype=np.float32))
    with pytest.raises(ValueError, match="label ids below n_labels"):
        neighbourhoods(np.array([[0], [3], [1]], dtype=np.int32), Y)
    with pytest.raises(ValueError, match="per example"):
        neighbourhoods(np.zeros((2, 1), dtype=np.int32), Y)


def test_random_negatives_join_each_neighbourhood_in_proportion_to_its_positives():
    rng = np.random.default_rng(0)
    Y = sp.csr_matrix((rng.random((400, 6)) < [0.3, 0.05, 0.01, 0.0, 0.5, 0.02]).astype(
        np.float32))
    candidates = np.full((400, 1), -1, dtype=np.int32)  # no tree neighbourhood at all
    plain = neighbourhoods(candidates, Y)
    indptr, examples, targets = neighbourhoods(candidates, Y, random_negatives=4, seed=3)
    again = neighbourhoods(candidates, Y, random_negatives=4, seed=3)
    assert all(np.array_equal(a, b) for a, b in zip((indptr, examples, targets), again))
    positives = np.diff(Y.tocsc().indptr)
    for label in range(6):
        span = slice(indptr[label], indptr[label + 1])
        rows, signs = examples[span], targets[span]
        assert np.all(np.diff(rows) > 0)  # sorted, each row once
        carried = np.asarray(Y[rows, label].todense()).ravel() > 0
        assert np.array_equal(signs == 1, carried)  # a drawn positive stays a positive
        assert carried.sum() == positives[label]
        # 4 draws per positive, fewer rows only where draws repeat or hit positives.
        assert (~carried).sum() <= 4 * positives[label]
        if 0 < positives[label] <= 20:
            assert (~carried).sum() >= 2 * positives[label]
    assert np.array_equal(plain[2], np.ones_like(plain[2]))  # only positives without draws


# ----------------------------------------------------------------------
# LdSM with linear leaves
# ----------------------------------------------------------------------

LINEAR = dict(n_trees=3, max_nodes=15, epochs=3, n_candidates=6, histogram_weight=0.3,
              random_state=0)


@pytest.fixture(scope="module")
def problem():
    X, Y = make_synthetic(400, 60, 20, avg_labels=2.0, random_state=5)
    # Raw counts, as users bring text: "auto" scaling picks tf-idf.
    X.data = np.ceil(X.data * 10).astype(np.float32)
    return X[:300], Y[:300], X[300:], Y[300:]


@pytest.fixture(scope="module")
def fitted(problem):
    X, Y, _, _ = problem
    return LdSM(**LINEAR).fit(X, Y)


def blend_row(hist, margins, n_candidates, histogram_weight):
    """One row's labels of non-zero histogram score, best first (ties to the
    smaller id), and the blended scores of the first `n_candidates` of them."""
    seen = np.flatnonzero(hist)
    ranked = seen[np.lexsort((seen, -hist[seen].astype(np.float64)))]
    candidates = ranked[:n_candidates]
    blended = (1 / (1 + np.exp(-MARGIN_SCALE * margins[candidates]))) ** (
        1 - histogram_weight) * hist[candidates] ** histogram_weight
    return ranked, blended


def reference_blend(model, X, k):
    """Top-k of the blend computed with NumPy from the histogram scores of the
    same trees (an otherwise identical model with histogram leaves), and
    whether each row's candidates are unambiguous: no histogram tie (to
    float32 precision) across the cut at ``n_candidates``."""
    histograms = LdSM(**{**LINEAR, "leaf_model": "histogram"}).fit(*model._training_data)
    hist = histograms.predict_scores(X).toarray()
    X_scaled = model.scaler_.transform(check_features(X, n_features=model.n_features_in_))
    margins = (X_scaled @ model.label_weights_.T).toarray() + model.label_bias_
    labels = np.full((X.shape[0], k), -1)
    scores = np.zeros((X.shape[0], k))
    clear_cut = np.ones(X.shape[0], dtype=bool)
    for i in range(X.shape[0]):
        ranked, blended = blend_row(hist[i], margins[i], model.n_candidates,
                                    model.histogram_weight)
        ranked_scores = hist[i, ranked]
        if ranked.size > model.n_candidates:
            clear_cut[i] = (ranked_scores[model.n_candidates - 1]
                            - ranked_scores[model.n_candidates] > 1e-6)
        candidates = ranked[:model.n_candidates]
        best = np.lexsort((candidates, -blended.astype(np.float32)))[:k]
        labels[i, :best.size], scores[i, :best.size] = candidates[best], blended[best]
    return labels, scores, clear_cut


def test_linear_leaves_predict_the_reference_blend(problem, fitted):
    X, Y, X_test, _ = problem
    fitted._training_data = (X, Y)
    labels, scores = fitted.predict(X_test, k=5)
    expected_labels, expected_scores, clear_cut = reference_blend(fitted, X_test, 5)
    assert clear_cut.mean() > 0.8
    labels, scores = labels[clear_cut], scores[clear_cut]
    expected_labels, expected_scores = expected_labels[clear_cut], expected_scores[clear_cut]
    np.testing.assert_allclose(scores, expected_scores, rtol=1e-5)
    # Labels agree except where two scores tie to float32 precision.
    distinct = np.abs(np.diff(scores, axis=1)) > 1e-6
    agree = labels == expected_labels
    assert agree[:, 0].mean() > 0.99 and np.all(agree[:, :-1] | ~distinct)


def forest_blend(forest, X, weights, bias, n_candidates, histogram_weight):
    """Every row's blended scores, computed with NumPy from `forest`'s histograms (dense)."""
    hist = forest.predict_scores(X).toarray().astype(np.float64)
    margins = (X @ weights.T).toarray() + bias
    blended = np.zeros_like(hist)
    for i in range(X.shape[0]):
        ranked, row = blend_row(hist[i], margins[i], n_candidates, histogram_weight)
        blended[i, ranked[:n_candidates]] = row
    return blended


@pytest.mark.parametrize("by_feature", [True, False])
def test_margins_read_by_feature_or_by_label_give_the_reference_blend(by_feature):
    # The forest reads the candidates' margins through whichever layout of
    # the weights holds fewer of them for the row: few labels with many
    # weights (by feature), or many features and short classifiers (by label).
    rng = np.random.default_rng(3)
    n_features, n_labels = 40, 30
    trees = [random_flat_tree(rng, arity=2, n_features=n_features, n_labels=n_labels,
                              max_nodes=30, max_leaf_labels=n_labels) for _ in range(3)]
    forest = Forest(trees, arity=2, n_features=n_features, n_labels=n_labels,
                    routing="margin")
    density, n_candidates = (0.8, 30) if by_feature else (0.02, 2)
    weights = sp.random(n_labels, n_features, density=density, format="csr", dtype=np.float32,
                        random_state=np.random.RandomState(4))
    weights.data -= 0.5
    weights.indptr = weights.indptr.astype(np.int64)
    bias = rng.normal(size=n_labels).astype(np.float32)
    X = random_features(rng, 200, n_features, density=0.2 if by_feature else 0.9)
    expected = forest_blend(forest, X, weights, bias, n_candidates, 0.3)
    forest.use_label_models(weights, bias, n_candidates=n_candidates, histogram_weight=0.3,
                            margin_scale=MARGIN_SCALE)
    # The layout each row reads: its candidates' weights against its features'.
    candidates = expected > 0
    in_candidates = candidates.astype(np.int64) @ np.diff(weights.indptr)
    in_features = (X != 0).astype(np.int64) @ np.bincount(weights.indices,
                                                          minlength=n_features)
    assert np.mean((in_features < in_candidates) == by_feature) > 0.9
    for n_threads in (1, 2):
        np.testing.assert_allclose(forest.predict_scores(X, n_threads).toarray(), expected,
                                   rtol=1e-5, atol=0)


def test_linear_scores_are_probability_like_and_limited_to_the_candidates(problem, fitted):
    _, _, X_test, _ = problem
    scores = fitted.predict_scores(X_test)
    assert np.all(np.diff(scores.indptr) <= fitted.n_candidates)
    assert scores.data.min() >= 0 and scores.data.max() <= 1


def test_linear_leaves_beat_histograms_on_held_out_rows(problem):
    X, Y, X_test, Y_test = problem
    linear = LdSM(**LINEAR).fit(X, Y)
    histogram = LdSM(**{**LINEAR, "leaf_model": "histogram"}).fit(X, Y)

    def p_at_1(model):
        top = model.predict(X_test, k=1)[0][:, 0]
        return np.mean([Y_test[i, label] for i, label in enumerate(top)])
    assert p_at_1(linear) > p_at_1(histogram)


def test_linear_leaves_do_not_depend_on_threads(problem):
    X, Y, X_test, _ = problem
    one = LdSM(**LINEAR, n_jobs=1).fit(X, Y)
    two = LdSM(**LINEAR, n_jobs=2).fit(X, Y)
    assert (one.label_weights_ != two.label_weights_).nnz == 0
    for a, b in zip(one.predict(X_test), two.predict(X_test)):
        assert np.array_equal(a, b)


def test_examples_train_against_every_candidate_that_prediction_rescores(monkeypatch):
    """A training row joins the neighbourhoods of all its n_candidates best labels in
    the forest, the labels prediction re-scores, however many (here over 500), in
    whatever order."""
    X, Y = make_synthetic(300, 30, 700, avg_labels=4.0, random_state=2)
    listed = []
    real = _linear_leaves.neighbourhoods

    def spy(candidates, *args, **kwargs):
        listed.append(candidates.copy())
        return real(candidates, *args, **kwargs)
    monkeypatch.setattr(_linear_leaves, "neighbourhoods", spy)
    settings = dict(n_trees=1, max_nodes=3, epochs=1, n_candidates=600, max_leaf_labels=None,
                    random_state=0)
    LdSM(**settings).fit(X, Y)
    histogram = LdSM(**settings, leaf_model="histogram").fit(X, Y)
    assert listed[0].shape == (X.shape[0], 600)
    np.testing.assert_array_equal(np.sort(listed[0], axis=1),
                                  np.sort(histogram.predict(X, k=600)[0], axis=1))


def test_biases_are_the_solvers_raised_by_the_labels_log_prior(problem, monkeypatch):
    """Logit adjustment: label l's bias gains -LOGIT_ADJUSTMENT * log(prior_l) /
    MARGIN_SCALE, prior_l = (rows carrying l + 1) / (rows + 1); the weights are the solver's."""
    X, Y, _, _ = problem
    solved = []

    def spy(*args, **kwargs):
        solved.append(train_label_models(*args, **kwargs))
        return solved[-1]
    monkeypatch.setattr(_linear_leaves, "train_label_models", spy)
    model = LdSM(**LINEAR).fit(X, Y)
    weights, bias = solved[0]
    prior = (np.asarray(Y.sum(axis=0)).ravel() + 1) / (Y.shape[0] + 1)
    expected = bias - LOGIT_ADJUSTMENT / MARGIN_SCALE * np.log(prior)
    assert LOGIT_ADJUSTMENT > 0 and np.ptp(prior) > 0
    np.testing.assert_allclose(model.label_bias_, expected, rtol=1e-6)
    assert (model.label_weights_ != weights).nnz == 0


def test_shown_progress_trains_the_labels_in_one_call(problem, monkeypatch, capsys):
    """Blocks of labels for the bar to move made each wait for its slowest thread."""
    X, Y, _, _ = problem
    calls = []

    def spy(*args, **kwargs):
        calls.append(kwargs.get("progress"))
        return train_label_models(*args, **kwargs)
    monkeypatch.setattr(_linear_leaves, "train_label_models", spy)
    LdSM(**LINEAR, verbose=True).fit(X, Y)
    assert len(calls) == 1 and calls[0].sum() == Y.shape[1]
    assert "LdSM label classifiers: 100%" in capsys.readouterr().err


#: Settings under which C="auto" runs its check: the wider descent.
WIDE = {**LINEAR, "descent_threshold": 0.05}


def spy_on_choose_C(monkeypatch, check_gains):
    """Make the check's nDCG@5 of each C tried ``baseline + check_gains[step]``
    per row (noise of a known spread on top), and record every solve."""
    monkeypatch.setattr(_linear_leaves, "C_CHECK_MIN_ROWS", 10)
    solves, tried = [], []
    real_solve = _linear_leaves._solve

    def solve(X, indptr, examples, targets, solver, verbose, **title):
        solves.append((X.shape[0], indptr.size - 1, solver))
        return real_solve(X, indptr, examples, targets, solver, verbose, **title)

    def ndcg(Y, ranked, k):
        rows = np.random.default_rng(len(tried)).normal(0.5, 0.1, Y.shape[0])
        tried.append(Y)
        return rows + check_gains[len(tried) - 1]
    monkeypatch.setattr(_linear_leaves, "_solve", solve)
    monkeypatch.setattr(_linear_leaves, "ndcg_by_row", ndcg)
    return solves, tried


@pytest.mark.parametrize("check_gains, chosen", [
    ((0.0, 0.2, 0.4, 0.6, 0.8), 0.35 * 64),  # each step clearly better: up to MAX_C_STEPS
    ((0.0, 0.2, 0.2), 0.35 * 4),   # the second step gains nothing
    ((0.0, -0.1), 0.35),           # a larger C ranks worse: the base stays
    ((0.0, 0.01), 0.35),           # a gain within noise is not taken
])
def test_auto_C_steps_up_while_the_rows_set_aside_rank_clearly_better(
        problem, monkeypatch, check_gains, chosen):
    X, Y, _, _ = problem
    solves, tried = spy_on_choose_C(monkeypatch, check_gains)
    model = LdSM(**{**WIDE, "C": "auto"}).fit(X, Y)
    assert model.resolved_params_["C"] == pytest.approx(chosen)
    n_check = int(_linear_leaves.C_CHECK_SHARE * X.shape[0])
    *checks, final = solves
    assert len(checks) == len(tried) == min(len(check_gains), _linear_leaves.MAX_C_STEPS + 1)
    # The check's classifiers never see the rows that judge them, and converge
    # like the model's own.
    for step, (n_rows, n_labels, solver) in enumerate(checks):
        assert n_rows == X.shape[0] - n_check and tried[step].shape[0] == n_check
        assert n_labels == Y.shape[1]  # fewer labels than C_CHECK_MIN_LABELS: all judge
        assert solver["C"] == pytest.approx(0.35 * 4 ** step)
        assert solver["max_epochs"] == _linear_leaves.MAX_EPOCHS
    # The model's classifiers: all the rows, the C chosen, a full solve.
    assert final[0] == X.shape[0] and final[2]["C"] == pytest.approx(chosen)
    assert final[2]["max_epochs"] == _linear_leaves.MAX_EPOCHS


def test_auto_C_judges_a_sample_of_the_labels_on_the_rows_that_carry_one(problem,
                                                                          monkeypatch):
    X, Y, _, _ = problem
    monkeypatch.setattr(_linear_leaves, "C_CHECK_MIN_LABELS", 3)
    monkeypatch.setattr(_linear_leaves, "C_CHECK_LABEL_SHARE", 0.25)
    solves, tried = spy_on_choose_C(monkeypatch, (0.0, -0.1))
    LdSM(**{**WIDE, "C": "auto"}).fit(X, Y)
    n_sampled = round(0.25 * Y.shape[1])
    fit_rows, n_labels, _ = solves[0]
    assert n_labels == n_sampled and solves[-1][1] == Y.shape[1]
    # Judged: set-aside rows carrying a sampled label, by those labels alone.
    judged = tried[0]
    n_check = X.shape[0] - fit_rows
    assert judged.shape[1] == n_sampled and 0 < judged.shape[0] <= n_check
    assert np.all(np.diff(judged.indptr) > 0)


@pytest.mark.parametrize("n_labels, n_sampled", [
    (60, 60),              # fewer than C_CHECK_MIN_LABELS: all
    (600, 100),            # a tenth is fewer than the minimum
    (5_000, 500),          # a tenth
    (100_000, 10_000),     # a tenth
    (1_000_000, 25_000),   # a tenth is more than C_CHECK_MAX_LABELS
])
def test_auto_C_samples_a_tenth_of_the_labels_within_bounds(n_labels, n_sampled):
    sampled = _linear_leaves._sample_labels(n_labels, np.random.default_rng(0))
    assert sampled.size == n_sampled and np.all(np.diff(sampled) > 0)
    assert sampled[0] >= 0 and sampled[-1] < n_labels


def test_auto_C_is_the_base_without_a_check_where_the_trees_descend_as_trained(
        problem, monkeypatch):
    X, Y, X_test, _ = problem
    solves, tried = spy_on_choose_C(monkeypatch, (0.0, 0.4))
    default = LdSM(**LINEAR).fit(X, Y)
    assert default.resolved_params_["C"] == _linear_leaves.BASE_C == 0.35
    assert tried == [] and [solver["C"] for _, _, solver in solves] == [0.35]
    base = LdSM(**{**LINEAR, "C": 0.35}).fit(X, Y)
    for a, b in zip(default.predict(X_test), base.predict(X_test)):
        assert np.array_equal(a, b)


def test_auto_C_that_keeps_the_base_fits_the_base_model_bit_for_bit(problem, monkeypatch):
    X, Y, X_test, _ = problem
    spy_on_choose_C(monkeypatch, (0.0, -0.1))
    auto = LdSM(**{**WIDE, "C": "auto"}).fit(X, Y)
    base = LdSM(**{**WIDE, "C": _linear_leaves.BASE_C}).fit(X, Y)
    assert (auto.label_weights_ != base.label_weights_).nnz == 0
    assert np.array_equal(auto.label_bias_, base.label_bias_)
    for a, b in zip(auto.predict(X_test), base.predict(X_test)):
        assert np.array_equal(a, b)


def test_auto_C_keeps_the_base_without_enough_rows_to_judge(problem, monkeypatch):
    X, Y, _, _ = problem
    assert int(_linear_leaves.C_CHECK_SHARE * X.shape[0]) < _linear_leaves.C_CHECK_MIN_ROWS
    solved_with = []
    real_solve = _linear_leaves._solve

    def solve(X, indptr, examples, targets, solver, verbose, **title):
        solved_with.append(solver["C"])
        return real_solve(X, indptr, examples, targets, solver, verbose, **title)
    monkeypatch.setattr(_linear_leaves, "_solve", solve)
    model = LdSM(**{**WIDE, "C": "auto"}).fit(X, Y)
    assert model.resolved_params_["C"] == _linear_leaves.BASE_C
    assert solved_with == [_linear_leaves.BASE_C]


def test_auto_C_fits_alike_on_any_threads_and_survives_save_and_load(problem, monkeypatch,
                                                                     tmp_path):
    X, Y, X_test, _ = problem
    monkeypatch.setattr(_linear_leaves, "C_CHECK_MIN_ROWS", 10)
    one = LdSM(**{**WIDE, "C": "auto"}, n_jobs=1).fit(X, Y)
    two = LdSM(**{**WIDE, "C": "auto"}, n_jobs=2).fit(X, Y)
    assert isinstance(one.resolved_params_["C"], float)
    assert (one.label_weights_ != two.label_weights_).nnz == 0
    one.save(tmp_path / "model.npz")
    loaded = LdSM.load(tmp_path / "model.npz")
    assert loaded.resolved_params_["C"] == one.resolved_params_["C"]
    for a, b in zip(loaded.predict(X_test), one.predict(X_test)):
        assert np.array_equal(a, b)


def test_auto_C_shows_each_check_while_fitting(problem, monkeypatch, capsys):
    X, Y, _, _ = problem
    monkeypatch.setattr(_linear_leaves, "C_CHECK_MIN_ROWS", 10)
    LdSM(**{**WIDE, "C": "auto"}, verbose=True).fit(X, Y)
    progress = capsys.readouterr().err
    assert "checking C=0.35" in progress and "checking C=1.4" in progress


def slow_rank_by_margin(X, candidates, weights, bias, depth):
    """rank_by_margin, one row and one candidate at a time."""
    dense_X, dense_W = X.toarray().astype(np.float64), weights.toarray().astype(np.float64)
    ranked = np.full((X.shape[0], depth), -1)
    for row in range(X.shape[0]):
        labels = [label for label in candidates[row] if label >= 0]
        scores = [dense_X[row] @ dense_W[label] + bias[label] for label in labels]
        order = sorted(range(len(labels)), key=lambda i: -scores[i])[:depth]
        ranked[row, :len(order)] = [labels[i] for i in order]
    return ranked


def test_rank_by_margin_matches_a_slow_reference(monkeypatch):
    rng = np.random.default_rng(3)
    X = check_features(sp.random(30, 8, density=0.5, random_state=rng, dtype=np.float32,
                                 format="csr"))
    weights = sp.random(12, 8, density=0.6, random_state=rng, dtype=np.float32, format="csr")
    bias = rng.normal(size=12).astype(np.float32)
    candidates = np.full((30, 6), -1, dtype=np.int32)
    for row in range(30):
        # Rows with 0 to 6 candidates: fewer than the depth pad with -1.
        size = row % 7
        candidates[row, :size] = rng.choice(12, size, replace=False)
    # Blocks of a few rows, as the large problems get.
    monkeypatch.setattr(_linear_leaves, "RANKING_BLOCK_ENTRIES", 40)
    ranked = _linear_leaves.rank_by_margin(X, candidates, weights, bias, 4)
    np.testing.assert_array_equal(ranked, slow_rank_by_margin(X, candidates, weights, bias, 4))


def test_a_gain_counts_when_it_clears_two_standard_errors():
    rng = np.random.default_rng(0)
    baseline = rng.random(400)
    noise = rng.normal(0, 0.1, 400)
    error = noise.std(ddof=1) / 20
    assert _linear_leaves._clearly_better(baseline + noise - noise.mean() + 2.5 * error, baseline)
    assert not _linear_leaves._clearly_better(baseline + noise - noise.mean() + 1.5 * error,
                                              baseline)


def test_linear_leaves_and_scaling_survive_save_and_load(problem, fitted, tmp_path):
    _, _, X_test, _ = problem
    fitted.save(tmp_path / "model.npz")
    loaded = LdSM.load(tmp_path / "model.npz")
    assert loaded.scaler_.kind_ == "tfidf" and loaded.label_weights_ is not None
    for a, b in zip(fitted.predict(X_test), loaded.predict(X_test)):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("tamper", ["missing", "bad_index", "nan", "bad_bias"])
def test_tampered_label_classifiers_are_refused(fitted, tmp_path, tamper):
    path = tmp_path / "model.npz"
    fitted.save(path)
    with np.load(path) as archive:
        arrays = {name: archive[name] for name in archive.files}
    if tamper == "missing":
        del arrays["labels/values"]
    elif tamper == "bad_index":
        arrays["labels/indices"] = arrays["labels/indices"].copy()
        arrays["labels/indices"][0] = fitted.n_features_in_
    elif tamper == "nan":
        arrays["labels/values"] = arrays["labels/values"].copy()
        arrays["labels/values"][0] = np.nan
    else:
        arrays["labels/bias"] = arrays["labels/bias"][:-1]
    np.savez(path, **arrays)
    with pytest.raises(ModelFormatError):
        LdSM.load(path)


def test_check_linear_leaves_accepts_what_fit_made(fitted):
    arrays = {"labels/indptr": fitted.label_weights_.indptr,
              "labels/indices": fitted.label_weights_.indices,
              "labels/values": fitted.label_weights_.data, "labels/bias": fitted.label_bias_}
    weights, bias = check_linear_leaves(arrays, fitted.n_features_in_, fitted.n_labels_)
    assert (weights != fitted.label_weights_).nnz == 0 and bias is fitted.label_bias_


def test_files_from_before_linear_leaves_load_as_histogram_models(problem, tmp_path):
    X, Y, X_test, _ = problem
    old = LdSM(**{**LINEAR, "leaf_model": "histogram", "feature_scaling": None}).fit(X, Y)
    path = tmp_path / "old.npz"
    old.save(path)

    with np.load(path) as archive:
        params = json.loads(archive["__meta__"].tobytes())["params"]
    for name in ("leaf_model", "C", "n_candidates", "histogram_weight", "feature_scaling"):
        del params["hyper_parameters"][name]
    del params["scaling"]
    rewrite_meta(path, format_version=2, params=params)
    loaded = LdSM.load(path)
    assert loaded.leaf_model == "histogram" and loaded.feature_scaling is None
    for a, b in zip(old.predict(X_test), loaded.predict(X_test)):
        assert np.array_equal(a, b)


def test_merge_refuses_linear_leaves(fitted):
    with pytest.raises(ValueError, match="leaf_model='linear'"):
        merge([fitted, fitted])


@pytest.mark.parametrize("name, value", [
    ("leaf_model", "forest"), ("C", 0.0), ("C", float("inf")), ("C", "best"), ("n_candidates", 0),
    ("n_candidates", 2.5), ("n_candidates", 2**31), ("histogram_weight", -0.1),
    ("histogram_weight", 1.5), ("histogram_weight", "wide"), ("histogram_weight", None),
    ("feature_scaling", "idf"),
])
def test_bad_linear_leaf_parameters_are_named(name, value):
    with pytest.raises(ValueError, match=name):
        LdSM(**{name: value}).fit(np.ones((3, 2)), [[0], [1], [0]])
