"""Tests of xmltree.rerank: blends, ranking, the Reranker, persistence, validation.

Everything is compared with slow pure-Python / dense NumPy references on
small seeded inputs (the tail scorers' own tests are in test_tail_scorers.py).
"""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from test_tail_scorers import (
    random_candidates,
    random_problem,
)

from xmltree._persistence import load_model, save_model
from xmltree.exceptions import DataFormatError, ModelFormatError, NotFittedError
from xmltree.metrics import inverse_propensity
from xmltree.rerank import (
    Reranker,
    TailScorer,
    _rerank,
    make_reranker,
    propensity_weighted_targets,
    rerank,
)
from xmltree.rerank._estimator import STATE_PREFIX

# ----------------------------------------------------------------------------- references


def reference_rerank(labels, scores, tails, method, alpha, beta, label_weights=None):
    """Row by row: blend, weight, sort by (-score, label), padded slots last."""
    out_labels, out_scores = [], []
    for row_labels, row_scores, row_tails in zip(labels, scores, tails):
        ranked = []
        for label, p, t in zip(row_labels, row_scores, row_tails):
            w = 1.0 if label_weights is None or label < 0 else label_weights[label]
            if label < 0:
                continue
            if method == "geometric":
                key = (
                    (alpha * math.log(p) if alpha > 0 else 0.0)
                    if p > 0 or alpha == 0
                    else -math.inf
                )
                if alpha < 1:
                    key += (1 - alpha) * math.log(t) if t > 0 else -math.inf
                key += math.log(w)
                blended = math.exp(key)
            else:
                blended = key = (beta * p + (1 - beta) * t) * w
            ranked.append((-key, int(label), blended))
        ranked.sort(key=lambda item: (item[0], item[1]))
        n_padded = len(row_labels) - len(ranked)
        out_labels.append([label for _, label, _ in ranked] + [-1] * n_padded)
        out_scores.append([blended for _, _, blended in ranked] + [0.0] * n_padded)
    return np.array(out_labels), np.array(out_scores)


# ----------------------------------------------------------------------------- blends


@pytest.mark.parametrize(
    "method,alpha,beta",
    [
        ("geometric", 0.8, 0.5),
        ("geometric", 0.3, 0.5),
        ("geometric", 0.0, 0.5),
        ("linear", 0.8, 0.7),
        ("linear", 0.8, 0.0),
    ],
)
@pytest.mark.parametrize("weighted", [False, True])
def test_rerank_matches_pure_python(rng, method, alpha, beta, weighted):
    n_samples, n_candidates = 30, 8
    labels = random_candidates(rng, n_samples, 50, n_candidates)
    scores = rng.random(labels.shape)
    tails = rng.random(labels.shape) * 0.5
    scores[rng.random(labels.shape) < 0.1] = 0.0
    tails[rng.random(labels.shape) < 0.1] = 0.0
    # Exact ties: copy slot 0's (p, t) into slot 1, so the lower label id must win.
    scores[:, 1], tails[:, 1] = scores[:, 0], tails[:, 0]
    scores[labels < 0] = np.nan  # empty slots' scores are ignored
    weights = 0.5 + 3 * rng.random(50) if weighted else None
    got_labels, got_scores = rerank(
        labels, scores, tails, method=method, alpha=alpha, beta=beta, label_weights=weights
    )
    ref_labels, ref_scores = reference_rerank(labels, scores, tails, method, alpha, beta, weights)
    np.testing.assert_array_equal(got_labels, ref_labels)
    np.testing.assert_allclose(got_scores, ref_scores, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("method", ["geometric", "linear"])
def test_full_base_weight_keeps_the_base_ranking(rng, method):
    labels = random_candidates(rng, 20, 40, 10)
    scores = rng.random(labels.shape)
    tails = rng.random(labels.shape) * 0.5
    got_labels, got_scores = rerank(labels, scores, tails, method=method, alpha=1.0, beta=1.0)
    base_labels, base_scores = reference_rerank(
        labels, scores, np.ones_like(tails), "linear", 0.0, 1.0
    )
    np.testing.assert_array_equal(got_labels, base_labels)
    np.testing.assert_allclose(got_scores, base_scores, rtol=1e-12)


def rare_label_problem():
    """Label 0 frequent on features 0-2, label 1 frequent on 2-3, label 5 rare on 4-5."""
    rng = np.random.default_rng(1)
    X = np.zeros((103, 6), dtype=np.float32)
    Y = np.zeros((103, 6), dtype=np.float32)
    X[:50, :3] = rng.random((50, 3)) + 0.1
    Y[:50, 0] = 1
    X[50:100, 2:4] = rng.random((50, 2)) + 0.1
    Y[50:100, 1] = 1
    X[100:, 4:6] = rng.random((3, 2)) + 0.1
    Y[100:, 5] = 1
    return X, Y


@pytest.mark.parametrize(
    "settings,reaches_top",
    [
        ({}, False),  # the defaults: a mild tail weight
        ({"feature_weighting": "none", "unit_centroids": False}, False),
        ({"alpha": 0.8, "gamma": 30.0}, True),
        ({"alpha": 0.4, "gamma": 30.0, "propensity_exponent": 0.0}, True),
        ({"alpha": 0.8, "gamma": 30.0, "feature_weighting": "none"}, True),
        ({"method": "linear", "beta": 0.3, "gamma": 1.0}, True),
        ({"method": "linear", "beta": 0.3, "gamma": 1.0, "propensity_exponent": 1.0}, True),
        ({"tail_scorer": "ridge", "alpha": 0.5}, True),
        ({"tail_scorer": "ridge", "method": "linear", "beta": 0.3}, True),
        ({"tail_scorer": "logistic", "logistic_penalty": 0.1, "alpha": 0.5}, True),
        ({"tail_scorer": "logistic", "logistic_penalty": 0.1, "method": "linear", "beta": 0.3},
         True),
    ],
)
def test_rare_true_label_rises_and_frequent_wrong_label_falls(settings, reaches_top):
    X, Y = rare_label_problem()
    reranker = Reranker(**settings).fit(X, Y)
    x_test = np.array([[0, 0, 0, 0, 0.9, 1.1]], dtype=np.float32)
    base_labels = np.array([[0, 1, 5]])
    base_scores = np.array([[0.6, 0.3, 0.1]])
    labels, scores = reranker.rerank_predictions(x_test, base_labels, base_scores, k=3)
    ranking = list(labels[0])
    assert ranking.index(5) < ranking.index(1)  # above a frequent wrong label
    if reaches_top:
        assert ranking[0] == 5
    assert np.all(np.diff(scores[0]) <= 0)


def test_reranked_scores_finite_for_featureless_points_and_unseen_labels(rng):
    X, Y = random_problem(rng)  # row 0 has no feature, the last label never occurs
    unseen = Y.shape[1] - 1
    labels = np.array([[0, unseen, 1, -1]] * 4, dtype=np.int32)
    scores = np.array([[0.5, 0.0, 0.2, 0.0]] * 4)
    points = np.vstack([np.zeros((2, X.shape[1]), dtype=np.float32), X[1:3]])
    for settings in (
        {},
        {"method": "linear", "propensity_exponent": 2.0},
        {"tail_scorer": "ridge", "ridge_penalty": 1e-3},
        {"tail_scorer": "logistic", "logistic_penalty": 1e-3, "propensity_exponent": 2.0},
    ):
        reranker = Reranker(**settings).fit(X, Y)
        ranked, blended = reranker.rerank_predictions(points, labels, scores, k=4)
        assert np.all(np.isfinite(blended))
        assert np.all(ranked[:, 3] == -1) and np.all(blended[:, 3] == 0.0)
        assert sorted(ranked[0, :3]) == [0, 1, unseen]


@pytest.mark.parametrize("n_features", [0, 4])
@pytest.mark.parametrize("tail_scorer", ["centroid", "ridge", "logistic"])
def test_training_rows_without_features_give_finite_scores(n_features, tail_scorer):
    X = sp.csr_matrix((5, n_features), dtype=np.float32)
    reranker = Reranker(tail_scorer=tail_scorer).fit(X, np.eye(5, 3))
    labels, scores = reranker.rerank_predictions(X, [[0, 1, 2]] * 5, [[0.5, 0.3, 0.2]] * 5, k=3)
    assert np.all(np.isfinite(scores)) and np.all(scores > 0)
    np.testing.assert_array_equal(labels, [[0, 1, 2]] * 5)  # equal tails keep the base order


def test_propensity_exponent_ranks_by_score_times_inverse_propensity(rng):
    X, Y = random_problem(rng, n_labels=12)
    reranker = Reranker(alpha=1.0, propensity_exponent=1.0).fit(X, Y)
    q = reranker.inverse_propensity_
    np.testing.assert_allclose(q, inverse_propensity(Y, n_labels=12))
    labels = random_candidates(rng, X.shape[0], Y.shape[1], 8)
    scores = rng.random(labels.shape)
    got_labels, got_scores = reranker.rerank_predictions(X, labels, scores, k=8)
    weighted = np.where(labels >= 0, scores * q[np.maximum(labels, 0)], -1.0)
    order = np.lexsort((labels, -weighted), axis=1)
    np.testing.assert_array_equal(got_labels, np.take_along_axis(labels, order, axis=1))
    np.testing.assert_allclose(
        got_scores, np.maximum(np.take_along_axis(weighted, order, axis=1), 0.0), rtol=1e-12
    )
    # Rarer labels weigh more; exponent 0 leaves the base ranking (alpha = 1) alone.
    counts = Y.sum(axis=0)
    assert np.all(np.diff(q[np.argsort(counts, kind="stable")]) <= 1e-12)
    reranker.set_params(propensity_exponent=0.0)
    plain, _ = reranker.rerank_predictions(X, labels, scores, k=8)
    base_order = np.lexsort((labels, -np.where(labels >= 0, scores, -1.0)), axis=1)
    np.testing.assert_array_equal(plain, np.take_along_axis(labels, base_order, axis=1))


# ----------------------------------------------------------------------------- re-ranker


def test_rerank_predictions_equals_score_then_rerank(rng):
    X, Y = random_problem(rng)
    reranker = Reranker(gamma=3.0, alpha=0.6).fit(X, Y)
    labels = random_candidates(rng, X.shape[0], Y.shape[1], 6)
    scores = rng.random(labels.shape)
    tails = reranker.scorer_.score(X, labels)
    weights = reranker.inverse_propensity_**reranker.propensity_exponent
    expected = rerank(labels, scores, tails, alpha=0.6, label_weights=weights)
    got = reranker.rerank_predictions(X, labels, scores, k=6)
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_allclose(got[1], expected[1], rtol=1e-12)


def test_rerank_predictions_cuts_candidates_and_pads_k(rng):
    X, Y = random_problem(rng, n_labels=12)
    reranker = Reranker(gamma=3.0, n_candidates=4).fit(X, Y)
    labels = random_candidates(rng, X.shape[0], Y.shape[1], 7, pad_fraction=0.0)
    scores = rng.random(labels.shape)
    top = np.argsort(-scores, axis=1, kind="stable")[:, :4]
    cut_labels = np.take_along_axis(labels, top, axis=1)
    cut_scores = np.take_along_axis(scores, top, axis=1)
    expected = reranker.rerank_predictions(X, cut_labels, cut_scores, k=4)
    got_labels, got_scores = reranker.rerank_predictions(X, labels, scores, k=6)
    np.testing.assert_array_equal(got_labels[:, :4], expected[0])
    np.testing.assert_allclose(got_scores[:, :4], expected[1])
    assert np.all(got_labels[:, 4:] == -1) and np.all(got_scores[:, 4:] == 0.0)


@pytest.mark.parametrize("tail_scorer", ["centroid", "ridge", "logistic"])
def test_state_round_trip(tmp_path, rng, tail_scorer):
    X, Y = random_problem(rng)
    reranker = Reranker(
        tail_scorer=tail_scorer,
        ridge_penalty=0.3,
        logistic_penalty=0.2,
        method="linear",
        beta=0.4,
        gamma=5.0,
        n_candidates=7,
        feature_weighting="none",
        unit_centroids=False,
        propensity_exponent=0.7,
        propensity_a=0.6,
        propensity_b=2.6,
    ).fit(X, Y)
    params, arrays = reranker._get_state()
    assert all(name.startswith(STATE_PREFIX) for name in arrays)
    # As an estimator would: nested settings, arrays beside its own.
    save_model(
        tmp_path / "model.npz", "ldsm", {"rerank": params}, {"tree.nodes": np.arange(3), **arrays}
    )
    stored = load_model(tmp_path / "model.npz")
    restored = Reranker._from_state(stored.params["rerank"], stored.arrays)
    assert restored.get_params() == reranker.get_params()
    np.testing.assert_array_equal(restored.inverse_propensity_, reranker.inverse_propensity_)
    np.testing.assert_array_equal(
        restored.scorer_.feature_weights_, reranker.scorer_.feature_weights_
    )
    labels = random_candidates(rng, X.shape[0], Y.shape[1], 5)
    scores = rng.random(labels.shape)
    for a, b in zip(
        reranker.rerank_predictions(X, labels, scores, k=3),
        restored.rerank_predictions(X, labels, scores, k=3),
    ):
        np.testing.assert_array_equal(a, b)
    reranker.save(tmp_path / "reranker.npz")
    again = Reranker.load(tmp_path / "reranker.npz")
    for name, array in reranker.scorer_._state_arrays().items():
        np.testing.assert_array_equal(again.scorer_._state_arrays()[name], array)


def corrupt(arrays, name, value):
    changed = dict(arrays)
    changed[STATE_PREFIX + name] = value
    return changed


def test_from_state_rejects_corrupt_states(rng):
    X, Y = random_problem(rng)
    params, arrays = Reranker().fit(X, Y)._get_state()
    indices = arrays[STATE_PREFIX + "centroid_indices"]
    data = arrays[STATE_PREFIX + "centroid_data"]
    bad_arrays = [
        {k: v for k, v in arrays.items() if not k.endswith("centroid_data")},
        corrupt(arrays, "centroid_indices", indices.astype(np.int64)),
        corrupt(
            arrays,
            "centroid_indices",
            np.where(np.arange(indices.size) == 0, X.shape[1], indices).astype(np.int32),
        ),
        corrupt(
            arrays, "centroid_data", np.where(np.arange(data.size) == 0, np.float32(np.nan), data)
        ),
        corrupt(arrays, "centroid_indptr", arrays[STATE_PREFIX + "centroid_indptr"][:-1]),
        corrupt(arrays, "label_counts", -arrays[STATE_PREFIX + "label_counts"] - 1),
        corrupt(arrays, "feature_weights", arrays[STATE_PREFIX + "feature_weights"][:-1]),
        corrupt(arrays, "feature_weights", -arrays[STATE_PREFIX + "feature_weights"]),
        corrupt(arrays, "inverse_propensity", 0.0 * arrays[STATE_PREFIX + "inverse_propensity"]),
        corrupt(
            arrays, "inverse_propensity", arrays[STATE_PREFIX + "inverse_propensity"] + np.nan
        ),
        {k: v for k, v in arrays.items() if not k.endswith("inverse_propensity")},
    ]
    ridge_params, ridge_arrays = Reranker(tail_scorer="ridge").fit(X, Y)._get_state()
    coef = ridge_arrays[STATE_PREFIX + "ridge_coef"]
    bad_ridge = [
        {k: v for k, v in ridge_arrays.items() if not k.endswith("ridge_coef")},
        corrupt(ridge_arrays, "ridge_coef", coef[:-1]),
        corrupt(ridge_arrays, "ridge_coef", coef.ravel()),
        corrupt(ridge_arrays, "ridge_coef", coef.astype(np.float64)),
        corrupt(ridge_arrays, "ridge_coef", coef + np.float32(np.inf)),
        corrupt(ridge_arrays, "feature_weights", np.full(X.shape[1], np.nan, np.float32)),
    ]
    logistic_params, logistic_arrays = Reranker(tail_scorer="logistic").fit(X, Y)._get_state()
    logistic_coef = logistic_arrays[STATE_PREFIX + "logistic_coef"]
    bad_logistic = [
        {k: v for k, v in logistic_arrays.items() if not k.endswith("logistic_coef")},
        corrupt(logistic_arrays, "logistic_coef", logistic_coef[:, :-1]),
        corrupt(logistic_arrays, "logistic_coef", logistic_coef - np.float32(np.inf)),
        corrupt(logistic_arrays, "feature_weights", np.zeros(X.shape[1] + 1, np.float32)),
    ]
    for bad_params, bad in (
        [(params, a) for a in bad_arrays]
        + [(ridge_params, a) for a in bad_ridge]
        + [(logistic_params, a) for a in bad_logistic]
    ):
        with pytest.raises(ModelFormatError):
            Reranker._from_state(bad_params, bad)
    # A ridge state read as a centroid one (or the reverse) lacks its arrays.
    with pytest.raises(ModelFormatError, match="missing"):
        Reranker._from_state({**ridge_params, "tail_scorer": "centroid"}, ridge_arrays)
    with pytest.raises(ModelFormatError, match="missing"):
        Reranker._from_state({**params, "tail_scorer": "ridge"}, arrays)
    with pytest.raises(ModelFormatError, match="missing"):
        Reranker._from_state({**logistic_params, "tail_scorer": "ridge"}, logistic_arrays)
    with pytest.raises(ModelFormatError, match="missing"):
        Reranker._from_state({**ridge_params, "tail_scorer": "logistic"}, ridge_arrays)
    for name, value in [
        ("alpha", 2.0),
        ("method", "best"),
        ("n_labels", 0),
        ("gamma", "30"),
        ("n_features", None),
        ("feature_weighting", "bm25"),
        ("unit_centroids", 1),
        ("propensity_exponent", -1.0),
        ("propensity_b", 0.0),
        ("tail_scorer", "knn"),
        ("ridge_penalty", -1.0),
        ("logistic_penalty", 0.0),
        ("logistic_penalty", "1"),
    ]:
        with pytest.raises(ModelFormatError):
            Reranker._from_state({**params, name: value}, arrays)
    with pytest.raises(ModelFormatError):
        Reranker._from_state({k: v for k, v in params.items() if k != "gamma"}, arrays)


# ----------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "kwargs",
    [
        {"method": "harmonic"},
        {"alpha": 1.5},
        {"alpha": float("nan")},
        {"beta": -0.1},
        {"gamma": 0.0},
        {"gamma": float("inf")},
        {"gamma": True},
        {"n_candidates": 0},
        {"n_candidates": 2.5},
        {"alpha": "0.8"},
        {"feature_weighting": "tfidf"},
        {"unit_centroids": "yes"},
        {"propensity_exponent": -0.5},
        {"propensity_exponent": float("nan")},
        {"propensity_a": float("inf")},
        {"propensity_b": 0.0},
        {"tail_scorer": "knn"},
        {"ridge_penalty": 0.0},
        {"ridge_penalty": float("nan")},
        {"tail_scorer": "Logistic"},
        {"logistic_penalty": 0.0},
        {"logistic_penalty": -0.5},
        {"logistic_penalty": float("nan")},
        {"logistic_penalty": True},
    ],
)
def test_bad_parameters_raise_value_error(kwargs):
    with pytest.raises(ValueError):
        Reranker(**kwargs)
    blend = {k: v for k, v in kwargs.items() if k in ("method", "alpha", "beta")}
    if blend:
        with pytest.raises(ValueError):
            rerank([[0]], [[1.0]], [[0.5]], **blend)


def test_bad_candidate_arrays_raise(rng):
    X, Y = random_problem(rng)
    reranker = Reranker().fit(X, Y)
    n = X.shape[0]
    good_labels = np.zeros((n, 2), dtype=np.int32)
    good_scores = np.ones((n, 2))
    bad_calls = [
        (X, np.full((n, 2), Y.shape[1]), good_scores),  # id out of range
        (X, np.full((n, 2), -2), good_scores),  # below -1
        (X, good_labels.astype(float), good_scores),  # not integers
        (X, good_labels, np.ones((n, 3))),  # shape mismatch
        (X, good_labels, np.full((n, 2), np.nan)),  # NaN score
        (X, good_labels, -good_scores),  # negative (geometric)
        (X[:5], good_labels, good_scores),  # row count mismatch
        (np.hstack([X, X]), good_labels, good_scores),  # too many features
        (X, good_labels[0], good_scores[0]),  # 1-D
    ]
    for X_bad, labels, scores in bad_calls:
        with pytest.raises(DataFormatError):
            reranker.rerank_predictions(X_bad, labels, scores, k=2)
    with pytest.raises(ValueError):
        reranker.rerank_predictions(X, good_labels, good_scores, k=0)
    with pytest.raises(DataFormatError):
        rerank(good_labels, good_scores, np.full((n, 2), 1.5))
    with pytest.raises(DataFormatError):
        rerank(np.full((n, 2), 2**31, dtype=np.int64), good_scores, good_scores * 0.5)
    with pytest.raises(DataFormatError):
        rerank(good_labels, good_scores, np.full((n, 2), np.nan))
    with pytest.raises(NotFittedError):
        Reranker().rerank_predictions(X, good_labels, good_scores)
    with pytest.raises(NotFittedError):
        TailScorer().score(X, good_labels)
    for bad_weights in ([1.0], np.zeros(Y.shape[1]), np.full(Y.shape[1], np.nan)):
        with pytest.raises(DataFormatError, match="label_weights"):
            rerank(good_labels + 1, good_scores, good_scores * 0.5, label_weights=bad_weights)
    # Settings changed after fitting are checked when they are used.
    for name, value in [("alpha", 3.0), ("method", "max"), ("propensity_exponent", -1.0)]:
        changed = Reranker().fit(X, Y).set_params(**{name: value})
        with pytest.raises(ValueError, match=name):
            changed.rerank_predictions(X, good_labels, good_scores, k=2)
    with pytest.raises(ValueError, match="gamma"):
        Reranker().set_params(gamma=-1.0).fit(X, Y)
    for name in ("ridge_penalty", "logistic_penalty"):
        tail_scorer = name.split("_")[0]
        with pytest.raises(ValueError, match=name):
            Reranker(tail_scorer=tail_scorer).set_params(**{name: -1.0}).fit(X, Y)


def test_partial_ranking_keeps_the_top(rng):
    labels = random_candidates(rng, 25, 30, 12)
    keys = np.round(rng.random(labels.shape), 1)  # many ties
    full = _rerank.rank_candidates(labels, keys)
    partial = _rerank.rank_candidates(labels, keys, 4)
    n_real = (labels >= 0).sum(axis=1)
    for i in range(labels.shape[0]):
        top = min(4, n_real[i])
        np.testing.assert_array_equal(partial[i, :top], full[i, :top])
        assert sorted(partial[i, : n_real[i]]) == sorted(full[i, : n_real[i]])
        np.testing.assert_array_equal(partial[i, n_real[i] :], full[i, n_real[i] :])


def test_rank_candidates_kernel_on_edge_shapes():
    empty = _rerank.rank_candidates(np.zeros((0, 3), dtype=np.int32), np.zeros((0, 3)))
    assert empty.shape == (0, 3)
    order = _rerank.rank_candidates(
        np.array([[-1, 4, 2, -1]], dtype=np.int32), np.array([[9.0, -np.inf, -np.inf, 1.0]])
    )
    np.testing.assert_array_equal(order, [[2, 1, 0, 3]])
    with pytest.raises(ValueError):
        _rerank.rank_candidates(np.zeros((2, 3), dtype=np.int32), np.zeros((2, 4)))


def test_propensity_weighted_targets(rng):
    metrics = pytest.importorskip("xmltree.metrics")
    if not hasattr(metrics, "inverse_propensity"):
        pytest.skip("xmltree.metrics.inverse_propensity not available yet")
    Y = (rng.random((50, 7)) < 0.3).astype(np.float32)
    weighted = propensity_weighted_targets(Y, A=0.55, B=1.5)
    n = Y.shape[0]
    frequencies = Y.sum(axis=0)
    c = (math.log(n) - 1) * (1.5 + 1) ** 0.55
    inverse = 1 + c * (frequencies + 1.5) ** -0.55
    np.testing.assert_allclose(weighted.toarray(), Y * inverse[None, :], rtol=1e-5)


def test_make_reranker_from_an_estimator_setting():
    assert make_reranker(False) is None and make_reranker(np.bool_(False)) is None
    assert make_reranker(True).get_params() == Reranker().get_params()
    assert make_reranker({}).get_params() == Reranker().get_params()
    logistic = make_reranker({"tail_scorer": "logistic", "logistic_penalty": 0.3})
    assert (logistic.tail_scorer, logistic.logistic_penalty) == ("logistic", 0.3)
    with pytest.raises(ValueError, match="rerank: logistic_penalty must be"):
        make_reranker({"tail_scorer": "logistic", "logistic_penalty": 0})
    made = make_reranker({"gamma": 30, "propensity_exponent": 1})
    assert made.get_params() == Reranker(gamma=30.0, propensity_exponent=1.0).get_params()
    assert not hasattr(made, "scorer_")
    with pytest.raises(ValueError, match="unknown re-ranker parameter 7"):
        make_reranker({7: 1.0})
    with pytest.raises(ValueError, match="rerank: gamma must be"):
        make_reranker({"gamma": -1.0})
    for bad in (None, "True", 0, 1.0, ["alpha"]):
        with pytest.raises(ValueError, match="rerank must be True, False or a dict"):
            make_reranker(bad)


# ----------------------------------------------------------------------------- format version 1


def first_layout(params, arrays):
    """A re-ranker state as format version 1 first stored it, made by hand.

    Settings: method, alpha, beta, gamma, n_candidates, n_features, n_labels;
    arrays: the CSR centroids and the label counts, nothing else.
    """
    old_params = {
        name: params[name]
        for name in ("method", "alpha", "beta", "gamma", "n_candidates", "n_features", "n_labels")
    }
    old_arrays = {
        STATE_PREFIX + name: arrays[STATE_PREFIX + name]
        for name in ("centroid_indptr", "centroid_indices", "centroid_data", "label_counts")
    }
    return old_params, old_arrays


def second_layout(params):
    """Re-ranker settings as version 1 stored them last: no tail scorer choice."""
    return {
        k: v
        for k, v in params.items()
        if k not in ("tail_scorer", "ridge_penalty", "logistic_penalty")
    }


def write_version_1(path, kind, params, arrays):
    """Save with the current writer, then mark the file as format version 1."""
    from test_persistence import rewrite_meta

    save_model(path, kind, params, arrays)
    rewrite_meta(path, format_version=1)


def test_version_1_files_load_unless_the_reranker_has_the_first_layout(tmp_path, rng):
    X, Y = random_problem(rng)
    reranker = Reranker(gamma=5.0, propensity_exponent=1.0).fit(X, Y)
    params, arrays = reranker._get_state()
    path = tmp_path / "reranker.npz"
    # Version 1 files written after the re-ranker gained its statistics: the
    # same arrays, and no tail_scorer setting (all were centroid scorers).
    write_version_1(path, "reranker", second_layout(params), arrays)
    loaded = Reranker.load(path)
    labels = random_candidates(rng, X.shape[0], Y.shape[1], 5)
    scores = rng.random(labels.shape)
    for a, b in zip(reranker.rerank_predictions(X, labels, scores, k=3),
                    loaded.rerank_predictions(X, labels, scores, k=3)):
        np.testing.assert_array_equal(a, b)
    write_version_1(path, "reranker", *first_layout(params, arrays))
    with pytest.raises(ModelFormatError, match="format version 1.*fit the re-ranker again"):
        Reranker.load(path)
    # The same state marked as the current version is simply corrupt.
    save_model(path, "reranker", *first_layout(params, arrays))
    with pytest.raises(ModelFormatError, match="re-ranker settings are invalid"):
        Reranker.load(path)


def before_logistic(params):
    """Re-ranker settings as files stored them before the logistic tail scorer."""
    return {k: v for k, v in params.items() if k != "logistic_penalty"}


@pytest.mark.parametrize("version", [1, 2])
def test_files_from_before_the_logistic_scorer_load(tmp_path, rng, version):
    X, Y = random_problem(rng)
    path = tmp_path / "reranker.npz"
    for tail_scorer in ("centroid", "ridge")[:version]:  # version 1: centroid only
        reranker = Reranker(tail_scorer=tail_scorer, propensity_exponent=1.0).fit(X, Y)
        params, arrays = reranker._get_state()
        params = before_logistic(params)
        if version == 1:
            write_version_1(path, "reranker", second_layout(params), arrays)
        else:
            save_model(path, "reranker", params, arrays)
        loaded = Reranker.load(path)
        assert loaded.get_params() == reranker.get_params()
        labels = random_candidates(rng, X.shape[0], Y.shape[1], 5)
        scores = rng.random(labels.shape)
        for a, b in zip(reranker.rerank_predictions(X, labels, scores, k=3),
                        loaded.rerank_predictions(X, labels, scores, k=3)):
            np.testing.assert_array_equal(a, b)
    # A logistic re-ranker always stored its penalty: without it, the file is corrupt.
    params, arrays = Reranker(tail_scorer="logistic").fit(X, Y)._get_state()
    save_model(path, "reranker", before_logistic(params), arrays)
    with pytest.raises(ModelFormatError, match="re-ranker settings are invalid"):
        Reranker.load(path)


# ----------------------------------------------------------------------------- the stage


def test_reranked_files_with_a_bad_learner_are_refused(tmp_path, rng):
    from xmltree import LOMTree
    from xmltree.rerank import Reranked

    X, Y = random_problem(rng)
    learner = LOMTree(random_state=0).fit(X, np.argmax(Y, axis=1))
    stage = Reranked(learner, Reranker(n_candidates=3)).fit(X, Y)
    params, arrays = stage._get_state()
    for change, message in [({"estimator_kind": "reranked"}, "cannot re-rank a Reranked"),
                            ({"estimator_kind": "forest"}, "unknown model kind"),
                            ({"estimator": None}, "lomtree")]:
        save_model(tmp_path / "bad.npz", "reranked", {**params, **change}, arrays)
        with pytest.raises(ModelFormatError, match=message):
            Reranked.load(tmp_path / "bad.npz")
    wider = {**params, "reranker": {**params["reranker"], "n_features": X.shape[1] + 1}}
    arrays = {**arrays, STATE_PREFIX + "feature_weights": np.ones(X.shape[1] + 1, np.float32)}
    save_model(tmp_path / "bad.npz", "reranked", wider, arrays)
    with pytest.raises(ModelFormatError, match="does not match the learner"):
        Reranked.load(tmp_path / "bad.npz")


# ----------------------------------------------------------------------------- hostile settings


def test_a_huge_propensity_exponent_is_refused():
    # 1e6 was accepted, and every re-ranked score was infinite.
    with pytest.raises(ValueError, match=r"propensity_exponent must be in \[0.0, 10.0\]"):
        Reranker(propensity_exponent=1e6)
    with pytest.raises(ValueError, match="rerank: propensity_exponent must be"):
        make_reranker({"propensity_exponent": 1e6})


@pytest.mark.parametrize("method", ["geometric", "linear"])
def test_scores_stay_finite_whatever_the_inverse_propensities(rng, method):
    X, Y = random_problem(rng, n_labels=12)
    reranker = Reranker(method=method, alpha=1.0, beta=1.0, propensity_exponent=10.0).fit(X, Y)
    reranker.inverse_propensity_ = np.geomspace(1.0, 1e200, 12)  # a crafted file's
    labels = random_candidates(rng, X.shape[0], Y.shape[1], 6, pad_fraction=0.0)
    scores = rng.random(labels.shape) + 0.5
    ranked, blended = reranker.rerank_predictions(X, labels, scores, k=6)
    assert np.all(np.isfinite(blended)) and blended.max() == np.finfo(np.float32).max
    if method == "geometric":  # ranked by the exact keys: larger ids weigh far more
        assert np.all(np.diff(ranked, axis=1) < 0)


def test_propensities_that_a_file_could_not_hold_are_refused_at_fit():
    # One training row gives inverse propensities <= 0: the fit used to
    # succeed and save a model its loader refuses.
    with pytest.raises(ValueError, match="propensity_a=0.55 and propensity_b=1.5 give"):
        Reranker().fit(np.ones((1, 3)), [[0, 1]])


def test_k_and_the_candidates_are_capped_at_the_labels(rng):
    from xmltree import LdSM, LOMTree
    from xmltree.rerank import Reranked

    X, Y = random_problem(rng, n_labels=6)
    learner = LOMTree(random_state=0).fit(X, np.argmax(Y, axis=1))
    n_classes = learner.classes_.shape[0]
    stage = Reranked(learner, Reranker(n_candidates=2**31 - 1)).fit(X, Y)
    # Both used to reach the kernels as they were: OverflowError, or n x k arrays.
    labels, scores = stage.predict_top_k(X, 2**40)
    assert labels.shape == scores.shape == (X.shape[0], Y.shape[1])
    assert np.all(labels[:, n_classes:] == -1)
    model = LdSM(n_trees=1, max_nodes=5, epochs=1, n_jobs=1).fit(X, Y)
    stage = Reranked(model, Reranker()).fit(X, Y)
    assert stage.predict_top_k(X, k=2**40)[0].shape == (X.shape[0], 6)


@pytest.mark.parametrize(("name", "value"), [("propensity_a", 2**31), ("propensity_a", -1.0),
                                             ("propensity_b", 1e300)])
def test_propensity_constants_are_bounded(name, value):
    # (B + 1) ** A overflowed: an OverflowError at fit (found by tools/fuzz_models.py).
    with pytest.raises(ValueError, match=f"{name} must be in"):
        Reranker(**{name: value})


def test_a_reranked_learner_whose_classes_are_not_label_ids_is_a_format_error(tmp_path, rng):
    from xmltree import LOMTree
    from xmltree.rerank import Reranked

    X, Y = random_problem(rng)
    stage = Reranked(LOMTree(random_state=0).fit(X, np.argmax(Y, axis=1)), Reranker()).fit(X, Y)
    params, arrays = stage._get_state()
    classes = arrays["estimator/classes"].copy()
    classes[0] = -1  # still sorted and unique: the learner alone loads
    save_model(tmp_path / "bad.npz", "reranked", params, {**arrays, "estimator/classes": classes})
    # It used to be a ValueError (found by tools/fuzz_models.py).
    with pytest.raises(ModelFormatError, match="not label ids"):
        Reranked.load(tmp_path / "bad.npz")
