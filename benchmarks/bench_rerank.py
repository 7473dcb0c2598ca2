"""Tail-label re-ranking on top of a base model: P@k, PSP@k, PSnDCG@k and added time.

For each dataset and base model (LdSM, napkinXC's PLT, or candidate files of any
model), the base model predicts its top ``--n-candidates`` labels and
:class:`xmltree.rerank.Reranker` re-orders them. Reported, on the test split:

* P@1/3/5, PSP@1/3/5 and PSnDCG@1/3/5 without re-ranking, with PfastreXML's
  settings (geometric, alpha 0.8, gamma 30, plain centroids of the raw
  features, no propensity weight), with the library defaults
  (``Reranker()``), and, for each tail scorer (nearest centroid, ridge,
  logistic), with the best geometric and the best linear settings of a grid
  over the blend weight, the scorer's own setting (gamma, ridge or logistic
  penalty) and the propensity exponent;
* prediction time per example: base model at k=5, base model at
  k=n_candidates, and re-ranking itself; "added" is
  ``(t(k=n_candidates) + t(rerank) - t(k=5)) / t(k=5)``;
* the time to fit each reported re-ranker on the training split (``fit_s``,
  best of ``--repeat`` like the prediction times).

The grid is tuned without touching the test split: the base model and the
re-ranker are trained on 80% of the training rows, every setting is scored
on the other 20%, and the setting with the best PSP@5 among those losing at
most ``--max-p1-drop`` points of P@1 is kept (one re-ranker is fitted per
gamma or penalty; the blend settings are changed on it). Times are the best of
``--repeat`` runs (the machine may be shared). Propensities use A=0.55,
B=1.5 (``xmltree.metrics.inverse_propensity`` defaults).

Candidate files (``--model file --candidates DIR``): ``DIR/<dataset>.npz``
with int ``labels`` and float ``scores`` arrays of shape (n_test, c), best
first or not, -1 for empty slots; the tuning step is then skipped and no base
time is reported.

Examples
--------
    python benchmarks/bench_rerank.py                                # ldsm, both datasets
    python benchmarks/bench_rerank.py --models ldsm napkinxc-plt --n-trees 10 --json out.json
    python benchmarks/bench_rerank.py --models file --candidates cands/ --datasets delicious
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import DEFAULT_DATA_HOME, load_split, write_json

from xmltree.metrics import evaluate, inverse_propensity
from xmltree.rerank import Reranker

METRIC_KEYS = [f"{m}@{k}" for m in ("P", "PSP", "PSnDCG") for k in (1, 3, 5)]
# Re-ranker settings are Reranker keyword arguments.
PFASTREXML_SETTING = {
    "method": "geometric",
    "alpha": 0.8,
    "gamma": 30.0,
    "feature_weighting": "none",
    "unit_centroids": False,
    "propensity_exponent": 0.0,
}
LIBRARY_DEFAULT_SETTING = {}


def best_time(function, repeat: int):
    """Run ``function()`` `repeat` times; return (last result, smallest wall time)."""
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return result, best


# ----------------------------------------------------------------------------- base models
# A base model is trained by `train(X, Y)`, which returns `predict(X, k) -> (labels, scores)`.


def train_ldsm(X, Y, args):
    from xmltree.ldsm import LdSM

    model = LdSM(n_trees=args.n_trees, random_state=args.seed, n_jobs=args.n_jobs).fit(X, Y)
    return lambda X_eval, k: model.predict(X_eval, k=k)


def train_napkinxc_plt(X, Y, args):
    from napkinxc.models import PLT

    directory = tempfile.mkdtemp(prefix="bench_rerank_plt_")
    model = PLT(directory, threads=args.n_jobs, seed=args.seed)
    model.fit(int32_csr(X), [row.indices.tolist() for row in Y])

    def predict(X_eval, k):
        return pad_pairs(model.predict_proba(int32_csr(X_eval), top_k=k), k)

    return predict


def int32_csr(X):
    """napkinXC reads CSR only with one index dtype (int32 here) and float32 values."""
    import scipy.sparse as sp

    return sp.csr_matrix(
        (X.data.astype(np.float32), X.indices.astype(np.int32), X.indptr.astype(np.int32)),
        shape=X.shape,
    )


def pad_pairs(rows, k: int):
    """Turn lists of (label, score) pairs into (labels, scores) arrays, -1 / 0 padded."""
    labels = np.full((len(rows), k), -1, dtype=np.int32)
    scores = np.zeros((len(rows), k))
    for i, row in enumerate(rows):
        for j, (label, score) in enumerate(row[:k]):
            labels[i, j], scores[i, j] = label, score
    return labels, scores


BASE_MODELS = {"ldsm": train_ldsm, "napkinxc-plt": train_napkinxc_plt}


# ----------------------------------------------------------------------------- evaluation


def blend_grid(args) -> list[dict]:
    """Every blend setting (method, weight, propensity exponent) of the tuning grid."""
    grid = [
        {"method": "geometric", "alpha": alpha, "propensity_exponent": exponent}
        for alpha in args.alphas
        for exponent in args.propensity_exponents
    ]
    grid += [
        {"method": "linear", "beta": beta, "propensity_exponent": exponent}
        for beta in args.betas
        for exponent in args.propensity_exponents
    ]
    return grid


def describe(setting: dict) -> str:
    """Short text of the settings that differ from Reranker's defaults."""
    defaults = Reranker().get_params()
    shown = {name: value for name, value in setting.items() if value != defaults[name]}
    names = {"propensity_exponent": "lambda", "feature_weighting": "fw", "unit_centroids": "unit",
             "tail_scorer": "scorer", "ridge_penalty": "penalty",
             "logistic_penalty": "penalty"}
    text = ", ".join(
        f"{names.get(name, name)}={value:g}" if isinstance(value, float)
        else f"{names.get(name, name)}={value}"
        for name, value in shown.items()
    )
    return text or "library defaults"


def scores_of(Y_true, labels, inv_propensity) -> dict:
    metrics = evaluate(Y_true, labels[:, :5], inv_propensity=inv_propensity)
    return {key: 100.0 * metrics[key] for key in METRIC_KEYS}


def scorer_grid(args) -> list[dict]:
    """Every tail-scorer setting of the tuning grid (fitted once each)."""
    grid = []
    if "centroid" in args.tail_scorers:
        grid += [{"tail_scorer": "centroid", "gamma": gamma} for gamma in args.gammas]
    if "ridge" in args.tail_scorers:
        grid += [{"tail_scorer": "ridge", "ridge_penalty": p} for p in args.ridge_penalties]
    if "logistic" in args.tail_scorers:
        grid += [
            {"tail_scorer": "logistic", "logistic_penalty": p} for p in args.logistic_penalties
        ]
    return grid


def tune(X, Y, train, args) -> tuple[dict, list[dict]]:
    """Pick the best setting per tail scorer and blend on a held-out 20% of the training rows."""
    rng = np.random.default_rng(args.seed)
    held_out = rng.random(X.shape[0]) < 0.2
    X_fit, Y_fit, X_val, Y_val = X[~held_out], Y[~held_out], X[held_out], Y[held_out]
    inv_propensity = inverse_propensity(Y_fit)
    labels, scores = train(X_fit, Y_fit, args)(X_val, args.n_candidates)
    base = scores_of(Y_val, labels, inv_propensity)
    grid_rows = []
    best = {}
    for scorer in scorer_grid(args):
        reranker = Reranker(**scorer, n_candidates=args.n_candidates).fit(X_fit, Y_fit)
        for blend in blend_grid(args):
            ranked, _ = reranker.set_params(**blend).rerank_predictions(
                X_val, labels, scores, k=5
            )
            result = scores_of(Y_val, ranked, inv_propensity)
            setting = {**blend, **scorer}
            grid_rows.append({"setting": setting, **result})
            allowed = result["P@1"] >= base["P@1"] - args.max_p1_drop
            name = f"{scorer['tail_scorer']}-{setting['method']}"
            if allowed and (name not in best or result["PSP@5"] > best[name][1]["PSP@5"]):
                best[name] = (setting, result)
    return {name: setting for name, (setting, _) in best.items()}, [
        {"setting": "none", **base},
        *grid_rows,
    ]


def evaluate_model(data, model_name, args) -> list[dict]:
    """Train on the full training split; score every reported setting on the test split."""
    X_train, Y_train, X_test, Y_test = data
    inv_propensity = inverse_propensity(Y_train)
    settings = {"pfastrexml": PFASTREXML_SETTING, "default": LIBRARY_DEFAULT_SETTING}
    tuning_rows = []
    if model_name == "file":
        labels, scores = load_candidates(args.candidates, args.current_dataset)
        times = {"base_k5_ms": float("nan"), "base_kc_ms": float("nan")}
    else:
        train = BASE_MODELS[model_name]
        if args.tune:
            tuned, tuning_rows = tune(X_train, Y_train, train, args)
            settings.update({f"tuned-{name}": setting for name, setting in tuned.items()})
        predict = train(X_train, Y_train, args)
        _, t_k5 = best_time(lambda: predict(X_test, 5), args.repeat)
        (labels, scores), t_kc = best_time(lambda: predict(X_test, args.n_candidates), args.repeat)
        n = X_test.shape[0]
        times = {"base_k5_ms": 1e3 * t_k5 / n, "base_kc_ms": 1e3 * t_kc / n}
    rows = [{"setting": "none", **scores_of(Y_test, labels, inv_propensity), **times}]
    for name, setting in settings.items():
        reranker, t_fit = best_time(
            lambda s=setting: Reranker(**s, n_candidates=args.n_candidates).fit(X_train, Y_train),
            args.repeat,
        )
        (ranked, _), t_rerank = best_time(
            lambda r=reranker: r.rerank_predictions(X_test, labels, scores, k=5), args.repeat
        )
        rerank_ms = 1e3 * t_rerank / X_test.shape[0]
        added = (times["base_kc_ms"] + rerank_ms - times["base_k5_ms"]) / times["base_k5_ms"]
        rows.append(
            {
                "setting": name,
                "params": setting,
                **scores_of(Y_test, ranked, inv_propensity),
                **times,
                "rerank_ms": rerank_ms,
                "added_percent": 100.0 * added,
                "fit_s": t_fit,
            }
        )
    for row in rows:
        row["model"] = model_name
    return rows, tuning_rows


def load_candidates(directory: Path, dataset: str):
    with np.load(directory / f"{dataset}.npz", allow_pickle=False) as archive:
        return archive["labels"].astype(np.int32), archive["scores"].astype(np.float64)


def print_table(dataset: str, rows: list[dict]) -> None:
    columns = METRIC_KEYS + ["base_k5_ms", "base_kc_ms", "rerank_ms", "added_percent", "fit_s"]
    short = {
        "base_k5_ms": "t@5 ms",
        "base_kc_ms": "t@c ms",
        "rerank_ms": "rr ms",
        "added_percent": "added%",
        "fit_s": "fit s",
    }
    print(f"\n{dataset}")
    print(f"{'model':<14}{'setting':<60}" + "".join(f"{short.get(c, c):>9}" for c in columns))
    for row in rows:
        setting = row["setting"]
        if setting != "none":
            setting = f"{setting} ({describe(row['params'])})"
        cells = "".join(
            f"{row.get(c, float('nan')):>9.3f}"
            if c.endswith(("ms", "_s"))
            else f"{row.get(c, float('nan')):>9.2f}"
            for c in columns
        )
        print(f"{row['model']:<14}{setting:<60}{cells}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-home", type=Path, default=DEFAULT_DATA_HOME)
    parser.add_argument("--datasets", nargs="+", default=["bibtex", "delicious"])
    parser.add_argument("--models", nargs="+", default=["ldsm"], choices=[*BASE_MODELS, "file"])
    parser.add_argument("--candidates", type=Path, help="directory of <dataset>.npz files")
    parser.add_argument("--n-trees", type=int, default=10, help="LdSM ensemble size")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--n-candidates", type=int, default=100)
    parser.add_argument(
        "--alphas", type=float, nargs="+", default=[0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    )
    parser.add_argument("--betas", type=float, nargs="+", default=[0.2, 0.4, 0.6, 0.8])
    parser.add_argument(
        "--gammas", type=float, nargs="+", default=[1.0, 2.0, 5.0, 10.0, 30.0, 50.0]
    )
    parser.add_argument("--tail-scorers", nargs="+", default=["centroid", "ridge"],
                        choices=["centroid", "ridge", "logistic"])
    parser.add_argument("--ridge-penalties", type=float, nargs="+", default=[0.3, 1.0, 3.0])
    parser.add_argument(
        "--logistic-penalties", type=float, nargs="+", default=[0.1, 0.3, 1.0, 3.0]
    )
    parser.add_argument(
        "--propensity-exponents", type=float, nargs="+",
        default=[0.0, 0.25, 0.5, 1.0, 1.5, 2.0],
    )
    parser.add_argument(
        "--max-p1-drop",
        type=float,
        default=1.0,
        help="largest P@1 loss (points) a tuned setting may cost",
    )
    parser.add_argument("--no-tune", dest="tune", action="store_false")
    parser.add_argument("--repeat", type=int, default=3, help="timing runs (best kept)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write all rows to this file")
    args = parser.parse_args(argv)
    if "file" in args.models and args.candidates is None:
        parser.error("--models file needs --candidates DIR")

    results = {
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "datasets": {},
    }
    for dataset in args.datasets:
        args.current_dataset = dataset
        data = load_split(args.data_home, dataset)
        rows, tuning = [], {}
        for model_name in args.models:
            model_rows, tuning[model_name] = evaluate_model(data, model_name, args)
            rows += model_rows
        print_table(dataset, rows)
        results["datasets"][dataset] = {"test": rows, "validation_grid": tuning}
    if args.json:
        write_json(args.json, results)


if __name__ == "__main__":
    main()
