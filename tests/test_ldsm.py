"""Tests of the LdSM estimator: parameters, prediction, persistence, fitting."""

import json
import logging
import mmap
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp
from test_persistence import rewrite_meta
from test_tree import (
    random_features,
    random_flat_tree,
    reference_leaves,
    reference_scores,
    reference_top_k,
    regressor_lengths,
    with_regressor_rows,
)

import xmltree
from xmltree._persistence import save_model
from xmltree._validation import check_features
from xmltree.exceptions import DataFormatError, ModelFormatError, NotFittedError
from xmltree.ldsm import LdSM, _auto_settings, merge
from xmltree.ldsm._auto_settings import (
    EPOCHS,
    FULL_FLOOR_NODES,
    LARGE_TREE_NODES,
    MAX_AUTO_NODES,
    MAX_CUT_ROW_LENGTH,
    MAX_ROW_FEATURES,
    SHORT_ROW_EPOCHS,
    WIDE_DESCENT_MIN_LABELS,
    WIDE_DESCENT_PREDICT_CANDIDATES,
    auto_node_budget,
    auto_weight_floor,
    resolve_epochs,
    resolve_max_row_features,
    resolve_predict_candidates,
    resolve_route_row_features,
)
from xmltree.ldsm._strongest import keep_strongest
from xmltree.rerank import Reranked, Reranker

try:
    from xmltree.ldsm._builder import build_tree  # noqa: F401

    HAVE_BUILD_TREE = True
except ImportError:
    HAVE_BUILD_TREE = False

needs_build_tree = pytest.mark.skipif(not HAVE_BUILD_TREE,
                                      reason="xmltree.ldsm._builder not built")

N_FEATURES, N_LABELS = 20, 30
#: The paper's LdSM: histogram leaves on the features as given.
PAPER = {"leaf_model": "histogram", "feature_scaling": None, "leaf_scores": "distribution"}


def labels_for_the_wide_descent(n_samples):
    """One label a sample, out of enough labels for the wide descent."""
    return sp.csr_matrix((np.ones(n_samples), (np.arange(n_samples), np.arange(n_samples) * 30)),
                         shape=(n_samples, WIDE_DESCENT_MIN_LABELS + 30 * n_samples))


def model_from_random_trees(rng, *, n_trees=3, arity=2, routing="margin"):
    """A fitted LdSM whose trees are random (no training needed)."""
    trees = [random_flat_tree(rng, arity=arity, n_features=N_FEATURES, n_labels=N_LABELS)
             for _ in range(n_trees)]
    model = LdSM(n_trees=n_trees, arity=arity, routing=routing, **PAPER)
    model._set_trees(trees, N_FEATURES, N_LABELS)
    return model, trees


def clustered_problem(rng, n_samples, n_features=30, n_labels=10):
    """Samples around one centre per label; a second label from a fixed
    neighbour with probability 0.3. Returns (X, label lists, main labels)."""
    centres = np.abs(rng.normal(size=(n_labels, n_features))) * (
        rng.random((n_labels, n_features)) < 0.4)
    main = rng.integers(n_labels, size=n_samples)
    X = centres[main] + 0.2 * np.abs(rng.normal(size=(n_samples, n_features)))
    X[rng.random(X.shape) < 0.3] = 0.0
    labels = [[int(m)] + ([int((m + 1) % n_labels)] if rng.random() < 0.3 else [])
              for m in main]
    return sp.csr_matrix(X.astype(np.float32)), labels, main


# ----------------------------------------------------------------------
# Parameters
# ----------------------------------------------------------------------


@pytest.mark.parametrize("name, value", [
    ("n_trees", 0), ("n_trees", 2.0), ("arity", 1), ("arity", 9), ("max_nodes", 0),
    ("epochs", 0), ("epochs", None), ("epochs", "many"), ("lambda1", -0.1),
    ("lambda2", float("nan")), ("learning_rate", 0.0),
    ("learning_rate", "fast"), ("weight_threshold", -1.0), ("optimizer", "adam"),
    ("routing", "hinge"), ("leaf_scores", "mean"), ("leaf_aggregation", "max"),
    ("random_state", -3), ("random_state", 1.5),
    ("n_jobs", 0), ("n_jobs", "all"), ("arity", True), ("max_weights_per_regressor", 0),
    ("max_weights_per_regressor", 10.0), ("max_weights_per_example", 0.0),
    ("max_weights_per_example", "many"), ("max_row_features", 0),
    ("max_row_features", 2.5), ("max_row_features", "all"), ("route_row_features", 0),
    ("route_row_features", 2.5), ("predict_candidates", 0), ("predict_candidates", None),
    ("predict_candidates", "many"),
])
def test_invalid_parameters_are_reported_at_fit(name, value):
    model = LdSM(**{name: value})  # __init__ only stores
    assert getattr(model, name) is value
    with pytest.raises(ValueError, match=name):
        model.fit(np.ones((3, 2)), [[0], [1], [0]])


@pytest.mark.parametrize("arity, lambda1, lambda2, warns", [
    (2, 2.0, 0.0, False), (3, 2.0, 1.0, False), (3, 2.0, 0.0, True), (4, 2.0, 1.0, True),
    (4, 2.0, 2.0, True), (4, 2.0, 2.5, False), (8, 1.0, 5.0, True), (8, 1.0, 6.0, False),
])
def test_fit_warns_when_lemma_2_does_not_hold(arity, lambda1, lambda2, warns):
    # Lemma 2 of the paper: lambda2 / lambda1 > arity - 3.
    import warnings

    model = LdSM(n_trees=1, arity=arity, lambda1=lambda1, lambda2=lambda2, max_nodes=3,
                 epochs=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(np.eye(4), [[0], [1], [0], [1]])
    messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert bool(messages) == warns, messages
    if warns:
        assert "Lemma 2" in messages[0] and f"lambda2 > {lambda1 * (arity - 3)}" in messages[0]


def test_get_set_params_and_repr():
    model = LdSM(n_trees=5, routing="sigmoid")
    params = model.get_params()
    assert params["n_trees"] == 5 and params["arity"] == 2 and len(params) == 30
    assert model.set_params(arity=3, verbose=True) is model
    assert model.arity == 3
    assert repr(model) == "LdSM(n_trees=5, arity=3, routing='sigmoid', verbose=True)"
    assert repr(LdSM()) == "LdSM()"
    with pytest.raises(ValueError, match="invalid parameter 'depth'"):
        model.set_params(depth=3)


# ----------------------------------------------------------------------
# Prediction through the estimator
# ----------------------------------------------------------------------


@pytest.mark.parametrize("method", ["predict", "predict_scores", "leaves_reached", "save"])
def test_unfitted_model_refuses_to_predict(method, tmp_path):
    argument = tmp_path / "m.npz" if method == "save" else np.ones((2, 3))
    with pytest.raises(NotFittedError, match="not fitted"):
        getattr(LdSM(), method)(argument)
    assert issubclass(NotFittedError, ValueError) and issubclass(NotFittedError, AttributeError)


def test_predict_matches_reference_and_scores(rng):
    model, trees = model_from_random_trees(rng, n_trees=3, arity=3)
    X = random_features(rng, 40, N_FEATURES)
    expected, counts = reference_scores(trees, X, 3, 0.5, N_LABELS)
    labels, scores = model.predict(X, k=4)
    expected_labels, expected_scores = reference_top_k(expected, 4)
    np.testing.assert_array_equal(labels, expected_labels)
    np.testing.assert_allclose(scores, expected_scores, rtol=1e-6)
    assert labels.dtype == np.int32 and scores.dtype == np.float32
    np.testing.assert_allclose(model.predict_scores(X).toarray(), expected, rtol=1e-6,
                               atol=1e-7)
    np.testing.assert_array_equal(model.leaves_reached(X), counts)


@pytest.mark.parametrize("k", [0, -1, 2.5, True, "3"])
def test_invalid_k(rng, k):
    model, _ = model_from_random_trees(rng)
    with pytest.raises(ValueError, match="k must be"):
        model.predict(np.ones((1, N_FEATURES)), k=k)


def test_feature_count_is_checked(rng):
    model, _ = model_from_random_trees(rng)
    with pytest.raises(DataFormatError, match="fitted with 20"):
        model.predict(np.ones((2, N_FEATURES + 1)))
    narrow = np.ones((2, N_FEATURES - 4), dtype=np.float32)
    wide = np.hstack([narrow, np.zeros((2, 4), dtype=np.float32)])
    np.testing.assert_array_equal(model.predict(narrow)[0], model.predict(wide)[0])


def test_n_jobs_does_not_change_predictions(rng):
    model, _ = model_from_random_trees(rng, n_trees=4)
    X = random_features(rng, 300, N_FEATURES)
    serial = model.set_params(n_jobs=1).predict(X, k=6)
    parallel = model.set_params(n_jobs=-1).predict(X, k=6)
    np.testing.assert_array_equal(serial[0], parallel[0])
    np.testing.assert_array_equal(serial[1], parallel[1])


def test_fitted_attributes_and_objective_trace(rng):
    model, trees = model_from_random_trees(rng, n_trees=2)
    np.testing.assert_array_equal(model.n_nodes_, [t["first_child"].size for t in trees])
    np.testing.assert_array_equal(model.n_leaves_, [np.sum(t["first_child"] < 0) for t in trees])
    np.testing.assert_array_equal(model.depth_, [t["depth"].max() for t in trees])
    assert model.n_features_in_ == N_FEATURES and model.n_labels_ == N_LABELS
    with pytest.raises(ValueError, match="read-only"):
        model.trees_[0]["weight_values"][0] = 1.0
    tree = trees[1]
    np.testing.assert_array_equal(model.objective_trace(1, 0),
                                  tree["trace_values"][:tree["trace_indptr"][1]])
    leaf = int(np.flatnonzero(tree["first_child"] < 0)[0])
    assert model.objective_trace(1, leaf).size == 0
    with pytest.raises(ValueError, match="node must be"):
        model.objective_trace(1, tree["first_child"].size)
    with pytest.raises(ValueError, match="tree must be"):
        model.objective_trace(2, 0)


# ----------------------------------------------------------------------
# Persistence
# ----------------------------------------------------------------------


def test_save_load_round_trip_is_bit_identical(rng, tmp_path):
    model, _ = model_from_random_trees(rng, n_trees=3, arity=4, routing="sigmoid")
    model.set_params(random_state=7, lambda1=np.float64(1.5))
    path = tmp_path / "model.npz"
    model.save(path)
    loaded = LdSM.load(path)
    assert loaded.get_params() == model.get_params()
    for original, restored in zip(model.trees_, loaded.trees_):
        for name, array in original.items():
            assert restored[name].dtype == array.dtype
            np.testing.assert_array_equal(restored[name], array)
    X = random_features(rng, 50, N_FEATURES)
    for a, b in zip(model.predict(X, k=5), loaded.predict(X, k=5)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(model.predict_scores(X).toarray(),
                                  loaded.predict_scores(X).toarray())


def _state(rng):
    model, _ = model_from_random_trees(rng, n_trees=2)
    params, arrays = model._get_state()
    return params, {name: array.copy() for name, array in arrays.items()}


def _bad_weight_index(params, arrays):
    arrays["tree0/weight_indices"][0] = 10**6


def _bad_label(params, arrays):
    arrays["tree1/leaf_labels"][-1] = N_LABELS


def _negative_child(params, arrays):
    arrays["tree0/first_child"][0] = -5


def _float64_weights(params, arrays):
    arrays["tree0/weight_values"] = arrays["tree0/weight_values"].astype(np.float64)


def _missing_array(params, arrays):
    del arrays["tree1/bias"]


def _extra_array(params, arrays):
    arrays["tree2/bias"] = arrays["tree1/bias"]


def _bad_hyper_parameter(params, arrays):
    params["hyper_parameters"]["arity"] = 1


def _unknown_hyper_parameter(params, arrays):
    params["hyper_parameters"]["depth"] = 4


def _bad_row_features(params, arrays):
    params["resolved"]["max_row_features"] = 0


def _bad_route_features(params, arrays):
    params["resolved"]["route_row_features"] = -3


def _unresolved_route_features(params, arrays):
    params["resolved"]["route_row_features"] = "auto"


def _unresolved_descent(params, arrays):
    params["resolved"]["descent_threshold"] = "auto"


def _unresolved_candidates(params, arrays):
    params["resolved"]["n_candidates"] = "auto"


def _missing_resolved(params, arrays):
    del params["resolved"]


def _linear_leaves_without_classifiers(params, arrays):
    params["resolved"]["leaf_model"] = "linear"


def _unknown_leaf_model(params, arrays):
    params["resolved"]["leaf_model"] = "forest"


def _bad_n_features(params, arrays):
    params["n_features"] = -2


def _fewer_features(params, arrays):
    params["n_features"] = 3  # stored weight indices go up to 19


def _missing_params(params, arrays):
    del params["hyper_parameters"]


def _frequency_above_one(params, arrays):
    params["hyper_parameters"]["leaf_scores"] = "frequency"
    arrays["tree0/leaf_values"][0] = 1.5


@pytest.mark.parametrize("tamper", [
    _bad_weight_index, _bad_label, _negative_child, _float64_weights, _missing_array,
    _extra_array, _bad_hyper_parameter, _unknown_hyper_parameter, _bad_n_features,
    _fewer_features, _missing_params, _frequency_above_one, _bad_row_features,
    _bad_route_features, _unresolved_route_features,
    _unresolved_descent, _unresolved_candidates, _missing_resolved,
    _linear_leaves_without_classifiers, _unknown_leaf_model,
])
def test_tampered_model_contents_are_refused(rng, tmp_path, tamper):
    params, arrays = _state(rng)
    tamper(params, arrays)
    path = tmp_path / "tampered.npz"
    save_model(path, LdSM._KIND, params, arrays)
    with pytest.raises(ModelFormatError):
        LdSM.load(path)


def version_3_state(model, reranker=None):
    """What an LdSM of format version 3 stored: settings as given, the routing
    features at the top, and a re-ranker of ``LdSM(rerank=...)`` inside."""
    params, arrays = model._get_state()
    resolved = params.pop("resolved")
    params.pop("leaves")
    params["max_row_features"] = resolved["max_row_features"]
    if reranker is not None:
        params["hyper_parameters"]["rerank"] = True
        params["reranker"], reranker_arrays = reranker._get_state()
        arrays = {**arrays, **reranker_arrays}
    return params, arrays


def assert_same_predictions(a, b, X, k=4):
    for x, y in zip(a.predict_top_k(X, k), b.predict_top_k(X, k)):
        np.testing.assert_array_equal(x, y)


def test_older_files_with_a_reranker_load_as_a_reranked_stage(rng, tmp_path):
    from test_rerank import first_layout, second_layout, write_version_1

    model, _ = model_from_random_trees(rng)
    X = random_features(rng, 50, N_FEATURES)
    Y = sp.csr_matrix(rng.random((50, N_LABELS)) < 0.2, dtype=np.float32)
    reranker = Reranker(propensity_exponent=1.0).fit(X, Y, n_labels=N_LABELS)
    stage = Reranked(model, reranker)
    stage.reranker_ = reranker
    params, arrays = version_3_state(model, reranker)
    path = tmp_path / "model.npz"
    save_model(path, "ldsm", params, arrays)
    rewrite_meta(path, format_version=3)
    for load in (xmltree.load, LdSM.load):
        loaded = load(path)
        assert isinstance(loaded, Reranked) and isinstance(loaded.estimator, LdSM)
        assert_same_predictions(stage, loaded, X)
    # Version 1: without a re-ranker, or with the re-ranker's later layout,
    # they hold what later files hold.
    plain_params, plain_arrays = version_3_state(model)
    write_version_1(path, "ldsm", plain_params, plain_arrays)
    assert_same_predictions(model, xmltree.load(path), X)
    write_version_1(path, "ldsm", {**params, "reranker": second_layout(params["reranker"])},
                    arrays)
    assert_same_predictions(stage, xmltree.load(path), X)
    # A re-ranker of the first layout cannot be rebuilt: refused, with a remedy.
    old_reranker, old_arrays = first_layout(params["reranker"], arrays)
    write_version_1(path, "ldsm", {**params, "reranker": old_reranker},
                    {**plain_arrays, **old_arrays})
    for load in (xmltree.load, LdSM.load):
        with pytest.raises(ModelFormatError, match=r"format version 1\).*train the model again"):
            load(path)


@needs_build_tree
def test_files_of_format_version_5_predict_as_they_did(rng, tmp_path):
    # Version 5 had no route_row_features nor predict_candidates: rows routed
    # by max_row_features, the n_candidates best labels re-scored.
    X, labels, _ = clustered_problem(rng, 80)
    Y_wide = labels_for_the_wide_descent(X.shape[0])
    model = LdSM(**FAST, max_row_features=4, n_candidates=20, random_state=3).fit(X, Y_wide)
    assert model.route_row_features_ is None
    assert model.resolved_params_["predict_candidates"] == WIDE_DESCENT_PREDICT_CANDIDATES
    path = tmp_path / "model.npz"
    model.save(path)
    with np.load(path) as archive:
        params = json.loads(archive["__meta__"].tobytes())["params"]
    for section in ("hyper_parameters", "resolved"):
        del params[section]["route_row_features"], params[section]["predict_candidates"]
    rewrite_meta(path, params=params, format_version=5)
    loaded = LdSM.load(path)
    assert (loaded.route_row_features, loaded.route_row_features_) == (4, 4)
    assert (loaded.predict_candidates, loaded.resolved_params_["predict_candidates"]) == (20, 20)
    routed_cut = LdSM(**FAST, max_row_features=4, route_row_features=4, n_candidates=20,
                      predict_candidates=20, random_state=3).fit(X, Y_wide)
    np.testing.assert_array_equal(loaded.predict_scores(X).toarray(),
                                  routed_cut.predict_scores(X).toarray())
    assert not np.array_equal(loaded.predict_scores(X).toarray(),
                              model.predict_scores(X).toarray())


def test_files_of_format_version_4_load_their_trees_regressor_by_regressor(rng, tmp_path):
    model, _ = model_from_random_trees(rng)
    X = random_features(rng, 50, N_FEATURES)
    Y = sp.csr_matrix(rng.random((50, N_LABELS)) < 0.2, dtype=np.float32)
    stage = Reranked(model, Reranker())
    stage.reranker_ = Reranker().fit(X, Y, n_labels=N_LABELS)
    for saved, load in ((model, LdSM.load), (stage, Reranked.load)):
        path = tmp_path / "model.npz"
        saved.save(path)
        rewrite_meta(path, format_version=4)
        with np.load(path) as stored:
            names = [name for name in stored.files if name.endswith("weight_values")]
            assert names and all(stored[name].ndim == 1 for name in names)
        for loaded in (load(path), xmltree.load(path)):
            assert_same_predictions(saved, loaded, X)
            learner = loaded.estimator if isinstance(loaded, Reranked) else loaded
            for a, b in zip(model.trees_, learner.trees_):
                for name in ("weight_indptr", "weight_indices", "weight_values"):
                    np.testing.assert_array_equal(a[name], b[name])


def test_files_of_format_version_4_with_malformed_weights_are_refused(rng, tmp_path):
    model, _ = model_from_random_trees(rng)
    params, arrays = model._get_state()
    arrays = with_regressor_rows(arrays)
    indices = arrays["tree1/weight_indices"]
    indices[:2] = indices[1::-1]  # unsorted within the root's first regressor
    path = tmp_path / "model.npz"
    save_model(path, LdSM._KIND, params, arrays)
    rewrite_meta(path, format_version=4)
    with pytest.raises(ModelFormatError, match="tree1.*unsorted"):
        LdSM.load(path)


def test_format_2_files_from_before_the_logistic_scorer_load(rng, tmp_path):
    from test_rerank import before_logistic

    model, _ = model_from_random_trees(rng)
    X = random_features(rng, 50, N_FEATURES)
    Y = sp.csr_matrix(rng.random((50, N_LABELS)) < 0.2, dtype=np.float32)
    reranker = Reranker(tail_scorer="ridge", propensity_exponent=1.5).fit(X, Y,
                                                                          n_labels=N_LABELS)
    params, arrays = version_3_state(model, reranker)
    params["reranker"] = before_logistic(params["reranker"])
    path = tmp_path / "model.npz"
    save_model(path, "ldsm", params, arrays)
    rewrite_meta(path, format_version=2)
    loaded = LdSM.load(path)
    assert loaded.reranker_.logistic_penalty == Reranker().logistic_penalty
    stage = Reranked(model, reranker)
    stage.reranker_ = reranker
    assert_same_predictions(stage, loaded, X)


def test_damaged_model_files_are_refused(rng, tmp_path):
    model, _ = model_from_random_trees(rng)
    path = tmp_path / "model.npz"
    model.save(path)
    good = path.read_bytes()

    path.write_bytes(good[: len(good) // 2])
    with pytest.raises(ModelFormatError):
        LdSM.load(path)

    path.write_bytes(good)
    rewrite_meta(path, format_version=999)
    with pytest.raises(ModelFormatError, match="version"):
        LdSM.load(path)

    path.write_bytes(good)
    rewrite_meta(path, kind="lomtree")
    with pytest.raises(ModelFormatError, match="lomtree"):
        LdSM.load(path)

    # An object array would need pickle to load: it must be refused, not run.
    path.write_bytes(good)
    with zipfile.ZipFile(path, "a") as archive:
        with archive.open("tree0/sneaky.npy", "w") as handle:
            np.lib.format.write_array(handle, np.array([{"a": 1}], dtype=object),
                                      allow_pickle=True)
    with pytest.raises(ModelFormatError):
        LdSM.load(path)


# ----------------------------------------------------------------------
# Fitting (needs the compiled trainer)
# ----------------------------------------------------------------------


def test_unusable_training_data_is_an_error():
    with pytest.raises(DataFormatError, match="no training sample has a label"):
        LdSM().fit(np.ones((3, 4)), [[], [], []])
    with pytest.raises(DataFormatError, match="no features"):
        LdSM().fit(np.ones((3, 0)), [[0], [1], [0]])
    with pytest.raises(DataFormatError, match="rows but X has"):
        LdSM().fit(np.ones((3, 2)), [[0], [1]])


FAST = {"n_trees": 3, "max_nodes": 31, "epochs": 4, **PAPER}


@needs_build_tree
def test_fit_beats_most_frequent_baseline(rng):
    X, labels, main = clustered_problem(rng, 500)
    X_test, labels_test, main_test = clustered_problem(np.random.default_rng(0), 200)
    model = LdSM(**FAST, random_state=0).fit(X, labels)
    predicted, _ = model.predict(X_test, k=1)
    precision = np.mean([p in truth for p, truth in zip(predicted[:, 0], labels_test)])
    counts = np.bincount(np.concatenate(labels), minlength=model.n_labels_)
    baseline = np.mean([int(np.argmax(counts)) in truth for truth in labels_test])
    assert precision > max(0.5, baseline + 0.2), (precision, baseline)
    assert np.all(model.leaves_reached(X_test) >= 1)
    sums = np.asarray(model.predict_scores(X_test).sum(axis=1)).ravel()
    np.testing.assert_allclose(sums, 1.0, rtol=1e-5)
    assert np.all(model.n_nodes_ <= FAST["max_nodes"]) and np.all(model.depth_ >= 1)


@needs_build_tree
def test_frequency_leaves_score_label_frequencies_and_are_saved(rng, tmp_path):
    X, labels, _ = clustered_problem(rng, 300)
    model = LdSM(**{**FAST, "leaf_scores": "frequency"}, random_state=0).fit(X, labels)
    distribution = LdSM(**FAST, random_state=0).fit(X, labels)
    for a, b in zip(model.trees_, distribution.trees_):
        np.testing.assert_array_equal(a["weight_values"], b["weight_values"])
        assert np.all(a["leaf_values"] <= 1)
    # A training row has 1.3 labels on average, so frequency scores sum to more than 1.
    sums = np.asarray(model.predict_scores(X).sum(axis=1)).ravel()
    assert np.all(sums >= 1 - 1e-5) and sums.mean() > 1.1
    path = tmp_path / "frequency.npz"
    model.save(path)
    loaded = LdSM.load(path)
    assert loaded.leaf_scores == "frequency"
    np.testing.assert_array_equal(loaded.predict(X)[1], model.predict(X)[1])


def test_files_without_leaf_settings_load_as_averaged_distributions(rng, tmp_path):
    params, arrays = _state(rng)
    del params["hyper_parameters"]["leaf_scores"]
    del params["hyper_parameters"]["leaf_aggregation"]
    del params["resolved"], params["leaves"]
    path = tmp_path / "older.npz"
    save_model(path, LdSM._KIND, params, arrays)
    rewrite_meta(path, format_version=3)
    loaded = LdSM.load(path)
    assert loaded.leaf_scores == "distribution" and loaded.leaf_aggregation == "mean"


def test_summed_leaves_are_saved_and_change_only_the_scores(rng, tmp_path):
    model, _ = model_from_random_trees(rng, n_trees=3, arity=3)
    X = random_features(rng, 60, model.n_features_in_)
    # merge rebuilds the forest with the prediction settings of set_params.
    summed = merge([model.set_params(leaf_aggregation="sum")])
    counts = summed.leaves_reached(X)
    np.testing.assert_array_equal(counts, model.leaves_reached(X))
    # Distribution leaves: a summing tree contributes its leaf count.
    sums = np.asarray(summed.predict_scores(X).sum(axis=1)).ravel()
    np.testing.assert_allclose(sums, counts.mean(axis=1), rtol=1e-5)
    path = tmp_path / "summed.npz"
    summed.save(path)
    loaded = LdSM.load(path)
    assert loaded.leaf_aggregation == "sum"
    np.testing.assert_array_equal(loaded.predict(X)[1], summed.predict(X)[1])


@needs_build_tree
def test_fit_is_deterministic_across_n_jobs(rng):
    X, labels, _ = clustered_problem(rng, 200)
    one = LdSM(**FAST, random_state=3, n_jobs=1).fit(X, labels)
    two = LdSM(**FAST, random_state=3, n_jobs=2).fit(X, labels)
    other = LdSM(**FAST, random_state=4, n_jobs=2).fit(X, labels)
    for a, b in zip(one.trees_, two.trees_):
        for name in a:
            np.testing.assert_array_equal(a[name], b[name])
    assert any(not np.array_equal(a["bias"], b["bias"]) for a, b in
               zip(one.trees_, other.trees_))


@needs_build_tree
def test_weight_budget_bounds_every_regressor(rng):
    X, labels, _ = clustered_problem(rng, 200)
    free = LdSM(**FAST, random_state=3, max_weights_per_regressor=None,
                max_weights_per_example=None).fit(X, labels)
    arity = FAST.get("arity", 2)
    largest = max(regressor_lengths(tree, arity).max() for tree in free.trees_)
    capped = LdSM(**FAST, random_state=3, max_weights_per_regressor=largest - 2,
                  max_weights_per_example=None).fit(X, labels)
    assert max(regressor_lengths(tree, arity).max() for tree in capped.trees_) == largest - 2
    per_example = LdSM(**FAST, random_state=3, max_weights_per_regressor=None,
                       max_weights_per_example=0.05).fit(X, labels)
    for tree in per_example.trees_:
        budget = np.maximum(1, np.floor(0.05 * tree["n_samples"]))
        assert np.all(regressor_lengths(tree, arity) <= budget[:, None])
    # The default budget never binds with n_features <= 2048.
    default = LdSM(**FAST, random_state=3).fit(X, labels)
    for a, b in zip(free.trees_, default.trees_):
        for name in a:
            np.testing.assert_array_equal(a[name], b[name])


def test_auto_weight_floor_shrinks_beyond_the_full_floor_nodes():
    assert auto_weight_floor(2048, FULL_FLOOR_NODES) == 2048
    assert auto_weight_floor(2048, 4 * FULL_FLOOR_NODES) == 512
    assert auto_weight_floor(2048, 3 * FULL_FLOOR_NODES) == 682
    assert auto_weight_floor(3, 10**9) == 1
    assert auto_weight_floor(None, 10**9) is None
    # The node cap is where the floor has shrunk to a half.
    assert auto_node_budget(10**9, 2) == MAX_AUTO_NODES == 2 * FULL_FLOOR_NODES


def test_trees_that_take_fewer_wide_branches_can_keep_the_full_floor():
    # The Amazon-670K shape's trees at scale 1 (98,089 nodes) keep two thirds
    # of the floor: a third starved their routers.
    assert auto_weight_floor(2048, LARGE_TREE_NODES + 1) == 2048
    assert auto_weight_floor(2048, 98089) == 1368


@needs_build_tree
def test_auto_node_budget_shrinks_the_weight_floor(rng, monkeypatch):
    X, labels, _ = clustered_problem(rng, 200)
    settings = dict(n_trees=2, epochs=2, random_state=3, max_weights_per_example=None,
                    max_weights_per_regressor=40, feature_scaling=None)
    n_labels = 1 + max(max(row) for row in labels)
    n_nodes = auto_node_budget(X.shape[0], 2, n_labels)
    monkeypatch.setattr(_auto_settings, "FULL_FLOOR_NODES", n_nodes // 4)
    floor = auto_weight_floor(40, n_nodes)
    assert floor < 40
    auto = LdSM(**settings).fit(X, labels)
    assert max(regressor_lengths(tree, 2).max() for tree in auto.trees_) <= floor
    # A node budget of the user's own keeps the floor as given.
    given = LdSM(**settings, max_nodes=n_nodes).fit(X, labels)
    assert max(regressor_lengths(tree, 2).max() for tree in given.trees_) > floor


@needs_build_tree
def test_trees_share_the_forest_arrays(rng):
    X, labels, _ = clustered_problem(rng, 200)
    model = LdSM(**FAST, random_state=3).fit(X, labels)
    forest = model._forest
    for name in ("weight_indices", "weight_values", "leaf_labels", "leaf_values", "bias"):
        for tree in model.trees_:
            assert np.shares_memory(tree[name], getattr(forest, name)), name
            assert not tree[name].flags.writeable


def mapped_from_file(array):
    """True if ``array``'s memory belongs to a memory-mapped file."""
    while array is not None:
        if isinstance(array, (np.memmap, mmap.mmap)):
            return True
        array = getattr(array, "base", None)
    return False


@needs_build_tree
def test_memory_mapped_training_data_is_used_in_place(rng, tmp_path):
    from xmltree._validation import check_features, check_labels
    from xmltree.datasets import open_csr_npy, write_csr_npy

    X, labels, _ = clustered_problem(rng, 200)
    Y = check_labels(labels)
    write_csr_npy(tmp_path / "X", X)
    write_csr_npy(tmp_path / "Y", Y)
    X_map, Y_map = open_csr_npy(tmp_path / "X"), open_csr_npy(tmp_path / "Y")
    for array in (X_map.data, X_map.indices, Y_map.indices):
        assert mapped_from_file(array)
    for checked, mapped in ((check_features(X_map), X_map), (check_labels(Y_map), Y_map)):
        assert np.shares_memory(checked.data, mapped.data)
        assert np.shares_memory(checked.indices, mapped.indices)
    in_memory = LdSM(**FAST, random_state=3).fit(X, labels)
    mapped = LdSM(**FAST, random_state=3).fit(X_map, Y_map)
    for a, b in zip(in_memory.trees_, mapped.trees_):
        for name in a:
            np.testing.assert_array_equal(a[name], b[name])
    np.testing.assert_array_equal(mapped.predict(X_map)[0], in_memory.predict(X)[0])


@needs_build_tree
def test_unlabelled_samples_are_dropped(rng, caplog):
    X, labels, _ = clustered_problem(rng, 150)
    extra = random_features(rng, 20, X.shape[1])
    with caplog.at_level(logging.INFO, logger="xmltree.ldsm"):
        padded = LdSM(**FAST, random_state=1).fit(sp.vstack([X, extra]),
                                                  labels + [[]] * 20)
    assert "dropping 20 of 170" in caplog.text
    plain = LdSM(**FAST, random_state=1).fit(X, labels)
    for a, b in zip(plain.trees_, padded.trees_):
        np.testing.assert_array_equal(a["weight_values"], b["weight_values"])
        np.testing.assert_array_equal(a["leaf_labels"], b["leaf_labels"])


@needs_build_tree
def test_verbose_fit_and_indicator_labels(rng, tmp_path):
    X, labels, _ = clustered_problem(rng, 120)
    indicator = np.zeros((120, 10), dtype=np.float32)
    for i, row in enumerate(labels):
        indicator[i, row] = 1
    from_lists = LdSM(**FAST, random_state=2).fit(X, labels)
    from_matrix = LdSM(**FAST, random_state=2, verbose=True).fit(X.toarray(), indicator)
    for a, b in zip(from_lists.trees_, from_matrix.trees_):
        np.testing.assert_array_equal(a["leaf_values"], b["leaf_values"])
    from_matrix.save(tmp_path / "fitted.npz")
    restored = LdSM.load(tmp_path / "fitted.npz")
    np.testing.assert_array_equal(restored.predict(X)[0], from_matrix.predict(X)[0])


@needs_build_tree
@pytest.mark.parametrize("routing", ["margin", "sigmoid"])
def test_training_examples_follow_their_training_path(rng, routing):
    # Prediction must route exactly as training did (the _routing.pxd
    # contract): descending the training set reaches every leaf with as many
    # examples as training sent there.
    X, labels, _ = clustered_problem(rng, 200)
    model = LdSM(**FAST, routing=routing, random_state=5).fit(X, labels)
    dense = X.toarray()
    threshold = 0.5 if routing == "margin" else 0.0
    for tree in model.trees_:
        reached = np.zeros(tree["first_child"].size, dtype=np.int64)
        for x in dense:
            for leaf in reference_leaves(tree, x, model.arity, threshold):
                reached[leaf] += 1
        leaves = tree["first_child"] < 0
        np.testing.assert_array_equal(reached[leaves], tree["n_samples"][leaves])


@needs_build_tree
def test_trees_grow_and_route_on_each_rows_strongest_features(rng, tmp_path):
    # Rows of about 15 features, cut to their 4 strongest for the trees only.
    X, labels, _ = clustered_problem(rng, 150)
    cut = LdSM(**FAST, max_row_features=4, random_state=2).fit(X, labels)
    X_cut = keep_strongest(check_features(X), 4)
    grown_on_cut = LdSM(**FAST, max_row_features=None, random_state=2).fit(X_cut, labels)
    for a, b in zip(cut.trees_, grown_on_cut.trees_):
        for name in a:
            np.testing.assert_array_equal(a[name], b[name])
    # Examples route by their strongest features, so the training rows
    # follow their training paths (the reference descends the cut rows).
    assert cut.max_row_features_ == cut.route_row_features_ == 4
    dense_cut = X_cut.toarray()
    for tree in cut.trees_:
        reached = np.zeros(tree["first_child"].size, dtype=np.int64)
        for x in dense_cut:
            for leaf in reference_leaves(tree, x, cut.arity, 0.5):
                reached[leaf] += 1
        leaves = tree["first_child"] < 0
        np.testing.assert_array_equal(reached[leaves], tree["n_samples"][leaves])
    np.testing.assert_array_equal(cut.predict_scores(X).toarray(),
                                  cut.predict_scores(X_cut).toarray())
    np.testing.assert_array_equal(cut.leaves_reached(X), grown_on_cut.leaves_reached(X_cut))
    cut.save(tmp_path / "model.npz")
    loaded = LdSM.load(tmp_path / "model.npz")
    assert (loaded.max_row_features, loaded.max_row_features_, loaded.route_row_features_) == (
        4, 4, 4)
    np.testing.assert_array_equal(loaded.predict_scores(X).toarray(),
                                  cut.predict_scores(X).toarray())


@needs_build_tree
def test_label_classifiers_see_every_feature_of_a_cut_row(rng):
    X, labels, _ = clustered_problem(rng, 150)
    model = LdSM(n_trees=2, max_nodes=15, max_row_features=4, feature_scaling=None,
                 random_state=2).fit(X, labels)
    X_cut = keep_strongest(check_features(X), 4)
    assert np.array_equal(model.leaves_reached(X), model.leaves_reached(X_cut))
    assert not np.array_equal(model.predict_scores(X).toarray(),
                              model.predict_scores(X_cut).toarray())


@needs_build_tree
def test_trees_grown_on_cut_rows_can_route_rows_whole(rng, tmp_path):
    X, labels, _ = clustered_problem(rng, 150)
    cut = LdSM(**FAST, max_row_features=4, random_state=2).fit(X, labels)
    whole = LdSM(**FAST, max_row_features=4, route_row_features=None, random_state=2).fit(
        X, labels)
    for a, b in zip(cut.trees_, whole.trees_):
        for name in a:
            np.testing.assert_array_equal(a[name], b[name])
    assert (whole.max_row_features_, whole.route_row_features_) == (4, None)
    # The reference descends the rows as given, every feature of them.
    dense = check_features(X).toarray()
    expected = [[len(reference_leaves(tree, x, whole.arity, 0.5)) for tree in whole.trees_]
                for x in dense]
    np.testing.assert_array_equal(whole.leaves_reached(X), expected)
    # Histogram leaves score by where a row lands: the cut row lands elsewhere.
    X_cut = keep_strongest(check_features(X), 4)
    assert not np.array_equal(whole.predict_scores(X).toarray(),
                              whole.predict_scores(X_cut).toarray())
    whole.save(tmp_path / "model.npz")
    loaded = LdSM.load(tmp_path / "model.npz")
    assert (loaded.route_row_features, loaded.route_row_features_) == (None, None)
    np.testing.assert_array_equal(loaded.predict_scores(X).toarray(),
                                  whole.predict_scores(X).toarray())


def test_prediction_rescores_more_candidates_under_the_wide_descent():
    assert resolve_predict_candidates("auto", 200, 0.5, 0.5, 10**6) == 200
    assert resolve_predict_candidates("auto", 1000, 0.05, 0.5, 10**6) == (
        WIDE_DESCENT_PREDICT_CANDIDATES)
    assert resolve_predict_candidates("auto", 1000, 0.05, 0.5, 900) == 900
    assert resolve_predict_candidates(30, 1000, 0.05, 0.5, 900) == 30
    assert resolve_predict_candidates(3000, 10, 0.5, 0.5, 900) == 900


@needs_build_tree
def test_predict_candidates_change_prediction_not_training(rng):
    X, labels, _ = clustered_problem(rng, 80)
    Y_wide = labels_for_the_wide_descent(X.shape[0])
    linear = {**FAST, "leaf_model": "linear", "n_candidates": 20, "random_state": 5}
    few = LdSM(**linear, predict_candidates=3).fit(X, Y_wide)
    many = LdSM(**linear, predict_candidates=60).fit(X, Y_wide)
    assert (few._forest.n_candidates, many._forest.n_candidates) == (3, 60)
    np.testing.assert_array_equal(few.label_weights_.toarray(), many.label_weights_.toarray())
    np.testing.assert_array_equal(few.label_bias_, many.label_bias_)
    # Only the 3 best labels by histogram get a score; the 60 best include them.
    few_scores, many_scores = few.predict_scores(X), many.predict_scores(X)
    assert np.diff(few_scores.indptr).max() <= 3
    assert np.diff(many_scores.indptr).max() > 3
    rows, cols = few_scores.nonzero()
    np.testing.assert_allclose(np.asarray(few_scores[rows, cols]).ravel(),
                               np.asarray(many_scores[rows, cols]).ravel(), rtol=1e-6)


def test_rows_route_as_they_grew_the_trees_unless_the_descent_is_wide():
    assert resolve_route_row_features("auto", 48, 0.5, 0.5) == 48
    assert resolve_route_row_features("auto", None, 0.5, 0.5) is None
    assert resolve_route_row_features("auto", 48, 0.05, 0.5) is None  # wide descent
    assert resolve_route_row_features(7, 48, 0.05, 0.5) == 7
    assert resolve_route_row_features(None, 48, 0.5, 0.5) is None


def test_long_rows_grow_cut_trees_unless_large_or_very_long_under_the_wide_descent():
    long_rows = 10 * MAX_ROW_FEATURES + 1
    small, large = LARGE_TREE_NODES, LARGE_TREE_NODES + 1
    assert resolve_max_row_features("auto", 10, long_rows, small, 0.5, 0.5) == MAX_ROW_FEATURES
    assert resolve_max_row_features("auto", 10, long_rows - 1, small, 0.5, 0.5) is None
    assert resolve_max_row_features("auto", 10, long_rows, small, 0.05, 0.5) == MAX_ROW_FEATURES
    assert resolve_max_row_features("auto", 10, long_rows, large, 0.05, 0.5) is None
    assert resolve_max_row_features("auto", 10, long_rows, large, 0.5, 0.5) == MAX_ROW_FEATURES
    very_long = 10 * MAX_CUT_ROW_LENGTH
    assert resolve_max_row_features("auto", 10, very_long, small, 0.05, 0.5) == MAX_ROW_FEATURES
    assert resolve_max_row_features("auto", 10, very_long + 1, small, 0.05, 0.5) is None
    assert resolve_max_row_features("auto", 10, very_long + 1, large, 0.5, 0.5) == MAX_ROW_FEATURES
    assert resolve_max_row_features(5, 10, 0, large, 0.05, 0.5) == 5
    assert resolve_max_row_features(None, 10, long_rows, small, 0.5, 0.5) is None


@needs_build_tree
def test_long_rows_grow_cut_trees_by_default_and_route_whole_under_the_wide_descent(rng):
    X, labels, _ = clustered_problem(rng, 80, n_features=3 * MAX_ROW_FEATURES)  # ~100 a row
    X_cut = keep_strongest(check_features(X), MAX_ROW_FEATURES)
    expected = LdSM(**FAST, max_row_features=None, random_state=4).fit(X_cut, labels)
    auto = LdSM(**FAST, random_state=4).fit(X, labels)
    np.testing.assert_array_equal(auto.trees_[0]["weight_values"],
                                  expected.trees_[0]["weight_values"])
    assert auto.route_row_features_ == MAX_ROW_FEATURES
    # Over many labels the descent is the wide one: the same cut trees, rows routed whole.
    Y_wide = labels_for_the_wide_descent(X.shape[0])
    wide = LdSM(**FAST, random_state=4).fit(X, Y_wide)
    assert (wide.max_row_features_, wide.route_row_features_) == (MAX_ROW_FEATURES, None)
    assert wide._forest.route_row_features == 0
    as_trained = LdSM(**FAST, descent_threshold=None, random_state=4).fit(X, Y_wide)
    assert as_trained.route_row_features_ == MAX_ROW_FEATURES
    may_grow_large = LdSM(**{**FAST, "max_nodes": LARGE_TREE_NODES + 1}).fit(X, Y_wide)
    assert (may_grow_large.max_row_features_, may_grow_large.route_row_features_) == (None, None)


def test_auto_epochs_are_more_for_short_rows_under_the_training_rule():
    short_rows = 10 * MAX_ROW_FEATURES - 1
    assert resolve_epochs("auto", 10, short_rows, 0.5, 0.5) == SHORT_ROW_EPOCHS
    assert resolve_epochs("auto", 10, short_rows + 1, 0.5, 0.5) == EPOCHS
    assert resolve_epochs("auto", 10, short_rows, 0.05, 0.5) == EPOCHS  # wide descent
    assert resolve_epochs(7, 10, short_rows, 0.5, 0.5) == 7


@needs_build_tree
@pytest.mark.parametrize("n_features, wide, params, expected", [
    (30, False, {}, SHORT_ROW_EPOCHS),
    (3 * MAX_ROW_FEATURES, False, {}, EPOCHS),  # ~100 features a row
    (30, True, {}, EPOCHS),
    (30, False, {"epochs": 5}, 5),
])
def test_fitted_nodes_train_the_resolved_epochs(rng, tmp_path, n_features, wide, params,
                                                 expected):
    X, labels, _ = clustered_problem(rng, 80, n_features=n_features)
    if wide:  # more labels than the wide descent needs
        labels = [[30 * i] for i in range(X.shape[0])]
    # Every pass taken (no convergence stop), so the root shows the epochs resolved.
    settings = {**FAST, "epochs": "auto", "epoch_tolerance": 0.0, "n_trees": 1,
                "random_state": 4, **params}
    model = LdSM(**settings).fit(X, labels)
    assert (model._forest.threshold < 0.5) == wide
    assert model.objective_trace(0, 0).shape == (expected,)
    model.save(tmp_path / "model.xmt")
    assert LdSM.load(tmp_path / "model.xmt").epochs == settings["epochs"]


def test_a_diverging_fit_is_refused_naming_the_step(monkeypatch):
    from xmltree.ldsm import _training

    real_build = _training.build_trees

    def diverged(*args):
        trees = real_build(*args)
        trees[0]["bias"][...] = np.inf
        return trees
    monkeypatch.setattr(_training, "build_trees", diverged)
    X, labels, _ = clustered_problem(np.random.default_rng(0), 60)
    with pytest.raises(ValueError, match="learning_rate"):
        LdSM(**FAST).fit(X, labels)


def test_fit_reports_the_seconds_of_its_phases():
    X, labels, _ = clustered_problem(np.random.default_rng(1), 80)
    model = LdSM(n_trees=2, max_nodes=7, epochs=1, random_state=0).fit(X, labels)
    assert list(model.fit_seconds_) == ["scaling", "trees", "linear_leaves"]
    assert all(seconds >= 0 for seconds in model.fit_seconds_.values())


def test_a_refit_while_predicting_never_mixes_two_models():
    # Issue #32: predict checked X against the old model, then the kernel read
    # the forest a concurrent refit had installed (fewer features): SIGSEGV.
    import threading

    X, labels, _ = clustered_problem(np.random.default_rng(0), 120)
    narrow = check_features(X)[:, :5]
    model = LdSM(**FAST, random_state=0).fit(X, labels)
    expected = model.predict(X, k=3)
    stop, outcomes, errors = threading.Event(), [], []

    def predict_in_a_loop():
        while not stop.is_set():
            try:
                labels_, scores = model.predict(X, k=3)
            except DataFormatError:  # the narrow model refuses the wide rows
                outcomes.append("refused")
                continue
            except Exception as error:  # noqa: BLE001 - reported below
                errors.append(error)
                return
            same = np.array_equal(labels_, expected[0]) and np.array_equal(scores, expected[1])
            outcomes.append("old" if same else "mixed")

    threads = [threading.Thread(target=predict_in_a_loop) for _ in range(2)]
    for thread in threads:
        thread.start()
    for round_ in range(6):
        model.fit(narrow if round_ % 2 == 0 else X, labels)
    stop.set()
    for thread in threads:
        thread.join()
    assert not errors and "mixed" not in outcomes and outcomes


def test_set_params_after_fit_changes_nothing_until_the_next_fit(tmp_path):
    # Issue #32: the saved file took the new setting, the memory did not.
    X, labels, _ = clustered_problem(np.random.default_rng(0), 120)
    model = LdSM(**FAST, random_state=0).fit(X, labels)
    expected = model.predict(X, k=3)
    resolved = model.resolved_params_
    model.set_params(leaf_model="histogram", arity=3, leaf_scores="distribution",
                     descent_threshold=0.01, histogram_weight=1.0, n_candidates=2,
                     leaf_aggregation="sum", routing="sigmoid")
    assert model.resolved_params_ == resolved
    model.save(tmp_path / "model.npz")
    loaded = LdSM.load(tmp_path / "model.npz")
    assert loaded.get_params() == model.get_params() and loaded.resolved_params_ == resolved
    for copy in (model, loaded):
        for got, want in zip(copy.predict(X, k=3), expected):
            np.testing.assert_array_equal(got, want)
    model.set_params(n_trees=0)
    with pytest.raises(ValueError, match="n_trees"):
        model.save(tmp_path / "other.npz")


def test_candidates_are_bounded_by_the_labels_and_tiny_c_is_refused():
    # Issue #32: n_candidates up to 2**31 - 1 allocated rows x n_candidates at fit.
    X, labels, _ = clustered_problem(np.random.default_rng(0), 80)
    linear = {**FAST, "leaf_model": "linear"}
    model = LdSM(**linear, n_candidates=2**31 - 1, random_state=0).fit(X, labels)
    assert model.resolved_params_["n_candidates"] == model.n_labels_
    small = LdSM(**linear, n_candidates=model.n_labels_, random_state=0).fit(X, labels)
    for got, want in zip(model.predict(X, k=3), small.predict(X, k=3)):
        np.testing.assert_array_equal(got, want)
    # A subnormal C makes the classifiers' 1 / (2C) infinite: refused, naming C.
    with pytest.raises(ValueError, match="C=5e-324"):
        LdSM(**linear, C=5e-324).fit(X, labels)


class CountingLeaves:
    """A toy third leaf model: it stores each label's training count and leaves
    the forest's scores as they are (see ``xmltree.ldsm._leaf_models``)."""

    ARRAY_PREFIX = "counting/"
    RESCORES_CANDIDATES = False
    MERGEABLE = True

    def __init__(self, counts):
        self.counts = counts

    @classmethod
    def fit(cls, forest, X, Y, settings, seed, n_threads):
        return cls(np.diff(Y.tocsc().indptr).astype(np.int64))

    def install(self, forest, settings):
        pass

    def get_state(self):
        return {"total": int(self.counts.sum())}, {"counting/counts": self.counts}

    @classmethod
    def from_state(cls, params, arrays, n_features, n_labels):
        counts = arrays.get("counting/counts")
        if not isinstance(counts, np.ndarray) or counts.shape != (n_labels,) \
                or int(counts.sum()) != params.get("total"):
            raise ModelFormatError("counting leaves: counts missing or invalid")
        return cls(counts)


def test_a_third_leaf_model_is_one_class_and_one_registry_line(monkeypatch, tmp_path):
    from xmltree.ldsm._leaf_models import LEAF_MODELS

    monkeypatch.setitem(LEAF_MODELS, "counting", CountingLeaves)
    X, labels, _ = clustered_problem(np.random.default_rng(0), 100)
    model = LdSM(**{**FAST, "leaf_model": "counting"}, random_state=0).fit(X, labels)
    histogram = LdSM(**FAST, random_state=0).fit(X, labels)
    for got, want in zip(model.predict(X, k=3), histogram.predict(X, k=3)):
        np.testing.assert_array_equal(got, want)
    assert model.fit_seconds_.keys() == {"scaling", "trees", "counting_leaves"}
    model.save(tmp_path / "model.npz")
    loaded = LdSM.load(tmp_path / "model.npz")
    np.testing.assert_array_equal(loaded._fitted_state().leaves.counts,
                                  model._fitted_state().leaves.counts)
    assert merge([loaded]).resolved_params_["leaf_model"] == "counting"
    with pytest.raises(ValueError, match="leaf_model must be one of"):
        LdSM(leaf_model="unknown").fit(X, labels)


def test_verbose_fits_show_every_phase_and_make_the_same_model(capsys, monkeypatch):
    # Issue #35: at scale the candidates and the label classifiers took half
    # the fit with nothing shown. Blocks of one row, so that the bars move here.
    from xmltree.ldsm import _linear_leaves

    monkeypatch.setattr(_linear_leaves, "CANDIDATE_BLOCK_BYTES", 1)
    X, labels, _ = clustered_problem(np.random.default_rng(0), 100)
    linear = {**FAST, "leaf_model": "linear"}
    quiet = LdSM(**linear, random_state=0).fit(X, labels)
    capsys.readouterr()
    shown = LdSM(**linear, random_state=0, verbose=True).fit(X, labels)
    progress = capsys.readouterr().err
    for phase in ("LdSM trees", "LdSM candidates", "LdSM label classifiers"):
        assert phase in progress
    for name in ("data", "indices", "indptr"):
        np.testing.assert_array_equal(getattr(shown.label_weights_, name),
                                      getattr(quiet.label_weights_, name))
    np.testing.assert_array_equal(shown.label_bias_, quiet.label_bias_)
