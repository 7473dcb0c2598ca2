"""Safe, versioned, atomically written model files.

A model file is an uncompressed ``.npz`` archive (a zip of ``.npy`` arrays)
holding numeric arrays plus one JSON document, ``__meta__``, with the model
kind, the format version and the hyper-parameters. Nothing is pickled: only
plain numeric dtypes are read, so loading a file cannot execute code. The
estimators validate shapes and index ranges of what they get back before any
of it reaches compiled code.

The reader trusts nothing it has not compared with the file itself: every
member must be stored uncompressed inside the file, and the size its array
header announces must be exactly the bytes the member holds, so a damaged
header can never make it allocate more than the file's size. Anything else
wrong with the file is a :class:`~xmltree.exceptions.ModelFormatError`
naming it.
"""

from __future__ import annotations

import json
import math
import os
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
#: 4. LdSM stores every setting as fitted (``params["resolved"]``: "auto"
#:    resolved, what the model predicts with) beside its hyper-parameters, and
#:    its leaf model's settings (``params["leaves"]``); its parameters
#:    ``epochs``, ``descent_threshold``, ``max_wide_branches``,
#:    ``max_leaf_labels`` and ``max_row_features``, added under version 3,
#:    belong to this version. ``LdSM(rerank=...)`` is gone: an older file
#:    holding a re-ranker loads as the :class:`xmltree.rerank.Reranked` stage.
#: 5. An LdSM tree stores one sorted list of feature ids a node, the union of
#:    its regressors', with a weight per regressor: ``weight_indptr`` has a
#:    row per node and ``weight_values`` the shape (ids, arity). Older files
#:    kept a CSR row per regressor and are converted at load, by LdSM and by
#:    the models that hold one (``Reranked``, ``TextClassifier``).
#: 6. LdSM's ``route_row_features``: the features of a row that route it,
#:    apart from those that grew the trees (``max_row_features``), and
#:    ``predict_candidates``: the labels prediction re-scores, apart from those
#:    the classifiers trained on (``n_candidates``). Older files routed rows
#:    by the features the trees grew on and re-scored ``n_candidates``, and
#:    load so.
FORMAT_VERSION = 6

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
    OSError
        If the file cannot be opened (missing, a directory, no permission).
    ModelFormatError
        If the file is not an xmltree model, is truncated or corrupt, holds
        pickled objects or arrays of other dtypes, or has an unreadable
        format version or another kind; the message names the file.
    """
    path = Path(path)
    with open(path, "rb") as handle:
        try:
            arrays = _read_members(handle)
        except ModelFormatError as exc:
            raise ModelFormatError(f"{path}: {exc}") from exc
        except (OSError, ValueError, EOFError, NotImplementedError, zipfile.BadZipFile) as exc:
            # zipfile's errors for a damaged archive: BadZipFile for bad
            # records and CRCs, OSError for seeks to bogus offsets, ValueError
            # and NotImplementedError for fields it cannot decode.
            raise ModelFormatError(f"{path}: unreadable model file ({exc})") from exc
    meta = _read_meta(path, arrays.pop(_META_KEY, None))
    version = _check_version(path, meta.get("format_version"))
    stored_kind, params = meta.get("kind"), meta.get("params", {})
    if not isinstance(stored_kind, str) or not isinstance(params, dict):
        raise ModelFormatError(f"{path}: the model kind must be a string and its parameters "
                               "a JSON object")
    if kind is not None and stored_kind != kind:
        raise ModelFormatError(f"{path}: holds a {stored_kind!r} model, expected {kind!r}")
    return ModelFile(stored_kind, version, params, arrays)


def _read_meta(path: Path, raw) -> dict:
    """Decode the ``__meta__`` member: a JSON object with the xmltree magic."""
    if raw is None:
        raise ModelFormatError(f"{path}: not an xmltree model file (no metadata)")
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise ModelFormatError(f"{path}: not an xmltree model file (bad metadata)")
    try:
        meta = json.loads(raw.tobytes().decode("utf-8"), parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:
        # RecursionError: JSON nested deeper than the interpreter's stack.
        raise ModelFormatError(f"{path}: unreadable model metadata ({type(exc).__name__}: "
                               f"{str(exc)[:200]})") from exc
    if not isinstance(meta, dict) or meta.get("magic") != _MAGIC:
        raise ModelFormatError(f"{path}: not an xmltree model file")
    return meta


def _refuse_constant(name: str):
    """``json`` hook for NaN and Infinity: no saved parameter is ever non-finite."""
    raise ValueError(f"non-finite number {name} in the metadata")


def _read_members(handle) -> dict[str, np.ndarray]:
    """Read every ``.npy`` member of the open archive `handle`, checking sizes first."""
    file_size = os.fstat(handle.fileno()).st_size
    arrays = {}
    with zipfile.ZipFile(handle) as archive:
        for info in archive.infolist():
            name = info.filename.removesuffix(".npy")
            if name == info.filename or name in arrays:
                raise ModelFormatError(f"member {info.filename!r} is not an array, or repeated")
            # np.savez stores members uncompressed: the sizes in the directory
            # are then bytes of this file, which a damaged directory cannot fake.
            if (info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1
                    or info.compress_size != info.file_size
                    or info.header_offset + info.file_size > file_size):
                raise ModelFormatError(f"member {info.filename!r} is compressed, encrypted or "
                                       "larger than the file")
            with archive.open(info) as member:
                arrays[name] = _read_array(member, info.file_size, info.filename)
    return arrays


def _read_array(member, size: int, name: str) -> np.ndarray:
    """Read one ``.npy`` member of `size` bytes; refuse it unless the header agrees with `size`."""
    try:
        version = np.lib.format.read_magic(member)
        read_header = {(1, 0): np.lib.format.read_array_header_1_0,
                       (2, 0): np.lib.format.read_array_header_2_0}[version]
        shape, fortran_order, dtype = read_header(member)
    except Exception as exc:
        # numpy parses the header with its own Python-literal reader, which
        # raises whatever the damaged text provokes (ValueError, SyntaxError,
        # tokenize.TokenError, KeyError...): all mean a corrupt member.
        raise ModelFormatError(f"member {name!r} has a corrupt array header "
                               f"({type(exc).__name__})") from exc
    if dtype.hasobject or dtype.kind not in "biuf" or dtype.fields or dtype.subdtype:
        raise ModelFormatError(f"member {name!r} has dtype {dtype}, not a plain numeric one")
    n_bytes = math.prod(shape) * dtype.itemsize
    if member.tell() + n_bytes != size:
        raise ModelFormatError(f"member {name!r}: its header announces {n_bytes} bytes of "
                               f"data, it holds {size - member.tell()}")
    buffer = np.empty(n_bytes, dtype=np.uint8)
    view, filled = memoryview(buffer), 0
    while filled < n_bytes:
        count = member.readinto(view[filled:])
        if not count:
            raise ModelFormatError(f"member {name!r} is truncated")
        filled += count
    member.read()  # reach the end, where zipfile checks the CRC
    return buffer.view(dtype).reshape(shape, order="F" if fortran_order else "C")


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
