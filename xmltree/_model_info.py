"""What a model file holds, in words: the report of ``xmltree info MODEL``.

The file is read and checked as ``xmltree.load`` does, so the report
describes a model that loads. The stored parameters are listed as the file
holds them, whatever they are, so that a setting added to a learner's state
shows up without a change here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from ._base import TRAINING_KEY, estimator_class
from ._persistence import load_model
from .exceptions import ModelFormatError

__all__ = ["describe_model_file"]

#: Longest stored value printed in full; longer ones are cut, their length said.
_MAX_VALUE_CHARS = 80


def describe_model_file(path) -> str:
    """The report of ``xmltree info``: learner, format, structure, sizes, training, settings.

    Parameters
    ----------
    path : str or os.PathLike
        A model file written by ``save``.

    Returns
    -------
    str
        Lines of text, without a final newline.

    Raises
    ------
    ModelFormatError
        If the file is not a valid model (as :func:`xmltree.load`).
    """
    stored = load_model(path)
    try:
        cls = estimator_class(stored.kind)
    except ModelFormatError as exc:
        raise ModelFormatError(f"{path}: {exc}") from None
    model = cls._from_file(stored, path)
    size = Path(path).stat().st_size
    lines = [f"file: {path} ({_megabytes(size)})",
             f"learner: {_learner_name(model)} (kind {stored.kind!r}, format version "
             f"{stored.version})"]
    lines += [f"{name}: {value}" for name, value in _shape(model).items()]
    lines.append("training: " + _training(stored.params.get(TRAINING_KEY)))
    lines.append("parts (arrays by prefix, uncompressed):")
    lines += [f"  {prefix:<28} {count:>5} arrays {_megabytes(nbytes):>10}"
              for prefix, (count, nbytes) in _parts(stored.arrays).items()]
    lines.append("settings (as stored):")
    settings = {name: value for name, value in stored.params.items() if name != TRAINING_KEY}
    lines += [f"  {name} = {_shown(value)}" for name, value in _flattened(settings)]
    return "\n".join(lines)


def _learner_name(model) -> str:
    """The class, with the learner a stage or a text model wraps."""
    inner = _wrapped(model)
    if inner is None:
        return type(model).__name__
    return f"{type(model).__name__} of {_learner_name(inner)}"


def _wrapped(model):
    """The learner inside a text model (``estimator_``) or a re-ranking stage, or None."""
    from .rerank import Reranked

    if isinstance(model, Reranked):
        return model.estimator
    return getattr(model, "estimator_", None)


def _shape(model) -> dict:
    """Trees, nodes, leaves and depth of the innermost learner; its labels and features."""
    learner = model
    while _wrapped(learner) is not None:
        learner = _wrapped(learner)
    facts = {}
    if hasattr(learner, "n_nodes_"):  # LdSM: arrays with one entry per tree
        facts["trees"] = len(learner.n_nodes_)
        facts["nodes"] = int(np.sum(learner.n_nodes_))
        facts["leaves"] = int(np.sum(learner.n_leaves_))
        facts["depth"] = int(np.max(learner.depth_))
    elif hasattr(learner, "tree_statistics"):  # LOMTree
        statistics = learner.tree_statistics()
        facts.update(trees=1, nodes=statistics["n_nodes"], leaves=statistics["n_leaves"],
                     depth=statistics["depth"])
    elif hasattr(learner, "tree_"):  # LearnedTree: internal nodes, a leaf per label
        n_leaves = len(learner.classes_)
        facts.update(trees=1, nodes=learner.tree_.n_nodes + n_leaves, leaves=n_leaves)
    n_labels = getattr(model, "_n_outputs", None)
    if n_labels is not None:
        facts["labels"] = n_labels()
    n_features = getattr(model, "n_features_in_", None)
    if n_features is not None:
        facts["features"] = int(n_features)
    return facts


def _training(facts) -> str:
    """One line on how the model was trained, from the facts ``save`` stored."""
    if not isinstance(facts, dict):
        return "not recorded (saved by an xmltree that did not store it)"
    parts = []
    if facts.get("n_samples") is not None:
        parts.append(f"{facts['n_samples']} samples")
    for name in ("n_features", "n_labels"):
        if facts.get(name) is not None:
            parts.append(f"{facts[name]} {name[2:]}")
    if facts.get("fit_seconds") is not None:
        parts.append(f"fit {facts['fit_seconds']:.1f} s")
    for name, label in (("xmltree_version", "xmltree"), ("fitted_at", "at")):
        if facts.get(name):
            parts.append(f"{label} {facts[name]}")
    return ", ".join(parts) or "not recorded"


def _parts(arrays: dict) -> dict:
    """Array count and bytes per prefix: a name's folders, tree numbers as ``*``."""
    parts = {}
    for name, array in sorted(arrays.items()):
        prefix = re.sub(r"\d+", "*", name.rsplit("/", 1)[0]) if "/" in name else name
        count, nbytes = parts.get(prefix, (0, 0))
        parts[prefix] = (count + 1, nbytes + array.nbytes)
    return parts


def _flattened(params: dict, prefix: str = ""):
    """``(dotted name, value)`` for every leaf of nested parameter dicts, in stored order."""
    for name, value in params.items():
        if isinstance(value, dict) and value:
            yield from _flattened(value, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", value


def _shown(value) -> str:
    """A stored value as JSON, cut when long."""
    text = json.dumps(value)
    if len(text) <= _MAX_VALUE_CHARS:
        return text
    return f"{text[:_MAX_VALUE_CHARS]}... ({len(text)} characters)"


def _megabytes(nbytes: int) -> str:
    return f"{nbytes / 1e6:.3f} MB" if nbytes < 1e9 else f"{nbytes / 1e9:.2f} GB"
