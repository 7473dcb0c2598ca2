"""Property-based fuzzing of xmltree's model files, hyper-parameters and command line.

Three kinds of surface, each with its property:

* **Model files**, one surface per kind (LdSM, LdSM with a re-ranker, a
  ``Reranked`` stage, LOMTree, LearnedTree on features and on text): a valid
  saved model is damaged — JSON values replaced by hostile ones (huge,
  negative, fractional, non-finite, strings, lists, deep nesting) or removed,
  arrays cast, reshaped, cut, extended, overwritten, swapped, removed or
  added, then the bytes of the archive flipped, cut or extended. ``load``
  must raise :class:`~xmltree.exceptions.ModelFormatError` naming the file,
  or return a model that predicts (``predict_top_k``, and re-ranked where the
  model has a re-ranker) without error; never another exception, a crash or
  a hang.
* **Hyper-parameters**, one surface per estimator: one to three parameters
  set to random valid or hostile values. ``fit`` on a small problem must
  raise a ``ValueError`` naming one of them, or give a model that saves,
  loads and predicts exactly as it did before saving.
* **The command line**: ``train``, ``predict``, ``evaluate`` and ``datasets
  info`` with hostile paths (directories, missing files, symbolic links, a
  FIFO, names of 249 and 300 characters, a path below a file) and hostile
  numbers. It must exit with 0, 1 (after one line ``xmltree CMD: error:
  ...``) or argparse's usage error 2; and a symbolic link, its target and the
  FIFO must be left as they were.

``tests/test_fuzz_models.py`` runs every surface with a small fixed budget
in CI; this script runs deeper, on the installed ``xmltree`` (an editable
install, or ``PYTHONPATH`` set to a checkout with built extensions), and
reports the cases tried per surface::

    python tools/fuzz_models.py --examples 2000 --seed 1

Exit status 1 if any surface fails; hypothesis then prints the smallest
failing case it found.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import functools
import io
import json
import math
import os
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import scipy.sparse as sp
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fuzz_readers  # noqa: E402
from fuzz_readers import MUTATION, mutate, time_limit  # noqa: E402

import xmltree  # noqa: E402
from xmltree import LdSM, LearnedTree, LOMTree  # noqa: E402
from xmltree.cli import main as cli_main  # noqa: E402
from xmltree.datasets import make_synthetic, write_xc  # noqa: E402
from xmltree.exceptions import ModelFormatError  # noqa: E402
from xmltree.ldsm._params import LDSM_PARAMS  # noqa: E402
from xmltree.learned_tree._params import LEARNED_TREE_PARAMS  # noqa: E402
from xmltree.lomtree._params import LOMTREE_PARAMS  # noqa: E402
from xmltree.rerank import Reranked, Reranker  # noqa: E402

#: Seconds one case may take: the models and data are tiny.
TIME_LIMIT = 30.0

# --------------------------------------------------------------------------
# Valid models, fitted once
# --------------------------------------------------------------------------

TEXTS = ["red apple pie", "green pear tart", "red cherry jam", "green apple sauce",
         "yellow lemon curd", "yellow banana bread"] * 5
TEXT_LABELS = ["fruit", "pome", "fruit", "pome", "citrus", "fruit"] * 5


@functools.cache
def problem():
    """A small multi-label problem, its one-class-per-row version and a probe."""
    X, Y = make_synthetic(60, 20, 8, avg_labels=1.5, random_state=0)
    y = np.asarray(Y.argmax(axis=1)).ravel()
    return X, Y, y


def fit_model(kind: str):
    """A fitted model of `kind` (see :data:`MODEL_KINDS`)."""
    X, Y, y = problem()
    small = {"n_trees": 2, "max_nodes": 9, "epochs": 2, "n_jobs": 1, "random_state": 0}
    if kind == "ldsm":
        return LdSM(**small).fit(X, Y)
    if kind == "ldsm_rerank":
        return Reranked(LdSM(**small).fit(X, Y), Reranker(n_candidates=5)).fit(X, Y)
    if kind == "reranked":
        learner = LOMTree(random_state=0).fit(X, y)
        return Reranked(learner, Reranker(n_candidates=4, tail_scorer="ridge")).fit(X, Y)
    if kind == "lomtree":
        return LOMTree(max_internal_nodes=5, random_state=0).fit(X, y)
    if kind == "learned_tree":
        return LearnedTree(dim=4, epochs=2, arity=3, random_state=0).fit(X, y)
    return LearnedTree(dim=4, epochs=2, ngrams=2, buckets=8, random_state=0).fit(
        TEXTS, TEXT_LABELS)


MODEL_KINDS = ("ldsm", "ldsm_rerank", "reranked", "lomtree", "learned_tree", "learned_tree_text")


@functools.cache
def saved_state(kind: str) -> tuple[dict, dict]:
    """The JSON metadata and the arrays of a saved model of `kind`."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "model.npz"
        fit_model(kind).save(path)
        with np.load(path) as archive:
            arrays = {name: archive[name] for name in archive.files}
    meta = json.loads(arrays.pop("__meta__").tobytes())
    return meta, arrays


# --------------------------------------------------------------------------
# Mutations of model files
# --------------------------------------------------------------------------


#: Placeholder for a list nested deeper than the interpreter's stack, spliced
#: into the JSON text (``json.dumps`` itself would recurse that deep).
DEEP = "<nested 100000 deep>"

#: JSON values that break loaders: limits of every integer type, fractions,
#: non-finite numbers, other types, and nesting.
HOSTILE_JSON = [None, True, False, 0, -1, 1, 2, 3, 7, 2**16, 2**30 - 1, 2**31 - 1, 2**31,
                2**32 + 1, 2**63, -(2**63), 10**30, 0.5, 1.5, -0.0, 1e308, 1e-308,
                float("nan"), float("inf"), -float("inf"), "", "x", "nag", "ldsm", "str",
                "int", [], [1], {}, {"a": 1}, [[[[[[[[]]]]]]]], DEEP]

JSON_MUTATION = st.tuples(st.just("json"), st.integers(0, 2**16),
                          st.one_of(st.sampled_from(HOSTILE_JSON), st.just("<delete>"),
                                    st.just("<add>")))

ARRAY_HOW = ["dtype", "shape", "truncate", "extend", "value", "delete", "empty", "swap", "extra"]
HOSTILE_NUMBERS = [-1, 0, 1, 2, 7, 2**31 - 1, -(2**31), 2**30, 1e30, 0.5, np.nan, np.inf, -np.inf]
DTYPES = [np.int32, np.int64, np.float32, np.float64, np.uint8, np.bool_]

ARRAY_MUTATION = st.tuples(st.just("array"), st.integers(0, 2**16),
                           st.sampled_from(ARRAY_HOW), st.integers(0, 2**16),
                           st.sampled_from(HOSTILE_NUMBERS), st.sampled_from(DTYPES))


def json_paths(value, prefix=()):
    """Every path (a tuple of keys and indices) to a value inside the JSON document."""
    paths = [prefix]
    items = value.items() if isinstance(value, dict) else (
        enumerate(value) if isinstance(value, list) else ())
    for key, item in items:
        paths.extend(json_paths(item, prefix + (key,)))
    return paths


def mutate_json(meta: dict, where: int, value) -> None:
    """Replace (or delete, or add beside) the value at one path of `meta`, in place."""
    paths = json_paths(meta)[1:]
    path = paths[where % len(paths)]
    parent = functools.reduce(lambda node, key: node[key], path[:-1], meta)
    key = path[-1]
    if value == "<delete>":
        del parent[key]
    elif value == "<add>":
        if isinstance(parent, dict):
            parent[f"{key}_unknown"] = 1
        else:
            parent.append(copy.deepcopy(parent[key]))
    else:
        parent[key] = copy.deepcopy(value)


def mutate_array(arrays: dict, which: int, how: str, where: int, number, dtype) -> None:
    """Damage one array of `arrays` in place, as `how` says."""
    names = sorted(arrays)
    if not names:
        return
    name = names[which % len(names)]
    array = arrays[name]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # casts of NaN to integers
        if how == "dtype":
            arrays[name] = array.astype(dtype)
        elif how == "shape":
            arrays[name] = array.reshape(-1) if array.ndim != 1 else array[:, None]
        elif how == "truncate":
            arrays[name] = array[:-1]
        elif how == "extend":
            arrays[name] = np.concatenate([array, array[:1]]) if array.size else array
        elif how == "value" and array.size:
            array = array.copy()
            array.flat[where % array.size] = np.asarray(number).astype(array.dtype)
            arrays[name] = array
        elif how == "delete":
            del arrays[name]
        elif how == "empty":
            arrays[name] = array[:0]
        elif how == "swap":
            other = names[where % len(names)]
            arrays[name], arrays[other] = arrays[other], array
        elif how == "extra":
            arrays[f"{name}_extra"] = array


@st.composite
def model_file_cases(draw):
    """Damage to a saved model: JSON and array mutations, then byte mutations."""
    mutations = draw(st.lists(st.one_of(JSON_MUTATION, ARRAY_MUTATION), max_size=3))
    # Bytes in one case out of five: most damaged bytes only break the archive.
    damages_bytes = draw(st.integers(0, 4)) == 0
    return mutations, draw(st.lists(MUTATION, max_size=2 if damages_bytes else 0))


def damaged_file(kind: str, mutations: list, byte_mutations: list) -> bytes:
    """The bytes of the saved model of `kind` after the mutations of a case."""
    meta, arrays = copy.deepcopy(saved_state(kind))
    for mutation in mutations:
        if mutation[0] == "json":
            mutate_json(meta, mutation[1], mutation[2])
        else:
            mutate_array(arrays, *mutation[1:])
    text = json.dumps(meta).replace(json.dumps(DEEP), "[" * 100_000 + "]" * 100_000)
    buffer = io.BytesIO()
    np.savez(buffer, __meta__=np.frombuffer(text.encode(), dtype=np.uint8), **arrays)
    return mutate(buffer.getvalue(), byte_mutations)


def probe(model, k: int) -> None:
    """Rank probe samples with a loaded model: every path a prediction takes."""
    n_features = model.n_features_in_
    if getattr(model, "vectorizer_", None) is not None:
        samples = TEXTS[:4] + ["", "unknown words only"]
    else:
        # Three rows of four features (none if there are none), and an empty row.
        per_row = 4 if n_features else 0
        columns = np.random.default_rng(0).integers(0, max(n_features, 1), 3 * per_row)
        samples = sp.csr_matrix((np.ones(columns.size, np.float32), columns,
                                 [0, per_row, 2 * per_row, 3 * per_row, 3 * per_row]),
                                shape=(4, n_features))
    labels, scores = model.predict_top_k(samples, k)
    assert labels.shape == scores.shape and labels.shape[0] == len(TEXTS[:4]) + 2 \
        if isinstance(samples, list) else labels.shape[0] == 4


def check_model_file(surface: Surface, case, kind: str) -> None:
    """Load a damaged model file: a model that predicts, or a ModelFormatError naming it."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "model.npz"
        path.write_bytes(damaged_file(kind, *case))
        with time_limit(TIME_LIMIT):
            try:
                model = xmltree.load(path)
            except ModelFormatError as error:
                assert str(path) in str(error), f"the error names no file: {error}"
                surface.counts["rejected"] += 1
                return
            for k in (1, 3, 10**6):
                probe(model, k)
    surface.counts["accepted"] += 1


# --------------------------------------------------------------------------
# Hyper-parameters
# --------------------------------------------------------------------------

#: Values no size, rate or choice accepts (some are valid for a few settings).
HOSTILE_PARAMS = [0, -1, -(2**31), 2**31, 2**63, 10**12, 1.5, float("nan"), float("inf"),
                  -float("inf"), 1e300, "1", "", None, True, [], {}]

REAL = st.floats(1e-3, 1e3)

#: Cheap valid values of each estimator's parameters (the defaults are valid too).
VALID = {
    Reranker: {
        "method": st.sampled_from(["geometric", "linear"]), "alpha": st.floats(0, 1),
        "beta": st.floats(0, 1), "gamma": REAL, "n_candidates": st.sampled_from([1, 3, 2**31 - 1]),
        "feature_weighting": st.sampled_from(["idf", "none"]), "unit_centroids": st.booleans(),
        "tail_scorer": st.sampled_from(["centroid", "ridge", "logistic"]),
        "ridge_penalty": REAL, "logistic_penalty": REAL,
        "propensity_exponent": st.floats(0, 10), "propensity_a": st.floats(-3, 3),
        "propensity_b": REAL,
    },
}


def table_strategy(param):
    """Valid values of a parameter declared in a table of ``xmltree._params``."""
    words = st.sampled_from(list(param.words)) if param.words else st.nothing()
    if param.kind == "int":
        low = int(param.low)
        high = min(int(param.high) if param.high != math.inf else 2**31 - 1, 2**31 - 1)
        values = st.sampled_from(sorted({low, min(low + 1, high), min(low + 7, high), high}))
    elif param.kind == "real":
        low = param.low if param.low != -math.inf else -1e3
        high = min(param.high, 1e6)
        values = st.floats(low, high, exclude_min=param.strict, allow_nan=False)
    elif param.kind == "choice":
        values = st.sampled_from(list(param.choices))
    elif param.kind == "seed":
        values = st.one_of(st.none(), st.integers(0, 2**32))
    elif param.kind == "n_jobs":
        values = st.sampled_from([None, 1, 2, -1, 1000])
    else:
        values = st.booleans()
    return st.one_of(words, values)


#: The learners' valid values come from their parameter tables, so that a
#: parameter is fuzzed the day it is added; these caps keep the costly ones cheap.
CHEAP = {
    LdSM: {"n_trees": st.integers(1, 3), "epochs": st.one_of(st.just("auto"), st.integers(1, 3)),
           "max_nodes": st.sampled_from([None, 1, 2, 9, 40, 10**6]),
           "n_candidates": st.sampled_from([1, 5, 200, 2**31 - 1])},
    LOMTree: {"max_internal_nodes": st.sampled_from([None, 1, 3, 50, 10**5, 2**29]),
              "epochs": st.integers(1, 3), "beam_width": st.sampled_from([1, 2, 8, 2**16])},
    LearnedTree: {"dim": st.sampled_from([1, 4, 16]), "epochs": st.integers(1, 3),
                  "arity": st.sampled_from([2, 3, 5, 100]), "n_tree_updates": st.integers(0, 4),
                  "buckets": st.sampled_from([1, 8, 2**31 - 1]),
                  "min_count": st.sampled_from([1, 2, 10**12])},
}
for _learner, _table in ((LdSM, LDSM_PARAMS), (LOMTree, LOMTREE_PARAMS),
                         (LearnedTree, LEARNED_TREE_PARAMS)):
    VALID[_learner] = {param.name: CHEAP[_learner].get(param.name, table_strategy(param))
                       for param in _table}


@st.composite
def parameter_cases(draw, estimator: type):
    """One to three parameters of `estimator`, each valid or hostile."""
    names = draw(st.lists(st.sampled_from(sorted(VALID[estimator])), min_size=1, max_size=3,
                          unique=True))
    return {name: draw(st.one_of(VALID[estimator][name], st.sampled_from(HOSTILE_PARAMS)))
            for name in names}


def fit_with(estimator: type, params: dict):
    """Fit `estimator` with `params` on the small problem (a re-ranker behind a LOMTree)."""
    X, Y, y = problem()
    if estimator is Reranker:
        return Reranked(LOMTree(random_state=0).fit(X, y), Reranker(**params)).fit(X, Y)
    target = Y if estimator is LdSM else y
    return estimator(**params).fit(X, target)


def check_parameters(surface: Surface, params: dict, estimator: type) -> None:
    """A ValueError naming a parameter, or a model that round-trips through a file."""
    X = problem()[0]
    with time_limit(TIME_LIMIT), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LdSM's Lemma 2 warning, convergence notes
        try:
            model = fit_with(estimator, params)
        except ValueError as error:
            assert any(name in str(error) for name in params), f"{error!r} names none of {params}"
            surface.counts["refused"] += 1
            return
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory) / "model.npz"
            model.save(path)
            loaded = xmltree.load(path)
        for k in (1, 5):
            expected, got = model.predict_top_k(X, k), loaded.predict_top_k(X, k)
            np.testing.assert_array_equal(got[0], expected[0])
            np.testing.assert_array_equal(got[1], expected[1])
    surface.counts["fitted"] += 1


@functools.cache
def fitted_ldsm_bytes() -> bytes:
    """A small fitted LdSM, as a model file's bytes (each case loads its own copy)."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "model.npz"
        fit_model("ldsm").save(path)
        return path.read_bytes()


def check_set_params_after_fit(surface: Surface, params: dict) -> None:
    """``set_params`` on a fitted LdSM: it predicts as fitted (or a ValueError names the
    parameter), and what it saves (or the ValueError of ``save``) is what it predicts."""
    X = problem()[0]
    with tempfile.TemporaryDirectory() as directory, time_limit(TIME_LIMIT):
        path = Path(directory) / "model.npz"
        path.write_bytes(fitted_ldsm_bytes())
        model = LdSM.load(path)
        expected = model.predict_top_k(X, 5)
        model.set_params(**params)
        try:  # a setting prediction reads (n_jobs) is checked when it is read
            predicted = model.predict_top_k(X, 5)
            model.save(path)
        except ValueError as error:
            assert any(name in str(error) for name in params), f"{error!r} names none of {params}"
            surface.counts["refused"] += 1
            return
        for got, want in zip(predicted, expected):
            np.testing.assert_array_equal(got, want)
        for got, want in zip(LdSM.load(path).predict_top_k(X, 5), expected):
            np.testing.assert_array_equal(got, want)
    surface.counts["saved"] += 1


@st.composite
def refit_cases(draw):
    """A refit's width (features kept) and the rows and k of the predictions beside it."""
    return (draw(st.integers(1, 20)), draw(st.integers(1, 60)), draw(st.integers(1, 12)))


def check_refit_while_predicting(surface: Surface, case) -> None:
    """Predictions running while the same LdSM is refitted on fewer features: each one
    is the old model's or a DataFormatError, never a crash or a mix of the two."""
    import threading

    width, n_rows, k = case
    X, Y, _ = problem()
    model = LdSM(n_trees=2, max_nodes=9, epochs=1, n_jobs=1, random_state=0).fit(X, Y)
    rows = X[:n_rows]
    # The refit model refuses the wider rows, or (all features kept) is the same
    # model: a prediction that returns must be the old model's.
    old = model.predict_top_k(rows, k)
    outcomes, stop = [], threading.Event()

    def predict_in_a_loop():
        while not stop.is_set():
            try:
                got = model.predict_top_k(rows, k)
            except xmltree.DataFormatError:
                outcomes.append("refused")
                continue
            same = all(np.array_equal(a, b) for a, b in zip(got, old))
            outcomes.append("kept" if same else "mixed")

    thread = threading.Thread(target=predict_in_a_loop)
    with time_limit(TIME_LIMIT):
        thread.start()
        try:
            model.fit(X[:, :width], Y)
        finally:
            stop.set()
            thread.join()
    assert "mixed" not in outcomes, outcomes
    # Counted by the case, not by the race's timing, so that CI's counts repeat.
    surface.counts["narrower" if width < X.shape[1] else "as wide"] += 1


# --------------------------------------------------------------------------
# The command line
# --------------------------------------------------------------------------

#: Paths every command may be given: fine, missing, of the wrong kind, special.
PATHS = ["data", "model", "predictions", "directory", "missing", "link", "fifo", "long",
         "too_long", "below_a_file", "new"]
INPUT_PATHS = [name for name in PATHS if name != "fifo"]  # reading a FIFO waits for a writer
NUMBERS = ["0", "1", "2", "-1", "7", "2147483648", "99999999999999999999", "1e400", "nan",
           "x", ""]
OPTIONS = ["--n-trees", "--max-nodes", "--epochs", "--n-jobs", "--arity", "--learning-rate",
           "--beam-width", "--dim", "--ngrams"]


@st.composite
def cli_cases(draw):
    """An argument list for one command, with placeholders for paths (see :func:`paths`)."""
    command = draw(st.sampled_from(["train", "predict", "evaluate", "info"]))
    inputs, outputs = st.sampled_from(INPUT_PATHS), st.sampled_from(PATHS)
    if command == "train":
        learner = draw(st.sampled_from(["ldsm", "lomtree"]))
        argv = ["train", draw(inputs), "--model", draw(outputs), "--learner", learner,
                "--n-trees" if learner == "ldsm" else "--epochs", "1"]
        for _ in range(draw(st.integers(0, 2))):
            argv += [draw(st.sampled_from(OPTIONS)), draw(st.sampled_from(NUMBERS))]
    elif command == "predict":
        argv = ["predict", draw(inputs), "--model", draw(inputs), "--output", draw(outputs),
                "-k", draw(st.sampled_from(NUMBERS))]
        if draw(st.booleans()):
            argv += ["--n-jobs", draw(st.sampled_from(NUMBERS))]
    elif command == "evaluate":
        argv = ["evaluate", "--labels", draw(inputs), "--predictions", draw(inputs), "-k",
                draw(st.sampled_from(NUMBERS))]
    else:
        argv = ["datasets", "info", draw(inputs)]
    return argv


@functools.cache
def cli_inputs() -> tuple[bytes, bytes, bytes]:
    """Bytes of a data file, of a model trained on it and of its prediction file."""
    X, Y, _ = problem()
    with tempfile.TemporaryDirectory() as directory:
        data, model, predictions = (Path(directory) / name for name in
                                    ("data.txt", "model.npz", "predictions.txt"))
        write_xc(data, X, Y)
        with contextlib.redirect_stdout(io.StringIO()):  # the training summary
            assert cli_main(["-q", "train", str(data), "--model", str(model), "--n-trees", "1",
                             "--max-nodes", "9", "--epochs", "1", "--n-jobs", "1"]) == 0
        assert cli_main(["-q", "predict", str(data), "--model", str(model), "--output",
                         str(predictions)]) == 0
        return data.read_bytes(), model.read_bytes(), predictions.read_bytes()


def paths(directory: Path) -> dict[str, Path]:
    """Create the files behind the :data:`PATHS` placeholders in `directory`."""
    data, model, predictions = cli_inputs()
    made = {name: directory / f"{name}.bin" for name in ("data", "model", "predictions",
                                                         "victim")}
    for name, content in zip(("data", "model", "predictions", "victim"),
                             (data, model, predictions, b"keep me")):
        made[name].write_bytes(content)
    made["directory"] = directory / "a-directory"
    made["directory"].mkdir()
    made["link"] = directory / "link"
    made["link"].symlink_to(made["victim"])
    made["fifo"] = directory / "fifo"
    os.mkfifo(made["fifo"])
    made["missing"] = directory / "missing" / "file"
    made["long"] = directory / ("l" * 249)
    made["too_long"] = directory / ("t" * 300)
    made["below_a_file"] = made["data"] / "file"
    made["new"] = directory / "new-file"
    return made


def check_cli(surface: Surface, argv: list[str]) -> None:
    """Exit 0, 1 with one line on stderr, or 2 (usage); special files untouched."""
    with tempfile.TemporaryDirectory() as directory:
        made = paths(Path(directory))
        args = ["-q", *(str(made[word]) if word in made else word for word in argv)]
        stderr = io.StringIO()
        with time_limit(TIME_LIMIT), contextlib.redirect_stderr(stderr), \
                contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                code = cli_main(args)
            except SystemExit as exit_:
                code = exit_.code
        assert code in (0, 1, 2), f"exit code {code}"
        if code == 1:
            lines = stderr.getvalue().splitlines()
            assert len(lines) == 1 and lines[0].startswith("xmltree "), stderr.getvalue()
        assert made["link"].is_symlink() and made["victim"].read_bytes() == b"keep me"
        assert made["fifo"].is_fifo(), "the FIFO was replaced"
    surface.counts[{0: "succeeded", 1: "refused", 2: "usage"}[code]] += 1


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------


@dataclass
class Surface:
    """One surface under test: how to draw a case and how to check it."""

    name: str
    cases: st.SearchStrategy
    check: Callable
    counts: collections.Counter = field(default_factory=collections.Counter)


def surfaces() -> list[Surface]:
    """A fresh :class:`Surface` (with empty counts) for every surface."""
    model_files = [
        Surface(f"file_{kind}", model_file_cases(), functools.partial(check_model_file, kind=kind))
        for kind in MODEL_KINDS
    ]
    parameters = [
        Surface(f"params_{estimator.__name__}", parameter_cases(estimator),
                functools.partial(check_parameters, estimator=estimator))
        for estimator in (LdSM, LOMTree, LearnedTree, Reranker)
    ]
    after_fit = Surface("params_LdSM_after_fit", parameter_cases(LdSM),
                        check_set_params_after_fit)
    refit = Surface("params_LdSM_refit_while_predicting", refit_cases(),
                    check_refit_while_predicting)
    return model_files + parameters + [after_fit, refit, Surface("cli", cli_cases(), check_cli)]


def fuzz(surface: Surface, examples: int, random_seed: int | None = None) -> collections.Counter:
    """Run ``examples`` cases on ``surface``; return its outcome counts.

    With ``random_seed`` None the run is derandomized (the same cases every
    time, for CI); otherwise the seed picks the cases.
    """
    return fuzz_readers.fuzz(surface, examples, random_seed,
                             check=lambda case: surface.check(surface, case))


def main(argv=None) -> int:
    """Fuzz the chosen surfaces; print the cases tried; 1 if any failed."""
    return fuzz_readers.run(surfaces(), fuzz, argv, __doc__, default_examples=500)


if __name__ == "__main__":
    sys.exit(main())
