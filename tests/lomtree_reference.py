"""Slow, plain-Python LOMtree (Choromanska & Langford 2015, Algorithm 1).

Written for readability, not speed: dictionaries per node, one example at a
time. It follows the same conventions as the compiled kernels in
``xmltree/lomtree/_lomtree.pyx`` so that both produce bit-identical trees:

* node regressors are trained with the shared online updates of
  ``xmltree/_kernels/_optim.pyx``, re-implemented here operation by operation in
  float64, each stored weight, scale and sum of squared gradients rounded to
  float32 as the kernels store them: the margin steps for the hinge loss (target sign -1 = left,
  +1 = right) or the logistic steps (target 0 = left, 1 = right);
* a swap looks for the orphan leaf by walking down from the root to the child
  whose C equals its parent's, preferring the left child, and is skipped when
  that leaf hangs directly under the root (it has no grandparent to re-attach
  its sibling to) or is the splitting leaf itself (with RS < 1 a leaf may
  qualify; it cannot become its own child);
* the internal node taken over by a swap gets a zeroed regressor.
"""

from __future__ import annotations

import math

import numpy as np
from ldsm_reference import f32


def _sigmoid(z):
    if z >= 0.0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def log_sigmoid(s):
    if s >= 0.0:
        return -math.log1p(math.exp(-s))
    return s - math.log1p(math.exp(s))


class ReferenceRegressor:
    """One linear regressor with SGD and NAG state (bias stored last)."""

    def __init__(self, n_features):
        self.bias = n_features
        self.weights = [0.0] * (n_features + 1)
        self.scale = [0.0] * (n_features + 1)
        self.sum_sq_grad = [0.0] * (n_features + 1)
        self.norm = 0.0
        self.n_updates = 0

    def score(self, x):
        z = self.weights[self.bias]
        for j, value in x:
            if value != 0.0:
                z += value * self.weights[j]
        return z

    def sgd_step(self, x, target, learning_rate):
        step = learning_rate * (_sigmoid(self.score(x)) - target)
        self.weights[self.bias] = f32(self.weights[self.bias] - step)
        z_after = self.weights[self.bias]
        for j, value in x:
            if value != 0.0:
                self.weights[j] = f32(self.weights[j] - step * value)
                z_after += value * self.weights[j]
        self.n_updates += 1
        return z_after

    def _observe(self, j, value):
        magnitude = abs(value)
        if magnitude > self.scale[j]:
            if self.scale[j] > 0.0:
                self.weights[j] = f32(self.weights[j] * (self.scale[j] / magnitude))
            self.scale[j] = magnitude
        ratio = value / self.scale[j]
        return ratio * ratio

    def _update(self, j, value, g, rate):
        gradient = g * value
        total = self.sum_sq_grad[j] + gradient * gradient
        self.sum_sq_grad[j] = f32(total)
        if total > 0.0:
            self.weights[j] = f32(self.weights[j]
                                  - rate * gradient / (self.scale[j] * math.sqrt(total)))
        return value * self.weights[j]

    def nag_step(self, x, target, learning_rate):
        self.norm += self._observe(self.bias, 1.0)
        z = self.weights[self.bias]
        for j, value in x:
            if value != 0.0:
                self.norm += self._observe(j, value)
                z += value * self.weights[j]
        self.n_updates += 1
        g = _sigmoid(z) - target
        rate = learning_rate * math.sqrt(self.n_updates / self.norm)
        z_after = self._update(self.bias, 1.0, g, rate)
        for j, value in x:
            if value != 0.0:
                z_after += self._update(j, value, g, rate)
        return z_after

    def _margin_rate(self, j):
        return 1.0 / (self.scale[j] * math.sqrt(self.sum_sq_grad[j]))

    def sgd_margin_step(self, x, sign, learning_rate):
        z = self.score(x)
        error = sign - min(1.0, max(-1.0, z))
        if error == 0.0:
            return z
        squared_norm = 1.0
        for _, value in x:
            squared_norm += value * value
        step = sign * min(learning_rate, abs(error) / squared_norm)
        self.weights[self.bias] = f32(self.weights[self.bias] + step)
        z_after = self.weights[self.bias]
        for j, value in x:
            if value != 0.0:
                self.weights[j] = f32(self.weights[j] + step * value)
                z_after += value * self.weights[j]
        self.n_updates += 1
        return z_after

    def nag_margin_step(self, x, sign, learning_rate):
        z = self.score(x)
        error = sign - min(1.0, max(-1.0, z))
        if error == 0.0:
            return z
        self.norm += self._observe(self.bias, 1.0)
        self.sum_sq_grad[self.bias] = f32(self.sum_sq_grad[self.bias] + 1.0)
        sensitivity = self._margin_rate(self.bias)
        z = self.weights[self.bias]
        for j, value in x:
            if value != 0.0:
                self.norm += self._observe(j, value)
                self.sum_sq_grad[j] = f32(self.sum_sq_grad[j] + value * value)
                sensitivity += value * value * self._margin_rate(j)
                z += value * self.weights[j]
        self.n_updates += 1
        multiplier = math.sqrt(self.n_updates / self.norm)
        error = sign - min(1.0, max(-1.0, z))
        step = sign * multiplier * min(learning_rate, abs(error) / (multiplier * sensitivity))
        self.weights[self.bias] = f32(self.weights[self.bias]
                                      + step * self._margin_rate(self.bias))
        z_after = self.weights[self.bias]
        for j, value in x:
            if value != 0.0:
                self.weights[j] = f32(self.weights[j] + step * value * self._margin_rate(j))
                z_after += value * self.weights[j]
        return z_after


class ReferenceNode:
    """SetNode of Algorithm 1: empty per-class tables, E_v = 0, C_v = 0."""

    def __init__(self, parent):
        self.parent = parent
        self.left = -1
        self.right = -1
        self.regressor = -1  # slot of the node's regressor; -1 for a leaf
        self.n_recycled = 0
        self.reset()

    def reset(self):
        self.reached = {}    # l_v(y)
        self.trained = {}    # n_v(y)
        self.score_sum = {}  # m_v(y)
        self.total_score = 0.0
        self.total_trained = 0
        self.min_count = 0   # C_v

    def is_leaf(self):
        return self.left < 0


class ReferenceLOMTree:
    """Algorithm 1 over a stream of ``(x, y)`` with ``x`` a list of ``(j, value)``."""

    def __init__(self, n_features, max_internal_nodes, swap_resistance,
                 optimizer="nag", learning_rate=0.5, loss="hinge"):
        self.n_features = n_features
        self.max_internal_nodes = max_internal_nodes
        self.swap_resistance = swap_resistance
        self.optimizer = optimizer
        self.learning_rate = learning_rate
        self.loss = loss
        self.nodes = [ReferenceNode(-1)]
        self.regressors = []
        self.n_swaps = 0

    # -- C_v bookkeeping -------------------------------------------------------------

    def _update_min_count(self, v):
        while v != 0:
            parent = self.nodes[v].parent
            if self.nodes[parent].min_count == self.nodes[v].min_count:
                break
            p = self.nodes[parent]
            p.min_count = min(self.nodes[p.left].min_count, self.nodes[p.right].min_count)
            v = parent

    def _smallest_leaf(self):
        v = 0
        while not self.nodes[v].is_leaf():
            node = self.nodes[v]
            if self.nodes[node.left].min_count == node.min_count:
                v = node.left
            else:
                v = node.right
        return v

    # -- growing ---------------------------------------------------------------------

    def _split(self, j):
        """Give leaf j two children (new nodes, or recycled ones); False if impossible."""
        node = self.nodes[j]
        if len(self.regressors) < self.max_internal_nodes:
            left, right = len(self.nodes), len(self.nodes) + 1
            self.nodes.append(ReferenceNode(j))
            self.nodes.append(ReferenceNode(j))
            node.regressor = len(self.regressors)
            self.regressors.append(ReferenceRegressor(self.n_features))
        else:
            s = self._smallest_leaf()
            s_parent = self.nodes[s].parent
            if s_parent == 0 or s == j:
                return False
            s_grandparent = self.nodes[s_parent].parent
            sp = self.nodes[s_parent]
            sibling = sp.right if sp.left == s else sp.left
            gp = self.nodes[s_grandparent]
            if gp.left == s_parent:
                gp.left = sibling
            else:
                gp.right = sibling
            self.nodes[sibling].parent = s_grandparent
            self._update_min_count(sibling)
            node.regressor = sp.regressor
            self.regressors[sp.regressor] = ReferenceRegressor(self.n_features)
            for recycled in (s, s_parent):
                r = self.nodes[recycled]
                r.reset()
                r.left = r.right = r.regressor = -1
                r.parent = j
                r.n_recycled += 1
            left, right = s, s_parent
            self.n_swaps += 1
        node.left, node.right = left, right
        self.nodes[left].min_count = node.min_count // 2
        self.nodes[right].min_count = node.min_count - node.min_count // 2
        self._update_min_count(left)
        return True

    def _may_split(self, j):
        node = self.nodes[j]
        if sum(1 for count in node.reached.values() if count > 0) < 2:
            return False
        if len(self.regressors) < self.max_internal_nodes:
            return True
        root_count = self.nodes[0].min_count
        return (node.min_count - max(node.reached.values())
                > self.swap_resistance * (root_count + 1))

    # -- training --------------------------------------------------------------------

    def _train_node(self, j, x, y):
        node = self.nodes[j]
        node.trained.setdefault(y, 0)
        node.score_sum.setdefault(y, 0.0)
        expected = node.total_score / node.total_trained if node.total_trained else 0.0
        expected_y = node.score_sum[y] / node.trained[y] if node.trained[y] else 0.0
        go_left = expected > expected_y
        regressor = self.regressors[node.regressor]
        if self.loss == "hinge":
            step = regressor.nag_margin_step if self.optimizer == "nag" else \
                regressor.sgd_margin_step
            z = step(x, -1.0 if go_left else 1.0, self.learning_rate)
        else:
            step = regressor.nag_step if self.optimizer == "nag" else regressor.sgd_step
            z = step(x, 0.0 if go_left else 1.0, self.learning_rate)
        node.trained[y] += 1
        node.score_sum[y] += z
        node.total_trained += 1
        node.total_score += z
        return node.left if z < 0.0 else node.right

    def learn_one(self, x, y):
        j = 0
        while True:
            node = self.nodes[j]
            node.reached[y] = node.reached.get(y, 0) + 1
            if node.is_leaf():
                if not (self._may_split(j) and self._split(j)):
                    node.min_count += 1
                    self._update_min_count(j)
                    return
            j = self._train_node(j, x, y)

    def leaf_of(self, x, beam_width=1, scale=1.0):
        if beam_width == 1:  # the single path of the score signs
            j = 0
            while not self.nodes[j].is_leaf():
                node = self.nodes[j]
                j = node.left if self.regressors[node.regressor].score(x) < 0.0 else node.right
            return j
        return self.beam_leaves(x, beam_width, scale)[0][1]

    def beam_leaves(self, x, beam_width, scale):
        """The ``(log-probability, leaf)`` pairs a beam search ends with, best first."""
        beam = [(0.0, 0)]
        expanded = True
        while expanded:
            expanded = False
            candidates = []
            for log_prob, j in beam:
                node = self.nodes[j]
                if node.is_leaf():
                    candidates.append((log_prob, j))
                    continue
                expanded = True
                s = scale * self.regressors[node.regressor].score(x) / self.margin(j)
                candidates.append((log_prob + log_sigmoid(s), node.right))
                candidates.append((log_prob + log_sigmoid(-s), node.left))
            beam = sorted(candidates, key=lambda entry: -entry[0])[:beam_width]  # stable
        return beam

    def margin(self, j):
        """Half the gap between the mean scores of the classes node j sends right and left."""
        node = self.nodes[j]
        expected = node.total_score / node.total_trained if node.total_trained else 0.0
        sides = {True: [0, 0.0], False: [0, 0.0]}  # right?: [n_v(y) summed, m_v(y) summed]
        for y in sorted(node.trained):
            side = sides[not expected > node.score_sum[y] / node.trained[y]]
            side[0] += node.trained[y]
            side[1] += node.score_sum[y]
        if node.is_leaf() or not (sides[True][0] and sides[False][0]):
            return 1.0
        gap = (sides[True][1] / sides[True][0] - sides[False][1] / sides[False][0]) / 2
        return gap if gap > 0 else 1.0

    def ranking(self, j):
        """Classes of node j by decreasing count (then id), with their float32 shares."""
        reached = self.nodes[j].reached
        total = max(sum(reached.values()), 1)
        ranked = sorted(reached.items(), key=lambda item: (-item[1], item[0]))
        return [(label, float(np.float32(count / total))) for label, count in ranked]

    def predict_topk(self, x, k, beam_width=1, scale=1.0):
        """The kernel's top-k ``(class, score)`` list (shorter when too few classes are known)."""
        listed = []
        if beam_width == 1:
            leaf = self.leaf_of(x)
        else:
            beam = self.beam_leaves(x, beam_width, scale)
            leaf, best = beam[0][1], beam[0][0]
            total = 0.0
            for log_prob, _ in beam:
                total += math.exp(log_prob - best)
            mass = {}
            for log_prob, j in beam:
                weight = math.exp(log_prob - best) / total
                while not self.nodes[j].reached and self.nodes[j].parent >= 0:
                    j = self.nodes[j].parent
                for label, share in self.ranking(j):
                    mass[label] = mass.get(label, 0.0) + weight * share
            ranked = sorted(mass, key=lambda label: (-mass[label], label))[:k]
            listed = [(label, float(np.float32(mass[label]))) for label in ranked]
        j = leaf
        while j >= 0 and len(listed) < k:  # completion: the leaf, then its ancestors
            for label, share in self.ranking(j):
                if len(listed) < k and all(label != seen for seen, _ in listed):
                    listed.append((label, share if j == leaf else 0.0))
            j = self.nodes[j].parent
        return listed


def rows_of(X):
    """Yield each row of a CSR matrix as a list of ``(feature, float value)`` pairs."""
    X = X.tocsr()
    for i in range(X.shape[0]):
        start, end = X.indptr[i], X.indptr[i + 1]
        yield [(int(j), float(v)) for j, v in zip(X.indices[start:end],
                                                  X.data[start:end].astype(np.float32))]
