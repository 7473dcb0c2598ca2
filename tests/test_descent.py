"""Tests of LdSM's descent threshold: the rule that sends examples down the trees after fit."""

import json

import numpy as np
import pytest
from test_persistence import rewrite_meta
from test_tree import random_features, random_flat_tree

import xmltree.ldsm._auto_settings
from xmltree.datasets import make_synthetic
from xmltree.ldsm import LdSM
from xmltree.ldsm._auto_settings import (
    FEW_WIDE_BRANCHES,
    HISTOGRAM_WEIGHT,
    LARGE_TREE_NODES,
    MAX_LEAF_LABELS,
    MAX_WIDE_BRANCHES,
    WIDE_DESCENT_HISTOGRAM_WEIGHT,
    WIDE_DESCENT_MIN_LABELS,
    WIDE_DESCENT_THRESHOLD,
    resolve_descent_threshold,
    resolve_histogram_weight,
    resolve_max_leaf_labels,
    resolve_max_wide_branches,
)

N_FEATURES = 20
#: The paper's LdSM: histogram leaves on the features as given.
PAPER = {"leaf_model": "histogram", "feature_scaling": None, "leaf_scores": "distribution"}


@pytest.fixture
def rng():
    return np.random.default_rng(11)


def random_model(rng, n_labels, **params):
    """A fitted LdSM of 3 random trees (no training needed)."""
    trees = [random_flat_tree(rng, arity=2, n_features=N_FEATURES, n_labels=n_labels)
             for _ in range(3)]
    model = LdSM(n_trees=3, **{**PAPER, **params})
    model._set_trees(trees, N_FEATURES, n_labels)
    return model


def with_trees_of(model, n_labels, **params):
    """An LdSM with `params` over the trees of fitted `model`."""
    other = LdSM(n_trees=3, **{**PAPER, **params})
    other._set_trees(model.trees_, N_FEATURES, n_labels)
    return other


def test_auto_widens_margin_trees_over_many_labels_only():
    many = WIDE_DESCENT_MIN_LABELS + 1
    assert resolve_descent_threshold("auto", "margin", many) == WIDE_DESCENT_THRESHOLD
    assert resolve_descent_threshold("auto", "margin", WIDE_DESCENT_MIN_LABELS) is None
    assert resolve_descent_threshold("auto", "sigmoid", many) is None
    assert resolve_descent_threshold(0.2, "sigmoid", 10) == 0.2
    assert resolve_descent_threshold(None, "margin", many) is None


def test_the_training_rule_is_the_default_descent(rng):
    X = random_features(rng, 200, N_FEATURES)
    auto = random_model(rng, 30)
    explicit = with_trees_of(auto, 30, descent_threshold=0.5)
    assert auto._forest.threshold == explicit._forest.threshold == 0.5
    for got, want in zip(auto.predict(X), explicit.predict(X)):
        assert np.array_equal(got, want)


def test_many_labels_descend_wider_by_default(rng):
    X = random_features(rng, 200, N_FEATURES)
    n_labels = WIDE_DESCENT_MIN_LABELS + 500
    wide = random_model(rng, n_labels)
    strict = with_trees_of(wide, n_labels, descent_threshold=None)
    assert wide._forest.threshold == WIDE_DESCENT_THRESHOLD
    assert np.all(wide.leaves_reached(X) >= strict.leaves_reached(X))
    assert np.any(wide.leaves_reached(X) > strict.leaves_reached(X))


def test_descent_threshold_survives_save_and_load(rng, tmp_path):
    X = random_features(rng, 100, N_FEATURES)
    model = random_model(rng, 30, descent_threshold=-0.25)
    model.save(tmp_path / "model.npz")
    loaded = LdSM.load(tmp_path / "model.npz")
    assert loaded.descent_threshold == -0.25 and loaded._forest.threshold == -0.25
    assert np.array_equal(model.leaves_reached(X), loaded.leaves_reached(X))


@pytest.mark.parametrize("name, forest_attribute, forest_value", [
    ("descent_threshold", "threshold", 0.5),         # descend as trained
    ("max_wide_branches", "max_wide_branches", -1),  # no limit
    ("max_leaf_labels", None, None),                  # (a training setting)
    ("max_row_features", "route_row_features", 0),   # routed whole
])
def test_files_from_before_an_option_load_as_they_were(rng, tmp_path, name, forest_attribute,
                                                       forest_value):
    path = tmp_path / "old.npz"
    random_model(rng, WIDE_DESCENT_MIN_LABELS + 500).save(path)
    with np.load(path) as archive:
        params = json.loads(archive["__meta__"].tobytes())["params"]
    del params["hyper_parameters"][name]
    del params["resolved"], params["leaves"]  # a format 3 file's parameters
    rewrite_meta(path, params=params, format_version=3)
    loaded = LdSM.load(path)
    assert getattr(loaded, name) is None
    assert loaded.max_row_features_ is None and loaded.route_row_features_ is None
    if forest_attribute is not None:
        assert getattr(loaded._forest, forest_attribute) == forest_value


@pytest.mark.parametrize("value", ["wide", float("nan"), float("inf"), True, [0.1]])
def test_bad_descent_thresholds_are_named(value):
    with pytest.raises(ValueError, match="descent_threshold"):
        LdSM(descent_threshold=value).fit(np.ones((3, 2)), [[0], [1], [0]])


def test_auto_histogram_weight_follows_the_descent():
    assert resolve_histogram_weight("auto", 0.05, 0.5, 100) == WIDE_DESCENT_HISTOGRAM_WEIGHT
    assert resolve_histogram_weight("auto", 0.5, 0.5, 100) == HISTOGRAM_WEIGHT
    assert resolve_histogram_weight("auto", 0.9, 0.5, 100) == HISTOGRAM_WEIGHT
    assert resolve_histogram_weight(0.7, 0.05, 0.5, 100) == 0.7


@pytest.mark.parametrize("n_labels, params, expected", [
    (WIDE_DESCENT_MIN_LABELS + 500, {}, WIDE_DESCENT_HISTOGRAM_WEIGHT),
    (WIDE_DESCENT_MIN_LABELS + 500, {"descent_threshold": None}, HISTOGRAM_WEIGHT),
    (50, {}, HISTOGRAM_WEIGHT),
    (50, {"descent_threshold": 0.1}, WIDE_DESCENT_HISTOGRAM_WEIGHT),
    (WIDE_DESCENT_MIN_LABELS + 500, {"histogram_weight": 0.25}, 0.25),
])
def test_fitted_blend_uses_the_resolved_histogram_weight(n_labels, params, expected, tmp_path):
    X, Y = make_synthetic(300, 40, n_labels, random_state=0)
    model = LdSM(n_trees=1, max_nodes=15, random_state=0, **params).fit(X, Y)
    assert model._forest.histogram_weight == expected
    model.save(tmp_path / "model.xmt")
    loaded = LdSM.load(tmp_path / "model.xmt")
    assert loaded.histogram_weight == params.get("histogram_weight", "auto")
    assert loaded._forest.histogram_weight == expected


def test_auto_leaf_labels_are_cut_for_linear_leaves_that_weigh_the_histograms_in():
    assert resolve_max_leaf_labels("auto", True, 0.5, 0.5, 0.3) == MAX_LEAF_LABELS
    assert resolve_max_leaf_labels("auto", True, 0.05, 0.5, 0.3) is None
    assert resolve_max_leaf_labels("auto", True, 0.5, 0.5, 0.0) is None
    assert resolve_max_leaf_labels("auto", False, 0.5, 0.5, 0.3) is None
    assert resolve_max_leaf_labels(7, False, 0.05, 0.5, 0.0) == 7
    assert resolve_max_leaf_labels(None, True, 0.5, 0.5, 0.3) is None


@pytest.mark.parametrize("n_labels, params, most", [
    (60, {}, MAX_LEAF_LABELS),
    (60, {"max_leaf_labels": 5}, 5),
    (60, {"max_leaf_labels": None}, None),
    (60, {"leaf_model": "histogram"}, None),
    (60, {"histogram_weight": 0.0}, None),  # the histograms only choose candidates
    (WIDE_DESCENT_MIN_LABELS + 500, {}, None),
])
def test_fitted_leaves_hold_the_resolved_number_of_labels(n_labels, params, most, tmp_path):
    # Few large leaves of many labels each: more than any limit tested.
    X, Y = make_synthetic(300, 40, n_labels, random_state=0)
    model = LdSM(n_trees=1, max_nodes=7, random_state=0, **params).fit(X, Y)
    sizes = np.diff(model.trees_[0]["leaf_indptr"])
    assert sizes.max() == most if most is not None else sizes.max() > MAX_LEAF_LABELS
    model.save(tmp_path / "model.xmt")
    assert LdSM.load(tmp_path / "model.xmt").max_leaf_labels == params.get("max_leaf_labels",
                                                                           "auto")


@pytest.mark.parametrize("value", [0, -3, 2.5, "all", True, [4]])
def test_bad_leaf_label_limits_are_named(value):
    with pytest.raises(ValueError, match="max_leaf_labels"):
        LdSM(max_leaf_labels=value).fit(np.ones((3, 2)), [[0], [1], [0]])


def test_wide_branches_are_limited_by_default_and_survive_save_and_load(rng, tmp_path):
    X = random_features(rng, 200, N_FEATURES)
    n_labels = WIDE_DESCENT_MIN_LABELS + 500
    limited = random_model(rng, n_labels)
    unlimited = with_trees_of(limited, n_labels, max_wide_branches=None)
    assert limited._forest.max_wide_branches == MAX_WIDE_BRANCHES
    assert unlimited._forest.max_wide_branches == -1
    assert np.all(limited.leaves_reached(X) <= unlimited.leaves_reached(X))
    limited.save(tmp_path / "model.npz")
    loaded = LdSM.load(tmp_path / "model.npz")
    assert loaded.max_wide_branches == "auto"
    assert loaded._forest.max_wide_branches == MAX_WIDE_BRANCHES
    assert np.array_equal(loaded.leaves_reached(X), limited.leaves_reached(X))


def test_auto_wide_branches_follow_the_largest_tree_and_the_rows_it_grew_on():
    assert resolve_max_wide_branches("auto", LARGE_TREE_NODES, None) == MAX_WIDE_BRANCHES
    assert resolve_max_wide_branches("auto", LARGE_TREE_NODES + 1, None) == FEW_WIDE_BRANCHES
    assert resolve_max_wide_branches("auto", LARGE_TREE_NODES, 48) == FEW_WIDE_BRANCHES
    assert resolve_max_wide_branches(5, LARGE_TREE_NODES + 1, 48) == 5
    assert resolve_max_wide_branches(None, 1, None) is None


def test_large_trees_take_fewer_wide_branches_and_keep_them_after_load(rng, tmp_path,
                                                                       monkeypatch):
    X = random_features(rng, 200, N_FEATURES)
    n_labels = WIDE_DESCENT_MIN_LABELS + 500
    small = random_model(rng, n_labels)
    largest = int(small.n_nodes_.max())
    # The trees count as large when the limit is below their size.
    monkeypatch.setattr(xmltree.ldsm._auto_settings, "LARGE_TREE_NODES", largest - 1)
    large = with_trees_of(small, n_labels)
    explicit = with_trees_of(small, n_labels, max_wide_branches=FEW_WIDE_BRANCHES)
    assert large._forest.max_wide_branches == FEW_WIDE_BRANCHES
    assert np.array_equal(large.leaves_reached(X), explicit.leaves_reached(X))
    large.save(tmp_path / "model.npz")
    loaded = LdSM.load(tmp_path / "model.npz")
    assert loaded.max_wide_branches == "auto"
    assert loaded._forest.max_wide_branches == FEW_WIDE_BRANCHES
    monkeypatch.setattr(xmltree.ldsm._auto_settings, "LARGE_TREE_NODES", largest)
    assert with_trees_of(small, n_labels)._forest.max_wide_branches == MAX_WIDE_BRANCHES


def test_files_with_a_number_of_wide_branches_keep_it(rng, tmp_path):
    path = tmp_path / "model.npz"
    random_model(rng, WIDE_DESCENT_MIN_LABELS + 500, max_wide_branches=3).save(path)
    loaded = LdSM.load(path)
    assert loaded.max_wide_branches == 3 and loaded._forest.max_wide_branches == 3


@pytest.mark.parametrize("value", [-1, 256, 1.5, "wide", "AUTO", True])
def test_bad_wide_branch_limits_are_named(value):
    with pytest.raises(ValueError, match="max_wide_branches"):
        LdSM(max_wide_branches=value).fit(np.ones((3, 2)), [[0], [1], [0]])
