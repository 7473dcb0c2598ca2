"""Slow pure-Python reference of the label classifiers' solver, for the tests only.

Dual coordinate descent for the L2-regularised squared hinge loss, written
from Hsieh et al. (ICML 2008, Algorithm 1 with the L2-loss diagonal
D_ii = 1 / (2C)), with the conventions ``xmltree.ldsm._label_models`` documents:
a bias feature of value 1, visiting orders shuffled by the label's own
xoshiro256** generator (seed ``seed ^ (label * 0x9E3779B97F4A7C15)``,
Fisher-Yates from the last position, over the active examples), LIBLINEAR's
shrinking (an example with alpha 0 whose gradient exceeds the previous
pass's largest projected gradient leaves the active set, swapped with the
last active one), a first active set of every positive and the negatives
that a uniform draw below ``first_negatives`` picks (one draw a negative, in
order; the others listed from the end), every example active again once that
set converges or after ``max(1, max_epochs // 2)`` passes, a stop once a
pass's projected gradients span at most the tolerance and every example is
active, and weights of magnitude below the threshold dropped after rounding
to float32. Sums run in the kernel's order, so that the two agree to the bit.
"""

from __future__ import annotations

import numpy as np
from ldsm_reference import MASK64, Xoshiro

GOLDEN_GAMMA = 0x9E3779B97F4A7C15


def row_entries(X, row):
    """The stored feature ids and float64 values of `row`, in stored order."""
    span = slice(X.indptr[row], X.indptr[row + 1])
    return X.indices[span], X.data[span].astype(np.float64)


def in_order_sum(terms) -> float:
    """Sum from the first term to the last, one addition after the other (the
    kernel's order)."""
    total = 0.0
    for term in terms:
        total += term
    return total


def shuffle(rng: Xoshiro, values: list) -> None:
    """Fisher-Yates from the end, drawing ``below(i + 1)`` for position i."""
    for i in range(len(values) - 1, 0, -1):
        j = rng.below(i + 1)
        values[i], values[j] = values[j], values[i]


def train_label(X, rows, targets, *, C, max_epochs, tolerance, first_negatives, seed,
                label):
    """Return (dense float64 weights, bias) of one label's classifier."""
    diagonal = 0.5 / C
    w = np.zeros(X.shape[1])
    bias = 0.0
    n = len(rows)
    alpha = np.zeros(n)
    largest_old = np.inf
    rng = Xoshiro((seed ^ ((label * GOLDEN_GAMMA) & MASK64)) & MASK64)
    first, rest = [], []
    for i in range(n):
        (first if targets[i] > 0 or rng.uniform() < first_negatives else rest).append(i)
    order = first + rest[::-1]
    active = len(first)
    sample_passes = max(1, max_epochs // 2) if active < n else 0
    for epoch in range(max_epochs):
        head = order[:active]
        shuffle(rng, head)
        order[:active] = head
        largest, smallest = -np.inf, np.inf
        position = 0
        while position < active:
            i = order[position]
            features, values, y = *row_entries(X, rows[i]), float(targets[i])
            gradient = y * (bias + in_order_sum(w[features] * values)) - 1.0 \
                + diagonal * alpha[i]
            if alpha[i] == 0.0:
                if gradient > largest_old:
                    active -= 1
                    order[position], order[active] = order[active], i
                    continue
                projected = min(gradient, 0.0)
            else:
                projected = gradient
            largest, smallest = max(largest, projected), min(smallest, projected)
            position += 1
            if abs(projected) <= 1e-12:
                continue
            old = alpha[i]
            squared_norm = in_order_sum(values * values) + 1.0
            alpha[i] = max(old - gradient / (squared_norm + diagonal), 0.0)
            step = (alpha[i] - old) * y
            w[features] += step * values
            bias += step
        converged = largest - smallest <= tolerance
        if converged and active == n:
            break
        if converged or epoch + 1 == sample_passes:
            active, largest_old = n, np.inf
        else:
            largest_old = largest if largest > 0 else np.inf
    return w, bias


def train_label_models(X, indptr, examples, targets, *, C, max_epochs, tolerance,
                       first_negatives, weight_threshold, seed):
    """Dense (n_labels, n_features) float32 weights (pruned) and float32 biases."""
    n_labels = len(indptr) - 1
    weights = np.zeros((n_labels, X.shape[1]), dtype=np.float32)
    biases = np.zeros(n_labels, dtype=np.float32)
    for label in range(n_labels):
        span = slice(indptr[label], indptr[label + 1])
        w, bias = train_label(X, examples[span], targets[span], C=C, max_epochs=max_epochs,
                              tolerance=tolerance, first_negatives=first_negatives,
                              seed=seed, label=label)
        w = w.astype(np.float32)
        w[np.abs(w) < weight_threshold] = 0.0
        weights[label], biases[label] = w, bias
    return weights, biases
