"""Input conversion at the Python boundary: what reaches the kernels is always sane."""

import numpy as np
import pytest
import scipy.sparse as sp

from xmltree._validation import check_csr_structure, check_features, check_labels
from xmltree.exceptions import DataFormatError


def test_dense_and_sparse_features_become_canonical_float32_csr():
    dense = np.array([[0, 1.5, 0], [2, 0, 3]])
    for X in (dense, sp.coo_matrix(dense), sp.csc_matrix(dense)):
        out = check_features(X)
        assert out.dtype == np.float32 and out.indices.dtype == np.int32
        assert out.indptr.dtype == np.int64 and out.has_sorted_indices
        assert np.array_equal(out.toarray(), dense)


def test_features_are_widened_but_never_truncated():
    X = sp.csr_matrix(np.eye(2))
    assert check_features(X, n_features=5).shape == (2, 5)
    with pytest.raises(DataFormatError, match="fitted with 1"):
        check_features(X, n_features=1)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_features_are_rejected(bad):
    with pytest.raises(DataFormatError, match="NaN or infinite"):
        check_features(np.array([[1.0, bad]]))
    with pytest.raises(DataFormatError, match="NaN or infinite"):
        check_features(sp.csr_matrix(np.array([[1.0, bad]])))


def test_non_2d_features_are_rejected():
    with pytest.raises(DataFormatError, match="2-D"):
        check_features(np.zeros(3))


def test_unsorted_scipy_input_is_sorted_not_rejected():
    X = sp.csr_matrix(
        (np.ones(3, np.float32), np.array([2, 1, 0], np.int32), np.array([0, 2, 3])),
        shape=(2, 3),
    )
    out = check_features(X)
    assert np.array_equal(out.indices, [1, 2, 0])


def test_corrupt_csr_structure_is_rejected():
    ones = np.array([0, 2, 3])
    with pytest.raises(DataFormatError, match="row 0"):
        check_csr_structure(ones, np.array([2, 2, 0]), (2, 3), "X")
    with pytest.raises(DataFormatError, match="out of range"):
        check_csr_structure(ones, np.array([0, 1, 7]), (2, 3), "X")
    with pytest.raises(DataFormatError, match="does not match"):
        check_csr_structure(ones, np.array([0, 1]), (2, 3), "X")
    with pytest.raises(DataFormatError, match="non-decreasing"):
        check_csr_structure(np.array([0, 3, 2, 3]), np.array([0, 1, 2]), (3, 3), "X")


def test_label_lists_matrices_and_arrays_agree():
    lists = [[0, 3], [], [2, 1]]
    expected = np.array([[1, 0, 0, 1], [0, 0, 0, 0], [0, 1, 1, 0]], dtype=np.float32)
    assert np.array_equal(check_labels(lists).toarray(), expected)
    assert np.array_equal(check_labels(expected).toarray(), expected)
    assert np.array_equal(check_labels(sp.csr_matrix(expected)).toarray(), expected)
    assert check_labels(lists, n_labels=6).shape == (3, 6)


def test_bad_labels_are_rejected():
    with pytest.raises(DataFormatError, match="negative"):
        check_labels([[0], [-1]])
    with pytest.raises(DataFormatError, match="out of range"):
        check_labels([[0], [5]], n_labels=3)
    with pytest.raises(DataFormatError, match="only 0 and 1"):
        check_labels(np.array([[0, 2]]))
    with pytest.raises(DataFormatError, match="integer label ids"):
        check_labels([["a"]])
    with pytest.raises(DataFormatError, match="X has 3"):
        check_labels([[0]], n_samples=3)


def test_shapes_beyond_the_int32_ids_of_the_kernels_are_rejected():
    with pytest.raises(DataFormatError, match="2147483648 columns exceed the int32 ids"):
        check_features(sp.csr_matrix((1, 2**31), dtype=np.float32))
    with pytest.raises(DataFormatError, match="2147483648 columns exceed the int32 ids"):
        check_labels(sp.csr_matrix((1, 2**31), dtype=np.float32))


def corrupted(matrix, name, position, value):
    """A copy of sparse ``matrix`` whose array ``name`` has ``value`` at ``position``.

    Assigned after construction, as a caller's code can, so scipy never checked it.
    """
    matrix = matrix.copy()
    array = getattr(matrix, name).copy()
    array[position] = value
    setattr(matrix, name, array)
    return matrix


CSR = sp.csr_matrix(np.array([[0, 1, 2], [3, 0, 4], [0, 0, 5]], dtype=np.float32))


@pytest.mark.parametrize(
    ("matrix", "words"),
    [
        # Both used to reach scipy's index sort: a segfault, and
        # RuntimeError('vector::_M_default_append').
        (corrupted(CSR, "indptr", 1, 10**7), "indptr"),
        (corrupted(CSR, "indptr", 2, 0), "indptr"),
        (corrupted(CSR, "indptr", 0, -1), "indptr"),
        (corrupted(CSR, "indices", 0, 3), "column id 3 out of range"),
        (corrupted(CSR, "indices", 0, -1), "column id -1 out of range"),
        (corrupted(CSR.tocsc(), "indptr", 1, 10**7), "indptr"),
        (corrupted(CSR.tocsc(), "indices", 1, 9), "row id 9 out of range"),
        (corrupted(CSR.tocoo(), "row", 0, 9), "row id 9 out of range"),
        (corrupted(CSR.tocoo(), "col", 0, -4), "column id -4 out of range"),
        (corrupted(CSR.tobsr((1, 1)), "indptr", 1, 10**7), "indptr"),
        (corrupted(CSR.tobsr((1, 1)), "indices", 0, 8), "column id 8 out of range"),
    ],
)
def test_malformed_sparse_input_is_refused_before_scipy_touches_it(matrix, words):
    with pytest.raises(DataFormatError, match=words):
        check_features(matrix)
    matrix.data[:] = 1
    with pytest.raises(DataFormatError, match=words):
        check_labels(matrix)


def test_sparse_index_arrays_of_other_types_are_refused():
    matrix = CSR.copy()
    matrix.indices = matrix.indices.astype(np.float64)
    with pytest.raises(DataFormatError, match="integer array"):
        check_features(matrix)


def test_wide_column_ids_are_refused_not_wrapped():
    # 2**32 + 1 used to become column 1 in the conversion to int32.
    X = sp.csr_matrix((np.ones(1, np.float32), np.array([2**32 + 1]), np.array([0, 1])),
                      shape=(1, 5))
    with pytest.raises(DataFormatError, match="column id 4294967297 out of range"):
        check_features(X)


def test_predicting_on_a_malformed_csr_matrix_raises_data_format_error():
    from xmltree import LdSM

    X = sp.random(30, 6, density=0.5, format="csr", random_state=0, dtype=np.float32)
    model = LdSM(n_trees=1, max_nodes=5, epochs=1, n_jobs=1, random_state=0)
    model.fit(X, [[i % 3] for i in range(30)])
    with pytest.raises(DataFormatError, match="indptr"):
        model.predict(corrupted(X, "indptr", 1, 10**7))


@pytest.mark.parametrize(
    ("labels", "words"),
    [
        # A 0/1 indicator given as lists used to be read as the ids 0 and 1.
        ([[0, 1, 0, 1], [1, 0, 0, 0]], "row 0 lists label id 0 twice"),
        ([[1.7]], "not an integer"),  # used to become label 1
        ([["3"]], "not an integer"),
        ([[True]], "not an integer"),
        ([[float("nan")]], "not an integer"),
        # OverflowError in the conversion to int32 (and uint64 ids beyond it).
        ([[2**31]], "label id 2147483648, out of range"),
        ([[np.uint64(2**63)]], "label id 9223372036854775808, out of range"),
    ],
)
def test_label_lists_are_never_coerced(labels, words):
    with pytest.raises(DataFormatError, match=words):
        check_labels(labels)


def test_integral_float_label_ids_are_accepted():
    assert np.array_equal(check_labels([[1.0, np.float32(3)]]).indices, [1, 3])


# ----------------------------------------------------------------------------- checked once


@pytest.fixture
def check_calls(monkeypatch):
    """Count the calls of check_features and check_labels from anywhere in xmltree."""
    import sys

    from xmltree import _validation

    calls = {"check_features": 0, "check_labels": 0}

    def counting(name):
        original = getattr(_validation, name)

        def check(*args, **kwargs):
            calls[name] += 1
            return original(*args, **kwargs)
        return original, check

    for name in calls:
        original, check = counting(name)
        for module in [m for key, m in sys.modules.items() if key.startswith("xmltree")]:
            if getattr(module, name, None) is original:
                monkeypatch.setattr(module, name, check)

    def take():
        counted = dict(calls)
        calls.update(dict.fromkeys(calls, 0))
        return counted
    return take


def _problem():
    rng = np.random.default_rng(0)
    X = sp.random(40, 12, density=0.4, format="csr", random_state=1, dtype=np.float32)
    every_row_labelled = np.arange(6) == rng.integers(0, 6, 40)[:, None]
    Y = sp.csr_matrix((rng.random((40, 6)) < 0.3) | every_row_labelled, dtype=np.float32)
    return X, Y


def test_ldsm_checks_x_and_y_once_per_fit_and_x_once_per_predict(check_calls):
    from xmltree import LdSM

    X, Y = _problem()
    model = LdSM(n_trees=3, max_nodes=7, epochs=2, random_state=0)
    model.fit(X, Y)
    assert check_calls() == {"check_features": 1, "check_labels": 1}
    model.predict(X, k=3)
    assert check_calls() == {"check_features": 1, "check_labels": 0}
    model.predict_scores(X)
    assert check_calls() == {"check_features": 1, "check_labels": 0}


def test_lomtree_and_learned_tree_check_x_once(check_calls):
    from xmltree import LearnedTree, LOMTree

    X, Y = _problem()
    y = Y.indices[Y.indptr[:-1]]
    model = LOMTree(random_state=0).fit(X, y)
    assert check_calls()["check_features"] == 1
    model.predict_top_k(X, 2)
    assert check_calls()["check_features"] == 1
    learned = LearnedTree(dim=4, epochs=1, random_state=0).fit(X, Y)
    assert check_calls() == {"check_features": 1, "check_labels": 1}
    learned.predict_top_k(X, 2)
    assert check_calls()["check_features"] == 1


def test_a_reranked_stage_checks_x_and_y_once_per_fit_and_x_once_per_predict(check_calls):
    from xmltree import LOMTree
    from xmltree.rerank import Reranked

    X, Y = _problem()
    learner = LOMTree(random_state=0).fit(X, Y.indices[Y.indptr[:-1]])
    check_calls()
    stage = Reranked(learner).fit(X, Y)
    assert check_calls() == {"check_features": 1, "check_labels": 1}
    stage.predict_top_k(X, 3)
    assert check_calls() == {"check_features": 1, "check_labels": 0}
