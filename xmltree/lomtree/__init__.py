"""LOMtree: online logarithmic-time multiclass trees (Choromanska & Langford, 2015).

:class:`LOMTree` is the estimator (``_estimator``); its compiled node and
swap kernels are ``_lomtree``.
"""

from ._estimator import LOMTree, to_multiclass

__all__ = ["LOMTree", "to_multiclass"]
