"""LOMTree against Vowpal Wabbit ``--log_multi`` and a one-against-all baseline.

Vowpal Wabbit's ``--log_multi`` is the LOMtree authors' own implementation. The
one-against-all baseline is scikit-learn's ``SGDClassifier`` (hinge loss, one
linear model per class), run only up to ``--ova-max-classes`` classes because
its cost grows linearly with k. All models make the same number of passes.

Data:

* ``synthetic``: ``xmltree.datasets.make_synthetic(..., multiclass=True)`` for
  every k in ``--classes`` (``--train-per-class`` training rows per class,
  at least 10,000, and ``--n-test`` test rows);
* ``bibtex`` / ``delicious`` from ``--data-home``: each row keeps its most
  frequent label (by training-set frequency); rows without labels are dropped.

Reported per model: accuracy, training seconds, prediction microseconds per
example (single thread; for VW this includes one Python call per example), and
for LOMTree the one-off ranking of the leaf histograms done by the first
prediction (``prepare_s``), the mean number of regressors evaluated per test
example (``test_path``, the machine-independent cost of a prediction), the
depth of the deepest leaf and the mean leaf depth (weighted by training
examples) next to log2(k).

Examples
--------
    python benchmarks/bench_lomtree.py
    python benchmarks/bench_lomtree.py --datasets synthetic --classes 100 300 1000 3000 10000
    python benchmarks/bench_lomtree.py --passes 1 3 --json lomtree.json
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from pathlib import Path

import numpy as np
from _common import DEFAULT_DATA_HOME, write_json

from xmltree.datasets import load_dataset, make_synthetic
from xmltree.lomtree import LOMTree, to_multiclass

MODELS = ("lomtree", "vw-log-multi", "ova-sgd")
SEED = 0


# ----------------------------------------------------------------------------- data


def synthetic_split(n_classes: int, seed: int, args):
    """Train and test sets of one synthetic multiclass problem with ``n_classes``."""
    n_train = max(10_000, args.train_per_class * n_classes)
    X, y = make_synthetic(n_train + args.n_test, args.n_features, n_classes,
                          avg_features=args.avg_features, noise=args.noise,
                          multiclass=True, random_state=seed)[:2]
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def validation_split(data, fraction: float):
    """Split off the last ``fraction`` of the training rows as a validation set."""
    X_train, y_train = data[:2]
    n_fit = X_train.shape[0] - int(round(fraction * X_train.shape[0]))
    return X_train[:n_fit], y_train[:n_fit], X_train[n_fit:], y_train[n_fit:]


def most_frequent_label_split(data_home: Path, name: str):
    """A multiclass version of an XC dataset: each row's most frequent label."""
    (X_train, Y_train), (X_test, Y_test) = load_dataset(name, data_home, subset="both")
    frequency = np.asarray(Y_train.sum(axis=0)).ravel()
    y_train, train_rows = to_multiclass(Y_train, rule="most_frequent", label_counts=frequency)
    y_test, test_rows = to_multiclass(Y_test, rule="most_frequent", label_counts=frequency)
    return X_train[train_rows], y_train, X_test[test_rows], y_test


# ----------------------------------------------------------------------------- models
# Each runner returns (predicted classes, train seconds, predict seconds, extra
# columns); prediction is timed as the best of --repeats runs, as it is short
# and the machine may be shared.


def best_time(function, repeats: int):
    """Return ``(result, seconds)``: the result of ``function()`` and its fastest run."""
    best = math.inf
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return result, best


def make_lomtree(passes, beam_scale, args):
    return LOMTree(epochs=passes, learning_rate=args.learning_rate, loss=args.loss,
                   beam_width=args.beam_width, beam_scale=beam_scale,
                   swap_resistance=args.swap_resistance, random_state=SEED)


def choose_beam_scale(data, passes, args):
    """Return the beam scale to test with and the validation accuracy of each candidate.

    With several ``--beam-scales``, a tree trained with the same passes on
    the first rows of the training set is evaluated on the last
    ``--tune-fraction`` of them for every candidate (the scale acts at
    prediction only, so one tree serves all), and the most accurate
    candidate wins (ties: the first listed). The test set is not touched.
    """
    if len(args.beam_scales) == 1 or args.beam_width == 1:
        return args.beam_scales[0], {}
    X_fit, y_fit, X_valid, y_valid = validation_split(data, args.tune_fraction)
    model = make_lomtree(passes, args.beam_scales[0], args).fit(X_fit, y_fit)
    accuracy = {}
    for scale in args.beam_scales:
        model.beam_scale = scale
        accuracy[scale] = round(float(np.mean(model.predict(X_valid) == y_valid)), 4)
    return max(args.beam_scales, key=lambda scale: accuracy[scale]), accuracy


def run_lomtree(data, passes, args):
    X_train, y_train, X_test, _ = data
    beam_scale, tuning = choose_beam_scale(data, passes, args)
    model = make_lomtree(passes, beam_scale, args)
    start = time.perf_counter()
    model.fit(X_train, y_train)
    train_seconds = time.perf_counter() - start
    # The first prediction ranks every node's class histogram once (cached
    # until the next training call); it is reported apart as prepare_s.
    start = time.perf_counter()
    model.predict(X_test[:1])
    prepare_seconds = time.perf_counter() - start
    predicted, predict_seconds = best_time(lambda: model.predict(X_test), args.repeats)
    stats = model.tree_statistics()
    return predicted, train_seconds, predict_seconds, {
        "prepare_s": round(prepare_seconds, 3),
        "test_path": round(float(model.node_depth_[model.apply(X_test)].mean()), 2),
        "depth": stats["depth"],
        "mean_leaf_depth": round(stats["mean_leaf_depth"], 2), "n_swaps": stats["n_swaps"],
        "beam_scale": "-" if args.beam_width == 1 else beam_scale,
        "validation_accuracy": tuning}


def _vw_lines(X, labels=None):
    """Vowpal Wabbit text lines (``label | j:v ...``) for the rows of a CSR matrix."""
    lines = []
    for i in range(X.shape[0]):
        start, end = X.indptr[i], X.indptr[i + 1]
        features = " ".join(f"{j}:{v:.7g}" for j, v in zip(X.indices[start:end],
                                                          X.data[start:end]))
        prefix = "" if labels is None else str(labels[i])
        lines.append(f"{prefix} | {features}")
    return lines


def run_vw_log_multi(data, passes, args):
    import vowpalwabbit

    X_train, y_train, X_test, _ = data
    classes, encoded = np.unique(y_train, return_inverse=True)
    k = max(2, classes.shape[0])
    # VW hashes (feature, node) pairs into one table of 2**bits weights shared by
    # the k - 1 node regressors: give every node room for all features, plus margin.
    bits = min(args.vw_max_bits, math.ceil(math.log2(X_train.shape[1] * k)) + args.vw_extra_bits)
    workspace = vowpalwabbit.Workspace(
        f"--log_multi {k} --swap_resistance {args.swap_resistance:g} -b {bits} "
        f"-l {args.vw_learning_rate:g} --quiet")
    train_lines = _vw_lines(X_train, encoded + 1)
    train_seconds = 0.0
    for _ in range(passes):
        train_seconds += _vw_timed(workspace, workspace.learn, train_lines)[1]
    test_lines = _vw_lines(X_test)
    predict_seconds = math.inf
    for _ in range(max(1, args.repeats)):
        predicted, seconds = _vw_timed(workspace, workspace.predict, test_lines)
        predict_seconds = min(predict_seconds, seconds)
    workspace.finish()
    return classes[np.clip(np.asarray(predicted) - 1, 0, k - 1)], train_seconds, \
        predict_seconds, {"vw_bits": bits}


def _vw_timed(workspace, method, lines, chunk=2000):
    """Apply ``method`` (learn or predict) to every line; return results and seconds.

    Lines are parsed a chunk at a time outside the timed part and the parsed
    examples are handed back to VW afterwards: a parsed VW example takes tens
    of kilobytes, so keeping all of them would need several GB at k = 10,000.
    """
    results, seconds = [], 0.0
    for first in range(0, len(lines), chunk):
        examples = [workspace.parse(line) for line in lines[first:first + chunk]]
        start = time.perf_counter()
        results.extend(method(example) for example in examples)
        seconds += time.perf_counter() - start
        for example in examples:
            workspace.finish_example(example)
    return results, seconds


def run_ova_sgd(data, passes, args):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import SGDClassifier

    X_train, y_train, X_test, _ = data
    model = SGDClassifier(max_iter=passes, tol=None, n_jobs=args.ova_jobs, random_state=SEED)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X_train, y_train)
    train_seconds = time.perf_counter() - start
    predicted, predict_seconds = best_time(lambda: model.predict(X_test), args.repeats)
    return predicted, train_seconds, predict_seconds, {}


RUNNERS = {"lomtree": run_lomtree, "vw-log-multi": run_vw_log_multi, "ova-sgd": run_ova_sgd}


# ----------------------------------------------------------------------------- driver


def datasets(args):
    """Yield ``(name, data seed, n_classes, (X_train, y_train, X_test, y_test))``."""
    for name in args.datasets:
        if name == "synthetic":
            splits = ((f"synthetic-{k}", seed, k, synthetic_split(k, seed, args))
                      for k in args.classes for seed in args.data_seeds)
        else:
            data = most_frequent_label_split(args.data_home, name)
            splits = [(name, "-", int(np.unique(data[1]).shape[0]), data)]
        yield from splits


def run(args) -> list[dict]:
    results = []
    for name, seed, n_classes, data in datasets(args):
        for model in args.models:
            if model == "ova-sgd" and n_classes > args.ova_max_classes:
                continue
            for passes in args.passes:
                predicted, train_s, predict_s, extra = RUNNERS[model](data, passes, args)
                row = {"dataset": name, "seed": seed, "classes": n_classes,
                       "n_train": data[0].shape[0], "n_test": data[2].shape[0],
                       "model": model, "passes": passes,
                       "accuracy": round(float(np.mean(predicted == data[3])), 4),
                       "train_s": round(train_s, 3),
                       "predict_us": round(1e6 * predict_s / max(1, data[2].shape[0]), 2),
                       "log2_k": round(math.log2(n_classes), 2), **extra}
                results.append(row)
                print(format_row(row), flush=True)
    return results


def summarize_seeds(results: list[dict]) -> list[str]:
    """Per (dataset, model, passes) over the data seeds: mean accuracy and, next to VW's
    runs on the same seeds, the mean paired difference with its standard error."""
    vw = {(r["dataset"], r["seed"], r["passes"]): r["accuracy"] for r in results
          if r["model"] == "vw-log-multi"}
    groups: dict[tuple, list[dict]] = {}
    for row in results:
        groups.setdefault((row["dataset"], row["model"], row["passes"]), []).append(row)
    lines = []
    for (name, model, passes), rows in groups.items():
        accuracy = np.array([r["accuracy"] for r in rows])
        line = (f"{name} {model} {passes} pass(es), {len(rows)} seeds: mean accuracy "
                f"{accuracy.mean():.4f} (min {accuracy.min():.4f}, max {accuracy.max():.4f})")
        paired = [(r["accuracy"], vw[name, r["seed"], passes]) for r in rows
                  if (name, r["seed"], passes) in vw]
        if model != "vw-log-multi" and len(paired) > 1:
            gap = 100 * np.array([ours - theirs for ours, theirs in paired])
            line += (f"; minus VW {gap.mean():+.3f} points, standard error "
                     f"{gap.std(ddof=1) / math.sqrt(gap.size):.3f}, ahead on "
                     f"{int(np.sum(gap > 0))}/{gap.size} seeds")
        lines.append(line)
    return lines


COLUMNS = ("dataset", "seed", "classes", "n_train", "model", "passes", "accuracy", "train_s",
           "prepare_s", "predict_us", "test_path", "depth", "mean_leaf_depth", "log2_k",
           "beam_scale")


def format_row(row: dict) -> str:
    return " ".join(f"{str(row.get(c, '-')):>{max(8, len(c))}}" for c in COLUMNS)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["synthetic", "bibtex", "delicious"])
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--classes", nargs="+", type=int, default=[100, 1000, 10000])
    parser.add_argument("--passes", nargs="+", type=int, default=[1])
    parser.add_argument("--data-seeds", nargs="+", type=int, default=[SEED],
                        help="seeds of the synthetic data (one problem per seed and k)")
    parser.add_argument("--train-per-class", type=int, default=20)
    parser.add_argument("--n-test", type=int, default=10_000)
    parser.add_argument("--n-features", type=int, default=1000)
    parser.add_argument("--avg-features", type=float, default=20)
    parser.add_argument("--noise", type=float, default=0.1)
    parser.add_argument("--learning-rate", type=float, default=0.5,
                        help="LOMTree NAG learning rate")
    parser.add_argument("--loss", choices=("hinge", "logistic"), default="hinge",
                        help="LOMTree node regressor loss")
    parser.add_argument("--beam-width", type=int, default=8,
                        help="LOMTree prediction beam (1: the single path of the paper and VW)")
    parser.add_argument("--beam-scales", nargs="+", type=float, default=[2.0],
                        help="LOMTree beam scale c; with several, the best on held-out "
                             "training rows (--tune-fraction)")
    parser.add_argument("--tune-fraction", type=float, default=0.2,
                        help="last fraction of the training rows that --beam-scales is "
                             "chosen on")
    parser.add_argument("--swap-resistance", type=float, default=4)
    parser.add_argument("--vw-learning-rate", type=float, default=0.5,
                        help="VW -l (its default is 0.5)")
    parser.add_argument("--vw-extra-bits", type=int, default=2,
                        help="VW -b is ceil(log2(n_features * k)) plus this")
    parser.add_argument("--vw-max-bits", type=int, default=28, help="cap on VW -b")
    parser.add_argument("--ova-max-classes", type=int, default=1000)
    parser.add_argument("--ova-jobs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3,
                        help="prediction is timed as the best of this many runs")
    parser.add_argument("--data-home", type=Path, default=DEFAULT_DATA_HOME)
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args(argv)
    print(" ".join(f"{c:>{max(8, len(c))}}" for c in COLUMNS))
    results = run(args)
    if len(args.data_seeds) > 1:
        print("\n".join(summarize_seeds(results)))
    if args.json:
        write_json(args.json, {"args": vars(args), "results": results})


if __name__ == "__main__":
    main()
