"""The protocol every learner shares: fit, predict_top_k, n_features_in_, n_jobs, files,
re-ranking."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp

import xmltree
from xmltree import LdSM, LearnedTree, LOMTree
from xmltree.rerank import Reranked, Reranker

N_FEATURES, N_LABELS = 15, 6


def problem(seed=0, n_samples=120):
    """Features that tell the labels apart, a few labels per row."""
    rng = np.random.default_rng(seed)
    first = rng.integers(0, N_LABELS, n_samples)
    Y = (rng.random((n_samples, N_LABELS)) < 0.15) | (np.arange(N_LABELS) == first[:, None])
    X = rng.random((n_samples, N_FEATURES)) * (rng.random((n_samples, N_FEATURES)) < 0.3)
    X[np.arange(n_samples), first] += 1.0
    return sp.csr_matrix(X, dtype=np.float32), sp.csr_matrix(Y, dtype=np.float32), first


#: name -> (unfitted learner, which targets it fits: label sets or one class per row)
LEARNERS = {
    "ldsm": (lambda: LdSM(n_trees=2, max_nodes=9, epochs=2, random_state=0, n_jobs=-1), "Y"),
    "lomtree": (lambda: LOMTree(epochs=2, beam_width=2, random_state=0, n_jobs=-1), "y"),
    "learned_tree": (lambda: LearnedTree(dim=4, epochs=2, random_state=0, n_jobs=-1), "Y"),
}


@pytest.fixture(params=sorted(LEARNERS))
def fitted(request):
    make, targets = LEARNERS[request.param]
    X, Y, y = problem()
    model = make().fit(X, Y if targets == "Y" else y)
    return model, X


def test_fit_sets_n_features_in(fitted):
    model, X = fitted
    assert model.n_features_in_ == N_FEATURES


def test_predict_top_k_ranks_with_non_negative_scores(fitted):
    model, X = fitted
    labels, scores = model.predict_top_k(X, 3)
    assert labels.shape == scores.shape == (X.shape[0], 3)
    assert np.all((labels >= -1) & (labels < N_LABELS))
    assert np.all(scores >= 0) and np.all(np.diff(scores, axis=1) <= 0)
    # k is capped at the labels there are: a huge k allocates nothing more.
    for k in (N_LABELS + 2, 10**8, 2**63):
        wide, wide_scores = model.predict_top_k(X, k)
        assert wide.shape == wide_scores.shape == (X.shape[0], N_LABELS)
    with pytest.raises(ValueError, match="k must be"):
        model.predict_top_k(X, 0)


def test_results_do_not_depend_on_n_jobs(fitted):
    model, X = fitted
    expected = model.predict_top_k(X, 3)
    model.n_jobs = 1
    for got, want in zip(model.predict_top_k(X, 3), expected):
        np.testing.assert_array_equal(got, want)


def test_save_load_and_pickle_predict_the_same(fitted, tmp_path):
    model, X = fitted
    expected = model.predict_top_k(X, 3)
    model.save(tmp_path / "model.npz")
    for copy in (xmltree.load(tmp_path / "model.npz"), pickle.loads(pickle.dumps(model))):
        assert type(copy) is type(model) and copy.n_features_in_ == model.n_features_in_
        for got, want in zip(copy.predict_top_k(X, 3), expected):
            np.testing.assert_array_equal(got, want)


def test_unfitted_learners_refuse_to_predict():
    X, _, _ = problem()
    for make, _ in LEARNERS.values():
        with pytest.raises(xmltree.NotFittedError):
            make().predict_top_k(X, 3)


def test_renamed_public_names_are_gone(fitted):
    # Nothing was released with them, so no deprecation cycle is owed.
    model, _ = fitted
    assert not hasattr(model, "n_features_") and not hasattr(model, "predict_topk")


# ----------------------------------------------------------------------------- re-ranked


def test_every_learner_can_be_reranked_and_saved_as_one_model(fitted, tmp_path):
    model, X = fitted
    _, Y, _ = problem()
    stage = Reranked(model, Reranker(n_candidates=4, alpha=0.5)).fit(X, Y)
    assert stage.n_features_in_ == N_FEATURES and stage.n_labels_ == N_LABELS
    labels, scores = stage.predict_top_k(X, 3)
    candidates, _ = model.predict_top_k(X, 4)
    for row_labels, row_candidates in zip(labels, candidates):
        assert set(row_labels[row_labels >= 0]) <= set(row_candidates)  # re-ordered candidates
    expected = labels, scores
    stage.save(tmp_path / "stage.npz")
    for copy in (xmltree.load(tmp_path / "stage.npz"), pickle.loads(pickle.dumps(stage))):
        assert isinstance(copy, Reranked) and type(copy.estimator) is type(model)
        for got, want in zip(copy.predict_top_k(X, 3), expected):
            np.testing.assert_array_equal(got, want)


def test_a_stage_needs_a_fitted_learner_of_label_ids():
    X, Y, y = problem()
    with pytest.raises(xmltree.NotFittedError):
        Reranked(LOMTree(), Reranker()).fit(X, Y)
    with pytest.raises(ValueError, match="estimator must be"):
        Reranked(Reranker(), Reranker()).fit(X, Y)
    named = LearnedTree(dim=2, epochs=1).fit(X, np.array(["abcdef"[label] for label in y]))
    with pytest.raises(ValueError, match="not label ids"):
        Reranked(named, Reranker()).fit(X, Y)
    with pytest.raises(xmltree.NotFittedError):
        Reranked(named, Reranker()).predict_top_k(X, 2)
    unfitted = pickle.loads(pickle.dumps(Reranked(named, Reranker(alpha=0.2))))
    assert unfitted.reranker.alpha == 0.2 and not hasattr(unfitted, "reranker_")
