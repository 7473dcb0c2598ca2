"""Prediction-time variants of LdSM scored by re-routing held-out rows in NumPy.

Trains one ensemble on the training rows minus a held-out fraction (as
``sweep_ldsm.py --holdout``), then re-descends its trees in NumPy under
prediction rules the kernels do not offer, to decide whether one is worth
implementing: a routing threshold other than the training one, leaves
weighted by the confidence of the path that reached them, and trees that
divide the sum of their reached leaves by ``n ** exponent`` (1: the paper's
average, 0: ``leaf_aggregation="sum"``). The rows whose rule the kernels
implement are printed next to ``LdSM.predict`` as a check of the re-routing.

Examples
--------
    python benchmarks/reroute_ldsm.py --dataset bibtex --leaf-scores frequency \\
        --threshold 0.3 0.4 0.5 0.6 --weighting none sigmoid --exponent 1 0.5 0
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from _common import DEFAULT_DATA_HOME, load_split, write_json
from sweep_ldsm import holdout_split

import xmltree
from xmltree.ldsm import merge
from xmltree.metrics import evaluate

#: Factor applied to the weight of an example sent to a child, from the
#: child's regressor score z: none, or sigmoid(z).
WEIGHTINGS = {
    "none": np.ones_like,
    "sigmoid": lambda z: 1.0 / (1.0 + np.exp(-z)),
}


def node_scores(tree: dict, node: int, arity: int, X: sp.csr_matrix) -> np.ndarray:
    """Regressor scores (n_rows, arity) of the rows of ``X`` at ``node``."""
    weights = np.zeros((X.shape[1], arity))
    ids = slice(tree["weight_indptr"][node], tree["weight_indptr"][node + 1])
    weights[tree["weight_indices"][ids]] = tree["weight_values"][ids]
    return X @ weights + tree["bias"][node].astype(np.float64)


def reached_leaves(tree: dict, arity: int, X: sp.csr_matrix, threshold: float,
                   weighting: str):
    """Yield (rows, path weights, leaf) for every leaf some rows reach.

    A row goes to every child whose score is >= ``threshold``, or else to
    its best-scoring child; its weight is multiplied along the path by the
    ``weighting`` factor of each child taken.
    """
    stack = [(0, np.arange(X.shape[0]), np.ones(X.shape[0]))]
    while stack:
        node, rows, weight = stack.pop()
        first_child = tree["first_child"][node]
        if first_child < 0:
            yield rows, weight, node
            continue
        scores = node_scores(tree, node, arity, X[rows])
        goes = scores >= threshold
        stuck = ~goes.any(axis=1)
        goes[stuck, np.argmax(scores[stuck], axis=1)] = True
        factor = WEIGHTINGS[weighting](scores)
        for m in range(arity):
            chosen = goes[:, m]
            if chosen.any():
                stack.append((first_child + m, rows[chosen], weight[chosen] * factor[chosen, m]))


def ensemble_scores(model, X: sp.csr_matrix, threshold: float, weighting: str,
                    exponent: float) -> np.ndarray:
    """Dense (n_rows, n_labels) scores: each tree divides the weighted sum of
    its reached leaves by (their total weight) ** exponent."""
    total = np.zeros((X.shape[0], model.n_labels_))
    for tree in model.trees_:
        scores = np.zeros_like(total)
        mass = np.zeros(X.shape[0])
        for rows, weight, leaf in reached_leaves(tree, model.arity, X, threshold, weighting):
            span = slice(tree["leaf_indptr"][leaf], tree["leaf_indptr"][leaf + 1])
            histogram = np.zeros(model.n_labels_)
            histogram[tree["leaf_labels"][span]] = tree["leaf_values"][span]
            scores[rows] += weight[:, None] * histogram[None, :]
            mass[rows] += weight
        total += scores / mass[:, None] ** exponent
    return total / len(model.trees_)


def top_k(scores: np.ndarray, k: int = 5) -> np.ndarray:
    """The k best labels of each row, ties by increasing label id."""
    return np.argsort(-scores, axis=1, kind="stable")[:, :k]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-home", type=Path, default=DEFAULT_DATA_HOME)
    parser.add_argument("--dataset", default="bibtex")
    parser.add_argument("--n-trees", type=int, default=50)
    parser.add_argument("--leaf-scores", default="distribution",
                        choices=["distribution", "frequency"])
    parser.add_argument("--holdout", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threshold", type=float, nargs="+", default=[0.5])
    parser.add_argument("--weighting", nargs="+", default=["none"], choices=list(WEIGHTINGS))
    parser.add_argument("--exponent", type=float, nargs="+", default=[1.0, 0.0])
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args(argv)

    X_train, Y_train, _, _ = load_split(args.data_home, args.dataset)
    X_fit, Y_fit, X_held, Y_held = holdout_split(X_train, Y_train, args.holdout)
    model = xmltree.LdSM(n_trees=args.n_trees, leaf_scores=args.leaf_scores,
                         random_state=args.seed, n_jobs=2).fit(X_fit, Y_fit)
    X_held64 = sp.csr_matrix(X_held, dtype=np.float64)
    print("threshold weighting exponent |  P@1   P@3   P@5 | kernel P@1 P@3 P@5")
    rows = []
    for threshold, weighting, exponent in itertools.product(args.threshold, args.weighting,
                                                            args.exponent):
        labels = top_k(ensemble_scores(model, X_held64, threshold, weighting, exponent))
        result = evaluate(Y_held, labels)
        rows.append({"threshold": threshold, "weighting": weighting, "exponent": exponent,
                     **result})
        line = (f"{threshold:9.2f} {weighting:>9} {exponent:8.2f} | "
                + " ".join(f"{100 * result[f'P@{k}']:5.2f}" for k in (1, 3, 5)))
        if threshold == 0.5 and weighting == "none" and exponent in (0.0, 1.0):
            aggregation = "sum" if exponent == 0.0 else "mean"
            kernel = merge([model.set_params(leaf_aggregation=aggregation)])
            check = evaluate(Y_held, kernel.predict(X_held, k=5)[0])
            line += " | " + " ".join(f"{100 * check[f'P@{k}']:5.2f}" for k in (1, 3, 5))
        print(line, flush=True)
    if args.json:
        write_json(args.json, {"args": vars(args), "rows": rows})


if __name__ == "__main__":
    main()
