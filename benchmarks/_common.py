"""What the benchmark scripts share: where the data are, and how results are written.

The scripts import it as ``from _common import ...``: Python puts a script's
own folder first on ``sys.path``, so no path edits are needed. Every script
writes its ``--json`` report with :func:`write_json`, which records the peak
resident memory of the run.
"""

from __future__ import annotations

import json
import resource
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from xmltree.datasets import DATASETS, load_dataset, read_xc

#: ``../shared/datasets`` and ``../shared/corpora`` next to the repository.
SHARED = Path(__file__).resolve().parents[1].parent / "shared"
DEFAULT_DATA_HOME = SHARED / "datasets"
DEFAULT_CORPORA = SHARED / "corpora"


def load_split(data_home: Path, name: str):
    """Train and test matrices of a dataset, in one feature and label space: a registered
    one, or any ``<data_home>/<name>/{train,test}.txt`` pair in the XC format."""
    if name in DATASETS:
        (X_train, Y_train), (X_test, Y_test) = load_dataset(name, data_home, subset="both")
        return X_train, Y_train, X_test, Y_test
    folder = Path(data_home) / name
    if not (folder / "train.txt").is_file():
        raise KeyError(f"{name!r} is neither a registered dataset nor a folder with train.txt "
                       f"and test.txt in {data_home}")
    (X_train, Y_train), (X_test, Y_test) = (read_xc(folder / f"{part}.txt")
                                            for part in ("train", "test"))
    n_features = max(X_train.shape[1], X_test.shape[1])
    n_labels = max(Y_train.shape[1], Y_test.shape[1])
    return (_widened(X_train, n_features), _widened(Y_train, n_labels),
            _widened(X_test, n_features), _widened(Y_test, n_labels))


def _widened(matrix, n_columns: int):
    """`matrix` (CSR) with `n_columns` columns, the new ones empty."""
    return sp.csr_matrix((matrix.data, matrix.indices, matrix.indptr),
                         shape=(matrix.shape[0], n_columns))


#: Share of a synthetic preset's rows that train (the rest test).
SYNTHETIC_TRAIN_FRACTION = 0.8


def load_benchmark_data(data_home: Path, name: str):
    """``(X_train, Y_train, X_test, Y_test)`` of a registered dataset, or of a
    synthetic preset named ``<preset>@<scale>`` (seed 0, first 80% of rows train)."""
    if "@" not in name:
        return load_split(data_home, name)
    from xmltree.datasets import make_synthetic_preset

    preset, scale = name.split("@")
    X, Y = make_synthetic_preset(preset, scale=float(scale), random_state=0)
    n_train = int(SYNTHETIC_TRAIN_FRACTION * X.shape[0])
    return X[:n_train], Y[:n_train], X[n_train:], Y[n_train:]


def peak_memory_mb() -> dict:
    """Peak resident memory so far, in MB: this process's and its finished children's."""
    return {"peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "peak_rss_children_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}


def write_json(path, report: dict) -> None:
    """Write `report` (a dict) as JSON with :func:`peak_memory_mb` added."""
    Path(path).write_text(json.dumps({**report, **peak_memory_mb()}, indent=2, default=str)
                          + "\n")


# ----------------------------------------------------------------------------- plots


def require_matplotlib() -> None:
    """Fail at once, not after hours of training, when the plots cannot be drawn.

    Raises
    ------
    ImportError
        If matplotlib (the ``plot`` extra) is not installed.
    """
    try:
        import matplotlib  # noqa: F401
    except ImportError as error:
        raise ImportError("the benchmark plots need matplotlib: "
                          "pip install 'xmltree-xmc[plot]'") from error


def plot_scale(results: list[dict], directory, *, against: str = "n_labels") -> list[Path]:
    """Write PNG plots of depth and costs against K (``"n_labels"``) or N (``"n_samples"``).

    Returns
    -------
    list of pathlib.Path
        The files written: depth with the paper's [log_M K, 3 log_M K] band
        (and log_M of the labels seen in training, dashed), and prediction
        CPU ms/example, peak RSS, model size and train CPU time, of the runs
        that finished.
    """
    results = [r for r in results if "failed" not in r]
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    axis_label = {"n_labels": "labels K", "n_samples": "points N"}[against]
    x = np.array([r[against] for r in results], dtype=float)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(x, [r["max_depth"] for r in results], "o-", label="max depth")
    ax.fill_between(x, [r["depth_low"] for r in results], [r["depth_high"] for r in results],
                    alpha=0.2, label="[log_M K, 3 log_M K]")
    ax.plot(x, [r["depth_low_seen"] for r in results], "--", color="gray",
            label="log_M (labels seen in training)")
    ax.set(xscale="log", xlabel=axis_label, ylabel="tree depth")
    ax.legend()
    fig.tight_layout()
    depth_path = directory / f"scale_depth_vs_{against}.png"
    fig.savefig(depth_path, dpi=120)
    plt.close(fig)
    panels = (("predict_cpu_ms_per_example", "prediction CPU ms/example"),
              ("peak_rss_mb", "peak RSS MB"), ("model_mb", "model MB on disk"),
              ("train_cpu_s", "train CPU s"))
    fig, axes = plt.subplots(1, len(panels), figsize=(16, 3.5))
    for ax, (key, label) in zip(axes, panels):
        ax.plot(x, [r[key] for r in results], "o-")
        ax.set(xscale="log", xlabel=axis_label, ylabel=label)
    fig.tight_layout()
    cost_path = directory / f"scale_cost_vs_{against}.png"
    fig.savefig(cost_path, dpi=120)
    plt.close(fig)
    return [depth_path, cost_path]


