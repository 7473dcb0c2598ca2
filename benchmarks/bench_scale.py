"""LdSM at scale: cost against the number of labels K, and Amazon-670K-shaped runs.

A thin command line over :mod:`xmltree.benchmark` (``xmltree benchmark`` runs the same
code with a JSON + PNG report). Two modes, both on synthetic data from
:func:`xmltree.datasets.make_synthetic_preset` (Amazon-670K statistics: D = 135,909,
5.45 labels and ~76 non-zeros per point, Zipf label frequencies with exponent 0.6):

* **curve** (default): N points fixed (``--n-samples``, default 50,000, of which
  ``--test-fraction`` are held out), K = ``--labels`` (default 10^3 10^4 10^5 10^6).
  Each tree may grow ``min(2 K, --max-nodes)`` nodes, enough for leaves of about one
  label when K is small; with a fixed N the cap, not K, bounds the depth at large K.
* **preset** (``--preset amazon670k-shape --scale S [S ...]``): the preset at each
  scale S (N and K both times S), with ``--n-trees`` trees.

For every point: train time (wall, CPU), peak RSS of a forked child, model size on disk
(``model.save``), P@1/3/5, maximum tree depth against [log_M K, 3 log_M K] (the paper's
Figure 2), and prediction ms/example.

Examples
--------
    python benchmarks/bench_scale.py --json scale.json --plots plots/
    python benchmarks/bench_scale.py --labels 1000 10000 --n-samples 20000 --epochs 2
    python benchmarks/bench_scale.py --preset amazon670k-shape --scale 0.1 0.2 --n-trees 3
"""

from __future__ import annotations

import argparse
from pathlib import Path

from xmltree.benchmark import format_table, label_curve, plot_results, preset_runs, write_report
from xmltree.datasets import SYNTHETIC_PRESETS


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(SYNTHETIC_PRESETS),
                        help="run one scaled preset instead of the curve over K")
    parser.add_argument("--scale", type=float, nargs="+", default=[0.1],
                        help="preset scales (default 0.1)")
    parser.add_argument("--labels", type=int, nargs="+", default=[10**3, 10**4, 10**5, 10**6])
    parser.add_argument("--n-samples", type=int, default=50_000, help="curve: points")
    parser.add_argument("--test-fraction", type=float, default=0.2)
    parser.add_argument("--n-trees", type=int, default=1)
    parser.add_argument("--arity", type=int, default=2)
    parser.add_argument("--max-nodes", type=int, default=20_000,
                        help="node cap per tree (curve: min(2 K, this))")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--max-weights-per-regressor", type=int, default=None)
    parser.add_argument("--max-weights-per-example", type=float, default=None)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write all results here")
    parser.add_argument("--plots", type=Path, help="write PNG plots to this directory")
    args = parser.parse_args(argv)
    params = {"n_trees": args.n_trees, "arity": args.arity, "max_nodes": args.max_nodes,
              "epochs": args.epochs, "n_jobs": args.n_jobs}
    for name in ("max_weights_per_regressor", "max_weights_per_example"):
        if getattr(args, name) is not None:  # None: the LdSM default
            params[name] = getattr(args, name)
    common = {"test_fraction": args.test_fraction, "seed": args.seed}

    if args.preset:
        results = preset_runs(args.preset, args.scale, params, **common)
        print(f"\n{args.preset}, scales {args.scale}, {args.n_trees} trees")
        against = "n_samples"
    else:
        results = label_curve(args.labels, params, n_samples=args.n_samples, **common)
        print(f"\nK curve, N = {args.n_samples}, {args.n_trees} trees")
        against = "n_labels"
    print(format_table(results))
    if args.plots:
        plot_results(results, args.plots, against=against)
    if args.json:
        write_report(args.json, vars(args), results)


if __name__ == "__main__":
    main()
