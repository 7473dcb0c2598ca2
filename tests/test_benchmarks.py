"""Benchmark helpers, the scale plots and the LdSM diagnosis (run from a checkout)."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

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


def test_bench_scale_plots_the_points_that_finished(tmp_path, scripts):
    common, _ = scripts
    pytest.importorskip("matplotlib")

    def point(n_labels):
        return {"n_samples": 300, "n_labels": n_labels, "n_labels_seen": n_labels,
                "max_depth": 3, "depth_low": 2.0, "depth_high": 6.0, "depth_low_seen": 2.0,
                "predict_cpu_ms_per_example": 0.1, "peak_rss_mb": 60.0, "model_mb": 1.0,
                "train_cpu_s": 0.5}

    unfinished = {"n_samples": 300, "n_labels": 4000, "n_labels_seen": 300,
                  "failed": "over 100 MB", "message": "..."}
    paths = common.plot_scale([point(40), point(400), unfinished], tmp_path)
    assert len(paths) == 2 and all(path.stat().st_size > 0 for path in paths)


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


@pytest.fixture
def bench_ldsm(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import bench_ldsm

    return bench_ldsm


def _run(model, **scores):
    return {"model": model, "n_trees": None, "P@1": 0.5, "P@5": 0.2, "PSP@5": 0.3,
            "train_s": 1.0, "train_cpu_s": 2.0, "predict_ms_per_example": 0.1, **scores}


def test_suite_rows_set_ldsm_against_the_best_peer_of_each_metric(bench_ldsm):
    results = {"a": [_run("ldsm", train_s=3.0, predict_ms_per_example=0.2),
                     _run("ldsm", n_trees=50, **{"P@1": 0.9}),  # not LdSM's first run
                     _run("napkinxc-plt", **{"P@1": 0.6, "P@5": 0.1}),
                     _run("omikuji-bonsai", **{"P@1": 0.55, "P@5": 0.19, "PSP@5": 0.31}),
                     _run("pecos-xrlinear", predict_ms_per_example=0.4, **{"P@5": 0.1})],
               "b@0.1": [_run("ldsm"), _run("omikuji-parabel", **{"P@1": 0.4})],
               "ldsm only": [_run("ldsm")]}
    rows = bench_ldsm.suite_rows(results)
    assert [row["dataset"] for row in rows] == ["a", "b@0.1"]
    assert rows[0]["P@1"] == (0.5, 0.6, "napkinxc-plt")
    assert rows[0]["P@5"] == (0.2, 0.19, "omikuji-bonsai")
    assert rows[0]["PSP@5"] == (0.3, 0.31, "omikuji-bonsai")
    assert rows[0]["fit_ratio"] == 3.0 and rows[0]["predict_ratio"] == 0.5
    assert rows[0]["fit_cpu_ratio"] == 1.0
    assert np.isnan(rows[1]["fit_ratio"]) and np.isnan(rows[1]["predict_ratio"])


def test_suite_table_counts_the_sets_where_ldsm_leads(bench_ldsm, capsys):
    results = {"a": [_run("ldsm", train_s=3.0, train_cpu_s=8.0),
                     _run("napkinxc-plt", **{"P@1": 0.6})],
               "b": [_run("ldsm"), _run("napkinxc-plt", train_s=2.0)],
               "c@0.1": [_run("ldsm", train_s=9.0), _run("napkinxc-plt")]}
    bench_ldsm.print_suite(results)
    out = capsys.readouterr().out
    assert "| a | 50.00 / 60.00 (napkinxc-plt) | 20.00 / 20.00 (napkinxc-plt)" in out
    # ties count as leading; the synthetic set stays out of the median (3.0 and 0.5)
    assert "LdSM >= the best peer on P@1 2, P@5 3, PSP@5 3 of 3 sets" in out
    assert "over the 2 real sets 1.75x (CPU 2.50x)" in out


def test_suite_table_gives_the_paired_error_of_each_lead(bench_ldsm, capsys):
    paired = {"P@1": (-0.1, 0.02), "P@5": (0.0, 0.01), "PSP@5": (-0.01, 0.01)}
    results = {"a": [_run("ldsm"), _run("napkinxc-plt", vs_ldsm=paired,
                                        **{"P@1": 0.6, "PSP@5": 0.31})],
               "b": [_run("ldsm"), _run("napkinxc-plt")]}  # not paired
    bench_ldsm.print_suite(results)
    out = capsys.readouterr().out
    assert "| a | 50.00 / 60.00 (napkinxc-plt; -10.00 ± 2.00) | 20.00 / 20.00 (napkinxc-plt; " \
           "+0.00 ± 1.00) | 30.00 / 31.00 (napkinxc-plt; -1.00 ± 1.00)" in out
    assert "| b | 50.00 / 50.00 (napkinxc-plt) |" in out
    # Behind by 5 errors on P@1 counts; by one on PSP@5 does not, nor unpaired runs.
    assert "by more than 2 paired standard errors on P@1 1, P@5 0, PSP@5 0 sets" in out


def test_suite_table_without_plt_gives_no_median_and_no_warning(bench_ldsm, capsys):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bench_ldsm.print_suite({"a": [_run("ldsm"), _run("omikuji-parabel")]})
    out = capsys.readouterr().out
    assert "over the 1 real sets n/a (CPU n/a)" in out
    assert "| n/a (n/a) | n/a |" in out  # no PLT, no XR-Linear


def test_runs_are_paired_with_ldsm_row_by_row(bench_ldsm):
    from xmltree.metrics import paired_difference

    rng = np.random.default_rng(0)
    Y = sp.csr_matrix((rng.random((30, 12)) < 0.3).astype(np.float32))
    q = rng.uniform(1, 3, 12)
    labels = [np.argsort(-rng.random((30, 12)), axis=1)[:, :5] for _ in range(3)]
    results = [{"model": "omikuji-parabel", "top_labels": labels[0]},
               {"model": "ldsm", "top_labels": labels[1]},
               {"model": "ldsm", "top_labels": labels[2]}]  # another --n-trees
    bench_ldsm.pair_with_ldsm(results, Y, q)
    assert results[0]["vs_ldsm"]["PSP@5"] == paired_difference(Y, labels[1], labels[0], "PSP",
                                                                5, inv_propensity=q)
    assert results[0]["vs_ldsm"]["P@1"] == paired_difference(Y, labels[1], labels[0], "P", 1)
    assert "vs_ldsm" not in results[1] and "vs_ldsm" in results[2]
    assert not any("top_labels" in result for result in results)


def test_suite_runs_only_its_own_sets(bench_ldsm):
    args = bench_ldsm.parse_args(["--suite", "--datasets", "ohsumed", "bibtex"])
    assert args.datasets == ["bibtex", "ohsumed"]  # in the suite's order
    assert bench_ldsm.parse_args(["--suite"]).datasets == list(bench_ldsm.SUITE)
    assert bench_ldsm.parse_args([]).datasets == ["bibtex", "delicious"]
    with pytest.raises(SystemExit):
        bench_ldsm.parse_args(["--suite", "--datasets", "eurlex"])


def test_suite_leaves_out_one_vs_all_peers_on_many_labels(bench_ldsm, monkeypatch):
    monkeypatch.setattr(bench_ldsm.importlib.util, "find_spec", lambda name: None)
    peers = ["ldsm", "napkinxc-plt", "napkinxc-br", "napkinxc-ovr", "pecos-xrlinear"]
    assert bench_ldsm.peers_for(peers, 100, suite=True) == peers[1:4]
    assert bench_ldsm.peers_for(peers, 20000, suite=True) == ["napkinxc-plt"]
    assert bench_ldsm.peers_for(peers, 20000, suite=False) == peers[1:4]


def test_bench_ldsm_reports_what_the_auto_settings_resolved_to(bench_ldsm, tmp_path):
    import contextlib

    rng = np.random.default_rng(0)
    X = sp.random(60, 30, density=0.2, format="csr", random_state=0, dtype=np.float32)
    dense = rng.random((60, 6)) < 0.3
    dense[:, 0] |= ~dense.any(axis=1)  # every row has a label
    Y = sp.csr_matrix(dense.astype(np.float32))
    _, info = bench_ldsm.run_ldsm((X, Y, X, Y), 2, {"max_nodes": 7, "epochs": 1}, 1,
                                  lambda phase: contextlib.nullcontext())
    path = tmp_path / "report.json"
    bench_ldsm.write_json(path, {"rows": [info]})
    resolved = json.loads(path.read_text())["rows"][0]["resolved_params"]
    assert resolved["C"] == 0.35 and resolved["max_nodes"] == 7


def test_bench_ldsm_suite_prints_the_table(bench_ldsm, monkeypatch, capsys):
    pytest.importorskip("napkinxc")
    monkeypatch.setattr(bench_ldsm, "SUITE", ("amazon670k-shape@0.002",))
    bench_ldsm.main(["--suite", "--models", "ldsm", "napkinxc-plt", "--n-jobs", "1",
                     "--n-trees", "2", "--max-nodes", "15", "--epochs", "1"])
    out = capsys.readouterr().out
    assert "| amazon670k-shape@0.002 | " in out and "(napkinxc-plt; " in out  # paired
    assert " of 1 sets; median fit ratio LdSM / PLT over the 0 real sets n/a (CPU n/a)" in out


def _plot_scale_ratio(plot_scale_ratio, reports, tmp_path):
    """Run the plot script on `reports`, each written to a JSON file of its own."""
    pytest.importorskip("matplotlib")
    paths = []
    for number, report in enumerate(reports):
        paths.append(tmp_path / f"report{number}.json")
        paths[-1].write_text(json.dumps(report))
    plot_scale_ratio.main([*map(str, paths), "--output", str(tmp_path / "ratio.png")])


def test_scale_ratios_follow_each_preset_against_its_best_peer(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import plot_scale_ratio

    def report(dataset, ldsm, parabel, bonsai):
        def run(model, scores):
            return _run(model, **{"peak_rss_mb": 100.0, **scores})

        return {"datasets": {dataset: [
            run("ldsm", ldsm), run("ldsm", {"P@1": 0.99}),  # not LdSM's first run
            run("omikuji-parabel", parabel), run("omikuji-bonsai", bonsai)]}}

    reports = [report("shape@0.3", {"P@1": 0.6, "peak_rss_mb": 50.0},
                      {"P@1": 0.5, "train_s": 4.0, "peak_rss_mb": 100.0}, {"P@1": 0.4}),
               report("shape@0.1", {"P@5": 0.3}, {}, {"P@5": 0.25}),
               {"datasets": {"bibtex": [_run("ldsm"), _run("omikuji-parabel")],
                             "other@1": [_run("ldsm")]}}]  # no scale, no peer
    curves = plot_scale_ratio.scale_ratios(reports)
    assert list(curves) == ["shape"]
    (low, at_low), (high, at_high) = curves["shape"]
    assert (low, high) == (0.1, 0.3)
    assert at_low["P@5"] == pytest.approx(0.3 / 0.25) and at_low["P@1"] == 1.0
    assert at_high["P@1"] == pytest.approx(0.6 / 0.5)
    assert at_high["train_s"] == 0.25 and at_high["peak_rss_mb"] == 0.5
    _plot_scale_ratio(plot_scale_ratio, reports[:2], tmp_path)
    assert (tmp_path / "ratio.png").stat().st_size > 0


def test_scale_ratios_pool_a_sets_runs_over_reports(monkeypatch):
    """A peer run in a report of its own joins LdSM's set; a model's first run counts."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import plot_scale_ratio

    def run(model, p_at_1):
        return _run(model, **{"P@1": p_at_1, "peak_rss_mb": 100.0})

    reports = [{"datasets": {"shape@0.3": [run("ldsm", 0.6), run("omikuji-parabel", 0.3)]}},
               {"datasets": {"shape@0.3": [run("omikuji-bonsai", 0.4)]}},
               {"datasets": {"shape@0.3": [run("omikuji-bonsai", 0.59), run("ldsm", 0.1)]}}]
    (scale, ratios), = plot_scale_ratio.scale_ratios(reports)["shape"]
    assert scale == 0.3 and ratios["P@1"] == pytest.approx(0.6 / 0.4)
    assert ratios["train_s"] == 1.0


def test_scale_ratios_name_the_scales_where_no_peer_finished(monkeypatch, tmp_path, capsys):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import plot_scale_ratio

    def run(model):
        return _run(model, peak_rss_mb=100.0)

    def failure(model):
        return {"model": model, "n_trees": None, "reason": "over 21000 MB", "message": "..."}

    reports = [{"datasets": {"shape@0.1": [run("ldsm"), run("omikuji-parabel")],
                             "shape@0.3": [run("ldsm")], "shape@1": [run("ldsm")]},
                "failed": {"shape@0.3": [failure("omikuji-parabel")]}},
               {"datasets": {"shape@0.5": [run("ldsm"), run("omikuji-bonsai")],
                             "shape@0.3": []},
                "failed": {"shape@0.3": [failure("omikuji-bonsai")],
                           "shape@0.5": [failure("omikuji-parabel")]}}]  # Bonsai finished
    assert plot_scale_ratio.unfinished_peers(reports) == {"shape": [
        (0.3, ["omikuji-parabel: over 21000 MB", "omikuji-bonsai: over 21000 MB"])]}
    assert [scale for scale, _ in plot_scale_ratio.scale_ratios(reports)["shape"]] == [0.1, 0.5]
    _plot_scale_ratio(plot_scale_ratio, reports[:2], tmp_path)
    assert ("shape@0.3: no peer finished (omikuji-parabel: over 21000 MB; omikuji-bonsai: "
            "over 21000 MB)") in capsys.readouterr().out


def test_benchmark_data_reads_an_unregistered_folder_in_one_space(tmp_path, scripts):
    common, _ = scripts
    folder = tmp_path / "tiny"
    folder.mkdir()
    (folder / "train.txt").write_text("2 3 2\n0 0:1 2:2\n1 1:1\n")
    (folder / "test.txt").write_text("1 5 4\n3 4:1\n")
    X_train, Y_train, X_test, Y_test = common.load_benchmark_data(tmp_path, "tiny")
    assert X_train.shape == (2, 5) and X_test.shape == (1, 5)
    assert Y_train.shape == (2, 4) and Y_test.shape == (1, 4)
    assert X_train.toarray().tolist() == [[1, 0, 2, 0, 0], [0, 1, 0, 0, 0]]
    with pytest.raises(KeyError, match="'nowhere' is neither a registered dataset"):
        common.load_benchmark_data(tmp_path, "nowhere")


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

    Y = sp.csr_matrix([[1, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 0]])
    candidates = np.array([[2, 3, -1], [0, 3, 2], [1, -1, -1]])
    recalled = diagnose_ldsm.recalled_labels(Y, candidates)
    assert recalled.toarray().tolist() == [[0, 0, 1, 0], [0, 0, 0, 0], [0, 0, 0, 0]]


# ----------------------------------------------------------------------------- measured runs


def _measure_within(seconds, runner, **options):
    """``measure(runner, ...)``'s result or exception, failing if it takes longer than
    `seconds` (a parent that waits forever for a dead child hangs, it does not fail)."""
    import threading

    from xmltree.benchmark import measure

    outcome = {}

    def run():
        try:
            outcome["result"] = measure(runner, _TINY, np.ones(3), **options)
        except BaseException as error:  # noqa: BLE001 - handed to the test
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"measure did not return within {seconds} s"
    return outcome


#: Three rows of one label each: features, labels, test features and test labels alike.
_TINY = (sp.csr_matrix(np.eye(3, dtype=np.float32)),) * 4


def _perfect(data, timer):
    with timer("train"), timer("predict"):
        pass
    return np.array([[0], [1], [2]]), {"model_mb": 1.0}


def _killed(data, timer):
    import os
    import signal

    os.kill(os.getpid(), signal.SIGKILL)


def _exits(data, timer):
    import os

    os._exit(3)


def _raises(data, timer):
    raise ValueError("no such setting: frobnicate")


def _grows(data, timer):
    import time

    grown = np.ones(300 * 2**20 // 8)  # 300 MiB, touched
    time.sleep(30)
    return grown


def test_measure_returns_the_childs_scores():
    result = _measure_within(60, _perfect)["result"]
    assert result["P@1"] == 1.0 and result["model_mb"] == 1.0 and result["peak_rss_mb"] > 0
    assert "top_labels" not in result
    kept = _measure_within(60, _perfect, keep_labels=True)["result"]["top_labels"]
    assert kept.dtype == np.int64 and kept.tolist() == [[0], [1], [2]]


def test_shortest_fit_is_one_run_whole():
    from xmltree.benchmark import shortest_fit

    runs = [{"train_s": 3.0, "P@1": 0.1, "predict_ms_per_example": 1.0},
            {"train_s": 1.0, "P@1": 0.2, "predict_ms_per_example": 5.0},
            {"train_s": 2.0, "P@1": 0.3, "predict_ms_per_example": 2.0}]
    assert shortest_fit(runs) == {"train_s": 1.0, "P@1": 0.2, "predict_ms_per_example": 5.0,
                                  "train_s_runs": [3.0, 1.0, 2.0]}
    assert "train_s_runs" not in runs[1]  # the runs themselves are left as they were
    with pytest.raises(ValueError, match="at least one run"):
        shortest_fit([])


@pytest.mark.parametrize("runner, reason", [(_killed, "killed by SIGKILL"),
                                            (_exits, "exited with code 3"),
                                            (_raises, "failed")])
def test_measure_reports_a_child_that_ends_without_a_result(runner, reason):
    from xmltree.benchmark import RunFailed

    error = _measure_within(60, runner)["error"]
    assert isinstance(error, RunFailed) and error.reason == reason
    if reason == "failed":
        assert "ValueError: no such setting: frobnicate" in str(error)


def test_measure_stops_a_child_above_the_memory_limit():
    import os

    from xmltree.benchmark import RunFailed, _resident_mb

    if _resident_mb(os.getpid()) is None:
        pytest.skip("no /proc to read resident memory from")
    limit = round(_resident_mb(os.getpid())) + 150
    error = _measure_within(20, _grows, memory_limit_mb=limit)["error"]
    assert isinstance(error, RunFailed) and error.reason == f"over {limit} MB"
    assert "above the limit" in str(error)


def test_bench_ldsm_reports_a_run_that_did_not_finish_and_goes_on(bench_ldsm, monkeypatch,
                                                                   tmp_path, capsys):
    monkeypatch.setitem(bench_ldsm.PEER_RUNNERS, "napkinxc",
                        lambda data, kind, n_jobs, timer: _killed(data, timer))
    report = tmp_path / "report.json"
    bench_ldsm.main(["--datasets", "amazon670k-shape@0.002", "--models", "napkinxc-plt",
                     "ldsm", "--n-jobs", "1", "--n-trees", "2", "--max-nodes", "15",
                     "--epochs", "1", "--markdown", "--json", str(report)])
    out = capsys.readouterr().out
    assert "napkinxc-plt          did not finish: killed by SIGKILL" in out
    assert "| amazon670k-shape@0.002 | napkinxc-plt | did not finish: killed by SIGKILL |" in out
    assert "| amazon670k-shape@0.002 | scaling " in out  # LdSM's fit by phase
    written = json.loads(report.read_text())
    assert [run["model"] for run in written["datasets"]["amazon670k-shape@0.002"]] == ["ldsm"]
    failure, = written["failed"]["amazon670k-shape@0.002"]
    assert failure["model"] == "napkinxc-plt" and failure["reason"] == "killed by SIGKILL"


def test_markdown_leaves_out_the_phase_table_without_ldsm(bench_ldsm, capsys):
    bench_ldsm.print_markdown({"bibtex": [_run("omikuji-parabel", **{"P@3": 0.4,
                                                                     "peak_rss_mb": 9.0})]}, {})
    out = capsys.readouterr().out
    assert "| bibtex | omikuji-parabel | 50.00 | 40.00 | 20.00 | 30.00 |" in out
    assert "fit seconds by phase" not in out


def test_bench_ldsm_repeats_every_model_round_after_round(bench_ldsm, monkeypatch, tmp_path,
                                                          capsys):
    measured = bench_ldsm.measure
    order = []

    def recorded(runner, data, *args, **kwargs):
        order.append(len(order))
        result = measured(runner, data, *args, **kwargs)
        result["train_s"] = [3.0, 5.0, 1.0, 4.0, 2.0, 6.0][order[-1]]
        result["call"] = order[-1]
        return result

    monkeypatch.setattr(bench_ldsm, "measure", recorded)
    monkeypatch.setitem(bench_ldsm.PEER_RUNNERS, "napkinxc",
                        lambda data, kind, n_jobs, timer: _perfect(data, timer))
    monkeypatch.setattr(bench_ldsm, "load_benchmark_data", lambda home, name: _TINY)
    report = tmp_path / "report.json"
    bench_ldsm.main(["--datasets", "tiny", "--models", "ldsm", "napkinxc-plt", "--n-jobs", "1",
                     "--n-trees", "2", "--max-nodes", "3", "--epochs", "1", "--repeat", "3",
                     "--json", str(report)])
    ldsm, plt = json.loads(report.read_text())["datasets"]["tiny"]
    # Calls alternate LdSM, PLT, LdSM...; each model's shortest run is reported whole.
    assert ldsm["train_s_runs"] == [3.0, 1.0, 2.0] and ldsm["call"] == 2
    assert plt["train_s_runs"] == [5.0, 4.0, 6.0] and plt["call"] == 3


@pytest.mark.parametrize("repeats", ["0", "two"])
def test_bench_ldsm_refuses_a_bad_repeat(bench_ldsm, repeats, capsys):
    with pytest.raises(SystemExit):
        bench_ldsm.parse_args(["--repeat", repeats])
    assert "--repeat" in capsys.readouterr().err
