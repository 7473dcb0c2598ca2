"""LdSM's fit, stage by stage: scale, resolve the settings, grow the trees, fit the leaves.

:func:`fit_model` is the whole of ``LdSM.fit`` below parameter and input
checks. Every "auto" (or data-dependent None) setting is resolved here, once,
into the ``resolved`` dict the fitted model keeps, predicts with and saves;
the rules themselves are in ``_auto_settings``.
"""

from __future__ import annotations

import logging

import joblib
import numpy as np
import scipy.sparse as sp

from .._base import n_threads
from .._fit_progress import PhaseClock, TreeProgress
from .._scaling import FeatureScaler, feature_magnitude
from .._validation import take_rows
from ..exceptions import DataFormatError
from ._auto_settings import (
    auto_node_budget,
    auto_weight_floor,
    resolve_C,
    resolve_descent_threshold,
    resolve_epoch_tolerance,
    resolve_epochs,
    resolve_histogram_weight,
    resolve_max_leaf_labels,
    resolve_max_row_features,
    resolve_max_wide_branches,
    resolve_n_candidates,
    resolve_predict_candidates,
    resolve_route_row_features,
)
from ._fitted import FittedLdSM
from ._leaf_models import LEAF_MODELS
from ._strongest import keep_strongest
from ._tree_arrays import ROUTING_THRESHOLDS

__all__ = ["fit_model", "resolve_before_trees", "resolve_after_trees",
           "resolve_for_prediction"]

logger = logging.getLogger(__name__)

#: The settings the tree builder takes, by its names.
_BUILDER_SETTINGS = ("arity", "max_nodes", "epochs", "epoch_tolerance", "lambda1", "lambda2",
                     "optimizer", "learning_rate", "routing", "weight_threshold",
                     "leaf_scores", "max_leaf_labels")


def fit_model(params: dict, X: sp.csr_matrix, Y: sp.csr_matrix) -> tuple[FittedLdSM, dict]:
    """Fit an LdSM ensemble on checked inputs.

    Parameters
    ----------
    params : dict
        The checked hyper-parameters.
    X, Y : scipy.sparse.csr_matrix
        Checked training features and labels.

    Returns
    -------
    fitted : FittedLdSM
        Everything prediction needs, resolved settings included.
    seconds : dict of str to float
        Wall-clock seconds of each phase.
    """
    X, Y = drop_unlabelled(X, Y)
    clock = PhaseClock()
    scaler = FeatureScaler(params["feature_scaling"]).fit(X)
    X = scaler.transform(X)
    clock.lap("scaling")
    settings = resolve_before_trees(params, scaler, X, Y.shape[1])
    # generate_state(n)[:m] == generate_state(m): tree t always gets word t,
    # which is what makes first_tree shards merge into the single fit.
    first = settings["first_tree"]
    seed_sequence = np.random.SeedSequence(settings["random_state"])
    seeds = seed_sequence.generate_state(first + settings["n_trees"], dtype=np.uint64)[first:]
    max_row_features = settings["max_row_features"]
    X_grow = X if max_row_features is None else keep_strongest(X, max_row_features)
    settings["weight_threshold"] /= feature_magnitude(X_grow, scaler.kind_)
    trees = build_trees(X_grow, Y, settings, seeds)
    del X_grow  # before the forest copies the trees, the peak of fit's memory
    check_trees_finite(trees, settings["learning_rate"])
    settings = resolve_after_trees(settings, trees)
    # fit owns the trees: the forest may take their arrays as it copies them.
    fitted = FittedLdSM.from_trees(trees, settings, scaler, X.shape[1], Y.shape[1],
                                   release=True, check_trees=False)
    clock.lap("trees")
    leaves_class = LEAF_MODELS[settings["leaf_model"]]
    label_seed = seed_sequence.spawn(1)[0].generate_state(1, dtype=np.uint64)[0]
    leaves = leaves_class.fit(fitted.forest, X, Y, settings, seed=int(label_seed),
                              n_threads=n_threads(settings["n_jobs"]))
    fitted = fitted.with_leaves(leaves)
    clock.lap(f"{settings['leaf_model']}_leaves")
    logger.info("LdSM fit, seconds by phase: %s", clock.seconds)
    return fitted, clock.seconds


def resolve_before_trees(params: dict, scaler: FeatureScaler, X: sp.csr_matrix,
                         n_labels: int) -> dict:
    """The settings the trees are grown with, every data-derived one resolved.

    `X` is the scaled training matrix; `scaler` the fitted scaling.
    """
    settings = dict(params)
    settings["feature_scaling"] = None if scaler.kind_ == "none" else scaler.kind_
    if settings["weight_threshold"] is None:
        settings["weight_threshold"] = 1.0 / X.shape[1]
    if settings["max_nodes"] is None:
        settings["max_nodes"] = auto_node_budget(X.shape[0], settings["arity"], n_labels)
        settings["max_weights_per_regressor"] = auto_weight_floor(
            settings["max_weights_per_regressor"], settings["max_nodes"])
    training_threshold = ROUTING_THRESHOLDS[settings["routing"]]
    descent_threshold = resolve_descent_threshold(settings["descent_threshold"],
                                                  settings["routing"], n_labels)
    settings["descent_threshold"] = descent_threshold
    fitted_threshold = training_threshold if descent_threshold is None else descent_threshold
    settings["histogram_weight"] = resolve_histogram_weight(
        settings["histogram_weight"], fitted_threshold, training_threshold, X.shape[1])
    rescores = LEAF_MODELS[settings["leaf_model"]].RESCORES_CANDIDATES
    settings["max_leaf_labels"] = resolve_max_leaf_labels(
        settings["max_leaf_labels"], rescores, fitted_threshold, training_threshold,
        settings["histogram_weight"])
    settings["max_row_features"] = resolve_max_row_features(
        settings["max_row_features"], X.shape[0], X.nnz, settings["max_nodes"], fitted_threshold,
        training_threshold)
    settings["route_row_features"] = resolve_route_row_features(
        settings["route_row_features"], settings["max_row_features"], fitted_threshold,
        training_threshold)
    settings["epoch_tolerance"] = resolve_epoch_tolerance(settings["epoch_tolerance"],
                                                          settings["epochs"])
    settings["epochs"] = resolve_epochs(settings["epochs"], X.shape[0], X.nnz,
                                        fitted_threshold, training_threshold)
    settings["n_candidates"] = resolve_n_candidates(settings["n_candidates"], fitted_threshold,
                                                    training_threshold, n_labels)
    settings["predict_candidates"] = resolve_predict_candidates(
        settings["predict_candidates"], settings["n_candidates"], fitted_threshold,
        training_threshold, n_labels)
    settings["C"] = resolve_C(settings["C"], fitted_threshold, training_threshold)
    return settings


def resolve_after_trees(settings: dict, trees: list[dict]) -> dict:
    """`settings` with those that follow the grown trees' sizes resolved."""
    largest = max(np.size(tree["first_child"]) for tree in trees)
    return {**settings, "max_wide_branches": resolve_max_wide_branches(
        settings["max_wide_branches"], int(largest), settings["max_row_features"])}


def resolve_for_prediction(settings: dict, hyper: dict, n_features: int, n_labels: int,
                           trees: list[dict]) -> dict:
    """`settings` with the prediction-only ones taken from `hyper` and resolved.

    For a forest built from trees grown elsewhere (``merge``, older model
    files): how the trees descend and combine their leaves can be chosen
    anew, what they were grown with cannot.
    """
    training_threshold = ROUTING_THRESHOLDS[settings["routing"]]
    descent = resolve_descent_threshold(hyper["descent_threshold"], settings["routing"],
                                        n_labels)
    fitted_threshold = training_threshold if descent is None else descent
    settings = {**settings, "descent_threshold": descent,
                "leaf_aggregation": hyper["leaf_aggregation"],
                "max_wide_branches": hyper["max_wide_branches"],
                "route_row_features": resolve_route_row_features(
                    hyper["route_row_features"], settings["max_row_features"], fitted_threshold,
                    training_threshold),
                "histogram_weight": resolve_histogram_weight(
                    hyper["histogram_weight"], fitted_threshold, training_threshold, n_features),
                # Files from before the rule hold a number, which stays.
                "n_candidates": resolve_n_candidates(settings["n_candidates"], fitted_threshold,
                                                     training_threshold, n_labels)}
    settings["predict_candidates"] = resolve_predict_candidates(
        hyper["predict_candidates"], settings["n_candidates"], fitted_threshold,
        training_threshold, n_labels)
    return resolve_after_trees(settings, trees)


def drop_unlabelled(X: sp.csr_matrix, Y: sp.csr_matrix):
    """Remove samples without labels; refuse data where none remain."""
    labelled = np.diff(Y.indptr) > 0
    n_dropped = int(labelled.size - labelled.sum())
    if n_dropped == labelled.size:
        raise DataFormatError("Y: no training sample has a label")
    if n_dropped:
        logger.info("dropping %d of %d training samples that have no label",
                    n_dropped, labelled.size)
        X, Y = take_rows(X, labelled), take_rows(Y, labelled)
    return X, Y


def check_trees_finite(trees: list[dict], learning_rate: float) -> None:
    """Refuse regressors that diverged: a fit must not make a model its loader refuses."""
    for tree in trees:
        if not (np.all(np.isfinite(tree["weight_values"])) and np.all(np.isfinite(tree["bias"]))):
            raise ValueError(f"LdSM training diverged (non-finite regressor weights) with "
                             f"learning_rate={learning_rate!r}; use a smaller learning_rate")


def build_trees(X: sp.csr_matrix, Y: sp.csr_matrix, settings: dict,
                seeds: np.ndarray) -> list[dict]:
    """Train one tree per seed with joblib, sharing X and Y.

    Threads by default; inside ``joblib.parallel_backend("dask")`` the trees
    are tasks of the Dask cluster. X and Y are the same objects in every
    task, so joblib's Dask backend scatters each once per ``fit`` and workers
    fetch them once, whatever the number of trees.
    """
    # Imported here so that prediction works with a build lacking the trainer.
    from ._builder import build_tree

    builder = {name: settings[name] for name in _BUILDER_SETTINGS}
    builder["max_weights"] = settings["max_weights_per_regressor"]
    builder["weights_per_row"] = settings["max_weights_per_example"]
    # The node counters are this process's memory; other backends (processes,
    # a Dask cluster) only report finished trees.
    backend, _ = joblib.parallel.get_active_backend(prefer="threads")
    count_nodes = getattr(backend, "uses_threads", False)
    progress = TreeProgress(len(seeds), count_nodes) if settings["verbose"] else None
    jobs = (
        joblib.delayed(build_tree)(
            X, Y, **builder, seed=int(seed),
            node_count=progress.node_counter(t) if progress is not None else None,
        )
        for t, seed in enumerate(seeds)
    )
    trees = []
    try:
        runner = joblib.Parallel(n_jobs=n_threads(settings["n_jobs"]), prefer="threads",
                                 return_as="generator")
        for tree in runner(jobs):
            trees.append(tree)
            if progress is not None:
                progress.tree_done()
    finally:
        if progress is not None:
            progress.close()
    logger.info("trained %d LdSM trees", len(trees))
    return trees
