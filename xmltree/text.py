"""Raw text to sparse features: tokenizer, vocabulary, hashed word n-grams.

The features follow fastText: a document is the bag of its in-vocabulary
words plus its word n-grams (2 <= n <= ``ngrams``) hashed into ``buckets``
extra ids, each counted. Optionally, adjacent word pairs found in enough
training documents get ids of their own (a vocabulary of pairs, not
hashed). The result is a CSR matrix that any xmltree learner accepts;
:class:`xmltree.LearnedTree` averages the embeddings of these ids.

For language modelling, :func:`context_windows` turns a token stream into
(previous ``c`` words -> next word) examples with one feature per
(position, word) pair.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from array import array
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ._base import check_choice, check_int, check_real
from ._weighting import smoothed_idf, sublinear_tf, unit_rows
from .exceptions import DataFormatError, ModelFormatError, NotFittedError

__all__ = ["tokenize", "TextVectorizer", "context_windows", "encode_strings", "decode_strings",
           "read_labeled_text", "read_documents", "DOCUMENT_FORMATS", "WEIGHTINGS"]

_TOKEN = re.compile(r"\w+|[^\w\s]")

#: Feature weightings of :class:`TextVectorizer`.
WEIGHTINGS = ("count", "tfidf")


def tokenize(text: str, lowercase: bool = True) -> list[str]:
    """Split ``text`` into words and single punctuation marks.

    Parameters
    ----------
    text : str
    lowercase : bool, default=True

    Returns
    -------
    list of str
    """
    if not isinstance(text, str):
        raise DataFormatError(f"expected a string document, got {type(text).__name__}")
    return _TOKEN.findall(text.lower() if lowercase else text)


def _bucket(ngram: str, buckets: int) -> int:
    """Stable hash of an n-gram into ``[0, buckets)`` (independent of PYTHONHASHSEED)."""
    digest = hashlib.blake2b(ngram.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") % buckets


class TextVectorizer:
    """Documents to CSR counts (or tf-idf) of vocabulary words and hashed word n-grams.

    Parameters
    ----------
    ngrams : int, default=1
        Longest word n-gram; n-grams of length 2..ngrams are hashed.
    buckets : int, default=2_000_000
        Number of hash buckets for n-grams (unused when ``ngrams == 1``).
    min_count : int, default=1
        Words seen fewer times during ``fit`` are left out of the vocabulary.
    lowercase : bool, default=True
    weighting : {"count", "tfidf"}, default="count"
        ``"count"``: each feature counts its occurrences (what
        :class:`xmltree.LearnedTree` averages embeddings with).
        ``"tfidf"``: ``(1 + ln count) * idf``, with the smoothed inverse
        document frequency ``idf = ln((1 + n) / (1 + df)) + 1`` of the ``n``
        fitted documents, and each row scaled to unit Euclidean norm, so
        that frequent words and long documents do not dominate linear
        models such as LdSM's node regressors.
    pair_min_documents : int or None, default=None
        Adjacent word pairs (of any two tokens, in or out of the vocabulary)
        found in at least this many training documents become features of
        their own; None: no pairs. Unlike hashed n-grams, rare pairs are left
        out and no two pairs share an id.
    pair_weight : float, default=0.5
        With ``weighting="tfidf"`` and pairs, a row's pairs and its other
        features are each scaled to unit norm, the pairs times this weight,
        before the whole row is: a pair says less than its two words, and
        many pairs would otherwise outweigh them.

    Attributes
    ----------
    vocabulary_ : list of str
        Words by decreasing frequency (ties alphabetical); a word's feature id
        is its position.
    pairs_ : list of str
        The word pairs (two tokens joined by a space) by decreasing document
        frequency (ties alphabetical); pair ``p`` has id
        ``len(vocabulary_) + p``, and bucket ``b`` has id
        ``len(vocabulary_) + len(pairs_) + b``.
    n_features_ : int
    idf_ : numpy.ndarray of float32, or None
        The inverse document frequency of each of the ``n_features_``
        features, with ``weighting="tfidf"``.
    """

    def __init__(self, ngrams: int = 1, buckets: int = 2_000_000, min_count: int = 1,
                 lowercase: bool = True, weighting: str = "count",
                 pair_min_documents: int | None = None, pair_weight: float = 0.5):
        self.ngrams = ngrams
        self.buckets = buckets
        self.min_count = min_count
        self.lowercase = lowercase
        self.weighting = weighting
        self.pair_min_documents = pair_min_documents
        self.pair_weight = pair_weight

    def _validate_params(self) -> None:
        for name in ("ngrams", "buckets", "min_count"):
            check_int(name, getattr(self, name), 1)
        check_choice("weighting", self.weighting, WEIGHTINGS)
        if self.pair_min_documents is not None:
            check_int("pair_min_documents", self.pair_min_documents, 1)
        check_real("pair_weight", self.pair_weight, 0.0, strict=True)

    @property
    def n_features_(self) -> int:
        return (len(self.vocabulary_) + len(self.pairs_)
                + (self.buckets if self.ngrams > 1 else 0))

    def fit(self, texts: Iterable[str]) -> TextVectorizer:
        """Build the vocabulary (and the idf) from ``texts`` (one string per document)."""
        self.fit_transform(texts)
        return self

    def fit_transform(self, texts: Iterable[str]) -> sp.csr_matrix:
        """Equivalent to ``fit(texts).transform(texts)``, reading each document once."""
        self._validate_params()
        numbered = _NumberedTokens()
        tokens = self._encode(texts, lambda tokens: map(numbered.__getitem__, tokens))
        names = list(numbered)  # by the ids of the first reading
        counts = np.bincount(tokens.ids, minlength=len(names))
        pairs = ([] if self.pair_min_documents is None
                 else _frequent_pairs(names, tokens, self.pair_min_documents))
        self._set_vocabulary(_most_frequent(names, counts, self.min_count), pairs)
        # The first reading's ids to the fitted ones (-1: in neither vocabulary).
        fitted_ids = np.array([self._token_ids.get(name, -1) for name in names], dtype=np.int64)
        matrix = self._count(tokens._replace(ids=fitted_ids[tokens.ids]))
        self.idf_ = None
        if self.weighting == "tfidf":
            document_frequency = np.bincount(matrix.indices, minlength=self.n_features_)
            self.idf_ = smoothed_idf(document_frequency, tokens.n_documents).astype(np.float32)
        return self._weigh(matrix)

    def _set_vocabulary(self, words: list[str], pairs: list[str]) -> None:
        """Fix the words and pairs, and the tables that find them in documents.

        Tokens are numbered words first (a word's id is its feature id), then
        the other tokens of the pairs; a pair is found by the key
        ``first * n_tokens + second`` of its two tokens' ids.
        """
        self.vocabulary_ = list(words)
        self.pairs_ = list(pairs)
        token_ids = {word: i for i, word in enumerate(self.vocabulary_)}
        halves = [pair.split(" ") for pair in self.pairs_]
        for first, second in halves:
            token_ids.setdefault(first, len(token_ids))
            token_ids.setdefault(second, len(token_ids))
        keys = np.array([_pair_key(token_ids[first], token_ids[second], len(token_ids))
                         for first, second in halves], dtype=np.int64)
        order = np.argsort(keys, kind="stable")
        self._token_ids = token_ids
        self._pair_keys = keys[order]
        self._pair_features = len(self.vocabulary_) + order

    def transform(self, texts: Iterable[str]) -> sp.csr_matrix:
        """Return the ``(n_documents, n_features_)`` float32 CSR matrix of features.

        Out-of-vocabulary words are dropped; their n-grams still count.
        """
        if not hasattr(self, "vocabulary_"):
            raise NotFittedError("this TextVectorizer is not fitted; call fit first")
        find = self._token_ids.get
        return self._weigh(self._count(self._encode(
            texts, lambda tokens: map(find, tokens, itertools.repeat(-1)))))

    def _encode(self, texts: Iterable[str], number) -> _Tokens:
        """Read the documents: their tokens numbered by ``number(tokens)`` (an iterable of
        ids, -1 for tokens not looked for) and, with ``ngrams > 1``, their hashed n-grams."""
        ids, rows = array("q"), array("q")
        bucket_rows, buckets = array("q"), array("q")
        n_documents = 0
        for row, text in enumerate(texts):
            tokens = tokenize(text, self.lowercase)
            ids.extend(number(tokens))
            rows.extend(itertools.repeat(row, len(tokens)))
            for n in range(2, self.ngrams + 1):
                start = len(buckets)
                buckets.extend(_bucket(" ".join(tokens[s:s + n]), self.buckets)
                               for s in range(len(tokens) - n + 1))
                bucket_rows.extend(itertools.repeat(row, len(buckets) - start))
            n_documents = row + 1
        return _Tokens(n_documents, *(np.frombuffer(part, dtype=np.int64)
                                      for part in (rows, ids, bucket_rows, buckets)))

    def _count(self, tokens: _Tokens) -> sp.csr_matrix:
        """The count matrix of documents read with the fitted token ids."""
        n_words = len(self.vocabulary_)
        is_word = (tokens.ids >= 0) & (tokens.ids < n_words)
        rows, columns = [tokens.rows[is_word]], [tokens.ids[is_word]]
        if self.pairs_:
            starts, pairs = self._find_pairs(tokens)
            rows.append(tokens.rows[starts])
            columns.append(self._pair_features[pairs])
        rows.append(tokens.bucket_rows)
        columns.append(n_words + len(self.pairs_) + tokens.buckets)
        rows, columns = np.concatenate(rows), np.concatenate(columns)
        matrix = sp.csr_matrix((np.ones(columns.size, dtype=np.float32), (rows, columns)),
                               shape=(tokens.n_documents, self.n_features_))
        matrix.sum_duplicates()
        matrix.indices = matrix.indices.astype(np.int32)
        matrix.indptr = matrix.indptr.astype(np.int64)
        return matrix

    def _find_pairs(self, tokens: _Tokens) -> tuple[np.ndarray, np.ndarray]:
        """The fitted pairs in the documents: their first tokens' positions, and where the
        pairs are in ``_pair_keys``."""
        starts = _pair_starts(tokens)
        # Only known tokens: a key with an id of -1 could equal another pair's.
        starts = starts[(tokens.ids[starts] >= 0) & (tokens.ids[starts + 1] >= 0)]
        keys = _pair_key(tokens.ids[starts], tokens.ids[starts + 1], len(self._token_ids))
        slots = np.minimum(np.searchsorted(self._pair_keys, keys), self._pair_keys.size - 1)
        found = self._pair_keys[slots] == keys
        return starts[found], slots[found]

    def _weigh(self, matrix: sp.csr_matrix) -> sp.csr_matrix:
        """Counts to the fitted weighting, in place (tf-idf: unit rows; empty rows stay empty)."""
        if self.idf_ is None:
            return matrix
        weighted = sublinear_tf(matrix.data) * self.idf_[matrix.indices]
        if self.pairs_:
            # Each block at unit norm (the other's entries zeroed), the pairs then weighed.
            n_words = len(self.vocabulary_)
            is_pair = (matrix.indices >= n_words) & (matrix.indices < n_words + len(self.pairs_))
            weighted[~is_pair] = unit_rows(np.where(is_pair, 0.0, weighted),
                                           matrix.indptr)[~is_pair]
            weighted[is_pair] = self.pair_weight * unit_rows(np.where(is_pair, weighted, 0.0),
                                                             matrix.indptr)[is_pair]
        matrix.data = unit_rows(weighted, matrix.indptr).astype(np.float32)
        return matrix

    def _get_state(self) -> tuple[dict, dict]:
        """Return ``(params, arrays)`` for model files (no pickle)."""
        data, offsets = encode_strings(self.vocabulary_)
        pair_data, pair_offsets = encode_strings(self.pairs_)
        params = {"ngrams": int(self.ngrams), "buckets": int(self.buckets),
                  "min_count": int(self.min_count), "lowercase": bool(self.lowercase),
                  "weighting": self.weighting,
                  "pair_min_documents": (None if self.pair_min_documents is None
                                         else int(self.pair_min_documents)),
                  "pair_weight": float(self.pair_weight)}
        arrays = {"vocabulary_data": data, "vocabulary_offsets": offsets,
                  "pairs_data": pair_data, "pairs_offsets": pair_offsets}
        if self.idf_ is not None:
            arrays["idf"] = self.idf_
        return params, arrays

    @classmethod
    def _from_state(cls, params: dict, arrays: dict) -> TextVectorizer:
        """Rebuild a fitted vectorizer from :meth:`_get_state` output.

        Vectorizers saved before ``weighting`` existed count; those saved
        before word pairs existed have none.

        Raises
        ------
        ModelFormatError
            On missing or inconsistent entries.
        """
        try:
            # Settings added later are absent from older files: their defaults then.
            later = {name: params[name] for name in ("pair_min_documents", "pair_weight")
                     if name in params}
            vectorizer = cls(int(params["ngrams"]), int(params["buckets"]),
                             int(params["min_count"]), bool(params["lowercase"]),
                             params.get("weighting", "count"), **later)
            vectorizer._validate_params()
            words = decode_strings(arrays["vocabulary_data"], arrays["vocabulary_offsets"])
            pairs = (decode_strings(arrays["pairs_data"], arrays["pairs_offsets"])
                     if "pairs_data" in arrays else [])
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelFormatError(f"invalid text vectorizer state ({exc})") from exc
        if len(set(words)) != len(words) or len(set(pairs)) != len(pairs):
            raise ModelFormatError("invalid text vectorizer state (duplicate vocabulary words "
                                   "or pairs)")
        if any(len(pair.split(" ")) != 2 for pair in pairs):
            raise ModelFormatError("invalid text vectorizer state (a word pair is not two "
                                   "tokens joined by one space)")
        vectorizer._set_vocabulary(words, pairs)
        vectorizer.idf_ = _stored_idf(vectorizer, arrays)
        return vectorizer


class _Tokens(NamedTuple):
    """Documents as read: ``ids`` and ``rows`` (document) of every token in order, and the
    hashed n-grams as ``buckets`` (ids from 0) with their ``bucket_rows``."""

    n_documents: int
    rows: np.ndarray
    ids: np.ndarray
    bucket_rows: np.ndarray
    buckets: np.ndarray


class _NumberedTokens(dict):
    """Token -> id, each new token numbered as it is first looked up."""

    def __missing__(self, token: str) -> int:
        self[token] = number = len(self)
        return number


def _frequent_pairs(names: list[str], tokens: _Tokens, minimum: int) -> list[str]:
    """Adjacent token pairs of at least `minimum` documents, as two names joined by a
    space, most documents first (ties alphabetical); `tokens` numbers `names`."""
    starts = _pair_starts(tokens)
    keys = _pair_key(tokens.ids[starts], tokens.ids[starts + 1], len(names))
    documents = tokens.rows[starts]
    order = np.lexsort((documents, keys))
    keys, documents = keys[order], documents[order]
    # Each pair once a document: the first of each run of equal (pair, document).
    new_run = np.ones(keys.size, dtype=bool)
    new_run[1:] = (keys[1:] != keys[:-1]) | (documents[1:] != documents[:-1])
    pairs, n_documents = np.unique(keys[new_run], return_counts=True)
    frequent = n_documents >= minimum
    halves = (divmod(key, len(names)) for key in pairs[frequent].tolist())
    pair_names = [f"{names[first]} {names[second]}" for first, second in halves]
    return _most_frequent(pair_names, n_documents[frequent], minimum)


def _pair_starts(tokens: _Tokens) -> np.ndarray:
    """Positions of the tokens followed by another token of the same document."""
    return np.flatnonzero(tokens.rows[:-1] == tokens.rows[1:])


def _pair_key(first, second, n_tokens: int):
    """The key of the pair of token ids ``(first, second)`` (numbers or arrays) among
    ``n_tokens`` tokens: ``divmod(key, n_tokens)`` gives them back."""
    return first * n_tokens + second


def _most_frequent(keys: list[str], counts: np.ndarray, minimum: int) -> list[str]:
    """The keys counted at least `minimum` times, most frequent first (ties alphabetical)."""
    kept = [(-count, key) for key, count in zip(keys, counts.tolist()) if count >= minimum]
    kept.sort()
    return [key for _, key in kept]


def _stored_idf(vectorizer: TextVectorizer, arrays: dict) -> np.ndarray | None:
    """The idf array of a stored tf-idf vectorizer, checked; None for counts."""
    if vectorizer.weighting != "tfidf":
        return None
    idf = arrays.get("idf")
    if (not isinstance(idf, np.ndarray) or idf.dtype != np.float32
            or idf.shape != (vectorizer.n_features_,) or not np.all(np.isfinite(idf))
            or not np.all(idf > 0)):
        raise ModelFormatError("invalid text vectorizer state (idf must be a positive finite "
                               "float32 array with one value per feature)")
    return idf


_LABEL_PREFIX = "__label__"


def read_labeled_text(path) -> tuple[list[str], list[list[str]]]:
    """Read a fastText-style file: ``__label__A __label__B text ...`` per line.

    Labels are the leading ``__label__`` tokens; the rest of the line is the
    document. Blank lines and lines without a label or without text are
    errors, never skipped (row numbers would silently shift).

    Returns
    -------
    texts : list of str
    labels : list of list of str
        The label names of each line, without the prefix.

    Raises
    ------
    DataFormatError
        With the path and 1-based line number of the first bad line.
    """
    return read_documents(path, "fasttext")


#: Formats of :func:`read_documents`.
DOCUMENT_FORMATS = ("auto", "fasttext", "jsonl")


def read_documents(path, format: str = "auto", *,
                   labels: bool = True) -> tuple[list[str], list[list[str]] | None]:
    """Read one document per line, with its label names, from a text file (UTF-8).

    Two formats:

    ``"fasttext"``
        ``__label__A __label__B the text ...``: the leading ``__label__``
        tokens are the labels, the rest of the line is the document.
    ``"jsonl"``
        JSON lines: ``{"text": "the text ...", "labels": ["A", "B"]}`` (a
        single name may be given as a string); other keys are ignored.

    Every line is one document: a blank or malformed line is an error, never
    skipped (row numbers would silently shift).

    Parameters
    ----------
    path : str or os.PathLike
    format : {"auto", "fasttext", "jsonl"}, default="auto"
        ``"auto"``: ``"jsonl"`` for files named ``*.jsonl`` or ``*.json``,
        ``"fasttext"`` otherwise.
    labels : bool, default=True
        Read and require the labels (training, evaluation). False for
        documents to predict: labels are ignored when present, and a
        fastText line may hold no text at all (an empty document).

    Returns
    -------
    texts : list of str
    label_names : list of list of str, or None
        Each document's label names (without the ``__label__`` prefix);
        None when ``labels`` is False.

    Raises
    ------
    DataFormatError
        With the path and 1-based line number of the first bad line.
    ValueError
        On an unknown ``format``.
    """
    check_choice("format", format, DOCUMENT_FORMATS)
    if format == "auto":
        format = "jsonl" if Path(path).suffix.lower() in (".jsonl", ".json") else "fasttext"
    parse = _parse_json_line if format == "jsonl" else _parse_fasttext_line
    texts, names = [], []
    # Read bytes and decode line by line, so that invalid UTF-8 is reported at its line.
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                text, line_labels = parse(_decoded(raw), labels)
            except DataFormatError as exc:
                raise DataFormatError(exc.problem, path, number) from None
            texts.append(text)
            names.append(line_labels)
    return texts, names if labels else None


def _decoded(raw: bytes) -> str:
    """One line of a document file as text; DataFormatError unless it is UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataFormatError(f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at byte "
                              f"{exc.start + 1} of the line)") from None


def _parse_fasttext_line(line: str, labels: bool) -> tuple[str, list[str]]:
    """The text and ``__label__`` names of one fastText line."""
    tokens = line.split()
    names = []
    while tokens and tokens[0].startswith(_LABEL_PREFIX):
        names.append(tokens.pop(0)[len(_LABEL_PREFIX):])
    if labels:
        if not names or not all(names):
            raise DataFormatError("line has no __label__NAME token")
        if not tokens:
            raise DataFormatError("line has labels but no text")
    return " ".join(tokens), names


def _parse_json_line(line: str, labels: bool) -> tuple[str, list[str]]:
    """The ``"text"`` and ``"labels"`` of one JSON line."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DataFormatError(f"not a JSON object ({exc.msg})") from None
    if not isinstance(record, dict) or not isinstance(record.get("text"), str):
        raise DataFormatError('expected a JSON object with a string "text"')
    if not labels:
        return record["text"], []
    names = record.get("labels")
    names = [names] if isinstance(names, str) else names
    if not isinstance(names, list) or not names or not all(
            isinstance(name, str) and name for name in names):
        raise DataFormatError('"labels" must be a non-empty name or list of non-empty names')
    return record["text"], names


def encode_strings(strings: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Pack strings into one UTF-8 uint8 array plus int64 offsets (n + 1)."""
    encoded = [s.encode("utf-8") for s in strings]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(b) for b in encoded], dtype=np.int64)
    data = np.frombuffer(b"".join(encoded), dtype=np.uint8).copy()
    return data, offsets


def decode_strings(data: np.ndarray, offsets: np.ndarray) -> list[str]:
    """Inverse of :func:`encode_strings`; raises ValueError on malformed input."""
    data = np.asarray(data)
    offsets = np.asarray(offsets)
    if data.dtype != np.uint8 or data.ndim != 1 or offsets.ndim != 1 or offsets.size < 1:
        raise ValueError("string table must be a 1-D uint8 array and 1-D offsets")
    if offsets[0] != 0 or offsets[-1] != data.size or np.any(np.diff(offsets) < 0):
        raise ValueError("string offsets are not a non-decreasing cover of the data")
    raw = data.tobytes()
    try:
        return [raw[a:b].decode("utf-8") for a, b in zip(offsets[:-1], offsets[1:])]
    except UnicodeDecodeError as exc:
        raise ValueError(f"string table is not valid UTF-8 ({exc})") from exc


def context_windows(token_ids, n_words: int, context: int = 4) -> tuple[sp.csr_matrix, np.ndarray]:
    """Language-model examples: the ``context`` previous words -> the next word.

    Feature ``k * n_words + w`` means "word ``w`` is ``k + 1`` positions back",
    so a mean of feature embeddings is a position-aware context
    representation (a diagonal stand-in for the paper's per-position
    transition matrices). The first positions have shorter contexts.

    Parameters
    ----------
    token_ids : array-like of int
        The token stream (e.g. PTB with ``<eos>`` between sentences).
    n_words : int
        Vocabulary size; ids must lie in ``[0, n_words)``.
    context : int, default=4

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_tokens, context * n_words)
    y : numpy.ndarray of shape (n_tokens,), int32
        The word to predict at each position.
    """
    ids = np.asarray(token_ids, dtype=np.int64)
    if ids.ndim != 1 or (ids.size and (ids.min() < 0 or ids.max() >= n_words)):
        raise DataFormatError(f"token ids must be a 1-D array in [0, {n_words})")
    if context < 1:
        raise ValueError(f"context must be >= 1, got {context}")
    n = ids.size
    positions = np.arange(n)
    row_parts, col_parts = [], []
    # Entries are emitted block by block; sum_duplicates sorts each row.
    for back in range(1, context + 1):
        rows = positions[back:]
        row_parts.append(rows)
        col_parts.append((back - 1) * n_words + ids[rows - back])
    rows = np.concatenate(row_parts)
    cols = np.concatenate(col_parts)
    X = sp.csr_matrix((np.ones(rows.size, dtype=np.float32), (rows, cols)),
                      shape=(n, context * n_words))
    X.sum_duplicates()
    X.indices = X.indices.astype(np.int32)
    X.indptr = X.indptr.astype(np.int64)
    return X, ids.astype(np.int32)
