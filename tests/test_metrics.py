"""Ranking metrics: agreement with per-row Python references, hand examples, bad input."""

import math

import numpy as np
import pytest
import scipy.sparse as sp

from xmltree.exceptions import DataFormatError
from xmltree.metrics import (
    PROPENSITY_PRESETS,
    coverage_at_k,
    evaluate,
    inverse_propensity,
    ndcg_at_k,
    paired_difference,
    precision_at_k,
    psndcg_at_k,
    psprecision_at_k,
    recall_at_k,
    top_k,
)
from xmltree.metrics._metrics import ndcg_by_row

# k = 33 and 70 exceed the depth up to which rankings are built by repeated
# maxima, so both selection strategies are compared with the reference;
# 70 also exceeds the number of labels.
KS = [1, 3, 5, 33, 70]
N_ROWS, N_LABELS = 40, 60


# ------------------------------------------------------------------ references


def reference_ranking(row_scores: dict, k: int) -> list:
    """Labels of one row sorted by (-score, label), ``-inf`` scores dropped."""
    candidates = [(-score, label) for label, score in row_scores.items() if score != -np.inf]
    return [label for _, label in sorted(candidates)[:k]]


def reference_metrics(true_sets, rankings, k, q=None) -> dict:
    """Every metric computed row by row in plain Python."""

    def dcg(ranking, truth, gain):
        return sum(
            gain(label) / math.log2(j + 2) for j, label in enumerate(ranking[:k]) if label in truth
        )

    sums = dict.fromkeys(["P", "nDCG", "R", "PSP", "PSnDCG", "PSP_oracle", "PSnDCG_oracle"], 0.0)
    covered, present = set(), set()
    for truth, ranking in zip(true_sets, rankings):
        present |= truth
        hits = [label for label in ranking[:k] if label in truth]
        covered |= set(hits)
        sums["P"] += len(hits) / k
        if not truth:
            continue
        ideal = sum(1 / math.log2(j + 2) for j in range(min(k, len(truth))))
        sums["nDCG"] += dcg(ranking, truth, lambda label: 1.0) / ideal
        sums["R"] += len(hits) / len(truth)
        if q is not None:
            oracle = sorted(truth, key=lambda label: (-q[label], label))
            sums["PSP"] += sum(q[label] for label in hits) / k
            sums["PSP_oracle"] += sum(q[label] for label in oracle[:k]) / k
            sums["PSnDCG"] += dcg(ranking, truth, lambda label: q[label]) / ideal
            sums["PSnDCG_oracle"] += dcg(oracle, truth, lambda label: q[label]) / ideal
    n = len(true_sets)
    out = {
        f"P@{k}": sums["P"] / n,
        f"nDCG@{k}": sums["nDCG"] / n,
        f"R@{k}": sums["R"] / n,
        f"coverage@{k}": len(covered) / len(present),
    }
    if q is not None:
        out[f"PSP@{k}"] = sums["PSP"] / sums["PSP_oracle"]
        out[f"PSnDCG@{k}"] = sums["PSnDCG"] / sums["PSnDCG_oracle"]
    return out


@pytest.fixture
def problem(rng):
    """Random truth, tie-heavy scores in three equivalent forms, and weights."""
    n_true = rng.integers(0, 7, size=N_ROWS)
    n_true[:3] = 0  # some rows have no true labels
    true_sets = [set(rng.choice(N_LABELS, size=c, replace=False).tolist()) for c in n_true]
    Y = np.zeros((N_ROWS, N_LABELS))
    for i, truth in enumerate(true_sets):
        Y[i, list(truth)] = 1
    # One decimal produces many ties; about half of the labels get no score.
    scores = np.round(rng.random((N_ROWS, N_LABELS)), 1)
    stored = rng.random((N_ROWS, N_LABELS)) < 0.5
    stored[3] = False  # a row with no prediction at all
    stored[4, :2] = True
    stored[4, 2:] = False  # a row with fewer predictions than most k
    dense = np.where(stored, scores, -np.inf)
    rows, cols = np.nonzero(stored)
    sparse = sp.csr_matrix((scores[rows, cols], (rows, cols)), shape=(N_ROWS, N_LABELS))
    row_dicts = [
        dict(zip(np.flatnonzero(stored[i]).tolist(), scores[i, stored[i]].tolist()))
        for i in range(N_ROWS)
    ]
    q = rng.uniform(1.0, 5.0, size=N_LABELS).round(1)  # rounded: ties in the oracle too
    return {
        "Y": Y,
        "true_sets": true_sets,
        "dense": dense,
        "sparse": sparse,
        "row_dicts": row_dicts,
        "q": q,
    }


def ranking_array(row_dicts, width):
    """Integer ranking of each row, padded with -1."""
    out = np.full((len(row_dicts), width), -1, dtype=np.int64)
    for i, row in enumerate(row_dicts):
        ranked = reference_ranking(row, width)
        out[i, : len(ranked)] = ranked
    return out


# ------------------------------------------------------------------------ top_k


@pytest.mark.parametrize("k", KS)
def test_top_k_matches_reference_for_dense_and_sparse_scores(problem, k):
    expected_labels = ranking_array(problem["row_dicts"], k)
    expected_values = np.full((N_ROWS, k), -np.inf)
    for i, row in enumerate(problem["row_dicts"]):
        ranked = reference_ranking(row, k)
        expected_values[i, : len(ranked)] = [row[label] for label in ranked]
    for scores in (problem["dense"], problem["sparse"]):
        labels, values = top_k(scores, k)
        assert labels.shape == values.shape == (N_ROWS, k)
        np.testing.assert_array_equal(labels, expected_labels)
        np.testing.assert_array_equal(values, expected_values)


@pytest.mark.parametrize("k", [2, 40])
def test_top_k_breaks_ties_by_lower_label_id(k):
    scores = np.zeros((2, 50))
    scores[1, [7, 3, 45]] = 1.0
    labels, _ = top_k(scores, k)
    np.testing.assert_array_equal(labels[0], np.arange(k))
    rest = [label for label in range(50) if label not in (3, 7, 45)]
    np.testing.assert_array_equal(labels[1], ([3, 7, 45] + rest)[:k])
    sparse_labels, _ = top_k(sp.csr_matrix(scores), k)
    assert np.all(sparse_labels[0] == -1)  # a sparse row without stored entries
    np.testing.assert_array_equal(sparse_labels[1, :3], [3, 7, 45][:k])
    assert np.all(sparse_labels[1, 3:] == -1)


def test_top_k_pads_short_rows_and_keeps_stored_zeros():
    scores = sp.csr_matrix(
        (np.array([0.0, -1.0, 2.0]), np.array([1, 2, 0]), np.array([0, 2, 2, 3])), shape=(3, 4)
    )
    labels, values = top_k(scores, 3)
    np.testing.assert_array_equal(labels, [[1, 2, -1], [-1, -1, -1], [0, -1, -1]])
    np.testing.assert_array_equal(
        values, [[0.0, -1.0, -np.inf], [-np.inf] * 3, [2.0, -np.inf, -np.inf]]
    )
    dense_labels, _ = top_k(np.array([[0.0, -1.0]]), 4)  # k larger than n_labels
    np.testing.assert_array_equal(dense_labels, [[0, 1, -1, -1]])


def test_top_k_leaves_its_input_untouched(problem):
    dense, sparse = problem["dense"].copy(), problem["sparse"].copy()
    for k in (3, 40):
        top_k(problem["dense"], k)
        top_k(problem["sparse"], k)
    np.testing.assert_array_equal(problem["dense"], dense)
    np.testing.assert_array_equal(problem["sparse"].toarray(), sparse.toarray())


def test_top_k_accepts_non_canonical_sparse_input():
    # Duplicates are summed, as scipy does: label 2 scores 0.3 + 0.4.
    coo = sp.coo_matrix(
        (np.array([0.3, 0.5, 0.4]), (np.array([0, 0, 0]), np.array([2, 1, 2]))), shape=(1, 3)
    )
    labels, values = top_k(coo, 2)
    np.testing.assert_array_equal(labels, [[2, 1]])
    np.testing.assert_allclose(values, [[0.7, 0.5]])


def test_sparse_scores_with_a_billion_labels_are_never_densified():
    n_labels = 10**9
    scores = sp.csr_matrix(
        (np.array([0.5, 0.9, 0.1]), np.array([5, n_labels - 1, 7]), np.array([0, 2, 3])),
        shape=(2, n_labels),
    )
    Y = sp.csr_matrix(
        (np.ones(2), np.array([n_labels - 1, 8]), np.array([0, 1, 2])), shape=(2, n_labels)
    )
    np.testing.assert_array_equal(top_k(scores, 2)[0], [[n_labels - 1, 5], [7, -1]])
    assert precision_at_k(Y, scores, 1) == 0.5


# --------------------------------------------------------------------- metrics


@pytest.mark.parametrize("k", [1, 5, 70])
def test_ndcg_by_row_matches_the_reference_row_by_row(problem, k):
    rankings = ranking_array(problem["row_dicts"], max(1, k - 2))  # narrower: padded
    rows = ndcg_by_row(sp.csr_matrix(problem["Y"]), rankings, k)
    for i, (truth, ranking) in enumerate(zip(problem["true_sets"], rankings)):
        # A row without true labels scores 0 (the reference's coverage needs one).
        expected = reference_metrics([truth], [ranking.tolist()], k)[f"nDCG@{k}"] if truth else 0
        assert rows[i] == pytest.approx(expected)
    assert rows.mean() == pytest.approx(ndcg_at_k(problem["Y"], rankings, k))


@pytest.mark.parametrize("k", KS)
def test_metrics_match_reference_for_every_prediction_form(problem, k):
    expected = reference_metrics(
        problem["true_sets"], ranking_array(problem["row_dicts"], k), k, problem["q"]
    )
    Y, q = problem["Y"], problem["q"]
    # Rankings narrower than k must behave like rankings padded with -1.
    rankings = ranking_array(problem["row_dicts"], max(1, k - 2))
    truths = (Y, sp.csr_matrix(Y), [sorted(t) for t in problem["true_sets"]])
    for Y_true in truths:
        for Y_pred in (problem["dense"], problem["sparse"], rankings):
            if Y_pred is rankings and k > 2:
                expected_here = reference_metrics(problem["true_sets"], rankings, k, q)
            else:
                expected_here = expected
            got = {
                f"P@{k}": precision_at_k(Y_true, Y_pred, k),
                f"nDCG@{k}": ndcg_at_k(Y_true, Y_pred, k),
                f"R@{k}": recall_at_k(Y_true, Y_pred, k),
                f"coverage@{k}": coverage_at_k(Y_true, Y_pred, k),
                f"PSP@{k}": psprecision_at_k(Y_true, Y_pred, q, k),
                f"PSnDCG@{k}": psndcg_at_k(Y_true, Y_pred, q, k),
            }
            assert got == pytest.approx(expected_here, rel=1e-12)


def reference_row_shares(true_sets, rankings, k, q) -> dict:
    """Each row's share of every paired metric, in plain Python: the mean over
    rows is the metric (the propensity-scored ones over their oracle's mean)."""

    def dcg(ranking, truth, gain):
        return sum(gain(label) / math.log2(j + 2)
                   for j, label in enumerate(ranking[:k]) if label in truth)

    shares = {name: [] for name in ("P", "nDCG", "R", "PSP", "PSnDCG")}
    oracle = {"PSP": 0.0, "PSnDCG": 0.0}
    for truth, ranking in zip(true_sets, rankings):
        hits = [label for label in ranking[:k] if label in truth]
        best = sorted(truth, key=lambda label: (-q[label], label))
        ideal = sum(1 / math.log2(j + 2) for j in range(min(k, len(truth)))) or 1.0
        shares["P"].append(len(hits) / k)
        shares["nDCG"].append(dcg(ranking, truth, lambda label: 1.0) / ideal)
        shares["R"].append(len(hits) / max(len(truth), 1))
        shares["PSP"].append(sum(q[label] for label in hits) / k)
        shares["PSnDCG"].append(dcg(ranking, truth, lambda label: q[label]) / ideal)
        oracle["PSP"] += sum(q[label] for label in best[:k]) / k / len(true_sets)
        oracle["PSnDCG"] += dcg(best, truth, lambda label: q[label]) / ideal / len(true_sets)
    for name, mean in oracle.items():
        shares[name] = [share / mean for share in shares[name]]
    return shares


@pytest.mark.parametrize("k", [1, 5])
@pytest.mark.parametrize("metric", ["P", "nDCG", "R", "PSP", "PSnDCG"])
def test_paired_difference_matches_a_row_by_row_reference(problem, metric, k):
    Y, q = problem["Y"], problem["q"]
    first = ranking_array(problem["row_dicts"], k)
    # A second prediction that agrees on some rows and not on others.
    second = ranking_array([{label: -score for label, score in row.items()}
                            for row in problem["row_dicts"]], k)
    second[::3] = first[::3]
    difference, error = paired_difference(Y, first, second, metric, k, inv_propensity=q)
    shares = [np.array(reference_row_shares(problem["true_sets"], ranking.tolist(), k, q)[metric])
              for ranking in (first, second)]
    rows = shares[0] - shares[1]
    assert difference == pytest.approx(rows.mean(), rel=1e-12, abs=1e-15)
    assert error == pytest.approx(rows.std(ddof=1) / math.sqrt(N_ROWS), rel=1e-12)
    scores = [evaluate(Y, ranking, ks=(k,), inv_propensity=q)[f"{metric}@{k}"]
              for ranking in (first, second)]
    assert difference == pytest.approx(scores[0] - scores[1], rel=1e-12, abs=1e-15)


def test_paired_difference_of_a_prediction_with_itself_is_zero(problem):
    assert paired_difference(problem["Y"], problem["sparse"], problem["dense"], "P", 5) == (0, 0)


@pytest.mark.parametrize("metric, q, message", [
    ("coverage", None, "metric must be one of"), ("PSP", None, "PSP needs inv_propensity"),
    ("PSnDCG", None, "PSnDCG needs inv_propensity")])
def test_paired_difference_refuses_what_it_cannot_pair(problem, metric, q, message):
    with pytest.raises(ValueError, match=message):
        paired_difference(problem["Y"], problem["dense"], problem["dense"], metric, 5,
                          inv_propensity=q)


def test_paired_difference_checks_its_predictions(problem):
    with pytest.raises(ValueError, match="rows"):
        paired_difference(problem["Y"], problem["dense"], problem["dense"][:5], "P", 5)


def test_evaluate_agrees_with_the_single_metric_functions(problem):
    Y, q, scores = problem["Y"], problem["q"], problem["sparse"]
    results = evaluate(Y, scores, ks=(5, 1, 3, 3), inv_propensity=q)
    names = ["P", "nDCG", "PSP", "PSnDCG", "R", "coverage"]
    assert list(results) == [f"{name}@{k}" for name in names for k in (1, 3, 5)]
    for k in (1, 3, 5):
        assert results[f"P@{k}"] == precision_at_k(Y, scores, k)
        assert results[f"nDCG@{k}"] == ndcg_at_k(Y, scores, k)
        assert results[f"PSP@{k}"] == psprecision_at_k(Y, scores, q, k)
        assert results[f"PSnDCG@{k}"] == psndcg_at_k(Y, scores, q, k)
        assert results[f"R@{k}"] == recall_at_k(Y, scores, k)
        assert results[f"coverage@{k}"] == coverage_at_k(Y, scores, k)
    assert all(isinstance(value, float) for value in results.values())
    without_q = evaluate(Y, scores)
    assert set(without_q) == {
        f"{m}@{k}" for m in ("P", "nDCG", "R", "coverage") for k in (1, 3, 5)
    }


def test_hand_computed_example():
    # Row 0: truth {0, 2}, ranking 0, 1, 2, 3 -> hits at ranks 1 and 3.
    # Row 1: truth {1},    ranking 2, 1, 0, 3 -> hit at rank 2.
    # Row 2: no true labels.
    Y = [[0, 2], [1], []]
    scores = np.array([[0.9, 0.8, 0.1, 0.0], [0.1, 0.5, 0.7, 0.0], [1.0, 2.0, 3.0, 4.0]])
    q = np.array([1.0, 2.0, 4.0, 8.0])
    log3 = math.log2(3)
    results = evaluate(Y, scores, ks=(1, 3), inv_propensity=q)
    expected = {
        "P@1": 1 / 3,
        "P@3": (2 / 3 + 1 / 3) / 3,
        "nDCG@1": 1 / 3,
        "nDCG@3": ((1 + 1 / 2) / (1 + 1 / log3) + 1 / log3) / 3,
        # Oracle top-1: label 2 (q=4) for row 0, label 1 (q=2) for row 1.
        "PSP@1": (1 / 3) / ((4 + 2) / 3),
        "PSP@3": ((1 + 4) / 3 + 2 / 3) / ((4 + 1) / 3 + 2 / 3),
        "PSnDCG@1": (1 / 3) / ((4 + 2) / 3),
        "PSnDCG@3": ((1 + 4 / 2) / (1 + 1 / log3) + 2 / log3)
        / ((4 + 1 / log3) / (1 + 1 / log3) + 2),
        "R@1": (1 / 2) / 3,
        "R@3": (1 + 1) / 3,
        "coverage@1": 1 / 3,
        "coverage@3": 1.0,
    }
    assert results == pytest.approx(expected, rel=1e-12)
    assert results["nDCG@3"] == pytest.approx(0.516883514, abs=1e-9)
    assert results["PSnDCG@3"] == pytest.approx(0.640838625, abs=1e-9)


def test_perfect_predictions_score_one(rng):
    n_rows, n_labels, k = 30, 25, 3
    Y = rng.random((n_rows, n_labels)) < 0.3
    Y[:, :k] = True  # every row has at least k labels
    Y = sp.csr_matrix(Y.astype(float))
    q = inverse_propensity(Y)
    # Scoring true labels by q gives the oracle's own order.
    scores = Y.multiply(q).tocsr()
    for cut in (1, k):
        assert precision_at_k(Y, scores, cut) == pytest.approx(1.0)
        assert ndcg_at_k(Y, scores, cut) == pytest.approx(1.0)
        assert psprecision_at_k(Y, scores, q, cut) == pytest.approx(1.0)
        assert psndcg_at_k(Y, scores, q, cut) == pytest.approx(1.0)
    # Past |y| precision drops but nDCG, recall and PSP stay perfect.
    deep = n_labels
    assert precision_at_k(Y, scores, deep) < 1.0
    assert ndcg_at_k(Y, scores, deep) == pytest.approx(1.0)
    assert recall_at_k(Y, scores, deep) == pytest.approx(1.0)
    assert psprecision_at_k(Y, scores, q, deep) == pytest.approx(1.0)


def test_k_larger_than_n_labels_counts_missing_slots_as_wrong():
    Y = [[0, 1]]
    scores = np.array([[1.0, 2.0]])
    assert precision_at_k(Y, scores, 5) == pytest.approx(2 / 5)
    assert ndcg_at_k(Y, scores, 5) == pytest.approx(1.0)
    assert recall_at_k(Y, scores, 5) == pytest.approx(1.0)


def test_rows_without_labels_count_as_zero_and_stay_in_the_mean():
    Y = sp.csr_matrix(np.array([[1, 0], [0, 0]]))
    ranking = np.array([[0], [1]])
    for metric in (precision_at_k, ndcg_at_k, recall_at_k):
        assert metric(Y, ranking, 1) == pytest.approx(0.5)
    assert psprecision_at_k(Y, ranking, [2.0, 3.0], 1) == pytest.approx(1.0)


def test_truth_without_any_label_gives_zero_instead_of_nan():
    Y = sp.csr_matrix((2, 3))
    scores = np.ones((2, 3))
    results = evaluate(Y, scores, ks=(1,), inv_propensity=np.ones(3))
    assert results == {
        "P@1": 0.0,
        "nDCG@1": 0.0,
        "PSP@1": 0.0,
        "PSnDCG@1": 0.0,
        "R@1": 0.0,
        "coverage@1": 0.0,
    }


def test_label_lists_widen_to_the_ranked_ids():
    # Label 9 is predicted but never true: the label space grows to 10.
    assert precision_at_k([[0], [1]], np.array([[9, 0], [1, -1]]), 2) == pytest.approx(0.5)


def test_read_only_broadcast_scores_are_accepted():
    frequencies = np.array([3.0, 1.0, 2.0])
    scores = np.broadcast_to(frequencies, (2, 3))
    assert precision_at_k([[0], [2]], scores, 1) == pytest.approx(0.5)
    np.testing.assert_array_equal(top_k(scores, 2)[0], [[0, 2], [0, 2]])


# ------------------------------------------------------------------ propensity


def test_inverse_propensity_matches_a_hand_computation():
    # N = 4 rows; label frequencies 3, 1, 0.
    Y_train = [[0, 1], [0], [0], []]
    c = (math.log(4) - 1) * 2.5**0.55
    expected = [1 + c * 4.5**-0.55, 1 + c * 2.5**-0.55, 1 + c * 1.5**-0.55]
    q = inverse_propensity(Y_train, n_labels=3)
    assert q.dtype == np.float64 and q.shape == (3,)
    np.testing.assert_allclose(q, expected, rtol=1e-14)
    # A label seen once has N_l + B = B + 1, so its weight is exactly ln N.
    np.testing.assert_allclose(q, [1.27959, math.log(4), 1.51161], atol=1e-5)
    assert q[0] < q[1] < q[2]  # rarer labels weigh more


def test_propensity_presets():
    assert PROPENSITY_PRESETS == {
        "default": (0.55, 1.5),
        "amazon": (0.6, 2.6),
        "wikipedia": (0.5, 0.4),
    }
    Y_train = sp.csr_matrix(np.array([[1, 0], [1, 1], [1, 0]]))
    for A, B in PROPENSITY_PRESETS.values():
        c = (math.log(3) - 1) * (B + 1) ** A
        expected = [1 + c * (3 + B) ** -A, 1 + c * (1 + B) ** -A]
        np.testing.assert_allclose(inverse_propensity(Y_train, A, B), expected, rtol=1e-14)
    np.testing.assert_array_equal(
        inverse_propensity(Y_train), inverse_propensity(Y_train, *PROPENSITY_PRESETS["default"])
    )


@pytest.mark.parametrize(
    ("Y_train", "A", "B", "message"),
    [
        (sp.csr_matrix((0, 3)), 0.55, 1.5, "no rows"),
        ([[0]], 0.55, 0.0, "B > 0"),
        ([[0]], np.nan, 1.5, "finite"),
    ],
)
def test_inverse_propensity_rejects_bad_arguments(Y_train, A, B, message):
    with pytest.raises(ValueError, match=message):
        inverse_propensity(Y_train, A, B)


# -------------------------------------------------------------------- bad input


@pytest.mark.parametrize("k", [0, -1, 1.5, True, "3", None])
def test_bad_k_is_rejected(k):
    with pytest.raises(ValueError, match="k must"):
        precision_at_k([[0]], np.array([[1.0]]), k)
    with pytest.raises(ValueError, match="k must"):
        top_k(np.array([[1.0]]), k)


def test_empty_ks_is_rejected():
    with pytest.raises(ValueError, match="at least one"):
        evaluate([[0]], np.array([[1.0]]), ks=())


@pytest.mark.parametrize(
    ("Y_true", "Y_pred", "q", "message"),
    [
        (np.eye(3), np.ones((2, 3)), None, "3 rows but Y_pred has 2"),
        (np.eye(3), np.ones((3, 4)), None, "Y_true 3, Y_pred 4"),
        (np.eye(3), np.ones((3, 3)), np.ones(4), "inv_propensity 4"),
        ([[0], [1]], np.ones((2, 2)), np.ones(3), "Y_pred 2, inv_propensity 3"),
        (np.eye(3), np.ones(3), None, "2-D"),
        (np.eye(3), np.zeros((3, 0), dtype=int), None, "k' >= 1"),
        (sp.csr_matrix((0, 3)), np.ones((0, 3)), None, "no rows"),
        (np.eye(2), np.ones((2, 2)), np.ones((2, 1)), "1-D"),
    ],
)
def test_mismatched_shapes_raise_value_error(Y_true, Y_pred, q, message):
    with pytest.raises(ValueError, match=message):
        evaluate(Y_true, Y_pred, inv_propensity=q)


@pytest.mark.parametrize(
    ("Y_pred", "message"),
    [
        (np.array([[0.5, np.nan], [1.0, 2.0]]), "row 0 contains NaN"),
        (sp.csr_matrix(np.array([[1.0, 0.0], [np.nan, 1.0]])), "row 1 contains NaN"),
        (np.array([[0, 1], [0, 2]]), r"\[-1, 2\)"),
        (np.array([[-2, 0], [0, 1]]), r"\[-1, 2\)"),
        (np.array([[0, 1], [1, 1]]), "row 1 ranks label 1 more than once"),
        (np.array([[True, False], [False, True]]), "real numbers"),
        ([[0.5, 1.0], [1.0]], "rectangular"),
    ],
)
def test_malformed_predictions_raise_data_format_error(Y_pred, message):
    with pytest.raises(DataFormatError, match=message):
        precision_at_k(np.eye(2), Y_pred, 1)


def test_ranking_may_repeat_the_empty_slot():
    assert precision_at_k(np.eye(2), np.array([[0, -1, -1], [-1, -1, 1]]), 3) == pytest.approx(
        1 / 3
    )


def test_malformed_sparse_scores_are_rejected_before_ranking():
    bad = sp.csr_matrix((np.ones(1), np.array([0]), np.array([0, 1])), shape=(1, 2))
    bad.indices[0] = 5  # out of range: would otherwise alias another row's key
    with pytest.raises(DataFormatError, match="out of range"):
        top_k(bad, 1)


def test_malformed_truth_and_weights_are_rejected():
    with pytest.raises(DataFormatError, match="only 0 and 1"):
        precision_at_k(np.array([[2.0, 0.0]]), np.ones((1, 2)), 1)
    with pytest.raises(DataFormatError, match="out of range"):
        precision_at_k([[0, 5]], np.ones((1, 2)), 1)
    with pytest.raises(DataFormatError, match="NaN or infinite"):
        psprecision_at_k([[0]], np.ones((1, 2)), [1.0, np.inf], 1)
