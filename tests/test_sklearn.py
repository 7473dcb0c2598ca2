"""scikit-learn compatibility, with the real scikit-learn objects (skipped without it)."""

import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sklearn")

from sklearn.base import clone  # noqa: E402
from sklearn.feature_extraction.text import TfidfTransformer  # noqa: E402
from sklearn.model_selection import (  # noqa: E402
    GridSearchCV,
    KFold,
    RandomizedSearchCV,
    cross_validate,
)
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.utils import get_tags  # noqa: E402
from sklearn.utils.estimator_checks import check_estimator  # noqa: E402

import xmltree  # noqa: E402
from xmltree import LdSM, LearnedTree, LOMTree, TextClassifier  # noqa: E402
from xmltree.datasets import make_synthetic  # noqa: E402
from xmltree.metrics import (  # noqa: E402
    inverse_propensity,
    precision_at_k,
    psprecision_at_k,
    scorer,
    scorers,
)

DOCS = Path(__file__).resolve().parents[1] / "docs" / "sklearn.rst"


def small_ldsm(**params):
    return LdSM(**{"n_trees": 2, "max_nodes": 15, "epochs": 2, "random_state": 0,
                   "n_jobs": 1, **params})


@pytest.fixture(scope="module")
def data():
    X, Y = make_synthetic(n_samples=300, n_features=60, n_labels=20, avg_labels=2.0,
                          random_state=0)
    return X, Y


def label_lists(Y):
    """The rows of a CSR label matrix as label-id lists (cross_validate refuses sparse y)."""
    return [row.indices for row in Y]


def test_pipeline_with_a_transformer_fits_predicts_and_scores(data):
    X, Y = data
    pipeline = make_pipeline(TfidfTransformer(), small_ldsm()).fit(X, Y)
    labels, _ = pipeline[-1].predict_top_k(pipeline[:-1].transform(X), 1)
    assert pipeline.score(X, Y) == pytest.approx(precision_at_k(Y, labels.astype(np.int64), 1))


def test_clone_copies_parameters_not_the_fit(data):
    X, Y = data
    model = small_ldsm(histogram_weight=0.5).fit(X, Y)
    copy = clone(model)
    assert copy.get_params() == model.get_params() and not copy.__sklearn_is_fitted__()
    assert model.__sklearn_is_fitted__()


def test_grid_search_with_a_p_at_k_scorer(data):
    X, Y = data
    # Histogram leaves, whose precision grows with the tree: a search with a
    # known winner (linear leaves do well at any size).
    search = GridSearchCV(small_ldsm(leaf_model="histogram"), {"max_nodes": [3, 15]},
                          scoring=scorer("P@5"),
                          cv=KFold(3)).fit(X, Y)
    assert search.best_params_ == {"max_nodes": 15}
    train, test = next(KFold(3).split(X))
    fold = small_ldsm(leaf_model="histogram").fit(X[train], Y[train])
    expected = precision_at_k(Y[test], fold.predict_top_k(X[test], 5)[0].astype(np.int64), 5)
    assert search.cv_results_["split0_test_score"][1] == pytest.approx(expected)


def test_randomized_search_tunes_a_learner_inside_a_pipeline(data):
    X, Y = data
    pipeline = make_pipeline(TfidfTransformer(), small_ldsm())
    search = RandomizedSearchCV(pipeline, {"ldsm__max_nodes": [3, 7, 15]}, n_iter=2, cv=2,
                                random_state=0, scoring=scorer("nDCG@3")).fit(X, Y)
    assert search.best_estimator_[-1].max_nodes in (3, 7, 15)
    assert 0 < search.best_score_ <= 1


def test_psp_scorer_takes_propensities_from_the_training_fold(data):
    X, Y = data
    results = cross_validate(small_ldsm(), X, label_lists(Y), cv=KFold(3),
                             scoring=scorers("P@1", "PSP@5"))
    for fold, (train, test) in enumerate(KFold(3).split(X)):
        model = small_ldsm().fit(X[train], Y[train])
        ranking = model.predict_top_k(X[test], 5)[0].astype(np.int64)
        training_fold = psprecision_at_k(Y[test], ranking, inverse_propensity(Y[train]), 5)
        assert results["test_PSP@5"][fold] == pytest.approx(training_fold)
        assert training_fold != pytest.approx(
            psprecision_at_k(Y[test], ranking, inverse_propensity(Y), 5))


def test_fit_records_label_counts_in_every_label_form(data):
    X, Y = data
    expected = np.asarray(Y.sum(axis=0)).ravel()
    for targets in (Y, Y.toarray(), label_lists(Y), iter(label_lists(Y))):
        model = small_ldsm().fit(X, targets)
        np.testing.assert_array_equal(model.train_label_counts_, expected)
        assert model.n_train_samples_ == X.shape[0]


def test_score_is_p_at_1_and_accuracy_for_one_label_per_sample(data):
    X, Y = data
    y = Y.indices[Y.indptr[:-1]]
    model = LOMTree(random_state=0).fit(X, y)
    assert model.score(X, y) == pytest.approx(np.mean(model.predict(X) == y))
    assert scorer("P@1")(model, X, y) == model.score(X, y)
    learned = LearnedTree(dim=4, epochs=1, random_state=0).fit(X, Y)
    assert learned.score(X, y) < 0  # its own score: the mean log-likelihood
    assert 0 <= scorer("P@1")(learned, X, Y) <= 1


def test_propensity_scorers_need_the_training_counts(data, tmp_path):
    X, Y = data
    small_ldsm().fit(X, Y).save(tmp_path / "model.npz")
    loaded = xmltree.load(tmp_path / "model.npz")
    assert scorer("P@3")(loaded, X, Y) > 0
    with pytest.raises(ValueError, match="training label counts"):
        scorer("PSP@3")(loaded, X, Y)
    with pytest.raises(ValueError, match="look like"):
        scorer("P5")
    with pytest.raises(ValueError, match="unknown metric"):
        scorer("F@5")


def test_nested_parameters_of_a_stage_can_be_tuned():
    model = TextClassifier(small_ldsm())
    assert model.get_params()["estimator__max_nodes"] == 15
    model.set_params(estimator__max_nodes=7, ngrams=1)
    assert model.estimator.max_nodes == 7 and model.ngrams == 1
    assert "estimator__max_nodes" not in model.get_params(deep=False)
    with pytest.raises(ValueError, match="invalid parameter 'ngrams__x'"):
        model.set_params(ngrams__x=1)


def test_grid_search_over_a_text_classifier_on_documents():
    rng = np.random.default_rng(0)
    words = {"grain": "wheat corn crop", "oil": "crude barrel opec", "ship": "port cargo"}
    names = [str(rng.choice(sorted(words))) for _ in range(60)]
    texts = [" ".join(rng.choice(words[name].split(), size=5)) for name in names]
    search = GridSearchCV(TextClassifier(small_ldsm(leaf_model="histogram")),
                          {"estimator__max_nodes": [1, 7], "weighting": ["count", "tfidf"]},
                          cv=KFold(2)).fit(texts, names)
    assert search.best_params_["estimator__max_nodes"] == 7
    assert search.best_estimator_.predict(["crude opec"], k=1)[0][0, 0] == "oil"


def test_a_fit_without_targets_is_not_wrapped():
    from xmltree._sklearn import records_label_counts

    def fit(self, X):
        return self

    assert records_label_counts(fit) is fit


def test_tags_describe_the_inputs():
    assert get_tags(small_ldsm()).input_tags.sparse
    assert get_tags(small_ldsm()).estimator_type is None
    assert get_tags(small_ldsm()).target_tags.required
    assert get_tags(LearnedTree()).input_tags.positive_only
    assert get_tags(LearnedTree()).input_tags.string
    assert not get_tags(TextClassifier()).input_tags.two_d_array
    assert small_ldsm()._more_tags()["X_types"] == ["2darray", "sparse"]  # scikit-learn < 1.6


# ----------------------------------------------------------------------------- checks


class OneLabelPerSample(LdSM):
    """LdSM as scikit-learn's checks see it: their one class per sample is a label set."""

    def fit(self, X, Y):
        if isinstance(Y, np.ndarray) and Y.ndim == 1:
            Y = [[label] for label in Y.astype(np.int64)]
        return super().fit(X, Y)


#: Checks that fail for every learner, and why (the list in docs/sklearn.rst).
COMMON_FAILURES = {
    "check_estimators_unfitted": "raises xmltree's NotFittedError, not scikit-learn's class",
    "check_n_features_in_after_fitting": "fewer columns are missing trailing features",
    "check_fit2d_predict1d": "error wording (DataFormatError, not 'Reshape your data')",
    "check_requires_y_none": "error wording for y=None",
    "check_complex_data": "complex X is cast to float instead of refused (to fix, #17)",
    "check_estimators_empty_data_messages": "error wording; LOMTree accepts 0 features and "
                                            "LearnedTree 0 samples (to fix, #17)",
}

#: learner -> (unfitted learner, the checks expected to fail and why).
CHECKED = {
    "ldsm": (OneLabelPerSample(n_trees=2, max_nodes=7, epochs=2, random_state=0, n_jobs=1), {
        **COMMON_FAILURES,
        "check_dtype_object": "malformed X raises DataFormatError (a ValueError), not TypeError",
        "check_estimator_sparse_array": "predict returns the ranking (labels, scores)",
        "check_estimator_sparse_matrix": "predict returns the ranking (labels, scores)",
        "check_methods_sample_order_invariance": "predict returns the ranking (labels, scores)",
    }),
    "lomtree": (LOMTree(random_state=0), {
        **COMMON_FAILURES,
        "check_dtype_object": "error wording for object-dtype y",
    }),
    "learned_tree": (LearnedTree(dim=4, epochs=2, random_state=0), {
        **COMMON_FAILURES,
        "check_positive_only_tag_during_fit": "error wording for negative X",
        "check_dtype_object": "error wording for object-dtype y",
        "check_estimator_sparse_array": "predict returns (n_samples, k) labels",
        "check_estimator_sparse_matrix": "predict returns (n_samples, k) labels",
        "check_estimators_pickle": "kernels refuse read-only (memory-mapped) arrays "
                                   "(to fix, #17)",
    }),
}


@pytest.mark.parametrize("name", sorted(CHECKED))
def test_scikit_learn_estimator_checks(name):
    estimator, expected_failures = CHECKED[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(estimator, expected_failed_checks=expected_failures,
                                  on_fail=None, on_skip=None)
    failed = {r["check_name"] for r in results if r["status"] == "failed"}
    assert not failed
    xfailed = {r["check_name"] for r in results if r["status"] == "xfail"}
    assert xfailed == set(expected_failures), "a check now passes: remove it from the list"
    assert sum(r["status"] == "passed" for r in results) >= 30


def test_every_check_that_fails_is_listed_in_the_docs():
    listed = DOCS.read_text(encoding="utf-8")
    for _, expected_failures in CHECKED.values():
        for check in expected_failures:
            assert f"``{check}``" in listed
