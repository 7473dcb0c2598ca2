"""Throughput of the compiled text parser against a Python loop and scikit-learn.

Writes one multi-label libsvm file (``l1,l2 f:v f:v ...``, the body of the XC
format, which scikit-learn's ``load_svmlight_file(multilabel=True)`` also
reads) of about ``--size-mb`` megabytes to a temporary directory, then times,
on that same file:

* ``xmltree.datasets.read_libsvm`` (the compiled parser),
* a plain Python line loop (``str.split`` and ``float``), the baseline the
  compiled parser must beat by 5x,
* ``sklearn.datasets.load_svmlight_file(multilabel=True)``.

Each reader runs ``--repeats`` times; the best time is reported, together
with MB/s and the speed-up of the compiled parser. All three results are
checked to be the same matrices.

Example::

    python benchmarks/bench_parse.py --size-mb 100 --json parse.json
"""

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from _common import write_json

from xmltree.datasets import read_libsvm

N_FEATURES = 200_000
N_LABELS = 50_000
MEAN_FEATURES_PER_ROW = 60
MEAN_LABELS_PER_ROW = 4


def write_random_file(path: Path, size_mb: float, seed: int) -> int:
    """Write random rows until the file reaches ``size_mb``; return the row count.

    Feature ids are sorted and unique per row; values are random floats
    written with 6 significant digits, so every value goes through strtof
    rather than the parser's whole-number shortcut; every row has at least
    one label (scikit-learn cannot read rows without labels).
    """
    rng = np.random.default_rng(seed)
    target = int(size_mb * 1e6)
    written = 0
    n_rows = 0
    with open(path, "w", encoding="ascii") as handle:
        while written < target:
            lines = []
            for _ in range(1000):
                n_features = max(1, rng.poisson(MEAN_FEATURES_PER_ROW))
                features = np.unique(rng.integers(0, N_FEATURES, n_features))
                values = rng.random(features.size).astype(np.float32)
                labels = np.unique(rng.integers(0, N_LABELS, 1 + rng.poisson(MEAN_LABELS_PER_ROW)))
                tokens = " ".join(f"{f}:{v:.6g}" for f, v in zip(features, values))
                lines.append(",".join(map(str, labels)) + " " + tokens + "\n")
            block = "".join(lines)
            handle.write(block)
            written += len(block)
            n_rows += len(lines)
    return n_rows


def read_python_loop(path: Path):
    """Reference reader: one Python iteration per line, str.split per token."""
    indptr, indices, values = [0], [], []
    label_indptr, label_indices = [0], []
    with open(path, encoding="ascii") as handle:
        for line in handle:
            tokens = line.split(" ")
            if tokens[0] and ":" not in tokens[0]:
                label_indices.extend(int(label) for label in tokens[0].split(","))
                tokens = tokens[1:]
            for token in tokens:
                if token.strip():
                    feature, value = token.split(":")
                    indices.append(int(feature))
                    values.append(float(value))
            indptr.append(len(indices))
            label_indptr.append(len(label_indices))
    X = sp.csr_matrix(
        (np.asarray(values, np.float32), np.asarray(indices, np.int32), np.asarray(indptr)),
        shape=(len(indptr) - 1, max(indices) + 1),
    )
    Y = sp.csr_matrix(
        (
            np.ones(len(label_indices), np.float32),
            np.asarray(label_indices, np.int32),
            np.asarray(label_indptr),
        ),
        shape=(len(label_indptr) - 1, max(label_indices) + 1),
    )
    return X, Y


def read_sklearn(path: Path):
    """scikit-learn's svmlight reader, labels turned into a CSR indicator matrix."""
    from sklearn.datasets import load_svmlight_file

    X, label_tuples = load_svmlight_file(
        str(path), multilabel=True, zero_based=True, dtype=np.float32
    )
    lengths = [len(labels) for labels in label_tuples]
    label_indices = np.fromiter(
        (label for labels in label_tuples for label in labels), np.int32, sum(lengths)
    )
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    Y = sp.csr_matrix(
        (np.ones(label_indices.size, np.float32), label_indices, indptr),
        shape=(len(lengths), int(label_indices.max()) + 1),
    )
    return X, Y


def best_time(reader, path: Path, repeats: int):
    """Return the fastest of ``repeats`` runs and the last result."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        result = reader(path)
        best = min(best, time.perf_counter() - start)
    return best, result


def same_matrices(first, second) -> bool:
    """Whether two ``(X, Y)`` pairs hold the same entries (shapes may differ in width)."""
    for a, b in zip(first, second):
        width = max(a.shape[1], b.shape[1])
        a = sp.csr_matrix((a.data, a.indices, a.indptr), shape=(a.shape[0], width))
        b = sp.csr_matrix((b.data, b.indices, b.indptr), shape=(b.shape[0], width))
        if a.shape != b.shape or (a != b).nnz:
            return False
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=float, default=100.0, help="size of the test file")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the file")
    parser.add_argument("--repeats", type=int, default=1, help="runs per reader (best kept)")
    parser.add_argument("--skip-python", action="store_true", help="skip the slow Python loop")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args(argv)

    readers = {"xmltree.read_libsvm": read_libsvm, "sklearn.load_svmlight_file": read_sklearn}
    if not args.skip_python:
        readers["python line loop"] = read_python_loop
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "bench.svm"
        n_rows = write_random_file(path, args.size_mb, args.seed)
        megabytes = path.stat().st_size / 1e6
        path.read_bytes()  # warm the page cache so that no reader pays for the disk
        times, results = {}, {}
        for name, reader in readers.items():
            times[name], results[name] = best_time(reader, path, args.repeats)
    reference = results["xmltree.read_libsvm"]
    agree = all(same_matrices(reference, result) for result in results.values())

    ours = times["xmltree.read_libsvm"]
    print(
        f"file: {megabytes:.1f} MB, {n_rows} rows, nnz(X) = {reference[0].nnz}, "
        f"all readers agree: {agree}"
    )
    print(f"{'reader':<28}{'seconds':>10}{'MB/s':>10}{'xmltree speed-up':>18}")
    rows = []
    for name, seconds in times.items():
        rows.append(
            {
                "reader": name,
                "seconds": seconds,
                "mb_per_s": megabytes / seconds,
                "xmltree_speedup": seconds / ours,
            }
        )
        print(f"{name:<28}{seconds:>10.3f}{megabytes / seconds:>10.1f}{seconds / ours:>17.1f}x")
    if args.json:
        report = {
            "size_mb": megabytes,
            "rows": n_rows,
            "seed": args.seed,
            "agree": agree,
            "results": rows,
        }
        write_json(args.json, report)


if __name__ == "__main__":
    main()
