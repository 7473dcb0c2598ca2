"""The command line's options that come from the learners' parameter tables, and their types.

``xmltree.cli`` builds its parsers with these; the benchmark scripts reuse
the same types.
"""

from __future__ import annotations

import argparse

from ._params import Param
from .datasets import READERS
from .ldsm._params import LDSM_PARAMS
from .learned_tree._params import LEARNED_TREE_PARAMS
from .lomtree._params import LOMTREE_PARAMS

#: Readers selectable with ``--format`` (``xmltree.datasets.READERS``); all return ``(X, Y)``.
FORMATS = tuple(READERS)


def _optional(kind):
    """argparse type: a ``kind`` value, or ``None`` spelled 'none'."""
    def parse(text: str):
        return None if text.lower() == "none" else kind(text)
    parse.__name__ = kind.__name__
    return parse


def _word_or(number, name: str):
    """An argparse type: the word 'auto' or 'none', else ``number(text)``;
    argparse calls a bad value an invalid `name` value."""
    def parse(text: str):
        word = text.lower()
        return word if word in ("auto", "none") else number(text)

    parse.__name__ = name
    return parse


_number_or_word = _word_or(float, "number")
_integer_or_word = _word_or(int, "integer")


def _none_spelled_out(params: dict) -> dict:
    """``params`` with 'none' turned into None for the options where None is a
    setting of its own (elsewhere a None value means "option not given")."""
    return {name: None if value == "none" and name in _NONE_SETTINGS else value
            for name, value in params.items()}


#: The seed of ``demo`` and ``train`` when none is given: a run is reproducible by default.
DEFAULT_SEED = 0


def _add_seed_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED,
                        help=f"random seed (default {DEFAULT_SEED}: the same options on the same "
                        "data give the same model)")


def _add_format_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=FORMATS, default="xc",
                        help="data file format: Extreme Classification Repository single "
                        "file (xc, default) or libsvm/svmlight multi-label")


#: Learners of ``train --learner``; the first is the default.
LEARNERS = ("ldsm", "lomtree", "learned-tree")

#: Each learner's parameter table, by its ``--learner`` name: the options below are made
#: from them, so that every parameter a table marks ``cli`` has a flag.
PARAMETER_TABLES = {"ldsm": LDSM_PARAMS, "lomtree": LOMTREE_PARAMS,
                    "learned-tree": LEARNED_TREE_PARAMS}


def _options_by_name() -> dict[str, list[tuple[str, Param]]]:
    """Every command-line hyper-parameter, with the learners that take it."""
    options: dict[str, list[tuple[str, Param]]] = {}
    for learner, table in PARAMETER_TABLES.items():
        for param in table:
            if param.cli:
                options.setdefault(param.name, []).append((learner, param))
    return options


_OPTIONS = _options_by_name()

#: Options where the word 'none' is the setting None (not "option not given").
_NONE_SETTINGS = {name for name, entries in _OPTIONS.items()
                  if any(None in param.words or None in param.choices for _, param in entries)}


def _option_help(entries: list[tuple[str, Param]]) -> str:
    """"ldsm, lomtree: step size"; learners that say different things, one after another."""
    texts: dict[str, list[str]] = {}
    for learner, param in entries:
        texts.setdefault(param.help, []).append(learner)
    return "; ".join(f"{', '.join(learners)}: {text}" for text, learners in texts.items())


def _add_option(group, name: str, entries: list[tuple[str, Param]]) -> None:
    """One hyper-parameter flag, typed by the learners' tables."""
    flag, text = f"--{name.replace('_', '-')}", _option_help(entries)
    params = [param for _, param in entries]
    if any(param.kind == "choice" for param in params):
        choices = dict.fromkeys("none" if choice is None else str(choice)
                                for param in params for choice in param.choices)
        group.add_argument(flag, dest=name, choices=list(choices), help=text)
    elif any(param.words for param in params):
        words = dict.fromkeys("none" if word is None else word
                              for param in params for word in param.words)
        number = _integer_or_word if params[0].kind == "int" else _number_or_word
        kind = "INT" if params[0].kind == "int" else "X"
        group.add_argument(flag, dest=name, metavar="|".join([kind, *words]), type=number,
                           help=text)
    elif params[0].kind == "n_jobs":
        group.add_argument(flag, dest=name, type=int, help=text)
    else:
        group.add_argument(flag, dest=name, help=text,
                           type={"int": int, "real": float}.get(params[0].kind, str))


def _add_model_options(parser: argparse.ArgumentParser, learner: str | None = None) -> None:
    """Add the hyper-parameter options: all of them, or only ``learner``'s."""
    group = parser.add_argument_group("hyper-parameters (default: the learner's own)")
    for name, entries in _OPTIONS.items():
        entries = [entry for entry in entries if learner in (None, entry[0])]
        if entries:
            _add_option(group, name, entries)
    group.add_argument("--rerank", action="store_true",
                       help="also fit a tail-label re-ranker and save it with the model (for "
                       "'predict --rerank'; not for learned-tree, whose labels are names)")
    group.add_argument("--rerank-param", dest="rerank_params", action="append", default=[],
                       metavar="NAME=VALUE",
                       help="a re-ranker setting, e.g. alpha=0.8 (repeatable; implies "
                       "--rerank; names: " + ", ".join(_rerank_defaults()) + ")")




def _rerank_defaults() -> dict:
    from .rerank import Reranker

    return Reranker().get_params()
