"""Tests of the synthetic multi-label generator."""

import numpy as np
import pytest
import scipy.sparse as sp

from xmltree._validation import check_features, check_labels
from xmltree.datasets import make_synthetic


def _label_counts(Y):
    return np.asarray(Y.sum(axis=0)).ravel()


def _centroid_precision_at_1(X, Y, n_train):
    """P@1 on rows ``n_train:`` of the label whose training centroid is most similar."""
    centroids = (Y[:n_train].T @ X[:n_train]).toarray()
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True) + 1e-12
    predicted = np.asarray(X[n_train:] @ centroids.T).argmax(axis=1)
    Y_test = Y[n_train:]
    return float(np.asarray(Y_test[np.arange(Y_test.shape[0]), predicted]).mean())


def _frequency_precision_at_1(Y, n_train):
    """P@1 of always predicting the most frequent training label."""
    top = _label_counts(Y[:n_train]).argmax()
    return float(Y[n_train:, top].mean())


def test_shapes_dtypes_and_canonical_form():
    X, Y = make_synthetic(300, 500, 40, random_state=0)
    assert X.shape == (300, 500) and Y.shape == (300, 40)
    assert X.dtype == np.float32 and Y.dtype == np.float32
    for matrix in (X, Y):
        assert sp.isspmatrix_csr(matrix)
        assert matrix.indices.dtype == np.int32 and matrix.indptr.dtype == np.int32
    assert X.has_canonical_format and Y.has_canonical_format
    assert (check_features(X) != X).nnz == 0


def test_labels_pass_check_labels():
    _, Y = make_synthetic(300, 500, 40, random_state=0)
    assert (check_labels(Y) != Y).nnz == 0


def test_rows_have_labels_positive_values_and_unit_norm():
    X, Y = make_synthetic(500, 200, 30, avg_labels=2.0, random_state=1)
    assert np.diff(Y.indptr).min() >= 1
    assert np.all(Y.data == 1)
    assert np.diff(X.indptr).min() >= 1
    assert np.all(X.data > 0)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    np.testing.assert_allclose(norms, 1.0, rtol=1e-5)


def test_average_label_and_feature_counts():
    X, Y = make_synthetic(4000, 5000, 2000, avg_labels=4.0, avg_features=30, label_power=0.5,
                          random_state=2)
    # Repeats are merged, so the realised means sit a little below the targets.
    assert 3.7 < Y.nnz / Y.shape[0] <= 4.0
    assert 25 < X.nnz / X.shape[0] <= 30


def test_same_seed_same_data_other_seed_other_data():
    first = make_synthetic(200, 300, 25, random_state=7)
    again = make_synthetic(200, 300, 25, random_state=7)
    other = make_synthetic(200, 300, 25, random_state=8)
    for a, b in zip(first, again):
        assert (a != b).nnz == 0
    assert (first[0] != other[0]).nnz > 0


def test_generator_as_random_state():
    X1, Y1 = make_synthetic(50, 60, 10, random_state=np.random.default_rng(3))
    X2, Y2 = make_synthetic(50, 60, 10, random_state=np.random.default_rng(3))
    assert (X1 != X2).nnz == 0 and (Y1 != Y2).nnz == 0


@pytest.mark.parametrize("power", [0.8, 1.2])
def test_label_frequencies_follow_the_zipf_exponent(power):
    _, Y = make_synthetic(30000, 100, 200, avg_labels=1.5, label_power=power, random_state=4)
    counts = np.sort(_label_counts(Y))[::-1]
    ranks = np.arange(1, 51)
    slope = np.polyfit(np.log(ranks), np.log(counts[:50]), 1)[0]
    assert slope == pytest.approx(-power, abs=0.15)
    # Most labels are in the tail: the top 10% of labels carry most assignments.
    assert counts[:20].sum() > 0.4 * counts.sum()


def test_zero_power_gives_flat_frequencies():
    _, Y = make_synthetic(20000, 100, 50, avg_labels=1.0, label_power=0.0, random_state=5)
    counts = _label_counts(Y)
    assert counts.max() < 1.3 * counts.min()


def test_noise_free_features_come_from_the_labels_prototypes():
    X, Y, prototypes = make_synthetic(200, 1000, 50, noise=0.0, random_state=6,
                                      return_prototypes=True)
    assert prototypes.shape == (50, 1000)
    np.testing.assert_allclose(np.asarray(prototypes.sum(axis=1)).ravel(), 1.0, rtol=1e-6)
    for i in range(X.shape[0]):
        allowed = set(prototypes[Y.indices[Y.indptr[i]:Y.indptr[i + 1]]].indices.tolist())
        assert set(X.indices[X.indptr[i]:X.indptr[i + 1]].tolist()) <= allowed


def test_learnable_far_beyond_the_frequency_baseline():
    X, Y = make_synthetic(3000, 2000, 200, random_state=8)
    centroid = _centroid_precision_at_1(X, Y, 2000)
    frequency = _frequency_precision_at_1(Y, 2000)
    assert centroid > 0.8
    assert centroid > frequency + 0.3


def test_pure_noise_is_not_learnable():
    # The control for the test above: with every feature random, the same
    # learner must not find structure.
    X, Y = make_synthetic(3000, 2000, 200, noise=1.0, random_state=8)
    assert _centroid_precision_at_1(X, Y, 2000) < 0.5


def test_multiclass_returns_one_int_label_per_row():
    X, y = make_synthetic(1000, 300, 20, multiclass=True, random_state=9)
    assert X.shape == (1000, 300)
    assert y.shape == (1000,) and y.dtype == np.int64
    assert y.min() >= 0 and y.max() < 20
    # avg_labels is ignored, even when it exceeds n_labels.
    make_synthetic(10, 10, 2, avg_labels=5.0, multiclass=True, random_state=0)


def test_tiny_feature_space():
    X, Y = make_synthetic(100, 1, 3, avg_features=5, random_state=10)
    assert X.shape == (100, 1) and np.all(X.toarray() == 1.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_samples": 0}, "n_samples"),
        ({"n_features": 2.5}, "n_features"),
        ({"n_labels": True}, "n_labels"),
        ({"n_features": 2**31}, "int32"),
        ({"avg_labels": 0.5}, "avg_labels"),
        ({"avg_labels": 11.0}, "avg_labels"),
        ({"avg_labels": float("nan")}, "avg_labels"),
        ({"avg_features": 0}, "avg_features"),
        ({"label_power": -1.0}, "label_power"),
        ({"noise": 1.5}, "noise"),
        ({"noise": "0.1"}, "noise"),
        ({"random_state": -3}, "random_state"),
        ({"random_state": "seed"}, "random_state"),
    ],
)
def test_bad_arguments_are_named(kwargs, message):
    arguments = {"n_samples": 10, "n_features": 20, "n_labels": 10, **kwargs}
    with pytest.raises(ValueError, match=message):
        make_synthetic(**arguments)
