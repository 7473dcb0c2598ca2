"""The fitted state of an LdSM model, as one object that prediction reads.

``LdSM.fit``, ``LdSM.load`` and ``merge`` build a :class:`FittedLdSM` and
install it with a single assignment; every prediction takes the one it finds
at its start and uses nothing else. A prediction running while another
thread refits the same estimator therefore sees the old model or the new
one, never parts of both.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._scaling import FeatureScaler
from ._forest import Forest
from ._tree_arrays import TREE_ARRAYS

__all__ = ["FittedLdSM"]


@dataclasses.dataclass(frozen=True)
class FittedLdSM:
    """Everything a fitted LdSM predicts with.

    Attributes
    ----------
    forest : xmltree.ldsm._forest.Forest
        The trees, concatenated, with the leaf model installed.
    trees : list of dict
        Each tree's arrays (read-only; the large ones are views of the forest's).
    scaler : FeatureScaler
        The feature scaling learned at fit.
    leaves : object
        The leaf model (a class of ``_leaf_models.LEAF_MODELS``), or None
        before it is installed.
    settings : dict
        Every hyper-parameter as the model was fitted and predicts with:
        "auto" and data-dependent None values resolved.
    n_features, n_labels : int
        Sizes of the feature and label spaces.
    """

    forest: Forest
    trees: list
    scaler: FeatureScaler
    leaves: object
    settings: dict
    n_features: int
    n_labels: int

    @classmethod
    def from_trees(cls, trees: list[dict], settings: dict, scaler: FeatureScaler,
                   n_features: int, n_labels: int, *, release: bool = False,
                   check_trees: bool = True) -> FittedLdSM:
        """Concatenate `trees` into a forest scoring with their histograms.

        With `release`, the trees' weight and leaf arrays are moved into the
        forest (removed from the dicts, which the caller must own).
        ``check_trees=False`` is for trees just grown or already held by a
        fitted model; trees read from a file must be checked (``ModelFormatError``).
        """
        forest = Forest(trees, arity=settings["arity"], n_features=n_features,
                        n_labels=n_labels, routing=settings["routing"],
                        leaf_scores=settings["leaf_scores"],
                        leaf_aggregation=settings["leaf_aggregation"],
                        descent_threshold=settings["descent_threshold"],
                        max_wide_branches=settings["max_wide_branches"],
                        route_row_features=settings["route_row_features"], release=release,
                        check_trees=check_trees)
        return cls(forest, _share_forest_arrays(forest, trees), scaler, None, dict(settings),
                   n_features, n_labels)

    def with_leaves(self, leaves) -> FittedLdSM:
        """This state with `leaves` installed in its forest, and the settings they resolved.

        For a state no prediction can see yet: the forest is changed in place.
        """
        settings = {**self.settings, **getattr(leaves, "resolved", {})}
        leaves.install(self.forest, settings)
        return dataclasses.replace(self, leaves=leaves, settings=settings)

    @property
    def n_nodes(self) -> np.ndarray:
        return np.array([tree["first_child"].shape[0] for tree in self.trees], dtype=np.int64)

    @property
    def n_leaves(self) -> np.ndarray:
        return np.array([np.sum(tree["first_child"] < 0) for tree in self.trees],
                        dtype=np.int64)

    @property
    def depth(self) -> np.ndarray:
        return np.array([tree["depth"].max() for tree in self.trees], dtype=np.int64)


def _share_forest_arrays(forest: Forest, trees: list[dict]) -> list[dict]:
    """Return read-only trees whose large arrays are slices of the forest's.

    The forest concatenates the trees for prediction; handing out its slices
    instead of the trees' own arrays keeps one copy of the model in memory.
    Only per-node arrays (a few numbers per node) are the trees' own.
    """
    arity = forest.arity
    offsets = forest.tree_offset
    views = []
    for t, tree in enumerate(trees):
        first, last = int(offsets[t]), int(offsets[t + 1])
        weights = slice(int(forest.weight_indptr[first]), int(forest.weight_indptr[last]))
        leaves = slice(int(forest.leaf_indptr[first]), int(forest.leaf_indptr[last]))
        view = dict(
            weight_indices=forest.weight_indices[weights],
            weight_values=forest.weight_values[weights],
            leaf_labels=forest.leaf_labels[leaves],
            leaf_values=forest.leaf_values[leaves],
            bias=forest.bias[first * arity:last * arity].reshape(-1, arity),
        )
        view.update((name, tree[name].view()) for name in TREE_ARRAYS if name not in view)
        for array in view.values():
            array.flags.writeable = False
        views.append(view)
    return views
