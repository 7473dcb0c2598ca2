"""Progress bars that follow counters the compiled kernels advance without the GIL."""

import threading

import numpy as np

from xmltree import _fit_progress
from xmltree._fit_progress import Poller, TreeProgress, counted_bar


def test_poller_reports_the_counters_sum_while_they_move_and_once_stopped(monkeypatch):
    monkeypatch.setattr(_fit_progress, "POLL_SECONDS", 0.001)
    counts = np.zeros(3, dtype=np.int64)
    reports = []
    two_reports = threading.Event()

    def report(total):
        reports.append(total)
        if len(reports) >= 2:
            two_reports.set()

    poller = Poller(counts, report)
    counts[1] = 5
    assert two_reports.wait(timeout=10)
    counts[2] = 2
    poller.stop()
    assert reports[-1] == 7
    assert reports == sorted(reports)


def test_counted_bar_shows_nothing_unless_asked(capsys):
    with counted_bar(10, "work", "item", False, 2) as counts:
        counts += 5
    assert capsys.readouterr().err == ""


def test_counted_bar_ends_at_the_counters_sum(capsys):
    with counted_bar(10, "work", "item", True, 2) as counts:
        assert counts.dtype == np.int64 and counts.shape == (2,)
        counts[:] = [6, 4]
    assert "work: 100%" in capsys.readouterr().err


def test_tree_progress_shows_the_nodes_of_every_tree(capsys):
    progress = TreeProgress(2)
    progress.node_counter(0)[0] = 3
    progress.node_counter(1)[0] = 4
    progress.tree_done()
    progress.tree_done()
    progress.close()
    assert "nodes=7" in capsys.readouterr().err


def test_tree_progress_counts_only_trees_grown_elsewhere(capsys):
    progress = TreeProgress(2, count_nodes=False)
    progress.tree_done()
    progress.close()
    assert "nodes=" not in capsys.readouterr().err
