"""Prove that a refactor changed no prediction: snapshot, then compare.

Fits the default ``LdSM(random_state=0)`` (or the settings given with ``--set``) on each
dataset, predicts the top 5 of its test split, and either stores the labels and scores
(``--save DIR``) or compares them bit for bit with a stored snapshot (``--compare DIR``),
exiting non-zero on the first difference.

Examples
--------
    git stash; python benchmarks/snapshot_predictions.py --save /tmp/before
    git stash pop; python benchmarks/snapshot_predictions.py --compare /tmp/before
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from _common import DEFAULT_DATA_HOME, load_benchmark_data
from sweep_ldsm import parse_setting

import xmltree

DEV_SETS = ("bibtex", "delicious", "yahoo_arts", "stackex_chemistry", "rcv1sub1")


def predict_dataset(data_home: Path, name: str, settings: dict):
    """Top-5 labels and scores of ``LdSM(random_state=0, **settings)`` on `name`'s test split."""
    X_train, Y_train, X_test, _ = load_benchmark_data(data_home, name)
    model = xmltree.LdSM(random_state=0, **settings).fit(X_train, Y_train)
    return model.predict(X_test, k=5)


def compare(name: str, stored: Path, labels: np.ndarray, scores: np.ndarray) -> bool:
    """Whether `labels` and `scores` equal the snapshot in `stored`; says which differ."""
    with np.load(stored) as before:
        same_labels = np.array_equal(before["labels"], labels)
        same_scores = np.array_equal(before["scores"], scores)
    print(f"{name}: labels {'same' if same_labels else 'DIFFER'}, "
          f"scores {'same' if same_scores else 'DIFFER'}")
    return same_labels and same_scores


def one_setting(text: str) -> tuple[str, object]:
    """``name=value``, typed as ``sweep_ldsm.py --set`` types it (one value only)."""
    name, values = parse_setting(text)
    if len(values) != 1:
        raise argparse.ArgumentTypeError(f"--set takes one value, got {text!r}")
    return name, values[0]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--save", type=Path, metavar="DIR", help="store a snapshot in DIR")
    action.add_argument("--compare", type=Path, metavar="DIR",
                        help="compare with the snapshot in DIR")
    parser.add_argument("--datasets", nargs="+", default=list(DEV_SETS))
    parser.add_argument("--data-home", type=Path, default=DEFAULT_DATA_HOME)
    parser.add_argument("--set", action="append", default=[], type=one_setting,
                        metavar="NAME=VALUE", help="an LdSM setting (repeatable)")
    args = parser.parse_args(argv)
    settings = dict(args.set)
    all_same = True
    for name in args.datasets:
        labels, scores = predict_dataset(args.data_home, name, settings)
        if args.save:
            args.save.mkdir(parents=True, exist_ok=True)
            np.savez(args.save / f"{name}.npz", labels=labels, scores=scores)
            print(f"{name}: saved")
        else:
            all_same &= compare(name, args.compare / f"{name}.npz", labels, scores)
    return 0 if all_same else 1


if __name__ == "__main__":
    sys.exit(main())
