"""benchmarks/plot_reliability.py: the binned precision of scores, and its plot."""

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture
def script(monkeypatch):
    pytest.importorskip("matplotlib")
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import plot_reliability

    return plot_reliability


def test_reliability_table_by_hand(script):
    Y = sp.csr_matrix(np.array([[1, 0, 1], [0, 1, 0]], dtype=np.float32))
    labels = np.array([[0, 1], [1, -1]])
    scores = np.array([[0.9, 0.15], [0.95, 0.0]])
    table = script.reliability(Y, labels, scores, bins=2)
    assert table["count"] == [1, 2]
    assert table["precision"] == [0.0, 1.0]
    assert table["mean_score"] == pytest.approx([0.15, 0.925])
    assert table["ece"] == pytest.approx((0.15 + 2 * 0.075) / 3)


def test_the_script_plots_and_reports(script, tmp_path):
    table = script.main(["--n-samples", "300", "--n-trees", "2", "--n-jobs", "1",
                         "--output", str(tmp_path / "r.png"), "--json", str(tmp_path / "r.json")])
    assert (tmp_path / "r.png").stat().st_size > 0
    assert 0 < sum(table["count"]) <= 60 * 5  # 60 test rows, top 5, padding left out
    assert json.loads((tmp_path / "r.json").read_text())["ece"] == table["ece"]
