"""The data-derived settings of xmltree.ldsm._auto_settings, and what a fitted LdSM resolves."""

import numpy as np
import pytest

from xmltree import LdSM
from xmltree.datasets import make_synthetic
from xmltree.ldsm._auto_settings import (
    HISTOGRAM_WEIGHT,
    LEAF_SIZE,
    LEAVES_PER_LABEL,
    MANY_FEATURES,
    MANY_FEATURES_HISTOGRAM_WEIGHT,
    MAX_AUTO_NODES,
    WIDE_DESCENT_HISTOGRAM_WEIGHT,
    auto_node_budget,
    resolve_histogram_weight,
)


def _full_tree_nodes(n_leaves: int, arity: int) -> int:
    return (arity * n_leaves - 1) // (arity - 1)


@pytest.mark.parametrize("arity", [2, 3])
def test_node_budget_follows_the_rows_and_the_labels(arity):
    # ohsumed's shape: 9,750 rows, 23 labels -> 8 leaves a label, not a leaf per 8 rows.
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
