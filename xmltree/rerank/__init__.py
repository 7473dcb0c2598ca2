"""Tail-label re-ranking of a model's top candidates, after PfastreXML.

Tree ensembles rank frequent ("head") labels well and rare ("tail") labels
badly: a leaf holds few examples of a tail label, so its empirical score is
small or noisy. PfastreXML (Jain, Prabhu & Varma, KDD 2016) corrects this by
re-scoring the ensemble's top candidates with a simple classifier per label
that needs few examples to be reliable: the distance of the unit-normalised
point to the centroid of the unit-normalised training points carrying the
label,

    t_l(x) = 1 / (1 + exp(gamma * ||x_hat - mu_l||^2)),

and blending it with the ensemble's score ``p_l``. Two blends are offered:

``"geometric"`` (PfastreXML)
    ``s_l = p_l**alpha * t_l**(1 - alpha)``, computed as
    ``alpha log p_l + (1 - alpha) log t_l`` so that tiny tail scores never
    underflow to ties.
``"linear"`` (LdSM, Majzoubi & Choromanska 2020)
    ``s_l = beta * p_l + (1 - beta) * t_l``.

Either blend is then multiplied by ``q_l**lambda``, the label's inverse
propensity (Jain et al.) raised to ``propensity_exponent``: ranking by
``p_l q_l`` is what maximises the expected PSP@k when ``p_l`` is a
probability, and it is how PfastreXML's propensity-scored training targets
act on a leaf's label scores. Here it acts on the candidates' scores, so the
base model is left untouched.

The tail classifier is written as issue 4 states it (``t_l <= 1/2``, reached
at zero distance). Only the *ranking* of candidates depends on the form, and
for the geometric blend ``(1 - alpha) log t_l`` is, up to a term that
vanishes for ``gamma d >> 1``, just ``-(1 - alpha) gamma d``: a distance
penalty. Two choices make the distance more telling for rare labels, and are
on by default: features are weighted by their inverse document frequency
before rows are unit-normalised (``feature_weighting="idf"``; rare, specific
words then dominate the centroids), and the centroids themselves are
unit-normalised (``unit_centroids=True``), so that ``d = 2 - 2 cos`` and a
frequent label's diffuse, short centroid is not closer to every point than a
rare label's sharp one.

The defaults (``alpha = 0.7, gamma = 2, propensity_exponent = 0.25``) were
chosen on held-out training rows of Bibtex and Delicious, for 10- and 50-tree
LdSM ensembles, as a setting that raises PSP@k on all four at a small cost
in P@1 (``benchmarks/README.md``). The best setting differs a lot
between data sets (Bibtex gains most from a strong tail classifier, e.g.
``alpha = 0.3-0.4, gamma = 30-50``; Delicious from the propensity weight), so
where PSP matters, tune them with ``benchmarks/bench_rerank.py``
(``benchmarks/README.md``).

Cost: one sparse dot product ``x_hat . mu_l`` per (row, candidate) pair in a
compiled kernel (``_rerank.tail_log_scores``); nothing dense over
``n_labels`` or ``n_features x n_labels`` is built.

For data with up to a few thousand features, ``tail_scorer="ridge"`` replaces
the centroids with one-vs-rest ridge regression (:class:`RidgeTailScorer`),
a discriminative linear classifier per label fitted in closed form; on
held-out rows of Bibtex and Delicious it beats the best centroid setting in
both P@1 and PSP@k (``benchmarks/README.md``), at the cost of dense
``n_features x n_labels`` weights. ``tail_scorer="logistic"``
(:class:`LogisticTailScorer`) fits one-vs-rest L2-regularised logistic
regression on the same rows instead: its score ``log sigmoid(z)`` is a
calibrated log-probability rather than a floored least-squares output, and
it is dense in the same way (the fit takes seconds rather than milliseconds:
an iterative solver instead of one linear solve).

Examples
--------
>>> reranker = Reranker(n_candidates=100).fit(X_train, Y_train)   # doctest: +SKIP
>>> labels, scores = model.predict(X_test, k=100)                 # doctest: +SKIP
>>> top5, top5_scores = reranker.rerank_predictions(X_test, labels, scores, k=5)  # doctest: +SKIP
"""

from ._estimator import (
    LogisticTailScorer,
    Reranker,
    RidgeTailScorer,
    TailScorer,
    make_reranker,
    propensity_weighted_targets,
    rerank,
)
from ._stage import Reranked

__all__ = [
    "TailScorer",
    "RidgeTailScorer",
    "LogisticTailScorer",
    "Reranker",
    "Reranked",
    "make_reranker",
    "rerank",
    "propensity_weighted_targets",
]
