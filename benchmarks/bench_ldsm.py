"""LdSM against napkinXC, omikuji and PECOS on the same data, in the same run.

For every dataset and model: P@1/3/5, nDCG@1/3/5, PSP@1/3/5, training time (wall and CPU),
prediction ms/example, peak resident memory, and for LdSM tree depth and node count. Each
model runs in a forked child process so that its peak memory is its own.

Examples
--------
    python benchmarks/bench_ldsm.py                          # bibtex + delicious, all models
    python benchmarks/bench_ldsm.py --datasets bibtex delicious yahoo_arts \
        stackex_chemistry rcv1sub1 amazon670k-shape@0.1 --markdown   # the defaults vs peers
    python benchmarks/bench_ldsm.py --datasets delicious --models ldsm --n-trees 1 10 50
    python benchmarks/bench_ldsm.py --datasets debtags --models ldsm --verbose  # with its bars
    python benchmarks/bench_ldsm.py --json results.json --plots plots/
    python benchmarks/bench_ldsm.py --suite                  # the development suite, one table
    python benchmarks/bench_ldsm.py --suite --models ldsm napkinxc-plt --repeat 5  # fit ratio
    python benchmarks/bench_ldsm.py --datasets bibtex --n-trees 50 \
        --rerank-param tail_scorer=ridge --rerank-param alpha=0.3 ...   # with re-ranking

Datasets are read from ``--data-home`` (default ``../shared/datasets`` next to the
repository) in the ``<name>/train.txt`` + ``<name>/test.txt`` layout; ``<preset>@<scale>``
(e.g. ``amazon670k-shape@0.1``) generates a synthetic preset instead (seed 0), of which the
first 80% of the rows train. LdSM runs at its defaults unless options say otherwise.

``--suite`` runs every model on ``SUITE`` (``--datasets`` may narrow it) and ends with one
table: per set, LdSM's P@1 / P@5 / PSP@5 beside the best peer's, LdSM's fit time over napkinXC
PLT's and its prediction time over PECOS XR-Linear's, then the sets where LdSM is at least the
best peer per metric and the median fit ratio. Each cell also gives LdSM's lead over that peer
with its standard error over the test rows, the runs compared row by row (a paired error,
far below either score's own), and the table ends with the sets where the best peer leads by
more than two of them. PECOS (``pip install libpecos``) joins the peers when it imports.

``--repeat N`` runs N rounds, every model once per round, and reports each model's run of
the shortest fit: a slow spell of a shared machine then falls on every model alike, and the
fit ratios of one-second fits stop swinging from one command to the next.

A model whose run fails, is killed (by the out-of-memory killer, say) or outgrows
``--memory-limit-mb`` is reported as such (in the tables and under ``"failed"`` in the JSON
report) and the other runs go on: ``--memory-limit-mb 21000`` on a 24 GB machine tells which
model does not fit it.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import tempfile
from pathlib import Path

import numpy as np
from _common import DEFAULT_DATA_HOME, load_benchmark_data, write_json

from xmltree._base import _plain
from xmltree._cli_options import _OPTIONS, _add_option, _none_spelled_out
from xmltree._scaling import FeatureScaler
from xmltree.benchmark import METRIC_KEYS, RunFailed, measure, shortest_fit
from xmltree.cli import _rerank_setting
from xmltree.datasets import write_xc
from xmltree.ldsm._params import LDSM_PARAMS
from xmltree.metrics import inverse_propensity, paired_difference
from xmltree.rerank import Reranked, make_reranker

PEERS = ("napkinxc-plt", "napkinxc-br", "napkinxc-ovr", "omikuji-parabel", "omikuji-bonsai",
         "pecos-xrlinear")

#: The development suite: the eight shared sets and the Amazon-670K shape at scale 0.1.
SUITE = ("bibtex", "delicious", "yahoo_arts", "stackex_chemistry", "rcv1sub1", "debtags",
         "ohsumed", "corel16k001", "amazon670k-shape@0.1")

#: Peers of one classifier per label over every training row (napkinXC BR and OVR): the suite
#: leaves them out on sets of more labels than this, where their fit runs for hours.
ONE_VS_ALL_MAX_LABELS = 10000

#: LdSM options this script defines itself (several tree counts, its thread count).
OWN_OPTIONS = ("n_trees", "n_jobs")


# ----------------------------------------------------------------------------- models
# Each runner trains on (X_train, Y_train), predicts the top 5 of X_test and returns
# (labels (n, 5) int array, extra-info dict); timings are taken around the two phases.


def run_ldsm(data, n_trees, params, n_jobs, timer):
    import xmltree

    X_train, Y_train, X_test, _ = data
    params = dict(params) if n_trees is None else {**params, "n_trees": n_trees}
    rerank = params.pop("rerank", None)
    model = xmltree.LdSM(n_jobs=n_jobs, random_state=0, **params)
    with timer("train"):
        model.fit(X_train, Y_train)
        ranker = model if rerank is None else Reranked(model, make_reranker(rerank)).fit(
            X_train, Y_train)
    with timer("predict"):
        labels, _ = ranker.predict_top_k(X_test, k=5)
    # What the "auto" settings resolved to (C, for one, is chosen at fit).
    resolved = _plain(model.resolved_params_)
    return labels, {"max_depth": int(np.max(model.depth_)),
                    "mean_nodes": float(np.mean(model.n_nodes_)),
                    "fit_seconds": model.fit_seconds_, "resolved_params": resolved}


def run_napkinxc(data, kind, n_jobs, timer):
    from napkinxc.models import BR, OVR, PLT

    X_train, Y_train, X_test, _ = data
    label_lists = [row.indices.tolist() for row in Y_train]
    with tempfile.TemporaryDirectory() as directory:
        model_class = {"plt": PLT, "br": BR, "ovr": OVR}[kind]
        model = model_class(directory, threads=n_jobs or 0, seed=0)
        with timer("train"):
            model.fit(X_train, label_lists)
        with timer("predict"):
            predictions = model.predict(X_test, top_k=5)
    return _pad(predictions), {}


def run_omikuji(data, kind, n_jobs, timer):
    import omikuji

    X_train, Y_train, X_test, _ = data
    hyper = omikuji.Model.default_hyper_param()
    if kind == "bonsai":
        # Bonsai (Khandagale et al. 2019): shallow, wide, unbalanced trees.
        hyper.cluster_k, hyper.max_depth, hyper.cluster_balanced = 100, 3, False
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "train.txt")
        write_xc(path, X_train, Y_train)
        with timer("train"):
            model = omikuji.Model.train_on_data(path, hyper, n_threads=n_jobs)
    with timer("predict"):
        predictions = [
            [label for label, _ in model.predict(list(zip(row.indices.tolist(),
                                                          row.data.tolist())), top_k=5)]
            for row in X_test
        ]
    return _pad(predictions), {}


def run_pecos(data, kind, n_jobs, timer):
    """PECOS XR-Linear (`kind` "xrlinear") at its defaults (PIFA label embedding,
    hierarchical k-means tree), on the rows tf-idf-weighted (count data) or unit-length
    (weighted data) as it expects."""
    from pecos.xmc import Indexer, LabelEmbeddingFactory
    from pecos.xmc.xlinear.model import XLinearModel

    X_train, Y_train, X_test, _ = data
    with timer("train"):
        scaler = FeatureScaler("auto").fit(X_train)
        X = scaler.transform(X_train).astype(np.float32)
        Y = Y_train.astype(np.float32).tocsr()
        label_features = LabelEmbeddingFactory.create(Y, X, method="pifa")
        clusters = Indexer.gen(label_features, threads=n_jobs)
        model = XLinearModel.train(X, Y, C=clusters, threads=n_jobs)
    with timer("predict"):
        scores = model.predict(scaler.transform(X_test).astype(np.float32), only_topk=5,
                               threads=n_jobs).tocsr()
    return _top_of_rows(scores), {}


#: The runner of each peer library: ``runner(data, kind, n_jobs, timer)``.
PEER_RUNNERS = {"napkinxc": run_napkinxc, "omikuji": run_omikuji, "pecos": run_pecos}


def _top_of_rows(scores) -> np.ndarray:
    """(n, 5) label ids of each sparse row's largest scores, best first, padded with -1."""
    out = np.full((scores.shape[0], 5), -1, dtype=np.int64)
    for i in range(scores.shape[0]):
        start, stop = scores.indptr[i], scores.indptr[i + 1]
        order = np.argsort(-scores.data[start:stop], kind="stable")[:5]
        out[i, : order.size] = scores.indices[start:stop][order]
    return out


def _pad(rankings) -> np.ndarray:
    """(n, 5) array of label ids from per-row lists, padded with -1."""
    out = np.full((len(rankings), 5), -1, dtype=np.int64)
    for i, row in enumerate(rankings):
        row = [label[0] if isinstance(label, tuple) else label for label in row][:5]
        out[i, : len(row)] = row
    return out


# ------------------------------------------------------------------------------ report


def run_name(run: dict) -> str:
    """A run's name in the tables: its model, and LdSM's ``--n-trees`` when given."""
    return run["model"] if run["n_trees"] is None else f"{run['model']} ({run['n_trees']} trees)"


def print_markdown(results: dict, failed: dict) -> None:
    """One Markdown table of every dataset's runs, for benchmarks/README.md."""
    print("\n| data | model | P@1 | P@3 | P@5 | PSP@5 | train s | ms/example | peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for dataset, rows in results.items():
        for r in rows:
            print(f"| {dataset} | {run_name(r)} | " + " | ".join(
                f"{100 * r[key]:.2f}" for key in ("P@1", "P@3", "P@5", "PSP@5"))
                + f" | {r['train_s']:.2f} | {r['predict_ms_per_example']:.3f}"
                f" | {r['peak_rss_mb']:.0f} |")
        for failure in failed.get(dataset, []):
            print(f"| {dataset} | {run_name(failure)} | did not finish: {failure['reason']} |"
                  + " |" * 6)
    ldsm_runs = [(dataset, r) for dataset, rows in results.items() for r in rows
                 if r["model"] == "ldsm"]
    if ldsm_runs:
        print("\n| data | LdSM fit seconds by phase | nodes per tree | depth |")
        print("|---|---|---|---|")
    for dataset, r in ldsm_runs:
        phases = ", ".join(f"{name} {seconds:.2f}" for name, seconds in r["fit_seconds"].items())
        print(f"| {dataset} | {phases} | {r['mean_nodes']:.0f} | {r['max_depth']} |")


def print_table(dataset: str, rows: list[tuple[str, dict]], failures: list[dict]) -> None:
    columns = METRIC_KEYS + ["train_s", "train_cpu_s", "predict_ms_per_example", "peak_rss_mb"]
    short = {"train_s": "train s", "train_cpu_s": "cpu s", "predict_ms_per_example": "ms/ex",
             "peak_rss_mb": "RSS MB"}
    print(f"\n{dataset}")
    print(f"{'model':<22}" + "".join(f"{short.get(c, c):>8}" for c in columns))
    for name, result in rows:
        cells = [100 * result[c] if "@" in c else result[c] for c in columns]
        print(f"{name:<22}" + "".join(f"{v:>8.2f}" if v < 1000 else f"{v:>8.0f}"
                                       for v in cells))
    for failure in failures:
        print(f"{run_name(failure):<22}did not finish: {failure['reason']}")


def first_run_by_model(runs: list[dict]) -> dict[str, dict]:
    """Each model's first run of one dataset (LdSM's first ``--n-trees``), by model name."""
    by_model = {}
    for run in runs:
        by_model.setdefault(run["model"], run)
    return by_model


#: The scores the suite table sets LdSM against the best peer on.
SUITE_METRICS = ("P@1", "P@5", "PSP@5")

#: Paired standard errors by which a peer must lead for the suite table to count LdSM
#: as clearly behind it: a lead within two is what another split of the rows could undo.
CLEARLY_BEHIND_ERRORS = 2.0


def suite_rows(results: dict) -> list[dict]:
    """Per dataset with LdSM (its first ``--n-trees``) and a peer: for each of
    ``SUITE_METRICS`` ``(LdSM's, the best peer's, which peer)``, ``errors`` (the standard
    error of LdSM's lead over that peer, by metric, NaN where the runs were not paired:
    :func:`pair_with_ldsm`), ``fit_ratio`` (LdSM's
    fit seconds over napkinXC PLT's), ``fit_cpu_ratio`` (the same in CPU seconds, steadier on
    a shared machine) and ``predict_ratio`` (LdSM's prediction ms/example over PECOS
    XR-Linear's), NaN without that peer."""
    rows = []
    for dataset, runs in results.items():
        by_model = first_run_by_model(runs)
        ldsm = by_model.pop("ldsm", None)
        if ldsm is None or not by_model:
            continue
        row = {"dataset": dataset, "errors": {}}
        for key in SUITE_METRICS:
            best = max(by_model, key=lambda model: by_model[model][key])
            row[key] = (ldsm[key], by_model[best][key], best)
            row["errors"][key] = by_model[best].get("vs_ldsm", {}).get(key, (np.nan, np.nan))[1]
        for ratio, peer, cost in (("fit_ratio", "napkinxc-plt", "train_s"),
                                  ("fit_cpu_ratio", "napkinxc-plt", "train_cpu_s"),
                                  ("predict_ratio", "pecos-xrlinear", "predict_ms_per_example")):
            row[ratio] = ldsm[cost] / by_model[peer][cost] if peer in by_model else float("nan")
        rows.append(row)
    return rows


def print_suite(results: dict) -> None:
    """The suite table (Markdown): LdSM beside the best peer per set and metric, the cost
    ratios, the sets where LdSM is at least the best peer, and the median fit ratio over
    the real (not synthetic) sets."""
    rows = suite_rows(results)
    print("\n| data | " + " | ".join(f"{key} LdSM / best peer" for key in SUITE_METRICS)
          + " | fit LdSM / PLT (CPU) | predict LdSM / XR-Linear |")
    print("|---" * (len(SUITE_METRICS) + 3) + "|")
    for row in rows:
        cells = [_suite_cell(*row[key], row["errors"][key]) for key in SUITE_METRICS]
        print(f"| {row['dataset']} | " + " | ".join(cells)
              + f" | {_times(row['fit_ratio'])} ({_times(row['fit_cpu_ratio'])})"
              f" | {_times(row['predict_ratio'])} |")
    wins = ", ".join(f"{key} {sum(row[key][0] >= row[key][1] for row in rows)}"
                     for key in SUITE_METRICS)
    behind = ", ".join(f"{key} {sum(_clearly_behind(row, key) for row in rows)}"
                       for key in SUITE_METRICS)
    real = [row for row in rows if "@" not in row["dataset"]]
    medians = [_finite_median([row[key] for row in real])
               for key in ("fit_ratio", "fit_cpu_ratio")]
    print(f"\nLdSM >= the best peer on {wins} of {len(rows)} sets; median fit ratio "
          f"LdSM / PLT over the {len(real)} real sets {_times(medians[0])} "
          f"(CPU {_times(medians[1])})")
    print(f"LdSM behind the best peer by more than {CLEARLY_BEHIND_ERRORS:g} paired standard "
          f"errors on {behind} sets")


def _times(ratio: float) -> str:
    """A cost ratio as a table cell: "1.23x", or "n/a" where the peer did not run."""
    return "n/a" if np.isnan(ratio) else f"{ratio:.2f}x"


def _finite_median(values: list[float]) -> float:
    """Median of the finite `values`; NaN (without NumPy's warning) when there are none,
    as on sets where napkinXC PLT did not run."""
    finite = [value for value in values if np.isfinite(value)]
    return float(np.median(finite)) if finite else float("nan")


def _suite_cell(ours: float, best: float, peer: str, error: float) -> str:
    """``LdSM / best peer (peer)``, with LdSM's lead and its paired standard error when
    the runs were paired, in points."""
    lead = "" if np.isnan(error) else f"; {100 * (ours - best):+.2f} ± {100 * error:.2f}"
    return f"{100 * ours:.2f} / {100 * best:.2f} ({peer}{lead})"


def _clearly_behind(row: dict, key: str) -> bool:
    """Whether the best peer leads LdSM on `key` by more than ``CLEARLY_BEHIND_ERRORS``
    paired standard errors (never, where the runs were not paired)."""
    ours, best, _ = row[key]
    return bool(best - ours > CLEARLY_BEHIND_ERRORS * row["errors"][key])


def plot(results: dict, directory: Path, arity: int) -> None:
    """P@k against the number of trees, and depth against log_M K."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    for dataset, rows in results.items():
        curve = sorted((r["n_trees"], r) for r in rows if r["model"] == "ldsm")
        if len(curve) < 2:
            continue
        fig, ax = plt.subplots(figsize=(5, 3.5))
        for key in ("P@1", "P@3", "P@5"):
            ax.plot([n for n, _ in curve], [100 * r[key] for _, r in curve], marker="o",
                    label=key)
        ax.set(xlabel="trees", ylabel="%", title=f"LdSM on {dataset}")
        ax.legend()
        fig.tight_layout()
        fig.savefig(directory / f"{dataset}_precision_vs_trees.png", dpi=120)
        plt.close(fig)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for dataset, rows in results.items():
        for r in rows:
            if r["model"] == "ldsm":
                ax.scatter(np.log(r["n_labels"]) / np.log(arity), r["max_depth"], label=dataset)
                break
    grid = np.linspace(1, 12, 10)
    ax.plot(grid, grid, "k--", label="log_M K")
    ax.plot(grid, 3 * grid, "k:", label="3 log_M K")
    ax.set(xlabel="log_M K", ylabel="max tree depth")
    ax.legend()
    fig.tight_layout()
    fig.savefig(directory / "depth_vs_log_labels.png", dpi=120)
    plt.close(fig)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-home", type=Path, default=DEFAULT_DATA_HOME)
    parser.add_argument("--datasets", nargs="+", default=None,
                        help="default: bibtex delicious, or with --suite every SUITE set")
    parser.add_argument("--suite", action="store_true",
                        help="run SUITE (or the --datasets among it) and print the suite table")
    parser.add_argument("--models", nargs="+", default=["ldsm", *PEERS],
                        choices=["ldsm", *PEERS])
    parser.add_argument("--n-trees", type=int, nargs="+", default=[None],
                        help="LdSM ensemble sizes to train (default: LdSM's own)")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--memory-limit-mb", type=float, default=None,
                        help="stop a model's run once its resident memory is above this many "
                        "MiB and report it as not finished (default: no limit)")
    parser.add_argument("--repeat", type=_positive_int, default=1, metavar="N",
                        help="run every model N times, each in a fresh process, and report the "
                        "run of the shortest fit (its fit times in the JSON's train_s_runs): "
                        "fits of a second or two swing from run to run on a shared machine")
    group = parser.add_argument_group("LdSM settings (default: LdSM's own)")
    for name, entries in _OPTIONS.items():
        entries = [entry for entry in entries if entry[0] == "ldsm"]
        if entries and name not in OWN_OPTIONS:
            _add_option(group, name, entries)
    group.add_argument("--verbose", action="store_true",
                       help="LdSM shows its progress bars while it fits, as the CLI does unless "
                       "--quiet (the bars go to /dev/null here): the fit time with them")
    parser.add_argument("--rerank-param", dest="rerank_params", action="append", default=[],
                        metavar="NAME=VALUE",
                        help="fit LdSM with a tail-label re-ranker with this setting (repeatable) "
                        "and predict with re-ranking")
    parser.add_argument("--json", type=Path, help="write all results here")
    parser.add_argument("--markdown", action="store_true",
                        help="also print one Markdown table of all results")
    parser.add_argument("--plots", type=Path, help="write PNG plots to this directory")
    args = parser.parse_args(argv)
    if args.suite:
        unknown = sorted(set(args.datasets or ()) - set(SUITE))
        if unknown:
            parser.error(f"--suite: {unknown} are not suite sets; choose among {list(SUITE)}")
        args.datasets = [name for name in SUITE if name in (args.datasets or SUITE)]
    elif args.datasets is None:
        args.datasets = ["bibtex", "delicious"]
    return args


def _positive_int(text: str) -> int:
    """argparse type: an integer of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def ldsm_params(args: argparse.Namespace) -> dict:
    """The LdSM parameters the options set (the others keep LdSM's defaults)."""
    params = {param.name: getattr(args, param.name) for param in LDSM_PARAMS
              if param.cli and param.name not in OWN_OPTIONS
              and getattr(args, param.name) is not None}
    params = _none_spelled_out(params)
    if args.verbose:
        params["verbose"] = True
    if args.rerank_params:
        params["rerank"] = _rerank_setting(True, args.rerank_params)
    return params


def peers_for(models: list[str], n_labels: int, suite: bool) -> list[str]:
    """The peers to run on a set of `n_labels` labels: the suite leaves out one-vs-all
    peers above ``ONE_VS_ALL_MAX_LABELS`` labels and PECOS when it is not installed."""
    peers = [m for m in models if m != "ldsm"]
    if suite and n_labels > ONE_VS_ALL_MAX_LABELS:
        peers = [m for m in peers if m not in ("napkinxc-br", "napkinxc-ovr")]
    if "pecos-xrlinear" in peers and importlib.util.find_spec("pecos") is None:
        print("pecos-xrlinear left out: PECOS is not installed (pip install libpecos)")
        peers.remove("pecos-xrlinear")
    return peers


def run_dataset(dataset: str, args: argparse.Namespace,
                params: dict) -> tuple[list[tuple[str, dict]], list[dict]]:
    """Measure LdSM (every ``--n-trees``) and the peers on one dataset.

    Returns the (name, result) rows of the runs that finished, and for each of the others
    ``model``, ``n_trees``, ``reason`` (a few words: :class:`xmltree.benchmark.RunFailed`)
    and ``message``.
    """
    data = load_benchmark_data(args.data_home, dataset)
    inv_propensity = inverse_propensity(data[1])
    runs = []
    if "ldsm" in args.models:
        for n_trees in args.n_trees:
            label = "ldsm" if n_trees is None else f"ldsm ({n_trees} trees)"
            runs.append((label, "ldsm", n_trees,
                         lambda d, t, n=n_trees: run_ldsm(d, n, params, args.n_jobs, t)))
    for peer in peers_for(args.models, data[1].shape[1], args.suite):
        library, kind = peer.split("-")
        runs.append((peer, peer, None, lambda d, t, r=PEER_RUNNERS[library], k=kind:
                     r(d, k, args.n_jobs, t)))
    measured, failures = {name: [] for name, *_ in runs}, []
    # Round after round, every model once: a slow spell of the machine falls on all of
    # them, not on one model's repeats. A model that does not finish runs no more rounds.
    for _ in range(args.repeat):
        for name, model, n_trees, runner in runs:
            if name not in measured:
                continue
            try:
                measured[name].append(measure(runner, data, inv_propensity, keep_labels=True,
                                              memory_limit_mb=args.memory_limit_mb))
            except RunFailed as failure:
                print(f"{name} on {dataset} did not finish: {failure}")
                failures.append({"model": model, "n_trees": n_trees, "reason": failure.reason,
                                 "message": str(failure)})
                del measured[name]
    rows = []
    for name, model, n_trees, _ in runs:
        if name in measured:
            result = shortest_fit(measured[name])
            result.update(model=model, n_trees=n_trees, n_labels=int(data[1].shape[1]),
                          params=params)
            rows.append((name, result))
    pair_with_ldsm([result for _, result in rows], data[3], inv_propensity)
    return rows, failures


def pair_with_ldsm(results: list[dict], Y_test, inv_propensity) -> None:
    """Give every run but LdSM's first ``vs_ldsm``: per ``SUITE_METRICS`` key, LdSM's lead
    over it on the same test rows and the lead's standard error
    (:func:`xmltree.metrics.paired_difference`); then drop every run's ``top_labels``."""
    ldsm = next((result for result in results if result["model"] == "ldsm"), None)
    metrics = [(key, *key.split("@")) for key in SUITE_METRICS]
    for result in results:
        if ldsm is not None and result is not ldsm:
            result["vs_ldsm"] = {key: paired_difference(
                Y_test, ldsm["top_labels"], result["top_labels"], metric, int(k),
                inv_propensity=inv_propensity) for key, metric, k in metrics}
    for result in results:
        result.pop("top_labels", None)


def main(argv=None) -> None:
    args = parse_args(argv)
    params = ldsm_params(args)
    results: dict[str, list[dict]] = {}
    failed: dict[str, list[dict]] = {}
    for dataset in args.datasets:
        rows, failures = run_dataset(dataset, args, params)
        print_table(dataset, rows, failures)
        results[dataset] = [r for _, r in rows]
        if failures:
            failed[dataset] = failures
    if args.markdown:
        print_markdown(results, failed)
    if args.suite:
        print_suite(results)
    if args.json:
        write_json(args.json, {"datasets": results, **({"failed": failed} if failed else {})})
    if args.plots:
        plot(results, args.plots, params.get("arity", 2))


if __name__ == "__main__":
    main()
