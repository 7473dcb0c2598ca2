"""The data-derived settings of xmltree.ldsm._auto_settings, and what a fitted LdSM resolves."""

import numpy as np
import pytest
import scipy.sparse as sp

from xmltree import LdSM
from xmltree.datasets import make_synthetic
from xmltree.ldsm._auto_settings import (
    CANDIDATES,
    EPOCH_TOLERANCE,
    HISTOGRAM_WEIGHT,
    LEAF_SIZE,
    LEAVES_PER_LABEL,
    MANY_FEATURES,
    MANY_FEATURES_HISTOGRAM_WEIGHT,
    MAX_AUTO_NODES,
    WIDE_DESCENT_CANDIDATES,
    WIDE_DESCENT_HISTOGRAM_WEIGHT,
    WIDE_DESCENT_MIN_LABELS,
    auto_node_budget,
    resolve_epoch_tolerance,
    resolve_histogram_weight,
    resolve_n_candidates,
)


def _full_tree_nodes(n_leaves: int, arity: int) -> int:
    return (arity * n_leaves - 1) // (arity - 1)


@pytest.mark.parametrize("arity", [2, 3])
def test_node_budget_follows_the_rows_and_the_labels(arity):
    # ohsumed's shape: 9,750 rows, 23 labels -> LEAVES_PER_LABEL leaves a label,
    # not a leaf per 8 rows.
    assert auto_node_budget(9750, arity, 23) == _full_tree_nodes(LEAVES_PER_LABEL * 23, arity)
    # Many labels: the rows decide, as without labels.
    rows_only = _full_tree_nodes(-(-9750 // LEAF_SIZE), arity)
    assert auto_node_budget(9750, arity, 983) == auto_node_budget(9750, arity) == rows_only
    assert auto_node_budget(10**9, arity, 10**7) == MAX_AUTO_NODES
    assert auto_node_budget(5, arity, 0) == 1  # at least one leaf


def test_fitted_trees_of_few_labels_stay_within_the_label_budget():
    X, Y = make_synthetic(1200, 30, 3, random_state=0)
    model = LdSM(n_trees=2, epochs=1, random_state=0, n_jobs=1).fit(X, Y)
    budget = _full_tree_nodes(LEAVES_PER_LABEL * 3, 2)
    assert budget < auto_node_budget(1200, 2)
    assert model.n_nodes_.max() <= budget


def test_histogram_weight_follows_the_descent_then_the_features():
    assert resolve_histogram_weight("auto", 0.05, 0.5, 10) == WIDE_DESCENT_HISTOGRAM_WEIGHT
    assert resolve_histogram_weight("auto", 0.05, 0.5, 10**6) == WIDE_DESCENT_HISTOGRAM_WEIGHT
    assert resolve_histogram_weight("auto", 0.5, 0.5, MANY_FEATURES) == HISTOGRAM_WEIGHT
    assert (resolve_histogram_weight("auto", 0.5, 0.5, MANY_FEATURES + 1)
            == MANY_FEATURES_HISTOGRAM_WEIGHT == 0.0)
    assert resolve_histogram_weight(0.2, 0.5, 0.5, 10**6) == 0.2


def test_many_features_rank_by_the_classifiers_alone(tmp_path):
    X, Y = make_synthetic(300, 40, 20, random_state=1)
    X = X.tocsr()
    X.resize(X.shape[0], MANY_FEATURES + 1)  # same rows, unused columns beyond
    settings = dict(n_trees=2, max_nodes=15, epochs=1, random_state=0, n_jobs=1)
    auto = LdSM(**settings).fit(X, Y)
    assert auto._forest.histogram_weight == MANY_FEATURES_HISTOGRAM_WEIGHT
    classifiers_only = LdSM(**settings, histogram_weight=0.0).fit(X, Y)
    np.testing.assert_array_equal(auto.predict(X)[0], classifiers_only.predict(X)[0])
    auto.save(tmp_path / "model.xmt")
    assert LdSM.load(tmp_path / "model.xmt")._forest.histogram_weight == 0.0


def test_candidates_are_more_under_the_wide_descent():
    many = 10 * WIDE_DESCENT_CANDIDATES
    assert resolve_n_candidates("auto", 0.5, 0.5, many) == CANDIDATES
    assert resolve_n_candidates("auto", 0.05, 0.5, many) == WIDE_DESCENT_CANDIDATES
    assert resolve_n_candidates("auto", 0.05, 0.5, 300) == 300  # never more than the labels
    assert resolve_n_candidates(7, 0.05, 0.5, many) == 7
    assert resolve_n_candidates(7, 0.5, 0.5, 5) == 5


def test_a_fitted_model_shows_and_uses_its_auto_candidates():
    X, _ = make_synthetic(200, 30, 10, random_state=0)
    # One label a row, over more labels than the wide descent needs.
    rows = np.arange(X.shape[0])
    Y = sp.csr_matrix((np.ones(X.shape[0]), (rows, rows * 11)),
                      shape=(X.shape[0], WIDE_DESCENT_MIN_LABELS + 500))
    fast = {"n_trees": 2, "epochs": 1, "max_nodes": 31, "random_state": 0, "n_jobs": 1}
    auto = LdSM(**fast).fit(X, Y)
    assert auto.resolved_params_["n_candidates"] == WIDE_DESCENT_CANDIDATES
    explicit = LdSM(**fast, n_candidates=WIDE_DESCENT_CANDIDATES).fit(X, Y)
    for got, want in zip(auto.predict(X, k=3), explicit.predict(X, k=3)):
        np.testing.assert_array_equal(got, want)
    narrow = LdSM(**fast, descent_threshold=None).fit(X, Y)
    assert narrow.resolved_params_["n_candidates"] == CANDIDATES


def test_only_auto_epochs_end_early():
    assert resolve_epoch_tolerance("auto", "auto") == EPOCH_TOLERANCE > 0
    assert resolve_epoch_tolerance("auto", 20) == 0.0  # the paper's 20 passes, all taken
    assert resolve_epoch_tolerance(0.1, 20) == 0.1


def _passes(model) -> np.ndarray:
    """Passes each internal node of every fitted tree took."""
    trees = model._fitted_state().trees
    return np.concatenate([np.diff(tree["trace_indptr"])[tree["first_child"] >= 0]
                           for tree in trees])


@pytest.fixture(scope="module")
def short_rows():
    # Rows of ~10 features: "auto" gives them the short rows' passes.
    return make_synthetic(1500, 200, 12, avg_features=10, random_state=0)


def test_fitted_nodes_end_their_passes_at_convergence(short_rows):
    X, Y = short_rows
    auto = LdSM(n_trees=2, random_state=0, n_jobs=1).fit(X, Y)
    resolved = auto.resolved_params_
    assert resolved["epoch_tolerance"] == EPOCH_TOLERANCE
    passes = _passes(auto)
    assert passes.max() <= resolved["epochs"] and passes.min() < resolved["epochs"]
    fixed = LdSM(n_trees=2, epochs=resolved["epochs"], random_state=0, n_jobs=1).fit(X, Y)
    assert fixed.resolved_params_["epoch_tolerance"] == 0.0
    assert np.all(_passes(fixed) == resolved["epochs"])


def test_files_from_before_the_tolerance_load_taking_every_pass(short_rows, tmp_path):
    from test_persistence import rewrite_state

    X, Y = short_rows
    model = LdSM(n_trees=2, epoch_tolerance=0.0, random_state=0, n_jobs=1).fit(X, Y)
    path = tmp_path / "model.npz"
    model.save(path)

    def drop_tolerance(params, arrays):
        del params["hyper_parameters"]["epoch_tolerance"], params["resolved"]["epoch_tolerance"]

    rewrite_state(path, drop_tolerance)
    loaded = LdSM.load(path)
    assert loaded.epoch_tolerance == loaded.resolved_params_["epoch_tolerance"] == 0.0
    for got, want in zip(loaded.predict_top_k(X, k=5), model.predict_top_k(X, k=5)):
        np.testing.assert_array_equal(got, want)
