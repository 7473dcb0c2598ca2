"""Learned M-ary label trees with representation learning (Jernite et al., 2017).

:class:`LearnedTree` is the estimator (``_estimator``), :mod:`.label_tree`
the label hierarchies it trains over, and ``_learned_tree`` its compiled
kernels.
"""

from ._estimator import LearnedTree, fit_text_file

__all__ = ["LearnedTree", "fit_text_file"]
