"""What a fit reports while and after it runs: progress bars and phase times.

The compiled kernels run without the GIL for minutes at scale. They report
progress by advancing counters in memory, which a thread of this process
reads every ``POLL_SECONDS`` (:class:`Poller`): a Python callback would take
the GIL at every step, and work cut into blocks for a bar to move would wait
at the end of every block for its slowest thread. So showing progress
changes neither the fit nor how its work is split.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
from tqdm.auto import tqdm

__all__ = ["PhaseClock", "Poller", "TreeProgress", "check_counters", "counted_bar",
           "progress_bar"]

#: Seconds between two reads of the counters that the kernels advance.
POLL_SECONDS = 0.2


class PhaseClock:
    """Wall-clock seconds of the consecutive phases of a fit."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, phase: str) -> None:
        now = time.perf_counter()
        self.seconds[phase] = round(now - self._last, 6)
        self._last = now


class Poller:
    """Calls ``report(counts.sum())`` from a thread every ``POLL_SECONDS``
    until :meth:`stop`, and once more then.

    Parameters
    ----------
    counts : numpy.ndarray of int64
        Counters that compiled code advances without the GIL.
    report : callable
        Takes their sum.
    """

    def __init__(self, counts: np.ndarray, report: Callable[[int], None]):
        self._counts = counts
        self._report = report
        self._stopped = threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="xmltree progress",
                                         daemon=True)
        self._watcher.start()

    def _watch(self) -> None:
        while not self._stopped.wait(POLL_SECONDS):
            self._report(int(self._counts.sum()))

    def stop(self) -> None:
        self._stopped.set()
        self._watcher.join()
        self._report(int(self._counts.sum()))


class TreeProgress:
    """A tqdm bar counting finished trees and, with `count_nodes`, expanded nodes.

    Each tree's builder writes its count of expanded nodes into its entry of
    ``node_counts`` (:meth:`node_counter`); a polling thread shows their sum.
    Trees grown in other processes (a Dask cluster) can only be counted.
    """

    def __init__(self, n_trees: int, count_nodes: bool = True):
        self._bar = tqdm(total=n_trees, desc="LdSM trees", unit="tree")
        self._lock = threading.Lock()
        self.node_counts = np.zeros(n_trees, dtype=np.int64)
        self._poller = Poller(self.node_counts, self._show_nodes) if count_nodes else None

    def node_counter(self, tree: int) -> np.ndarray | None:
        """The ``node_count`` array of one tree's builder (a view of its entry),
        or None where nodes are not counted."""
        return self.node_counts[tree:tree + 1] if self._poller is not None else None

    def _show_nodes(self, n_expanded: int) -> None:
        with self._lock:
            self._bar.set_postfix(nodes=n_expanded)

    def tree_done(self) -> None:
        with self._lock:
            self._bar.update(1)

    def close(self) -> None:
        if self._poller is not None:
            self._poller.stop()
        self._bar.close()


class _NoBar:
    """What :func:`progress_bar` returns when nothing is shown."""

    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(total: int, desc: str, unit: str, shown: bool):
    """A tqdm bar (it estimates the time left) when `shown`, else one that shows nothing."""
    return tqdm(total=total, desc=desc, unit=unit, unit_scale=True) if shown else _NoBar()


@contextmanager
def counted_bar(total: int, desc: str, unit: str, shown: bool,
                n_counters: int) -> Iterator[np.ndarray]:
    """Yield ``n_counters`` int64 counters (one per thread of a kernel) that a
    bar of `total` follows while the body runs, when `shown`."""
    counts = np.zeros(n_counters, dtype=np.int64)
    if not shown:
        yield counts
        return
    bar = progress_bar(total, desc, unit, True)
    poller = Poller(counts, lambda done: bar.update(done - bar.n))
    try:
        yield counts
    finally:
        poller.stop()
        bar.close()


def check_counters(counters, length: int, name: str) -> None:
    """Check that `counters` is None or what a kernel may advance without the GIL:
    a writable, contiguous int64 array of `length` entries (``ValueError``
    naming the argument `name` otherwise)."""
    if counters is not None and not (
            isinstance(counters, np.ndarray) and counters.dtype == np.int64
            and counters.shape == (length,) and counters.flags.c_contiguous
            and counters.flags.writeable):
        raise ValueError(f"{name} must be a writable int64 array of shape ({length},)")
