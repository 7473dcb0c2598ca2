"""LdSM at scale: cost against the number of labels K, and Amazon-670K-shaped runs.

Two modes, both on synthetic data from :func:`xmltree.datasets.make_synthetic_preset`
(Amazon-670K statistics: D = 135,909, 5.45 labels and ~76 non-zeros per point, Zipf
label frequencies with exponent 0.6):

* **curve** (default): N points fixed (``--n-samples``, default 50,000, of which
  ``--test-fraction`` are held out), K = ``--labels`` (default 10^3 10^4 10^5 10^6).
  Each tree may grow ``min(2 K, --max-nodes)`` nodes, enough for leaves of about one
  label when K is small; with a fixed N the cap, not K, bounds the depth at large K.
* **preset** (``--preset amazon670k-shape --scale S``): the preset at scale S (N and
  K both times S), one run with ``--n-trees`` trees.

For every point: train time (wall, CPU), peak RSS of a forked child (``measure`` from
``bench_ldsm.py``), model size on disk (``model.save``), P@1/3/5, maximum tree depth
against [log_M K, 3 log_M K] (the paper's Figure 2), and prediction ms/example.

Examples
--------
    python benchmarks/bench_scale.py --json scale.json --plots plots/
    python benchmarks/bench_scale.py --labels 1000 10000 --n-samples 20000 --epochs 2
    python benchmarks/bench_scale.py --preset amazon670k-shape --scale 0.1 --n-trees 3
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import tempfile
from pathlib import Path

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ldsm import measure  # noqa: E402

from xmltree.datasets import SYNTHETIC_PRESETS, make_synthetic_preset  # noqa: E402
from xmltree.metrics import inverse_propensity  # noqa: E402

COLUMNS = ["n_samples", "n_labels", "P@1", "P@3", "P@5", "train_s", "train_cpu_s",
           "peak_rss_mb", "model_mb", "max_depth", "depth_low", "depth_high",
           "predict_ms_per_example"]
SHORT = {"n_samples": "N", "n_labels": "K", "train_s": "train s", "train_cpu_s": "cpu s",
         "peak_rss_mb": "RSS MB", "model_mb": "disk MB", "max_depth": "depth",
         "depth_low": "logM K", "depth_high": "3logM K", "predict_ms_per_example": "ms/ex"}


def split(X, Y, test_fraction: float):
    """Last ``test_fraction`` of the rows as the test set (rows are i.i.d.)."""
    n_train = X.shape[0] - max(1, round(test_fraction * X.shape[0]))
    return X[:n_train], Y[:n_train], X[n_train:], Y[n_train:]


def run_ldsm(data, params: dict, timer):
    """Train, save and predict in the measuring child; return top-5 labels and sizes."""
    import xmltree

    X_train, Y_train, X_test, _ = data
    model = xmltree.LdSM(random_state=0, **params)
    with timer("train"):
        model.fit(X_train, Y_train)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "model.npz"
        model.save(path)
        model_mb = path.stat().st_size / 2**20
    with timer("predict"):
        labels, _ = model.predict(X_test, k=5)
    return labels, {"max_depth": int(np.max(model.depth_)),
                    "mean_nodes": float(np.mean(model.n_nodes_)), "model_mb": model_mb}


def run_point(X, Y, params: dict, test_fraction: float) -> dict:
    """One measured LdSM run on (X, Y); adds the data shape and the depth bounds."""
    data = split(X, Y, test_fraction)
    result = measure(lambda d, t: run_ldsm(d, params, t), data, inverse_propensity(data[1]))
    log_m_k = math.log(Y.shape[1]) / math.log(params["arity"])
    result.update(n_samples=X.shape[0], n_labels=Y.shape[1], n_features=X.shape[1],
                  depth_low=log_m_k, depth_high=3 * log_m_k, **params)
    return result


def curve(args, params: dict) -> list[dict]:
    """Measure LdSM for every K in ``args.labels`` at fixed N."""
    base = SYNTHETIC_PRESETS["amazon670k-shape"]
    results = []
    for n_labels in tqdm(args.labels, desc="K", unit="point"):
        preset = dataclasses.replace(base, n_samples=args.n_samples, n_labels=n_labels)
        X, Y = make_synthetic_preset(preset, random_state=args.seed)
        point = dict(params, max_nodes=min(2 * n_labels, args.max_nodes))
        results.append(run_point(X, Y, point, args.test_fraction))
        del X, Y
    return results


def preset_run(args, params: dict) -> list[dict]:
    """Measure LdSM once on a scaled preset."""
    with tqdm(total=2, desc=f"{args.preset} x{args.scale}", unit="step") as bar:
        X, Y = make_synthetic_preset(args.preset, scale=args.scale, random_state=args.seed)
        bar.update(1)
        result = run_point(X, Y, dict(params, max_nodes=args.max_nodes), args.test_fraction)
        bar.update(1)
    result.update(preset=args.preset, scale=args.scale)
    return [result]


def print_table(title: str, results: list[dict]) -> None:
    print(f"\n{title}")
    print("".join(f"{SHORT.get(c, c):>9}" for c in COLUMNS))
    for result in results:
        cells = [100 * result[c] if "@" in c else result[c] for c in COLUMNS]
        print("".join(f"{v:>9.0f}" if abs(v) >= 1000 else f"{v:>9.3f}" if v < 1
                      else f"{v:>9.2f}" for v in cells))


def plot(results: list[dict], directory: Path) -> None:
    """Depth against K with the paper's bounds, and ms/example, RSS and size against K."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    k = np.array([r["n_labels"] for r in results], dtype=float)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(k, [r["max_depth"] for r in results], "o-", label="max depth")
    ax.fill_between(k, [r["depth_low"] for r in results], [r["depth_high"] for r in results],
                    alpha=0.2, label="[log_M K, 3 log_M K]")
    ax.set(xscale="log", xlabel="labels K", ylabel="tree depth")
    ax.legend()
    fig.tight_layout()
    fig.savefig(directory / "scale_depth_vs_labels.png", dpi=120)
    plt.close(fig)
    panels = (("predict_ms_per_example", "prediction ms/example"),
              ("peak_rss_mb", "peak RSS MB"), ("model_mb", "model MB on disk"))
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.5))
    for ax, (key, label) in zip(axes, panels):
        ax.plot(k, [r[key] for r in results], "o-")
        ax.set(xscale="log", xlabel="labels K", ylabel=label)
    fig.tight_layout()
    fig.savefig(directory / "scale_cost_vs_labels.png", dpi=120)
    plt.close(fig)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(SYNTHETIC_PRESETS),
                        help="run one scaled preset instead of the curve over K")
    parser.add_argument("--scale", type=float, default=0.1, help="preset scale (default 0.1)")
    parser.add_argument("--labels", type=int, nargs="+", default=[10**3, 10**4, 10**5, 10**6])
    parser.add_argument("--n-samples", type=int, default=50_000, help="curve: points")
    parser.add_argument("--test-fraction", type=float, default=0.2)
    parser.add_argument("--n-trees", type=int, default=1)
    parser.add_argument("--arity", type=int, default=2)
    parser.add_argument("--max-nodes", type=int, default=20_000,
                        help="node cap per tree (curve: min(2 K, this))")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write all results here")
    parser.add_argument("--plots", type=Path, help="write PNG plots to this directory")
    args = parser.parse_args(argv)
    params = {"n_trees": args.n_trees, "arity": args.arity, "epochs": args.epochs,
              "n_jobs": args.n_jobs}

    if args.preset:
        results = preset_run(args, params)
        print_table(f"{args.preset}, scale {args.scale}, {args.n_trees} trees", results)
    else:
        results = curve(args, params)
        print_table(f"K curve, N = {args.n_samples}, {args.n_trees} trees", results)
        if args.plots:
            plot(results, args.plots)
    if args.json:
        args.json.write_text(json.dumps({"settings": vars(args) | {"json": str(args.json),
                                                                   "plots": str(args.plots)},
                                         "results": results}, indent=2))


if __name__ == "__main__":
    main()
