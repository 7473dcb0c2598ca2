"""LdSM: ensembles of logarithmic-depth multi-leaf trees (Majzoubi & Choromanska, 2020).

The estimator is :class:`LdSM`; :func:`merge` joins shards of one ensemble.

Layout of this package, from the estimator down to the kernels:

- ``_estimator``: :class:`LdSM`, parameter checks, fit orchestration, prediction.
- ``_merge``: :func:`merge`.
- ``_auto_settings``: the data-derived ("auto") settings, resolved once at fit.
- ``_linear_leaves`` (and the leaf-model registry): what re-scores a tree's candidates.
- ``_tree_arrays``: the flat-tree contract of the builder and the model file.
- compiled: ``_builder`` (grows one tree), ``_node_trainer`` (trains its nodes),
  ``_forest`` (the ensemble at prediction),
  ``_descent`` (multi-way descent), ``_label_models`` (per-label classifiers),
  ``_neighbourhoods`` (each label's training rows), ``_strongest`` (row feature caps).
"""

from ._estimator import LdSM
from ._merge import merge

__all__ = ["LdSM", "merge"]
