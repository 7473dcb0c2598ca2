"""The command line's text pipeline: train --text, then predict prints label names."""

import json

import numpy as np
import pytest

import xmltree
from xmltree.cli import main

WORDS = {"grain": "wheat corn harvest crop", "oil": "crude barrel opec refinery",
         "ship": "port vessel cargo tanker"}


def documents(n, seed):
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        label = str(rng.choice(sorted(WORDS)))
        rows.append((label, " ".join(rng.choice(WORDS[label].split(), size=6))))
    return rows


@pytest.fixture
def files(tmp_path):
    train = tmp_path / "train.txt"
    train.write_text("".join(f"__label__{label} {text}\n" for label, text in documents(90, 0)),
                     encoding="utf-8")
    test = tmp_path / "test.jsonl"
    test.write_text("".join(json.dumps({"text": text, "labels": [label]}) + "\n"
                            for label, text in documents(30, 1)), encoding="utf-8")
    return train, test


LDSM = ["--n-trees", "2", "--max-nodes", "7", "--epochs", "3", "--n-jobs", "1", "--seed", "0"]


def test_train_text_evaluate_save_and_predict_names(files, tmp_path, capsys):
    train, test = files
    model = tmp_path / "model.npz"
    assert main(["-q", "train", str(train), "--text", "--model", str(model), "--test",
                 str(test), "--min-count", "1", "--ngrams", "2", "--buckets", "32",
                 *LDSM]) == 0
    printed = capsys.readouterr().out
    assert "train: 90 documents, 3 labels" in printed and "P@1 (%)" in printed
    loaded = xmltree.load(model)
    assert isinstance(loaded, xmltree.TextClassifier) and loaded.vectorizer_.ngrams == 2
    assert loaded.estimator_.n_trees == 2 and loaded.weighting == "tfidf"

    assert main(["-q", "predict", str(test), "--model", str(model), "-k", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    truth = [json.loads(line)["labels"][0] for line in test.read_text().splitlines()]
    predicted = [line.split(":")[0] for line in lines]
    assert len(lines) == 30 and np.mean(np.array(predicted) == truth) > 0.8

    output = tmp_path / "names.txt"
    assert main(["-q", "predict", str(train), "--model", str(model), "-k", "5", "--output",
                 str(output)]) == 0
    first = output.read_text().splitlines()[0].split()
    assert 1 <= len(first) <= 3  # padding is not written
    assert all(token.split(":")[0] in WORDS for token in first)


@pytest.mark.parametrize("flags, message", [
    (["--learner", "lomtree"], "--text trains LdSM"),
    (["--rerank"], "--rerank does not apply to --text"),
    (["--weighting", "bm25"], "invalid choice"),
    (["--dim", "4"], "--dim do(es) not apply"),
    (["--pair-min-documents", "0"], "pair_min_documents must be an integer >= 1"),
    (["--pair-weight", "-1"], "pair_weight must be a finite number > 0"),
])
def test_bad_text_options_fail_before_reading(files, tmp_path, capsys, flags, message):
    train, _ = files
    code = None
    try:
        code = main(["-q", "train", str(tmp_path / "missing.txt"), "--text", "--model",
                     str(tmp_path / "m.npz"), *flags])
    except SystemExit as exit_:  # argparse refuses an invalid choice
        code = exit_.code
    assert code != 0 and message in capsys.readouterr().err


@pytest.mark.parametrize("flag, value", [("--weighting", "count"),
                                         ("--pair-min-documents", "3"), ("--pair-weight", "1")])
def test_text_feature_options_need_text(files, tmp_path, capsys, flag, value):
    train, _ = files
    assert main(["-q", "train", str(train), "--model", str(tmp_path / "m.npz"),
                 flag, value]) == 1
    assert f"{flag} applies to --text only" in capsys.readouterr().err


@pytest.mark.parametrize("flags, pair_min_documents, pair_weight", [
    ([], 20, 0.4),
    (["--pair-min-documents", "none"], None, 0.4),
    (["--pair-min-documents", "3", "--pair-weight", "0.7"], 3, 0.7),
])
def test_word_pair_options_set_the_vectorizer(files, tmp_path, flags, pair_min_documents,
                                              pair_weight):
    train, _ = files
    model = tmp_path / "model.npz"
    assert main(["-q", "train", str(train), "--text", "--model", str(model), *flags,
                 *LDSM]) == 0
    vectorizer = xmltree.load(model).vectorizer_
    assert vectorizer.pair_min_documents == pair_min_documents
    assert vectorizer.pair_weight == pair_weight
    assert (len(vectorizer.pairs_) > 0) == (pair_min_documents == 3)


def test_predict_reads_documents_from_standard_input(files, tmp_path, capsys, monkeypatch):
    import io
    import sys

    train, _ = files
    model = tmp_path / "tags.npz"
    assert main(["-q", "train", str(train), "--text", "--model", str(model), "--min-count", "1",
                 *LDSM]) == 0
    capsys.readouterr()
    stdin = io.TextIOWrapper(io.BytesIO(b"wheat corn harvest\nopec crude barrel\n"))
    monkeypatch.setattr(sys, "stdin", stdin)
    assert main(["-q", "predict", "-", "--model", str(model), "-k", "1"]) == 0
    assert [line.split(":")[0] for line in capsys.readouterr().out.splitlines()] == [
        "grain", "oil"]


def test_invalid_utf8_is_a_one_line_error_naming_file_and_line(files, tmp_path, capsys):
    train, _ = files
    bad = tmp_path / "bad.txt"
    bad.write_bytes(train.read_bytes() + b"__label__oil crude \xff barrel\n")
    assert main(["-q", "train", str(bad), "--text", "--model", str(tmp_path / "m.npz"),
                 *LDSM]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "bad.txt, line 91" in error and "UTF-8" in error
