"""LdSM's model-file state: each component under its own prefix, older files upgraded in one place.

A version 6 file holds, in ``params``::

    hyper_parameters   the estimator's get_params()
    resolved           every setting as fitted ("auto" resolved): what predicts
    n_features, n_labels, n_trees
    scaling            the feature scaler's settings
    leaves             the leaf model's settings

and, in ``arrays``, ``tree<t>/<name>`` for the ``TREE_ARRAYS`` of every
tree, ``scaling/...`` for the scaler and the leaf model's ``ARRAY_PREFIX``
names. Nothing else is accepted. :func:`upgrade_state` turns files of
versions 1-5 into this layout.
"""

from __future__ import annotations

from .._base import _plain, is_int
from .._params import check_params
from .._scaling import FeatureScaler
from ..exceptions import ModelFormatError
from ..rerank._estimator import STATE_PREFIX as RERANK_PREFIX
from ..rerank._estimator import upgrade_reranker_state
from ._fitted import FittedLdSM
from ._leaf_models import LEAF_MODELS
from ._params import LDSM_PARAMS, PREDICTION_SETTINGS
from ._training import resolve_for_prediction
from ._tree_arrays import MAX_ARITY, TREE_ARRAYS, weights_by_node

__all__ = ["get_state", "fitted_from_state", "upgrade_state"]

#: Options added after format version 4 was first written, as its older
#: files were fitted: every node took all its epochs.
_ADDED_IN_VERSION_4 = {"epoch_tolerance": 0.0}

#: What files written before an option existed hold: distributions, averaged
#: leaves, histogram scores, features as given, the training descent.
_OLD_DEFAULTS = {"leaf_scores": "distribution", "leaf_aggregation": "mean",
                 "leaf_model": "histogram", "feature_scaling": None, "descent_threshold": None,
                 "max_leaf_labels": None, "max_wide_branches": None, "max_row_features": None,
                 **_ADDED_IN_VERSION_4}

_PARAM_NAMES = {param.name for param in LDSM_PARAMS}


def get_state(hyper_parameters: dict, fitted: FittedLdSM) -> tuple[dict, dict]:
    """The model-file parameters and arrays of a fitted LdSM."""
    params = {"hyper_parameters": hyper_parameters, "resolved": _plain(fitted.settings),
              "n_features": int(fitted.n_features), "n_labels": int(fitted.n_labels),
              "n_trees": len(fitted.trees)}
    arrays = {f"tree{t}/{name}": tree[name] for t, tree in enumerate(fitted.trees)
              for name in TREE_ARRAYS}
    params["scaling"], scaling_arrays = fitted.scaler.get_state()
    params["leaves"], leaf_arrays = fitted.leaves.get_state()
    return params, {**arrays, **scaling_arrays, **leaf_arrays}


def fitted_from_state(params: dict, arrays: dict) -> tuple[dict, FittedLdSM]:
    """The hyper-parameters and the checked fitted state of a current state.

    Raises
    ------
    ModelFormatError
        On missing or ill-typed parameters, arrays that no component
        claims or that are missing, or trees that break the flat-tree contract.
    """
    if not isinstance(params, dict):
        raise ModelFormatError("LdSM model: missing parameters")
    hyper = _checked_settings(_with_added(params.get("hyper_parameters")), "hyper-parameters")
    settings = _checked_settings(_with_added(params.get("resolved")), "resolved settings")
    for name in () if params.get("resolve_at_load") else PREDICTION_SETTINGS:
        if settings[name] == "auto":
            raise ModelFormatError(f"LdSM model: {name} is not resolved")
    sizes = _sizes(params)
    scaler = FeatureScaler.from_state(params.get("scaling", {"kind": "none"}), arrays,
                                      sizes["n_features"])
    leaves_class = LEAF_MODELS[settings["leaf_model"]]
    _check_array_names(arrays, sizes["n_trees"], leaves_class.ARRAY_PREFIX)
    leaves = leaves_class.from_state(params.get("leaves", {}), arrays, sizes["n_features"],
                                     sizes["n_labels"])
    trees = [{name: arrays[f"tree{t}/{name}"] for name in TREE_ARRAYS}
             for t in range(sizes["n_trees"])]
    settings["feature_scaling"] = None if scaler.kind_ == "none" else scaler.kind_
    if params.get("resolve_at_load"):
        settings = resolve_for_prediction(settings, hyper, sizes["n_features"],
                                          sizes["n_labels"], trees)
    fitted = FittedLdSM.from_trees(trees, settings, scaler, sizes["n_features"],
                                   sizes["n_labels"])
    return hyper, fitted.with_leaves(leaves)


def upgrade_state(version: int, params: dict, arrays: dict,
                  defaults: dict) -> tuple[dict, dict]:
    """The state of a file of format `version` in the current layout.

    Files of versions 1-3 stored the hyper-parameters as given ("auto"
    included), without those added after them (which take `defaults`, the
    estimator's, or what the model was before the option existed), and
    resolved the prediction settings at load, as they still are
    (``resolve_at_load``). A re-ranker they carry (``LdSM(rerank=...)``, now
    :class:`xmltree.rerank.Reranked`) stays in ``params["reranker"]``. Files
    of versions 1-4 stored each regressor's weights as a row of their own;
    they get one list of feature ids a node (``weights_by_node``). Files of
    versions 1-5 routed rows by the features that grew the trees and
    re-scored the candidates the classifiers were trained on.
    """
    if not isinstance(params, dict) or not isinstance(params.get("hyper_parameters"), dict):
        return params, arrays  # refused by fitted_from_state
    if version < 4:
        params = _settings_as_version_4(version, params, arrays, defaults)
    if version < 5:
        arrays = _weights_by_node(params, arrays)
    if version < 6:
        params = _predicting_as_saved(params)
    return params, arrays


def _settings_as_version_4(version: int, params: dict, arrays: dict, defaults: dict) -> dict:
    """The parameters of a file of versions 1-3 as version 4 stores them."""
    hyper = {**defaults, **_OLD_DEFAULTS, **params["hyper_parameters"]}
    hyper.pop("rerank", None)
    # Resolved at load, from the hyper-parameters, as these files always were.
    resolved = {**hyper, "max_row_features": params.get("max_row_features")}
    params = {**params, "hyper_parameters": hyper, "resolved": resolved,
              "resolve_at_load": True}
    if "reranker" in params:
        params["reranker"] = upgrade_reranker_state(
            version, params["reranker"], arrays,
            "train the model again and re-rank it with xmltree.rerank.Reranked")
    return params


def _predicting_as_saved(params: dict) -> dict:
    """`params` of a file of versions 1-5, the settings added since set as it predicted.

    Rows were routed by the features that grew the trees, and the labels
    re-scored were those the classifiers were trained on; in the given
    hyper-parameters and in the resolved settings alike.
    """
    as_saved = {key: {**params[key], "route_row_features": params[key].get("max_row_features"),
                      "predict_candidates": params[key].get("n_candidates")}
                for key in ("hyper_parameters", "resolved") if isinstance(params.get(key), dict)}
    return {**params, **as_saved}


def _weights_by_node(params: dict, arrays: dict) -> dict:
    """`arrays` with every tree's regressor rows turned into one id list a node."""
    arity = params["hyper_parameters"].get("arity")
    if not is_int(arity) or not 2 <= arity <= MAX_ARITY:
        return arrays  # refused by fitted_from_state
    arrays = dict(arrays)
    names = ("weight_indptr", "weight_indices", "weight_values")
    for key in [key for key in arrays if key.endswith("/weight_indptr")]:
        tree = key[:-len("weight_indptr")]
        stored = [arrays.get(tree + name) for name in names]
        try:
            converted = weights_by_node(*stored, arity)
        except ModelFormatError as exc:
            raise ModelFormatError(f"LdSM model, {tree[:-1]}: {exc}") from None
        arrays.update(zip((tree + name for name in names), converted))
    return arrays


def _with_added(settings):
    """`settings` of a file with the options added since it was written, as it was fitted."""
    if not isinstance(settings, dict):
        return settings
    return {**_ADDED_IN_VERSION_4, **settings}


def _checked_settings(settings, what: str) -> dict:
    """A full, valid settings dict (``ModelFormatError`` otherwise)."""
    if not isinstance(settings, dict) or set(settings) != _PARAM_NAMES:
        raise ModelFormatError(f"LdSM model: missing or unknown {what}")
    try:
        return check_params(LDSM_PARAMS, settings)
    except ValueError as exc:
        raise ModelFormatError(f"LdSM model: {exc}") from None


#: Bounds of the counts of a file. Rows and label sets have at most 2**31 - 2
#: columns (the kernels' int32 ids): a model claiming more could never predict.
_SIZE_LIMITS = {"n_features": ("2**31 - 1", 2**31 - 1), "n_labels": ("2**31 - 1", 2**31 - 1),
                "n_trees": ("2**31", 2**31)}


def _sizes(params: dict) -> dict:
    sizes = {}
    for name, (limit_text, limit) in _SIZE_LIMITS.items():
        value = params.get(name)
        if not is_int(value) or not 1 <= value < limit:
            raise ModelFormatError(
                f"LdSM model: {name} must be a positive integer below {limit_text}")
        sizes[name] = int(value)
    return sizes


def _check_array_names(arrays: dict, n_trees: int, leaf_prefix: str) -> None:
    """Every array belongs to a tree, the scaler, the leaf model or a re-ranker, and
    every tree array is there, before any size is believed."""
    tree_arrays = {name for name in arrays
                   if not name.startswith(("scaling/", leaf_prefix, RERANK_PREFIX))}
    if len(tree_arrays) != n_trees * len(TREE_ARRAYS):
        raise ModelFormatError(f"LdSM model: n_trees={n_trees} disagrees with "
                               f"the {len(tree_arrays)} tree arrays of the file")
    expected = {f"tree{t}/{name}" for t in range(n_trees) for name in TREE_ARRAYS}
    if tree_arrays != expected:
        missing, extra = sorted(expected - tree_arrays), sorted(tree_arrays - expected)
        raise ModelFormatError(
            f"LdSM model: arrays do not match (missing {missing[:3]}, unexpected {extra[:3]})")

