"""Every reader, fuzzed: canonical CSR or DataFormatError, never anything else.

Runs the property of ``tools/fuzz_readers.py`` (mutated valid files of each
format; see its docstring) on a small derandomized budget, so CI tries the
same cases every time; ``python tools/fuzz_readers.py --examples N --seed S``
runs deeper.
"""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

#: Cases per surface: the whole file runs in about ten seconds.
EXAMPLES = 2000


def load_fuzz_readers():
    """Import ``tools/fuzz_readers.py``, which is a script, not a package module."""
    path = Path(__file__).resolve().parents[1] / "tools" / "fuzz_readers.py"
    spec = importlib.util.spec_from_file_location("fuzz_readers", path)
    module = importlib.util.module_from_spec(spec)
    # Registered first: dataclasses look their module up while it executes.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


fuzz_readers = load_fuzz_readers()


@pytest.mark.parametrize("surface", fuzz_readers.surfaces(), ids=lambda surface: surface.name)
def test_reader_returns_canonical_csr_or_data_format_error(surface):
    counts = fuzz_readers.fuzz(surface, EXAMPLES)
    assert sum(counts.values()) >= EXAMPLES
    # Both outcomes must occur, or the generators no longer reach the reader
    # (files with control characters must all be refused).
    if surface.name != "control_characters":
        assert counts["accepted"] >= EXAMPLES // 20
    assert counts["rejected"] >= EXAMPLES // 20


@pytest.mark.parametrize(
    ("indptr", "indices", "problem"),
    [
        ([0, 2, 3, 0], [1, 2, 3], "indptr"),  # what the vertical-tab bug returned
        ([0, 2, 1, 3], [1, 2, 3], "indptr"),
        ([0, 2, 3, 3], [2, 1, 3], "increasing"),
        ([0, 2, 3, 3], [1, 1, 3], "increasing"),
        ([0, 2, 3, 3], [1, 2, 9], "id range"),
    ],
)
def test_the_canonical_check_catches_broken_matrices(indptr, indices, problem):
    # Built without scipy's own checks, as a buggy reader could return it.
    matrix = sp.csr_matrix((3, 5), dtype=np.float32)
    matrix.indptr = np.array(indptr, dtype=np.int32)
    matrix.indices = np.array(indices, dtype=np.int32)
    matrix.data = np.ones(3, dtype=np.float32)
    with pytest.raises(AssertionError, match=problem):
        fuzz_readers.check_canonical(matrix, 3, "X")


def test_mutations_cover_every_kind():
    data = b"2 3 1\n0 1:1\n 2:2\n"
    assert fuzz_readers.mutate(data, [("flip", 0, 1)]) == b"3 3 1\n0 1:1\n 2:2\n"
    assert fuzz_readers.mutate(data, [("insert", 9, b"\x0b")]) == b"2 3 1\n0 1\x0b:1\n 2:2\n"
    assert fuzz_readers.mutate(data, [("boundary", 4, b"7")]) == b"2 3 1\n0 1:71\n 2:2\n"
    assert fuzz_readers.mutate(data, [("value", 1, b"\x0b")]) == b"2 3 1\n0 1:1\n 2:\x0b\n"
    assert fuzz_readers.mutate(b"0 1:1 2:2\r\n", [("value", 0, b"x")]) == b"0 1:x\r\n"
    assert fuzz_readers.mutate(data, [("delete", 6, 2)]) == b"2 3 1\n1:1\n 2:2\n"
    assert fuzz_readers.mutate(data, [("truncate", 8, 0)]) == b"2 3 1\n0 "
    assert fuzz_readers.mutate(data, [("duplicate_line", 1, 0)]) == b"2 3 1\n0 1:1\n0 1:1\n 2:2\n"
    assert fuzz_readers.mutate(data, [("header", 0, 2)]) == b"4 3 1\n0 1:1\n 2:2\n"
    assert fuzz_readers.mutate(data, [("header", 2, -2)]) == b"2 3 0\n0 1:1\n 2:2\n"
