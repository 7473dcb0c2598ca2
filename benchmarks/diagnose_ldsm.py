"""Where the default LdSM's points go: the trees' candidates or the label classifiers.

With linear leaves (the default), LdSM predicts in two steps: the trees list each
row's ``n_candidates`` best labels by leaf-histogram score, then one classifier
per label re-scores those candidates. A true label the trees do not list can
never be predicted; a listed one can still be out-ranked. For every dataset this
script fits the default ``LdSM(random_state=0)`` once and splits the final P@k
into those two parts, on the test split and optionally on training rows:

* candidate recall@k (k = 5, 50, 200): the share of a row's true labels among its
  k best labels by histogram score, before any classifier, and recall@reached:
  the share found in any leaf the row reaches (the descent, without cut-off);
* the oracle P@1/P@5: what a perfect re-scorer of the candidates would reach
  (a row scores a hit at 1 when any true label is a candidate);
* the final P@1/P@5, their share of the oracle's, and the final P@k on the rows
  whose candidates hold a true label (the classifiers' precision where they can
  score); and the histogram's own P@1/P@5, the trees without classifiers.

Since a row whose candidates miss every true label scores 0 at P@1,
``P@1 = oracle P@1 x P@1 on recalled rows``. (Up to ties: the histogram ranking
is the forest's own top-k, which can differ from the candidates the classifiers
saw only among labels tied at the last candidate's score.) Also reported: leaves
reached per tree per row, tree sizes and regressor weights, the resolved "auto"
settings, fit seconds by phase and (in the JSON) the peak memory.

Examples
--------
    python benchmarks/diagnose_ldsm.py --datasets amazon670k-shape@0.1 \
        amazon670k-shape@0.3 --train-rows 20000 --json diagnose.json
    python benchmarks/diagnose_ldsm.py --datasets delicious200k-shape@0.1
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from _common import DEFAULT_DATA_HOME, load_benchmark_data, write_json

import xmltree
from xmltree._validation import check_features
from xmltree.ldsm._fitted import FittedLdSM
from xmltree.metrics import precision_at_k, recall_at_k, top_k

#: Depths at which the histogram candidates' recall is reported.
RECALL_KS = (5, 50, 200)

#: Cut-offs of the precision figures.
PRECISION_KS = (1, 5)


# ----------------------------------------------------------------------------- rankings


def histogram_forest(model: xmltree.LdSM, **overrides) -> FittedLdSM:
    """A fitted state of `model`'s trees that scores with their leaf histograms only.

    Parameters
    ----------
    model : xmltree.LdSM
        A fitted model (its trees are read, the forest is a new one).
    **overrides
        Resolved settings to change, e.g. ``n_candidates``.

    Returns
    -------
    FittedLdSM
        Descends as `model` does (same resolved settings), without label models.
    """
    return FittedLdSM.from_trees(model.trees_, {**model.resolved_params_, **overrides},
                                 model.scaler_, model.n_features_in_, model.n_labels_)


def wider_precision(model: xmltree.LdSM, X_scaled, Y, widths, n_jobs: int) -> dict:
    """P@k of `model`'s classifiers re-scoring more candidates, fit unchanged.

    Parameters
    ----------
    model : xmltree.LdSM
        A fitted model with linear leaves.
    X_scaled : scipy.sparse.csr_matrix
        Rows from :func:`scaled_rows`; `Y` their labels.
    widths : iterable of int
        Candidates per row to re-score at prediction.
    n_jobs : int
        Threads.

    Returns
    -------
    dict
        ``"P@k, n candidates"`` for every cut-off and width.
    """
    report = {}
    leaves = model._fitted_state().leaves
    for width in widths:
        forest = histogram_forest(model, n_candidates=width).with_leaves(leaves).forest
        labels = forest.predict_top_k(X_scaled, max(PRECISION_KS), n_jobs, check_input=False)[0]
        report.update({f"P@{k}, {width} candidates": precision_at_k(Y, labels, k)
                       for k in PRECISION_KS})
        del forest
    return report


def scaled_rows(model: xmltree.LdSM, X) -> sp.csr_matrix:
    """Rows `X` as the forest reads them: checked and scaled as at fit."""
    return model.scaler_.transform(check_features(X, n_features=model.n_features_in_))


def true_among(Y: sp.csr_matrix, listed: sp.csr_matrix) -> sp.csr_matrix:
    """The true labels of each row that `listed` stores a non-zero for, as a 0/1 matrix."""
    found = sp.csr_matrix(Y.multiply(listed != 0))
    found.eliminate_zeros()
    return found


def recalled_labels(Y: sp.csr_matrix, candidates: np.ndarray) -> sp.csr_matrix:
    """The true labels of each row that are among its `candidates` (-1 pads), as 0/1."""
    rows, columns = np.nonzero(candidates >= 0)
    listed = sp.csr_matrix((np.ones(rows.size), (rows, candidates[rows, columns])),
                           shape=Y.shape)
    return true_among(Y, listed)


#: Rows per block when listing every label of the leaves the rows reach.
REACHED_BLOCK_ROWS = 2048


def reached_recall(forest, X_scaled: sp.csr_matrix, Y: sp.csr_matrix, n_jobs: int) -> float:
    """Share of a row's true labels found in any leaf it reaches, averaged over rows.

    The recall of the candidates without the ``n_candidates`` cut-off: what
    the descent alone finds. Rows without labels count 0, as in ``recall_at_k``.
    """
    found = np.zeros(Y.shape[0])
    for start in range(0, Y.shape[0], REACHED_BLOCK_ROWS):
        block = slice(start, start + REACHED_BLOCK_ROWS)
        reached = forest.predict_scores(X_scaled[block], n_jobs)
        found[block] = np.diff(true_among(Y[block], reached).indptr)
    return float(np.mean(found / np.maximum(np.diff(Y.indptr), 1)))


# ----------------------------------------------------------------------------- measures


def candidate_report(Y: sp.csr_matrix, ranking: np.ndarray, final: np.ndarray,
                     n_candidates: int) -> dict:
    """Recall of the histogram ranking, and the final precision against its oracle.

    Parameters
    ----------
    Y : scipy.sparse.csr_matrix
        True labels of the rows.
    ranking : numpy.ndarray of int, shape (n_rows, >= max(RECALL_KS))
        Best labels by histogram score.
    final : numpy.ndarray of int, shape (n_rows, >= 5)
        The model's predictions.
    n_candidates : int
        How many of `ranking` the classifiers re-score.

    Returns
    -------
    dict
        ``recall@k``, ``histogram P@k``, ``oracle P@k``, ``final P@k``,
        ``final/oracle P@k``, ``recalled P@k`` (final P@k on rows with a true
        candidate), ``rows recalled`` (their share) and ``rows``.
    """
    recalled = recalled_labels(Y, ranking[:, :n_candidates])
    oracle = top_k(recalled, max(PRECISION_KS))[0]
    has_recall = np.diff(recalled.indptr) > 0
    report = {"rows": int(Y.shape[0]), "rows recalled": float(np.mean(has_recall))}
    report.update({f"recall@{k}": recall_at_k(Y, ranking, k) for k in RECALL_KS})
    for k in PRECISION_KS:
        report[f"histogram P@{k}"] = precision_at_k(Y, ranking, k)
        report[f"oracle P@{k}"] = precision_at_k(Y, oracle, k)
        report[f"final P@{k}"] = precision_at_k(Y, final, k)
        report[f"final/oracle P@{k}"] = report[f"final P@{k}"] / max(report[f"oracle P@{k}"],
                                                                     1e-12)
        report[f"recalled P@{k}"] = (precision_at_k(Y[has_recall], final[has_recall], k)
                                     if has_recall.any() else float("nan"))
    return report


def spread(values) -> dict:
    """Mean, median, 90th percentile and maximum of `values`."""
    values = np.asarray(values, dtype=np.float64)
    return {"mean": float(values.mean()), "median": float(np.median(values)),
            "p90": float(np.percentile(values, 90)), "max": float(values.max())}


def tree_report(model: xmltree.LdSM) -> dict:
    """Sizes of the trees: nodes, leaves, depth, weights per regressor, leaf histograms."""
    internal_weights, leaf_labels, leaf_rows = [], [], []
    for tree in model.trees_:
        internal = tree["first_child"] >= 0
        node_of_id = np.repeat(np.arange(internal.size), np.diff(tree["weight_indptr"]))
        per_regressor = np.zeros((internal.size, tree["weight_values"].shape[1]), dtype=np.int64)
        np.add.at(per_regressor, node_of_id, tree["weight_values"] != 0)
        internal_weights.append(per_regressor[internal].ravel())
        leaf_labels.append(np.diff(tree["leaf_indptr"])[~internal])
        leaf_rows.append(tree["n_samples"][~internal])
    return {"nodes": spread(model.n_nodes_), "leaves": spread(model.n_leaves_),
            "depth": spread(model.depth_),
            "weights per regressor": spread(np.concatenate(internal_weights)),
            "labels per leaf": spread(np.concatenate(leaf_labels)),
            "training rows per leaf": spread(np.concatenate(leaf_rows))}


def rows_report(model: xmltree.LdSM, forest, X, Y, n_jobs: int, widths=()) -> dict:
    """:func:`candidate_report` of rows `X` with labels `Y`, the leaves they reach, and
    :func:`wider_precision` at `widths`."""
    n_candidates = model.resolved_params_["n_candidates"]
    X_scaled = scaled_rows(model, X)
    ranking = forest.predict_top_k(X_scaled, max(max(RECALL_KS), n_candidates), n_jobs,
                                   check_input=False)[0]
    final = model.predict(X, k=max(PRECISION_KS))[0]
    report = candidate_report(Y, ranking, final, n_candidates)
    report["recall@reached"] = reached_recall(forest, X_scaled, Y, n_jobs)
    report["leaves reached per tree"] = spread(model.leaves_reached(X))
    report.update(wider_precision(model, X_scaled, Y, widths, n_jobs))
    return report


def diagnose(data, n_jobs: int, train_rows: int, widths=()) -> dict:
    """Fit the default LdSM on `data` and measure it on the test split and training rows.

    Parameters
    ----------
    data : tuple
        ``(X_train, Y_train, X_test, Y_test)``.
    n_jobs : int
        Threads for fit and prediction.
    train_rows : int
        Also measure the first this many training rows (0: none).
    widths : iterable of int
        Also measure the final P@k with this many candidates re-scored.

    Returns
    -------
    dict
        Sizes, fit seconds by phase, resolved settings, tree sizes, and a
        :func:`rows_report` per measured split.
    """
    X_train, Y_train, X_test, Y_test = data
    model = xmltree.LdSM(random_state=0, n_jobs=n_jobs)
    start = time.perf_counter()
    model.fit(X_train, Y_train)
    report = {"train rows": X_train.shape[0], "test rows": X_test.shape[0],
              "labels": Y_train.shape[1], "features": X_train.shape[1],
              "fit s": time.perf_counter() - start, "fit seconds": model.fit_seconds_,
              "resolved params": model.resolved_params_, "trees": tree_report(model)}
    forest = histogram_forest(model).forest
    splits = {"test": (X_test, Y_test)}
    if train_rows:
        splits["train"] = (X_train[:train_rows], Y_train[:train_rows])
    report["splits"] = {name: rows_report(model, forest, X, Y, n_jobs, widths)
                        for name, (X, Y) in splits.items()}
    return report


# ----------------------------------------------------------------------------- output


#: Columns of the printed table, in order.
TABLE_KEYS = (*(f"recall@{k}" for k in RECALL_KS), "recall@reached", "rows recalled",
              *(f"{kind} P@{k}" for k in PRECISION_KS
                for kind in ("histogram", "oracle", "final", "recalled")),
              "final/oracle P@1", "final/oracle P@5")


def print_report(dataset: str, report: dict) -> None:
    """One table (a column per measured split) and the model's sizes, for the terminal."""
    print(f"\n{dataset}: {report['train rows']} train rows, {report['test rows']} test rows, "
          f"{report['labels']} labels, fit {report['fit s']:.0f} s")
    splits = report["splits"]
    print("| % | " + " | ".join(splits) + " |")
    print("|---" * (len(splits) + 1) + "|")
    for key in TABLE_KEYS:
        print(f"| {key} | " + " | ".join(f"{100 * rows[key]:.2f}" for rows in splits.values())
              + " |")
    print("| leaves reached per tree, mean (p90) | " + " | ".join(
        "{mean:.2f} ({p90:.0f})".format(**rows["leaves reached per tree"])
        for rows in splits.values()) + " |")
    for key in (key for key in next(iter(splits.values())) if "candidates" in key):
        print(f"| final {key} | " + " | ".join(f"{100 * rows[key]:.2f}"
                                                for rows in splits.values()) + " |")
    phases = ", ".join(f"{name} {seconds:.0f}" for name, seconds in
                       report["fit seconds"].items())
    print(f"fit seconds by phase: {phases}")
    for name, values in report["trees"].items():
        print(f"{name}: " + ", ".join(f"{stat} {value:.1f}" for stat, value in values.items()))
    settings = report["resolved params"]
    print("resolved: " + ", ".join(f"{name}={settings[name]}" for name in sorted(settings)))


def main(argv=None) -> dict:
    """Run the diagnosis of every ``--datasets`` entry; return the JSON report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-home", type=Path, default=DEFAULT_DATA_HOME)
    parser.add_argument("--datasets", nargs="+", default=["amazon670k-shape@0.1"],
                        help="dataset names as bench_ldsm.py takes them")
    parser.add_argument("--train-rows", type=int, default=0,
                        help="also measure this many training rows (the first ones)")
    parser.add_argument("--wider-candidates", type=int, nargs="*", default=[],
                        help="also predict re-scoring this many candidates (same fit)")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--json", type=Path, help="write the report here")
    args = parser.parse_args(argv)
    results = {}
    for dataset in args.datasets:
        data = load_benchmark_data(args.data_home, dataset)
        results[dataset] = diagnose(data, args.n_jobs, args.train_rows,
                                    args.wider_candidates)
        print_report(dataset, results[dataset])
        del data
    if args.json:
        write_json(args.json, {"datasets": results})
    return results


if __name__ == "__main__":
    main()
