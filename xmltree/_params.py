"""Declarative hyper-parameter tables: one per estimator, read by everything that needs them.

An estimator lists its hyper-parameters once, as :class:`Param` rows. From
that table come the checks of ``fit`` (:func:`check_params`, errors naming
the parameter, the value and what is allowed), the command-line flags
(``xmltree.cli``), the benchmark scripts' flags and the parameter fuzzer
(``tools/fuzz_models.py``), so that a new parameter is validated, exposed
and fuzzed the day it is added.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._base import n_threads
from ._checks import check_bool, check_choice, check_int, check_real, check_seed

__all__ = ["Param", "check_param", "check_params", "describe"]

#: The kinds of value a :class:`Param` takes.
KINDS = ("int", "real", "choice", "bool", "seed", "n_jobs", "object")


@dataclass(frozen=True)
class Param:
    """One hyper-parameter of an estimator.

    Parameters
    ----------
    name : str
        The constructor argument.
    kind : {"int", "real", "choice", "bool", "seed", "n_jobs", "object"}
        What values it takes: an integer or a finite real in ``[low, high]``
        (``(low, high]`` with ``strict``), one of ``choices``, a bool, a
        random seed (None or an integer >= 0), joblib's ``n_jobs``, or
        anything (``"object"``: the estimator checks it itself).
    low, high : float, default=-inf, inf
        Bounds of an "int" or "real".
    strict : bool, default=False
        Whether ``low`` itself is excluded.
    choices : tuple, default=()
        The values of a "choice".
    words : tuple, default=()
        Values accepted besides the kind's, such as ``"auto"`` or ``None``.
    help : str, default=""
        One line for the command line's help.
    cli : bool, default=True
        Whether the command line has a flag for it (False: Python only).
    """

    name: str
    kind: str
    low: float = -math.inf
    high: float = math.inf
    strict: bool = False
    choices: tuple = ()
    words: tuple = ()
    help: str = ""
    cli: bool = True

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown parameter kind {self.kind!r}")


def check_param(param: Param, value):
    """Return `value` if `param` accepts it (ints as int, reals as float).

    Raises
    ------
    ValueError
        Naming the parameter, the value and what is allowed.
    """
    if _is_word(value, param.words):
        return value
    try:
        return _check_kind(param, value)
    except ValueError:
        if not param.words:
            raise
        raise ValueError(f"{param.name} must be {describe(param)}, got {value!r}") from None


def check_params(table: tuple[Param, ...], params: dict) -> dict:
    """Check every parameter of `table` in `params`; return them, numbers normalised.

    Raises
    ------
    ValueError
        For the first parameter out of range.
    """
    return {**params, **{p.name: check_param(p, params[p.name]) for p in table}}


def describe(param: Param) -> str:
    """What `param` accepts, in words: "'auto', None or an integer in [1, 10]"."""
    words = [repr(word) if isinstance(word, str) else str(word) for word in param.words]
    if param.kind == "int":
        words.append(f"an integer {_range(param)}")
    elif param.kind == "real":
        words.append(f"a number {_range(param)}")
    elif param.kind == "choice":
        words.append(f"one of {list(param.choices)}")
    elif param.kind == "bool":
        words.append("True or False")
    elif param.kind == "seed":
        words.append("None or an integer >= 0")
    elif param.kind == "n_jobs":
        words.append("None or a non-zero integer (joblib's convention)")
    else:
        words.append("any value the estimator checks itself")
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _range(param: Param) -> str:
    if param.high == math.inf:
        return f"{'>' if param.strict else '>='} {_number(param.low)}"
    return f"in {'(' if param.strict else '['}{_number(param.low)}, {_number(param.high)}]"


def _number(value: float):
    return int(value) if float(value).is_integer() else value


def _is_word(value, words: tuple) -> bool:
    """Whether `value` is one of `words` (None by identity, strings by equality)."""
    return any(value is word if word is None else isinstance(value, str) and value == word
               for word in words)


def _check_kind(param: Param, value):
    name = param.name
    if param.kind == "int":
        high = None if param.high == math.inf else int(param.high)
        return check_int(name, value, int(param.low), high)
    if param.kind == "real":
        return check_real(name, value, param.low, param.high, strict=param.strict)
    if param.kind == "choice":
        return check_choice(name, value, param.choices)
    if param.kind == "bool":
        return check_bool(name, value)
    if param.kind == "seed":
        check_seed(value)
    elif param.kind == "n_jobs":
        n_threads(value)
    return value
