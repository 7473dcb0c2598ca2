"""Tests of xmltree.rerank._tail_scorers (and its kernel, xmltree.rerank._rerank.tail_log_scores).

Every tail scorer is compared with a slow dense NumPy reference on small
seeded inputs.
"""

import math

import numpy as np
import pytest
import scipy.sparse as sp

from xmltree._validation import check_features
from xmltree.exceptions import NotFittedError
from xmltree.rerank import Reranker
from xmltree.rerank._tail_scorers import (
    LogisticTailScorer,
    RidgeTailScorer,
    TailScorer,
)

# ----------------------------------------------------------------------------- references


def reference_weights(X, feature_weighting="idf"):
    """Smoothed IDF of each feature over the rows of X, or ones."""
    X = np.asarray(X, dtype=np.float64)
    if feature_weighting == "none":
        return np.ones(X.shape[1])
    n_rows = X.shape[0]
    return np.array([1 + math.log((1 + n_rows) / (1 + np.count_nonzero(c))) for c in X.T])


def unit_rows(A):
    norms = np.linalg.norm(A, axis=1, keepdims=True)
    return np.divide(A, norms, out=np.zeros_like(A), where=norms > 0)


def dense_centroids(X, Y, feature_weighting="idf", unit_centroids=True):
    """Mean of the weighted, unit-normalised rows carrying each label (zero if none)."""
    X = np.asarray(X, dtype=np.float64) * reference_weights(X, feature_weighting)
    Y = np.asarray(Y, dtype=np.float64)
    counts = Y.sum(axis=0)
    sums = Y.T @ unit_rows(X)
    means = np.divide(sums, counts[:, None], out=np.zeros_like(sums), where=counts[:, None] > 0)
    return unit_rows(means) if unit_centroids else means


def reference_tail_scores(X, centroids, labels, gamma, weights=None):
    """t_l(x) = 1 / (1 + exp(gamma ||x_hat - mu_l||^2)) pair by pair; 0 in empty slots.

    `weights` (default: the IDF of X itself) scale the features before x is normalised.
    """
    X = np.asarray(X, dtype=np.float64)
    X = X * (reference_weights(X) if weights is None else weights)
    out = np.zeros(labels.shape)
    for i in range(labels.shape[0]):
        norm = np.linalg.norm(X[i])
        x_unit = X[i] / norm if norm > 0 else X[i]
        for j, label in enumerate(labels[i]):
            if label >= 0:
                distance = np.sum((x_unit - centroids[label]) ** 2)
                out[i, j] = 1.0 / (1.0 + math.exp(gamma * distance))
    return out


# ----------------------------------------------------------------------------- data


def random_problem(rng, n_samples=40, n_features=12, n_labels=9, density=0.3):
    """Random non-negative features with one empty row, labels with one never used."""
    X = rng.random((n_samples, n_features)) * (rng.random((n_samples, n_features)) < density)
    X[0] = 0.0
    Y = (rng.random((n_samples, n_labels)) < 0.25).astype(np.float32)
    Y[:, n_labels - 1] = 0.0  # a label never seen in training
    Y[0, 0] = 1.0
    return X.astype(np.float32), Y


def random_candidates(rng, n_samples, n_labels, n_candidates, pad_fraction=0.2):
    """Distinct candidate ids per row, some slots padded with -1 anywhere in the row."""
    labels = np.array(
        [rng.permutation(n_labels)[:n_candidates] for _ in range(n_samples)], dtype=np.int32
    )
    labels[rng.random(labels.shape) < pad_fraction] = -1
    return labels


# ----------------------------------------------------------------------------- tail scores


@pytest.mark.parametrize("n_candidates", [1, 9])
@pytest.mark.parametrize("feature_weighting", ["idf", "none"])
@pytest.mark.parametrize("unit_centroids", [True, False])
def test_tail_scores_match_dense_reference(rng, n_candidates, feature_weighting, unit_centroids):
    X, Y = random_problem(rng)
    X_new = rng.random((15, X.shape[1])) * (rng.random((15, X.shape[1])) < 0.4)
    gamma = 2.0
    scorer = TailScorer(gamma, feature_weighting, unit_centroids).fit(sp.csr_matrix(X), Y)
    centroids = dense_centroids(X, Y, feature_weighting, unit_centroids)
    weights = reference_weights(X, feature_weighting)
    np.testing.assert_allclose(scorer.feature_weights_, weights, rtol=1e-6)
    np.testing.assert_allclose(scorer.centroids_.toarray(), centroids, rtol=1e-5, atol=1e-7)
    # New points are weighted with the training rows' IDF, not their own.
    labels = random_candidates(rng, X_new.shape[0], Y.shape[1], n_candidates)
    expected = reference_tail_scores(X_new, centroids, labels, gamma, weights)
    np.testing.assert_allclose(scorer.score(X_new, labels), expected, rtol=1e-5, atol=1e-12)


def reference_ridge_log_scores(X, Y, X_new, labels, penalty, feature_weighting="idf"):
    """Dense ridge with a bias column, solved with numpy; floored logs per candidate."""
    from xmltree.rerank._tail_scorers import RIDGE_FLOOR

    def design(points):
        weighted = np.asarray(points, dtype=np.float64) * reference_weights(X, feature_weighting)
        return np.hstack([unit_rows(weighted), np.ones((weighted.shape[0], 1))])

    A = design(X)
    W = np.linalg.solve(A.T @ A + penalty * np.eye(A.shape[1]), A.T @ np.asarray(Y, float))
    scores = design(X_new) @ W
    out = np.full(labels.shape, -np.inf)
    for i, j in zip(*np.nonzero(labels >= 0)):
        out[i, j] = math.log(max(scores[i, labels[i, j]], RIDGE_FLOOR))
    return W, out


@pytest.mark.parametrize("feature_weighting", ["idf", "none"])
@pytest.mark.parametrize("penalty", [0.01, 1.0])
def test_ridge_scores_match_dense_reference(rng, feature_weighting, penalty, monkeypatch):
    from xmltree.rerank import _tail_scorers as tail_module

    X, Y = random_problem(rng)
    X_new = rng.random((15, X.shape[1])) * (rng.random((15, X.shape[1])) < 0.4)
    X_new[0] = 0.0
    labels = random_candidates(rng, X_new.shape[0], Y.shape[1], 6)
    # Scores are computed a few rows at a time: blocks of 2 rows here.
    monkeypatch.setattr(tail_module, "_SCORE_BLOCK", 2 * Y.shape[1])
    scorer = RidgeTailScorer(penalty, feature_weighting).fit(sp.csr_matrix(X), Y)
    W, expected = reference_ridge_log_scores(X, Y, X_new, labels, penalty, feature_weighting)
    np.testing.assert_allclose(scorer.coef_, W, rtol=1e-4, atol=1e-5)
    got = scorer._log_score(check_features(X_new), labels)
    assert np.array_equal(np.isinf(got), labels < 0)
    np.testing.assert_allclose(got[labels >= 0], expected[labels >= 0], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(scorer.score(X_new, labels), np.exp(expected), rtol=1e-4,
                               atol=1e-6)
    # A label never seen in training has zero weights: floored, finite.
    unseen = Y.shape[1] - 1
    unseen_labels = np.full((X_new.shape[0], 1), unseen, dtype=np.int32)
    log_floor = scorer._log_score(check_features(X_new), unseen_labels)
    assert np.all(log_floor == math.log(tail_module.RIDGE_FLOOR))


@pytest.mark.parametrize("kind, scorer", [("ridge", RidgeTailScorer),
                                           ("logistic", LogisticTailScorer)])
def test_dense_scorers_refuse_problems_over_the_memory_limit(rng, monkeypatch, kind, scorer):
    from xmltree.rerank import _tail_scorers as tail_module

    X, Y = random_problem(rng)
    monkeypatch.setattr(tail_module, "MAX_DENSE_BYTES", 8 * 13 * 13)
    with pytest.raises(ValueError, match=f"tail_scorer='{kind}' needs .*'centroid'"):
        Reranker(tail_scorer=kind).fit(X, Y)
    with pytest.raises(NotFittedError):
        scorer().score(X, [[0]] * X.shape[0])


def logistic_design(X, X_new, feature_weighting="idf"):
    """[x_hat 1] rows of X_new, weighted with the IDF of X (float64)."""
    weighted = np.asarray(X_new, dtype=np.float64) * reference_weights(X, feature_weighting)
    return np.hstack([unit_rows(weighted), np.ones((weighted.shape[0], 1))])


def logistic_gradient(A, Y, W, penalty):
    """Gradient of sum logloss + penalty / 2 ||W without the bias row||^2 (float64)."""
    gradient = A.T @ (1.0 / (1.0 + np.exp(-(A @ W))) - Y)
    gradient[:-1] += penalty * W[:-1]
    return gradient


def reference_logistic_coef(X, Y, penalty, feature_weighting="idf"):
    """Per label, Newton's method in float64 on the penalised log loss.

    Labels in no row (or every row) have no finite optimum: zero weights and
    the logit of the smoothed frequency (count + 0.5) / (n + 1), as documented.
    """
    A = logistic_design(X, X, feature_weighting)
    Y = np.asarray(Y, dtype=np.float64)
    n, d = A.shape
    penalties = np.full(d, penalty)
    penalties[-1] = 0.0  # the bias is not penalised
    W = np.zeros((d, Y.shape[1]))
    for label in range(Y.shape[1]):
        count = Y[:, label].sum()
        frequency = (count + 0.5) / (n + 1)
        W[-1, label] = math.log(frequency / (1 - frequency))
        if count in (0, n):
            continue
        w = W[:, label].copy()
        for _ in range(50):
            p = 1.0 / (1.0 + np.exp(-(A @ w)))
            gradient = A.T @ (p - Y[:, label]) + penalties * w
            hessian = (A * (p * (1 - p))[:, None]).T @ A + np.diag(penalties)
            step = np.linalg.solve(hessian, gradient)
            w -= step
            if np.abs(step).max() < 1e-12:
                break
        W[:, label] = w
    return W


def test_logistic_coef_match_newton_reference_and_zero_the_gradient(rng):
    X, Y = random_problem(rng)  # a featureless row, a label never seen
    Y[:, 1] = 1.0  # a label in every row
    penalty = 0.5
    W = reference_logistic_coef(X, Y, penalty)
    A = logistic_design(X, X)
    fitted = [label for label in range(Y.shape[1]) if 0 < Y[:, label].sum() < X.shape[0]]
    start = np.zeros_like(W)
    start[-1] = W[-1]
    # Scale of the gradient: its size where the fit starts (zero weights).
    scale = np.abs(logistic_gradient(A, Y, start, penalty)[:, fitted]).max()
    # The default tolerance, and one at the float32 products' resolution.
    for tol, rtol in [(1e-3, 2e-3), (1e-7, 5e-5)]:
        scorer = LogisticTailScorer(penalty, tol=tol).fit(sp.csr_matrix(X), Y)
        assert scorer.coef_.dtype == np.float32 and scorer.coef_.shape == W.shape
        coef = scorer.coef_.astype(np.float64)
        gradient = logistic_gradient(A, Y, coef, penalty)[:, fitted]
        # Below about 1e-4 of the scale, the float32 products' rounding moves
        # the loss more than a step does: SciPy 1.17's line search stops there.
        assert np.abs(gradient).max() <= max(10 * tol, 1e-4) * scale
        np.testing.assert_allclose(coef, W, rtol=rtol, atol=rtol * np.abs(W).max())
    # Degenerate labels: exactly the documented weights.
    for label in (1, Y.shape[1] - 1):
        np.testing.assert_array_equal(scorer.coef_[:-1, label], 0.0)
        np.testing.assert_allclose(scorer.coef_[-1, label], W[-1, label], rtol=1e-6)
    # Deterministic: the same fit twice gives the same bits.
    again = LogisticTailScorer(penalty, tol=1e-7).fit(sp.csr_matrix(X), Y)
    np.testing.assert_array_equal(again.coef_, scorer.coef_)


@pytest.mark.parametrize("feature_weighting", ["idf", "none"])
def test_logistic_scores_are_log_sigmoids_and_finite(rng, feature_weighting, monkeypatch):
    from xmltree.rerank import _tail_scorers as tail_module

    X, Y = random_problem(rng)
    X_new = rng.random((15, X.shape[1])) * (rng.random((15, X.shape[1])) < 0.4)
    X_new[0] = 0.0  # no features: the score is the bias's
    unseen = Y.shape[1] - 1
    labels = random_candidates(rng, X_new.shape[0], Y.shape[1], 6)
    labels[:, 0] = unseen
    # Blocks of 2 rows, in the objective and when scoring.
    monkeypatch.setattr(tail_module, "_SCORE_BLOCK", 2 * Y.shape[1])
    scorer = LogisticTailScorer(1e-3, feature_weighting, tol=1e-6).fit(X, Y)
    W = reference_logistic_coef(X, Y, 1e-3, feature_weighting)
    np.testing.assert_allclose(scorer.coef_, W, rtol=1e-3, atol=1e-3 * np.abs(W).max())
    z = logistic_design(X, X_new, feature_weighting) @ scorer.coef_.astype(np.float64)
    got = scorer._log_score(check_features(X_new), labels)
    real = labels >= 0
    assert np.all(np.isfinite(got[real])) and np.all(got[~real] == -np.inf)
    expected = -np.logaddexp(0.0, -np.take_along_axis(z, np.maximum(labels, 0), axis=1))
    np.testing.assert_allclose(got[real], expected[real], rtol=1e-5)
    assert np.all(got[real] < 0.0)
    np.testing.assert_allclose(scorer.score(X_new, labels), np.exp(np.where(real, got, -np.inf)))
    # The unseen label: the smoothed-frequency prior, the same for every row.
    prior = math.log(0.5 / (X.shape[0] + 1))
    np.testing.assert_allclose(got[:, 0], prior, rtol=1e-5)
    # Scores far from the training data stay finite (no log(0)).
    far = scorer._log_score(check_features(1e6 * X_new), labels)
    assert np.all(np.isfinite(far[real]))


def test_logistic_refuses_bad_settings():
    for kwargs in ({"penalty": 0.0}, {"penalty": -1.0}, {"penalty": float("inf")},
                   {"tol": 0.0}, {"tol": 2.0}, {"max_iter": 0}, {"max_iter": 2.0},
                   {"max_iter": True}, {"feature_weighting": "bm25"}):
        with pytest.raises(ValueError):
            LogisticTailScorer(**kwargs)


def check_dot_product_paths(rng, n_samples, n_features, n_labels, density):
    """Compare all-label and one-label scores with the reference on one random problem.

    Returns, per row, whether the all-label call takes the feature-wise path
    (same cost rule as ``_rerank.score_row``), whether that path resets its
    buffer by memset (``walked >= n_labels``), and whether the one-label call
    takes the label-wise path.
    """
    X, Y = random_problem(rng, n_samples, n_features, n_labels, density)
    scorer = TailScorer(gamma=2.0).fit(X, Y)
    row_lengths = np.diff(scorer.centroids_.indptr)
    column_lengths = np.diff(scorer.centroids_.tocsc().indptr)
    X_csr = sp.csr_matrix(X)
    walked = np.array([column_lengths[X_csr[i].indices].sum() for i in range(n_samples)])
    feature_cost = walked + np.minimum(walked, n_labels // 8)
    all_labels = np.tile(np.arange(n_labels, dtype=np.int32), (n_samples, 1))
    one_label = all_labels[:, :1] + 1
    dense = dense_centroids(X, Y)
    for labels in (all_labels, one_label):
        np.testing.assert_allclose(
            scorer.score(X, labels),
            reference_tail_scores(X, dense, labels, 2.0),
            rtol=1e-5,
            atol=1e-12,
        )
    by_feature = feature_cost < row_lengths[all_labels].sum(axis=1)
    by_label = feature_cost >= row_lengths[one_label].sum(axis=1)
    return by_feature, walked >= n_labels, by_label


def test_every_dot_product_path_is_exercised_and_correct(rng):
    """Label-wise, feature-wise with memset reset, feature-wise with walked reset."""
    dense_rows = check_dot_product_paths(rng, 40, 12, 9, 0.3)
    sparse_rows = check_dot_product_paths(rng, 60, 60, 80, 0.03)
    by_feature, memset, by_label = (np.concatenate(pair) for pair in zip(dense_rows, sparse_rows))
    assert np.any(by_label)
    assert np.any(by_feature & memset)
    assert np.any(by_feature & ~memset)


def test_tail_scores_finite_for_empty_rows_and_unseen_labels(rng):
    X, Y = random_problem(rng)
    unseen = Y.shape[1] - 1
    for gamma in (30.0, 1e4):
        scorer = TailScorer(gamma=gamma).fit(X, Y)
        labels = np.array([[0, unseen, -1]] * X.shape[0], dtype=np.int32)
        scores = scorer.score(X, labels)
        assert np.all(np.isfinite(scores))
        assert np.all((scores >= 0.0) & (scores <= 0.5))
        assert np.all(scores[:, 2] == 0.0)
        log_scores = scorer._log_score(check_features(X), labels)
        assert np.all(np.isfinite(log_scores[:, :2]))
    # Empty row x_hat = 0, unseen label mu = 0: distance 0, t = 1/2 exactly.
    assert TailScorer(gamma=30.0).fit(X, Y).score(X[:1], [[unseen]])[0, 0] == 0.5
    # Labels beyond Y's columns, declared through n_labels, behave as unseen.
    wide = TailScorer(gamma=30.0).fit(X, Y, n_labels=Y.shape[1] + 3)
    assert wide.centroids_.shape == (Y.shape[1] + 3, X.shape[1])
    np.testing.assert_array_equal(
        wide.score(X, [[unseen, Y.shape[1] + 2]] * X.shape[0])[:, 1],
        wide.score(X, [[unseen, unseen]] * X.shape[0])[:, 1],
    )


def test_score_accepts_fewer_feature_columns(rng):
    X, Y = random_problem(rng)
    scorer = TailScorer(gamma=1.0).fit(X, Y)
    narrow = X[:, :5]
    padded = np.hstack([narrow, np.zeros((X.shape[0], X.shape[1] - 5), dtype=np.float32)])
    labels = random_candidates(rng, X.shape[0], Y.shape[1], 4)
    np.testing.assert_array_equal(scorer.score(narrow, labels), scorer.score(padded, labels))
