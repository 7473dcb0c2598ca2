"""CSR matrices stored as ``.npy`` files and memory-mapped back.

A directory holds ``data.npy`` (float32), ``indices.npy`` (int32, sorted
within rows), ``indptr.npy`` (int64) and ``shape.npy`` (int64, 2 values): the
layout the compiled kernels read. :func:`open_csr_npy` maps the files instead
of reading them, so a matrix larger than the free memory can be given to
``fit`` or ``predict``: the operating system pages the entries in as the
kernels touch them and may drop them again, and every tree and thread
shares the one mapping.
"""

from __future__ import annotations

import tokenize
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .._validation import check_csr_structure, check_features
from ..exceptions import DataFormatError
from ._checks import MAX_DIMENSION

__all__ = ["write_csr_npy", "open_csr_npy"]

#: File name and dtype of each array, in the kernels' layout.
_ARRAYS = {"data": np.float32, "indices": np.int32, "indptr": np.int64, "shape": np.int64}

#: What numpy raises on a damaged ``.npy`` file: a bad magic string or header
#: dictionary (ValueError, TypeError; SyntaxError, tokenize.TokenError,
#: RecursionError or MemoryError from parsing the header as a Python literal),
#: a file shorter than its header (EOFError) or than the data it declares
#: (ValueError from mmap), sizes beyond any address space (OverflowError).
_DAMAGED_NPY = (ValueError, TypeError, SyntaxError, tokenize.TokenError, RecursionError,
                MemoryError, EOFError, OverflowError)


def write_csr_npy(directory, matrix) -> None:
    """Write a matrix as the ``.npy`` files that :func:`open_csr_npy` maps.

    Parameters
    ----------
    directory : str or os.PathLike
        Created if missing; its ``data.npy``, ``indices.npy``, ``indptr.npy``
        and ``shape.npy`` are overwritten.
    matrix : array-like or scipy sparse matrix
        Features or a binary label matrix; converted to the kernels' CSR
        layout (float32 values, sorted int32 indices, int64 row pointers).

    Raises
    ------
    DataFormatError
        If ``matrix`` is not a valid finite 2-D matrix, or has more columns
        than the int32 indices can number.
    """
    # check_features refuses ids beyond int32 before converting them.
    matrix = check_features(matrix, what="matrix")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    np.save(directory / "data.npy", matrix.data)
    np.save(directory / "indices.npy", matrix.indices)
    np.save(directory / "indptr.npy", matrix.indptr)
    np.save(directory / "shape.npy", np.array(matrix.shape, dtype=np.int64))


def open_csr_npy(directory, mmap_mode: str = "r") -> sp.csr_matrix:
    """Memory-map a matrix written by :func:`write_csr_npy`.

    The values and column indices (the bulk of a sparse matrix) stay on
    disk and are shared, not copied, by ``LdSM.fit`` and ``predict``; only
    the row pointers (one integer per row) are copied, by scipy. Every file
    is checked first (dtype, shape, CSR structure, finite values), since the
    compiled kernels trust what they are given.

    Parameters
    ----------
    directory : str or os.PathLike
        A directory written by :func:`write_csr_npy`.
    mmap_mode : {"r", "c"}, default="r"
        ``numpy.load`` mapping mode: read-only, or copy-on-write.

    Returns
    -------
    scipy.sparse.csr_matrix
        Backed by the mapped files.

    Raises
    ------
    FileNotFoundError
        If a file is missing.
    ValueError
        On another ``mmap_mode``.
    DataFormatError
        If a file is damaged (not a readable ``.npy`` file, or one whose
        header only Python 2 wrote), holds the wrong dtype, NaN or infinite
        values or stored zeros, or the arrays do not form a valid CSR
        matrix; the message names the file.
    """
    if mmap_mode not in ("r", "c"):
        raise ValueError(f"mmap_mode must be 'r' or 'c', got {mmap_mode!r}")
    directory = Path(directory)
    arrays = {name: _load_array(directory / f"{name}.npy", dtype, mmap_mode)
              for name, dtype in _ARRAYS.items()}
    shape = _matrix_shape(arrays["shape"], directory / "shape.npy")
    check_csr_structure(arrays["indptr"], arrays["indices"], shape, str(directory))
    if arrays["data"].shape != arrays["indices"].shape:
        raise DataFormatError("data.npy and indices.npy differ in length", path=directory)
    if not np.isfinite(arrays["data"]).all():
        raise DataFormatError("contains NaN or infinite values", path=directory / "data.npy")
    if not arrays["data"].all():
        # fit and predict drop stored zeros (so that they cannot change the
        # model), which would copy the mapped matrix into memory.
        raise DataFormatError("contains stored zeros, which write_csr_npy never writes",
                              path=directory / "data.npy")
    matrix = sp.csr_matrix((arrays["data"], arrays["indices"], arrays["indptr"]), shape=shape,
                           copy=False)
    matrix.has_canonical_format = True
    return matrix


def _load_array(path: Path, dtype, mmap_mode: str) -> np.ndarray:
    """Map one 1-D ``.npy`` file of the given dtype; any damage is a DataFormatError."""
    try:
        with warnings.catch_warnings():
            # numpy warns, and then guesses, when a header only parses after
            # rewriting it as Python 2 wrote headers; write_csr_npy never
            # writes one, so such a file is damaged, not to be guessed at.
            warnings.simplefilter("error", UserWarning)
            array = np.load(path, mmap_mode=mmap_mode, allow_pickle=False)
    except (*_DAMAGED_NPY, UserWarning) as exc:
        raise DataFormatError(f"not a readable .npy file ({type(exc).__name__}: {exc})",
                              path=path) from exc
    if array.dtype != dtype or array.ndim != 1:
        raise DataFormatError(f"expected a 1-D {np.dtype(dtype).name} array, "
                              f"got {array.ndim}-D {array.dtype}", path=path)
    return array


def _matrix_shape(stored: np.ndarray, path: Path) -> tuple[int, int]:
    """The ``(n_rows, n_columns)`` stored in ``shape.npy``, checked."""
    if stored.shape != (2,) or np.any(stored < 0):
        raise DataFormatError("expected 2 non-negative sizes", path=path)
    shape = (int(stored[0]), int(stored[1]))
    if shape[1] > MAX_DIMENSION:
        raise DataFormatError(
            f"{shape[1]} columns do not fit the int32 indices (at most {MAX_DIMENSION})",
            path=path)
    return shape
