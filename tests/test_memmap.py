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


def replace_in(old, new):
    return lambda content: content.replace(old, new, 1)


@pytest.mark.parametrize(
    ("name", "damage", "words"),
    [
        # numpy raises EOFError, tokenize.TokenError, SyntaxError, TypeError
        # or ValueError for these; they used to escape as they were.
        ("indices", lambda content: b"", "EOFError"),
        ("indices", lambda content: content[:20], "not a readable .npy file"),
        ("data", lambda content: content[:-4], "not a readable .npy file"),
        ("indptr", replace_in(b"(3,)", b"(3, "), "TokenError"),
        ("indptr", replace_in(b"'<i8'", b"'<,i8'"), "SyntaxError"),
        ("shape", replace_in(b"'<i8', '", b"'<i8',b'"), "TypeError"),
        ("data", lambda content: b"XX" + content[2:], "not a readable .npy file"),
    ],
)
def test_damaged_files_are_data_format_errors_naming_the_file(tmp_path, name, damage, words):
    write_csr_npy(tmp_path, small_matrix())
    path = tmp_path / f"{name}.npy"
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(DataFormatError, match=words) as info:
        open_csr_npy(tmp_path)
    assert info.value.path == str(path)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_values_are_refused(tmp_path, bad):
    write_csr_npy(tmp_path, small_matrix())
    np.save(tmp_path / "data.npy", np.array([1.5, bad, -3], dtype=np.float32))
    with pytest.raises(DataFormatError, match="NaN or infinite") as info:
        open_csr_npy(tmp_path)
    assert info.value.path == str(tmp_path / "data.npy")


@pytest.mark.parametrize(
    ("name", "array", "words"),
    [
        ("indices", np.array([1, 0, 2], dtype=np.int64), "1-D int32"),
        ("data", np.ones((3, 1), dtype=np.float32), "got 2-D"),
        ("shape", np.array([2, -3]), "non-negative"),
        ("shape", np.array([2, 3, 1]), "2 non-negative"),
        ("shape", np.array([2, 2**31]), "2147483648 columns"),
    ],
)
def test_arrays_of_the_wrong_kind_are_refused(tmp_path, name, array, words):
    write_csr_npy(tmp_path, small_matrix())
    np.save(tmp_path / f"{name}.npy", array)
    with pytest.raises(DataFormatError, match=words) as info:
        open_csr_npy(tmp_path)
    assert info.value.path == str(tmp_path / f"{name}.npy")
