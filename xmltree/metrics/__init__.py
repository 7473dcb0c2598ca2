"""Ranking metrics for extreme multi-label classification.

The definitions follow the Extreme Classification Repository (Jain, Prabhu
and Varma, KDD 2016). All but coverage are means over *all* test rows:

* ``P@k = (1/k) sum_{l in top-k} y_l``
* ``nDCG@k = DCG@k / sum_{j=1}^{min(k, |y|)} 1 / log2(j + 1)`` with
  ``DCG@k = sum_{j=1}^{k} y_{r_j} / log2(j + 1)``
* ``R@k = |top-k  intersect  y| / |y|``
* ``PSP@k`` and ``PSnDCG@k``: the same sums with the gain of a correct label
  ``l`` multiplied by its inverse propensity ``q_l``, each divided by the
  value an oracle obtains when it ranks every row's true labels by
  descending ``q_l``; a perfect prediction therefore scores 1.
* ``coverage@k``: the fraction of the distinct labels present in
  ``Y_true`` that are predicted correctly in the top ``k`` of some row.

Each metric is also a scikit-learn scorer, for ``GridSearchCV``,
``cross_validate`` and the like: ``scoring=scorer("P@5")`` (see
:func:`scorer`). Two predictions of the same rows are compared with
:func:`paired_difference`: the difference of a metric and its standard error
over the rows.

Conventions shared by every function
------------------------------------
*Predictions.* ``Y_pred`` is either a **score matrix** or a **ranking**, told
apart by type alone:

* any scipy sparse matrix, and any dense array of floating dtype, is a score
  matrix of shape ``(n_samples, n_labels)``; higher is better. In a dense
  matrix every entry, zeros included, is a candidate; in a sparse matrix
  only stored entries are (an explicitly stored zero is a score, a missing
  entry is not). In both kinds a score of ``-inf`` means "not predicted".
  NaN is an error.
* a dense array of integer dtype is a ranking of shape
  ``(n_samples, k')``, ``k' >= 1``: label ids best first, ``-1`` for an
  empty slot. A label may appear at most once per row. An integer-valued
  *score* matrix must therefore be cast to float first.

*Ties* between equal scores go to the lower label id, so results never
depend on the sort algorithm.

*Short rankings.* When fewer than ``k`` labels are predicted (``k`` larger
than ``n_labels``, rows with few stored scores, rankings narrower than
``k``, ``-1`` slots), the missing slots count as wrong; P@k still divides
by ``k``.

*Rows without true labels* count as 0 for every metric and stay in the mean
(the repository's convention for P@k, applied to nDCG@k and R@k as well so
that all metrics average over the same rows).
"""


from ._metrics import (
    coverage_at_k,
    evaluate,
    ndcg_at_k,
    paired_difference,
    precision_at_k,
    psndcg_at_k,
    psprecision_at_k,
    recall_at_k,
)
from ._propensity import (
    PROPENSITY_PRESETS,
    inverse_propensity,
    inverse_propensity_from_counts,
)
from ._ranking import top_k
from ._scorers import RankingScorer, evaluate_model, scorer, scorers

__all__ = [
    "PROPENSITY_PRESETS",
    "RankingScorer",
    "coverage_at_k",
    "evaluate",
    "evaluate_model",
    "inverse_propensity",
    "inverse_propensity_from_counts",
    "ndcg_at_k",
    "paired_difference",
    "precision_at_k",
    "psndcg_at_k",
    "psprecision_at_k",
    "recall_at_k",
    "scorer",
    "scorers",
    "top_k",
]
