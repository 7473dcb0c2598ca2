"""Checks of single values, shared by the estimators, the metrics and the parameter tables.

Each returns the value normalised (an int as ``int``, a real as ``float``) or
raises ``ValueError`` naming the value and what is allowed. This module
imports nothing of xmltree, so that every other module may use it.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = ["is_int", "check_k", "check_int", "check_real", "check_choice", "check_bool",
           "check_seed"]


def is_int(value) -> bool:
    """True for Python and NumPy integers, False for bools and everything else."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_k(k, n_labels: int) -> int:
    """Return the number of labels to rank per sample: ``k``, capped at ``n_labels``.

    A ``k`` beyond the labels there are asks for all of them; capping it keeps
    the ``n_samples x k`` results from growing with a huge ``k``.

    Raises
    ------
    ValueError
        Unless ``k`` is an integer >= 1.
    """
    return min(check_int("k", k, 1), max(int(n_labels), 1))


def check_int(name: str, value, low: int, high: int | None = None) -> int:
    """Return ``value`` as an int; ``ValueError`` unless it is an integer in ``[low, high]``."""
    if not is_int(value) or value < low or (high is not None and value > high):
        allowed = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name} must be an integer {allowed}, got {value!r}")
    return int(value)


def check_real(name: str, value, low: float, high: float = math.inf, *,
               strict: bool = False) -> float:
    """Return ``value`` as a float; ``ValueError`` unless it is finite and in range.

    The range is ``[low, high]``, or ``(low, high]`` with ``strict``.
    """
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    ok = ok and math.isfinite(value) and (value > low if strict else value >= low)
    if not (ok and value <= high):
        if high == math.inf:
            allowed = f"a finite number {'>' if strict else '>='} {low}"
        else:
            allowed = f"in {'(' if strict else '['}{low}, {high}]"
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return float(value)


def check_choice(name: str, value, choices):
    """Return ``value``; ``ValueError`` unless it is one of ``choices``.

    An unhashable ``value`` (a list read from a model file, say) is not
    found in a dict or set of choices, nor an array in any.
    """
    try:
        found = value in choices
    except (TypeError, ValueError):  # unhashable; an array's ambiguous truth value
        found = False
    if not found:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")
    return value


def check_bool(name: str, value) -> bool:
    """Return ``value`` as a bool; ``ValueError`` unless it is True or False."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_seed(value) -> None:
    """Raise ``ValueError`` unless ``value`` is None or a non-negative integer."""
    if value is not None:
        check_int("random_state", value, 0)
