"""Benchmark LearnedTree against its fixed-tree baselines and fastText.

Tasks (corpora from ``../shared/corpora``, never copied into the repository):

* ``clinc150`` - 150-intent text classification (train / test split), P@1.
* ``reuters``  - Reuters-21578 ModApte, 90 topics; one label per document is
  sampled at every training visit, P@1 is measured against the label sets.
* ``ptb``      - Penn Treebank language modelling: next word from the 4
  previous words, perplexity on ``ptb.test.txt`` (depth-constrained trees);
  ``--eval valid`` measures on ``ptb.valid.txt`` instead, for tuning.

For the classification tasks, ``--eval valid`` trains on 80% of the training
rows and measures on the other 20% (a fixed random split), for tuning without
the test split.

Every model uses the same dimension, epochs, optimizer, learning rate and
threads.
fastText (``-loss hs`` and ``-loss softmax``) runs on the classification tasks
if the ``fasttext`` module is importable. Prints a table; ``--json`` writes
the rows too. Example::

    python benchmarks/bench_learned_tree.py --task clinc150 --arity 5 20 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import DEFAULT_CORPORA, write_json

from xmltree.learned_tree import LearnedTree
from xmltree.text import context_windows


def load_clinc150(root: Path):
    data = json.loads((root / "clinc150" / "data_full.json").read_text())
    train = data["train"] + data["val"]
    test = data["test"]
    return ([t for t, _ in train], [[lab] for _, lab in train],
            [t for t, _ in test], [[lab] for _, lab in test])


def load_reuters(root: Path):
    folder = root / "reuters21578"

    def read(name):
        return (folder / name).read_text(encoding="utf-8").splitlines()

    return (read("train_texts.txt"), [line.split() for line in read("train_labels.txt")],
            read("test_texts.txt"), [line.split() for line in read("test_labels.txt")])


def held_out_split(texts, label_sets, fraction=0.2, seed=12345):
    """Split training rows into (train, held-out) for tuning without the test split.

    The rows are shuffled with a fixed seed (independent of ``--seed``) first:
    CLINC150's training file is grouped by intent, so its last rows would
    hold intents the first ones never show.
    """
    order = np.random.default_rng(seed).permutation(len(texts))
    cut = int(round((1 - fraction) * len(texts)))
    train, held = order[:cut], order[cut:]
    return ([texts[i] for i in train], [label_sets[i] for i in train],
            [texts[i] for i in held], [label_sets[i] for i in held])


def precision_at_1(top1, label_sets) -> float:
    return float(np.mean([top in labels for top, labels in zip(top1, label_sets)]))


def run_learned_tree(kind, arity, args, train_x, train_sets, names, test_x, test_sets):
    """Train and evaluate one LearnedTree configuration; return a result row."""
    index = {name: i for i, name in enumerate(names)}
    y = [[index[lab] for lab in labels] for labels in train_sets]
    model = LearnedTree(arity=arity, dim=args.dim, epochs=args.epochs,
                        learning_rate=args.lr, optimizer=args.optimizer, tree=kind,
                        n_tree_updates=args.tree_updates,
                        max_depth=args.max_depth if kind in ("learned", "random") else None,
                        ngrams=args.ngrams, buckets=args.buckets, n_jobs=args.n_jobs,
                        random_state=args.seed)
    start = time.perf_counter()
    model.fit(train_x, y)
    train_time = time.perf_counter() - start
    start = time.perf_counter()
    top, _ = model.predict_top_k(test_x, 1)
    test_time = time.perf_counter() - start
    p1 = precision_at_1([names[i] for i in top[:, 0]], test_sets)
    depth = model.tree_.label_depth
    weights = model.label_counts_ / model.label_counts_.sum()
    return {"model": f"LearnedTree[{kind}]", "arity": model.tree_.arity, "p@1": p1,
            "train_s": train_time, "test_s": test_time,
            "mean_depth": float(np.sum(weights * depth))}


def run_fasttext(loss, args, train_x, train_sets, test_x, test_sets):
    """Train fastText through its Python module on a temporary file."""
    import fasttext

    def clean(text):
        return " ".join(text.split())

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "train.txt")
        with open(path, "w", encoding="utf-8") as handle:
            for text, labels in zip(train_x, train_sets):
                prefix = " ".join(f"__label__{lab}" for lab in labels)
                handle.write(f"{prefix} {clean(text.lower())}\n")
        start = time.perf_counter()
        model = fasttext.train_supervised(path, dim=args.dim, epoch=args.epochs, lr=args.lr,
                                          loss=loss, thread=args.n_jobs,
                                          wordNgrams=args.ngrams, bucket=args.buckets,
                                          minCount=1, seed=args.seed, verbose=0)
        train_time = time.perf_counter() - start
    start = time.perf_counter()
    predicted, _ = model.predict([clean(t.lower()) for t in test_x], k=1)
    test_time = time.perf_counter() - start
    top1 = [p[0][len("__label__"):] for p in predicted]
    return {"model": f"fastText[{loss}]", "arity": 2 if loss == "hs" else len(model.labels),
            "p@1": precision_at_1(top1, test_sets), "train_s": train_time,
            "test_s": test_time, "mean_depth": float("nan")}


def classification(args):
    loader = load_clinc150 if args.task == "clinc150" else load_reuters
    train_x, train_sets, test_x, test_sets = loader(Path(args.corpora))
    if args.eval == "valid":
        train_x, train_sets, test_x, test_sets = held_out_split(train_x, train_sets)
    names = sorted({lab for labels in train_sets for lab in labels})
    rows = []
    if "flat" in args.kinds:
        rows.append(run_learned_tree("flat", 2, args, train_x, train_sets, names, test_x,
                                     test_sets))
    for arity in args.arity:
        for kind in [k for k in ("random", "huffman", "learned") if k in args.kinds]:
            rows.append(run_learned_tree(kind, arity, args, train_x, train_sets, names,
                                         test_x, test_sets))
    if not args.no_fasttext:
        try:
            for loss in ("hs", "softmax"):
                rows.append(run_fasttext(loss, args, train_x, train_sets, test_x, test_sets))
        except ImportError:
            print("fastText is not installed: skipping the fastText peers")
    return rows


def read_ptb(path: Path) -> list[str]:
    """Tokens of a PTB file with ``<eos>`` at every line end."""
    return path.read_text().replace("\n", " <eos> ").split()


def language_model(args):
    folder = Path(args.corpora) / "ptb"
    train_tokens = read_ptb(folder / "ptb.train.txt")
    test_tokens = read_ptb(folder / f"ptb.{args.eval}.txt")
    vocabulary = sorted(set(train_tokens))
    index = {word: i for i, word in enumerate(vocabulary)}
    train_ids = np.array([index[t] for t in train_tokens], dtype=np.int64)
    test_ids = np.array([index[t] for t in test_tokens], dtype=np.int64)
    if args.max_train:
        train_ids = train_ids[:args.max_train]
    X, y = context_windows(train_ids, len(vocabulary), args.context)
    X_test, y_test = context_windows(test_ids, len(vocabulary), args.context)
    configs = [("flat", None)] if "flat" in args.kinds else []
    for arity in args.arity:
        depth = int(np.ceil(np.log(len(vocabulary)) / np.log(arity) - 1e-9))
        configs += [(kind, (arity, depth)) for kind in ("random", "learned")
                    if kind in args.kinds]
    rows = []
    for kind, shape in configs:
        arity, depth = shape if shape else (2, None)
        model = LearnedTree(arity=arity, dim=args.dim, epochs=args.epochs,
                            learning_rate=args.lr, optimizer=args.optimizer, tree=kind,
                            max_depth=depth,
                            n_tree_updates=args.tree_updates, objective="likelihood",
                            n_jobs=args.n_jobs, random_state=args.seed)
        start = time.perf_counter()
        model.fit(X, y, classes=np.arange(len(vocabulary)))
        train_time = time.perf_counter() - start
        start = time.perf_counter()
        perplexity = model.perplexity(X_test, y_test)
        test_time = time.perf_counter() - start
        start = time.perf_counter()
        model.predict_top_k(X_test[:args.predict_rows], 1)
        top1_time = time.perf_counter() - start
        rows.append({"model": f"LearnedTree[{kind}]", "arity": model.tree_.arity,
                     "depth": int(model.tree_.max_depth), "perplexity": perplexity,
                     "train_s": train_time, "loglik_s": test_time, "top1_s": top1_time})
        print(rows[-1], flush=True)
    return rows


def print_table(rows):
    keys = list(rows[0].keys())
    for row in rows[1:]:
        keys += [k for k in row if k not in keys]
    print(" | ".join(keys))
    for row in rows:
        cells = []
        for key in keys:
            value = row.get(key, "")
            cells.append(f"{value:.4g}" if isinstance(value, float) else str(value))
        print(" | ".join(cells))


def build_parser() -> argparse.ArgumentParser:
    """The command line of this script (also used by ``tune_learned_tree.py``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=["clinc150", "reuters", "ptb"], default="clinc150")
    parser.add_argument("--corpora", default=str(DEFAULT_CORPORA))
    parser.add_argument("--arity", type=int, nargs="+", default=[5, 20])
    parser.add_argument("--dim", type=int, default=50)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--lr", type=float, default=0.5)
    parser.add_argument("--optimizer", choices=["sgd", "adagrad"], default="sgd")
    parser.add_argument("--eval", choices=["test", "valid"], default="test",
                        help="measure on the test split, or on held-out training data: "
                        "ptb.valid.txt for PTB, a fixed random 20%% of the training "
                        "rows for the classification tasks")
    parser.add_argument("--ngrams", type=int, default=1)
    parser.add_argument("--buckets", type=int, default=100_000)
    parser.add_argument("--tree-updates", type=int, default=50)
    parser.add_argument("--max-depth", type=int, default=None,
                        help="classification: depth-constrained learned and random trees "
                             "(Algorithm 3); PTB always uses ceil(log_M K)")
    parser.add_argument("--context", type=int, default=4)
    parser.add_argument("--max-train", type=int, default=0,
                        help="PTB: keep only this many training tokens (0 = all)")
    parser.add_argument("--predict-rows", type=int, default=10_000,
                        help="PTB: rows timed for top-1 prediction")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kinds", nargs="+", default=["flat", "random", "huffman", "learned"],
                        help="LearnedTree variants to run (huffman: classification only)")
    parser.add_argument("--no-fasttext", action="store_true")
    parser.add_argument("--json", help="write the result rows to this file")
    return parser


def main():
    args = build_parser().parse_args()
    rows = language_model(args) if args.task == "ptb" else classification(args)
    print_table(rows)
    if args.json:
        write_json(args.json, {"args": vars(args), "rows": rows})


if __name__ == "__main__":
    main()
