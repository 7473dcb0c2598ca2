"""Benchmark helpers, the scale plots and the LdSM diagnosis (run from a checkout)."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture
def scripts(monkeypatch):
    """Import benchmark scripts as Python runs them: their folder first on sys.path."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import _common
    import bench_scale

    return _common, bench_scale


def test_bench_scale_writes_the_report_and_its_plots(tmp_path, scripts):
    _, bench_scale = scripts
    output = tmp_path / "report"
    assert bench_scale.main(["-q", "--labels", "40", "--n-samples", "300", "--max-nodes", "15",
                             "--epochs", "1", "--n-jobs", "1", "--output", str(output)]) == 0
    assert json.loads((output / "scale.json").read_text())["results"][0]["n_labels"] == 40
    for name in ("scale_depth_vs_n_labels.png", "scale_cost_vs_n_labels.png"):
        assert (output / name).stat().st_size > 0


def test_bench_scale_without_matplotlib_fails_before_training(tmp_path, scripts, monkeypatch):
    _, bench_scale = scripts
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    monkeypatch.setattr(bench_scale, "xmltree_main", lambda *a: pytest.fail("trained"))
    with pytest.raises(ImportError, match=r"pip install 'xmltree-xmc\[plot\]'"):
        bench_scale.main(["--output", str(tmp_path / "r")])


def test_json_reports_carry_the_peak_memory(tmp_path, scripts):
    common, _ = scripts
    common.write_json(tmp_path / "r.json", {"rows": [1, 2]})
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["rows"] == [1, 2] and report["peak_rss_mb"] > 0
    assert report["peak_rss_children_mb"] >= 0


def test_diagnose_ldsm_splits_precision_into_recall_and_classifiers(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import diagnose_ldsm

    path = tmp_path / "diagnose.json"
    diagnose_ldsm.main(["--datasets", "amazon670k-shape@0.002", "--train-rows", "100",
                        "--wider-candidates", "200",
                        "--n-jobs", "1", "--json", str(path)])
    report = json.loads(path.read_text())["datasets"]["amazon670k-shape@0.002"]
    assert report["resolved params"]["leaf_model"] == "linear"
    assert set(report["fit seconds"]) >= {"trees", "linear_leaves"}
    for split, rows in report["splits"].items():
        assert rows["rows"] == (100 if split == "train" else report["test rows"])
        assert (rows["recall@5"] <= rows["recall@50"] <= rows["recall@200"]
                <= rows["recall@reached"] <= 1)
        for k in (1, 5):
            assert rows[f"final P@{k}"] <= rows[f"oracle P@{k}"] + 1e-12
        # A row without a true candidate scores 0 at 1: P@1 splits exactly.
        assert rows["final P@1"] == pytest.approx(rows["oracle P@1"] * rows["recalled P@1"])
        assert rows["oracle P@1"] == pytest.approx(rows["rows recalled"])
        assert rows["leaves reached per tree"]["mean"] >= 1
        # Re-scoring the model's own number of candidates is the model.
        assert rows["P@5, 200 candidates"] == pytest.approx(rows["final P@5"])


def test_recalled_labels_keeps_the_true_candidates(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import diagnose_ldsm
    import scipy.sparse as sp

    Y = sp.csr_matrix([[1, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 0]])
    candidates = np.array([[2, 3, -1], [0, 3, 2], [1, -1, -1]])
    recalled = diagnose_ldsm.recalled_labels(Y, candidates)
    assert recalled.toarray().tolist() == [[0, 0, 1, 0], [0, 0, 0, 0], [0, 0, 0, 0]]
