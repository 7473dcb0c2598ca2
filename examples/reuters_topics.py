"""Raw news stories in, topic names out: xmltree.TextClassifier on Reuters-21578.

Trains tf-idf features and an LdSM ensemble on the 7,770 training stories of
the ModApte split (90 topics, 1.23 per story), as one model; saves it, loads
it back, and reports P@k, nDCG@k and PSP@k on the 3,019 test stories, with
the top topics of a few of them.

The corpus is read from ``../shared/corpora/reuters21578`` next to the
repository (or ``--corpus``): ``{train,test}_texts.txt`` (one story per line)
and ``{train,test}_labels.txt`` (its topics, space-separated). Without it
the script says so and exits cleanly. Never copy the corpus into the
repository.

Example
-------
    python examples/reuters_topics.py --n-trees 10 --json reuters.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import xmltree
from xmltree.metrics import evaluate_model

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "reuters21578"
FILES = ("train_texts.txt", "train_labels.txt", "test_texts.txt", "test_labels.txt")


def read_split(corpus: Path, split: str) -> tuple[list[str], list[list[str]]]:
    """The stories of a split and their topic names."""
    texts = (corpus / f"{split}_texts.txt").read_text(encoding="utf-8").splitlines()
    labels = (corpus / f"{split}_labels.txt").read_text(encoding="utf-8").splitlines()
    return texts, [line.split() for line in labels]


def main(argv=None) -> dict | None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--n-trees", type=int, default=10)
    parser.add_argument("--ngrams", type=int, default=1, help="longest word n-gram")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args(argv)
    if not all((args.corpus / name).is_file() for name in FILES):
        print(f"skipping: Reuters-21578 not found in {args.corpus} (give --corpus DIR)")
        return None

    train_texts, train_topics = read_split(args.corpus, "train")
    test_texts, test_topics = read_split(args.corpus, "test")
    model = xmltree.TextClassifier(
        xmltree.LdSM(n_trees=args.n_trees, random_state=args.seed), ngrams=args.ngrams)
    start = time.perf_counter()
    model.fit(train_texts, train_topics)
    fit_seconds = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as folder:
        model.save(Path(folder) / "reuters.npz")  # vectorizer, topics and trees: one file
        model = xmltree.load(Path(folder) / "reuters.npz")

    results = evaluate_model(model, test_texts, test_topics, ks=(1, 3, 5))
    print(f"{len(train_texts)} training stories, {len(model.classes_)} topics, "
          f"{model.n_features_in_} features; fitted in {fit_seconds:.1f} s")
    for name in ("P@1", "P@3", "P@5", "nDCG@5", "PSP@5"):
        print(f"{name:>7} {100 * results[name]:6.2f}")
    names, scores = model.predict(test_texts[:3], k=3)
    for text, row_names, row_scores, truth in zip(test_texts, names, scores, test_topics):
        predicted = ", ".join(f"{n} ({s:.2f})" for n, s in zip(row_names, row_scores) if n)
        print(f"- {text[:60]}...\n  predicted: {predicted}; true: {', '.join(truth)}")
    report = {"settings": {key: str(value) for key, value in vars(args).items()},
              "fit_seconds": fit_seconds, **results}
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return report


if __name__ == "__main__":
    main()
