"""Joining shards of one LdSM ensemble: :func:`merge`."""

from __future__ import annotations

from ._estimator import LdSM
from ._fitted import FittedLdSM
from ._params import PREDICTION_ONLY, SHARD_PARAMS
from ._training import resolve_for_prediction

__all__ = ["merge"]


def merge(models) -> LdSM:
    """Join fitted LdSM models into one ensemble holding all their trees.

    Use it to train an ensemble in shards (on different machines, or at
    different times) and serve it as one model. The merged model's scores
    are the average over all its trees, i.e. the tree-count-weighted average
    of the shards' scores.

    To reproduce ``LdSM(n_trees=N, random_state=s).fit(X, Y)`` bit for bit,
    train the shards with the same ``random_state=s`` and consecutive tree
    ranges, e.g. ``LdSM(n_trees=3, random_state=s, first_tree=0)`` and
    ``LdSM(n_trees=2, random_state=s, first_tree=3)``, and merge them in
    that order. The merged model then records ``random_state=s`` and the
    first shard's ``first_tree``; otherwise it records ``random_state=None``.

    Parameters
    ----------
    models : sequence of LdSM
        Fitted models, in tree order. They must agree on ``n_features_in_``,
        ``n_labels_``, the feature scaling and every setting except
        ``n_trees``, ``random_state``, ``first_tree``, ``n_jobs`` and
        ``verbose``, and their leaf model must be one that shards share
        (``leaf_model="histogram"``; the label classifiers of linear leaves
        are trained on all the trees of a model).

    Returns
    -------
    LdSM
        A new fitted model; the inputs are not modified. It descends and
        combines leaves as its hyper-parameters (the first shard's) say:
        ``descent_threshold``, ``max_wide_branches``, ``leaf_aggregation``
        and ``histogram_weight`` may be changed with ``set_params`` before
        merging, also to rebuild one model's forest with other ones.

    Raises
    ------
    ValueError
        If fewer than one model is given, a model is not an LdSM, the models
        are incompatible, or two shards hold the same tree (same
        ``random_state`` and overlapping tree ranges).
    NotFittedError
        If a model is not fitted.
    """
    models = list(models)
    if not models or not all(isinstance(model, LdSM) for model in models):
        raise ValueError("merge needs a non-empty sequence of LdSM models")
    states = [model._fitted_state() for model in models]
    for state in states:
        if not type(state.leaves).MERGEABLE:
            raise ValueError(
                f"cannot merge models with leaf_model={state.settings['leaf_model']!r}: their "
                "label classifiers are trained on all the trees of the model; train shards "
                "with leaf_model='histogram', or train the whole model inside "
                "joblib.parallel_backend('dask') to spread its trees over a cluster")
    _check_compatible(models, states)
    hyper = models[0].get_params()
    hyper["n_trees"] = sum(len(state.trees) for state in states)
    if not _consecutive_shards(models, states):
        hyper["random_state"], hyper["first_tree"] = None, 0
    trees = [tree for state in states for tree in state.trees]
    first = states[0]
    settings = {**first.settings, **{name: hyper[name] for name in SHARD_PARAMS}}
    settings = resolve_for_prediction(settings, hyper, first.n_features, first.n_labels,
                                      trees)
    fitted = FittedLdSM.from_trees(trees, settings, first.scaler, first.n_features,
                                   first.n_labels, check_trees=False)
    merged = LdSM(**hyper)
    merged._install(fitted.with_leaves(first.leaves))
    return merged


def _check_compatible(models: list[LdSM], states: list[FittedLdSM]) -> None:
    """Raise ValueError naming the first property on which the models differ."""
    reference = _merge_signature(models[0], states[0])
    for index in range(1, len(models)):
        for name, value in _merge_signature(models[index], states[index]).items():
            if value != reference[name]:
                raise ValueError(f"cannot merge: model {index} has {name}={value!r}, "
                                 f"model 0 has {reference[name]!r}")
    _check_no_shared_trees(models, states)


def _merge_signature(model: LdSM, state: FittedLdSM) -> dict:
    """What must be equal for two models to be shards of one ensemble."""
    signature = {name: value for name, value in model.get_params().items()
                 if name not in SHARD_PARAMS}
    signature.update((f"fitted {name}", value) for name, value in state.settings.items()
                     if name not in SHARD_PARAMS and name not in PREDICTION_ONLY)
    scaling, idf = state.scaler.get_state()
    signature["scaling"] = (scaling["kind"], tuple(idf.get("scaling/idf", ())))
    signature["n_features_in_"], signature["n_labels_"] = state.n_features, state.n_labels
    return signature


def _tree_range(model: LdSM, state: FittedLdSM) -> range:
    """Indices of the model's trees in the ensemble seeded by its random_state."""
    return range(model.first_tree, model.first_tree + len(state.trees))


def _check_no_shared_trees(models: list[LdSM], states: list[FittedLdSM]) -> None:
    """Refuse shards that would put the same tree twice in the ensemble."""
    ranges = [_tree_range(model, state) for model, state in zip(models, states)]
    for i, a in enumerate(models):
        for j in range(i + 1, len(models)):
            overlap = range(max(ranges[i].start, ranges[j].start),
                            min(ranges[i].stop, ranges[j].stop))
            if a.random_state is not None and a.random_state == models[j].random_state and overlap:
                raise ValueError(
                    f"cannot merge: models {i} and {j} both hold tree {overlap.start} of "
                    f"random_state={a.random_state} (give shards consecutive first_tree ranges)"
                )


def _consecutive_shards(models: list[LdSM], states: list[FittedLdSM]) -> bool:
    """True when the models are consecutive tree ranges of one seeded ensemble."""
    if models[0].random_state is None:
        return False
    next_tree = models[0].first_tree
    for model, state in zip(models, states):
        if model.random_state != models[0].random_state or model.first_tree != next_tree:
            return False
        next_tree += len(state.trees)
    return True
