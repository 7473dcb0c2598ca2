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

from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .._validation import check_csr_structure, check_features
from ..exceptions import DataFormatError
from ._checks import check_storable_ids

__all__ = ["write_csr_npy", "open_csr_npy"]

#: File name and dtype of each array, in the kernels' layout.
_ARRAYS = {"data": np.float32, "indices": np.int32, "indptr": np.int64, "shape": np.int64}


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
    check_storable_ids(matrix, "matrix")
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
    the row pointers (one integer per row) are copied, by scipy.

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
        If a file holds the wrong dtype or the arrays do not form a valid CSR
        matrix.
    """
    if mmap_mode not in ("r", "c"):
        raise ValueError(f"mmap_mode must be 'r' or 'c', got {mmap_mode!r}")
    directory = Path(directory)
    arrays = {}
    for name, dtype in _ARRAYS.items():
        path = directory / f"{name}.npy"
        array = np.load(path, mmap_mode=mmap_mode, allow_pickle=False)
        if array.dtype != dtype or array.ndim != 1:
            raise DataFormatError(f"{path}: expected a 1-D {np.dtype(dtype).name} array, "
                                  f"got {array.ndim}-D {array.dtype}")
        arrays[name] = array
    if arrays["shape"].shape != (2,) or np.any(arrays["shape"] < 0):
        raise DataFormatError(f"{directory / 'shape.npy'}: expected 2 non-negative sizes")
    shape = tuple(int(n) for n in arrays["shape"])
    check_csr_structure(arrays["indptr"], arrays["indices"], shape, str(directory))
    if arrays["data"].shape != arrays["indices"].shape:
        raise DataFormatError(f"{directory}: data.npy and indices.npy differ in length")
    matrix = sp.csr_matrix((arrays["data"], arrays["indices"], arrays["indptr"]), shape=shape,
                           copy=False)
    matrix.has_canonical_format = True
    return matrix
