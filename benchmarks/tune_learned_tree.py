"""Choose LearnedTree's dimension, epochs and step on held-out rows, then test.

The protocol for the classification tasks (CLINC150, Reuters-21578) has two steps.

1. **Held-out grid.** For every (dimension, epochs, step) of the grid and every
   tuning seed, the random, Huffman and learned trees are trained at each arity
   on a fixed 80% of the training rows and scored on the other 20%
   (``bench_learned_tree.py --eval valid``). A setting's score is the mean P@1
   of all these models, so the chosen setting is shared by every tree and
   favours none of them.
2. **Test split.** The chosen setting is measured on the test split.
   - The three trees run for every test seed.
   - The flat softmax and fastText (``-loss hs`` / ``-loss softmax``, at the
     same dimension, epochs and step) run for the first ``--peer-seeds`` test
     seeds.

The script prints the held-out grid and the test table. It also prints the
per-seed difference between the learned and the Huffman tree at each arity,
as a mean and a standard error. ``--json`` writes every row. All models train
with one thread, so a seed reproduces P@1 exactly; the times depend on the
machine. Example (Reuters, about 15 minutes on one core)::

    python benchmarks/tune_learned_tree.py --task reuters --json reuters_tuned.json
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np
from _common import write_json
from bench_learned_tree import DEFAULT_CORPORA, build_parser, classification

TREES = ["random", "huffman", "learned"]


def run(options: argparse.Namespace, setting: tuple, seed: int, evaluation: str,
        kinds: list[str], fasttext: bool) -> list[dict]:
    """Rows of one ``bench_learned_tree.py`` classification run."""
    dim, epochs, lr = setting
    argv = ["--task", options.task, "--corpora", options.corpora, "--eval", evaluation,
            "--dim", str(dim), "--epochs", str(epochs), "--lr", str(lr),
            "--optimizer", options.optimizer, "--n-jobs", "1", "--seed", str(seed),
            "--arity", *map(str, options.arity), "--kinds", *kinds]
    if not fasttext:
        argv.append("--no-fasttext")
    rows = classification(build_parser().parse_args(argv))
    for row in rows:
        row.update(dim=dim, epochs=epochs, lr=lr, seed=seed, eval=evaluation)
    return rows


def tune(options: argparse.Namespace) -> tuple[tuple, list[dict]]:
    """Score every setting of the grid on held-out rows; return the best and all rows."""
    grid = list(itertools.product(options.dims, options.epochs, options.lrs))
    rows, scores = [], {}
    for setting in grid:
        found = [row for seed in options.tune_seeds
                 for row in run(options, setting, seed, "valid", TREES, fasttext=False)]
        scores[setting] = float(np.mean([row["p@1"] for row in found]))
        rows += found
        print(f"held-out dim {setting[0]}, epochs {setting[1]}, step {setting[2]}: "
              f"mean P@1 {scores[setting]:.4f}", flush=True)
    return max(grid, key=lambda setting: scores[setting]), rows


def paired_difference(rows: list[dict], arity: int) -> tuple[float, float]:
    """Mean and standard error of learned minus Huffman P@1 over the test seeds."""
    def by_seed(kind):
        return {row["seed"]: row["p@1"] for row in rows
                if row["model"] == f"LearnedTree[{kind}]" and row["arity"] == arity}

    learned, huffman = by_seed("learned"), by_seed("huffman")
    differences = np.array([learned[seed] - huffman[seed] for seed in sorted(learned)])
    if differences.size < 2:
        return float(differences.mean()), float("nan")
    return float(differences.mean()), float(differences.std(ddof=1) / np.sqrt(differences.size))


def summarise(rows: list[dict]) -> None:
    """Print mean P@1, training and test seconds of every model over its seeds."""
    print("model | M | seeds | P@1 | train s | test s | mean depth")
    models = sorted({(row["model"], row["arity"]) for row in rows})
    for model, arity in models:
        mine = [row for row in rows if row["model"] == model and row["arity"] == arity]
        means = [np.mean([row[key] for row in mine])
                 for key in ("p@1", "train_s", "test_s", "mean_depth")]
        print(f"{model} | {arity} | {len(mine)} | {means[0]:.4f} | {means[1]:.2f} | "
              f"{means[2]:.3f} | {means[3]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=["clinc150", "reuters"], default="reuters")
    parser.add_argument("--corpora", default=str(DEFAULT_CORPORA))
    parser.add_argument("--arity", type=int, nargs="+", default=[5, 20])
    parser.add_argument("--dims", type=int, nargs="+", default=[50, 100])
    parser.add_argument("--epochs", type=int, nargs="+", default=[5, 10, 20])
    parser.add_argument("--lrs", type=float, nargs="+", default=[0.1, 0.2, 0.4])
    parser.add_argument("--optimizer", choices=["sgd", "adagrad"], default="adagrad")
    parser.add_argument("--tune-seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--test-seeds", type=int, nargs="+", default=list(range(10)))
    parser.add_argument("--peer-seeds", type=int, default=3,
                        help="test seeds that also run the flat softmax and fastText")
    parser.add_argument("--json", help="write the held-out and test rows to this file")
    options = parser.parse_args()

    best, held_out = tune(options)
    print(f"chosen on held-out rows: dim {best[0]}, epochs {best[1]}, step {best[2]}")
    test = []
    for index, seed in enumerate(options.test_seeds):
        peers = index < options.peer_seeds
        test += run(options, best, seed, "test", TREES + (["flat"] if peers else []),
                    fasttext=peers)
    summarise(test)
    for arity in options.arity:
        mean, error = paired_difference(test, arity)
        print(f"learned - Huffman, M = {arity}: {mean:+.4f} (standard error {error:.4f})")
    if options.json:
        write_json(options.json, {"args": vars(options), "chosen": best,
                                   "held_out": held_out, "test": test})


if __name__ == "__main__":
    main()
