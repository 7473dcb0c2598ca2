"""Slow pure-Python reference of LdSM node training, for the tests only.

Written straight from the paper's pseudo-code (Majzoubi & Choromanska 2020,
supplement Algorithms 3 and 4), with the conventions that ``xmltree.ldsm._builder``
documents for what the paper leaves open: labelled examples only, initial
biases ``(u - 0.5) * 0.02`` drawn in regressor order, ties in J within
``TIE_TOLERANCE`` broken by one ``below(n_tied)`` draw, and the NAG / SGD
updates of ``xmltree._kernels._optim``. Its random numbers come from :class:`Xoshiro`,
an independent Python transcription of the published xoshiro256** and
splitmix64 algorithms, so the kernel's random choices can be reproduced.
"""

from __future__ import annotations

import math

import numpy as np

MASK64 = (1 << 64) - 1
TIE_TOLERANCE = 1e-12
INIT_BIAS_SPREAD = 0.02
MIN_PASSES = 3


class Xoshiro:
    """xoshiro256** seeded through splitmix64 (Blackman & Vigna), in plain Python."""

    def __init__(self, seed: int):
        state = seed & MASK64
        self.s = []
        for _ in range(4):
            state = (state + 0x9E3779B97F4A7C15) & MASK64
            z = state
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
            self.s.append(z ^ (z >> 31))

    @staticmethod
    def _rotl(x: int, k: int) -> int:
        return ((x << k) | (x >> (64 - k))) & MASK64

    def next(self) -> int:
        """Return the next 64 random bits."""
        s = self.s
        result = (self._rotl((s[1] * 5) & MASK64, 7) * 9) & MASK64
        t = (s[1] << 17) & MASK64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = self._rotl(s[3], 45)
        return result

    def uniform(self) -> float:
        """Return a float in [0, 1) built from the top 53 bits."""
        return (self.next() >> 11) * (1.0 / 9007199254740992.0)

    def below(self, n: int) -> int:
        """Return an integer in [0, n) by Lemire's multiply-shift on the top 32 bits."""
        return ((self.next() >> 32) * n) >> 32


def sigmoid(z: float) -> float:
    """Logistic function (two branches so that ``math.exp`` never overflows)."""
    if z >= 0.0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def f32(value: float) -> float:
    """`value` as the kernels store their optimiser state: rounded to float32."""
    return float(np.float32(value))


def _active(indices, values):
    """The example's (feature, value) pairs with the zeros left out, bias excluded."""
    return [(int(j), float(x)) for j, x in zip(indices, values) if float(x) != 0.0]


def regressor_score(weights, indices, values) -> float:
    """``bias + sum_j x_j w_j`` (bias is the last entry of ``weights``)."""
    z = float(weights[-1])
    for j, x in _active(indices, values):
        z += x * weights[j]
    return z


def sgd_step(weights, indices, values, target, learning_rate) -> float:
    """Plain SGD on the logistic loss, in place; return the score after the update."""
    g = sigmoid(regressor_score(weights, indices, values)) - target
    weights[-1] = f32(weights[-1] - learning_rate * g * 1.0)
    for j, x in _active(indices, values):
        weights[j] = f32(weights[j] - learning_rate * g * x)
    return regressor_score(weights, indices, values)


def nag_step(weights, scale, sum_sq_grad, norm, n_updates, indices, values, target,
             learning_rate):
    """Normalized adaptive gradient step (Ross et al. 2013), in place; the state
    is stored in float32, the step computed in float64 (from the unrounded
    sum of squared gradients).

    Returns ``(score_after, norm, n_updates)``.
    """
    bias = len(weights) - 1
    features = [(bias, 1.0)] + _active(indices, values)
    for j, x in features:
        if abs(x) > scale[j]:
            if scale[j] > 0.0:
                weights[j] = f32(weights[j] * (scale[j] / abs(x)))
            scale[j] = abs(x)
        norm += (x / scale[j]) * (x / scale[j])
    n_updates += 1
    g = sigmoid(regressor_score(weights, indices, values)) - target
    for j, x in features:
        g_j = g * x
        total = sum_sq_grad[j] + g_j * g_j
        sum_sq_grad[j] = f32(total)
        if total > 0.0:
            weights[j] = f32(weights[j] - learning_rate * math.sqrt(n_updates / norm) * g_j
                             / (scale[j] * math.sqrt(total)))
    return regressor_score(weights, indices, values), norm, n_updates


def objective(prob, label_prob, labels, label_count, total_count, lambda1, lambda2):
    """J of Algorithm 3 for given (tentative) P_m and P_m^k."""
    arity = len(prob)
    pairs = [(j, k) for j in range(arity) for k in range(j + 1, arity)]
    balance = sum(abs(prob[j] - prob[k]) for j, k in pairs)
    integrity = 0.0
    for label in labels:
        share = label_count[label] / total_count
        for j, k in pairs:
            integrity += share * abs(label_prob[label][j] - label_prob[label][k])
    return balance - lambda1 * integrity + lambda2 * abs(sum(prob) - 1.0)


def optimize_objective(state, labels, rng, lambda1, lambda2):
    """Algorithm 3: return (best subset, its J), ties broken with ``rng``."""
    arity = len(state["prob"])
    count, n = state["total_count"], len(labels)
    best, tied, values = None, [], {}
    for subset in range(1, 2**arity):
        goes = [float((subset >> m) & 1) for m in range(arity)]
        prob = [((count - n) * state["prob"][m] + n * goes[m]) / count for m in range(arity)]
        label_prob = {}
        for label in labels:
            seen = state["label_count"][label]
            label_prob[label] = [((seen - 1) * state["label_prob"][label][m] + goes[m]) / seen
                                 for m in range(arity)]
        value = objective(prob, label_prob, labels, state["label_count"], count, lambda1, lambda2)
        values[subset] = value
        if best is None or value < best - TIE_TOLERANCE:
            best, tied = value, [subset]
        elif value <= best + TIE_TOLERANCE:
            tied.append(subset)
    chosen = tied[0] if len(tied) == 1 else tied[rng.below(len(tied))]
    return chosen, values[chosen]


def store_weights(weights, cap):
    """A regressor's feature weights as stored, with a threshold of 0.

    Rounded to float32, then all but the ``cap`` largest magnitudes zeroed,
    ranked as the kernel ranks them: by magnitude, then by feature id.
    """
    stored = weights.astype(np.float32).astype(np.float64)
    features = np.flatnonzero(stored)
    if features.size > cap:
        order = np.lexsort((features, -np.abs(stored[features])))
        stored[features[order[cap:]]] = 0.0
    return stored


def train_node(X, Y, rows, *, arity, epochs, lambda1, lambda2, optimizer, learning_rate,
               routing, seed, epoch_tolerance=0.0):
    """Algorithm 4 on the examples ``rows``; returns what ``_py_train_node`` returns
    (but ``stored_weights``: see :func:`store_weights`).

    With ``epoch_tolerance`` > 0 the passes end after the first one, from
    pass ``MIN_PASSES`` on, whose mean chosen objective is within
    ``epoch_tolerance`` times the magnitude of the previous pass's.
    """
    n_features = X.shape[1]
    rng = Xoshiro(seed)
    weights = np.zeros((arity, n_features + 1))
    scale = np.zeros((arity, n_features + 1))
    sum_sq_grad = np.zeros((arity, n_features + 1))
    norm = [0.0] * arity
    n_updates = [0] * arity
    for m in range(arity):
        weights[m, -1] = f32((rng.uniform() - 0.5) * INIT_BIAS_SPREAD)
    state = {"prob": [0.0] * arity, "label_prob": {}, "label_count": {}, "total_count": 0}
    directions = np.zeros((epochs, len(rows)), dtype=np.int32)
    trace = np.zeros(epochs)
    for epoch in range(epochs):
        chosen_values = []
        for i, row in enumerate(rows):
            labels = [int(k) for k in Y.indices[Y.indptr[row]:Y.indptr[row + 1]]]
            if not labels:
                continue
            x_indices = X.indices[X.indptr[row]:X.indptr[row + 1]]
            x_values = X.data[X.indptr[row]:X.indptr[row + 1]].astype(np.float64)
            state["total_count"] += len(labels)
            for label in labels:
                state["label_count"][label] = state["label_count"].get(label, 0) + 1
                state["label_prob"].setdefault(label, [0.0] * arity)
            chosen, value = optimize_objective(state, labels, rng, lambda1, lambda2)
            directions[epoch, i] = chosen
            chosen_values.append(value)
            count, n = state["total_count"], len(labels)
            for m in range(arity):
                target = float((chosen >> m) & 1)
                if optimizer == "nag":
                    z, norm[m], n_updates[m] = nag_step(
                        weights[m], scale[m], sum_sq_grad[m], norm[m], n_updates[m],
                        x_indices, x_values, target, learning_rate)
                else:
                    z = sgd_step(weights[m], x_indices, x_values, target, learning_rate)
                pred = sigmoid(z) if routing == "sigmoid" else min(max(z, 0.0), 1.0)
                state["prob"][m] = ((count - n) * state["prob"][m] + n * pred) / count
                for label in labels:
                    seen = state["label_count"][label]
                    state["label_prob"][label][m] = (
                        ((seen - 1) * state["label_prob"][label][m] + pred) / seen)
        trace[epoch] = np.mean(chosen_values) if chosen_values else 0.0
        if epoch + 1 >= MIN_PASSES and epoch_tolerance > 0 and (
                abs(trace[epoch] - trace[epoch - 1]) <= epoch_tolerance * abs(trace[epoch - 1])):
            directions, trace = directions[:epoch + 1], trace[:epoch + 1]
            break
    labels = sorted(state["label_count"])
    return {
        "directions": directions,
        "trace": trace,
        "total_count": state["total_count"],
        "labels": np.array(labels, dtype=np.int32),
        "label_count": np.array([state["label_count"][k] for k in labels], dtype=np.int64),
        "label_prob": np.array([state["label_prob"][k] for k in labels]).reshape(-1, arity),
        "prob": np.array(state["prob"]),
        "weights": weights[:, :n_features],
        "bias": weights[:, n_features],
    }
