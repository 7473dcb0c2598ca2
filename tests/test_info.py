"""``xmltree info MODEL``: what a model file holds, for every learner's files."""

import re

import numpy as np
import pytest

import xmltree
from xmltree import LdSM, LearnedTree, LOMTree, TextClassifier
from xmltree._base import TRAINING_KEY
from xmltree._persistence import load_model, save_model
from xmltree.cli import main
from xmltree.datasets import make_synthetic
from xmltree.rerank import Reranked, Reranker

TEXTS = ["wheat corn harvest", "crude oil barrel", "port cargo vessel", "corn crop wheat"] * 10
NAMES = [["grain"], ["oil"], ["ship"], ["grain", "crop"]] * 10


@pytest.fixture(scope="module")
def data():
    return make_synthetic(n_samples=240, n_features=40, n_labels=12, avg_labels=2.0,
                          random_state=0)


def small_ldsm():
    return LdSM(n_trees=2, max_nodes=15, epochs=2, n_jobs=1, random_state=0)


def fitted(kind, X, Y):
    """A fitted model of each kind that has its own model files."""
    if kind == "ldsm":
        return small_ldsm().fit(X, Y)
    if kind == "lomtree":
        return LOMTree(random_state=0).fit(X, Y.indices[Y.indptr[:-1]])
    if kind == "learned_tree":
        return LearnedTree(dim=4, epochs=1, random_state=0).fit(X, Y)
    if kind == "reranked":
        return Reranked(small_ldsm().fit(X, Y), Reranker()).fit(X, Y)
    return TextClassifier(small_ldsm(), min_count=1).fit(TEXTS, NAMES)


def info(capsys, path) -> str:
    assert main(["info", str(path)]) == 0
    return capsys.readouterr().out


def flattened(params, prefix=""):
    for name, value in params.items():
        if isinstance(value, dict) and value:
            yield from flattened(value, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}"


def innermost(model):
    while True:
        inner = model.estimator if isinstance(model, Reranked) else getattr(
            model, "estimator_", None)
        if inner is None:
            return model
        model = inner


@pytest.mark.parametrize("kind", ["ldsm", "lomtree", "learned_tree", "reranked", "text"])
def test_info_reports_what_the_file_holds(kind, data, tmp_path, capsys):
    X, Y = data
    model = fitted(kind, X, Y)
    path = tmp_path / "model.npz"
    model.save(path)
    report = info(capsys, path)
    stored = load_model(path)
    assert f"learner: {type(model).__name__}" in report
    assert f"kind {stored.kind!r}, format version {stored.version}" in report
    assert f"labels: {model._n_outputs()}\n" in report
    assert f"features: {model.n_features_in_}\n" in report
    learner = innermost(model)
    if isinstance(learner, LdSM):
        assert f"trees: {len(learner.n_nodes_)}\n" in report
        assert f"nodes: {int(np.sum(learner.n_nodes_))}\n" in report
        assert f"leaves: {int(np.sum(learner.n_leaves_))}\n" in report
    elif isinstance(learner, LOMTree):
        assert f"nodes: {learner.tree_statistics()['n_nodes']}\n" in report
    else:
        assert f"leaves: {len(learner.classes_)}\n" in report
    n_samples = len(TEXTS) if kind == "text" else X.shape[0]
    assert re.search(rf"training: {n_samples} samples, \d+ features, .*fit [\d.]+ s", report)
    # Every stored setting is listed, whatever the learner stores.
    settings = report.split("settings (as stored):\n")[1]
    shown = {line.split(" = ")[0].strip() for line in settings.splitlines()}
    stored_settings = {k: v for k, v in stored.params.items() if k != TRAINING_KEY}
    assert shown == set(flattened(stored_settings))
    # Every array is counted in one part, and the parts add up to the arrays.
    parts = re.findall(r"^  \S+ +(\d+) arrays", report, flags=re.MULTILINE)
    assert sum(int(count) for count in parts) == len(stored.arrays)


def test_training_facts_do_not_change_predictions_and_survive_a_resave(data, tmp_path):
    X, Y = data
    model = small_ldsm().fit(X, Y)
    first, second = tmp_path / "first.npz", tmp_path / "second.npz"
    model.save(first)
    loaded = xmltree.load(first)
    for a, b in zip(model.predict_top_k(X, 5), loaded.predict_top_k(X, 5)):
        np.testing.assert_array_equal(a, b)
    loaded.save(second)
    assert load_model(second).params[TRAINING_KEY] == load_model(first).params[TRAINING_KEY]
    facts = load_model(first).params[TRAINING_KEY]
    assert (facts["n_samples"], facts["n_features"], facts["n_labels"]) == (240, 40, 12)
    assert facts["fit_seconds"] >= 0


def test_files_without_training_facts_still_load_and_say_so(data, tmp_path, capsys):
    X, Y = data
    model = small_ldsm().fit(X, Y)
    path = tmp_path / "old.npz"
    save_model(path, model._KIND, *model._get_state())  # as saved before the facts existed
    loaded = xmltree.load(path)
    np.testing.assert_array_equal(loaded.predict_top_k(X, 3)[0], model.predict_top_k(X, 3)[0])
    assert "training: not recorded" in info(capsys, path)


def test_info_refuses_what_is_not_a_model_file(tmp_path, capsys):
    not_a_model = tmp_path / "notes.txt"
    not_a_model.write_text("hello")
    for path, words in ((not_a_model, "notes.txt"), ("/dev/zero", "not a regular file")):
        assert main(["info", str(path)]) == 1
        error = capsys.readouterr().err
        assert error.startswith("xmltree info: error: ") and words in error
