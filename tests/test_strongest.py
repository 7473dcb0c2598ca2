"""Each row's strongest features (``xmltree.ldsm._strongest``), against a slow reference."""

import numpy as np
import pytest
import scipy.sparse as sp

from xmltree._validation import check_features
from xmltree.ldsm._strongest import keep_strongest


def strongest_columns(row: np.ndarray, n: int) -> list[int]:
    """The columns of the n largest |values| of a dense row, ties to smaller
    columns, in increasing order (slow reference)."""
    by_strength = sorted((-abs(value), column) for column, value in enumerate(row) if value)
    return sorted(column for _, column in by_strength[:n])


@pytest.mark.parametrize("max_per_row", [1, 3, 8])
def test_keep_strongest_keeps_each_rows_largest_magnitudes(max_per_row):
    rng = np.random.default_rng(3)
    # Few magnitudes of both signs: many ties.
    dense = rng.choice([-2.0, -1.0, 0.0, 0.0, 0.0, 1.0, 2.0], size=(40, 12))
    dense[5] = 0.0
    kept = keep_strongest(check_features(dense), max_per_row)
    assert kept.dtype == np.float32 and kept.indices.dtype == np.int32
    assert kept.indptr.dtype == np.int64
    for i, row in enumerate(dense):
        columns = strongest_columns(row, max_per_row)
        assert kept[i].indices.tolist() == columns
        assert kept[i].data.tolist() == row[columns].tolist()


def test_keep_strongest_returns_a_matrix_without_longer_rows_itself():
    X = check_features(np.eye(3))
    assert keep_strongest(X, 1) is X


def test_keep_strongest_matches_the_reference_on_float_rows():
    rng = np.random.default_rng(5)
    X = check_features(sp.random(60, 300, density=0.3, random_state=rng, dtype=np.float32))
    kept = keep_strongest(X, 20)
    dense = X.toarray()
    for i, row in enumerate(dense):
        assert kept[i].indices.tolist() == strongest_columns(row, 20)
