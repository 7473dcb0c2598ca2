"""Safe, versioned, atomically written model files.

A model file is an uncompressed ``.npz`` archive (a zip of ``.npy`` arrays)
holding numeric arrays plus one JSON document, ``__meta__``, with the model
kind, the format version and the hyper-parameters. Nothing is pickled: arrays
are read with ``allow_pickle=False`` and object dtypes are refused, so loading
a file cannot execute code. The estimators validate shapes and index ranges of
what they get back before any of it reaches compiled code.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ._atomic import atomic_write
from .exceptions import ModelFormatError

__all__ = ["FORMAT_VERSION", "OLDEST_READABLE_VERSION", "ModelFile", "save_model", "load_model"]

#: Version of the file layout written by :func:`save_model`, shared by all
#: model kinds. Increment it whenever what any estimator stores changes, and
#: record the change here; an estimator whose own layout changed upgrades or
#: refuses older files in its ``_upgrade_state`` (``xmltree._base.Estimator``).
#:
#: 1. First layout.
#: 2. The LdSM / Reranker tail-label re-ranker stores its feature weights
#:    (``rerank.feature_weights``), label inverse propensities
#:    (``rerank.inverse_propensity``) and the settings that made them; in
#:    version 1 files it may still have the first layout, without them.
#:    LdSM's ``rerank`` hyper-parameter may be a dict of re-ranker settings.
#:    New hyper-parameters, absent from version 1 files (which load with their
#:    defaults): LdSM's ``leaf_aggregation`` and LOMTree's ``beam_scale``.
#:    Later, a new kind without a new version (no other kind's layout
#:    changed): ``"reranked"``, a learner's state under ``estimator/`` names
#:    beside its re-ranker's (``xmltree.rerank.Reranked``).
#: 3. LdSM stores the feature scaling it learned (``params["scaling"]``, and
#:    the array ``scaling/idf`` for tf-idf) and, with linear leaves, its label
#:    classifiers (``labels/indptr``, ``labels/indices``, ``labels/values``,
#:    ``labels/bias``). New hyper-parameters ``leaf_model``, ``C``,
#:    ``n_candidates``, ``histogram_weight`` and ``feature_scaling``: older
#:    files load as the models they are, with histogram leaves on unscaled
#:    features (and the leaf scores they recorded).
FORMAT_VERSION = 3

#: Files of versions ``OLDEST_READABLE_VERSION`` to ``FORMAT_VERSION`` are read;
#: others are refused with a message saying what to do.
OLDEST_READABLE_VERSION = 1

_MAGIC = "xmltree-model"
_META_KEY = "__meta__"


class ModelFile(NamedTuple):
    """What :func:`load_model` read: the model kind, the file's format version,
    the JSON parameters and the arrays."""

    kind: str
    version: int
    params: dict
    arrays: dict[str, np.ndarray]


def save_model(path, kind: str, params: dict, arrays: dict[str, np.ndarray]) -> None:
    """Write a model file atomically.

    The archive is written through :func:`xmltree._atomic.atomic_write`, so
    a crash or a full disk never leaves a half-written model behind.

    Parameters
    ----------
    path : str or os.PathLike
        Destination file (conventionally ending in ``.npz``).
    kind : str
        Model kind, e.g. ``"ldsm"``; checked by :func:`load_model`.
    params : dict
        JSON-serialisable hyper-parameters and small metadata.
    arrays : dict of str to numpy.ndarray
        Numeric arrays; names must not start with ``"__"``.

    Raises
    ------
    TypeError
        If an array has an object dtype or ``params`` is not JSON-serialisable.
    """
    path = Path(path)
    meta = {"magic": _MAGIC, "format_version": FORMAT_VERSION, "kind": kind, "params": params}
    meta_bytes = np.frombuffer(json.dumps(meta, sort_keys=True).encode("utf-8"), dtype=np.uint8)
    for name, array in arrays.items():
        if name.startswith("__"):
            raise ValueError(f"array name {name!r} is reserved")
        if np.asarray(array).dtype.hasobject:
            raise TypeError(f"array {name!r} has an object dtype; only numeric arrays are saved")
    with atomic_write(path) as handle:
        np.savez(handle, **{_META_KEY: meta_bytes}, **arrays)


def load_model(path, kind: str | None = None) -> ModelFile:
    """Read a model file written by :func:`save_model`.

    Parameters
    ----------
    path : str or os.PathLike
        File to read.
    kind : str, optional
        If given, the file must hold a model of this kind.

    Returns
    -------
    ModelFile
        The model kind stored in the file, its format version (between
        ``OLDEST_READABLE_VERSION`` and ``FORMAT_VERSION``; the estimator
        upgrades older layouts), the hyper-parameters and metadata, and all
        arrays, fully read into memory.

    Raises
    ------
    ModelFormatError
        If the file is not an xmltree model, is truncated or corrupt, holds
        pickled objects, or has an unreadable format version or another kind.
    """
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as archive:
            if _META_KEY not in archive.files:
                raise ModelFormatError(f"{path}: not an xmltree model file (no metadata)")
            meta = json.loads(archive[_META_KEY].tobytes().decode("utf-8"))
            arrays = {name: archive[name] for name in archive.files if name != _META_KEY}
    except ModelFormatError:
        raise
    except FileNotFoundError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile, EOFError, KeyError) as exc:
        # np.load raises ValueError for pickled object arrays, BadZipFile and
        # OSError/EOFError for truncated or foreign files.
        raise ModelFormatError(f"{path}: unreadable model file ({exc})") from exc
    if not isinstance(meta, dict) or meta.get("magic") != _MAGIC:
        raise ModelFormatError(f"{path}: not an xmltree model file")
    version = _check_version(path, meta.get("format_version"))
    stored_kind = meta.get("kind")
    if kind is not None and stored_kind != kind:
        raise ModelFormatError(f"{path}: holds a {stored_kind!r} model, expected {kind!r}")
    return ModelFile(stored_kind, version, meta.get("params", {}), arrays)


def _check_version(path: Path, version) -> int:
    """Return a readable format version; otherwise say why not and what to do."""
    readable = f"this xmltree reads versions {OLDEST_READABLE_VERSION} to {FORMAT_VERSION}"
    is_int = isinstance(version, int) and not isinstance(version, bool)
    if is_int and version > FORMAT_VERSION:
        raise ModelFormatError(
            f"{path}: model format version {version} was written by a newer xmltree "
            f"({readable}): upgrade xmltree to load it"
        )
    if not is_int or version < OLDEST_READABLE_VERSION:
        raise ModelFormatError(
            f"{path}: model format version {version!r} is not supported ({readable}): "
            "train the model again"
        )
    return version
