"""The shared helpers of benchmarks/ and the scale script's plots (run from a checkout)."""

import json
import sys
from pathlib import Path

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
