"""Hyper-parameter sweep of LdSM on the shared benchmark splits.

Trains one ensemble per setting (a grid over the options given) and prints
P@1/3/5 and PSP@1/3/5 on the test split with the training CPU time, so that
the defaults and presets of ``xmltree.LdSM`` can be chosen from numbers.
With ``--holdout F``, a random fraction F of the training rows (seed 0, or
each of ``--holdout-seed``) is held out and scored instead, so that settings
are chosen without the test split. Prediction-only settings
(``--leaf-aggregation``) are scored on the same trees: ``xmltree.ldsm.merge``
of the one fitted model rebuilds its forest with the changed setting.

Examples
--------
    python benchmarks/sweep_ldsm.py --dataset bibtex --n-trees 10 --arity 2 4 \\
        --max-nodes 1000 4000 --learning-rate 0.1 0.5 --row-norm none l2
    python benchmarks/sweep_ldsm.py --dataset bibtex --holdout 0.2 --transform none idf
    python benchmarks/sweep_ldsm.py --dataset bibtex --holdout 0.2 --n-trees 50 \
        --leaf-scores frequency --leaf-aggregation mean sum
"""

from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from _common import DEFAULT_DATA_HOME, load_split, write_json

import xmltree
from xmltree.ldsm import merge
from xmltree.metrics import evaluate, inverse_propensity


def l2_rows(X: sp.csr_matrix) -> sp.csr_matrix:
    """Scale every non-empty row of ``X`` to unit Euclidean norm."""
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    return sp.csr_matrix(sp.diags(1.0 / norms) @ X, dtype=np.float32)


def transform_features(X_fit: sp.csr_matrix, X_eval: sp.csr_matrix, transform: str):
    """Apply a feature transform fitted on ``X_fit`` to both matrices:
    ``log1p`` of every value, or ``idf`` weighting (x * log(N / df), with
    the document frequencies of ``X_fit``)."""
    if transform == "none":
        return X_fit, X_eval
    if transform == "log1p":
        return X_fit.log1p().astype(np.float32), X_eval.log1p().astype(np.float32)
    df = np.bincount(X_fit.indices, minlength=X_fit.shape[1])
    idf = np.log(X_fit.shape[0] / np.maximum(df, 1)).astype(np.float32)
    # A feature present in every row gets weight 0: keep a floor instead.
    idf = np.maximum(idf, np.float32(1e-3))
    scale = sp.diags(idf)
    return (sp.csr_matrix(X_fit @ scale, dtype=np.float32),
            sp.csr_matrix(X_eval @ scale, dtype=np.float32))


def holdout_split(X: sp.csr_matrix, Y: sp.csr_matrix, fraction: float, seed: int = 0):
    """Split the training rows at random: (X_fit, Y_fit, X_held, Y_held)."""
    order = np.random.default_rng(seed).permutation(X.shape[0])
    n_held = round(fraction * X.shape[0])
    held, fit = np.sort(order[:n_held]), np.sort(order[n_held:])
    return X[fit], Y[fit], X[held], Y[held]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-home", type=Path, default=DEFAULT_DATA_HOME)
    parser.add_argument("--dataset", default="bibtex")
    parser.add_argument("--n-trees", type=int, default=10)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--arity", type=int, nargs="+", default=[2])
    parser.add_argument("--max-nodes", type=int, nargs="+", default=[1000])
    parser.add_argument("--epochs", type=int, nargs="+", default=[20])
    parser.add_argument("--learning-rate", type=float, nargs="+", default=[0.1])
    parser.add_argument("--lambda1", type=float, nargs="+", default=[2.0])
    parser.add_argument("--lambda2", type=float, nargs="+", default=[1.0])
    parser.add_argument("--routing", nargs="+", default=["margin"])
    parser.add_argument("--weight-threshold", type=float, nargs="+", default=[None],
                        help="stored-weight threshold (default: 1 / n_features)")
    parser.add_argument("--row-norm", nargs="+", default=["none"], choices=["none", "l2"])
    parser.add_argument("--transform", nargs="+", default=["none"],
                        choices=["none", "log1p", "idf"])
    parser.add_argument("--leaf-scores", nargs="+", default=["distribution"],
                        choices=["distribution", "frequency"])
    parser.add_argument("--leaf-aggregation", nargs="+", default=["mean"], choices=["mean", "sum"],
                        help="scored on the same trees (prediction-only)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0],
                        help="random_state of the ensemble (one run per seed)")
    parser.add_argument("--holdout", type=float, default=0.0,
                        help="score a held-out fraction of the training rows, not the test split")
    parser.add_argument("--holdout-seed", type=int, nargs="+", default=[0],
                        help="seeds of the held-out splits (one sweep per split)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    data = load_split(args.data_home, args.dataset)
    splits = args.holdout_seed if args.holdout > 0 else [None]
    grid = itertools.product(splits, args.transform, args.row_norm, args.arity, args.max_nodes,
                             args.epochs, args.learning_rate, args.lambda1, args.lambda2,
                             args.routing, args.weight_threshold, args.leaf_scores, args.seeds)
    rows = []
    print("split transform norm arity nodes epochs lr    l1   l2  routing  w_min   leaves  agg "
          "seed |  P@1   P@3   P@5 | PSP@1 PSP@3 PSP@5 | cpu s | weights")
    for (split, transform, norm, arity, nodes, epochs, lr, l1, l2, routing, w_min, leaves,
         seed) in grid:
        X_train, Y_train, X_test, Y_test = (
            data if split is None else holdout_split(*data[:2], args.holdout, split))
        inv_propensity = inverse_propensity(Y_train)
        Xtr, Xte = transform_features(X_train, X_test, transform)
        Xtr, Xte = (l2_rows(Xtr), l2_rows(Xte)) if norm == "l2" else (Xtr, Xte)
        model = xmltree.LdSM(n_trees=args.n_trees, arity=arity, max_nodes=nodes, epochs=epochs,
                             learning_rate=lr, lambda1=l1, lambda2=l2, routing=routing,
                             weight_threshold=w_min, leaf_scores=leaves, random_state=seed,
                             n_jobs=args.n_jobs)
        cpu = time.process_time()
        model.fit(Xtr, Y_train)
        cpu = time.process_time() - cpu
        n_weights = sum(tree["weight_values"].size for tree in model.trees_)
        for aggregation in args.leaf_aggregation:
            scored = merge([model.set_params(leaf_aggregation=aggregation)])
            labels, _ = scored.predict(Xte, k=5)
            result = evaluate(Y_test, labels, inv_propensity=inv_propensity)
            setting = dict(transform=transform, row_norm=norm, arity=arity, max_nodes=nodes,
                           epochs=epochs, learning_rate=lr, lambda1=l1, lambda2=l2,
                           routing=routing, weight_threshold=w_min, leaf_scores=leaves,
                           leaf_aggregation=aggregation, random_state=seed,
                           holdout=args.holdout, holdout_seed=split)
            rows.append({**setting, **result, "train_cpu_s": cpu, "n_weights": n_weights})
            print(f"{'test' if split is None else split:>5} {transform:>9} {norm:>4} "
                  f"{arity:>5} {nodes:>5} {epochs:>6} {lr:<5} {l1:>4} "
                  f"{l2:>4} {routing:>8} {w_min or 1 / X_train.shape[1]:6.4f} {leaves[:5]:>8} "
                  f"{aggregation:>4} {seed:>4} | "
                  + " ".join(f"{100 * result[f'P@{k}']:5.2f}" for k in (1, 3, 5)) + " | "
                  + " ".join(f"{100 * result[f'PSP@{k}']:5.2f}" for k in (1, 3, 5))
                  + f" | {cpu:5.1f} | {n_weights}", flush=True)
    if args.json:
        write_json(args.json, {"rows": rows})


if __name__ == "__main__":
    main()
