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
from dataclasses import dataclass
from numbers import Real

import numpy as np
import scipy.sparse as sp

from .._validation import make_csr
from .._weighting import smoothed_idf, sublinear_tf
from ._checks import check_dimension

__all__ = ["make_synthetic", "make_synthetic_preset", "SyntheticPreset", "SYNTHETIC_PRESETS"]


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


@dataclass(frozen=True)
class SyntheticPreset:
    """Published statistics of a benchmark data set, and how to imitate them.

    Attributes
    ----------
    n_samples : int
        Training points (N) at ``scale=1``.
    n_features : int
        Feature dimensionality (D); never scaled.
    n_labels : int
        Labels (K) at ``scale=1``.
    avg_labels : float
        Mean labels per point (L); ``N * L / K`` is the mean points per label.
    avg_features : float
        Mean non-zero features per point.
    label_power : float
        Zipf exponent of the label frequencies, chosen so that the head is
        plausible and most labels fall below the mean frequency.
    noise : float
        Fraction of feature draws taken uniformly from all features.
    source : str
        Where the statistics come from.
    """

    n_samples: int
    n_features: int
    n_labels: int
    avg_labels: float
    avg_features: float
    label_power: float
    noise: float
    source: str


#: Presets by name, for :func:`make_synthetic_preset`.
SYNTHETIC_PRESETS = {
    "amazon670k-shape": SyntheticPreset(
        n_samples=490_449, n_features=135_909, n_labels=670_091, avg_labels=5.45,
        avg_features=76.0, label_power=0.6, noise=0.1,
        source="Amazon-670K training split, Extreme Classification Repository"),
    "delicious200k-shape": SyntheticPreset(
        n_samples=196_606, n_features=782_585, n_labels=205_443, avg_labels=75.54,
        avg_features=301.0, label_power=0.7, noise=0.1,
        source="Delicious-200K training split, Extreme Classification Repository"),
}

#: Top-up rounds stop once fewer than this fraction of the wanted entries is missing.
_TOP_UP_TOLERANCE = 1e-3
#: Hard cap on top-up rounds; rows whose options are exhausted keep their shortfall.
_MAX_TOP_UP_ROUNDS = 60


def make_synthetic_preset(name, *, scale: float = 1.0, random_state=None):
    """Generate a problem with the shape of a published extreme-classification set.

    Parameters
    ----------
    name : str or SyntheticPreset
        A key of :data:`SYNTHETIC_PRESETS` (``"amazon670k-shape"`` or
        ``"delicious200k-shape"``), or a preset of one's own, e.g.
        ``dataclasses.replace(SYNTHETIC_PRESETS["amazon670k-shape"],
        n_labels=10**6)`` for a curve over K.
    scale : float, default=1.0
        In (0, 1]: multiplies the number of points and the number of labels
        (rounded, at least 1 each), so labels per point and points per label
        keep their published values; features per point and ``n_features``
        are unchanged.
    random_state : int, numpy.random.Generator or None, default=None
        Seed or generator; the same seed always gives the same data.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features)
        float32 tf-idf values with L2-normalised rows, as in
        :func:`make_synthetic`.
    Y : scipy.sparse.csr_matrix of shape (n_samples, n_labels)
        Binary float32 CSR; every row aims at ``1 + Poisson(avg_labels - 1)``
        distinct labels (capped at ``n_labels``), and at most 0.1% of all
        wanted labels (or features, for ``X``) are left undrawn.

    Raises
    ------
    ValueError
        If ``name`` is unknown or ``scale`` is out of range.

    Notes
    -----
    Time and memory are O(nnz(X) + nnz(Y)) plus O(K * avg_features) int32
    for the label prototypes: the full Amazon-670K shape (37 M feature
    non-zeros) needs a few GiB at its peak.
    """
    preset = _resolve_preset(name)
    if (isinstance(scale, bool) or not isinstance(scale, Real) or not math.isfinite(scale)
            or not 0 < scale <= 1):
        raise ValueError(f"scale must be a number in (0, 1], got {scale!r}")
    n_samples = max(1, round(preset.n_samples * scale))
    n_labels = max(1, round(preset.n_labels * scale))
    rng = _make_rng(random_state)
    probabilities = _zipf_probabilities(n_labels, preset.label_power, rng)
    prototype_size = min(preset.n_features, max(2, round(preset.avg_features)))
    prototype_features = rng.integers(0, preset.n_features, size=(n_labels, prototype_size),
                                      dtype=np.int32)
    label_targets = np.minimum(1 + rng.poisson(preset.avg_labels - 1, size=n_samples), n_labels)
    rows, labels, _ = _draw_distinct(
        label_targets, lambda r: rng.choice(n_labels, size=r.size, p=probabilities), n_labels)
    Y = _csr_from_sorted(rows, labels, np.ones(labels.size, dtype=np.float32),
                         (n_samples, n_labels))
    feature_targets = np.clip(rng.poisson(preset.avg_features, size=n_samples), 1,
                              preset.n_features)
    triples = _draw_distinct(
        feature_targets,
        lambda r: _sample_features(r, Y, prototype_features, preset.n_features, preset.noise,
                                   rng),
        preset.n_features)
    return _feature_matrix(*triples, n_samples, preset.n_features), Y


def _resolve_preset(name) -> SyntheticPreset:
    """Look a preset up by name, or check the fields of a given one."""
    if isinstance(name, SyntheticPreset):
        preset = name
        _check_arguments(preset.n_samples, preset.n_features, preset.n_labels,
                         preset.avg_labels, preset.avg_features, preset.label_power,
                         preset.noise, multiclass=False)
        return preset
    if not isinstance(name, str) or name not in SYNTHETIC_PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {sorted(SYNTHETIC_PRESETS)}")
    return SYNTHETIC_PRESETS[name]


def _draw_distinct(targets: np.ndarray, sample, n_columns: int):
    """Draw columns for each row until it holds ``targets[row]`` distinct ones.

    Repeats are merged and the missing entries redrawn, round after round,
    until at most ``_TOP_UP_TOLERANCE`` of all wanted entries are missing
    (rows whose options are nearly exhausted converge slowly and would
    otherwise cost a full O(nnz) merge per round for a handful of entries).

    Parameters
    ----------
    targets : ndarray of int, shape (n_rows,)
        Wanted distinct columns per row.
    sample : callable
        ``sample(rows)`` returns one random column id per entry of ``rows``.
    n_columns : int
        Column count, used to pack (row, column) into one int64 key.

    Returns
    -------
    rows, columns, counts : ndarray
        Distinct (row, column) pairs sorted by row then column, with how
        often each was drawn.
    """
    n_rows = targets.size
    keys = np.empty(0, dtype=np.int64)
    counts = np.empty(0, dtype=np.int64)
    missing = targets.astype(np.int64)
    wanted = int(missing.sum())
    for _ in range(_MAX_TOP_UP_ROUNDS):
        rows = np.repeat(np.arange(n_rows, dtype=np.int64), missing)
        new_keys, new_counts = np.unique(rows * n_columns + sample(rows), return_counts=True)
        keys, counts = _merge_sorted_counts(keys, counts, new_keys, new_counts)
        missing = targets - np.bincount(keys // n_columns, minlength=n_rows)
        if missing.sum() <= _TOP_UP_TOLERANCE * wanted:
            break
    return keys // n_columns, keys % n_columns, counts


def _merge_sorted_counts(keys: np.ndarray, counts: np.ndarray, new_keys: np.ndarray,
                         new_counts: np.ndarray):
    """Union of two sorted unique key arrays, adding the counts of shared keys."""
    where = np.searchsorted(keys, new_keys)
    seen = where < keys.size
    seen[seen] = keys[where[seen]] == new_keys[seen]
    counts = counts.copy()
    np.add.at(counts, where[seen], new_counts[seen])
    fresh = ~seen
    return (np.insert(keys, where[fresh], new_keys[fresh]),
            np.insert(counts, where[fresh], new_counts[fresh]))


def _check_arguments(n_samples, n_features, n_labels, avg_labels, avg_features, label_power,
                     noise, multiclass) -> None:
    """Raise ``ValueError`` naming the first argument that is out of range."""
    for name, value in (("n_samples", n_samples), ("n_features", n_features),
                        ("n_labels", n_labels)):
        check_dimension(name, value, low=1)
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
    features = _sample_features(rows, Y, prototype_features, n_features, noise, rng)
    return _feature_matrix(*_merge_repeats(rows, features, n_features), Y.shape[0], n_features)


def _sample_features(rows: np.ndarray, Y: sp.csr_matrix, prototype_features: np.ndarray,
                     n_features: int, noise: float, rng: np.random.Generator) -> np.ndarray:
    """Draw one feature id for every entry of ``rows`` from that row's labels or noise."""
    # A draw picks one of its row's labels uniformly, then one slot of
    # that label's prototype uniformly.
    labels_per_row = np.diff(Y.indptr)
    position = Y.indptr[rows] + (rng.random(rows.size) * labels_per_row[rows]).astype(np.int64)
    slot = rng.integers(0, prototype_features.shape[1], size=rows.size)
    features = prototype_features[Y.indices[position], slot]
    is_noise = rng.random(rows.size) < noise
    features[is_noise] = rng.integers(0, n_features, size=int(is_noise.sum()))
    return features


def _feature_matrix(rows: np.ndarray, features: np.ndarray, counts: np.ndarray,
                    n_samples: int, n_features: int) -> sp.csr_matrix:
    """Sorted (row, feature, draw count) triples as a tf-idf CSR with unit-norm rows."""
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
    idf = smoothed_idf(np.bincount(features, minlength=n_features), n_samples)
    return (sublinear_tf(counts) * idf[features]).astype(np.float32)


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
