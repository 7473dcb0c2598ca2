"""Feature scaling learned at fit: the transforms, their choice, their storage, their use."""

import numpy as np
import pytest
import scipy.sparse as sp

from xmltree import LdSM
from xmltree._scaling import FeatureScaler
from xmltree._validation import check_features
from xmltree.datasets import make_synthetic, write_predictions, write_xc
from xmltree.exceptions import ModelFormatError


def counts():
    X = sp.csr_matrix(np.array([[2, 0, 1, 0], [0, 0, 3, 0], [1, 1, 1, 0], [0, 0, 0, 0]],
                               dtype=np.float32))
    return check_features(X)


def test_tfidf_is_sublinear_tf_times_smoothed_idf_then_unit_rows():
    X = counts()
    scaler = FeatureScaler("tfidf").fit(X)
    dense = X.toarray().astype(np.float64)
    df = (dense > 0).sum(axis=0)
    idf = np.where(df > 0, np.log(5 / (1 + df)) + 1, 0.0)
    expected = np.where(dense > 0, 1 + np.log(np.where(dense > 0, dense, 1)), 0) * idf
    norms = np.linalg.norm(expected, axis=1, keepdims=True)
    expected = expected / np.where(norms > 0, norms, 1)
    np.testing.assert_allclose(scaler.transform(X).toarray(), expected, rtol=1e-6)
    assert scaler.idf_[3] == 0  # a feature no training row has


def test_tfidf_never_flips_the_sign_of_fractional_weights():
    weighted = check_features(sp.csr_matrix(np.array([[0.1, 0.3, -0.2, 2.0]], dtype=np.float32)))
    scaler = FeatureScaler("tfidf").fit(weighted)
    scaled = scaler.transform(weighted).toarray()[0]
    assert np.array_equal(np.sign(scaled), [1, 1, -1, 1])
    # Below 1 the term frequency is the value itself: continuous and increasing at 1.
    ones = np.ones(4, dtype=np.float32)
    scaler.idf_ = ones
    raw = scaler.transform(weighted).toarray()[0] * np.linalg.norm([0.1, 0.3, 0.2,
                                                                      1 + np.log(2)])
    np.testing.assert_allclose(raw, [0.1, 0.3, -0.2, 1 + np.log(2)], rtol=1e-6)


def test_unseen_features_get_no_weight_and_do_not_shrink_known_ones():
    scaler = FeatureScaler("tfidf").fit(counts())
    new = check_features(sp.csr_matrix(np.array([[0, 0, 1, 5]], dtype=np.float32)))
    np.testing.assert_allclose(scaler.transform(new).toarray(), [[0, 0, 1, 0]], atol=1e-7)


def test_l2_rows_have_unit_norm_and_empty_rows_stay_empty():
    X = counts()
    scaled = FeatureScaler("l2").fit(X).transform(X)
    np.testing.assert_allclose(np.linalg.norm(scaled.toarray(), axis=1), [1, 1, 1, 0], atol=1e-6)


def test_transform_keeps_the_kernel_layout():
    X = counts()
    scaled = FeatureScaler("tfidf").fit(X).transform(X)
    assert scaled.data.dtype == np.float32 and scaled.indices.dtype == np.int32
    assert scaled.indptr.dtype == np.int64 and scaled.indices is X.indices


@pytest.mark.parametrize("values, kind", [
    ([1.0, 2.0, 7.0], "tfidf"), ([1.0, 1.0], "tfidf"), ([0.5, 1.0], "l2"), ([-1.0, 2.0], "l2"),
])
def test_auto_picks_tfidf_for_counts_and_l2_for_weighted_features(values, kind):
    X = check_features(sp.csr_matrix(np.array([values], dtype=np.float32)))
    assert FeatureScaler("auto").fit(X).kind_ == kind


def test_none_leaves_features_as_given():
    X = counts()
    scaler = FeatureScaler(None).fit(X)
    assert scaler.kind_ == "none" and scaler.transform(X) is X


@pytest.mark.parametrize("params, arrays", [
    ({"kind": "bm25"}, {}), ([], {}), ({"kind": "tfidf"}, {}),
    ({"kind": "tfidf"}, {"scaling/idf": np.ones(3, dtype=np.float32)}),
    ({"kind": "tfidf"}, {"scaling/idf": np.ones(4, dtype=np.float64)}),
    ({"kind": "tfidf"}, {"scaling/idf": np.array([1, -1, 1, 1], dtype=np.float32)}),
    ({"kind": "tfidf"}, {"scaling/idf": np.array([1, np.nan, 1, 1], dtype=np.float32)}),
    ({"kind": "l2"}, {"scaling/idf": np.ones(4, dtype=np.float32)}),
])
def test_bad_stored_scalings_are_refused(params, arrays):
    with pytest.raises(ModelFormatError, match="feature scaling"):
        FeatureScaler.from_state(params, arrays, n_features=4)


def test_state_round_trip():
    scaler = FeatureScaler("tfidf").fit(counts())
    params, arrays = scaler.get_state()
    again = FeatureScaler.from_state(params, arrays, n_features=4)
    assert again.kind_ == "tfidf" and np.array_equal(again.idf_, scaler.idf_)


def test_predict_file_scales_new_rows_like_predict(tmp_path):
    X, Y = make_synthetic(200, 30, 8, random_state=1)
    X.data = np.ceil(X.data * 5).astype(np.float32)  # counts: tf-idf is learned
    model = LdSM(n_trees=2, max_nodes=7, epochs=2, random_state=0).fit(X[:150], Y[:150])
    assert model.scaler_.kind_ == "tfidf"
    write_xc(tmp_path / "test.txt", X[150:], Y[150:])
    model.predict_file(tmp_path / "test.txt", tmp_path / "file.txt", k=3)
    write_predictions(tmp_path / "memory.txt", *model.predict(X[150:], k=3), model.n_labels_)
    assert (tmp_path / "file.txt").read_bytes() == (tmp_path / "memory.txt").read_bytes()


def test_scaling_makes_ldsm_insensitive_to_document_length():
    X, Y = make_synthetic(300, 40, 10, random_state=2)
    X.data = np.ceil(X.data * 5).astype(np.float32)
    model = LdSM(n_trees=2, max_nodes=7, epochs=2, random_state=0).fit(X, Y)
    longer = X.copy()
    longer.data = longer.data * 3  # every count tripled: same document, longer
    # Sublinear tf is not scale-free, but the L2 step makes a uniform change of
    # length matter far less than it does to the raw counts.
    same = np.mean(model.predict(X, k=1)[0] == model.predict(longer, k=1)[0])
    assert same > 0.9
