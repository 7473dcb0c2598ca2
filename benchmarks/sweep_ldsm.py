"""Hyper-parameter sweep of LdSM on the shared benchmark splits.

Trains one ensemble per setting (the grid over the ``--set`` options given;
every other parameter keeps ``xmltree.LdSM``'s default) and prints P@1/3/5
and PSP@1/3/5 with the training time, so that the defaults can be chosen from
numbers. With ``--holdout F``, a random fraction F of the training rows (seed
0, or each of ``--holdout-seed``) is held out and scored instead of the test
split, so that settings are chosen without it. A setting that fits a
re-ranker (``--set rerank=True``: ``xmltree.rerank.Reranked`` behind the LdSM, its
fit counted in the time) is scored on its re-ranked predictions. The
last table gives, per setting, the mean over splits and seeds of each dataset,
and their standard deviation when there are several.

Examples
--------
    python benchmarks/sweep_ldsm.py --datasets bibtex --set n_trees=3,10 --set epochs=1,3
    python benchmarks/sweep_ldsm.py --datasets yahoo_arts rcv1sub1 --holdout 0.2 \\
        --holdout-seed 0 1 2 --set histogram_weight=0.2,0.3 --set feature_scaling=tfidf,l2
    python benchmarks/sweep_ldsm.py --datasets delicious --set leaf_model=histogram \\
        --set leaf_scores=distribution,frequency --set leaf_aggregation=mean,sum
    python benchmarks/sweep_ldsm.py --datasets yahoo_arts --set rerank=False,True \\
        --seeds 0 1 2 3 4 5 6 7 8 9
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from _common import DEFAULT_DATA_HOME, load_benchmark_data, write_json

import xmltree
from xmltree.metrics import evaluate, inverse_propensity
from xmltree.rerank import Reranked, make_reranker

REPORTED = ("P@1", "P@3", "P@5", "PSP@1", "PSP@3", "PSP@5")


def holdout_split(X, Y, fraction: float, seed: int = 0):
    """Split the training rows at random: (X_fit, Y_fit, X_held, Y_held)."""
    order = np.random.default_rng(seed).permutation(X.shape[0])
    n_held = round(fraction * X.shape[0])
    held, fit = np.sort(order[:n_held]), np.sort(order[n_held:])
    return X[fit], Y[fit], X[held], Y[held]


def parse_setting(text: str) -> tuple[str, list]:
    """``"name=v1,v2"`` -> ``(name, [v1, v2])``, values typed like LdSM's default.

    Raises
    ------
    argparse.ArgumentTypeError
        For an unknown parameter or a value of the wrong type.
    """
    name, _, values = text.partition("=")
    defaults = xmltree.LdSM().get_params()
    for fixed in ("random_state", "n_jobs", "verbose"):  # set by the script's own options
        defaults.pop(fixed)
    if name not in defaults or not values:
        raise argparse.ArgumentTypeError(
            f"--set takes NAME=V1,V2,... with NAME one of {sorted(defaults)}; got {text!r}")
    return name, [_typed(value, defaults[name], name) for value in values.split(",")]


def _typed(value: str, default, name: str):
    if value == "None":
        return None
    try:
        if isinstance(default, bool):
            return {"true": True, "false": False}[value.lower()]
        if isinstance(default, int):
            return int(value)
        if isinstance(default, float):
            return float(value)
    except (KeyError, ValueError):
        raise argparse.ArgumentTypeError(
            f"--set {name}: {value!r} is not of type {type(default).__name__}") from None
    # Parameters whose default is None or a word may also take numbers
    # (max_nodes, descent_threshold).
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-home", type=Path, default=DEFAULT_DATA_HOME)
    parser.add_argument("--datasets", nargs="+", default=["bibtex"],
                        help="registered datasets or synthetic presets as <preset>@<scale>")
    parser.add_argument("--set", dest="settings", type=parse_setting, action="append",
                        default=[], metavar="NAME=V1,V2",
                        help="values of one LdSM parameter to sweep (repeatable)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0],
                        help="random_state of the ensemble (one run per seed)")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--holdout", type=float, default=0.0,
                        help="score a held-out fraction of the training rows, not the test split")
    parser.add_argument("--holdout-seed", type=int, nargs="+", default=[0],
                        help="seeds of the held-out splits (one sweep per split)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    names = [name for name, _ in args.settings]
    grid = [dict(zip(names, values))
            for values in itertools.product(*(values for _, values in args.settings))]
    rows = []
    for dataset in args.datasets:
        data = load_benchmark_data(args.data_home, dataset)
        for split in (args.holdout_seed if args.holdout > 0 else [None]):
            rows += sweep_split(dataset, data, split, args, grid)
    print_means(rows, grid)
    if args.json:
        write_json(args.json, {"rows": rows})


def sweep_split(dataset: str, data: tuple, split, args, grid: list[dict]) -> list[dict]:
    """Fit and score every setting and seed on one split; print a line each."""
    X_train, Y_train, X_test, Y_test = (
        data if split is None else holdout_split(*data[:2], args.holdout, split))
    inv_propensity = inverse_propensity(Y_train)
    rows = []
    for setting, seed in itertools.product(grid, args.seeds):
        ldsm = {name: value for name, value in setting.items() if name != "rerank"}
        model = xmltree.LdSM(**ldsm, random_state=seed, n_jobs=args.n_jobs)
        start = time.perf_counter()
        model.fit(X_train, Y_train)
        if setting.get("rerank"):  # True, or a dict of Reranker settings
            model = Reranked(model, make_reranker(setting["rerank"])).fit(X_train, Y_train)
        seconds = time.perf_counter() - start
        labels, _ = model.predict_top_k(X_test, k=5)
        result = evaluate(Y_test, labels, inv_propensity=inv_propensity)
        rows.append({"dataset": dataset, "holdout": args.holdout, "holdout_seed": split,
                     "random_state": seed, "setting": setting, "train_s": seconds,
                     **{key: result[key] for key in REPORTED}})
        print(f"{dataset:<18} split {'test' if split is None else split:>4} seed {seed} "
              f"{_describe(setting):<40} "
              + " ".join(f"{100 * result[key]:6.2f}" for key in REPORTED)
              + f"  fit {seconds:6.2f} s", flush=True)
    return rows


def print_means(rows: list[dict], grid: list[dict]) -> None:
    """Per setting and dataset: mean P@1 / P@5 / PSP@5 and fit seconds over splits and
    seeds, with the standard deviations of the three scores over several runs."""
    means = defaultdict(list)
    for row in rows:
        means[_describe(row["setting"]), row["dataset"]].append(row)
    datasets = list(dict.fromkeys(row["dataset"] for row in rows))
    print("\n| setting | " + " | ".join(f"{d} P@1 / P@5 / PSP@5, fit s" for d in datasets)
          + " |")
    print("|---" * (len(datasets) + 1) + "|")
    for setting in grid:
        cells = []
        for dataset in datasets:
            group = means[_describe(setting), dataset]
            scores = 100 * np.array([[r[key] for key in ("P@1", "P@5", "PSP@5")]
                                     for r in group])
            cell = " / ".join(f"{value:.2f}" for value in scores.mean(axis=0))
            if len(group) > 1:
                cell += " (sd " + " / ".join(f"{value:.2f}" for value in scores.std(axis=0)) + ")"
            cells.append(cell + f", {np.mean([r['train_s'] for r in group]):.2f}")
        print(f"| {_describe(setting)} | " + " | ".join(cells) + " |")


def _describe(setting: dict) -> str:
    return " ".join(f"{name}={value}" for name, value in setting.items()) or "defaults"


if __name__ == "__main__":
    main()
