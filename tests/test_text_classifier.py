"""TextClassifier: documents in, label names out; one model file."""

import pickle

import numpy as np
import pytest

import xmltree
from xmltree import LdSM, LearnedTree, LOMTree, TextClassifier
from xmltree.exceptions import DataFormatError, ModelFormatError, NotFittedError
from xmltree.ldsm._auto_settings import WIDE_DESCENT_THRESHOLD
from xmltree.metrics import evaluate_model, scorer
from xmltree.rerank import Reranker

TOPICS = {
    "grain": "wheat corn harvest tonnes crop farmers",
    "oil": "crude barrel opec refinery petroleum",
    "money": "dollar rate bank currency interest",
    "ship": "port vessel cargo tanker freight",
}


def corpus(n_documents=160, seed=0):
    """Documents mixing the words of one or two topics, with their topics as labels."""
    rng = np.random.default_rng(seed)
    names = sorted(TOPICS)
    texts, labels = [], []
    for _ in range(n_documents):
        topics = list(rng.choice(names, size=rng.integers(1, 3), replace=False))
        words = [word for topic in topics for word in TOPICS[topic].split()]
        texts.append(" ".join(rng.choice(words, size=12)) + " the said")
        labels.append(topics)
    return texts, labels


def small_ldsm():
    return LdSM(n_trees=3, max_nodes=15, epochs=5, random_state=0, n_jobs=1)


@pytest.fixture(scope="module")
def fitted():
    texts, labels = corpus()
    return TextClassifier(small_ldsm(), min_count=1).fit(texts, labels)


def test_documents_in_label_names_out(fitted):
    texts, labels = corpus(seed=1)
    names, scores = fitted.predict(texts, k=2)
    assert names.shape == scores.shape == (len(texts), 2)
    assert list(fitted.classes_) == sorted(TOPICS)
    assert np.mean([row[0] in truth for row, truth in zip(names, labels)]) > 0.75
    assert fitted.score(texts, labels) == scorer("P@1")(fitted, texts, labels) > 0.75


def test_missing_labels_are_padded_with_the_empty_name():
    texts, labels = corpus()
    # Two candidates per document: the other labels have no score.
    learner = small_ldsm().set_params(n_candidates=2, predict_candidates=2)
    two = TextClassifier(learner, min_count=1).fit(texts, labels)
    names, scores = two.predict_top_k(["crude barrel opec"], k=10)
    assert names.shape == (1, len(TOPICS))  # k is capped at the labels
    assert list(names[0, 2:]) == [""] * (len(TOPICS) - 2) and not scores[0, 2:].any()
    assert set(names[0, :2]) <= set(TOPICS)


def test_save_load_and_pickle_give_the_same_names_and_scores(fitted, tmp_path):
    texts, labels = corpus(seed=2)
    expected = fitted.predict(texts, k=3)
    fitted.save(tmp_path / "model.npz")
    for copy in (xmltree.load(tmp_path / "model.npz"), pickle.loads(pickle.dumps(fitted))):
        assert isinstance(copy, TextClassifier) and isinstance(copy.estimator_, LdSM)
        assert copy.get_params()["estimator__max_nodes"] == 15
        for got, want in zip(copy.predict(texts, k=3), expected):
            np.testing.assert_array_equal(got, want)
        # Label counts travel with the model: PSP@k of a loaded model works.
        assert scorer("PSP@3")(copy, texts, labels) == scorer("PSP@3")(fitted, texts, labels)


def test_files_of_format_version_4_load_their_learners_trees(fitted, tmp_path):
    from test_persistence import rewrite_meta

    texts, _ = corpus(seed=2)
    fitted.save(tmp_path / "model.npz")
    rewrite_meta(tmp_path / "model.npz", format_version=4)
    with np.load(tmp_path / "model.npz") as stored:  # one weight row per regressor
        assert stored["estimator/tree0/weight_values"].ndim == 1
    for got, want in zip(xmltree.load(tmp_path / "model.npz").predict(texts, k=3),
                         fitted.predict(texts, k=3)):
        np.testing.assert_array_equal(got, want)


def test_thresholds_give_label_positions(fitted):
    above = fitted.predict_above(["wheat corn crude barrel"], 0.2)
    assert above.shape == (1, len(TOPICS))
    assert set(fitted.classes_[above.indices]) <= {"grain", "oil"}


def test_evaluation_with_names_unseen_in_training(fitted):
    texts, labels = corpus(seed=3)
    labels[0] = ["never-seen"]
    results = evaluate_model(fitted, texts, labels, ks=(1,))
    assert 0.8 < results["P@1"] < 1 and "PSP@1" in results


def test_a_name_given_twice_counts_once_in_evaluation_as_in_fit(fitted):
    # Reuters-21578 lists some topics twice for one story ("trade trade").
    texts, labels = corpus(seed=3)
    doubled = [row + row[:1] for row in labels]
    assert evaluate_model(fitted, texts, doubled) == evaluate_model(fitted, texts, labels)


@pytest.mark.parametrize("weighting", ["count", "tfidf"])
def test_other_learners_and_settings(weighting):
    texts, labels = corpus()
    model = TextClassifier(LearnedTree(dim=8, epochs=10, random_state=0), ngrams=2,
                           buckets=64, min_count=1, weighting=weighting).fit(texts, labels)
    vectorizer = model.vectorizer_
    assert model.n_features_in_ == len(vectorizer.vocabulary_) + len(vectorizer.pairs_) + 64
    assert model.score(texts, labels) > 0.8
    single = TextClassifier(small_ldsm()).fit(texts, [row[0] for row in labels])
    assert single.predict(texts[:1], 1)[0][0, 0] in TOPICS


def test_bad_input_is_refused():
    texts, labels = corpus(20)
    model = TextClassifier(small_ldsm())
    bad = [
        ("one string", labels[:1], "sequence of documents"),
        ([1, 2], labels[:2], "document 0 is a int"),
        (texts, labels[:-1], "has 19 rows"),
        (texts, [[]] + labels[1:], "row 0"),
        (texts, [[""]] + labels[1:], "row 0"),
        (texts, [[3]] + labels[1:], "row 0"),
    ]
    for X, Y, message in bad:
        with pytest.raises(DataFormatError, match=message):
            model.fit(X, Y)
    for estimator in (Reranker(), TextClassifier(), "ldsm"):
        with pytest.raises(ValueError, match="estimator must be"):
            TextClassifier(estimator).fit(texts, labels)
    with pytest.raises(ValueError, match="weighting"):
        TextClassifier(weighting="bm25").fit(texts, labels)
    with pytest.raises(DataFormatError, match="LOMTree is multiclass"):
        TextClassifier(LOMTree()).fit(texts, labels)
    with pytest.raises(NotFittedError):
        model.predict(texts)


def test_the_model_file_is_checked_on_loading(fitted, tmp_path):
    params, arrays = fitted._get_state()
    bad_states = [
        (params, {**arrays, "train_label_counts": arrays["train_label_counts"][:-1]}),
        (params, {**arrays, "classes_data": arrays["classes_data"][::-1].copy()}),
        ({**params, "estimator_kind": "text_classifier"}, arrays),
        ({**params, "n_train_samples": 0}, arrays),
        ({key: value for key, value in params.items() if key != "estimator"}, arrays),
    ]
    for bad_params, bad_arrays in bad_states:
        with pytest.raises(ModelFormatError):
            TextClassifier._from_state(bad_params, bad_arrays)
    texts, labels = corpus()
    wider = TextClassifier(small_ldsm(), min_count=1).fit(texts + ["new words"], labels + ["oil"])
    mixed = {**arrays, **{name: array for name, array in wider._get_state()[1].items()
                          if name.startswith("vectorizer/")}}
    with pytest.raises(ModelFormatError, match="does not match"):
        TextClassifier._from_state(params, mixed)


@pytest.mark.parametrize("learner", [small_ldsm(), LearnedTree(dim=4, epochs=2,
                                                                random_state=0)])
def test_documents_without_features_get_no_label(learner):
    texts, labels = corpus()
    model = TextClassifier(learner, min_count=1).fit(texts, labels)
    featureless = ["", "   \t ", "zebra quokka", "crude barrel"]  # the last has words
    names, scores = model.predict_top_k(featureless, k=3)
    assert (names[:3] == "").all() and not scores[:3].any()
    assert names[3, 0] == "oil" and scores[3, 0] > 0
    above = model.predict_above(featureless, 1e-9)
    assert above[:3].nnz == 0 and above[3].nnz > 0


@pytest.mark.parametrize("texts_at, labels_at", [(2, None), (None, 3)])
def test_a_lone_surrogate_is_refused_at_fit_naming_the_row(texts_at, labels_at):
    texts, labels = corpus(n_documents=10)
    if texts_at is not None:
        texts[texts_at] += " caf\udce9"
    else:
        labels[labels_at] = ["oil", "bad\ud800name"]
    with pytest.raises(DataFormatError, match="surrogate") as error:
        TextClassifier(small_ldsm(), min_count=1).fit(texts, labels)
    where = f"X: document {texts_at}" if texts_at is not None else f"Y: row {labels_at}"
    assert where in str(error.value)


@pytest.mark.parametrize("name, given, kept", [
    ("histogram_weight", "auto", 0.0), ("histogram_weight", 0.3, 0.3),
    ("histogram_weight", 0.0, 0.0), ("descent_threshold", "auto", WIDE_DESCENT_THRESHOLD),
    ("descent_threshold", 0.3, 0.3), ("descent_threshold", None, None)])
def test_the_text_route_resolves_only_auto_settings(name, given, kept):
    texts, labels = corpus(80)
    learner = LdSM(n_trees=2, max_nodes=7, epochs=2, random_state=0, **{name: given})
    model = TextClassifier(learner, min_count=1).fit(texts, labels)
    assert getattr(model.estimator_, name) == kept
    assert model.estimator_.resolved_params_[name] == kept
    assert getattr(learner, name) == given  # the user's settings are not touched


def test_the_default_text_route_gives_the_classifiers_alone_the_wider_descent():
    texts, labels = corpus(80)
    resolved = TextClassifier().fit(texts, labels).estimator_.resolved_params_
    assert resolved["histogram_weight"] == 0.0
    assert resolved["descent_threshold"] == WIDE_DESCENT_THRESHOLD
