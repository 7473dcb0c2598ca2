"""What scores the labels of the leaves an example reaches: the leaf-model registry.

A leaf model is a class registered in :data:`LEAF_MODELS` under the name
``LdSM(leaf_model=...)`` takes. It meets a fitted forest once, at ``fit``, and
is a component of the model file of its own:

``fit(forest, X, Y, settings, seed, n_threads) -> instance`` (class method)
    Learn from the trees (still scoring with their histograms), the scaled
    training rows and their labels. ``settings`` are the model's resolved
    hyper-parameters.
``install(forest, settings)``
    Make the forest score with it (a leaf model that needs no kernel of the
    forest leaves it as it is).
``get_state() -> (params, arrays)`` / ``from_state(params, arrays, n_features, n_labels)``
    Its part of the model file: JSON-able settings and arrays whose names
    start with ``ARRAY_PREFIX``; ``from_state`` checks everything it reads
    before any kernel sees it, raising ``ModelFormatError``.
``resolved`` (optional)
    A dict of the hyper-parameters its ``fit`` resolved (say, ``C="auto"``
    to the C chosen), which the fitted model's settings then hold; absent
    or empty when it resolves nothing.
``RESCORES_CANDIDATES``
    Whether it re-scores a few candidate labels per example (then the leaves
    need only keep their most frequent labels; see
    ``_auto_settings.resolve_max_leaf_labels``).
``MERGEABLE``
    Whether models trained in shards can be joined by :func:`xmltree.ldsm.merge`
    (a leaf model trained on all the trees of a model cannot).

A new leaf model is one module with such a class and one line here.
"""

from __future__ import annotations

from ._linear_leaves import LinearLeaves

__all__ = ["LEAF_MODELS", "HistogramLeaves"]


class HistogramLeaves:
    """The leaf histograms alone (the paper's LdSM): nothing to learn or store."""

    ARRAY_PREFIX = "histogram/"
    RESCORES_CANDIDATES = False
    MERGEABLE = True

    @classmethod
    def fit(cls, forest, X, Y, settings: dict, seed: int, n_threads: int) -> HistogramLeaves:
        return cls()

    def install(self, forest, settings: dict) -> None:
        """The forest scores with its histograms already."""

    def get_state(self) -> tuple[dict, dict]:
        return {}, {}

    @classmethod
    def from_state(cls, params, arrays: dict, n_features: int,
                   n_labels: int) -> HistogramLeaves:
        return cls()


#: The leaf models by the name ``LdSM(leaf_model=...)`` gives them.
LEAF_MODELS = {"histogram": HistogramLeaves, "linear": LinearLeaves}

