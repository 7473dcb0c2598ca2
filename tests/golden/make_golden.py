"""Golden predictions: what every estimator predicts on tiny seeded data.

``tests/test_golden.py`` refits each case of :data:`CASES` and compares its
predictions with the arrays stored here, exactly, so that a refactoring that
changes any result fails loudly. The data are drawn here with NumPy alone
(not with ``xmltree.datasets``), so that they cannot change with the library.

When a change of behaviour is deliberate, regenerate the files from the
repository root, say why in the commit, and commit them with the change::

    python tests/golden/make_golden.py

Every case stores ``labels`` and ``scores`` (top-k predictions of the test
rows) in ``tests/golden/<case>.npz``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp

GOLDEN_DIR = Path(__file__).resolve().parent

N_TRAIN, N_TEST, N_FEATURES, N_LABELS = 300, 80, 60, 24
K = 5


def golden_data(seed: int = 0):
    """Return ``X_train, Y_train, X_test`` (CSR float32, CSR 0/1, CSR float32).

    Each label owns six features; a row draws one to three labels (the
    first label of a row is its class for the multiclass learners) and
    features from its labels' sets plus three noise features.
    """
    rng = np.random.default_rng(seed)
    owned = rng.integers(0, N_FEATURES, size=(N_LABELS, 6))
    n_rows = N_TRAIN + N_TEST
    rows, cols, values, label_rows, label_cols = [], [], [], [], []
    for row in range(n_rows):
        labels = rng.choice(N_LABELS, size=rng.integers(1, 4), replace=False,
                            p=_zipf(N_LABELS))
        features = np.concatenate([owned[labels].ravel(), rng.integers(0, N_FEATURES, 3)])
        rows.extend([row] * features.size)
        cols.extend(features)
        values.extend(rng.random(features.size) + 0.1)
        label_rows.extend([row] * labels.size)
        label_cols.extend(labels)
    X = sp.csr_matrix((np.asarray(values, dtype=np.float32), (rows, cols)),
                      shape=(n_rows, N_FEATURES))
    X.sum_duplicates()
    Y = sp.csr_matrix((np.ones(len(label_cols), dtype=np.float32), (label_rows, label_cols)),
                      shape=(n_rows, N_LABELS))
    first_label = np.asarray([label_cols[label_rows.index(row)] for row in range(n_rows)])
    return X[:N_TRAIN], Y[:N_TRAIN], X[N_TRAIN:], first_label[:N_TRAIN]


def _zipf(n: int) -> np.ndarray:
    weights = 1.0 / np.arange(1, n + 1)
    return weights / weights.sum()


def _ldsm(rerank=None, **params):
    """An LdSM case; with `rerank` (Reranker settings), behind a fitted re-ranker."""
    def run(n_jobs):
        from xmltree import LdSM
        from xmltree.rerank import Reranked, Reranker

        X, Y, X_test, _ = golden_data()
        model = LdSM(**params, random_state=0, n_jobs=n_jobs).fit(X, Y)
        if rerank is not None:
            model = Reranked(model, Reranker(**rerank)).fit(X, Y)
        return model.predict_top_k(X_test, K)
    return run


def _lomtree(**params):
    def run(n_jobs):
        from xmltree import LOMTree

        X, _, X_test, y = golden_data()
        model = LOMTree(**params, random_state=0, n_jobs=n_jobs).fit(X, y)
        return model.predict_top_k(X_test, K)
    return run


def _learned_tree(**params):
    def run(n_jobs):
        from xmltree import LearnedTree

        X, Y, X_test, _ = golden_data()
        # One thread for training: Hogwild training is reproducible only then.
        model = LearnedTree(**params, random_state=0, n_jobs=1).fit(X, Y)
        model.n_jobs = n_jobs
        # Label indices and log-probabilities, as the files were made with.
        return model._top_k_indices(model._validate_X(X_test), K)
    return run


#: The paper's LdSM (histogram leaves, features as given) and the linear
#: leaves on tf-idf features, each with its settings spelt out, so that a
#: change of defaults does not change the cases.
_LDSM = dict(n_trees=3, max_nodes=40, epochs=3, leaf_model="histogram", feature_scaling=None,
             leaf_scores="distribution")
_LINEAR = dict(n_trees=3, max_nodes=40, epochs=3, leaf_model="linear", feature_scaling="tfidf",
               C=0.25, n_candidates=10, histogram_weight=0.3, leaf_scores="frequency")

#: Case name -> ``run(n_jobs) -> (labels, scores)``.
CASES = {
    "ldsm": _ldsm(**_LDSM),
    "ldsm_arity3_sigmoid": _ldsm(**_LDSM, arity=3, routing="sigmoid", lambda2=2.0),
    "ldsm_frequency_sum": _ldsm(**{**_LDSM, "leaf_scores": "frequency"}, leaf_aggregation="sum"),
    "ldsm_rerank_centroid": _ldsm(**_LDSM, rerank={"n_candidates": 12}),
    "ldsm_rerank_ridge": _ldsm(**_LDSM, rerank={"tail_scorer": "ridge", "method": "linear",
                                                "propensity_exponent": 1.0}),
    "ldsm_rerank_logistic": _ldsm(**_LDSM, rerank={"tail_scorer": "logistic", "alpha": 0.5}),
    "ldsm_linear_tfidf": _ldsm(**_LINEAR),
    "lomtree": _lomtree(epochs=2, shuffle=True, beam_width=1),
    "lomtree_beam": _lomtree(epochs=2, loss="logistic", optimizer="sgd", beam_width=4),
    "learned_tree": _learned_tree(dim=16, epochs=3, n_tree_updates=4),
    "learned_tree_flat_sgd": _learned_tree(dim=8, epochs=2, tree="flat", optimizer="sgd",
                                           learning_rate=0.5),
}


def main() -> None:
    for name, run in CASES.items():
        labels, scores = run(1)
        np.savez(GOLDEN_DIR / f"{name}.npz", labels=labels, scores=scores)
        print(f"{name}: labels {labels.dtype}{labels.shape}, scores {scores.dtype}")


if __name__ == "__main__":
    main()
