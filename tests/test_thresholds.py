"""predict_above: every label whose score reaches a threshold, for every learner."""

import numpy as np
import pytest
import scipy.sparse as sp

from xmltree import LdSM, LearnedTree, LOMTree
from xmltree.datasets import make_synthetic
from xmltree.metrics import evaluate
from xmltree.rerank import Reranked, Reranker

N_LABELS = 30


@pytest.fixture(scope="module")
def data():
    return make_synthetic(n_samples=200, n_features=50, n_labels=N_LABELS, avg_labels=3.0,
                          random_state=1)


def fitted(name, X, Y):
    y = Y.indices[Y.indptr[:-1]]
    if name == "ldsm":
        return LdSM(n_trees=3, max_nodes=7, epochs=2, random_state=0, n_jobs=1).fit(X, Y)
    if name == "lomtree":
        return LOMTree(random_state=0).fit(X, y)
    if name == "learned_tree":
        return LearnedTree(dim=8, epochs=2, random_state=0).fit(X, Y)
    ldsm = LdSM(n_trees=2, max_nodes=7, epochs=2, random_state=0, n_jobs=1).fit(X, Y)
    return Reranked(ldsm, Reranker(alpha=0.5)).fit(X, Y)


def every_label_above(model, X, threshold, n_labels):
    """The reference: the full ranking, cut at the threshold."""
    labels, scores = model.predict_top_k(X, N_LABELS + 1)
    keep = (labels >= 0) & (scores >= threshold)
    rows = np.repeat(np.arange(X.shape[0]), keep.sum(axis=1))
    return sp.csr_matrix((scores[keep], (rows, labels[keep])), shape=(X.shape[0], n_labels))


@pytest.mark.parametrize("name", ["ldsm", "lomtree", "learned_tree", "reranked"])
@pytest.mark.parametrize("threshold", [0.001, 0.05, 0.3])
def test_predict_above_keeps_exactly_the_labels_that_reach_the_threshold(data, name,
                                                                          threshold):
    X, Y = data
    model = fitted(name, X, Y)
    above = model.predict_above(X, threshold)
    # Columns are label ids: as many as the learner knows (a classifier: largest class + 1).
    assert above.shape[0] == X.shape[0] and above.shape[1] <= N_LABELS
    expected = every_label_above(model, X, threshold, above.shape[1])
    np.testing.assert_array_equal(above.indptr, expected.indptr)
    np.testing.assert_array_equal(above.indices, expected.indices)
    np.testing.assert_allclose(above.data, expected.data)


def test_small_thresholds_reach_deep_into_the_ranking(data):
    X, Y = data
    model = fitted("learned_tree", X, Y)
    counts = np.diff(model.predict_above(X, 0.001).indptr)
    assert counts.max() > 16  # past the first two doublings of k
    assert np.all(np.diff(model.predict_above(X, 0.2).indptr) <= 5)  # probabilities: <= 1/t


def test_the_result_is_a_score_matrix_for_the_metrics(data):
    X, Y = data
    model = fitted("ldsm", X, Y)
    results = evaluate(Y, model.predict_above(X, 0.1), ks=(1,))
    labels, _ = model.predict_top_k(X, 1)
    top_is_kept = model.predict_top_k(X, 1)[1][:, 0] >= 0.1
    assert results["P@1"] == pytest.approx(
        np.mean(top_is_kept & (Y[np.arange(X.shape[0]), labels[:, 0]].A1 > 0)))


@pytest.mark.parametrize("threshold", [0, -1, float("nan"), float("inf"), "0.5", True])
def test_bad_thresholds_are_refused(data, threshold):
    X, Y = data
    with pytest.raises(ValueError, match="threshold"):
        fitted("ldsm", X, Y).predict_above(X, threshold)


@pytest.mark.parametrize("name", ["ldsm", "lomtree", "learned_tree", "reranked"])
def test_the_scores_above_a_threshold_have_the_dtype_of_the_ranking(data, name):
    X, Y = data
    model = fitted(name, X, Y)
    _, scores = model.predict_top_k(X[:20], 5)
    assert model.predict_above(X[:20], 1e-6).dtype == scores.dtype
