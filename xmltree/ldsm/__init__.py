"""LdSM: ensembles of logarithmic-depth multi-leaf trees (Majzoubi & Choromanska, 2020).

The estimator is :class:`LdSM`; :func:`merge` joins shards of one ensemble.

Layout of this package, from the estimator down to the kernels:

- ``_estimator``: :class:`LdSM`: parameter and input checks, prediction, fitted attributes.
- ``_params``: the parameter table (what each parameter accepts; the paper's configuration).
- ``_training``: ``fit`` stage by stage; every "auto" setting is resolved there, once,
  with the rules of ``_auto_settings``.
- ``_fitted``: the fitted state that one prediction reads (forest, scaler, leaf model,
  resolved settings), installed by one assignment.
- ``_leaf_models``: the registry of leaf models (``_linear_leaves``: per-label classifiers).
- ``_state``: the model file's components and the upgrade of older files; ``_merge``:
  :func:`merge`; ``_tree_arrays``: the flat-tree contract of the builder and the file.
- compiled: ``_builder`` (grows one tree), ``_node_trainer`` (trains its nodes),
  ``_forest`` (the ensemble at prediction), ``_descent`` (multi-way descent),
  ``_label_models`` (per-label classifiers), ``_neighbourhoods`` (each label's training
  rows), ``_strongest`` (a row's strongest features).
"""

from ._estimator import LdSM
from ._merge import merge

__all__ = ["LdSM", "merge"]
