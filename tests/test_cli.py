"""The ``xmltree`` command line, end to end on small files."""

import json
import re

import numpy as np
import pytest

from xmltree.cli import main
from xmltree.datasets import make_synthetic, read_xc, write_xc
from xmltree.rerank import Reranked

SMALL_MODEL = ["--n-trees", "2", "--max-nodes", "31", "--epochs", "2", "--n-jobs", "1"]


@pytest.fixture
def split_files(tmp_path):
    X, Y = make_synthetic(600, 80, 12, avg_labels=2.0, random_state=1)
    train, test = tmp_path / "train.txt", tmp_path / "test.txt"
    write_xc(train, X[:500], Y[:500])
    write_xc(test, X[500:], Y[500:])
    return train, test


def test_help_lists_every_command(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for command in ("demo", "train", "predict", "evaluate", "datasets", "benchmark"):
        assert command in out


def test_train_predict_evaluate_round_trip(tmp_path, split_files, capsys):
    train, test = split_files
    model, predictions = tmp_path / "model.npz", tmp_path / "pred.txt"
    assert main(["-q", "train", str(train), "--model", str(model), "--seed", "0",
                 *SMALL_MODEL]) == 0
    assert model.exists()
    assert main(["-q", "predict", str(test), "--model", str(model), "--output",
                 str(predictions), "-k", "3"]) == 0
    lines = predictions.read_text().splitlines()
    assert lines[0].split() == ["100", "12"]
    assert all(len(line.split()) <= 3 for line in lines[1:])
    capsys.readouterr()
    assert main(["evaluate", "--labels", str(test), "--predictions", str(predictions),
                 "--train", str(train), "--json", "-k", "1", "3"]) == 0
    results = json.loads(capsys.readouterr().out)
    assert set(results) >= {"P@1", "P@3", "nDCG@3", "PSP@1", "PSP@3"}
    assert all(0.0 <= value <= 1.0 for value in results.values())
    assert results["P@1"] > 0.3  # the synthetic problem is learnable


def test_demo_on_files_prints_model_and_baseline(split_files, capsys):
    train, test = split_files
    assert main(["demo", "--data", str(train), "--test", str(test), *SMALL_MODEL]) == 0
    out = capsys.readouterr().out
    assert "LdSM" in out and "most frequent labels" in out and "P@1" in out


def test_datasets_list_and_info(split_files, capsys):
    assert main(["datasets", "list"]) == 0
    out = capsys.readouterr().out
    assert "bibtex" in out.lower() and "amazon" in out.lower()
    assert main(["datasets", "info", str(split_files[0])]) == 0
    assert "500 rows" in capsys.readouterr().out


def test_malformed_file_gives_one_line_error_with_location(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text("2 5 3\n0 1:1.0\n1 7:1.0\n")
    assert main(["datasets", "info", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "bad.txt" in err and "line 3" in err


def test_predictions_file_round_trips_through_the_reader(tmp_path):
    from xmltree.datasets import read_predictions, write_predictions

    labels = np.array([[2, 0, -1], [1, 3, 0]])
    scores = np.array([[0.5, 0.25, 0.0], [0.75, 0.5, 0.125]], dtype=np.float32)
    path = tmp_path / "p.txt"
    write_predictions(path, labels, scores, n_labels=4)
    matrix = read_predictions(path, n_labels=4)
    expected = np.array([[0.25, 0, 0.5, 0], [0.125, 0.75, 0, 0.5]], dtype=np.float32)
    assert np.array_equal(matrix.toarray(), expected)



def test_rerank_needs_a_model_trained_with_it(tmp_path, split_files, capsys):
    train, test = split_files
    plain, reranking = tmp_path / "plain.npz", tmp_path / "rerank.npz"
    output = tmp_path / "pred.txt"
    assert main(["-q", "train", str(train), "--model", str(plain), *SMALL_MODEL]) == 0
    assert main(["-q", "predict", str(test), "--model", str(plain), "--output", str(output),
                 "--rerank"]) == 1
    assert "no re-ranker" in capsys.readouterr().err and not output.exists()
    assert main(["-q", "train", str(train), "--model", str(reranking), "--rerank",
                 *SMALL_MODEL]) == 0
    assert main(["-q", "predict", str(test), "--model", str(reranking), "--output",
                 str(output), "--rerank"]) == 0
    assert len(output.read_text().splitlines()) == 101


def test_rerank_params_are_parsed_typed_and_saved(tmp_path, split_files):
    import xmltree

    train, test = split_files
    model_path, output = tmp_path / "model.npz", tmp_path / "pred.txt"
    assert main(["-q", "train", str(train), "--model", str(model_path), *SMALL_MODEL,
                 "--rerank-param", "alpha=0.3", "--rerank-param", "n_candidates=20",
                 "--rerank-param", "unit_centroids=False", "--rerank-param", "method=linear",
                 "--rerank-param", "propensity_exponent=1", "--rerank-param",
                 "tail_scorer=ridge"]) == 0
    model = xmltree.load(model_path)
    expected = {"alpha": 0.3, "n_candidates": 20, "unit_centroids": False,
                "method": "linear", "propensity_exponent": 1.0, "tail_scorer": "ridge"}
    assert isinstance(model, Reranked) and isinstance(model.estimator, xmltree.LdSM)
    assert {name: getattr(model.reranker_, name) for name in expected} == expected
    assert main(["-q", "predict", str(test), "--model", str(model_path), "--output",
                 str(output), "--rerank"]) == 0


def test_logistic_tail_scorer_from_the_command_line(tmp_path, split_files):
    import xmltree

    train, test = split_files
    model_path, output = tmp_path / "model.npz", tmp_path / "pred.txt"
    assert main(["-q", "train", str(train), "--model", str(model_path), *SMALL_MODEL,
                 "--rerank-param", "tail_scorer=logistic", "--rerank-param",
                 "logistic_penalty=0.5"]) == 0
    model = xmltree.load(model_path)
    assert (model.reranker_.tail_scorer, model.reranker_.logistic_penalty) == ("logistic", 0.5)
    assert main(["-q", "predict", str(test), "--model", str(model_path), "--output",
                 str(output), "--rerank"]) == 0
    assert len(output.read_text().splitlines()) == 101


@pytest.mark.parametrize("param,message", [
    ("alhpa=0.3", "unknown re-ranker setting 'alhpa'"),
    ("alpha", "expected NAME=VALUE"),
    ("alpha=high", "alpha: expected a value of type float, got 'high'"),
    ("n_candidates=2.5", "n_candidates: expected a value of type int"),
    ("unit_centroids=yes", "unit_centroids: expected true or false"),
    ("alpha=2", "rerank: alpha must be in"),
    ("method=harmonic", "rerank: method must be one of"),
    ("tail_scorer=logit", "rerank: tail_scorer must be one of"),
    ("logistic_penalty=0", "rerank: logistic_penalty must be a finite number > 0"),
    ("logistic_penalty=strong", "logistic_penalty: expected a value of type float"),
])
def test_bad_rerank_params_are_refused_before_training(tmp_path, split_files, capsys, param,
                                                        message):
    train, _ = split_files
    model_path = tmp_path / "model.npz"
    assert main(["-q", "train", str(train), "--model", str(model_path), *SMALL_MODEL,
                 "--rerank-param", param]) == 1
    captured = capsys.readouterr()
    assert message in captured.err
    assert "rows" not in captured.out  # refused before the data was read
    assert not model_path.exists()


def test_lomtree_learner_trains_on_most_frequent_labels_and_predicts(tmp_path, split_files,
                                                                    capsys):
    train, test = split_files
    model, output = tmp_path / "lom.npz", tmp_path / "pred.txt"
    assert main(["train", str(train), "--model", str(model), "--learner", "lomtree",
                 "--epochs", "2", "--seed", "0", "--test", str(test)]) == 0
    assert "lomtree" in capsys.readouterr().out
    assert main(["-q", "predict", str(test), "--model", str(model), "--output", str(output),
                 "-k", "3"]) == 0
    lines = output.read_text().splitlines()
    assert len(lines) == 101 and all(len(line.split()) == 3 for line in lines[1:])
    assert main(["-q", "train", str(train), "--model", str(model), "--learner", "lomtree",
                 "--lambda1", "2"]) == 1
    assert "--lambda1 do(es) not apply to --learner lomtree" in capsys.readouterr().err


def test_every_learner_of_label_ids_can_be_reranked(tmp_path, split_files, capsys):
    import xmltree

    train, test = split_files
    model_path, output = tmp_path / "lom.npz", tmp_path / "pred.txt"
    assert main(["-q", "train", str(train), "--model", str(model_path), "--learner", "lomtree",
                 "--rerank-param", "alpha=0.5", "--seed", "0"]) == 0
    model = xmltree.load(model_path)
    assert isinstance(model, Reranked) and isinstance(model.estimator, xmltree.LOMTree)
    written = {}
    for flags in ([], ["--rerank"]):
        assert main(["-q", "predict", str(test), "--model", str(model_path), "--output",
                     str(output), "-k", "3", *flags]) == 0
        written[bool(flags)] = output.read_text()
    X, _ = read_xc(test, n_features=model.n_features_in_)
    assert written[False] == prediction_file(*model.estimator.predict_top_k(X, 3), 12)
    assert written[True] == prediction_file(*model.predict_top_k(X, 3), 12)


def test_reranking_a_text_learner_is_refused_saying_why(tmp_path, capsys):
    text = tmp_path / "train.txt"
    text.write_text("__label__food pizza pasta\n__label__bank loan money\n")
    assert main(["-q", "train", str(text), "--model", str(tmp_path / "lt.npz"), "--learner",
                 "learned-tree", "--rerank"]) == 1
    assert "labels are names, and the re-ranker scores label ids" in capsys.readouterr().err


def test_older_ldsm_files_with_an_embedded_reranker_still_rerank(tmp_path, split_files):
    from test_ldsm import version_3_state
    from test_persistence import rewrite_meta

    import xmltree
    from xmltree._persistence import save_model
    from xmltree.rerank import Reranker

    train, test = split_files
    X, Y = read_xc(train)
    model = xmltree.LdSM(n_trees=2, max_nodes=15, epochs=2, random_state=0).fit(X, Y)
    stage = Reranked(model, Reranker()).fit(X, Y)
    save_model(tmp_path / "ldsm.npz", "ldsm", *version_3_state(model, stage.reranker_))
    rewrite_meta(tmp_path / "ldsm.npz", format_version=3)
    output = tmp_path / "pred.txt"
    assert main(["-q", "predict", str(test), "--model", str(tmp_path / "ldsm.npz"),
                 "--output", str(output), "--rerank"]) == 0
    X_test, _ = read_xc(test, n_features=X.shape[1])
    assert output.read_text() == prediction_file(*stage.predict_top_k(X_test, 5),
                                                 model.n_labels_)


def prediction_file(labels, scores, n_labels):
    """What write_predictions writes for these predictions."""
    import tempfile
    from pathlib import Path

    from xmltree.datasets import write_predictions

    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "expected.txt"
        write_predictions(path, labels, scores, n_labels=n_labels)
        return path.read_text()


def test_learned_tree_learner_trains_on_labelled_text(tmp_path, capsys):
    text = tmp_path / "train.txt"
    documents = ["__label__food pizza pasta salad", "__label__bank balance account money",
                 "__label__food bread cheese pizza", "__label__bank loan money account"] * 10
    text.write_text("\n".join(documents) + "\n")
    model, output = tmp_path / "lt.npz", tmp_path / "pred.txt"
    assert main(["-q", "train", str(text), "--model", str(model), "--learner", "learned-tree",
                 "--dim", "8", "--epochs", "30", "--learning-rate", "0.5", "--seed", "0"]) == 0
    queries = tmp_path / "queries.txt"
    queries.write_text("pizza and salad\nmy account balance\n")
    assert main(["-q", "predict", str(queries), "--model", str(model), "--output",
                 str(output), "-k", "1"]) == 0
    assert [line.split(":")[0] for line in output.read_text().splitlines()] == ["food", "bank"]


def test_benchmark_writes_a_json_report(tmp_path, capsys):
    output = tmp_path / "report"
    assert main(["-q", "benchmark", "--preset", "amazon670k-shape", "--scale", "0.002",
                 "0.004", "--max-nodes", "15", "--epochs", "1", "--n-jobs", "1",
                 "--output", str(output)]) == 0
    report = json.loads((output / "scale.json").read_text())
    assert report["settings"]["preset"] == "amazon670k-shape"
    results = report["results"]
    assert [r["scale"] for r in results] == [0.002, 0.004]
    assert results[1]["n_samples"] > results[0]["n_samples"]
    for result in results:
        assert result["peak_rss_mb"] > 0 and result["model_mb"] > 0
        assert 0 <= result["P@1"] <= 1 and result["max_depth"] >= 1
    assert "report:" in capsys.readouterr().out


def test_benchmark_label_curve(tmp_path):
    output = tmp_path / "curve"
    assert main(["-q", "benchmark", "--labels", "50", "200", "--n-samples", "400",
                 "--max-nodes", "15", "--epochs", "1", "--n-jobs", "1",
                 "--max-weights-per-regressor", "none", "--max-weights-per-example", "0.5",
                 "--output", str(output)]) == 0
    results = json.loads((output / "scale.json").read_text())["results"]
    assert [r["n_labels"] for r in results] == [50, 200]
    assert results[0]["max_weights_per_regressor"] is None
    assert results[0]["max_weights_per_example"] == 0.5


def test_benchmark_node_budget_defaults_to_ldsms_own(tmp_path):
    from xmltree.ldsm._auto_settings import auto_node_budget

    output = tmp_path / "curve"
    assert main(["-q", "benchmark", "--labels", "30", "--n-samples", "300", "--epochs", "1",
                 "--n-jobs", "1", "--output", str(output)]) == 0
    (result,) = json.loads((output / "scale.json").read_text())["results"]
    assert result["max_nodes"] is None
    assert result["mean_nodes"] <= auto_node_budget(240, 2)
    assert 1 <= result["n_labels_seen"] <= 30
    assert result["depth_low_seen"] <= result["depth_low"]


@pytest.mark.parametrize("option, expected", [("none", None), ("16", 16), ("auto", "auto")])
def test_benchmark_passes_the_row_features_on(tmp_path, monkeypatch, option, expected):
    from xmltree import benchmark

    seen = []
    monkeypatch.setattr(benchmark, "label_curve",
                        lambda labels, params, **_: seen.append(params) or [])
    assert main(["-q", "benchmark", "--labels", "30", "--max-row-features", option,
                 "--output", str(tmp_path / "curve")]) == 0
    assert seen[0]["max_row_features"] == expected


def test_benchmark_presets_pass_the_node_budget_on(monkeypatch):
    from xmltree import benchmark

    seen = []
    monkeypatch.setattr(benchmark, "_run_point",
                        lambda X, Y, params, *_: seen.append(params) or {})
    params = {"max_nodes": None, "arity": 2}
    benchmark.preset_runs("amazon670k-shape", [0.001], params, progress=False)
    benchmark.preset_runs("amazon670k-shape", [0.001], dict(params, max_nodes=7), progress=False)
    assert [p["max_nodes"] for p in seen] == [None, 7]


@pytest.mark.parametrize("options, leaf_model, scaling", [
    ([], "linear", "l2"),  # make_synthetic's values are tf-idf weights: "auto" keeps them, L2
    (["--leaf-model", "histogram", "--feature-scaling", "none"], "histogram", "none"),
    (["--feature-scaling", "tfidf", "--C", "0.5", "--n-candidates", "7",
      "--histogram-weight", "0.1"], "linear", "tfidf"),
])
def test_train_takes_the_leaf_and_scaling_options(tmp_path, split_files, options, leaf_model,
                                                  scaling):
    from xmltree import load

    train, _ = split_files
    model = tmp_path / "model.npz"
    assert main(["-q", "train", str(train), "--model", str(model), *SMALL_MODEL,
                 *options]) == 0
    loaded = load(model)
    assert loaded.leaf_model == leaf_model and loaded.scaler_.kind_ == scaling
    if "--C" in options:
        assert (loaded.C, loaded.n_candidates, loaded.histogram_weight) == (0.5, 7, 0.1)


@pytest.mark.parametrize("name, option, expected", [
    ("descent_threshold", "auto", "auto"), ("descent_threshold", "none", None),
    ("descent_threshold", "0.1", 0.1), ("descent_threshold", "NONE", None),
    ("max_leaf_labels", "auto", "auto"), ("max_leaf_labels", "none", None),
    ("max_leaf_labels", "12", 12), ("max_wide_branches", "none", None),
    ("max_wide_branches", "auto", "auto"), ("epochs", "auto", "auto"), ("epochs", "4", 4),
    ("max_wide_branches", "5", 5), ("max_row_features", "none", None),
    ("max_row_features", "16", 16), ("route_row_features", "none", None),
    ("route_row_features", "auto", "auto"), ("route_row_features", "8", 8),
    ("predict_candidates", "auto", "auto"), ("predict_candidates", "30", 30),
])
def test_train_takes_words_or_numbers(tmp_path, split_files, name, option, expected):
    from xmltree import load

    train, _ = split_files
    model = tmp_path / "model.npz"
    assert main(["-q", "train", str(train), "--model", str(model), *SMALL_MODEL,
                 f"--{name.replace('_', '-')}", option]) == 0
    assert getattr(load(model), name) == expected


def test_a_bad_descent_threshold_is_a_usage_error(split_files, capsys):
    train, _ = split_files
    with pytest.raises(SystemExit):
        main(["-q", "train", str(train), "--descent-threshold", "wide"])
    assert "--descent-threshold" in capsys.readouterr().err


@pytest.mark.parametrize("option", ["all", "2.5"])
def test_a_bad_leaf_label_limit_is_a_usage_error(split_files, capsys, option):
    train, _ = split_files
    with pytest.raises(SystemExit):
        main(["-q", "train", str(train), "--max-leaf-labels", option])
    assert "--max-leaf-labels" in capsys.readouterr().err


# ----------------------------------------------------------------------------- hostile arguments


@pytest.fixture
def trained(tmp_path, split_files):
    """A small saved model and its test file."""
    train, test = split_files
    model = tmp_path / "model.npz"
    assert main(["-q", "train", str(train), "--model", str(model), "--seed", "0",
                 *SMALL_MODEL]) == 0
    return model, test


def one_line_error(capsys, command):
    """The single line a failed command printed (never a traceback)."""
    err = capsys.readouterr().err
    assert err.startswith(f"xmltree {command}: error: ") and err.count("\n") == 1, err
    return err


def test_paths_that_are_directories_or_missing_give_one_line_errors(tmp_path, trained, capsys):
    model, test = trained
    blocked = tmp_path / "plain-file"
    blocked.write_text("not a directory")
    for argv, command in [
        (["datasets", "info", str(tmp_path)], "datasets"),
        (["predict", str(tmp_path), "--model", str(model), "--output", "p.txt"], "predict"),
        (["predict", str(test), "--model", str(tmp_path), "--output", "p.txt"], "predict"),
        (["predict", str(test), "--model", str(model), "--output", str(tmp_path)], "predict"),
        (["predict", str(test), "--model", str(model), "--output",
          str(blocked / "p.txt")], "predict"),
        (["train", str(test), "--model", str(tmp_path / "no" / "such" / "m.npz"),
          *SMALL_MODEL], "train"),
        (["train", str(test), "--model", str(tmp_path / ("m" * 256)), *SMALL_MODEL], "train"),
    ]:
        assert main(["-q", *argv]) == 1, argv  # these used to print tracebacks
        one_line_error(capsys, command)


def test_a_long_model_name_is_saved(tmp_path, split_files):
    model = tmp_path / ("m" * 245 + ".npz")  # 249 characters
    assert main(["-q", "train", str(split_files[0]), "--model", str(model), *SMALL_MODEL]) == 0
    assert model.exists()


def test_huge_sizes_give_one_line_errors_and_a_huge_k_is_capped(tmp_path, trained, capsys):
    model, test = trained
    output = tmp_path / "p.txt"
    assert main(["-q", "predict", str(test), "--model", str(model), "--output", str(output),
                 "-k", str(10**12)]) == 0
    assert max(len(line.split()) for line in output.read_text().splitlines()[1:]) <= 12
    for argv, command, words in [
        (["train", str(test), "--model", "m.npz", "--max-nodes", str(10**12)], "train",
         "max_nodes must be"),
        (["train", str(test), "--model", "m.npz", "--n-trees", str(10**12)], "train",
         "n_trees must be"),
        (["predict", str(test), "--model", str(model), "--output", str(output), "--n-jobs",
          str(2**31)], "predict", "n_jobs must be"),
    ]:
        assert main(["-q", *argv]) == 1
        assert words in one_line_error(capsys, command)


def test_special_output_files_are_not_replaced(tmp_path, trained, capsys):
    import os

    model, test = trained
    original = tmp_path / "original.txt"
    original.write_text("keep me")
    link, fifo = tmp_path / "link.txt", tmp_path / "fifo"
    link.symlink_to(original)
    os.mkfifo(fifo)
    for output in (link, fifo):
        # Both used to be replaced by a regular file (as root, so was a device node).
        assert main(["-q", "predict", str(test), "--model", str(model), "--output",
                     str(output)]) == 1
        assert "not a regular file" in one_line_error(capsys, "predict")
    assert link.is_symlink() and original.read_text() == "keep me"


def test_predict_prints_to_standard_output_by_default(trained, capsys):
    model, test = trained
    capsys.readouterr()
    assert main(["-q", "predict", str(test), "--model", str(model), "-k", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["100", "12"] and len(lines) == 101
    assert all(len(line.split()) <= 2 for line in lines[1:])


def test_predict_reads_standard_input(trained, tmp_path, capsys, monkeypatch):
    import io
    import sys

    model, test = trained
    from_file = tmp_path / "from-file.txt"
    assert main(["-q", "predict", str(test), "--model", str(model), "--output",
                 str(from_file)]) == 0
    capsys.readouterr()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(test.read_bytes())))
    assert main(["-q", "predict", "-", "--model", str(model)]) == 0
    assert capsys.readouterr().out == from_file.read_text()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"2 80 12\n0 1:1\n")))
    assert main(["-q", "predict", "-", "--model", str(model)]) == 1
    assert "standard input" in one_line_error(capsys, "predict")


def test_train_is_reproducible_by_default_and_prints_its_seed(tmp_path, split_files, capsys):
    train, test = split_files
    outputs = []
    for name in ("first.npz", "second.npz"):
        model = tmp_path / name
        assert main(["-q", "train", str(train), "--model", str(model), *SMALL_MODEL]) == 0
        assert "seed: 0" in capsys.readouterr().out.splitlines()
        assert main(["-q", "predict", str(test), "--model", str(model)]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]
    assert main(["-q", "train", str(train), "--model", str(tmp_path / "m.npz"), "--seed", "7",
                 *SMALL_MODEL]) == 0
    assert "seed: 7" in capsys.readouterr().out.splitlines()


def test_reranked_results_are_labelled_as_reranked(tmp_path, split_files, capsys):
    train, test = split_files
    assert main(["-q", "train", str(train), "--model", str(tmp_path / "m.npz"), "--test",
                 str(test), "--rerank", *SMALL_MODEL]) == 0
    header = capsys.readouterr().out.strip().split("\n\n")[-1].splitlines()[0]
    assert header.split() == ["ldsm", "+", "rerank"]
    assert main(["demo", "--data", str(train), "--test", str(test), "--rerank",
                 *SMALL_MODEL]) == 0
    assert "LdSM + rerank" in capsys.readouterr().out


def test_demo_lists_and_takes_only_ldsm_options(capsys):
    from xmltree import LdSM

    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    text = capsys.readouterr().out
    assert "--n-trees" in text and "--histogram-weight" in text
    for foreign in ("--dim", "--beam-width", "--swap-resistance", "--ngrams", "--tree",
                    "--max-internal-nodes", "--learner"):
        assert foreign not in text
    flags = re.findall(r"^ +(--[\w-]+)", text, flags=re.MULTILINE)  # the option column
    names = {flag[2:].replace("-", "_") for flag in flags}
    options = {"help", "data", "test", "format", "seed", "rerank", "rerank_param"}
    assert names - options <= set(LdSM._param_names())
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--dim", "5"])
    assert exit_info.value.code == 2 and "unrecognized arguments: --dim" in \
        capsys.readouterr().err


def test_a_model_that_is_not_a_regular_file_is_refused(trained, capsys):
    # /dev/zero used to be read without end.
    _, test = trained
    assert main(["-q", "predict", str(test), "--model", "/dev/zero"]) == 1
    assert "not a regular file" in one_line_error(capsys, "predict")


def test_training_never_overwrites_its_data(tmp_path, split_files, capsys):
    train, test = split_files
    contents = train.read_bytes(), test.read_bytes()
    for argv in (["--model", str(train)], ["--model", str(test), "--test", str(test)],
                 ["--model", str(tmp_path / "." / train.name)]):
        assert main(["-q", "train", str(train), *argv, *SMALL_MODEL]) == 1
        assert "refusing to overwrite" in one_line_error(capsys, "train")
    assert (train.read_bytes(), test.read_bytes()) == contents


def test_predictions_never_overwrite_the_data_or_the_model(trained, capsys):
    model, test = trained
    contents = model.read_bytes(), test.read_bytes()
    for output, name in ((model, "--model"), (test, "data file")):
        assert main(["-q", "predict", str(test), "--model", str(model), "--output",
                     str(output)]) == 1
        assert f"is the {name}: refusing" in one_line_error(capsys, "predict")
    assert (model.read_bytes(), test.read_bytes()) == contents


def test_an_unwritable_output_directory_names_the_output(tmp_path, trained, capsys):
    model, test = trained
    output = tmp_path / "missing" / "predictions.txt"
    assert main(["-q", "predict", str(test), "--model", str(model), "--output",
                 str(output)]) == 1
    error = one_line_error(capsys, "predict")
    assert str(output) in error and ".tmp" not in error  # not the hidden temporary file


def test_benchmark_reports_a_point_that_did_not_finish_and_goes_on(tmp_path, monkeypatch,
                                                                    capsys):
    import os

    from xmltree import benchmark

    run_ldsm = benchmark._run_ldsm

    def dies_on_many_labels(data, params, timer):
        if data[1].shape[1] > 100:
            os._exit(3)
        return run_ldsm(data, params, timer)

    monkeypatch.setattr(benchmark, "_run_ldsm", dies_on_many_labels)
    assert main(["-q", "benchmark", "--labels", "50", "200", "--n-samples", "300",
                 "--max-nodes", "7", "--epochs", "1", "--n-jobs", "1",
                 "--output", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert captured.err == ("xmltree benchmark: a point did not finish: benchmark child "
                            "ended without a result: exited with code 3\n")
    row, = [line for line in captured.out.splitlines() if "did not finish" in line]
    assert row.split()[:2] == ["300", "200"] and row.endswith("did not finish: exited with code 3")
    finished, failed = json.loads((tmp_path / "scale.json").read_text())["results"]
    assert finished["P@1"] > 0 and "failed" not in finished
    assert failed["failed"] == "exited with code 3" and failed["n_labels"] == 200
    assert "P@1" not in failed
