"""CSR matrices stored as .npy files: round trip, refused inputs, damaged files."""

import numpy as np
import pytest
import scipy.sparse as sp

from xmltree.datasets import open_csr_npy, write_csr_npy
from xmltree.exceptions import DataFormatError


def small_matrix():
    return sp.csr_matrix(np.array([[0, 1.5, 0], [2, 0, -3]], dtype=np.float32))


def test_written_matrix_maps_back_unchanged(tmp_path):
    write_csr_npy(tmp_path, small_matrix())
    mapped = open_csr_npy(tmp_path)
    np.testing.assert_array_equal(mapped.toarray(), small_matrix().toarray())


@pytest.mark.parametrize(
    ("matrix", "words"),
    [
        (
            sp.csr_matrix(
                (np.ones(1, np.float32), np.array([2**32 + 1]), np.array([0, 1])),
                shape=(1, 2**33),
            ),
            "8589934592 columns",
        ),
        (
            sp.csr_matrix(
                (np.ones(1, np.float32), np.array([2**32 + 1]), np.array([0, 1])), shape=(1, 5)
            ),
            "column id 4294967297",
        ),
    ],
)
def test_write_refuses_ids_that_do_not_fit_in_32_bits(tmp_path, matrix, words):
    # They used to be stored wrapped (2**32 + 1 as 1).
    with pytest.raises(DataFormatError, match=words):
        write_csr_npy(tmp_path / "m", matrix)
    assert not (tmp_path / "m").exists()
