"""Reliability of a learner's scores: how often a label predicted with score s is true.

Trains a learner, ranks the top ``--k`` labels of every test row, and bins the
(row, label) pairs by score in ``--bins`` equal-width bins over [0, 1] (scores
above 1, possible with LdSM's ``leaf_aggregation="sum"``, join the last bin).
For each bin it reports the mean score, the share of its pairs whose label is
true (the observed precision) and the number of pairs, and it plots precision
against mean score: the scores of a calibrated model, usable as probabilities
and with ``predict_above(X, threshold)``, follow the diagonal. The expected
calibration error (ECE) is the pair-weighted mean of ``|precision - score|``
over the bins.

Data: a registered dataset (``--dataset bibtex``, read from ``--data-home``),
or, without ``--dataset``, a synthetic problem. Learners: ``ldsm`` (whatever
its default scores are) or ``learned-tree`` (probabilities).

Example
-------
    python benchmarks/plot_reliability.py --dataset bibtex --n-trees 10 \\
        --output reliability.png --json reliability.json
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from _common import DEFAULT_DATA_HOME, load_split, require_matplotlib, write_json

import xmltree
from xmltree.datasets import make_synthetic


def reliability(Y_true, labels: np.ndarray, scores: np.ndarray, bins: int = 10) -> dict:
    """Observed precision of the ranked (row, label) pairs, by score bin.

    Parameters
    ----------
    Y_true : scipy.sparse.csr_matrix of shape (n_samples, n_labels)
        True labels.
    labels, scores : numpy.ndarray of shape (n_samples, k)
        A ranking and its scores (label -1: an empty slot, left out).
    bins : int, default=10

    Returns
    -------
    dict
        ``edges`` (bins + 1), and per bin ``mean_score``, ``precision``
        (None for an empty bin) and ``count``; ``ece``, the expected
        calibration error.
    """
    filled = labels >= 0
    rows = np.broadcast_to(np.arange(labels.shape[0])[:, None], labels.shape)
    hits = np.asarray(Y_true[rows[filled], labels[filled]]).ravel() > 0
    values = scores[filled].astype(np.float64)
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, bins - 1)
    count = np.bincount(which, minlength=bins)
    score_sum = np.bincount(which, weights=values, minlength=bins)
    hit_sum = np.bincount(which, weights=hits, minlength=bins)
    used = count > 0
    mean_score = np.where(used, score_sum / np.maximum(count, 1), np.nan)
    precision = np.where(used, hit_sum / np.maximum(count, 1), np.nan)
    ece = float(np.sum(count[used] * np.abs(precision[used] - mean_score[used])) / count.sum())
    return {"edges": edges.tolist(), "mean_score": _listed(mean_score),
            "precision": _listed(precision), "count": count.tolist(), "ece": ece}


def _listed(values: np.ndarray) -> list:
    """A float array as a list, NaN (an empty bin) as None, for JSON."""
    return [None if np.isnan(value) else float(value) for value in values]


def plot(table: dict, path: Path, title: str) -> None:
    """Draw the reliability diagram: precision against mean score, and the pair counts."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mean = np.array([np.nan if v is None else v for v in table["mean_score"]])
    precision = np.array([np.nan if v is None else v for v in table["precision"]])
    edges = np.asarray(table["edges"])
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(5, 6), sharex=True,
                                      gridspec_kw={"height_ratios": [3, 1]})
    top.plot([0, 1], [0, 1], color="grey", linestyle="--", label="calibrated")
    top.plot(mean, precision, marker="o", label=f"observed (ECE {table['ece']:.3f})")
    top.set(ylabel="precision of the predicted labels", title=title, xlim=(0, 1), ylim=(0, 1))
    top.legend()
    bottom.bar(edges[:-1], table["count"], width=np.diff(edges), align="edge")
    bottom.set(xlabel="score", ylabel="pairs", yscale="log")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def load_data(args):
    """Train and test splits: the registered dataset, or synthetic data."""
    if args.dataset is not None:
        return load_split(args.data_home, args.dataset)
    X, Y = make_synthetic(n_samples=args.n_samples, n_features=500, n_labels=100,
                          avg_labels=3.0, random_state=args.seed)
    cut = int(0.8 * X.shape[0])
    return X[:cut], Y[:cut], X[cut:], Y[cut:]


def make_learner(args):
    if args.learner == "learned-tree":
        return xmltree.LearnedTree(random_state=args.seed, n_jobs=args.n_jobs)
    return xmltree.LdSM(n_trees=args.n_trees, random_state=args.seed, n_jobs=args.n_jobs)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-home", type=Path, default=DEFAULT_DATA_HOME)
    parser.add_argument("--dataset", help="registered dataset (default: synthetic data)")
    parser.add_argument("--n-samples", type=int, default=3000, help="synthetic rows")
    parser.add_argument("--learner", choices=("ldsm", "learned-tree"), default="ldsm")
    parser.add_argument("--n-trees", type=int, default=10, help="LdSM trees")
    parser.add_argument("-k", type=int, default=5, help="ranked labels per row")
    parser.add_argument("--bins", type=int, default=10)
    parser.add_argument("--n-jobs", type=int, default=-1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=Path("reliability.png"))
    parser.add_argument("--json", type=Path, help="also write the table to this file")
    args = parser.parse_args(argv)
    require_matplotlib()

    X_train, Y_train, X_test, Y_test = load_data(args)
    model = make_learner(args).fit(X_train, Y_train)
    labels, scores = model.predict_top_k(X_test, args.k)
    table = reliability(Y_test, labels.astype(np.int64), scores, args.bins)
    name = args.dataset or "synthetic"
    plot(table, args.output, f"{args.learner} top-{args.k} scores, {name}")
    print(f"{'bin':>11} {'mean score':>11} {'precision':>10} {'pairs':>8}")
    for low, high, mean, precision, count in zip(table["edges"], table["edges"][1:],
                                                 table["mean_score"], table["precision"],
                                                 table["count"]):
        if count:
            print(f"{low:.2f}-{high:.2f} {mean:>11.3f} {precision:>10.3f} {count:>8}")
    print(f"ECE {table['ece']:.4f}; wrote {args.output}")
    if args.json:
        write_json(args.json, {"args": vars(args), **table})
    return table


if __name__ == "__main__":
    main()
