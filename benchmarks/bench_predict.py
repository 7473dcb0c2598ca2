"""LdSM prediction speed: ms per example of ``LdSM.predict(X, k)`` by dataset, ensemble size
and thread count.

Models are trained once with ``LdSM(n_trees=..., random_state=0)`` and cached in
``--cache`` (a directory under the system temporary directory by default), so repeated runs
only time prediction. Each timing is the best of ``--repeats`` runs over the whole test set.

Examples
--------
    python benchmarks/bench_predict.py              # delicious + bibtex, 10 and 50 trees
    python benchmarks/bench_predict.py --datasets delicious --n-trees 50 --threads 2
    python benchmarks/bench_predict.py --datasets debtags amazon670k-shape@0.1 --n-trees 10
    python benchmarks/bench_predict.py --json predict.json --dump-dir outputs/
    python benchmarks/bench_predict.py --datasets bibtex --n-trees 50 --max-nodes 2000 \
        --leaf-scores frequency --leaf-aggregation sum

``--dump-dir`` also saves the predicted labels and scores of every configuration, so two
builds can be checked for bit-identical results. On a shared machine, ``--clock cpu`` times
the process's CPU seconds (all threads) instead of wall time: less sensitive to other jobs,
and run against an older build (``PYTHONPATH=old/checkout``) it gives a speed ratio.
``--max-nodes`` and ``--leaf-scores`` train (and cache) models with those settings;
``--leaf-aggregation sum`` times them with that prediction setting
(``xmltree.ldsm.merge`` of the one model rebuilds its forest with it).
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import DEFAULT_DATA_HOME, load_benchmark_data, write_json

import xmltree
from xmltree.ldsm import merge

DEFAULT_CACHE = Path(tempfile.gettempdir()) / "xmltree-bench-predict"

logger = logging.getLogger("bench_predict")


def cached_model(cache: Path, name: str, n_trees: int, X_train, Y_train, params: dict):
    """The LdSM of `n_trees` trees on dataset `name` with the training settings `params`
    (defaults for the others), trained once and then loaded."""
    settings = "".join(f"-{key}={value}" for key, value in sorted(params.items()))
    path = cache / f"{name}-ldsm-{n_trees}{settings}.npz"
    if path.exists():
        return xmltree.load(path)
    logger.info("training %d trees on %s", n_trees, name)
    model = xmltree.LdSM(n_trees=n_trees, random_state=0, **params).fit(X_train, Y_train)
    cache.mkdir(parents=True, exist_ok=True)
    model.save(path)
    return model


def best_time(model, X, k: int, repeats: int, clock=time.perf_counter):
    """Best time on `clock` of `repeats` predictions of `X`, and the last prediction."""
    best = float("inf")
    for _ in range(repeats):
        start = clock()
        result = model.predict(X, k=k)
        best = min(best, clock() - start)
    return best, result


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["delicious", "bibtex"])
    parser.add_argument("--n-trees", nargs="+", type=int, default=[10, 50])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="time wall seconds, or CPU seconds of all threads")
    parser.add_argument("--data-home", type=Path, default=DEFAULT_DATA_HOME)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--json", type=Path, help="also write the table as JSON")
    parser.add_argument("--dump-dir", type=Path, help="save predicted labels and scores here")
    parser.add_argument("--max-nodes", type=int, help="train with this node budget")
    parser.add_argument("--leaf-scores", choices=["distribution", "frequency"],
                        help="train with these leaf scores")
    parser.add_argument("--leaf-aggregation", choices=["mean", "sum"],
                        help="predict with this setting (default: the model's own)")
    return parser.parse_args()


def main():
    args = parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    rows = []
    clock = time.perf_counter if args.clock == "wall" else time.process_time
    params = {option: getattr(args, option) for option in ("max_nodes", "leaf_scores")
              if getattr(args, option) is not None}
    print(f"{'dataset':<10} {'trees':>5} {'threads':>7} {'ms/example':>10} ({args.clock})")
    for name in args.datasets:
        X_train, Y_train, X_test, _ = load_benchmark_data(args.data_home, name)
        for n_trees in args.n_trees:
            model = cached_model(args.cache, name, n_trees, X_train, Y_train, params)
            if args.leaf_aggregation is not None:
                model = merge([model.set_params(leaf_aggregation=args.leaf_aggregation)])
            for threads in args.threads:
                model.n_jobs = threads
                seconds, (labels, scores) = best_time(model, X_test, args.k, args.repeats,
                                                      clock)
                ms = 1000 * seconds / X_test.shape[0]
                print(f"{name:<10} {n_trees:>5} {threads:>7} {ms:>10.4f}", flush=True)
                rows.append({"dataset": name, "n_trees": n_trees, "threads": threads,
                             "k": args.k, "n_test": int(X_test.shape[0]), "clock": args.clock,
                             "ms_per_example": ms})
                if args.dump_dir is not None:
                    args.dump_dir.mkdir(parents=True, exist_ok=True)
                    np.savez(args.dump_dir / f"{name}-{n_trees}-{threads}.npz",
                             labels=labels, scores=scores)
    if args.json is not None:
        write_json(args.json, {"rows": rows})


if __name__ == "__main__":
    main()
