"""Checks shared by the readers and writers of :mod:`xmltree.datasets`.

Every file format stores feature and label ids as 32-bit integers, so the
column count of a matrix being written, and every size argument that shapes
a matrix being read, must fit in one; these checks run before any
conversion that could wrap an id (``2**32 + 1`` would become ``1``).
"""

from __future__ import annotations

from .._base import check_int

__all__ = ["MAX_DIMENSION", "check_dimension"]

#: Largest feature or label count representable with int32 ids.
MAX_DIMENSION = 2**31 - 1


def check_dimension(name: str, value, low: int = 0, *, optional: bool = False) -> None:
    """Raise ``ValueError`` unless ``value`` is an integer in ``[low, MAX_DIMENSION]``.

    Python and NumPy integers are accepted; bools, floats (``3.7`` is never
    truncated) and strings are not, nor None unless ``optional``.
    """
    if value is not None or not optional:
        check_int(name, value, low, MAX_DIMENSION)
