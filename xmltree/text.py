"""Raw text to sparse features: tokenizer, vocabulary, hashed word n-grams.

The features follow fastText: a document is the bag of its in-vocabulary
words plus its word n-grams (2 <= n <= ``ngrams``) hashed into ``buckets``
extra ids, each counted. The result is a CSR matrix that any xmltree learner
accepts; :class:`xmltree.LearnedTree` averages the embeddings of these ids.

For language modelling, :func:`context_windows` turns a token stream into
(previous ``c`` words -> next word) examples with one feature per
(position, word) pair.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np
import scipy.sparse as sp

from ._base import check_int, warn_renamed
from .exceptions import DataFormatError, ModelFormatError, NotFittedError

__all__ = ["tokenize", "TextVectorizer", "context_windows", "encode_strings", "decode_strings",
           "read_labeled_text"]

_TOKEN = re.compile(r"\w+|[^\w\s]")


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
    """Documents to CSR counts of vocabulary words and hashed word n-grams.

    Parameters
    ----------
    ngrams : int, default=1
        Longest word n-gram; n-grams of length 2..ngrams are hashed.
    buckets : int, default=2_000_000
        Number of hash buckets for n-grams (unused when ``ngrams == 1``).
    min_count : int, default=1
        Words seen fewer times during ``fit`` are left out of the vocabulary.
    lowercase : bool, default=True

    Attributes
    ----------
    vocabulary_ : list of str
        Words by decreasing frequency (ties alphabetical); a word's feature id
        is its position. Bucket ``b`` has id ``len(vocabulary_) + b``.
    n_features_ : int
    """

    def __init__(self, ngrams: int = 1, buckets: int = 2_000_000, min_count: int = 1,
                 lowercase: bool = True):
        self.ngrams = ngrams
        self.buckets = buckets
        self.min_count = min_count
        self.lowercase = lowercase

    def _validate_params(self) -> None:
        for name in ("ngrams", "buckets", "min_count"):
            check_int(name, getattr(self, name), 1)

    @property
    def n_features_(self) -> int:
        return len(self.vocabulary_) + (self.buckets if self.ngrams > 1 else 0)

    def fit(self, texts: Iterable[str]) -> TextVectorizer:
        """Build the vocabulary from ``texts`` (one string per document)."""
        self._validate_params()
        counts = Counter()
        for text in texts:
            counts.update(tokenize(text, self.lowercase))
        kept = [word for word, count in counts.items() if count >= self.min_count]
        kept.sort(key=lambda word: (-counts[word], word))
        self._set_vocabulary(kept)
        return self

    def _set_vocabulary(self, words: list[str]) -> None:
        self.vocabulary_ = list(words)
        self._index = {word: i for i, word in enumerate(self.vocabulary_)}

    def transform(self, texts: Iterable[str]) -> sp.csr_matrix:
        """Return the ``(n_documents, n_features_)`` float32 CSR matrix of counts.

        Out-of-vocabulary words are dropped; their n-grams still count.
        """
        if not hasattr(self, "vocabulary_"):
            raise NotFittedError("this TextVectorizer is not fitted; call fit first")
        n_words = len(self.vocabulary_)
        rows, cols = [], []
        n_docs = 0
        for row, text in enumerate(texts):
            tokens = tokenize(text, self.lowercase)
            ids = [self._index[t] for t in tokens if t in self._index]
            for n in range(2, self.ngrams + 1):
                ids.extend(n_words + _bucket(" ".join(tokens[s:s + n]), self.buckets)
                           for s in range(len(tokens) - n + 1))
            rows.extend([row] * len(ids))
            cols.extend(ids)
            n_docs = row + 1
        data = np.ones(len(cols), dtype=np.float32)
        matrix = sp.csr_matrix((data, (np.asarray(rows, dtype=np.int64),
                                       np.asarray(cols, dtype=np.int64))),
                               shape=(n_docs, self.n_features_))
        matrix.sum_duplicates()
        matrix.indices = matrix.indices.astype(np.int32)
        matrix.indptr = matrix.indptr.astype(np.int64)
        return matrix

    def fit_transform(self, texts: Sequence[str]) -> sp.csr_matrix:
        """Equivalent to ``fit(texts).transform(texts)``."""
        return self.fit(texts).transform(texts)

    def get_state(self) -> tuple[dict, dict]:
        """Deprecated: the state is private (``_get_state``), as for the estimators."""
        warn_renamed("TextVectorizer.get_state", "the estimator's save()")
        return self._get_state()

    @classmethod
    def from_state(cls, params: dict, arrays: dict) -> TextVectorizer:
        """Deprecated: the state is private (``_from_state``), as for the estimators."""
        warn_renamed("TextVectorizer.from_state", "xmltree.load()")
        return cls._from_state(params, arrays)

    def _get_state(self) -> tuple[dict, dict]:
        """Return ``(params, arrays)`` for model files (no pickle)."""
        data, offsets = encode_strings(self.vocabulary_)
        params = {"ngrams": int(self.ngrams), "buckets": int(self.buckets),
                  "min_count": int(self.min_count), "lowercase": bool(self.lowercase)}
        return params, {"vocabulary_data": data, "vocabulary_offsets": offsets}

    @classmethod
    def _from_state(cls, params: dict, arrays: dict) -> TextVectorizer:
        """Rebuild a fitted vectorizer from :meth:`_get_state` output.

        Raises
        ------
        ModelFormatError
            On missing or inconsistent entries.
        """
        try:
            vectorizer = cls(int(params["ngrams"]), int(params["buckets"]),
                             int(params["min_count"]), bool(params["lowercase"]))
            vectorizer._validate_params()
            words = decode_strings(arrays["vocabulary_data"], arrays["vocabulary_offsets"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelFormatError(f"invalid text vectorizer state ({exc})") from exc
        if len(set(words)) != len(words):
            raise ModelFormatError("invalid text vectorizer state (duplicate vocabulary words)")
        vectorizer._set_vocabulary(words)
        return vectorizer


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
    texts, labels = [], []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            tokens = line.split()
            names = []
            while tokens and tokens[0].startswith(_LABEL_PREFIX):
                names.append(tokens.pop(0)[len(_LABEL_PREFIX):])
            if not names or not all(names):
                raise DataFormatError("line has no __label__NAME token", path, number)
            if not tokens:
                raise DataFormatError("line has labels but no text", path, number)
            labels.append(names)
            texts.append(" ".join(tokens))
    return texts, labels


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
