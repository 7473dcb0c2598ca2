"""Synthetic extreme multi-label problems with a known, learnable structure.

The generative model mirrors what makes real XMC data hard: label
frequencies follow a Zipf law, so most labels are rare; each label owns a
small hidden set of "prototype" features, and a point's features are drawn
from the prototypes of its labels, mixed with uniformly random noise
features. Values are tf-idf weights of the drawn feature counts, and every
row is L2-normalised, like the bag-of-words features of the Extreme
Classification Repository.

Everything is vectorised NumPy over one flat array of feature draws, so time
and memory are O(n_samples * (avg_features + avg_labels)) plus O(n_labels *
avg_features) for the prototypes.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp

from .._validation import make_csr

__all__ = ["make_synthetic"]

#: Largest row or column count whose ids fit the package's int32 indices.
_MAX_INDEX = np.iinfo(np.int32).max


def make_synthetic(n_samples: int, n_features: int, n_labels: int, avg_labels: float = 3.0, *,
                   avg_features: float = 20, label_power: float = 1.0, noise: float = 0.1,
                   multiclass: bool = False, random_state=None,
                   return_prototypes: bool = False):
    """Generate a random multi-label (or multi-class) problem.

    Parameters
    ----------
    n_samples : int
        Number of points (rows).
    n_features : int
        Feature dimensionality.
    n_labels : int
        Number of labels.
    avg_labels : float, default=3.0
        Mean number of labels per point before duplicates are merged: each
        point gets ``1 + Poisson(avg_labels - 1)`` draws (capped at
        ``n_labels``), so every point has at least one label. Heavy head
        labels can be drawn twice for a point, which makes the realised mean
        slightly lower. Ignored when ``multiclass`` is True.
    avg_features : float, default=20
        Mean number of feature draws per point (``Poisson``, at least 1).
        Repeated draws of a feature add up, so the number of non-zeros per
        row is slightly lower. Each label's prototype has
        ``min(n_features, max(2, round(avg_features)))`` feature slots.
    label_power : float, default=1.0
        Zipf exponent of the label frequencies: the label of frequency rank
        ``r`` (1-based) is drawn with probability proportional to
        ``r ** -label_power``. 0 gives uniform frequencies. Which label ids
        get which rank is random.
    noise : float, default=0.1
        Fraction of feature draws taken uniformly from all features instead
        of from a label prototype. 1.0 makes the problem unlearnable.
    multiclass : bool, default=False
        Give every point exactly one label and return it as an int array.
    random_state : int, numpy.random.Generator or None, default=None
        Seed or generator; the same seed always gives the same data.
    return_prototypes : bool, default=False
        Also return the hidden prototypes.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features)
        float32 tf-idf values with L2-normalised rows; int32 sorted
        indices and indptr.
    Y : scipy.sparse.csr_matrix of shape (n_samples, n_labels), or ndarray
        Binary float32 CSR with at least one label per row; with
        ``multiclass=True`` an int64 array ``y`` of shape (n_samples,).
    prototypes : scipy.sparse.csr_matrix of shape (n_labels, n_features)
        Only with ``return_prototypes=True``: row ``l`` is the probability
        distribution from which label ``l``'s signal features are drawn.

    Raises
    ------
    ValueError
        If an argument is out of range.
    """
    _check_arguments(n_samples, n_features, n_labels, avg_labels, avg_features, label_power,
                     noise, multiclass)
    rng = _make_rng(random_state)
    label_probabilities = _zipf_probabilities(n_labels, label_power, rng)
    prototype_size = min(n_features, max(2, round(avg_features)))
    prototype_features = rng.integers(0, n_features, size=(n_labels, prototype_size),
                                      dtype=np.int32)
    if multiclass:
        labels = rng.choice(n_labels, size=n_samples, p=label_probabilities)
        Y = _csr_from_sorted(np.arange(n_samples), labels, np.ones(n_samples, dtype=np.float32),
                             (n_samples, n_labels))
    else:
        Y = _draw_label_sets(n_samples, n_labels, avg_labels, label_probabilities, rng)
    X = _draw_features(Y, prototype_features, n_features, avg_features, noise, rng)
    result = (X, labels.astype(np.int64) if multiclass else Y)
    if return_prototypes:
        result += (_prototype_matrix(prototype_features, n_features),)
    return result


def _check_arguments(n_samples, n_features, n_labels, avg_labels, avg_features, label_power,
                     noise, multiclass) -> None:
    """Raise ``ValueError`` naming the first argument that is out of range."""
    for name, value in (("n_samples", n_samples), ("n_features", n_features),
                        ("n_labels", n_labels)):
        if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if value > _MAX_INDEX:
            raise ValueError(f"{name} must fit in int32 indices, got {value}")
    reals = {"avg_labels": avg_labels, "avg_features": avg_features,
             "label_power": label_power, "noise": noise}
    for name, value in reals.items():
        if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
    if not multiclass and not 1 <= avg_labels <= n_labels:
        raise ValueError(f"avg_labels must be in [1, n_labels={n_labels}], got {avg_labels}")
    if avg_features < 1:
        raise ValueError(f"avg_features must be at least 1, got {avg_features}")
    if label_power < 0:
        raise ValueError(f"label_power must be non-negative, got {label_power}")
    if not 0 <= noise <= 1:
        raise ValueError(f"noise must be in [0, 1], got {noise}")


def _make_rng(random_state) -> np.random.Generator:
    """Turn a seed or generator into a ``numpy.random.Generator``."""
    try:
        return np.random.default_rng(random_state)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"random_state must be None, a non-negative int or a numpy Generator, "
            f"got {random_state!r}") from exc


def _zipf_probabilities(n_labels: int, power: float, rng: np.random.Generator) -> np.ndarray:
    """Label probabilities ``∝ rank ** -power`` with ranks assigned to random label ids."""
    weights = np.arange(1, n_labels + 1, dtype=np.float64) ** -power
    probabilities = np.empty(n_labels)
    probabilities[rng.permutation(n_labels)] = weights / weights.sum()
    return probabilities


def _draw_label_sets(n_samples: int, n_labels: int, avg_labels: float,
                     probabilities: np.ndarray, rng: np.random.Generator) -> sp.csr_matrix:
    """Draw ``1 + Poisson(avg_labels - 1)`` labels per point and merge repeats."""
    counts = np.minimum(1 + rng.poisson(avg_labels - 1, size=n_samples), n_labels)
    rows = np.repeat(np.arange(n_samples, dtype=np.int64), counts)
    labels = rng.choice(n_labels, size=rows.size, p=probabilities)
    rows, labels, _ = _merge_repeats(rows, labels, n_labels)
    return _csr_from_sorted(rows, labels, np.ones(labels.size, dtype=np.float32),
                            (n_samples, n_labels))


def _draw_features(Y: sp.csr_matrix, prototype_features: np.ndarray, n_features: int,
                   avg_features: float, noise: float, rng: np.random.Generator) -> sp.csr_matrix:
    """Draw each point's features from its labels' prototypes plus noise; tf-idf weight them."""
    n_samples = Y.shape[0]
    draws_per_row = np.maximum(1, rng.poisson(avg_features, size=n_samples))
    rows = np.repeat(np.arange(n_samples, dtype=np.int64), draws_per_row)
    # A draw picks one of its row's labels uniformly, then one slot of
    # that label's prototype uniformly.
    labels_per_row = np.diff(Y.indptr)
    position = Y.indptr[rows] + (rng.random(rows.size) * labels_per_row[rows]).astype(np.int64)
    slot = rng.integers(0, prototype_features.shape[1], size=rows.size)
    features = prototype_features[Y.indices[position], slot]
    is_noise = rng.random(rows.size) < noise
    features[is_noise] = rng.integers(0, n_features, size=int(is_noise.sum()))
    rows, features, counts = _merge_repeats(rows, features, n_features)
    values = _tfidf(features, counts, n_samples, n_features)
    X = _csr_from_sorted(rows, features, values, (n_samples, n_features))
    _normalise_rows(X)
    return X


def _merge_repeats(rows: np.ndarray, columns: np.ndarray, n_columns: int):
    """Sort (row, column) pairs, merge repeats, and return them with their multiplicity."""
    keys, counts = np.unique(rows * n_columns + columns, return_counts=True)
    return keys // n_columns, keys % n_columns, counts


def _tfidf(features: np.ndarray, counts: np.ndarray, n_samples: int,
           n_features: int) -> np.ndarray:
    """Sublinear tf times smoothed idf, as float32; always positive."""
    document_frequency = np.bincount(features, minlength=n_features)
    idf = np.log((1.0 + n_samples) / (1.0 + document_frequency)) + 1.0
    return ((1.0 + np.log(counts)) * idf[features]).astype(np.float32)


def _csr_from_sorted(rows: np.ndarray, columns: np.ndarray, values: np.ndarray,
                     shape: tuple[int, int]) -> sp.csr_matrix:
    """Build a canonical CSR matrix from entries already sorted by (row, column)."""
    indptr = np.zeros(shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=shape[0]), out=indptr[1:])
    return make_csr(values, columns, indptr, shape)


def _normalise_rows(X: sp.csr_matrix) -> None:
    """Scale every row of ``X`` to unit L2 norm in place (rows are never empty)."""
    squared = np.add.reduceat(X.data.astype(np.float64) ** 2, X.indptr[:-1])
    X.data /= np.repeat(np.sqrt(squared), np.diff(X.indptr)).astype(np.float32)


def _prototype_matrix(prototype_features: np.ndarray, n_features: int) -> sp.csr_matrix:
    """Return the hidden prototypes as per-label feature distributions (rows sum to 1)."""
    n_labels, size = prototype_features.shape
    rows = np.repeat(np.arange(n_labels, dtype=np.int64), size)
    rows, features, counts = _merge_repeats(rows, prototype_features.ravel(), n_features)
    return _csr_from_sorted(rows, features, (counts / size).astype(np.float32),
                            (n_labels, n_features))
