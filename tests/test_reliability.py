"""Hostile and unusual inputs across modules (issue 32): refused clearly or handled alike."""

import json
import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from xmltree import LdSM
from xmltree._scaling import feature_magnitude
from xmltree._validation import check_features, check_labels
from xmltree.datasets import make_synthetic, open_csr_npy, read_libsvm, write_csr_npy
from xmltree.exceptions import DataFormatError
from xmltree.ldsm import _tree_arrays as tree_arrays
from xmltree.ldsm._tree_arrays import feature_slots

SMALL = {"n_trees": 2, "max_nodes": 15, "epochs": 2, "n_jobs": 1, "random_state": 0}


@pytest.fixture(scope="module")
def problem():
    X, Y = make_synthetic(200, 40, 12, avg_labels=1.5, random_state=0)
    return check_features(X), check_labels(Y)


# ------------------------------------------------------------------ item 2: unscaled features


def test_feature_magnitude_is_one_for_scaled_and_binary_features(problem):
    X, _ = problem
    binary = X.copy()
    binary.data[:] = 1
    assert feature_magnitude(X * 100, "l2") == feature_magnitude(X * 100, "tfidf") == 1
    assert feature_magnitude(binary, "none") == 1
    assert feature_magnitude(binary * 100, "none") == 128
    assert feature_magnitude(binary * 1e-3, "none") == 2.0**-10


def test_unscaled_features_far_from_unit_scale_still_grow_trees(problem):
    # With values around 100 the fixed weight threshold used to remove every
    # router weight: trees of one node, predicting the most frequent labels.
    X, Y = problem
    binary = X.copy()
    binary.data[:] = 1
    params = {**SMALL, "feature_scaling": None, "leaf_model": "histogram"}
    unit = LdSM(**params).fit(binary, Y)
    large = LdSM(**params).fit(binary * 128, Y)
    assert np.all(unit.n_nodes_ > 1)
    np.testing.assert_array_equal(large.n_nodes_, unit.n_nodes_)
    np.testing.assert_array_equal(large.predict(binary * 128, k=3)[0],
                                  unit.predict(binary, k=3)[0])


# ------------------------------------------------------------------ item 5: label values


@pytest.mark.parametrize("value", [-1.0, 0.5, 7.0, 2.0])
@pytest.mark.parametrize("form", [sp.csr_matrix, sp.coo_matrix, sp.csc_matrix, np.asarray])
def test_label_matrices_with_values_other_than_one_are_refused(value, form):
    Y = np.array([[1.0, 0.0, value], [0.0, 1.0, 0.0]])
    with pytest.raises(DataFormatError, match="only 0 and 1; row 0 has .* for label 2"):
        check_labels(form(Y))


def test_repeated_sparse_label_entries_are_refused_and_stored_zeros_dropped():
    repeated = sp.coo_matrix((np.ones(3), ([0, 0, 1], [1, 1, 0])), shape=(2, 2))
    with pytest.raises(DataFormatError, match="row 0 has 2 for label 1"):
        check_labels(repeated)
    with_zero = sp.csr_matrix((np.array([1.0, 0.0]), [0, 1], [0, 2, 2]), shape=(2, 2))
    assert check_labels(with_zero).nnz == 1


# ------------------------------------------------------------------ item 6: stored zeros


def with_stored_zeros(X: sp.csr_matrix, per_row: int) -> sp.csr_matrix:
    """``X`` plus `per_row` explicit zeros in each row, at columns the row lacks."""
    dense = X.toarray()
    rows, columns, values = [], [], []
    for row in range(X.shape[0]):
        empty = np.flatnonzero(dense[row] == 0)[:per_row]
        present = np.flatnonzero(dense[row])
        rows.extend([row] * (empty.size + present.size))
        columns.extend(np.concatenate([present, empty]))
        values.extend(np.concatenate([dense[row, present], np.zeros(empty.size)]))
    padded = sp.coo_matrix((values, (rows, columns)), shape=X.shape).tocsr()
    padded.sort_indices()
    return padded


def test_stored_zeros_do_not_change_the_checked_matrix(problem):
    X, _ = problem
    padded = with_stored_zeros(X, 20)
    assert padded.nnz > X.nnz
    checked = check_features(padded)
    assert checked.nnz == X.nnz
    np.testing.assert_array_equal(checked.indices, X.indices)
    assert padded.nnz == with_stored_zeros(X, 20).nnz  # the caller's matrix is left alone


def test_stored_zeros_do_not_change_the_model():
    # 30 real features a row; 30 stored zeros more took the mean above the
    # 48 of the "auto" max_row_features rule, and changed the idf of tf-idf.
    X, Y = make_synthetic(150, 200, 10, avg_features=30, random_state=1)
    padded = with_stored_zeros(X, 30)
    clean = LdSM(**SMALL).fit(X, Y)
    zeros = LdSM(**SMALL).fit(padded, Y)
    assert zeros.max_row_features_ == clean.max_row_features_
    np.testing.assert_array_equal(zeros.scaler_.idf_, clean.scaler_.idf_)
    for a, b in zip(zeros.predict(padded, k=3), clean.predict(X, k=3)):
        np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------ item 7: numbers


@pytest.mark.parametrize("form", [np.asarray, sp.csr_matrix])
def test_finite_values_too_large_for_float32_say_so(form):
    with pytest.raises(DataFormatError, match="1e\\+300 is too large for float32"):
        check_features(form(np.array([[1.0, -1e300]])))


@pytest.mark.parametrize("form", [np.asarray, sp.csr_matrix, sp.coo_matrix])
def test_values_too_small_for_float32_are_dropped_as_zeros(form):
    tiny = np.array([[1.0, 1e-300, 1e-50], [0.0, 2.0, -1e-46]])
    checked = check_features(form(tiny))
    assert checked.nnz == 2
    np.testing.assert_array_equal(checked.toarray(), [[1, 0, 0], [0, 2, 0]])


@pytest.mark.parametrize("form", [np.asarray, sp.csr_matrix])
def test_complex_features_are_refused(form):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(DataFormatError, match="complex"):
            check_features(form(np.array([[1.0 + 2j, 0.0]])))


@pytest.mark.parametrize("X", [
    np.array([["1", "2.5"]]),
    [["1", "2.5"]],
    np.array([[1.0, "2"]], dtype=object),
    np.array([[b"1", b"2"]]),
])
def test_strings_are_refused_not_parsed_as_numbers(X):
    with pytest.raises(DataFormatError, match="not real numbers|float array"):
        check_features(X)


def test_object_arrays_of_numbers_are_accepted():
    X = np.array([[1, 2.5, np.float32(3)], [0, True, 0]], dtype=object)
    np.testing.assert_array_equal(check_features(X).toarray(), [[1, 2.5, 3], [0, 1, 0]])


@pytest.mark.parametrize("line, what", [
    (b"0 2147483647:1\n", "feature id 2147483647"),
    (b"2147483647 1:1\n", "label id 2147483647"),
])
def test_headerless_libsvm_ids_beyond_int32_columns_are_refused(tmp_path, line, what):
    path = tmp_path / "data.svm"
    path.write_bytes(b"0 1:1\n" + line)
    with pytest.raises(DataFormatError, match=what) as info:
        read_libsvm(path)
    assert info.value.path == str(path) and info.value.line == 2


def test_headerless_libsvm_keeps_int32_index_arrays_at_the_largest_id(tmp_path):
    path = tmp_path / "data.svm"
    path.write_bytes(b"2147483646 2147483646:1\n")
    X, Y = read_libsvm(path)
    assert X.shape[1] == Y.shape[1] == 2**31 - 1
    assert X.indices.dtype == X.indptr.dtype == Y.indices.dtype == np.int32


# ------------------------------------------------------------------ item 8: n_candidates


def test_n_candidates_is_bounded_by_the_number_of_labels(problem):
    # It used to allocate rows x n_candidates (here 200 x 2**31 - 1 floats).
    X, Y = problem
    bounded = LdSM(**SMALL, leaf_model="linear", n_candidates=Y.shape[1]).fit(X, Y)
    huge = LdSM(**SMALL, leaf_model="linear", n_candidates=2**31 - 1).fit(X, Y)
    for a, b in zip(huge.predict(X, k=5), bounded.predict(X, k=5)):
        np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------ item 14: memmapped files


def test_a_python_2_header_is_refused_without_a_warning(tmp_path):
    write_csr_npy(tmp_path, sp.csr_matrix(np.eye(3, dtype=np.float32)))
    path = tmp_path / "indptr.npy"
    path.write_bytes(path.read_bytes().replace(b"(4,)", b"(4L,)", 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(DataFormatError, match="not a readable .npy file") as info:
            open_csr_npy(tmp_path)
    assert info.value.path == str(path)


def test_memmapped_files_with_stored_zeros_are_refused(tmp_path):
    # fit would drop the zeros, copying the mapped matrix into memory.
    write_csr_npy(tmp_path, sp.csr_matrix(np.eye(3, dtype=np.float32)))
    np.save(tmp_path / "data.npy", np.array([1, 0, 1], dtype=np.float32))
    with pytest.raises(DataFormatError, match="stored zeros") as info:
        open_csr_npy(tmp_path)
    assert info.value.path == str(tmp_path / "data.npy")


# ------------------------------------------------------------------ item 9: claimed sizes


@pytest.mark.parametrize("n_ids, n_used", [(1, 0), (7, 30), (1000, 50), (1000, 5000)])
def test_feature_slots_order_features_by_use_then_id(n_ids, n_used):
    # Features no weight uses share the last slot (see tests/test_claimed_sizes.py).
    ids = np.random.default_rng(n_used).integers(0, n_ids, n_used).astype(np.int32)
    uses = np.bincount(ids, minlength=n_ids)
    n_distinct = np.count_nonzero(uses)
    expected = np.full(n_ids, n_distinct, dtype=np.int32)
    order = np.argsort(-uses, kind="stable")[:n_distinct]
    expected[order] = np.arange(n_distinct)
    slots, n_slots = feature_slots(ids, n_ids)
    np.testing.assert_array_equal(slots, expected)
    assert n_slots == n_distinct + 1


def test_feature_slots_count_in_chunks_as_at_once(monkeypatch):
    ids = np.random.default_rng(3).integers(0, 40, 1000).astype(np.int32)
    expected = feature_slots(ids, 40)
    monkeypatch.setattr(tree_arrays, "COUNT_CHUNK", 7)
    slots, n_slots = feature_slots(ids, 40)
    np.testing.assert_array_equal(slots, expected[0])
    assert n_slots == expected[1]


def test_feature_slots_hold_no_copy_of_the_weights_ids():
    # A forest's weight ids are most of a large model (hundreds of millions
    # on the Amazon-670K shape): sorting a copy of them (np.unique) or
    # widening them to 64 bits at once (np.bincount) added a gigabyte to
    # the peak of fit there.
    ids = np.random.default_rng(0).integers(0, 5000, 8 * 2**20).astype(np.int32)
    tracemalloc.start()
    try:
        feature_slots(ids, 5000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < ids.nbytes / 2


def test_a_claimed_feature_count_costs_the_forest_nothing(problem, tmp_path):
    # No array of an "l2" LdSM file confirms n_features: the forest used to
    # keep a slot per claimed feature (the lab notebook, "Claimed sizes
    # in model files"); its tables now follow the ids its weights use.
    X, Y = problem
    LdSM(**SMALL, feature_scaling="l2").fit(X, Y).save(tmp_path / "model.npz")
    with np.load(tmp_path / "model.npz") as archive:
        arrays = {name: archive[name] for name in archive.files}
    meta = json.loads(arrays.pop("__meta__").tobytes())
    meta["params"]["n_features"] = 10**7
    np.savez(tmp_path / "wide.npz", **arrays,
             __meta__=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8))
    tracemalloc.start()
    try:
        model = LdSM.load(tmp_path / "wide.npz")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert model.n_features_in_ == 10**7
    assert peak < 10**7
