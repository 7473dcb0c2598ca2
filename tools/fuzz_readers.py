"""Property-based fuzzing of every data reader of xmltree.

Each surface (a reader, or the compiled parser itself) is given valid files
of its format, then random mutations of them: byte flips, insertions of
white space, control characters, huge numbers, NaN, infinities, negative
ids, other scripts' digits, deletions, truncation, duplicated lines and
headers that disagree with the body. The property checked on every case:

* the reader returns matrices in canonical CSR form (``indptr`` starts at 0,
  never decreases and ends at the number of entries, indices in range and
  strictly increasing within each row, finite non-zero float32 values) with
  exactly the rows the file declares, and an unmutated file reads back as
  the matrices it was written from; or
* it raises :class:`~xmltree.exceptions.DataFormatError` naming the file
  (and, for line-based formats, a line inside it);

never another exception, a crash or a hang (each case has a time limit).

A second property aims at the line structure itself: one control
character (vertical tab, form feed, NUL, a lone CR...) put anywhere in a
row of a valid text file must make every text reader refuse the file,
naming that line; C's strtof skips such characters, newlines included.

``tests/test_fuzz_readers.py`` runs every surface with a small fixed budget
in CI; this script runs deeper, on the installed ``xmltree`` (an editable
install, or ``PYTHONPATH`` set to a checkout with built extensions), and
reports the cases tried per surface::

    python tools/fuzz_readers.py --examples 20000 --seed 1

Exit status 1 if any surface fails; hypothesis then prints the smallest
failing case it found.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import faulthandler
import io
import sys
import tempfile
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import scipy.sparse as sp
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from xmltree.datasets import (
    iter_xc_chunks,
    open_csr_npy,
    read_arff,
    read_bow_pair,
    read_libsvm,
    read_predictions,
    read_xc,
    read_xc_split,
    write_csr_npy,
)
from xmltree.datasets._parse import parse_sparse_rows
from xmltree.exceptions import DataFormatError

#: Seconds one case may take; every reader is linear in its input, and the
#: inputs here are at most a few kilobytes.
TIME_LIMIT = 5.0

# --------------------------------------------------------------------------
# Mutations
# --------------------------------------------------------------------------

#: Text that tends to break parsers: C white space strtof would skip, line
#: ends, ids and values beyond every limit, non-finite and non-decimal
#: numbers, other scripts' digits, stray separators.
SNIPPETS = [
    b"\x0b",
    b"\x0c",
    b"\r",
    b"\n",
    b"\x00",
    b"\t",
    b" ",
    b"\r\n",
    b"\x0b\n",
    b"\x85",
    b"2147483647",
    b"2147483648",
    b"99999999999999999999",
    b"-1",
    b"-0",
    b"+1",
    b"1e39",
    b"-1e39",
    b"1e-50",
    b"3.4028236e38",
    b"nan",
    b"NaN",
    b"inf",
    b"-Infinity",
    b"0x1p3",
    b"1_0",
    "\u0661".encode(),
    "\u00b2".encode(),
    "\uff11".encode(),
    b"\xff",
    b":",
    b",",
    b":1",
    b"1:",
    b",,",
    b"qid:1",
    b"{",
    b"}",
    b"?",
    b"%",
    b"@data",
    b"'",
    b"0" * 40,
    b".",
    b"e",
    b"1.5e",
    b"9" * 400,
]

#: Line ends and the C white space around them, drawn on their own as often
#: as all other snippets together: they decide where rows end.
LINE_BREAKERS = [b"\x0b", b"\x0c", b"\r", b"\x00", b"\n", b"\x0b\n", b"\x0c\n", b"\r\r\n"]

INSERTED = st.one_of(
    st.sampled_from(LINE_BREAKERS), st.sampled_from(SNIPPETS), st.binary(min_size=1, max_size=4)
)

MUTATION = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 2**16), st.integers(1, 255)),
    st.tuples(st.just("insert"), st.integers(0, 2**16), INSERTED),
    # Aimed at token boundaries and values, where parsers make their
    # decisions: a blind insertion rarely lands there.
    st.tuples(st.just("boundary"), st.integers(0, 2**16), INSERTED),
    st.tuples(
        st.just("value"),
        st.integers(0, 2**16),
        st.one_of(st.sampled_from(LINE_BREAKERS), st.sampled_from(SNIPPETS)),
    ),
    st.tuples(st.just("delete"), st.integers(0, 2**16), st.integers(1, 8)),
    st.tuples(st.just("truncate"), st.integers(0, 2**16), st.just(0)),
    st.tuples(st.just("duplicate_line"), st.integers(0, 2**16), st.just(0)),
    st.tuples(st.just("header"), st.integers(0, 2), st.sampled_from([-2, -1, 1, 2, 2**31])),
)


def mutate(data: bytes, mutations) -> bytes:
    """Apply ``mutations`` (drawn from :data:`MUTATION`) to ``data`` in order."""
    data = bytearray(data)
    for kind, where, what in mutations:
        at = where % (len(data) + 1)
        if kind == "flip" and data:
            data[at % len(data)] ^= what
        elif kind == "insert":
            data[at:at] = what
        elif kind in ("boundary", "value"):
            data = bytearray(at_token(bytes(data), where, what, replace=kind == "value"))
        elif kind == "delete":
            del data[at : at + what]
        elif kind == "truncate":
            del data[at:]
        elif kind == "duplicate_line":
            lines = bytes(data).split(b"\n")
            index = where % len(lines)
            data = bytearray(b"\n".join(lines[: index + 1] + lines[index:]))
        elif kind == "header":
            data = bytearray(shift_header(bytes(data), where, what))
    return bytes(data)


def at_token(data: bytes, which: int, text: bytes, *, replace: bool) -> bytes:
    """Insert ``text`` after one separator (``:,`` or white space) of ``data``.

    With ``replace``, ``text`` takes the place of what follows a ``:`` up to
    the end of its line instead: the value of an ``id:value`` token becomes
    the last thing on the line, where a value parser must stop at the line
    end.
    """
    separators = b":" if replace else b":, \t\n"
    starts = [i + 1 for i, byte in enumerate(data) if byte in separators]
    if not starts:
        return data
    start = starts[which % len(starts)]
    end = start
    while replace and end < len(data) and data[end] not in b"\r\n":
        end += 1
    return data[:start] + text + data[end:]


def shift_header(data: bytes, index: int, delta: int) -> bytes:
    """Add ``delta`` to the ``index``-th number of the first line, if it has one."""
    first, newline, rest = data.partition(b"\n")
    tokens = first.split(b" ")
    if index < len(tokens) and tokens[index].isdigit():
        tokens[index] = str(max(0, int(tokens[index]) + delta)).encode()
    return b" ".join(tokens) + newline + rest


# --------------------------------------------------------------------------
# Valid content
# --------------------------------------------------------------------------

#: Finite float32 values, written in their shortest round-tripping form.
VALUES = st.floats(width=32, allow_nan=False, allow_infinity=False).filter(lambda v: v != 0)


@dataclass
class Matrices:
    """Dense label and feature matrices a valid file is written from."""

    X: np.ndarray
    Y: np.ndarray


@st.composite
def matrices(
    draw, min_rows: int = 0, max_rows: int = 5, max_features: int = 6, max_labels: int = 4
) -> Matrices:
    """Small random matrices; rows may be empty and are sparse on purpose."""
    n_rows = draw(st.integers(min_rows, max_rows))
    n_features = draw(st.integers(1, max_features))
    n_labels = draw(st.integers(1, max_labels))
    X = np.zeros((n_rows, n_features), dtype=np.float32)
    Y = np.zeros((n_rows, n_labels), dtype=np.float32)
    for row in range(n_rows):
        for column in draw(st.sets(st.integers(0, n_features - 1), max_size=3)):
            X[row, column] = draw(VALUES)
        for column in draw(st.sets(st.integers(0, n_labels - 1), max_size=2)):
            Y[row, column] = 1
    return Matrices(X, Y)


def value_text(value: np.float32) -> str:
    """Shortest text that reads back as exactly ``value`` (numpy's float32 repr)."""
    return str(np.float32(value))


@st.composite
def row_layout(draw):
    """Separator, line end and feature order of a written file."""
    separator = draw(st.sampled_from([" ", "\t", "  ", " \t"]))
    line_end = draw(st.sampled_from(["\n", "\r\n"]))
    shuffle = draw(st.booleans())
    return separator, line_end, shuffle


def sparse_lines(X, layout, Y=None) -> list[str]:
    """Rows ``f:v f:v`` of ``X``, led by the label list ``l1,l2`` of ``Y`` if given."""
    separator, _, shuffle = layout
    lines = []
    for row in range(X.shape[0]):
        columns = np.flatnonzero(X[row])
        if shuffle:
            columns = columns[::-1]
        tokens = [f"{c}:{value_text(X[row, c])}" for c in columns]
        if Y is not None:
            # An empty label list leaves the line starting with the separator.
            tokens.insert(0, ",".join(str(c) for c in np.flatnonzero(Y[row])))
        lines.append(separator.join(tokens))
    return lines


def text_file(header: str | None, lines: list[str], line_end: str) -> bytes:
    """The optional header and the lines, each ended by ``line_end``."""
    body = [header] if header is not None else []
    return "".join(line + line_end for line in body + lines).encode()


# --------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------


@contextlib.contextmanager
def time_limit(seconds: float):
    """Dump every thread's stack and exit the process if the block hangs.

    A watchdog thread, not a signal handler, so that a loop stuck in
    compiled code (which never returns to the interpreter) is caught too.
    """
    faulthandler.dump_traceback_later(seconds, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


def check_canonical(matrix, n_rows: int | None, what: str) -> None:
    """Assert the canonical CSR layout every reader promises, without stored zeros.

    Text readers drop explicit zeros; ``.npy`` files holding any are refused.
    """
    assert sp.isspmatrix_csr(matrix), f"{what}: not CSR"
    assert matrix.dtype == np.float32, f"{what}: dtype {matrix.dtype}"
    indptr, indices, data = matrix.indptr, matrix.indices, matrix.data
    n, m = matrix.shape
    if n_rows is not None:
        assert n == n_rows, f"{what}: {n} rows, the file declares {n_rows}"
    assert indptr.shape == (n + 1,) and indptr[0] == 0, f"{what}: bad indptr ends"
    assert indptr[-1] == indices.shape[0] == data.shape[0], f"{what}: indptr/nnz disagree"
    assert np.all(np.diff(indptr) >= 0), f"{what}: indptr decreases"
    assert indices.size == 0 or (indices.min() >= 0 and indices.max() < m), f"{what}: id range"
    increasing = np.diff(indices) > 0
    row_starts = indptr[1:-1]
    within = np.ones(max(indices.size - 1, 0), dtype=bool)
    within[row_starts[(row_starts > 0) & (row_starts < indices.size)] - 1] = False
    assert np.all(increasing | ~within), f"{what}: ids not strictly increasing in a row"
    assert np.all(np.isfinite(data)), f"{what}: non-finite values"
    assert np.all(data != 0), f"{what}: zeros stored"


def check_same(matrix, expected: np.ndarray, what: str) -> None:
    """Assert a read matrix equals the one the file was written from.

    Column counts may differ where files size them from the largest id
    seen; the columns beyond the narrower one must be empty.
    """
    assert matrix.shape[0] == expected.shape[0], f"{what}: row count"
    dense = matrix.toarray()
    n = min(dense.shape[1], expected.shape[1])
    assert not dense[:, n:].any() and not expected[:, n:].any(), f"{what}: extra columns"
    assert np.array_equal(dense[:, :n], expected[:, :n]), f"{what}: values differ from written"


@dataclass
class Surface:
    """One reader under test: how to draw a case and how to read it.

    ``cases`` draws ``(files, options, expected)``: file name -> bytes, reader
    options, and the :class:`Matrices` the files hold when unmutated (None
    once mutated). ``read(paths, options)`` returns ``{name: (matrix, n_rows)}``
    with the row count each matrix must have (None where the file does not
    declare one); matrices named ``X`` and ``Y`` are compared with
    ``expected``.
    """

    name: str
    cases: st.SearchStrategy
    read: Callable
    #: A line-based text format: errors name a line, zeros are never stored.
    text_format: bool = True
    counts: collections.Counter = field(default_factory=collections.Counter)


def check_case(surface: Surface, files: dict, options: dict, expected) -> None:
    """Write ``files`` to a fresh directory, read them, and check the outcome."""
    with tempfile.TemporaryDirectory() as directory:
        paths = {name: Path(directory) / name for name in files}
        for name, content in files.items():
            paths[name].write_bytes(content)
        try:
            # A reader says what is wrong by its error, never by a warning
            # (numpy's about Python 2 headers leaked from open_csr_npy).
            with time_limit(TIME_LIMIT), warnings.catch_warnings():
                warnings.simplefilter("error")
                result = surface.read(paths, options)
        except DataFormatError as error:
            surface.counts["rejected"] += 1
            assert expected is None, f"a valid file was rejected: {error}"
            check_blame(error, paths, files, surface.text_format, directory)
            return
        surface.counts["accepted"] += 1
        for name, (matrix, n_rows) in result.items():
            check_canonical(matrix, n_rows, f"{surface.name} {name}")
        if expected is not None:
            for name in set(result) & {"X", "Y"}:
                check_same(result[name][0], getattr(expected, name), f"{surface.name} {name}")


def check_blame(
    error: DataFormatError, paths: dict, files: dict, text_format: bool, directory: str
) -> None:
    """Assert a DataFormatError names one of the files (and a line inside it)."""
    named = {str(path): name for name, path in paths.items()}
    if error.path is None or error.path == directory:
        assert directory in str(error), f"the error names no file: {error}"
        return
    assert error.path in named, f"the error names {error.path}, not a file read"
    if text_format and error.line is not None:
        n_lines = files[named[error.path]].count(b"\n") + 1
        assert 1 <= error.line <= n_lines + 1, f"line {error.line} of {n_lines}: {error}"


# --------------------------------------------------------------------------
# Surfaces
# --------------------------------------------------------------------------


def maybe_mutated(draw, content: bytes) -> tuple[bytes, bool]:
    """``content``, mutated in most cases; also say whether it was."""
    mutations = draw(st.lists(MUTATION, max_size=4))
    return mutate(content, mutations), bool(mutations)


def bow_bytes(matrix: np.ndarray, layout) -> bytes:
    """A BoW (or prediction) file: header ``N D``, then rows of ``id:value``."""
    n_rows, n_columns = matrix.shape
    lines = sparse_lines(matrix, layout)
    return text_file(f"{n_rows} {n_columns}", lines, layout[1])


def xc_bytes(m: Matrices, layout, *, header: bool = True) -> bytes:
    """An XC file (header ``N D L`` unless told not to) holding ``m``."""
    n_rows, n_features = m.X.shape
    top = f"{n_rows} {n_features} {m.Y.shape[1]}" if header else None
    return text_file(top, sparse_lines(m.X, layout, m.Y), layout[1])


@st.composite
def xc_cases(draw):
    """An XC file, mutated in most cases."""
    m, layout = draw(matrices()), draw(row_layout())
    content, mutated = maybe_mutated(draw, xc_bytes(m, layout))
    return {"data.txt": content}, {}, None if mutated else m


def header_rows(content: bytes) -> int | None:
    """The row count the first line of ``content`` declares, if it is a header."""
    tokens = content.split(b"\n", 1)[0].split()
    return int(tokens[0]) if tokens and tokens[0].isdigit() else None


def read_xc_case(paths, options):
    """read_xc; both matrices have the header's row count."""
    X, Y = read_xc(paths["data.txt"])
    n_rows = header_rows(paths["data.txt"].read_bytes())
    return {"X": (X, n_rows), "Y": (Y, n_rows)}


@st.composite
def libsvm_cases(draw):
    """A libsvm file with or without header, read with any index base."""
    m, layout = draw(matrices()), draw(row_layout())
    header = draw(st.booleans())
    zero_based = draw(st.sampled_from([True, False, "auto"]))
    content, mutated = maybe_mutated(draw, xc_bytes(m, layout, header=header))
    # 1-based reading shifts ids: compare only the unshifted, unmutated case;
    # an empty file (no header, no rows) is an error.
    comparable = content and not mutated and zero_based is True
    return {"data.txt": content}, {"zero_based": zero_based}, m if comparable else None


def read_libsvm_case(paths, options):
    """read_libsvm; each body line is one row."""
    path = paths["data.txt"]
    X, Y = read_libsvm(path, **options)
    n_lines = path.read_bytes().count(b"\n")
    assert X.shape[0] in (n_lines, n_lines - 1), "a line (after a header) is not one row"
    return {"X": (X, None), "Y": (Y, X.shape[0])}


@st.composite
def chunk_cases(draw):
    """An XC file read in chunks of 1 to 4 rows."""
    files, _, expected = draw(xc_cases())
    return files, {"chunk_size": draw(st.integers(1, 4))}, expected


def read_chunks_case(paths, options):
    """iter_xc_chunks; full chunks, then the rows of the header."""
    path, chunk_size = paths["data.txt"], options["chunk_size"]
    chunks = [X for _, X in iter_xc_chunks(path, chunk_size)]
    assert all(X.shape[0] == chunk_size for X in chunks[:-1]), "a short chunk before the last"
    assert not chunks or 1 <= chunks[-1].shape[0] <= chunk_size, "bad last chunk"
    result = {f"chunk {i}": (X, None) for i, X in enumerate(chunks)}
    if chunks:
        result["X"] = (sp.vstack(chunks, format="csr"), header_rows(path.read_bytes()))
    return result


@st.composite
def split_cases(draw):
    """An XC file and a split file of 1-based row ids, either mutated."""
    m, layout = draw(matrices(min_rows=1, max_rows=4)), draw(row_layout())
    data, _ = maybe_mutated(draw, xc_bytes(m, layout))
    n_rows, n_columns = m.X.shape[0], draw(st.integers(1, 3))
    rows = draw(
        st.lists(
            st.lists(st.integers(1, n_rows), min_size=n_columns, max_size=n_columns),
            min_size=1,
            max_size=4,
        )
    )
    split = "".join(" ".join(map(str, row)) + "\n" for row in rows).encode()
    split, _ = maybe_mutated(draw, split)
    # Mostly an existing column; sometimes the one past the last.
    column = draw(st.integers(0, n_columns))
    # Which rows a split selects is checked by the unit tests, not here.
    return {"data.txt": data, "split.txt": split}, {"column": column}, None


def read_split_case(paths, options):
    """read_xc_split; one row per line of the split file."""
    X, Y = read_xc_split(paths["data.txt"], paths["split.txt"], options["column"])
    # Every line of the split file (ended by '\n' only) selects one row.
    content = paths["split.txt"].read_bytes()
    n_rows = content.count(b"\n") + (not content.endswith(b"\n"))
    return {"X": (X, n_rows), "Y": (Y, n_rows)}


@st.composite
def bow_cases(draw):
    """A BoW pair (features and labels files), either mutated."""
    m, layout = draw(matrices()), draw(row_layout())
    features, features_mutated = maybe_mutated(draw, bow_bytes(m.X, layout))
    labels, labels_mutated = maybe_mutated(draw, bow_bytes(m.Y, layout))
    expected = None if features_mutated or labels_mutated else m
    return {"X.txt": features, "Y.txt": labels}, {}, expected


def read_bow_case(paths, options):
    """read_bow_pair; both matrices have the header's row count."""
    X, Y = read_bow_pair(paths["X.txt"], paths["Y.txt"])
    n_rows = header_rows(paths["X.txt"].read_bytes())
    return {"X": (X, n_rows), "Y": (Y, n_rows)}


@st.composite
def prediction_cases(draw):
    """A prediction file (the BoW layout of label:score rows)."""
    m, layout = draw(matrices()), draw(row_layout())
    content, mutated = maybe_mutated(draw, bow_bytes(m.X, layout))
    return {"p.txt": content}, {}, None if mutated else m


def read_predictions_case(paths, options):
    """read_predictions; the header's row count."""
    scores = read_predictions(paths["p.txt"])
    return {"X": (scores, header_rows(paths["p.txt"].read_bytes()))}


@st.composite
def arff_cases(draw):
    """A MULAN ARFF file with dense and sparse rows, mutated in most cases."""
    m = draw(matrices())
    n_features, n_labels = m.X.shape[1], m.Y.shape[1]
    lines = ["% fuzz", "@relation fuzz"]
    lines += [f"@attribute f{i} numeric" for i in range(n_features)]
    lines += [f"@attribute y{i} {{0,1}}" for i in range(n_labels)]
    lines.append("@data")
    for x, y in zip(m.X, m.Y):
        values = [value_text(v) if v else "0" for v in x] + [str(int(v)) for v in y]
        if draw(st.booleans()):
            lines.append(",".join(values))
        else:
            lines.append(
                "{" + ", ".join(f"{i} {v}" for i, v in enumerate(values) if v != "0") + "}"
            )
    content, mutated = maybe_mutated(draw, ("\n".join(lines) + "\n").encode())
    return {"a.arff": content}, {"n_labels": n_labels}, None if mutated else m


def read_arff_case(paths, options):
    """read_arff; labels have the features' row count."""
    X, Y = read_arff(paths["a.arff"], options["n_labels"])
    return {"X": (X, None), "Y": (Y, X.shape[0])}


#: How a stored CSR array can be damaged short of byte mutations.
ARRAY_DAMAGE = st.sampled_from(
    ["nan", "inf", "id", "indptr", "indptr_end", "dtype", "shape", "bytes"]
)


@st.composite
def npy_cases(draw):
    """A .npy CSR directory, with damaged bytes or arrays in most cases."""
    m = draw(matrices())
    with tempfile.TemporaryDirectory() as directory:
        write_csr_npy(directory, m.X)
        files = {path.name: path.read_bytes() for path in Path(directory).iterdir()}
    damages = draw(
        st.lists(
            st.tuples(
                ARRAY_DAMAGE,
                st.sampled_from(sorted(files)),
                st.integers(0, 2**16),
                st.integers(-3, 10**7),
            ),
            max_size=2,
        )
    )
    for damage in damages:
        files = damage_arrays(draw, files, *damage)
    return files, {}, None if damages else Matrices(m.X, m.Y)


def damage_arrays(draw, files: dict, damage: str, name: str, where: int, value: int) -> dict:
    """Return ``files`` with one array damaged as ``damage`` says."""
    files = dict(files)
    if damage == "bytes":
        files[name] = mutate(files[name], draw(st.lists(MUTATION, min_size=1, max_size=3)))
        return files
    arrays = {key: load_npy(content) for key, content in files.items()}
    if any(array is None for array in arrays.values()):
        return files
    target = {
        "nan": "data.npy",
        "inf": "data.npy",
        "id": "indices.npy",
        "indptr": "indptr.npy",
        "indptr_end": "indptr.npy",
        "dtype": name,
        "shape": "shape.npy",
    }[damage]
    array = arrays[target].copy()
    if damage == "dtype":
        with np.errstate(invalid="ignore"):  # NaN from an earlier damage
            array = array.astype(np.float64 if array.dtype != np.float64 else np.int32)
    elif array.size == 0:
        return files
    elif damage in ("nan", "inf"):
        array[where % array.size] = np.nan if damage == "nan" else -np.inf
    elif damage == "indptr_end":
        array[-1] = value
    else:
        array[where % array.size] = value
    files[target] = save_npy(array)
    return files


def load_npy(content: bytes):
    """The array in ``content``, or None if earlier damage made it unreadable."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Python 2 headers: the reader must refuse them
            return np.load(io.BytesIO(content), allow_pickle=False)
    except Exception:  # any failure: the reader under test is what must cope
        return None


def save_npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def read_npy_case(paths, options):
    """open_csr_npy on the directory of the files."""
    X = open_csr_npy(paths["shape.npy"].parent)
    return {"X": (X, None)}


#: Pieces of rows for the raw parser: valid tokens, separators and noise.
ROW_PIECES = [b"0", b"17", b"1,2", b"3:1", b"2:0.5", b"4:-1e3", b"5:0", b" ", b"\t", b","]


@st.composite
def parser_cases(draw):
    """Raw bodies for the compiled parser: rows of tokens with snippets mixed in."""
    pieces = st.sampled_from(ROW_PIECES * 3 + SNIPPETS)
    lines = draw(st.lists(st.lists(pieces, max_size=6), max_size=6))
    body = b"".join(b"".join(line) + b"\n" for line in lines)
    if draw(st.booleans()):
        body, _ = maybe_mutated(draw, body)
    return {"body": body}, {"labels_first": draw(st.booleans())}, None


def parse_case(paths, options):
    """Run the parser on an exactly sized buffer (so ASan sees any overread)."""
    body = np.frombuffer(paths["body"].read_bytes(), dtype=np.uint8).copy()
    arrays, error = parse_sparse_rows(body, 0, options["labels_first"], 1)
    if error is not None:
        raise DataFormatError(f"parse error {error}", path=paths["body"], line=int(error[2]))
    f_indptr, f_indices, values, l_indptr, l_indices = arrays
    n_rows = int(body.tobytes().count(b"\n"))
    width = int(max(f_indices.max(initial=-1), l_indices.max(initial=-1))) + 1
    X = sp.csr_matrix((values, f_indices, f_indptr), shape=(f_indptr.shape[0] - 1, width))
    Y = sp.csr_matrix(
        (np.ones(l_indices.size, np.float32), l_indices, l_indptr),
        shape=(l_indptr.shape[0] - 1, width),
    )
    return {"features": (X, n_rows), "labels": (Y, n_rows)}


#: The text readers, each as ``read(path)`` on an XC file (a BoW file's rows
#: are the XC rows without labels, handled by ``read_predictions``).
LINE_READERS = {
    "read_xc": read_xc,
    "read_libsvm": read_libsvm,
    "iter_xc_chunks": lambda path: list(iter_xc_chunks(path, 2)),
    "read_predictions": read_predictions,
}


@st.composite
def control_character_cases(draw):
    """A valid file with one control character put into one of its rows.

    The rows of every text format are separated by spaces and tabs only, so
    the reader must refuse the file and name that line; a reader that lets a
    C routine skip the character as white space merges or shifts rows.
    """
    reader = draw(st.sampled_from(sorted(LINE_READERS)))
    m, layout = draw(matrices(min_rows=1)), draw(row_layout())
    content = bow_bytes(m.X, layout) if reader == "read_predictions" else xc_bytes(m, layout)
    lines = content.split(b"\n")
    row = draw(st.integers(1, len(lines) - 2))
    at = draw(st.integers(0, len(lines[row])))
    control = draw(st.sampled_from([b"\x0b", b"\x0c", b"\x00", b"\x1f", b"\r"]))
    if control == b"\r" and at == len(lines[row]):
        control = b"\x0b"  # a CR just before the LF is a CRLF line end, which is fine
    lines[row] = lines[row][:at] + control + lines[row][at:]
    return {"data.txt": b"\n".join(lines)}, {"reader": reader, "line": row + 1}, None


def read_control_case(paths, options):
    """Read with the chosen reader, which must refuse the file at the right line."""
    try:
        LINE_READERS[options["reader"]](paths["data.txt"])
    except DataFormatError as error:
        assert error.line == options["line"], f"line {error.line}, not {options['line']}"
        raise
    raise AssertionError(f"{options['reader']} accepted a control character in a row")


def surfaces() -> list[Surface]:
    """A fresh :class:`Surface` (with empty counts) for every reader."""
    return [
        Surface("read_xc", xc_cases(), read_xc_case),
        Surface("read_libsvm", libsvm_cases(), read_libsvm_case),
        Surface("iter_xc_chunks", chunk_cases(), read_chunks_case),
        Surface("read_xc_split", split_cases(), read_split_case),
        Surface("read_bow_pair", bow_cases(), read_bow_case),
        Surface("read_predictions", prediction_cases(), read_predictions_case),
        Surface("read_arff", arff_cases(), read_arff_case),
        Surface("open_csr_npy", npy_cases(), read_npy_case, text_format=False),
        Surface("parse_sparse_rows", parser_cases(), parse_case),
        Surface("control_characters", control_character_cases(), read_control_case),
    ]


def fuzz(surface: Surface, examples: int, random_seed: int | None = None,
         check: Callable | None = None) -> collections.Counter:
    """Run ``examples`` cases on ``surface``; return its outcome counts.

    With ``random_seed`` None the run is derandomized (the same cases every
    time, for CI); otherwise the seed picks the cases. ``check(case)`` asserts
    the property of one case (default: :func:`check_case` on this surface;
    ``tools/fuzz_models.py`` gives its own).
    """
    config = settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=random_seed is None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
        ],
    )

    @config
    @given(case=surface.cases)
    def property_holds(case):
        if check is None:
            check_case(surface, *case)
        else:
            check(case)

    if random_seed is not None:
        property_holds = seed(random_seed)(property_holds)
    property_holds()
    return surface.counts


def main(argv=None) -> int:
    """Fuzz the chosen surfaces; print the cases tried; 1 if any failed."""
    return run(surfaces(), fuzz, argv, __doc__, default_examples=5000)


def run(all_surfaces: list, fuzz_surface: Callable, argv, doc: str,
        default_examples: int) -> int:
    """The command line of a fuzzing script (also ``tools/fuzz_models.py``'s).

    Runs ``fuzz_surface(surface, examples, seed)`` on the surfaces chosen by
    `argv`, prints each one's outcome counts and every distinct failure with
    the smallest case hypothesis found for it; returns 1 if any failed.
    """
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=default_examples,
                        help="cases per surface")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the cases")
    parser.add_argument("--only", nargs="*", help="names of the surfaces to run")
    args = parser.parse_args(argv)
    failed = False
    for surface in all_surfaces:
        if args.only and surface.name not in args.only:
            continue
        try:
            fuzz_surface(surface, args.examples, args.seed)
        except Exception as exc:  # report every surface, then fail
            failed = True
            # hypothesis groups distinct failures, each noted with its smallest case.
            for error in getattr(exc, "exceptions", [exc]):
                notes = "\n".join(getattr(error, "__notes__", []))
                where = traceback.extract_tb(error.__traceback__)[-1]
                print(f"{surface.name}: FAILED: {type(error).__name__}: {error} "
                      f"({where.filename}:{where.lineno})\n{notes}", flush=True)
        outcomes = ", ".join(f"{count} {outcome}" for outcome, count in
                             sorted(surface.counts.items()))
        print(f"{surface.name:<24} {sum(surface.counts.values()):>7} cases: {outcomes}",
              flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
