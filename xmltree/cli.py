"""The ``xmltree`` command line.

Subcommands
-----------
demo       train and evaluate LdSM on a built-in synthetic problem (or on files)
train      fit a model on a data file and save it
predict    write the top-k labels of every row of a data file
info       what a model file holds: learner, settings, structure, sizes, training
evaluate   score a prediction file against true labels
datasets   list the dataset registry, or summarise a data file
benchmark  the scale benchmark on synthetic data with published shapes (JSON report)
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

import numpy as np

from . import __version__
from ._base import label_id_count
from ._cli_files import (
    _check_regular_file,
    _output_path,
    _readable,
    _refuse_overwriting,
)
from ._cli_options import (
    _OPTIONS,
    LEARNERS,
    _add_format_option,
    _add_model_options,
    _add_seed_option,
    _integer_or_word,
    _none_spelled_out,
    _optional,
    _rerank_defaults,
)
from ._kernels._openmp import OPENMP_ENABLED
from .datasets import READERS
from .rerank import Reranked, make_reranker
from .rerank._stage import reranking_stage
from .text import DOCUMENT_FORMATS, WEIGHTINGS
from .text_classifier import TextClassifier

logger = logging.getLogger(__name__)


DEMO_SHAPE = {"n_samples": 12000, "n_features": 2000, "n_labels": 500, "avg_labels": 3.0}


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO,
                        format="%(message)s")
    if not hasattr(args, "handler"):
        parser.print_help()
        return 2
    from .exceptions import DataFormatError, ModelFormatError

    try:
        return args.handler(args) or 0
    except (DataFormatError, ModelFormatError, OSError, ValueError, ImportError) as exc:
        # OSError: a path that is a directory, unwritable, too long, or a
        # special file that must not be replaced.
        problem = str(exc)
    except MemoryError:
        problem = "out of memory"
    print(f"xmltree {args.command}: error: {' '.join(problem.splitlines())}", file=sys.stderr)
    return 1


# --------------------------------------------------------------------------- parser


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="xmltree",
        description="Logarithmic-depth trees for extreme multi-label classification.",
    )
    openmp = "with" if OPENMP_ENABLED else "without"
    parser.add_argument("--version", action="version",
                        version=f"xmltree {__version__} (built {openmp} OpenMP)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress or log output")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add_command in (_add_demo_parser, _add_train_parser, _add_predict_parser,
                        _add_evaluate_parser, _add_info_parser, _add_datasets_parser,
                        _add_benchmark_parser):
        add_command(commands)
    return parser


def _add_demo_parser(commands) -> None:
    demo = commands.add_parser(
        "demo", help="train and evaluate LdSM on a built-in synthetic problem",
        description="Train an LdSM ensemble and report P@k, nDCG@k and PSP@k. Without "
        "--data, uses a synthetic problem of "
        + ", ".join(f"{k}={v}" for k, v in DEMO_SHAPE.items()) + " (80/20 split).",
    )
    demo.add_argument("--data", type=Path, help="training file instead of synthetic data")
    demo.add_argument("--test", type=Path, help="test file (required with --data)")
    _add_format_option(demo)
    _add_model_options(demo, learner="ldsm")
    _add_seed_option(demo)
    demo.set_defaults(handler=_run_demo)


def _add_train_parser(commands) -> None:
    train = commands.add_parser("train", help="fit a model on a data file and save it")
    train.add_argument("data", type=Path,
                       help="training data file (learned-tree and --text: text, one document "
                       "per line, fastText '__label__NAME' prefixes or JSON lines)")
    train.add_argument("--learner", choices=LEARNERS, default=LEARNERS[0],
                       help="ldsm (multi-label, default), lomtree (multiclass: each row's "
                       "most frequent label), learned-tree (text)")
    train.add_argument("--model", type=Path, required=True, help="where to save the model")
    train.add_argument("--test", type=Path, help="also evaluate on this file")
    _add_format_option(train)
    _add_model_options(train)
    _add_seed_option(train)
    _add_text_options(train)
    train.set_defaults(handler=_run_train)


def _add_predict_parser(commands) -> None:
    predict = commands.add_parser("predict", help="predict the top-k labels of a data file")
    predict.add_argument("data", type=Path,
                         help="data file, or - for standard input (its labels are ignored)")
    predict.add_argument("--model", type=Path, required=True, help="a saved model")
    predict.add_argument("--output", type=Path,
                         help="prediction file: header 'N L', then 'label:score ...' per row; "
                         "for a model of text, 'name:score ...' per document (default: "
                         "standard output)")
    predict.add_argument("-k", type=int, default=5,
                         help="labels per row (default 5; at most the model's labels)")
    predict.add_argument("--rerank", action="store_true",
                         help="re-rank with the tail-label re-ranker the model was trained with")
    predict.add_argument("--n-jobs", type=int, default=None,
                         help="threads (default: as the model was trained)")
    _add_format_option(predict)
    predict.add_argument("--text-format", choices=DOCUMENT_FORMATS, default="auto",
                         help="documents of a model of text: fastText lines or JSON lines "
                         "(default: by file name, *.jsonl / *.json are JSON lines; standard "
                         "input: fastText lines)")
    predict.set_defaults(handler=_run_predict)


def _add_evaluate_parser(commands) -> None:
    evaluate = commands.add_parser("evaluate", help="score predictions against true labels")
    evaluate.add_argument("--labels", type=Path, required=True,
                          help="data file holding the true labels")
    evaluate.add_argument("--predictions", type=Path, required=True,
                          help="prediction file written by 'xmltree predict'")
    evaluate.add_argument("--train", type=Path,
                          help="training file, for the label propensities of PSP@k")
    evaluate.add_argument("--propensity", choices=("default", "amazon", "wikipedia"),
                          default="default", help="Jain et al. (A, B) preset")
    evaluate.add_argument("-k", type=int, nargs="+", default=[1, 3, 5], help="cut-offs")
    evaluate.add_argument("--json", action="store_true", help="print JSON")
    _add_format_option(evaluate)
    evaluate.set_defaults(handler=_run_evaluate)


def _add_info_parser(commands) -> None:
    info = commands.add_parser(
        "info", help="what a model file holds",
        description="Print a model file's learner, format version, trees, nodes, leaves, "
        "labels and features, the size of each part, how it was trained (data shape, fit "
        "time), and every setting as stored.")
    info.add_argument("model", type=Path, help="a model file written by 'train' or save()")
    info.set_defaults(handler=_run_info)


def _add_datasets_parser(commands) -> None:
    datasets = commands.add_parser("datasets", help="dataset registry and file statistics")
    datasets_commands = datasets.add_subparsers(dest="datasets_command", metavar="ACTION",
                                                required=True)
    datasets_commands.add_parser("list", help="list the known datasets").set_defaults(
        handler=_run_datasets_list)
    info = datasets_commands.add_parser("info", help="statistics of a data file")
    info.add_argument("path", type=Path)
    _add_format_option(info)
    info.set_defaults(handler=_run_datasets_info)


def _add_benchmark_parser(commands) -> None:
    from .datasets import SYNTHETIC_PRESETS

    benchmark = commands.add_parser(
        "benchmark", help="scale benchmark on synthetic data with published shapes",
        description="Train and evaluate LdSM on synthetic data, each run in a child "
        "process, and report P@k, train time, peak RSS, model size, depth and prediction "
        "ms/example as JSON (benchmarks/bench_scale.py adds plots). With --preset: the "
        "preset at each --scale (N and K scaled together); without: a curve over K at fixed N "
        "(Amazon-670K-like rows).",
    )
    benchmark.add_argument("--preset", choices=sorted(SYNTHETIC_PRESETS),
                           help="run this preset at each --scale instead of the K curve")
    benchmark.add_argument("--scale", type=float, nargs="+", default=[0.1],
                           help="preset scales in (0, 1] (default 0.1)")
    benchmark.add_argument("--labels", type=int, nargs="+", default=[10**3, 10**4, 10**5, 10**6],
                           help="K curve: label counts (default 1e3 1e4 1e5 1e6)")
    benchmark.add_argument("--n-samples", type=int, default=50_000,
                           help="K curve: points per K (default 50000)")
    benchmark.add_argument("--test-fraction", type=float, default=0.2,
                           help="held-out share of the rows (default 0.2)")
    benchmark.add_argument("--n-trees", type=int, default=1, help="trees (default 1)")
    benchmark.add_argument("--arity", type=int, default=2, help="arity M (default 2)")
    benchmark.add_argument("--max-nodes", type=_optional(int), default=None,
                           help="node budget per tree (default: LdSM's, a leaf per 8 training "
                           "rows, at most 131072 nodes)")
    benchmark.add_argument("--epochs", type=int, default=5, help="epochs per node (default 5)")
    benchmark.add_argument("--max-weights-per-regressor", type=_optional(int),
                           default=argparse.SUPPRESS,
                           help="LdSM weight budget floor, or 'none' (default: LdSM's)")
    benchmark.add_argument("--max-weights-per-example", type=_optional(float),
                           default=argparse.SUPPRESS,
                           help="LdSM weight budget per example, or 'none' (default: LdSM's)")
    benchmark.add_argument("--max-row-features", type=_integer_or_word,
                           default=argparse.SUPPRESS,
                           help="features of a row that grow and route the trees: an "
                           "integer, 'auto' or 'none' (default: LdSM's)")
    benchmark.add_argument("--n-jobs", type=int, default=2, help="threads (default 2)")
    benchmark.add_argument("--seed", type=int, default=0, help="data seed (default 0)")
    benchmark.add_argument("--memory-limit-mb", type=float, default=None,
                           help="stop a point's run once its resident memory is above this "
                           "many MiB and report it as not finished (default: no limit)")
    benchmark.add_argument("--output", type=Path, default=Path("scale-report"),
                           help="report directory for scale.json (default ./scale-report)")
    benchmark.set_defaults(handler=_run_benchmark)


# --------------------------------------------------------------------------- handlers


def _read(path: Path, fmt: str, **shape):
    return READERS[fmt](path, **shape)


def _learner_class(learner: str) -> type:
    """The estimator class of a ``--learner`` choice."""
    from . import LdSM, LearnedTree, LOMTree

    return {"ldsm": LdSM, "lomtree": LOMTree, "learned-tree": LearnedTree}[learner]


def _model_from_args(args, learner: str = "ldsm", exclude=()):
    """Build the estimator of ``learner`` from the options the user gave (but ``exclude``).

    Options the parser did not define (``demo`` has LdSM's only) count as not given.
    """
    cls = _learner_class(learner)
    accepted = set(cls._param_names())
    given = {name: getattr(args, name, None) for name in _OPTIONS
             if getattr(args, name, None) is not None and name not in exclude}
    given = _none_spelled_out(given)
    foreign = sorted(set(given) - accepted)
    if foreign:
        flags = ", ".join("--" + name.replace("_", "-") for name in foreign)
        raise ValueError(f"{flags} do(es) not apply to --learner {learner}")
    given["random_state"] = args.seed
    # Printed, not logged: the seed belongs with the results it reproduces, even under -q.
    print(f"seed: {args.seed}")
    if "verbose" in accepted:
        given["verbose"] = not args.quiet
    return cls(**given)


def _rerank_setting(rerank: bool, pairs: list[str]):
    """The re-ranker asked for by ``--rerank`` and ``--rerank-param NAME=VALUE`` options.

    Returns False (none), True (the defaults) or a dict of settings, as
    :func:`xmltree.rerank.make_reranker` takes them.

    Values are converted to the type of the setting's default and checked at
    once, so a typo fails before the data is read.
    """
    if not pairs:
        return rerank

    defaults = _rerank_defaults()
    settings = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep:
            raise ValueError(f"--rerank-param {pair!r}: expected NAME=VALUE")
        if name not in defaults:
            raise ValueError(f"--rerank-param: unknown re-ranker setting {name!r}; "
                             f"valid: {', '.join(defaults)}")
        settings[name] = _parse_setting(name, text, type(defaults[name]))
    make_reranker(settings)
    return settings


def _parse_setting(name: str, text: str, kind: type):
    """Convert ``text`` to ``kind`` (bool: true/false), naming the setting on failure."""
    if kind is bool:
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
    else:
        try:
            return kind(text)
        except ValueError:
            pass
    expected = "true or false" if kind is bool else f"a value of type {kind.__name__}"
    raise ValueError(f"--rerank-param {name}: expected {expected}, got {text!r}")


def _run_benchmark(args) -> int:
    from . import benchmark

    params = {"n_trees": args.n_trees, "arity": args.arity, "max_nodes": args.max_nodes,
              "epochs": args.epochs, "n_jobs": args.n_jobs}
    for name in ("max_weights_per_regressor", "max_weights_per_example", "max_row_features"):
        if hasattr(args, name):  # absent: the LdSM default
            params[name] = getattr(args, name)
    params = _none_spelled_out(params)
    common = {"test_fraction": args.test_fraction, "seed": args.seed, "progress": not args.quiet,
              "memory_limit_mb": args.memory_limit_mb}
    if args.preset is not None:
        results = benchmark.preset_runs(args.preset, args.scale, params, **common)
        title = f"{args.preset}, scales {args.scale}"
    else:
        results = benchmark.label_curve(args.labels, params, n_samples=args.n_samples, **common)
        title = f"K curve, N = {args.n_samples}"
    args.output.mkdir(parents=True, exist_ok=True)
    settings = {key: value for key, value in vars(args).items() if key != "handler"}
    benchmark.write_report(args.output / "scale.json", settings, results)
    print(f"{title}, {args.n_trees} tree(s)\n{benchmark.format_table(results)}")
    print(f"report: {args.output / 'scale.json'} (plots: python benchmarks/bench_scale.py "
          f"--plot-only {args.output}, in a source checkout)")
    for result in results:
        if "failed" in result:
            # The last line: the run's own exception, or how it ended.
            print(f"xmltree benchmark: a point did not finish: "
                  f"{result['message'].splitlines()[-1]}", file=sys.stderr)
    return 0


def _run_demo(args) -> int:
    from .datasets import make_synthetic

    if args.data is not None:
        if args.test is None:
            raise ValueError("--data needs --test")
        X_train, Y_train = _read(args.data, args.format)
        X_test, Y_test = _read(args.test, args.format, n_features=X_train.shape[1],
                               n_labels=Y_train.shape[1])
        source = f"{args.data} / {args.test}"
    else:
        X, Y = make_synthetic(**DEMO_SHAPE, random_state=args.seed)
        n_train = int(0.8 * X.shape[0])
        X_train, Y_train, X_test, Y_test = X[:n_train], Y[:n_train], X[n_train:], Y[n_train:]
        source = "synthetic (" + ", ".join(f"{k}={v}" for k, v in DEMO_SHAPE.items()) + ")"
    print(f"data: {source}")
    _print_summary("train", X_train, Y_train)
    _print_summary("test", X_test, Y_test)
    model = _model_from_args(args)
    rerank = _rerank_setting(args.rerank, args.rerank_params)
    _, results = _fit_and_evaluate(model, X_train, Y_train, X_test, Y_test, rerank=rerank)
    baseline = _frequency_baseline(Y_train, X_test.shape[0])
    _print_metrics({_model_name("LdSM", rerank): results,
                    "most frequent labels": _evaluate(Y_test, baseline, Y_train)})
    return 0


def _run_train(args) -> int:
    _refuse_overwriting(args.model, "--model",
                        {"training data": args.data, "test data": args.test})
    if args.text:
        return _train_text(args)
    for name in _TEXT_ONLY:
        if getattr(args, name) is not None:
            raise ValueError(f"--{name.replace('_', '-')} applies to --text only")
    # Bad options fail before the data is read.
    model = _model_from_args(args, args.learner)
    rerank = _rerank_setting(args.rerank, args.rerank_params)
    if args.learner == "learned-tree":
        return _train_learned_tree(model, args, rerank)
    X_train, Y_train = _read(args.data, args.format)
    _print_summary("train", X_train, Y_train)
    targets = None
    if args.learner == "lomtree":
        from .lomtree._estimator import to_multiclass

        # LOMtree is multiclass: it learns each row's most frequent label.
        targets, rows = to_multiclass(Y_train, rule="most_frequent")
        X_train, Y_train = X_train[rows], Y_train[rows]
    if args.test is not None:
        X_test, Y_test = _read(args.test, args.format, n_features=X_train.shape[1],
                               n_labels=Y_train.shape[1])
        model, results = _fit_and_evaluate(model, X_train, Y_train, X_test, Y_test, targets,
                                           rerank)
        _print_metrics({_model_name(args.learner, rerank): results})
    else:
        model, _ = _fit(model, X_train, Y_train, targets, rerank)
    model.save(args.model)
    logger.info("model saved to %s", args.model)
    return 0


def _train_learned_tree(model, args, rerank) -> int:
    from .learned_tree._estimator import fit_text_file

    if args.test is not None:
        raise ValueError("--test is not supported with --learner learned-tree; "
                         "use 'xmltree predict' on the test file")
    if rerank is not False:
        raise ValueError("--rerank does not apply to --learner learned-tree: a text file's "
                         "labels are names, and the re-ranker scores label ids (from Python, "
                         "xmltree.rerank.Reranked re-ranks a LearnedTree fitted on label ids)")
    start = time.perf_counter()
    fit_text_file(args.data, args.model, **model.get_params())
    logger.info("trained in %.1f s; model saved to %s", time.perf_counter() - start, args.model)
    return 0


# ----------------------------------------------------------------------- --text

#: Options of ``train`` that only ``--text`` reads.
_TEXT_ONLY = ("weighting", "pair_min_documents", "pair_weight")

#: Options of ``train --text`` that set the text features, not the learner (the first
#: three also set LearnedTree's).
_TEXT_SETTINGS = ("ngrams", "buckets", "min_count", *_TEXT_ONLY)

#: ``TextClassifier``'s defaults, which the help of the ``--text`` options states.
_TEXT_DEFAULTS = TextClassifier().get_params()


def _add_text_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "text (--text: documents in, label names out, as one model file)")
    group.add_argument("--text", action="store_true",
                       help="the data are documents with label names: train "
                       "xmltree.TextClassifier (tf-idf of words and frequent word pairs, "
                       "then LdSM); 'predict' then prints label names")
    group.add_argument("--text-format", choices=DOCUMENT_FORMATS, default="auto",
                       help="fastText '__label__NAME text' lines, or JSON lines "
                       '{"text": ..., "labels": [...]} (default: by file name, *.jsonl / '
                       "*.json are JSON lines)")
    group.add_argument("--weighting", choices=WEIGHTINGS,
                       help="--text: feature weights (default tfidf)")
    group.add_argument("--pair-min-documents", type=_integer_or_word, metavar="N",
                       help="--text: adjacent word pairs in at least N training documents are "
                       "features of their own; 'none': no pairs (default "
                       f"{_TEXT_DEFAULTS['pair_min_documents']})")
    group.add_argument("--pair-weight", type=float, metavar="W",
                       help="--text: norm of a document's word pairs against its words' "
                       f"(default {_TEXT_DEFAULTS['pair_weight']})")


def _train_text(args) -> int:
    """``train --text``: a TextClassifier around LdSM, on documents with label names."""
    from .text import read_documents

    if args.learner != "ldsm":
        raise ValueError("--text trains LdSM on documents (--learner learned-tree reads "
                         "text files without it)")
    if _rerank_setting(args.rerank, args.rerank_params) is not False:
        raise ValueError("--rerank does not apply to --text")
    settings = {name: getattr(args, name) for name in _TEXT_SETTINGS
                if getattr(args, name) is not None}
    if settings.get("pair_min_documents") == "none":
        settings["pair_min_documents"] = None
    model = TextClassifier(_model_from_args(args, "ldsm", exclude=_TEXT_SETTINGS), **settings)
    model._validate_params()  # bad options fail before the data is read
    texts, names = read_documents(args.data, args.text_format)
    print(f"train: {len(texts)} documents, {len({n for row in names for n in row})} labels")
    start = time.perf_counter()
    model.fit(texts, names)
    logger.info("trained in %.1f s (%d features)", time.perf_counter() - start,
                model.n_features_in_)
    if args.test is not None:
        from .metrics import evaluate_model

        test_texts, test_names = read_documents(args.test, args.text_format)
        _print_metrics({"text + ldsm": evaluate_model(model, test_texts, test_names)})
    model.save(args.model)
    logger.info("model saved to %s", args.model)
    return 0


def _run_predict(args) -> int:
    import xmltree

    _refuse_overwriting(args.output, "--output", {"data file": args.data, "--model": args.model})
    _check_regular_file(args.model, "--model")
    model = xmltree.load(args.model)
    if args.n_jobs is not None:
        model.n_jobs = args.n_jobs
    with _readable(args.data) as data:
        if getattr(model, "vectorizer_", None) is not None:
            return _predict_text(model, data, args)
        return _predict_vectors(model, data, args)


def _predict_vectors(model, data: Path, args) -> int:
    """Write (or print) the top-k ``label:score`` pairs of each row of a data file."""
    from .datasets import write_predictions

    if args.rerank:
        model = reranking_stage(model)
    elif isinstance(model, Reranked):
        model = model.estimator  # trained with --rerank, asked without
    X, _ = _read(data, args.format, n_features=model.n_features_in_)
    labels, scores = model.predict_top_k(X, k=args.k)
    with _output_path(args.output) as output:
        write_predictions(output, labels, scores, n_labels=label_id_count(model))
    logger.info("wrote top-%d predictions of %d rows to %s", args.k, X.shape[0],
                args.output or "standard output")
    return 0


def _predict_text(model, data: Path, args) -> int:
    """Write (or print) ``name:score`` pairs, best first, for each document of a text file."""
    from ._atomic import atomic_write
    from .text import read_documents

    if args.rerank:
        raise ValueError("--rerank does not apply to a model of text")
    texts, _ = read_documents(data, args.text_format, labels=False)
    labels, scores = model.predict_top_k(texts, k=min(args.k, model.classes_.size))
    lines = (" ".join(f"{label}:{score:.6g}" for label, score in zip(row_labels, row_scores)
                      if label != "") + "\n" for row_labels, row_scores in zip(labels, scores))
    with _output_path(args.output) as output, atomic_write(output, "w", encoding="utf-8") as out:
        out.writelines(lines)
    logger.info("wrote top-%d labels of %d documents to %s", args.k, len(texts),
                args.output or "standard output")
    return 0


def _run_info(args) -> int:
    from ._model_info import describe_model_file

    _check_regular_file(args.model, "MODEL")
    print(describe_model_file(args.model))
    return 0


def _run_evaluate(args) -> int:
    from .datasets import read_predictions

    _, Y_true = _read(args.labels, args.format)
    scores = read_predictions(args.predictions, n_labels=Y_true.shape[1])
    if scores.shape[0] != Y_true.shape[0]:
        raise ValueError(f"{args.predictions} has {scores.shape[0]} rows, "
                         f"{args.labels} has {Y_true.shape[0]}")
    Y_train = _read(args.train, args.format, n_labels=Y_true.shape[1])[1] if args.train else None
    results = _evaluate(Y_true, scores, Y_train, ks=tuple(args.k), preset=args.propensity)
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
    else:
        _print_metrics({str(args.predictions): results})
    return 0


def _run_datasets_list(args) -> int:
    from .datasets import DATASETS

    print(f"{'name':<16}{'train':>9}{'test':>9}{'features':>10}{'labels':>9}  layout")
    for info in DATASETS.values():
        print(f"{info.name:<16}{info.n_train:>9}{info.n_test:>9}{info.n_features:>10}"
              f"{info.n_labels:>9}  {info.layout}")
    return 0


def _run_datasets_info(args) -> int:
    X, Y = _read(args.path, args.format)
    _print_summary(str(args.path), X, Y)
    return 0


# --------------------------------------------------------------------------- helpers


def _model_name(learner: str, rerank) -> str:
    """A results table's column name: the learner, and whether it was re-ranked."""
    return learner if rerank is False else f"{learner} + rerank"


def _fit(model, X_train, Y_train, targets=None, rerank=False):
    """Fit ``model``, then the re-ranking stage ``rerank`` asks for; return it and timings.

    ``targets`` replaces ``Y_train`` for fitting the learner (LOMtree's one
    class per row); the re-ranker always learns the label sets ``Y_train``.
    """
    start, cpu_start = time.perf_counter(), time.process_time()
    model.fit(X_train, Y_train if targets is None else targets)
    facts = {"max_depth": int(np.max(model.depth_))} if hasattr(model, "depth_") else {}
    if rerank is not False:
        model = Reranked(model, make_reranker(rerank)).fit(X_train, Y_train)
    facts.update(train_s=time.perf_counter() - start,
                 train_cpu_s=time.process_time() - cpu_start)
    logger.info("trained in %.1f s", facts["train_s"])
    return model, facts


def _fit_and_evaluate(model, X_train, Y_train, X_test, Y_test, targets=None, rerank=False):
    """:func:`_fit`, then rank the test set's top 5; return the model and metrics with timings.

    ``Y_train`` gives the label propensities of PSP@k.
    """
    model, facts = _fit(model, X_train, Y_train, targets, rerank)
    start = time.perf_counter()
    rankings, _ = model.predict_top_k(X_test, k=5)
    predict_ms = 1000 * (time.perf_counter() - start) / max(X_test.shape[0], 1)
    results = _evaluate(Y_test, rankings.astype(np.int64), Y_train)
    results.update(facts, predict_ms_per_example=predict_ms)
    return model, results


def _evaluate(Y_true, scores, Y_train=None, ks=(1, 3, 5), preset="default") -> dict:
    from .metrics import PROPENSITY_PRESETS, evaluate, inverse_propensity

    inv_propensity = None
    if Y_train is not None:
        a, b = PROPENSITY_PRESETS[preset]
        inv_propensity = inverse_propensity(Y_train, A=a, B=b)
    return evaluate(Y_true, scores, ks=ks, inv_propensity=inv_propensity)


def _frequency_baseline(Y_train, n_rows: int) -> np.ndarray:
    """Score every row with the training label frequencies (a trivial baseline)."""
    frequencies = np.asarray(Y_train.sum(axis=0), dtype=np.float64).ravel()
    return np.broadcast_to(frequencies, (n_rows, frequencies.size))


def _print_summary(name: str, X, Y) -> None:
    labels_per_row = np.diff(Y.indptr)
    print(f"{name}: {X.shape[0]} rows, {X.shape[1]} features ({X.nnz / max(X.shape[0], 1):.1f} "
          f"per row), {Y.shape[1]} labels ({labels_per_row.mean():.2f} per row, "
          f"{int((np.asarray(Y.sum(axis=0)).ravel() > 0).sum())} used)")


def _print_metrics(results_by_model: dict[str, dict]) -> None:
    """Print one table: a row per metric, a column per model (metrics in %)."""
    names = list(results_by_model)
    width = max(12, *(len(name) + 2 for name in names))
    keys = list(dict.fromkeys(key for results in results_by_model.values() for key in results))
    print("\n" + f"{'':<24}" + "".join(f"{name:>{width}}" for name in names))
    for key in keys:
        cells = []
        for results in results_by_model.values():
            value = results.get(key)
            if value is None:
                cells.append(f"{'':>{width}}")
            else:
                shown = f"{100 * value:.2f}" if "@" in key else f"{value:.4g}"
                cells.append(f"{shown:>{width}}")
        label = f"{key} (%)" if "@" in key else key
        print(f"{label:<24}" + "".join(cells))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
