"""What a fit reports while and after it runs: a progress bar and phase times."""

from __future__ import annotations

import threading
import time

from tqdm.auto import tqdm

__all__ = ["PhaseClock", "TreeProgress", "progress_bar"]


class PhaseClock:
    """Wall-clock seconds of the consecutive phases of a fit."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, phase: str) -> None:
        now = time.perf_counter()
        self.seconds[phase] = round(now - self._last, 6)
        self._last = now


class TreeProgress:
    """Thread-safe tqdm bar counting finished trees and expanded nodes."""

    def __init__(self, n_trees: int):
        self._bar = tqdm(total=n_trees, desc="LdSM trees", unit="tree")
        self._lock = threading.Lock()
        self._nodes: dict[int, int] = {}

    def node_callback(self, tree: int):
        """Return the ``progress`` callback for one tree's builder."""
        def update(n_expanded: int) -> None:
            with self._lock:
                self._nodes[tree] = int(n_expanded)
                self._bar.set_postfix(nodes=sum(self._nodes.values()), refresh=False)
        return update

    def tree_done(self) -> None:
        with self._lock:
            self._bar.update(1)

    def close(self) -> None:
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
