"""Raw text in, tags out: xmltree.TextClassifier against the pipelines a user would pick.

On one split of one corpus, each pipeline is trained and measured in its own
forked child (``xmltree.benchmark.measure``): P@1/3/5, PSP@5, fit seconds
(vectorising included), prediction ms per document and model size.

- ``xmltree``: ``TextClassifier(LdSM(random_state=0))``, the defaults seeded;
- ``xmltree-cli``: ``xmltree train --text`` then ``xmltree predict`` (new processes);
- ``fasttext``: ``-loss ova``, fastText's multi-label tutorial settings;
- ``fasttext-autotune``: ``-loss ova`` with fastText's autotune for 10 minutes;
- ``tfidf-parabel`` / ``tfidf-bonsai`` / ``tfidf-plt`` / ``tfidf-xrlinear``: scikit-learn's
  ``TfidfVectorizer(sublinear_tf=True, ngram_range=(1, 2))`` then omikuji Parabel,
  omikuji Bonsai, napkinXC PLT or PECOS XR-Linear (if ``libpecos`` is installed).

``--pipelines tfidf-ldsm xmltree-histogram-weight-0.3 xmltree-training-descent
xmltree-words`` adds four diagnostics: LdSM on the scikit-learn tf-idf features (the learner
on the peers' features), TextClassifier with ``LdSM(histogram_weight=0.3)`` (the blend that
LdSM's own "auto" gives rows of this many features, which the text route resolves to 0), with
``LdSM(descent_threshold=None)`` (the trees' training rule, which LdSM's own "auto" keeps for
few labels and the text route widens), and on words alone (``pair_min_documents=None``).

``--tune`` instead scores settings of ``TextClassifier`` and its learner on held-out rows of
the *training* split (never the test split): ``--tune vectorizer`` the words' ``min_count``
and hashed n-grams, ``--tune pairs`` the word pairs' ``pair_min_documents`` and
``pair_weight``, ``--tune descent`` the learner's descent (the text route's wider one, the
training rule's, and the wider one with 200 candidates), on the held-out splits
``--holdout-seed``; with ``--pipelines``, those pipelines are scored on the same rows too.

    python benchmarks/bench_text.py --corpus debtags reuters --json text.json
    python benchmarks/bench_text.py --corpus debtags --tune pairs --holdout-seed 0 1
    python benchmarks/bench_text.py --tune descent --holdout-seed 0 1 \
        --pipelines tfidf-parabel tfidf-bonsai tfidf-plt tfidf-xrlinear
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from _common import DEFAULT_CORPORA, DEFAULT_DATA_HOME, write_json
from bench_ldsm import _pad  # rows of ids or (id, score) pairs to (n, 5), padded with -1

import xmltree
from xmltree.benchmark import measure
from xmltree.metrics import inverse_propensity

PIPELINES = ("xmltree", "xmltree-cli", "fasttext", "fasttext-autotune", "tfidf-parabel",
             "tfidf-bonsai", "tfidf-plt", "tfidf-xrlinear")

#: Pipelines that tell the vectoriser's share of a gap from the learner's (``--pipelines``):
#: LdSM on scikit-learn's tf-idf features, and TextClassifier with a learner setting changed.
DIAGNOSTICS = ("tfidf-ldsm", "xmltree-histogram-weight-0.3", "xmltree-training-descent",
               "xmltree-words")

#: fastText's multi-label tutorial ("-loss ova" section), on 2 threads.
FASTTEXT_SETTINGS = {"loss": "ova", "lr": 0.5, "epoch": 25, "wordNgrams": 2, "bucket": 200000,
                     "dim": 50}

#: fastText's autotune (``fasttext-autotune``): its search's seconds (the 10 minutes a user
#: would give it) and the share of the training documents it is judged on.
AUTOTUNE_SECONDS = 600
AUTOTUNE_VALIDATION = 0.1

#: The settings ``--tune vectorizer`` tries (without word pairs), ``--tune pairs`` and
#: ``--tune descent`` (the learner's, as ``run_xmltree``'s ``learner_settings``).
TUNING_GRIDS = {
    "vectorizer": [{"ngrams": ngrams, "buckets": buckets, "min_count": min_count,
                    "pair_min_documents": None}
                   for ngrams, buckets, min_count in itertools.product([1, 2], [1 << 18, 1 << 20],
                                                                       [1, 2, 3])
                   if ngrams == 2 or buckets == 1 << 18],  # buckets hold n-grams only
    "pairs": [{"pair_min_documents": None}] + [
        {"pair_min_documents": documents, "pair_weight": weight}
        for documents, weight in itertools.product([5, 10, 20, 40], [0.3, 0.4, 0.55, 0.7])],
    "descent": [{"learner_settings": {"descent_threshold": None}}, {},
                {"learner_settings": {"n_candidates": 200}}],
}


# ----------------------------------------------------------------------------- data


def read_corpus(name: str) -> tuple[list, list, list, list]:
    """``(train_texts, train_names, test_texts, test_names)`` of a corpus."""
    if name == "debtags":
        from xmltree.text import read_documents

        folder = DEFAULT_DATA_HOME / "debtags"
        return (*read_documents(folder / "train.jsonl"), *read_documents(folder / "test.jsonl"))
    folder = DEFAULT_CORPORA / "reuters21578"  # the ModApte split, 90 topics
    parts = []
    for split in ("train", "test"):
        texts = (folder / f"{split}_texts.txt").read_text(encoding="utf-8").splitlines()
        names = [line.split() for line in
                 (folder / f"{split}_labels.txt").read_text(encoding="utf-8").splitlines()]
        parts += [texts, names]
    return tuple(parts)


def label_matrix(names: list[list[str]], classes: dict[str, int]) -> sp.csr_matrix:
    """Indicator matrix of the names over ``classes`` (names not in it are dropped)."""
    rows = [sorted({classes[name] for name in row if name in classes}) for row in names]
    indptr = np.cumsum([0] + [len(row) for row in rows])
    indices = np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int32)
    return sp.csr_matrix((np.ones(indices.size, dtype=np.float32), indices, indptr),
                         shape=(len(rows), len(classes)))


def problem(train_texts, train_names, test_texts, test_names):
    """The measured data: texts as object arrays (they have a shape), label matrices."""
    classes = {name: i for i, name in enumerate(sorted({n for row in train_names for n in row}))}
    return (np.array(train_texts, dtype=object), label_matrix(train_names, classes),
            np.array(test_texts, dtype=object), label_matrix(test_names, classes)), classes


def ranked_ids(rankings, classes: dict[str, int]) -> np.ndarray:
    """(n, 5) label ids from rows of names (best first), -1 where a row has fewer."""
    out = np.full((len(rankings), 5), -1, dtype=np.int64)
    for i, row in enumerate(rankings):
        ids = [classes[name] for name in row if name in classes][:5]
        out[i, :len(ids)] = ids
    return out


def path_size(path: Path) -> int:
    """Bytes of a file, or of every file under a directory."""
    if path.is_file():
        return path.stat().st_size
    return sum(item.stat().st_size for item in path.rglob("*") if item.is_file())


def names_of(Y: sp.csr_matrix, classes: dict[str, int]) -> list[list[str]]:
    """Rows of a label matrix as lists of names."""
    by_id = sorted(classes, key=classes.get)
    return [[by_id[i] for i in row.indices] for row in Y]


# ----------------------------------------------------------------------------- runners
# Each runner(data, classes, timer) fits on data[0:2], predicts the top 5 of data[2] inside
# timer("predict") and returns (label ids (n, 5), extra facts such as the model size).


def run_xmltree(data, classes, timer, learner_settings=None, **text_settings):
    texts, Y, test_texts, _ = data
    learner = xmltree.LdSM(random_state=0, **(learner_settings or {}))
    model = xmltree.TextClassifier(learner, **text_settings)
    with timer("train"):
        model.fit(texts, names_of(Y, classes))
    with timer("predict"):
        names, _ = model.predict_top_k(test_texts, k=5)
    with tempfile.TemporaryDirectory() as directory:
        model.save(Path(directory) / "model.npz")
        size = path_size(Path(directory) / "model.npz")
    return ranked_ids(names, classes), {"model_mb": size / 1e6}


def run_xmltree_cli(data, classes, timer):
    texts, Y, test_texts, _ = data
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        write_jsonl(folder / "train.jsonl", texts, names_of(Y, classes))
        write_jsonl(folder / "test.jsonl", test_texts, [[]] * len(test_texts))
        command = [sys.executable, "-m", "xmltree", "-q"]
        with timer("train"):
            subprocess.run([*command, "train", str(folder / "train.jsonl"), "--text", "--model",
                            str(folder / "model.npz")], check=True, stdout=subprocess.DEVNULL)
        with timer("predict"):
            printed = subprocess.run([*command, "predict", str(folder / "test.jsonl"), "--model",
                                      str(folder / "model.npz"), "-k", "5"], check=True,
                                     capture_output=True, text=True).stdout
        size = path_size(folder / "model.npz")
    rankings = [[token.rsplit(":", 1)[0] for token in line.split()]
                for line in printed.splitlines()]
    return ranked_ids(rankings, classes), {"model_mb": size / 1e6}


def write_jsonl(path: Path, texts, names) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for text, row in zip(texts, names):
            handle.write(json.dumps({"text": text, "labels": row}) + "\n")


def write_fasttext(path: Path, texts, names) -> None:
    """Documents in fastText's format: the labels, then the words, one line a document."""
    with open(path, "w", encoding="utf-8") as handle:
        for text, row in zip(texts, names):
            words = " ".join(text.split())
            handle.write(" ".join(f"__label__{name}" for name in row) + f" {words}\n")


def run_fasttext(data, classes, timer, autotune=False):
    """fastText with ``FASTTEXT_SETTINGS``; with `autotune`, its autotune instead (``-loss ova``
    kept, ``AUTOTUNE_SECONDS``, judged on a random ``AUTOTUNE_VALIDATION`` of the training
    documents, the model then trained on the others)."""
    import fasttext

    texts, Y, test_texts, _ = data
    names = names_of(Y, classes)
    with tempfile.TemporaryDirectory() as directory:
        path, valid = Path(directory) / "train.txt", Path(directory) / "valid.txt"
        if autotune:
            order = np.random.default_rng(0).permutation(len(texts))
            n_valid = int(AUTOTUNE_VALIDATION * len(texts))
            write_fasttext(valid, [texts[i] for i in order[:n_valid]],
                           [names[i] for i in order[:n_valid]])
            write_fasttext(path, [texts[i] for i in order[n_valid:]],
                           [names[i] for i in order[n_valid:]])
            settings = {"loss": "ova", "autotuneValidationFile": str(valid),
                        "autotuneDuration": AUTOTUNE_SECONDS}
        else:
            write_fasttext(path, texts, names)
            settings = {"seed": 0, **FASTTEXT_SETTINGS}
        with timer("train"):
            model = fasttext.train_supervised(input=str(path), thread=2, verbose=0, **settings)
        with timer("predict"):
            predicted, _ = model.predict([" ".join(text.split()) for text in test_texts], k=5)
        model.save_model(str(Path(directory) / "model.bin"))
        size = path_size(Path(directory) / "model.bin")
    rankings = [[label[len("__label__"):] for label in row] for row in predicted]
    return ranked_ids(rankings, classes), {"model_mb": size / 1e6}


def tfidf():
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(sublinear_tf=True, ngram_range=(1, 2), dtype=np.float32)


def run_omikuji(data, classes, timer, bonsai=False):
    import omikuji

    from xmltree.datasets import write_xc

    texts, Y, test_texts, _ = data
    hyper = omikuji.Model.default_hyper_param()
    if bonsai:  # shallow, wide, unbalanced trees (Khandagale et al. 2019)
        hyper.cluster_k, hyper.max_depth, hyper.cluster_balanced = 100, 3, False
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        with timer("train"):
            vectorizer = tfidf()
            X = vectorizer.fit_transform(texts)
            write_xc(folder / "train.txt", sp.csr_matrix(X), Y)
            model = omikuji.Model.train_on_data(str(folder / "train.txt"), hyper, n_threads=2)
        with timer("predict"):
            X_test = vectorizer.transform(test_texts)
            rankings = [[label for label, _ in model.predict(
                list(zip(row.indices.tolist(), row.data.tolist())), top_k=5)] for row in X_test]
        model.save(str(folder / "model"))
        size = path_size(folder / "model")
    return _pad(rankings), {"model_mb": size / 1e6}


def run_napkinxc(data, classes, timer):
    from napkinxc.models import PLT

    texts, Y, test_texts, _ = data
    with tempfile.TemporaryDirectory() as directory:
        model = PLT(directory, threads=2, seed=0)
        with timer("train"):
            vectorizer = tfidf()
            model.fit(vectorizer.fit_transform(texts), [row.indices.tolist() for row in Y])
        with timer("predict"):
            rankings = model.predict(vectorizer.transform(test_texts), top_k=5)
        size = path_size(Path(directory))
    return _pad(rankings), {"model_mb": size / 1e6}


def run_tfidf_ldsm(data, classes, timer):
    texts, Y, test_texts, _ = data
    with timer("train"):
        vectorizer = tfidf()
        model = xmltree.LdSM(random_state=0).fit(vectorizer.fit_transform(texts), Y)
    with timer("predict"):
        labels, _ = model.predict_top_k(vectorizer.transform(test_texts), k=5)
    with tempfile.TemporaryDirectory() as directory:
        model.save(Path(directory) / "model.npz")
        size = path_size(Path(directory) / "model.npz")
    return labels.astype(np.int64), {"model_mb": size / 1e6}


def run_xrlinear(data, classes, timer):
    from pecos.xmc.xlinear.model import XLinearModel

    texts, Y, test_texts, _ = data
    with timer("train"):
        vectorizer = tfidf()
        X = sp.csr_matrix(vectorizer.fit_transform(texts))
        model = XLinearModel.train(X, sp.csr_matrix(Y), threads=2)
    with timer("predict"):
        scores = model.predict(sp.csr_matrix(vectorizer.transform(test_texts)), only_topk=5,
                               threads=2)
    rankings = [row.indices[np.argsort(-row.data, kind="stable")].tolist() for row in scores]
    with tempfile.TemporaryDirectory() as directory:
        model.save(str(Path(directory) / "model"))
        size = path_size(Path(directory) / "model")
    return _pad(rankings), {"model_mb": size / 1e6}


RUNNERS = {"xmltree": run_xmltree, "xmltree-cli": run_xmltree_cli, "fasttext": run_fasttext,
           "fasttext-autotune": functools.partial(run_fasttext, autotune=True),
           "tfidf-parabel": run_omikuji,
           "tfidf-bonsai": functools.partial(run_omikuji, bonsai=True),
           "tfidf-plt": run_napkinxc, "tfidf-xrlinear": run_xrlinear,
           "tfidf-ldsm": run_tfidf_ldsm,
           "xmltree-histogram-weight-0.3": functools.partial(
               run_xmltree, learner_settings={"histogram_weight": 0.3}),
           "xmltree-training-descent": functools.partial(
               run_xmltree, learner_settings={"descent_threshold": None}),
           "xmltree-words": functools.partial(run_xmltree, pair_min_documents=None)}


# ----------------------------------------------------------------------------- runs


def compare(corpus: str, pipelines) -> dict:
    """Every pipeline on the corpus's train/test split."""
    data, classes = problem(*read_corpus(corpus))
    weights = inverse_propensity(data[1])
    results = {}
    for name in pipelines:
        runner = functools.partial(_with_classes, RUNNERS[name], classes)
        try:
            results[name] = measure(runner, data, weights)
        except (RuntimeError, ImportError) as exc:
            results[name] = {"error": str(exc).strip().splitlines()[-1]}
        print(f"{corpus} {name}: {summary(results[name])}", flush=True)
    return results


def tune(corpus: str, grid: str, seed: int = 0, held_out: float = 0.2, pipelines=()) -> dict:
    """Settings of TextClassifier (``TUNING_GRIDS[grid]``), then `pipelines`, scored on
    held-out rows of the training split, a random `held_out` share of them drawn with `seed`."""
    texts, names, _, _ = read_corpus(corpus)
    order = np.random.default_rng(seed).permutation(len(texts))
    n_fit = len(texts) - int(held_out * len(texts))
    fit_rows, held_rows = order[:n_fit], order[n_fit:]
    data, classes = problem([texts[i] for i in fit_rows], [names[i] for i in fit_rows],
                            [texts[i] for i in held_rows], [names[i] for i in held_rows])
    weights = inverse_propensity(data[1])
    results = {}
    for settings in TUNING_GRIDS[grid]:
        key = json.dumps(settings)
        runner = functools.partial(_with_classes, run_xmltree, classes, **settings)
        results[key] = measure(runner, data, weights)
        print(f"{corpus} held-out split {seed} {key}: {summary(results[key])}", flush=True)
    for name in pipelines:
        results[name] = measure(functools.partial(_with_classes, RUNNERS[name], classes),
                                data, weights)
        print(f"{corpus} held-out split {seed} {name}: {summary(results[name])}", flush=True)
    return results


def _with_classes(runner, classes, data, timer, **settings):
    """``runner`` in the ``(data, timer)`` form that ``measure`` calls."""
    return runner(data, classes, timer, **settings)


def summary(result: dict) -> str:
    if "error" in result:
        return f"failed: {result['error']}"
    return (" ".join(f"{key} {100 * result[key]:.2f}" for key in ("P@1", "P@3", "P@5", "PSP@5"))
            + f" fit {result['train_s']:.1f} s, predict "
            f"{result['predict_ms_per_example']:.3f} ms/doc, {result['model_mb']:.1f} MB")


def print_markdown(corpus: str, results: dict) -> None:
    print(f"\n{corpus}\n\n| pipeline | P@1 | P@3 | P@5 | PSP@5 | fit s | predict ms/doc | MB |\n"
          "|---|---|---|---|---|---|---|---|")
    for name, result in results.items():
        if "error" in result:
            print(f"| {name} | {result['error']} |||||||")
            continue
        cells = [f"{100 * result[key]:.2f}" for key in ("P@1", "P@3", "P@5", "PSP@5")]
        cells += [f"{result['train_s']:.1f}", f"{result['predict_ms_per_example']:.3f}",
                  f"{result['model_mb']:.1f}"]
        print(f"| {name} | " + " | ".join(cells) + " |")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", nargs="+", choices=("debtags", "reuters"),
                        default=["debtags", "reuters"])
    parser.add_argument("--pipelines", nargs="+", choices=PIPELINES + DIAGNOSTICS,
                        help="default: every pipeline of PIPELINES, none with --tune")
    parser.add_argument("--tune", choices=tuple(TUNING_GRIDS),
                        help="score these settings on held-out training rows instead")
    parser.add_argument("--holdout-seed", type=int, nargs="+", default=[0],
                        help="--tune: seeds of the held-out splits (20%% of the training rows)")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "2")
    report = {}
    for corpus in args.corpus:
        if args.tune is None:
            report[corpus] = compare(corpus, args.pipelines or PIPELINES)
            print_markdown(corpus, report[corpus])
            continue
        for seed in args.holdout_seed:
            name = f"{corpus}, held-out split {seed}"
            report[name] = tune(corpus, args.tune, seed, pipelines=args.pipelines or ())
            print_markdown(name, report[name])
    if args.json is not None:
        write_json(args.json, report)


if __name__ == "__main__":
    main()
