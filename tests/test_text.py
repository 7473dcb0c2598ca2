"""Tests of xmltree.text: tokenizer, vectorizer, n-gram hashing, LM windows."""

import numpy as np
import pytest

from xmltree.exceptions import DataFormatError, ModelFormatError, NotFittedError
from xmltree.text import (
    TextVectorizer,
    _bucket,
    context_windows,
    decode_strings,
    encode_strings,
    read_documents,
    read_labeled_text,
    tokenize,
)


def test_tokenize_words_and_punctuation():
    assert tokenize("Hello, World! it's") == ["hello", ",", "world", "!", "it", "'", "s"]
    assert tokenize("ABC", lowercase=False) == ["ABC"]
    with pytest.raises(DataFormatError, match="string"):
        tokenize(3)


def test_vocabulary_order_and_min_count():
    vec = TextVectorizer(min_count=2).fit(["b a a", "c b a", "d"])
    assert vec.vocabulary_ == ["a", "b"]          # by frequency, then alphabetical
    assert vec.n_features_ == 2


def test_transform_counts_match_python_reference():
    docs = ["the cat sat on the mat", "the dog", "", "unknown words only"]
    vec = TextVectorizer(ngrams=2, buckets=50).fit(docs[:2])
    X = vec.transform(docs).toarray()
    n_words = len(vec.vocabulary_)
    expected = np.zeros_like(X)
    for row, doc in enumerate(docs):
        tokens = tokenize(doc)
        for token in tokens:
            if token in vec.vocabulary_:
                expected[row, vec.vocabulary_.index(token)] += 1
        for a, b in zip(tokens, tokens[1:]):
            expected[row, n_words + _bucket(f"{a} {b}", 50)] += 1
    np.testing.assert_array_equal(X, expected)
    assert X[0, vec.vocabulary_.index("the")] == 2
    assert X.shape == (4, n_words + 50)


def test_transform_output_is_canonical_csr():
    vec = TextVectorizer(ngrams=3, buckets=7).fit(["a b c d a b"])
    X = vec.transform(["a b c d a b", "d c b a"])
    assert X.indices.dtype == np.int32 and X.indptr.dtype == np.int64
    for row in range(X.shape[0]):
        cols = X.indices[X.indptr[row]:X.indptr[row + 1]]
        assert np.all(np.diff(cols) > 0)


def test_bucket_is_stable():
    # A fixed value guards against accidental use of Python's salted hash().
    assert _bucket("new york", 1000) == _bucket("new york", 1000)
    assert 0 <= _bucket("new york", 1000) < 1000


def test_bad_parameters_and_unfitted():
    with pytest.raises(ValueError, match="ngrams"):
        TextVectorizer(ngrams=0).fit(["a"])
    with pytest.raises(NotFittedError, match="not fitted"):
        TextVectorizer().transform(["a"])


def test_state_round_trip_with_unicode():
    vec = TextVectorizer(ngrams=2, buckets=10).fit(["naïve café 東京", "café"])
    params, arrays = vec._get_state()
    assert arrays["vocabulary_data"].dtype == np.uint8
    again = TextVectorizer._from_state(params, arrays)
    assert again.vocabulary_ == vec.vocabulary_
    docs = ["café 東京 naïve"]
    np.testing.assert_array_equal(again.transform(docs).toarray(), vec.transform(docs).toarray())


def test_corrupt_state_is_rejected():
    vec = TextVectorizer().fit(["a b"])
    params, arrays = vec._get_state()
    bad = dict(arrays, vocabulary_offsets=np.array([0, 5, 1], dtype=np.int64))
    with pytest.raises(ModelFormatError):
        TextVectorizer._from_state(params, bad)
    with pytest.raises(ModelFormatError):
        TextVectorizer._from_state({"ngrams": 1}, arrays)
    data, offsets = encode_strings(["a", "a"])
    with pytest.raises(ModelFormatError, match="duplicate"):
        TextVectorizer._from_state(params,
                                   {"vocabulary_data": data, "vocabulary_offsets": offsets})


def test_string_table_rejects_bad_utf8():
    with pytest.raises(ValueError, match="UTF-8"):
        decode_strings(np.array([0xff], dtype=np.uint8), np.array([0, 1]))


def test_context_windows_reference():
    ids = np.array([3, 1, 4, 1, 5])
    X, y = context_windows(ids, n_words=6, context=2)
    assert list(y) == list(ids)
    dense = X.toarray()
    for t in range(5):
        expected = np.zeros(12)
        for back in (1, 2):
            if t - back >= 0:
                expected[(back - 1) * 6 + ids[t - back]] += 1
        np.testing.assert_array_equal(dense[t], expected)
    with pytest.raises(DataFormatError, match="token ids"):
        context_windows([0, 7], n_words=6)


def test_read_labeled_text(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text("__label__a __label__b hello world\n__label__c bye\n", encoding="utf-8")
    texts, labels = read_labeled_text(path)
    assert texts == ["hello world", "bye"]
    assert labels == [["a", "b"], ["c"]]
    path.write_text("__label__a ok\n\n__label__b fine\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match="line 2"):
        read_labeled_text(path)
    path.write_text("__label__a ok\n__label__b\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match="line 2: line has labels but no text"):
        read_labeled_text(path)


def test_tfidf_matches_a_python_reference():
    docs = ["the cat sat on the mat", "the dog sat", "a cat"]
    vec = TextVectorizer(ngrams=2, buckets=5, weighting="tfidf")
    X = vec.fit_transform(docs).toarray()
    counts = TextVectorizer(ngrams=2, buckets=5).fit_transform(docs).toarray()
    idf = np.log(4 / (1 + (counts > 0).sum(axis=0))) + 1
    weights = np.where(counts > 0, (1 + np.log(np.maximum(counts, 1))) * idf, 0)
    expected = weights / np.linalg.norm(weights, axis=1, keepdims=True)
    np.testing.assert_allclose(X, expected, rtol=1e-6)
    np.testing.assert_allclose(vec.idf_, idf, rtol=1e-6)
    np.testing.assert_allclose(vec.transform(docs).toarray(), X)
    assert vec.transform(["", "unknown"]).nnz == 0  # empty rows stay empty, no NaN


def test_tfidf_state_round_trip_and_older_states():
    vec = TextVectorizer(weighting="tfidf").fit(["a b", "b c"])
    params, arrays = vec._get_state()
    again = TextVectorizer._from_state(params, arrays)
    np.testing.assert_array_equal(again.transform(["a c"]).toarray(),
                                  vec.transform(["a c"]).toarray())
    with pytest.raises(ModelFormatError, match="idf"):
        TextVectorizer._from_state(params, {**arrays, "idf": arrays["idf"][:1]})
    counting = {key: value for key, value in params.items() if key != "weighting"}
    old = TextVectorizer._from_state(counting, arrays)  # saved before weighting existed
    assert old.weighting == "count" and old.idf_ is None
    with pytest.raises(ValueError, match="weighting"):
        TextVectorizer(weighting="bm25").fit(["a"])


def test_word_pairs_of_enough_documents_get_their_own_ids():
    docs = ["the cat sat", "the cat ran", "a cat sat", "the cat sat"]
    vec = TextVectorizer(pair_min_documents=2).fit(docs)
    # Document frequencies: "the cat" 3, "cat sat" 3, "a cat" 1, "cat ran" 1.
    assert vec.pairs_ == ["cat sat", "the cat"]
    n_words = len(vec.vocabulary_)
    X = vec.transform(["the cat sat the cat", "cat ran"]).toarray()
    assert X.shape == (2, n_words + 2)
    np.testing.assert_array_equal(X[:, n_words:], [[1, 2], [0, 0]])
    # Pairs of out-of-vocabulary tokens count too; buckets come after the pairs.
    hashed = TextVectorizer(ngrams=2, buckets=5, min_count=4, pair_min_documents=2).fit(docs)
    assert hashed.vocabulary_ == ["cat"] and hashed.pairs_ == ["cat sat", "the cat"]
    assert hashed.n_features_ == 1 + 2 + 5
    row = hashed.transform(["cat sat"]).toarray()[0]
    assert row[0] == 1 and row[1] == 1 and row[3 + _bucket("cat sat", 5)] == 1
    assert row.sum() == 3
    assert TextVectorizer().fit(docs).pairs_ == []



def test_word_pairs_are_counted_within_documents_once_each():
    # Ends and starts of neighbouring documents make no pair ("b c", "c d"
    # would reach two documents if they did); "b a" twice in one document
    # counts one document.
    docs = ["a b", "c d", "b a b a", "b c", "d a"]
    vec = TextVectorizer(pair_min_documents=2)
    X = vec.fit_transform(doc for doc in docs)
    assert vec.pairs_ == ["a b"]
    np.testing.assert_array_equal(X.toarray()[:, len(vec.vocabulary_)], [1, 0, 1, 0, 0])


@pytest.mark.parametrize("settings", [
    {"pair_min_documents": 2, "weighting": "tfidf"},
    {"ngrams": 3, "buckets": 11, "min_count": 2, "pair_min_documents": 1},
])
def test_fit_transform_is_fit_then_transform(settings):
    docs = ["The cat sat on the mat.", "", "the cat ran", "a cat sat, the cat sat",
            "   ", "zebra crossing"]
    together = TextVectorizer(**settings).fit_transform(iter(docs))
    apart = TextVectorizer(**settings).fit(docs).transform(docs)
    assert together.shape == apart.shape == (len(docs), together.shape[1])
    np.testing.assert_array_equal(together.indptr, apart.indptr)
    np.testing.assert_array_equal(together.indices, apart.indices)
    np.testing.assert_array_equal(together.data, apart.data)

def _unit_rows(block):
    """Rows of a dense block at unit Euclidean norm (zero rows stay zero)."""
    norms = np.linalg.norm(block, axis=1, keepdims=True)
    return block / np.where(norms > 0, norms, 1.0)


@pytest.mark.parametrize("weight", [0.4, 1.0, 2.5])
def test_tfidf_weighs_the_pairs_as_a_block_of_their_own(weight):
    docs = ["the cat sat on the mat", "the cat sat", "a cat sat down", "a mat"]
    vec = TextVectorizer(weighting="tfidf", pair_min_documents=2, pair_weight=weight)
    X = vec.fit_transform(docs).toarray()
    counts = TextVectorizer(pair_min_documents=2).fit_transform(docs).toarray()
    idf = np.log(5 / (1 + (counts > 0).sum(axis=0))) + 1
    weights = np.where(counts > 0, (1 + np.log(np.maximum(counts, 1))) * idf, 0)
    n_words = len(vec.vocabulary_)
    words, pairs = weights[:, :n_words], weights[:, n_words:]
    expected = _unit_rows(np.hstack([_unit_rows(words), weight * _unit_rows(pairs)]))
    np.testing.assert_allclose(X, expected, rtol=1e-6, atol=1e-7)
    assert vec.pairs_ == ["cat sat", "the cat"]
    # The last document has no pair: its words alone, at unit norm.
    assert not pairs[3].any() and np.all(pairs[:3].any(axis=1))
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, rtol=1e-6)


def test_word_pairs_survive_the_state_and_older_states_have_none():
    vec = TextVectorizer(weighting="tfidf", pair_min_documents=1, pair_weight=0.3)
    vec.fit(["a b c", "b c d"])
    params, arrays = vec._get_state()
    again = TextVectorizer._from_state(params, arrays)
    assert again.pairs_ == vec.pairs_ and again.pair_weight == 0.3
    np.testing.assert_array_equal(again.transform(["a b c d"]).toarray(),
                                  vec.transform(["a b c d"]).toarray())
    plain = TextVectorizer(weighting="tfidf").fit(["a b c", "b c d"])
    params, arrays = plain._get_state()
    older = {key: value for key, value in params.items() if not key.startswith("pair")}
    old = TextVectorizer._from_state(older, {key: value for key, value in arrays.items()
                                             if not key.startswith("pairs")})
    assert old.pairs_ == [] and old.pair_min_documents is None
    np.testing.assert_array_equal(old.transform(["a b"]).toarray(),
                                  plain.transform(["a b"]).toarray())


@pytest.mark.parametrize("pairs, match", [(["b c", "b c"], "duplicate"), (["bc"], "two tokens"),
                                          (["a b c"], "two tokens")])
def test_bad_stored_word_pairs_are_refused(pairs, match):
    vec = TextVectorizer(pair_min_documents=1).fit(["a b c"])
    params, arrays = vec._get_state()
    data, offsets = encode_strings(pairs)
    with pytest.raises(ModelFormatError, match=match):
        TextVectorizer._from_state(params, {**arrays, "pairs_data": data,
                                            "pairs_offsets": offsets})


@pytest.mark.parametrize("settings, match", [
    ({"pair_min_documents": 0}, "pair_min_documents"),
    ({"pair_min_documents": 2.5}, "pair_min_documents"),
    ({"pair_weight": 0.0}, "pair_weight"),
    ({"pair_weight": float("nan")}, "pair_weight"),
    ({"pair_weight": "1"}, "pair_weight"),
])
def test_bad_word_pair_settings_are_refused(settings, match):
    with pytest.raises(ValueError, match=match):
        TextVectorizer(**settings).fit(["a b"])


def test_read_documents_in_both_formats(tmp_path):
    fasttext = tmp_path / "docs.txt"
    fasttext.write_text("__label__a __label__b hello world\n__label__c bye\n", encoding="utf-8")
    jsonl = tmp_path / "docs.jsonl"
    jsonl.write_text('{"text": "hello world", "labels": ["a", "b"], "id": 7}\n'
                     '{"text": "bye", "labels": "c"}\n', encoding="utf-8")
    for path in (fasttext, jsonl):
        assert read_documents(path) == (["hello world", "bye"], [["a", "b"], ["c"]])
        assert read_documents(path, labels=False) == (["hello world", "bye"], None)
    assert read_documents(jsonl, "jsonl") == read_documents(fasttext, "fasttext")


def test_documents_to_predict_may_lack_labels_or_text(tmp_path):
    path = tmp_path / "queries.txt"
    path.write_text("no labels here\n\n__label__x with one\n", encoding="utf-8")
    assert read_documents(path, labels=False) == (["no labels here", "", "with one"], None)
    path = tmp_path / "queries.jsonl"
    path.write_text('{"text": "just text"}\n', encoding="utf-8")
    assert read_documents(path, labels=False) == (["just text"], None)


@pytest.mark.parametrize("line, message", [
    ("not json", "line 2: not a JSON object"),
    ('["text"]', "line 2: expected a JSON object"),
    ('{"text": 3, "labels": ["a"]}', "line 2: expected a JSON object"),
    ('{"text": "t"}', 'line 2: "labels" must be'),
    ('{"text": "t", "labels": []}', 'line 2: "labels" must be'),
    ('{"text": "t", "labels": ["a", ""]}', 'line 2: "labels" must be'),
    ("", "line 2: not a JSON object"),
])
def test_bad_json_lines_name_the_line(tmp_path, line, message):
    path = tmp_path / "docs.jsonl"
    path.write_text('{"text": "fine", "labels": ["a"]}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=message):
        read_documents(path)
    with pytest.raises(ValueError, match="format"):
        read_documents(path, "csv")


def test_invalid_utf8_names_the_file_and_line(tmp_path):
    from xmltree.text import read_documents

    path = tmp_path / "docs.jsonl"
    path.write_bytes(b'{"text": "fine", "labels": ["a"]}\n{"text": "caf\xe9", "labels": ["b"]}\n')
    with pytest.raises(DataFormatError, match="UTF-8") as error:
        read_documents(path)
    assert (error.value.path, error.value.line) == (str(path), 2)
