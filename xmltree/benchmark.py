"""The scale benchmark: LdSM on synthetic problems with published shapes.

Two kinds of run, both on :func:`xmltree.datasets.make_synthetic_preset` data:

* :func:`label_curve`: N points fixed, K varying (10^3 ... 10^6 by default),
  to show how depth, prediction time, memory and model size grow with K;
* :func:`preset_runs`: a named preset (e.g. ``"amazon670k-shape"``) at one or
  more scales, N and K growing together.

Every point is trained, saved and evaluated in a forked child process
(:func:`measure`), so that its peak resident memory is its own. Used by
``xmltree benchmark`` (a JSON report and a table) and the scripts of
``benchmarks/``, which add the plots (``benchmarks/bench_scale.py``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import multiprocessing
import os
import queue as queue_module
import resource
import signal
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from .datasets import SYNTHETIC_PRESETS, make_synthetic_preset
from .metrics import evaluate, inverse_propensity

__all__ = ["measure", "shortest_fit", "RunFailed", "label_curve", "preset_runs",
           "format_table", "write_report"]

#: Metrics reported for every measured run.
METRIC_KEYS = [f"{m}@{k}" for m in ("P", "nDCG", "PSP") for k in (1, 3, 5)]
#: Columns of :func:`format_table`, with their short headers.
TABLE_COLUMNS = {"n_samples": "N", "n_labels": "K", "n_labels_seen": "K seen",
                 "P@1": "P@1", "P@3": "P@3", "P@5": "P@5",
                 "train_s": "train s", "train_cpu_s": "cpu s", "peak_rss_mb": "RSS MB",
                 "model_mb": "disk MB", "max_depth": "depth", "depth_low_seen": "logM Ks",
                 "depth_low": "logM K", "depth_high": "3logM K",
                 "predict_ms_per_example": "ms/ex", "predict_cpu_ms_per_example": "cpu ms/ex"}
#: Seconds between the parent's looks at a measuring child (result, life, memory).
POLL_SECONDS = 1.0


# ----------------------------------------------------------------------------- measuring


class PhaseTimer:
    """Collects wall and CPU seconds of named phases: ``with timer("train"): ...``."""

    def __init__(self):
        self.seconds = {}

    def __call__(self, phase: str):
        timer = self

        class _Phase:
            def __enter__(self):
                self.wall, self.cpu = time.perf_counter(), time.process_time()

            def __exit__(self, *exc):
                timer.seconds[f"{phase}_s"] = time.perf_counter() - self.wall
                timer.seconds[f"{phase}_cpu_s"] = time.process_time() - self.cpu

        return _Phase()


class RunFailed(RuntimeError):
    """A measured run that ended without a result.

    Attributes
    ----------
    reason : str
        What ended it, in a few words for a report's table: ``"failed"`` (an
        exception, whose traceback is the message), ``"killed by SIGKILL"``
        (the out-of-memory killer sends that), ``"exited with code 3"``, or
        ``"over 20000 MB"`` (the ``memory_limit_mb`` of :func:`measure`).
    """

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


def measure(runner, data, inv_propensity, *, memory_limit_mb: float | None = None,
            keep_labels: bool = False) -> dict:
    """Run ``runner(data, timer)`` in a forked child; return its metrics and costs.

    Parameters
    ----------
    runner : callable
        ``runner(data, timer) -> (labels, extra)``: trains on ``data[0:2]``,
        predicts the top 5 labels of ``data[2]`` inside ``timer("predict")``
        and returns them with a dict of extra results.
    data : tuple
        ``(X_train, Y_train, X_test, Y_test)``.
    inv_propensity : numpy.ndarray
        Label weights for PSP@k.
    memory_limit_mb : float, optional
        Stop the child once its resident memory, read every
        ``POLL_SECONDS``, is above this many MiB (Linux only): a run that
        would not fit the machine then ends with a report, not with the
        kernel's out-of-memory killer choosing what to end.
    keep_labels : bool, default=False
        Also return the predicted labels, to compare runs row by row
        (:func:`xmltree.metrics.paired_difference`).

    Returns
    -------
    dict
        ``METRIC_KEYS``, the timer's phases (``train_s``, ``train_cpu_s``...),
        ``predict_ms_per_example`` (wall) and ``predict_cpu_ms_per_example``
        (CPU of all threads, steadier on a shared machine), ``peak_rss_mb``
        of the child and ``extra``; with `keep_labels`, ``top_labels`` (the
        runner's labels as an int64 array).

    Raises
    ------
    RunFailed
        If the child raised (the message holds its traceback), died without
        a result (killed, say, by the out-of-memory killer) or outgrew
        ``memory_limit_mb``.
    """
    if memory_limit_mb is not None and _resident_mb(os.getpid()) is None:
        raise ValueError("memory_limit_mb needs /proc/<pid>/status (Linux)")
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    process = context.Process(target=_child,
                              args=(results, runner, data, inv_propensity, keep_labels))
    process.start()
    try:
        result = _wait_for_result(process, results, memory_limit_mb)
    except BaseException:
        process.kill()
        raise
    finally:
        process.join()
    if isinstance(result, str):
        raise RunFailed(f"benchmark child failed:\n{result}", "failed")
    return result


def shortest_fit(runs: list[dict]) -> dict:
    """The run of the shortest ``train_s`` among results of :func:`measure`, whole.

    On a shared machine a fit of a second or two may take half as long again
    in one run as in the next; the shortest is the least disturbed (as
    :mod:`timeit` advises). Its scores, costs and extra are one run's.

    Parameters
    ----------
    runs : list of dict
        Results of the same model on the same data.

    Returns
    -------
    dict
        That run, with ``train_s_runs``: every run's ``train_s``, in order.
    """
    if not runs:
        raise ValueError("shortest_fit needs at least one run")
    shortest = dict(min(runs, key=lambda run: run["train_s"]))
    shortest["train_s_runs"] = [run["train_s"] for run in runs]
    return shortest


def _wait_for_result(process, results, memory_limit_mb: float | None):
    """The child's result (a dict, or its traceback as a string), looked for every
    ``POLL_SECONDS`` while the child lives and stays under ``memory_limit_mb``."""
    started = time.perf_counter()
    while True:
        try:
            return results.get(timeout=POLL_SECONDS)
        except queue_module.Empty:
            pass
        if not process.is_alive():
            # A result put just before the child ended may still be in the pipe.
            try:
                return results.get(timeout=POLL_SECONDS)
            except queue_module.Empty:
                reason = _ending(process.exitcode)
                raise RunFailed(f"benchmark child ended without a result: {reason}",
                                reason) from None
        resident = _resident_mb(process.pid) if memory_limit_mb is not None else None
        if resident is not None and resident > memory_limit_mb:
            seconds = time.perf_counter() - started
            raise RunFailed(f"benchmark child stopped after {seconds:.0f} s: {resident:.0f} MiB "
                            f"resident, above the limit of {memory_limit_mb:g} MiB",
                            f"over {memory_limit_mb:g} MB")


def _ending(exitcode: int) -> str:
    """How a process ended, from its exit code (negative: the signal that killed it)."""
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"killed by {name}"
    return f"exited with code {exitcode}"


def _resident_mb(pid: int) -> float | None:
    """Resident memory of process `pid` in MiB, None where /proc does not tell it."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _child(queue, runner, data, inv_propensity, keep_labels):
    # Some peers print progress bars on stderr (omikuji: thousands of lines);
    # errors travel back through the queue instead.
    os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
    try:
        timer = PhaseTimer()
        labels, extra = runner(data, timer)
        result = evaluate(data[3], labels, ks=(1, 3, 5), inv_propensity=inv_propensity)
        result = {key: result[key] for key in METRIC_KEYS}
        result.update(timer.seconds, **extra)
        n_test = data[2].shape[0]
        result["predict_ms_per_example"] = 1000 * result.pop("predict_s") / n_test
        result["predict_cpu_ms_per_example"] = 1000 * result.pop("predict_cpu_s") / n_test
        result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        if keep_labels:
            result["top_labels"] = np.asarray(labels, dtype=np.int64)
        queue.put(result)
    except BaseException:
        queue.put(traceback.format_exc())


# ----------------------------------------------------------------------------- runs


def _split(X, Y, test_fraction: float):
    """Last ``test_fraction`` of the rows as the test set (synthetic rows are i.i.d.)."""
    n_train = X.shape[0] - max(1, round(test_fraction * X.shape[0]))
    return X[:n_train], Y[:n_train], X[n_train:], Y[n_train:]


def _run_ldsm(data, params: dict, timer):
    """Train, save and predict (in the measuring child); return top-5 labels and sizes."""
    from .ldsm._estimator import LdSM

    X_train, Y_train, X_test, _ = data
    model = LdSM(random_state=0, **params)
    with timer("train"):
        model.fit(X_train, Y_train)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "model.npz"
        model.save(path)
        model_mb = path.stat().st_size / 2**20
    with timer("predict"):
        labels, _ = model.predict(X_test, k=5)
    return labels, {"max_depth": int(np.max(model.depth_)),
                    "mean_nodes": float(np.mean(model.n_nodes_)), "model_mb": model_mb}


def _run_point(X, Y, params: dict, test_fraction: float,
               memory_limit_mb: float | None = None) -> dict:
    """One measured LdSM run on (X, Y); adds the data shape and the depth bounds.

    The bounds are log_M K and 3 log_M K for the K of the label space, and
    log_M of the labels that occur in the training rows (``n_labels_seen``):
    when K exceeds what N points can carry, most labels never reach a tree.
    A run that did not finish (:class:`RunFailed`) has the shape and
    ``failed`` (its reason) and ``message`` instead of the measurements.
    """
    data = _split(X, Y, test_fraction)
    try:
        result = measure(lambda d, t: _run_ldsm(d, params, t), data,
                         inverse_propensity(data[1]), memory_limit_mb=memory_limit_mb)
    except RunFailed as failure:
        result = {"failed": failure.reason, "message": str(failure)}
    n_labels_seen = int(np.unique(data[1].indices).size)
    log_m = math.log(params["arity"])
    log_m_k = math.log(Y.shape[1]) / log_m
    result.update(n_samples=X.shape[0], n_labels=Y.shape[1], n_features=X.shape[1],
                  n_labels_seen=n_labels_seen,
                  depth_low_seen=math.log(max(n_labels_seen, 1)) / log_m,
                  depth_low=log_m_k, depth_high=3 * log_m_k, **params)
    return result


def label_curve(labels, params: dict, *, n_samples: int = 50_000, test_fraction: float = 0.2,
                seed: int = 0, progress: bool = True,
                memory_limit_mb: float | None = None) -> list[dict]:
    """Measure LdSM at fixed N for every K in ``labels`` (Amazon-670K-like rows).

    Parameters
    ----------
    labels : sequence of int
        Label counts K.
    params : dict
        LdSM hyper-parameters (``max_nodes=None``: LdSM's own budget, set by
        the number of training rows, so the trees are the same size for every
        K and the curve shows what K alone costs).
    n_samples : int, default=50000
        Points generated for each K, of which ``test_fraction`` are held out.
    test_fraction : float, default=0.2
    seed : int, default=0
        Seed of the data.
    progress : bool, default=True
        Show a progress bar over the points.
    memory_limit_mb : float, optional
        Stop a point's run above this resident memory (see :func:`measure`).

    Returns
    -------
    list of dict
        One result of :func:`measure` per K, with the shape and settings; a
        point that did not finish has ``failed`` (why) and ``message``.
    """
    base = SYNTHETIC_PRESETS["amazon670k-shape"]
    results = []
    for n_labels in tqdm(labels, desc="K curve", unit="point", disable=not progress):
        preset = dataclasses.replace(base, n_samples=n_samples, n_labels=n_labels)
        X, Y = make_synthetic_preset(preset, random_state=seed)
        results.append(_run_point(X, Y, params, test_fraction, memory_limit_mb))
        del X, Y
    return results


def preset_runs(preset: str, scales, params: dict, *, test_fraction: float = 0.2,
                seed: int = 0, progress: bool = True,
                memory_limit_mb: float | None = None) -> list[dict]:
    """Measure LdSM on a synthetic preset at each scale (N and K times the scale).

    Parameters
    ----------
    preset : str
        A key of :data:`xmltree.datasets.SYNTHETIC_PRESETS`.
    scales : sequence of float
        Scales in (0, 1].
    params : dict
        LdSM hyper-parameters (``max_nodes=None``: LdSM's own budget).
    test_fraction, seed, progress, memory_limit_mb
        As in :func:`label_curve`.

    Returns
    -------
    list of dict
        One result of :func:`measure` per scale, with ``preset`` and ``scale``;
        a point that did not finish has ``failed`` (why) and ``message``.
    """
    if preset not in SYNTHETIC_PRESETS:
        raise ValueError(f"preset must be one of {sorted(SYNTHETIC_PRESETS)}, got {preset!r}")
    results = []
    with tqdm(total=2 * len(scales), desc=preset, unit="step", disable=not progress) as bar:
        for scale in scales:
            bar.set_postfix(scale=scale, step="generate")
            X, Y = make_synthetic_preset(preset, scale=scale, random_state=seed)
            bar.update(1)
            bar.set_postfix(scale=scale, step="train+predict")
            result = _run_point(X, Y, params, test_fraction, memory_limit_mb)
            del X, Y
            result.update(preset=preset, scale=scale)
            results.append(result)
            bar.update(1)
    return results


# ----------------------------------------------------------------------------- report


def format_table(results: list[dict]) -> str:
    """Fixed-width text table of the main columns, one row per result (the shape and
    why, for a run that did not finish)."""
    lines = ["".join(f"{header:>10}" for header in TABLE_COLUMNS.values())]
    for result in results:
        if "failed" in result:
            shape = "".join(f"{result[c]:>10}" for c in ("n_samples", "n_labels", "n_labels_seen"))
            lines.append(f"{shape}  did not finish: {result['failed']}")
            continue
        cells = [100 * result[c] if "@" in c else result[c] for c in TABLE_COLUMNS]
        lines.append("".join(f"{v:>10.0f}" if abs(v) >= 1000 else f"{v:>10.3f}" if v < 1
                             else f"{v:>10.2f}" for v in cells))
    return "\n".join(lines)


def write_report(path, settings: dict, results: list[dict]) -> None:
    """Write the settings and results as JSON."""
    Path(path).write_text(json.dumps({"settings": settings, "results": results}, indent=2,
                                     default=str))
