"""Checks shared by the readers and writers of :mod:`xmltree.datasets`.

Every file format stores feature and label ids as 32-bit integers, so the
column count of a matrix being written, and every size argument that shapes
a matrix being read, must fit in one; these checks run before any
conversion that could wrap an id (``2**32 + 1`` would become ``1``).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._base import check_int
from ..exceptions import DataFormatError

__all__ = ["MAX_DIMENSION", "check_dimension", "check_storable_ids"]

#: Largest feature or label count representable with int32 ids.
MAX_DIMENSION = 2**31 - 1


def check_dimension(name: str, value, low: int = 0, *, optional: bool = False) -> None:
    """Raise ``ValueError`` unless ``value`` is an integer in ``[low, MAX_DIMENSION]``.

    Python and NumPy integers are accepted; bools, floats (``3.7`` is never
    truncated) and strings are not, nor None unless ``optional``.
    """
    if value is not None or not optional:
        check_int(name, value, low, MAX_DIMENSION)


def check_storable_ids(matrix, what: str) -> None:
    """Raise ``DataFormatError`` if the column ids of ``matrix`` do not fit in int32.

    Parameters
    ----------
    matrix : array-like or scipy sparse matrix
        A matrix about to be written; inputs without a 2-D ``shape`` (label
        lists) have their ids checked when they are converted.
    what : str
        Name used in error messages.
    """
    shape = getattr(matrix, "shape", None)
    if shape is None or len(shape) != 2:
        return
    n_columns = int(shape[1])
    if n_columns > MAX_DIMENSION:
        raise DataFormatError(
            f"{what}: {n_columns} columns do not fit the 32-bit ids of the file "
            f"(at most {MAX_DIMENSION})"
        )
    # With that many columns every valid id fits; an invalid one stored in a
    # wider type would be wrapped into range by the conversion to int32.
    if sp.issparse(matrix) and matrix.format == "csr" and matrix.indices.dtype.itemsize > 4:
        ids = matrix.indices
        outside = np.flatnonzero((ids < 0) | (ids >= n_columns))
        if outside.size:
            raise DataFormatError(
                f"{what}: column id {ids[outside[0]]} is out of range [0, {n_columns})"
            )
