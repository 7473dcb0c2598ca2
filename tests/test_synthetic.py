"""Tests of the synthetic multi-label generator."""

import dataclasses
from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp

from xmltree._validation import check_features, check_labels
from xmltree.datasets import SYNTHETIC_PRESETS, make_synthetic, make_synthetic_preset
from xmltree.datasets._synthetic import _draw_distinct, _merge_sorted_counts


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
        ({"n_features": 2**31}, "n_features"),
        ({"n_samples": np.float64(10)}, "n_samples"),
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


# ------------------------------------------------------------------ presets with real shapes

@pytest.mark.parametrize("name", sorted(SYNTHETIC_PRESETS))
def test_preset_reproduces_the_published_statistics(name):
    preset = SYNTHETIC_PRESETS[name]
    X, Y = make_synthetic_preset(name, scale=0.01, random_state=0)
    n_samples, n_labels = round(preset.n_samples * 0.01), round(preset.n_labels * 0.01)
    assert X.shape == (n_samples, preset.n_features) and Y.shape == (n_samples, n_labels)
    targets = {"labels per point": (Y.nnz / n_samples, preset.avg_labels),
               "points per label": (Y.nnz / n_labels,
                                    preset.n_samples * preset.avg_labels / preset.n_labels),
               "non-zeros per row": (X.nnz / n_samples, preset.avg_features)}
    for what, (measured, target) in targets.items():
        assert measured == pytest.approx(target, rel=0.03), what


def test_amazon_shape_matches_the_published_numbers():
    # The published figures themselves, not just the preset's fields.
    preset = SYNTHETIC_PRESETS["amazon670k-shape"]
    assert (preset.n_samples, preset.n_features, preset.n_labels) == (490_449, 135_909, 670_091)
    assert preset.n_samples * preset.avg_labels / preset.n_labels == pytest.approx(3.99, abs=0.01)
    delicious = SYNTHETIC_PRESETS["delicious200k-shape"]
    assert (delicious.n_samples, delicious.n_features, delicious.n_labels) == (
        196_606, 782_585, 205_443)


@pytest.mark.parametrize("name", sorted(SYNTHETIC_PRESETS))
def test_preset_labels_are_mostly_in_the_tail(name):
    _, Y = make_synthetic_preset(name, scale=0.01, random_state=1)
    counts = np.sort(_label_counts(Y))[::-1]
    assert (counts < counts.mean()).mean() > 0.6
    tenth = counts.size // 10
    assert counts[:tenth].sum() > 0.3 * counts.sum()
    assert counts[0] > 10 * np.median(counts)


def test_preset_output_is_canonical_valid_and_deterministic():
    X, Y = make_synthetic_preset("delicious200k-shape", scale=0.002, random_state=3)
    again = make_synthetic_preset("delicious200k-shape", scale=0.002, random_state=3)
    other = make_synthetic_preset("delicious200k-shape", scale=0.002, random_state=4)
    assert (X != again[0]).nnz == 0 and (Y != again[1]).nnz == 0
    assert (X != other[0]).nnz > 0
    assert X.has_canonical_format and Y.has_canonical_format
    assert (check_features(X) != X).nnz == 0 and (check_labels(Y) != Y).nnz == 0
    assert np.diff(Y.indptr).min() >= 1 and np.all(Y.data == 1)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    np.testing.assert_allclose(norms, 1.0, rtol=1e-5)


def test_custom_preset_sets_its_own_size():
    preset = dataclasses.replace(SYNTHETIC_PRESETS["amazon670k-shape"], n_samples=300,
                                 n_features=2000, n_labels=50_000)
    X, Y = make_synthetic_preset(preset, random_state=0)
    assert X.shape == (300, 2000) and Y.shape == (300, 50_000)
    assert Y.nnz / 300 == pytest.approx(5.45, rel=0.1)


def _reference_merge(keys, counts, new_keys, new_counts):
    total = Counter(dict(zip(keys.tolist(), counts.tolist())))
    total.update(dict(zip(new_keys.tolist(), new_counts.tolist())))
    merged = sorted(total.items())
    return np.array([k for k, _ in merged]), np.array([c for _, c in merged])


@pytest.mark.parametrize("seed", range(5))
def test_merge_sorted_counts_matches_a_counter(seed):
    rng = np.random.default_rng(seed)
    keys = np.unique(rng.integers(0, 60, size=rng.integers(0, 40)))
    new_keys = np.unique(rng.integers(0, 60, size=rng.integers(1, 40)))
    counts = rng.integers(1, 5, size=keys.size)
    new_counts = rng.integers(1, 5, size=new_keys.size)
    merged_keys, merged_counts = _merge_sorted_counts(keys, counts, new_keys, new_counts)
    expected_keys, expected_counts = _reference_merge(keys, counts, new_keys, new_counts)
    np.testing.assert_array_equal(merged_keys, expected_keys)
    np.testing.assert_array_equal(merged_counts, expected_counts)


def test_draw_distinct_reaches_every_target_with_distinct_sorted_pairs():
    rng = np.random.default_rng(0)
    targets = rng.integers(1, 30, size=200)
    # A skewed sampler: column 0 comes up half the time, so repeats are common.
    def sample(rows):
        return np.where(rng.random(rows.size) < 0.5, 0, rng.integers(0, 100, size=rows.size))
    rows, columns, counts = _draw_distinct(targets, sample, 100)
    # Top-up rounds stop once at most 0.1% of the wanted entries are missing.
    reached = np.bincount(rows, minlength=200)
    assert np.all(reached <= targets)
    assert targets.sum() - reached.sum() <= 1e-3 * targets.sum()
    keys = rows * 100 + columns
    assert np.all(np.diff(keys) > 0)
    assert counts.min() >= 1 and counts.sum() > targets.sum()


def test_draw_distinct_stops_when_a_row_runs_out_of_options():
    targets = np.full(10, 5)
    rng = np.random.default_rng(0)
    rows, columns, _ = _draw_distinct(targets, lambda r: rng.integers(0, 3, size=r.size), 3)
    np.testing.assert_array_equal(np.bincount(rows, minlength=10), 3)


@pytest.mark.parametrize(
    ("name", "scale", "message"),
    [
        ("eurlex-shape", 0.1, "unknown preset"),
        (3, 0.1, "unknown preset"),
        ("amazon670k-shape", 0.0, "scale"),
        ("amazon670k-shape", 1.5, "scale"),
        ("amazon670k-shape", float("nan"), "scale"),
        ("amazon670k-shape", True, "scale"),
        (dataclasses.replace(SYNTHETIC_PRESETS["amazon670k-shape"], n_labels=0), 1.0,
         "n_labels"),
        (dataclasses.replace(SYNTHETIC_PRESETS["amazon670k-shape"], noise=2.0), 1.0, "noise"),
    ],
)
def test_bad_preset_arguments_are_named(name, scale, message):
    with pytest.raises(ValueError, match=message):
        make_synthetic_preset(name, scale=scale, random_state=0)
