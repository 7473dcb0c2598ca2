"""Readers and writers of XMC file formats: exact contents, round trips, bad input."""

from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

from xmltree.datasets import (
    _xc,
    iter_xc_chunks,
    read_arff,
    read_bow_pair,
    read_libsvm,
    read_predictions,
    read_xc,
    read_xc_split,
    write_predictions,
    write_xc,
)
from xmltree.exceptions import DataFormatError


def write_text(tmp_path, name, text):
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def assert_canonical(matrix, shape):
    """The layout every reader promises: CSR, float32, int32/int64, sorted, unique."""
    assert sp.isspmatrix_csr(matrix)
    assert matrix.shape == shape
    assert matrix.dtype == np.float32
    assert matrix.indices.dtype == np.int32
    assert matrix.indptr.dtype == np.int32
    for row in range(matrix.shape[0]):
        columns = matrix.indices[matrix.indptr[row] : matrix.indptr[row + 1]]
        assert np.all(np.diff(columns) > 0)
    assert np.all(matrix.data != 0)


def assert_same_matrix(actual, expected):
    """Same shape, structure and bit-identical float32 values."""
    # .copy() also gives both index arrays one dtype, which eliminate_zeros needs.
    expected = sp.csr_matrix(expected, dtype=np.float32).copy()
    expected.eliminate_zeros()
    expected.sort_indices()
    assert actual.shape == expected.shape
    np.testing.assert_array_equal(actual.indptr, expected.indptr)
    np.testing.assert_array_equal(actual.indices, expected.indices)
    np.testing.assert_array_equal(actual.data.view(np.int32), expected.data.view(np.int32))


def random_problem(rng, n_rows=60, n_features=40, n_labels=15, unlabelled_rows=(3, 5)):
    """Random features (varied magnitudes, empty row 5) and labels (some rows unlabelled)."""
    shape = (n_rows, n_features)
    X = rng.standard_normal(shape) * 10.0 ** rng.integers(-30, 30, shape)
    X[::3] = rng.integers(1, 20_000_000, X[::3].shape)  # whole numbers, 8 digits too
    X[rng.random(X.shape) > 0.2] = 0
    X[5] = 0
    Y = (rng.random((n_rows, n_labels)) < 0.15).astype(np.float32)
    Y[list(unlabelled_rows)] = 0
    return sp.csr_matrix(X.astype(np.float32)), sp.csr_matrix(Y)


# --------------------------------------------------------------------------
# XC single-file format
# --------------------------------------------------------------------------

XC_TEXT = (
    "6 5 4\n"
    "1,3 0:1 2:0.5\n"  # labels then features
    " 4:2.5\n"  # leading space: no labels
    "3:-1 1:7\n"  # first token is a feature: no labels; unsorted ids
    "\n"  # blank line: empty row
    "2\n"  # labels, no features
    "0\t1:0 2:1e-3\r\n"  # tab separator, explicit zero dropped, CRLF
)


def test_read_xc_matches_hand_written_matrices(tmp_path):
    X, Y = read_xc(write_text(tmp_path, "data.txt", XC_TEXT))
    expected_X = np.zeros((6, 5), dtype=np.float32)
    expected_X[0, [0, 2]] = [1, 0.5]
    expected_X[1, 4] = 2.5
    expected_X[2, [1, 3]] = [7, -1]
    expected_X[5, 2] = np.float32(1e-3)
    expected_Y = np.zeros((6, 4), dtype=np.float32)
    expected_Y[0, [1, 3]] = 1
    expected_Y[4, 2] = 1
    expected_Y[5, 0] = 1
    assert_canonical(X, (6, 5))
    assert_canonical(Y, (6, 4))
    assert_same_matrix(X, expected_X)
    assert_same_matrix(Y, expected_Y)


def test_read_xc_widens_shapes_and_rejects_narrowing(tmp_path):
    path = write_text(tmp_path, "data.txt", XC_TEXT)
    X, Y = read_xc(path, n_features=9, n_labels=7)
    assert X.shape == (6, 9) and Y.shape == (6, 7)
    assert_same_matrix(X[:, :5], read_xc(path)[0])
    with pytest.raises(DataFormatError, match="n_features"):
        read_xc(path, n_features=4)
    with pytest.raises(DataFormatError, match="n_labels"):
        read_xc(path, n_labels=3)


def test_write_then_read_xc_is_bit_exact(tmp_path, rng):
    X, Y = random_problem(rng)
    path = tmp_path / "out.txt"
    write_xc(path, X, Y)
    X_read, Y_read = read_xc(path)
    assert_canonical(X_read, X.shape)
    assert_same_matrix(X_read, X)
    assert_same_matrix(Y_read, Y)
    # Rows without labels and empty rows are written in place, not skipped.
    lines = path.read_text().split("\n")
    assert lines[4].startswith(" ") and lines[6] == ""


def test_write_xc_accepts_label_lists_and_drops_stored_zeros(tmp_path):
    values = np.array([0.0, 2.0, 0.0, 0.5, 3.0], np.float32)
    X = sp.csr_matrix((values, [0, 2, 1, 0, 1], [0, 2, 3, 3, 5]), shape=(4, 3))
    write_xc(tmp_path / "out.txt", X, [[1], [], [0, 1], []])
    assert (tmp_path / "out.txt").read_text() == "4 3 2\n1 2:2\n\n0,1\n 0:0.5 1:3\n"
    X_read, Y_read = read_xc(tmp_path / "out.txt")
    assert X.nnz == 5  # the caller's matrix is untouched
    assert_same_matrix(X_read, [[0, 0, 2], [0, 0, 0], [0, 0, 0], [0.5, 3, 0]])
    assert_same_matrix(Y_read, [[0, 1], [0, 0], [1, 1], [0, 0]])


def wide_id_matrix(column, n_columns):
    """One-entry CSR matrix with int64 indices, as built for ids beyond int32."""
    return sp.csr_matrix(
        (np.ones(1, np.float32), np.array([column], np.int64), np.array([0, 1], np.int64)),
        shape=(1, n_columns),
    )


@pytest.mark.parametrize(
    ("X", "Y", "words"),
    [
        (wide_id_matrix(2**32 + 1, 2**33), [[0]], "X: 8589934592 columns exceed"),
        (wide_id_matrix(2**32 + 1, 5), [[0]], "X: column id 4294967297 out of range"),
        (np.zeros((0, 2**32), np.float32), np.zeros((0, 1)), "X: 4294967296 columns"),
        (wide_id_matrix(0, 5), wide_id_matrix(2**31 + 3, 2**32), "Y: 4294967296 columns"),
    ],
)
def test_write_xc_refuses_ids_that_do_not_fit_in_32_bits(tmp_path, X, Y, words):
    # They used to be wrapped by the int32 conversion and written (2**32 + 1 as 1).
    with pytest.raises(DataFormatError, match=words):
        write_xc(tmp_path / "out.txt", X, Y)
    assert not (tmp_path / "out.txt").exists()


def test_write_xc_leaves_nothing_behind_when_it_fails(tmp_path, monkeypatch, rng):
    X, Y = random_problem(rng)
    path = tmp_path / "out.txt"
    path.write_text("old content\n")
    with pytest.raises(DataFormatError):
        write_xc(path, X, Y[:-1])
    assert path.read_text() == "old content\n"

    def fail_midway(*args, **kwargs):
        yield "1 0:1\n"
        raise OSError("disk full")

    monkeypatch.setattr(_xc, "_xc_lines", fail_midway)
    with pytest.raises(OSError, match="disk full"):
        write_xc(path, X, Y)
    assert path.read_text() == "old content\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_parser_sorts_shuffled_rows_and_accepts_varied_spacing(tmp_path, rng):
    X, Y = random_problem(rng, n_rows=40)
    lines = [f"{X.shape[0]} {X.shape[1]} {Y.shape[1]}"]
    for row in range(X.shape[0]):
        start, end = X.indptr[row], X.indptr[row + 1]
        order = rng.permutation(end - start)
        tokens = [f"{X.indices[start + k]}:{X.data[start + k]:.9g}" for k in order]
        labels = ",".join(str(label) for label in rng.permutation(Y[row].indices))
        separator = " " * int(rng.integers(1, 3))
        lines.append(labels + (" " if not labels else separator) + separator.join(tokens))
    X_read, Y_read = read_xc(write_text(tmp_path, "shuffled.txt", "\n".join(lines) + "\n"))
    assert_same_matrix(X_read, X)
    assert_same_matrix(Y_read, Y)


def nearest_float32(text):
    """Correctly rounded float32 of a decimal string (ties to even), by exact arithmetic."""
    exact = Fraction(text)
    guess = np.float32(float(exact))
    candidates = [
        np.nextafter(guess, np.float32(-np.inf)),
        guess,
        np.nextafter(guess, np.float32(np.inf)),
    ]
    return min(
        candidates,
        key=lambda c: (abs(Fraction(float(c)) - exact), int(np.array(c).view(np.int32)) & 1),
    )


def test_values_are_correctly_rounded_to_float32(tmp_path, rng):
    # Plain decimals take the parser's exact shortcut, the same text with an
    # exponent takes strtof; both must give the correctly rounded float32.
    texts = []
    for _ in range(3000):
        whole = str(int(rng.integers(0, 10 ** int(rng.integers(1, 10)))))
        fraction = str(int(rng.integers(0, 10 ** int(rng.integers(1, 12))))).zfill(
            int(rng.integers(1, 12))
        )
        sign = "-" if rng.random() < 0.3 else ""
        texts.append(f"{sign}{whole}.{fraction}" if rng.random() < 0.8 else sign + whole)
    texts += ["16777216", "16777217", "0.1", "1.", ".5", "-.25", "0.0000000001"]
    lines = [f"{len(texts)} 2 1"] + [f"0:{text} 1:{text}e0" for text in texts]
    X, _ = read_xc(write_text(tmp_path, "values.txt", "\n".join(lines) + "\n"))
    dense = X.toarray()
    # Zeros are dropped on reading, so -0.0 is expected as +0.0.
    expected = np.array([nearest_float32(text) for text in texts], dtype=np.float32) + 0
    np.testing.assert_array_equal(dense[:, 0].view(np.int32), expected.view(np.int32))
    np.testing.assert_array_equal(dense[:, 1].view(np.int32), expected.view(np.int32))


BAD_XC = [
    # (file content, line of the problem, words expected in the message)
    ("", 1, "empty"),
    ("2 3 2", 1, "header"),
    ("2 3\n0 0:1\n1 1:1\n", 1, "header"),
    ("a b c\n", 1, "header"),
    ("2\x0b3 2\n0 0:1\n1 1:1\n", 1, "header"),
    ("2 3 2\x0c\n0 0:1\n1 1:1\n", 1, "header"),
    ("2 \u00b3 2\n0 0:1\n1 1:1\n", 1, "header"),
    ("2 3 2\n0 0:1\n1 1:1\n0 2:1\n", 4, "declares 2 rows"),
    ("2 3 2\n0 0:1\n1 1:1\n\n", 4, "declares 2 rows"),
    ("3 3 2\n0 0:1\n1 1:1\n", 4, "ends after 2"),
    ("2 3 2\n0 0:1\n1 3:1\n", 3, "feature id 3"),
    ("2 3 2\n0 0:1\n2 1:1\n", 3, "label id 2"),
    ("2 3 2\n0 -1:1\n1 1:1\n", 2, "negative"),
    ("2 3 2\n0 0:1\n-1 1:1\n", 3, "negative"),
    ("2 3 2\n0 0:1\n1 1:\n", 3, "'1:'"),
    ("2 3 2\n0 :3\n1 1:1\n", 2, "':3'"),
    ("2 3 2\n0 0:1\n1 a:b\n", 3, "'a:b'"),
    ("2 3 2\n0 1:2:3\n1 1:1\n", 2, "'1:2:3'"),
    ("2 3 2\n1,,0 0:1\n1 1:1\n", 2, "'1,,0'"),
    ("2 3 2\n1,0, 0:1\n1 1:1\n", 2, "label list"),
    ("2 3 2\n0 0:1 2\n1 1:1\n", 2, "'2'"),
    ("2 3 2\n0 0:1\n1 1:abc\n", 3, "not a number"),
    ("2 3 2\n0 0:nan\n1 1:1\n", 2, "NaN"),
    ("2 3 2\n0 0:1\n1 1:-inf\n", 3, "infinite"),
    ("2 3 2\n0 0:1e39\n1 1:1\n", 2, "infinite"),
    ("2 3 2\n0 0:1\n1 1:1", 3, "truncated"),
    ("2 3 2\n0 0:1\n1 1:0.", 3, "truncated"),
    ("2 3 2\n0 0:1\n1 2:1 0:2 2:3\n", 3, "feature id 2 appears more"),
    ("2 3 2\n0 0:1\n1,0,1 1:1\n", 3, "label id 1 appears more"),
    ("2 3 2\n0 0:1\n1 99999999999:1\n", 3, "32-bit"),
    ("2 3 2\n0 0:1\n1 qid:4 1:1\n", 3, "qid"),
    # C white space that is not a token separator: strtof would skip it, and
    # the newline after it, merging two lines into one row.
    ("3 10 3\n0 3:\x0b\n1 5:1\n 7:2\n", 2, "control character 0x0b"),
    ("2 3 2\n0 0:\x0c\n1 1:1\n", 2, "control character 0x0c"),
    ("2 3 2\n0 0:1\x0b1:2\n1 1:1\n", 2, "control character 0x0b"),
    ("2 3 2\n0 0:1\r1:2\n1 1:1\n", 2, "control character 0x0d"),
    ("2 3 2\n0 0:1\n1 1:1\x00\n", 3, "control character 0x00"),
    ("2 3 2\n0\x0c0:1\n1 1:1\n", 2, "control character 0x0c"),
    # Numbers are plain ASCII decimals, whatever strtof or float() accept.
    ("2 3 2\n0 0:0x1p3\n1 1:1\n", 2, "'0:0x1p3' is not a number"),
    ("2 3 2\n0 0:1_0\n1 1:1\n", 2, "'0:1_0' is not a number"),
    ("2 3 2\n0 0:1e\n1 1:1\n", 2, "not a number"),
    ("2 3 2\n0 0:.\n1 1:1\n", 2, "not a number"),
    ("2 3 2\n0 0:-\n1 1:1\n", 2, "not a number"),
    ("2 3 2\n0 0:1\n1 1:Infinity\n", 3, "infinite"),
    ("2 3 2\n0 0:\xd9\xa1\n1 1:1\n", 2, "not a number"),
]


@pytest.mark.parametrize(("text", "line", "words"), BAD_XC)
def test_read_xc_reports_bad_input_with_its_line(tmp_path, text, line, words):
    path = write_text(tmp_path, "bad.txt", text)
    with pytest.raises(DataFormatError) as info:
        read_xc(path)
    assert info.value.line == line
    assert info.value.path == str(path)
    assert words in info.value.problem
    assert f"line {line}" in str(info.value)


def test_numbers_in_every_decimal_spelling_are_read(tmp_path):
    text = "1 9 1\n0:+1 1:1. 2:.5 3:-.25e1 4:2E-1 5:1e+1 6:007 7:-0 8:12345678.5\n"
    X, _ = read_xc(write_text(tmp_path, "values.txt", text))
    expected = np.array([[1, 1, 0.5, -2.5, 0.2, 10, 7, 0, 12345678.5]], dtype=np.float32)
    assert_same_matrix(X, expected)


def test_header_may_use_tabs_runs_of_blanks_and_crlf(tmp_path):
    X, Y = read_xc(write_text(tmp_path, "data.txt", "1\t 3  2 \r\n0 2:1\r\n"))
    assert_same_matrix(X, [[0, 0, 1]])
    assert_same_matrix(Y, [[1, 0]])


VERTICAL_TAB_ROW = "0 3:\x0b\n1 5:1\n"


@pytest.mark.parametrize(
    ("reader", "files"),
    [
        (read_xc, {"data.txt": "3 10 3\n" + VERTICAL_TAB_ROW + " 7:2\n"}),
        (read_libsvm, {"data.txt": VERTICAL_TAB_ROW + " 7:2\n"}),
        (
            read_bow_pair,
            {"data.txt": "2 10\n3:1\x0c\n5:1\n", "labels.txt": "2 3\n0:1\n1:1\n"},
        ),
        (
            lambda path: list(iter_xc_chunks(path, 1)),
            {"data.txt": "3 10 3\n" + VERTICAL_TAB_ROW + " 7:2\n"},
        ),
    ],
)
def test_every_text_reader_rejects_control_characters_in_a_row(tmp_path, reader, files):
    paths = [write_text(tmp_path, name, text) for name, text in files.items()]
    with pytest.raises(DataFormatError) as info:
        reader(*paths)
    assert info.value.path == str(paths[0])
    assert "control character" in info.value.problem
    assert info.value.line == (1 if reader is read_libsvm else 2)


def test_mutated_files_are_read_or_rejected_never_crash(tmp_path, rng):
    # Random edits of a valid file: every outcome must be a canonical result
    # or a DataFormatError with a line number inside the file.
    alphabet = b" \t\n\r:,-.e+0123456789qidnaf"
    original = XC_TEXT.encode()
    path = tmp_path / "mutated.txt"
    for _ in range(400):
        data = bytearray(original)
        for _ in range(int(rng.integers(1, 4))):
            where = int(rng.integers(0, len(data)))
            byte = alphabet[int(rng.integers(0, len(alphabet)))]
            action = rng.integers(0, 3)
            if action == 0:
                data[where] = byte
            elif action == 1:
                data.insert(where, byte)
            else:
                del data[where]
        path.write_bytes(bytes(data))
        for reader in (read_xc, read_libsvm):
            try:
                X, Y = reader(path)
            except DataFormatError as error:
                assert error.line is None or 1 <= error.line <= data.count(b"\n") + 2
            else:
                assert_canonical(X, X.shape)
                assert_canonical(Y, (X.shape[0], Y.shape[1]))


def test_zero_row_file_and_ids_at_the_limit(tmp_path):
    X, Y = read_xc(write_text(tmp_path, "empty.txt", "0 3 2\n"))
    assert X.shape == (0, 3) and Y.shape == (0, 2)
    big = 2**31 - 1
    X, Y = read_libsvm(write_text(tmp_path, "big.txt", f"{big - 5} {big - 1}:1.5\n"))
    assert X.shape == (1, big) and X.indices[0] == big - 1 and Y.indices[0] == big - 5


def test_bibtex_loads_with_the_published_shape_and_round_trips(shared_datasets, tmp_path):
    X, Y = read_xc(shared_datasets / "bibtex" / "train.txt")
    assert_canonical(X, (4880, 1836))
    assert_canonical(Y, (4880, 159))
    write_xc(tmp_path / "bibtex.txt", X, Y)
    X_read, Y_read = read_xc(tmp_path / "bibtex.txt")
    assert_same_matrix(X_read, X)
    assert_same_matrix(Y_read, Y)


# --------------------------------------------------------------------------
# libsvm / svmlight
# --------------------------------------------------------------------------


def test_read_libsvm_agrees_with_scikit_learn(tmp_path, rng):
    datasets = pytest.importorskip("sklearn.datasets")
    # scikit-learn cannot read rows without labels.
    X, Y = random_problem(rng, n_rows=80, unlabelled_rows=())
    Y = Y.toarray()
    Y[Y.sum(axis=1) == 0, 0] = 1
    path = tmp_path / "data.svm"
    datasets.dump_svmlight_file(X, Y, str(path), zero_based=True, multilabel=True)
    X_ours, Y_ours = read_libsvm(path)
    X_sk, y_sk = datasets.load_svmlight_file(
        path, multilabel=True, zero_based=True, dtype=np.float32, n_features=X.shape[1]
    )
    assert_same_matrix(X_ours, X_sk)
    Y_sk = np.zeros(Y.shape, dtype=np.float32)
    for row, labels in enumerate(y_sk):
        Y_sk[row, np.asarray(labels, dtype=int)] = 1
    assert_same_matrix(Y_ours, Y_sk[:, : Y_ours.shape[1]])
    assert_same_matrix(X_ours, X[:, : X_ours.shape[1]])


def test_read_libsvm_header_and_index_base(tmp_path):
    body = "0,2 1:1 3:2\n 2:5\n"
    X, Y = read_libsvm(write_text(tmp_path, "a.svm", body))
    assert X.shape == (2, 4) and Y.shape == (2, 3)
    X_h, Y_h = read_libsvm(write_text(tmp_path, "h.svm", "2 6 4\n" + body))
    assert X_h.shape == (2, 6) and Y_h.shape == (2, 4)
    assert_same_matrix(X_h[:, :4], X)
    for zero_based in (False, "auto"):
        X_one, Y_one = read_libsvm(write_text(tmp_path, "b.svm", body), zero_based=zero_based)
        assert_same_matrix(X_one, [[1, 0, 2], [0, 5, 0]])
        assert_same_matrix(Y_one, Y)
    X_auto, _ = read_libsvm(write_text(tmp_path, "c.svm", "1 0:1 3:2\n"), zero_based="auto")
    assert_same_matrix(X_auto, [[1, 0, 0, 2]])
    X_wide, Y_wide = read_libsvm(tmp_path / "a.svm", n_features=10, n_labels=5)
    assert X_wide.shape == (2, 10) and Y_wide.shape == (2, 5)


@pytest.mark.parametrize(
    ("text", "kwargs", "line", "words"),
    [
        ("1 1:1\n0 0:1 qid:3\n", {}, 2, "qid"),
        ("1 1:1\n0 0:1 2:1\n", {"zero_based": False}, 2, "feature id 0"),
        ("1 1:1\n0 0:1 2:1\n", {"n_features": 2}, 2, "feature id 2"),
        ("1 1:1\n0,3 0:1\n", {"n_labels": 3}, 2, "label id 3"),
        ("2 3 2\n1 1:1\n", {}, 3, "ends after 1"),
        ("1 1:1\n1 1:1", {}, 2, "truncated"),
        ("", {}, 1, "empty"),
    ],
)
def test_read_libsvm_reports_bad_input(tmp_path, text, kwargs, line, words):
    with pytest.raises(DataFormatError) as info:
        read_libsvm(write_text(tmp_path, "bad.svm", text), **kwargs)
    assert info.value.line == line
    assert words in info.value.problem


def test_read_libsvm_rejects_unknown_zero_based(tmp_path):
    with pytest.raises(ValueError, match="zero_based"):
        read_libsvm(write_text(tmp_path, "a.svm", "1 1:1\n"), zero_based="yes")


# --------------------------------------------------------------------------
# XC split files and BoW pairs
# --------------------------------------------------------------------------


def test_read_xc_split_selects_rows_in_file_order(tmp_path):
    data = write_text(tmp_path, "data.txt", XC_TEXT)
    split = write_text(tmp_path, "split.txt", "3 1\n1\t6\r\n5  2\n")
    X_all, Y_all = read_xc(data)
    for column, rows in ((0, [2, 0, 4]), (1, [0, 5, 1])):
        X, Y = read_xc_split(data, split, column)
        assert_canonical(X, (3, 5))
        assert_same_matrix(X, X_all[rows])
        assert_same_matrix(Y, Y_all[rows])


@pytest.mark.parametrize(
    ("split_text", "column", "line", "words"),
    [
        ("1 2\n3 4\n", 2, 1, "column 2"),
        ("1 2\n3 7\n", 1, 2, "'7'"),
        ("1 2\n0 4\n", 0, 2, "'0'"),
        ("1 2\n3\n", 0, 2, "ragged"),
        ("1 2\n3 4\n\n", 0, 3, "ragged"),
        ("1 2\n3 x\n", 1, 2, "'x'"),
        ("1 2\n3\x0b4\n", 0, 2, "ragged"),
        ("1 2\n\r3 4\n", 0, 2, "'\\r3'"),
    ],
)
def test_read_xc_split_rejects_bad_split_files(tmp_path, split_text, column, line, words):
    data = write_text(tmp_path, "data.txt", XC_TEXT)
    split = write_text(tmp_path, "split.txt", split_text)
    with pytest.raises(DataFormatError) as info:
        read_xc_split(data, split, column)
    assert info.value.line == line and info.value.path == str(split)
    assert words in info.value.problem


def test_read_bow_pair_matches_hand_written_matrices(tmp_path):
    features = write_text(tmp_path, "X.txt", "3 4\n0:1 3:0.25\n\n2:2 1:1\n")
    labels = write_text(tmp_path, "Y.txt", "3 5\n4:1\n0:1 2:0.5\n1:0\n")
    X, Y = read_bow_pair(features, labels)
    assert_canonical(X, (3, 4))
    assert_canonical(Y, (3, 5))
    assert_same_matrix(X, [[1, 0, 0, 0.25], [0, 0, 0, 0], [0, 1, 2, 0]])
    assert_same_matrix(Y, [[0, 0, 0, 0, 1], [1, 0, 1, 0, 0], [0, 0, 0, 0, 0]])


@pytest.mark.parametrize(
    ("features_text", "labels_text", "bad_file", "line", "words"),
    [
        ("2 4\n0:1\n1:1\n", "3 5\n0:1\n1:1\n2:1\n", "Y.txt", 1, "has 3 rows"),
        ("2 4\n0:1\n4:1\n", "2 5\n0:1\n1:1\n", "X.txt", 3, "feature id 4"),
        ("2 4\n0:1\n1:1\n", "2 5\n0:1\n5:1\n", "Y.txt", 3, "label id 5"),
        ("2 4\n0:1\n1:1\n", "2 5\n0:1 0:1\n1:1\n", "Y.txt", 2, "label id 0 appears more"),
        ("2 4\n0:1\n1:1\n", "2 5\n0:1 a\n1:1\n", "Y.txt", 2, "malformed label token 'a'"),
        ("2 4\n0:1\n", "2 5\n0:1\n1:1\n", "X.txt", 3, "ends after 1"),
        ("2 4 1\n0:1\n1:1\n", "2 5\n0:1\n1:1\n", "X.txt", 1, "header"),
        ("2 4\n0:1\n1 1:1\n", "2 5\n0:1\n1:1\n", "X.txt", 3, "'1'"),
    ],
)
def test_read_bow_pair_reports_bad_input(
    tmp_path, features_text, labels_text, bad_file, line, words
):
    features = write_text(tmp_path, "X.txt", features_text)
    labels = write_text(tmp_path, "Y.txt", labels_text)
    with pytest.raises(DataFormatError) as info:
        read_bow_pair(features, labels)
    assert info.value.path == str(tmp_path / bad_file)
    assert info.value.line == line
    assert words in info.value.problem


# --------------------------------------------------------------------------
# Size and index arguments
# --------------------------------------------------------------------------


def size_argument_calls(tmp_path):
    """``name -> call(value)`` for every size or index argument of the readers and writers."""
    xc = write_text(tmp_path, "data.txt", XC_TEXT)
    split = write_text(tmp_path, "split.txt", "1 2\n")
    arff = write_text(tmp_path, "a.arff", ARFF_HEADER + "1.5,0,0,1,1\n")
    predictions = write_text(tmp_path, "p.txt", "1 3\n1:0.5\n")
    labels, scores = np.array([[1]]), np.array([[0.5]])
    return {
        "read_xc n_features": lambda value: read_xc(xc, n_features=value),
        "read_xc n_labels": lambda value: read_xc(xc, n_labels=value),
        "read_libsvm n_features": lambda value: read_libsvm(xc, n_features=value),
        "read_libsvm n_labels": lambda value: read_libsvm(xc, n_labels=value),
        "iter_xc_chunks chunk_size": lambda value: list(iter_xc_chunks(xc, value)),
        "read_xc_split column": lambda value: read_xc_split(xc, split, value),
        "read_arff n_labels": lambda value: read_arff(arff, n_labels=value),
        "read_predictions n_labels": lambda value: read_predictions(predictions, value),
        "write_predictions n_labels": lambda value: write_predictions(
            tmp_path / "out.txt", labels, scores, value
        ),
    }


#: Each size argument: whether None means "use the default", whether it is
#: bounded by the int32 id limit (chunk_size is not: see the next test).
SIZE_ARGUMENTS = {
    "read_xc n_features": (True, True),
    "read_xc n_labels": (True, True),
    "read_libsvm n_features": (True, True),
    "read_libsvm n_labels": (True, True),
    "iter_xc_chunks chunk_size": (False, False),
    "read_xc_split column": (False, True),
    "read_arff n_labels": (False, True),
    "read_predictions n_labels": (True, True),
    "write_predictions n_labels": (False, True),
}
BAD_SIZES = [
    (argument, value)
    for argument, (optional, bounded) in SIZE_ARGUMENTS.items()
    for value in [3.7, 2.0, "5", True, -1]
    + ([] if optional else [None])
    + ([2**31, 2**70] if bounded else [])
]


@pytest.mark.parametrize(("argument", "value"), BAD_SIZES)
def test_size_arguments_must_be_integers_in_range(tmp_path, argument, value):
    # 3.7 used to be truncated to 3, '5' raised TypeError, True read column 1.
    call = size_argument_calls(tmp_path)[argument]
    with pytest.raises(ValueError, match=argument.split()[1]) as info:
        call(value)
    assert not isinstance(info.value, DataFormatError)


def test_chunks_larger_than_the_file_hold_the_whole_file(tmp_path):
    path = write_text(tmp_path, "data.txt", XC_TEXT)
    # More lines than islice can count: used to raise islice's own ValueError.
    ((n_rows, X),) = list(iter_xc_chunks(path, 2**70))
    assert_same_matrix(X, read_xc(path)[0])


@pytest.mark.parametrize("argument", SIZE_ARGUMENTS)
def test_size_arguments_accept_numpy_integers(tmp_path, argument):
    value = np.int64({"read_xc_split column": 1, "read_arff n_labels": 2}.get(argument, 9))
    size_argument_calls(tmp_path)[argument](value)


# --------------------------------------------------------------------------
# MULAN ARFF
# --------------------------------------------------------------------------

ARFF_HEADER = """% a comment
@relation 'tiny: -C -2'

@attribute f0 numeric
@attribute 'f 1' {0,1}
@attribute f2 REAL
@attribute tagA {0,1}
@attribute "tag B" {0,1}
@data
"""


def test_read_arff_dense_and_sparse_rows(tmp_path):
    text = ARFF_HEADER + "1.5,0,0,1,1\n% comment row\n\n{1 1,4 1}\n{}\n0,1,-2,0,0\n"
    X, Y = read_arff(write_text(tmp_path, "a.arff", text), n_labels=2)
    assert_canonical(X, (4, 3))
    assert_canonical(Y, (4, 2))
    assert_same_matrix(X, [[1.5, 0, 0], [0, 1, 0], [0, 0, 0], [0, 1, -2]])
    assert_same_matrix(Y, [[1, 1], [0, 1], [0, 0], [0, 0]])


@pytest.mark.parametrize(
    ("text", "value"), [("3.4028235e+38", 3.4028235e38), ("-3.40282356e38", -3.4028235e38)]
)
def test_read_arff_takes_values_that_round_to_the_largest_float32(tmp_path, text, value):
    # They used to be refused as beyond the float32 range; the text parser
    # (strtof) has always taken them.
    row = f"{text},0,0,1,1\n"
    X, _ = read_arff(write_text(tmp_path, "a.arff", ARFF_HEADER + row), n_labels=2)
    X_text, _ = read_xc(write_text(tmp_path, "a.txt", f"1 1 1\n0:{text}\n"))
    assert X[0, 0] == X_text[0, 0] == np.float32(value)


def test_read_arff_labels_first(tmp_path):
    text = "@relation r\n@attribute a {0,1}\n@attribute b {0,1}\n@attribute x numeric\n"
    text += "@data\n1,0,3\n{1 1, 2 4}\n"
    X, Y = read_arff(write_text(tmp_path, "a.arff", text), n_labels=2, labels_first=True)
    assert_same_matrix(X, [[3], [4]])
    assert_same_matrix(Y, [[1, 0], [0, 1]])


@pytest.mark.parametrize(
    ("data_rows", "n_labels", "line", "words"),
    [
        ("1,0,0,1\n", 2, 10, "has 4 values"),
        ("1,?,0,1,1\n", 2, 10, "missing"),
        ("1,2,0,1,1\n", 2, 10, "not a declared value"),
        ("x,0,0,1,1\n", 2, 10, "not a number"),
        ("nan,0,0,1,1\n", 2, 10, "NaN"),
        ("1e39,0,0,1,1\n", 2, 10, "float32 range"),
        ("3.4028236e38,0,0,1,1\n", 2, 10, "float32 range"),
        ("{5 1}\n", 2, 10, "out of range"),
        ("{0 1, 0 2}\n", 2, 10, "twice"),
        ("{0 1}, {3}\n", 2, 10, "weights"),
        ("1,0,0,1,1\n", 3, 6, "must be declared {0,1}"),
        ("1,0,0,1,1\n", 6, None, "only 5 attributes"),
        # Python's int() and float() accept these; the file formats do not.
        ("{\u00b2 1}\n", 2, 10, "malformed sparse entry"),
        ("{\uff11 1}\n", 2, 10, "malformed sparse entry"),
        ("1_0,0,0,1,1\n", 2, 10, "'1_0' of attribute 'f0' is not a number"),
        ("\u0661,0,0,1,1\n", 2, 10, "not a number"),
        ("\uff11.5,0,0,1,1\n", 2, 10, "not a number"),
        ("{0 0x1}\n", 2, 10, "not a number"),
        ("{0 Infinity}\n", 2, 10, "NaN or infinite"),
    ],
)
def test_read_arff_reports_bad_input(tmp_path, data_rows, n_labels, line, words):
    path = write_text(tmp_path, "bad.arff", ARFF_HEADER + data_rows)
    with pytest.raises(DataFormatError) as info:
        read_arff(path, n_labels=n_labels)
    assert info.value.line == line
    assert words in info.value.problem


def test_a_finite_value_beyond_float32_is_not_called_only_nan_or_infinite(tmp_path):
    path = tmp_path / "large.txt"
    path.write_bytes(b"1 2 1\n0 0:1 1:1e300\n")
    with pytest.raises(DataFormatError, match="too large for float32") as info:
        read_xc(path)
    assert info.value.line == 2


def test_read_arff_counts_lines_at_newlines_only(tmp_path):
    # A lone CR ended a line for Python's text mode: errors named line 3 of
    # a file of two (found by the reader fuzzer, issue 32).
    path = tmp_path / "cr.arff"
    path.write_bytes(b"@relation r\n@attribute a numeric\r!\n@attribute b {0,1}\n@data\n1,1\n")
    with pytest.raises(DataFormatError, match="unsupported type") as info:
        read_arff(path, n_labels=1)
    assert info.value.line == 2
    crlf = tmp_path / "crlf.arff"
    crlf.write_bytes(b"@relation r\r\n@attribute a numeric\r\n@attribute b {0,1}\r\n@data\r\n"
                     b"1.5,1\r\n")
    X, Y = read_arff(crlf, n_labels=1)
    assert X.toarray().tolist() == [[1.5]] and Y.toarray().tolist() == [[1.0]]


def test_read_arff_rejects_bad_headers_and_parameters(tmp_path):
    path = write_text(tmp_path, "a.arff", "@relation r\n@attribute s string\n@data\n")
    with pytest.raises(DataFormatError, match="unsupported type") as info:
        read_arff(path, n_labels=1)
    assert info.value.line == 2
    no_data = write_text(tmp_path, "b.arff", "@relation r\n@attribute a {0,1}\n")
    with pytest.raises(DataFormatError, match="no @data"):
        read_arff(no_data, n_labels=1)
    for first in ("1", "\uff10"):
        nominal = f"@relation r\n@attribute f {{{first},0}}\n@attribute a {{0,1}}\n@data\n"
        nominal += "{1 1}\n"
        with pytest.raises(DataFormatError, match=f"first value '{first}'") as info:
            read_arff(write_text(tmp_path, "c.arff", nominal), n_labels=1)
        assert info.value.line == 5
    with pytest.raises(ValueError, match="n_labels"):
        read_arff(path, n_labels=0)


def test_predictions_file_rejects_bad_arrays_and_widens_on_read(tmp_path):
    from xmltree.datasets import read_predictions, write_predictions

    path = tmp_path / "p.txt"
    with pytest.raises(ValueError, match=r"\[-1, 3\)"):
        write_predictions(path, np.array([[3]]), np.array([[1.0]]), n_labels=3)
    with pytest.raises(ValueError, match="shapes"):
        write_predictions(path, np.array([[0, 1]]), np.array([[1.0]]), n_labels=3)
    # Each of these used to be written, and then refused by read_predictions.
    for labels, scores, words in [
        ([[1.7]], [[0.5]], "integer label ids"),
        ([[True]], [[0.5]], "integer label ids"),
        ([[1, 2, 1]], [[0.5, 0.4, 0.3]], "more than once"),
        ([[1]], [[np.nan]], "finite"),
        ([[1]], [[1e39]], "finite"),
    ]:
        with pytest.raises(ValueError, match=words):
            write_predictions(path, np.array(labels), np.array(scores), n_labels=3)
    assert not path.exists()
    write_predictions(path, np.array([[1, -1, -1]]), np.array([[0.5, -np.inf, 0]]), n_labels=3)
    assert path.read_text() == "1 3\n1:0.5\n"
    assert read_predictions(path, n_labels=7).shape == (1, 7)
    with pytest.raises(DataFormatError, match="n_labels"):
        read_predictions(path, n_labels=2)
