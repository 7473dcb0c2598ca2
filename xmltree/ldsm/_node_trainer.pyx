# distutils: language = c++
"""LdSM node training: the direction search, the regressor updates, the weight budget.

Implements Algorithms 1 and 3-5 of Majzoubi & Choromanska (AISTATS 2020). A
node with arity M streams E times over its examples (in the tree's shuffled
order); for each example it updates the counters C_v and l_v, evaluates the
objective

    J = sum_{j<l} |P_j - P_l| - lambda1 * sum_{i in y} (l_v[i] / C_v) sum_{j<l} |P_j^i - P_l^i|
        + lambda2 * |sum_j P_j - 1|

for each of the 2^M - 1 non-empty direction subsets with the tentative
statistics of Algorithm 3, trains regressor m towards "goes to child m" of
the best subset, and moves P_m and P_m^k towards the regressor's output.

Choices the paper leaves open, fixed here:

* Ties in J (within ``TIE_TOLERANCE``) are broken uniformly at random with
  the tree's generator; a draw happens only when there is more than one.
* "Random weights" (Algorithm 4): only the biases start random, uniform in
  ``[-INIT_BIAS_SPREAD / 2, INIT_BIAS_SPREAD / 2)``, drawn in regressor order
  when the node starts; feature weights start at 0, so stored models stay
  sparse.
* With ``epoch_tolerance`` > 0, a node stops before its E passes once a
  pass no longer changes it: when the mean J of the subsets chosen in the
  pass differs from the previous pass's by at most ``epoch_tolerance``
  times the latter's magnitude, and the node has had ``MIN_PASSES``. The
  choices themselves never settle (ties and the running statistics keep
  many of them moving), the mean J does: nodes of many examples converge
  in fewer passes than small ones.
* Examples without labels are skipped by training (they carry no signal and
  would divide by C_v = 0) but are still routed.
* After training, each weight is rounded to float32 and kept when
  ``|w| >= weight_threshold`` and ``w != 0``; the bias is always kept. Routing
  uses these stored weights, so that prediction follows the same paths.
* A weight budget (``max_weights``, ``weights_per_row``) caps each regressor
  at ``max(max_weights, weights_per_row * examples of the node)`` weights:
  only the largest magnitudes are kept (equal magnitudes: smaller feature
  ids first), when the weights are stored. Truncating at the end of every
  epoch as well once did better with histogram leaves and 20 epochs; with
  the linear leaves and 3 epochs it costs precision on large-D data and
  doubles the tree time there (``benchmarks/README.md``, weight budget).

The best-first growth that calls it is ``_builder``.
"""

import numpy as np

cimport numpy as cnp
from libc.math cimport INFINITY, fabs, sqrt
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libcpp.algorithm cimport nth_element, sort
from libcpp.vector cimport vector

from .._kernels._optim cimport (MAX_GROUP_SIZE, OPTIMIZER_NAG, OPTIMIZER_SGD, group_block_size,
                                new_group, regressor_step, reset_group, score, sigmoid,
                                weight_of)
from .._kernels._random cimport rng_below, rng_seed, rng_uniform
from .._kernels._sparse cimport CSRView, csr_view
from .._kernels._types cimport float32_t, float64_t, index_t, offset_t
from ._routing cimport route

from ._auto_settings import EPOCHS
from ._tree_arrays import ROUTING_THRESHOLDS

cnp.import_array()

#: Two objective values closer than this are a tie (symmetric subsets must tie
#: even when their terms are summed in a different order).
cdef float64_t TIE_TOLERANCE = 1e-12
#: Width of the uniform interval the initial biases are drawn from.
cdef float64_t INIT_BIAS_SPREAD = 0.02

cdef enum:
    # Magnitudes in the sample that `magnitude_of_rank` takes its cuts from.
    MAGNITUDE_SAMPLE = 256

#: Passes a node takes before ``epoch_tolerance`` may end them: the passes
#: LdSM gives long rows (``_auto_settings.EPOCHS``, at least 2 so that a pass
#: has one before it), below which routers lose precision whatever their
#: objective says ("Where the fit time goes (issue #16)" and "Fit cost that
#: follows the problem (#34)" in the lab notebook).
cdef index_t MIN_PASSES = EPOCHS

#: A node lists its features by scanning the D / 64 words of its feature
#: bits, rather than sorting them, once it has more than D / SCAN_FACTOR of
#: them (about where sorting F features costs more than the scan).
cdef offset_t SCAN_FACTOR = 1024

cdef extern from *:
    """
    #if defined(_MSC_VER)
    #include <intrin.h>
    static __inline int xmltree_lowest_bit(unsigned __int64 word) {
        unsigned long index;
        _BitScanForward64(&index, word);
        return (int)index;
    }
    #define XMLTREE_LOWEST_BIT(word) xmltree_lowest_bit(word)
    #else
    #define XMLTREE_LOWEST_BIT(word) __builtin_ctzll(word)
    #endif
    """
    # Index of the lowest set bit of a non-zero word (GCC/Clang builtin, MSVC
    # intrinsic).
    int lowest_bit "XMLTREE_LOWEST_BIT" (uint64_t word) noexcept nogil

_OPTIMIZERS = {"sgd": OPTIMIZER_SGD, "nag": OPTIMIZER_NAG}


cdef inline float64_t clamp_unit(float64_t z) noexcept nogil:
    """Return ``min(max(z, 0), 1)``."""
    return 0.0 if z < 0.0 else (1.0 if z > 1.0 else z)


cdef inline index_t _train_example_of(NodeTrainer self, index_t position, index_t row,
                                      float64_t* chosen_objective, index_t arity) noexcept nogil:
    """`NodeTrainer.train_example`, with the node's arity passed as `arity` so that a
    caller can inline a constant."""
    cdef offset_t label_start = self.Y.indptr[row]
    cdef index_t n_labels = <index_t>(self.Y.indptr[row + 1] - label_start)
    cdef offset_t x_start = self.local_indptr[position]
    cdef index_t nnz = <index_t>(self.local_indptr[position + 1] - x_start)
    cdef index_t k, m, slot, chosen
    cdef float64_t pred
    if n_labels == 0:
        return 0
    self.total_count += n_labels
    for k in range(n_labels):
        slot = self.label_slot[self.Y.indices[label_start + k]]
        self.example_slots[k] = slot
        self.label_count[slot] += 1
    chosen = _choose_subset(self, n_labels, arity)
    chosen_objective[0] = self.objective[chosen]
    for m in range(arity):
        self.targets[m] = <float64_t>((chosen >> m) & 1)
    regressor_step(self.settings.optimizer, &self.regressors,
                   self.local_index.data() + x_start, self.local_value.data() + x_start,
                   nnz, self.targets.data(), self.settings.learning_rate,
                   self.scores.data())
    for m in range(arity):
        pred = (sigmoid(self.scores[m]) if self.settings.sigmoid_routing
                else clamp_unit(self.scores[m]))
        _update_statistics(self, m, pred, n_labels, arity)
    return chosen


cdef inline void _tabulate_terms(NodeTrainer self, index_t n_labels,
                                 index_t arity) noexcept nogil:
    """Tabulate what J needs for every subset of Algorithm 3, in one pass over labels.

    A tentative P_m (and P_m^k) takes only two values: example sent to m
    or not. So each pair j < l of children contributes to the integrity
    term one of four sums over the labels, ``sum_k pi_k |P_j^k - P_l^k|``
    for the four (goes to j, goes to l) cases; each subset then only
    adds up its pairs' entries, instead of looping over the labels again.
    """
    cdef float64_t count = <float64_t>self.total_count
    cdef float64_t* tentative = self.tentative.data()
    cdef float64_t* row = self.label_row.data()
    cdef float64_t* pair_sums = self.pair_integrity.data()
    cdef float64_t seen, share
    cdef index_t k, j, l, pair, slot, goes, goes_l
    for j in range(arity):
        for goes in range(2):
            tentative[2 * j + goes] = (
                ((count - n_labels) * self.prob[j] + n_labels * <float64_t>goes) / count)
    for pair in range(<index_t>self.pair_integrity.size()):
        pair_sums[pair] = 0.0
    for k in range(n_labels):
        slot = self.example_slots[k]
        seen = <float64_t>self.label_count[slot]
        share = seen / count
        for j in range(arity):
            for goes in range(2):
                row[2 * j + goes] = (
                    ((seen - 1) * self.label_prob[slot * arity + j] + <float64_t>goes) / seen)
        pair = 0
        for j in range(arity):
            for l in range(j + 1, arity):
                for goes in range(2):
                    for goes_l in range(2):
                        pair_sums[4 * pair + 2 * goes + goes_l] += (
                            share * fabs(row[2 * j + goes] - row[2 * l + goes_l]))
                pair += 1


cdef inline index_t _choose_subset(NodeTrainer self, index_t n_labels,
                                   index_t arity) noexcept nogil:
    """OptimizeObjective (Algorithm 3): the subset with the lowest J, ties at random."""
    cdef const float64_t* tentative = self.tentative.data()
    cdef const float64_t* pair_sums = self.pair_integrity.data()
    cdef float64_t p_j, between, integrity, mass, objective, best = 0.0
    cdef index_t subset, j, l, pair, goes, n_tied = 0
    _tabulate_terms(self, n_labels, arity)
    for subset in range(1, 1 << arity):
        between = 0.0
        integrity = 0.0
        mass = 0.0
        pair = 0
        for j in range(arity):
            goes = (subset >> j) & 1
            p_j = tentative[2 * j + goes]
            mass += p_j
            for l in range(j + 1, arity):
                between += fabs(p_j - tentative[2 * l + ((subset >> l) & 1)])
                integrity += pair_sums[4 * pair + 2 * goes + ((subset >> l) & 1)]
                pair += 1
        objective = (between - self.settings.lambda1 * integrity
                     + self.settings.lambda2 * fabs(mass - 1.0))
        self.objective[subset] = objective
        if n_tied == 0 or objective < best - TIE_TOLERANCE:
            best = objective
            n_tied = 0
        elif objective > best + TIE_TOLERANCE:
            continue
        self.tied[n_tied] = subset
        n_tied += 1
    if n_tied == 1:
        return self.tied[0]
    return self.tied[rng_below(&self.rng, n_tied)]


cdef inline void _update_statistics(NodeTrainer self, index_t m, float64_t pred,
                                    index_t n_labels, index_t arity) noexcept nogil:
    """Move P_m and P_m^k (k in the example's labels) towards regressor m's output."""
    cdef float64_t count = <float64_t>self.total_count
    cdef float64_t seen
    cdef index_t k, slot
    self.prob[m] = ((count - n_labels) * self.prob[m] + n_labels * pred) / count
    for k in range(n_labels):
        slot = self.example_slots[k]
        seen = <float64_t>self.label_count[slot]
        self.label_prob[slot * arity + m] = (
            ((seen - 1) * self.label_prob[slot * arity + m] + pred) / seen)


cdef class NodeTrainer:
    """Scratch and kernels to train one LdSM node at a time (see ``_node_trainer.pxd``).

    Parameters
    ----------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features)
        float32 features, int32 sorted indices, int64 indptr.
    Y : scipy.sparse.csr_matrix of shape (n_samples, n_labels)
        Binary labels in the same layout.
    arity, epochs, lambda1, lambda2, optimizer, learning_rate, routing,
    weight_threshold, seed, max_weights, weights_per_row, epoch_tolerance
        As in :func:`build_tree`, which says what they must satisfy.
    """

    def __init__(self, X, Y, *, int arity, int epochs, double lambda1, double lambda2,
                 str optimizer, double learning_rate, str routing, double weight_threshold,
                 seed, max_weights=None, weights_per_row=None, double epoch_tolerance=0.0):
        self._keep_alive = (X, Y)
        self.X = csr_view(X)
        self.Y = csr_view(Y)
        self.settings.arity = arity
        self.settings.epochs = epochs
        self.settings.epoch_tolerance = epoch_tolerance
        self.settings.lambda1 = lambda1
        self.settings.lambda2 = lambda2
        self.settings.learning_rate = learning_rate
        self.settings.optimizer = _OPTIMIZERS[optimizer]
        self.settings.sigmoid_routing = routing == "sigmoid"
        self.settings.threshold = ROUTING_THRESHOLDS[routing]
        self.settings.weight_threshold = weight_threshold
        if max_weights is None:
            # No floor under the per-example budget, or no cap at all.
            self.settings.max_weights = 0 if weights_per_row is not None else X.shape[1]
        else:
            self.settings.max_weights = min(max_weights, X.shape[1])
        self.settings.weights_per_row = 0.0 if weights_per_row is None else weights_per_row
        rng_seed(&self.rng, <unsigned long long>seed)
        self._allocate(int(np.diff(Y.indptr).max(initial=0)))

    def _allocate(self, index_t max_labels_per_row):
        """Size the scratch once for the whole tree and wire the regressors."""
        cdef index_t m, arity = self.settings.arity
        if arity > MAX_GROUP_SIZE:
            raise ValueError(f"arity must be at most {MAX_GROUP_SIZE}, got {arity}")
        self.state.assign(<offset_t>(self.X.n_cols + 1) * group_block_size(arity), 0.0)
        self.regressors = new_group(self.state.data(), arity, self.X.n_cols)
        self.targets.assign(arity, 0.0)
        self.scores.assign(arity, 0.0)
        self.feature_bits.assign((self.X.n_cols + 63) // 64, 0)
        # A node's rows are distinct, so the root's are the most it copies.
        self.local_id.assign(self.X.n_cols, 0)
        self.local_indptr.assign(self.X.n_rows + 1, 0)
        self.local_index.assign(self.X.indptr[self.X.n_rows], 0)
        self.local_value.assign(self.X.indptr[self.X.n_rows], 0.0)
        self.label_slot.assign(self.Y.n_cols, -1)
        self.prob.assign(arity, 0.0)
        self.example_slots.assign(max_labels_per_row, 0)
        self.tentative.assign(2 * arity, 0.0)
        self.label_row.assign(2 * arity, 0.0)
        self.pair_integrity.assign(2 * arity * (arity - 1), 0.0)
        self.objective.assign(1 << arity, 0.0)
        self.tied.assign(1 << arity, 0)
        # Reserved for the most a node can hold: never reallocated in the nogil kernels.
        self.kept_feature.resize(arity)
        self.kept_value.resize(arity)
        for m in range(arity):
            self.kept_feature[m].reserve(self.X.n_cols)
            self.kept_value[m].reserve(self.X.n_cols)
        self.magnitudes.reserve(self.X.n_cols)

    cdef int start_node(self, const index_t* rows, index_t n_rows) except -1 nogil:
        """Collect the node's features and labels and copy its rows over local
        feature ids (``local_rows``), zero its statistics, draw the biases."""
        cdef index_t i, m, j, label
        cdef offset_t k, position = 0
        cdef uint64_t bit
        self.node_features.clear()
        self.node_labels.clear()
        self.n_rows = n_rows
        # The rows lie scattered over X: read each once, copying it while
        # its features are collected; `local_rows` renumbers the copy.
        for i in range(n_rows):
            for k in range(self.X.indptr[rows[i]], self.X.indptr[rows[i] + 1]):
                j = self.X.indices[k]
                self.local_index[position] = j
                self.local_value[position] = self.X.values[k]
                position += 1
                bit = (<uint64_t>1) << (j % 64)
                if not self.feature_bits[j // 64] & bit:
                    self.feature_bits[j // 64] |= bit
                    self.node_features.push_back(j)
            self.local_indptr[i + 1] = position
            for k in range(self.Y.indptr[rows[i]], self.Y.indptr[rows[i] + 1]):
                label = self.Y.indices[k]
                if self.label_slot[label] < 0:
                    self.label_slot[label] = self.node_labels.size()
                    self.node_labels.push_back(label)
        self.sort_node_features()
        self.local_rows()
        self.label_count.assign(self.node_labels.size(), 0)
        self.label_prob.assign(self.node_labels.size() * self.settings.arity, 0.0)
        self.total_count = 0
        for m in range(self.settings.arity):
            self.prob[m] = 0.0
            weight_of(&self.regressors, m, self.X.n_cols)[0] = (
                (rng_uniform(&self.rng) - 0.5) * INIT_BIAS_SPREAD)
        return 0

    cdef void sort_node_features(self) noexcept nogil:
        """Put ``node_features`` in increasing order.

        Above a few features per thousand, re-reading them from the feature
        bits in id order (one linear pass over D / 64 words) is cheaper than a
        comparison sort of F log F steps.
        """
        cdef index_t w, n_present = <index_t>self.node_features.size()
        cdef uint64_t word
        if <offset_t>n_present * SCAN_FACTOR < self.X.n_cols:
            sort(self.node_features.begin(), self.node_features.end())
            return
        self.node_features.clear()
        for w in range(<index_t>self.feature_bits.size()):
            word = self.feature_bits[w]
            while word != 0:
                self.node_features.push_back(w * 64 + lowest_bit(word))
                word &= word - 1

    cdef void local_rows(self) noexcept nogil:
        """Number the node's features by their rank in ``node_features`` and
        replace the ids of its copied rows by those local ids.

        The regressors' state is then one block per local id: the blocks a
        node reads lie together at the start of the state, instead of spread
        over all D features, and a deep node's fit in the faster caches. The
        rows keep their entries' order, so every sum runs in the same order
        as over the global ids.
        """
        cdef index_t k
        cdef offset_t p
        for k in range(<index_t>self.node_features.size()):
            self.local_id[self.node_features[k]] = k
        for p in range(self.local_indptr[self.n_rows]):
            self.local_index[p] = self.local_id[self.local_index[p]]

    cdef index_t train_node(self, const index_t* rows, index_t n_rows, float64_t* trace,
                            index_t* directions) noexcept nogil:
        """Run the passes of TrainRegressors (Algorithm 4) over ``rows``; return their number.

        At most E passes, fewer once one has converged (``converged``) after
        ``MIN_PASSES``.
        Writes the mean objective of the chosen subsets of each pass to
        ``trace[e]`` and, unless ``directions`` is NULL, the chosen subset of
        every (pass, example) to ``directions[e * n_rows + i]`` (0 for an
        example without labels).
        """
        cdef index_t e, i, chosen, n_trained
        cdef float64_t chosen_objective, objective_sum
        for e in range(self.settings.epochs):
            objective_sum = 0.0
            n_trained = 0
            for i in range(n_rows):
                chosen = self.train_example(i, rows[i], &chosen_objective)
                if directions != NULL:
                    directions[<offset_t>e * n_rows + i] = chosen
                if chosen > 0:
                    objective_sum += chosen_objective
                    n_trained += 1
            trace[e] = objective_sum / n_trained if n_trained else 0.0
            if e + 1 >= MIN_PASSES and self.converged(trace[e - 1], trace[e]):
                return e + 1
        return self.settings.epochs

    cdef bint converged(self, float64_t previous, float64_t current) noexcept nogil:
        """Whether a pass of mean objective `current` after one of `previous` changed the
        node by at most ``epoch_tolerance`` (never, at tolerance 0)."""
        return (self.settings.epoch_tolerance > 0.0
                and fabs(current - previous) <= self.settings.epoch_tolerance * fabs(previous))

    cdef index_t train_example(self, index_t position, index_t row,
                               float64_t* chosen_objective) noexcept nogil:
        """Process the node's example at `position`, training row `row`; return
        the chosen subset (0 if it has no labels)."""
        # A constant arity lets the compiler unroll the direction search's
        # loops and keep its few sums in registers (as in ``_optim.nag_step``);
        # binary nodes are the default.
        if self.settings.arity == 2:
            return _train_example_of(self, position, row, chosen_objective, 2)
        return _train_example_of(self, position, row, chosen_objective, self.settings.arity)

    cdef index_t weight_cap(self) noexcept nogil:
        """Largest number of weights a regressor of the current node may keep."""
        cdef float64_t budget = self.settings.weights_per_row * self.n_rows
        if budget > self.settings.max_weights:
            return max(1, <index_t>min(budget, <float64_t>self.X.n_cols))
        return self.settings.max_weights

    cdef void keep_largest(self, index_t m, index_t cap) noexcept nogil:
        """Zero all but the ``cap`` largest |weights| of regressor m, as float32; of
        equal magnitudes, the smaller feature ids stay.

        ``kept_feature[m]`` and ``kept_value[m]`` hold its non-zero weights by
        increasing feature id (``round_weights`` collects them); the dropped
        ones leave both lists and the regressor.
        """
        cdef vector[index_t]* features = &self.kept_feature[m]
        cdef vector[float32_t]* values = &self.kept_value[m]
        cdef index_t k, n_kept = <index_t>features.size(), n_dropped = n_kept - cap
        cdef index_t n_tied_kept
        cdef float32_t magnitude, largest_dropped
        if n_dropped <= 0:
            return
        # Select over the magnitudes alone for the largest dropped one: every
        # smaller magnitude goes, and of those equal to it the first positions
        # (the smaller feature ids) stay, as many as the cap has room for.
        largest_dropped = magnitude_of_rank(values.data(), n_kept, n_dropped - 1,
                                            &self.magnitudes)
        n_tied_kept = cap
        for k in range(n_kept):
            n_tied_kept -= fabs(values[0][k]) > largest_dropped
        n_kept = 0
        for k in range(<index_t>features.size()):
            magnitude = fabs(values[0][k])
            if magnitude > largest_dropped or (magnitude == largest_dropped and n_tied_kept > 0):
                n_tied_kept -= magnitude == largest_dropped
                features[0][n_kept] = features[0][k]
                values[0][n_kept] = values[0][k]
                n_kept += 1
            else:
                weight_of(&self.regressors, m, self.local_id[features[0][k]])[0] = 0.0
        features.resize(n_kept)
        values.resize(n_kept)

    cdef void round_weights(self) noexcept nogil:
        """Replace the trained weights by the stored ones (float32; small, excess ones
        dropped) and list them by regressor in ``kept_feature`` / ``kept_value``."""
        cdef index_t m, k, j, cap = self.weight_cap()
        cdef float32_t stored
        cdef state_t* weight
        for m in range(self.settings.arity):
            self.kept_feature[m].clear()
            self.kept_value[m].clear()
        for k in range(<index_t>self.node_features.size()):
            j = self.node_features[k]
            for m in range(self.settings.arity):
                weight = weight_of(&self.regressors, m, k)
                stored = <float32_t>weight[0]
                if fabs(stored) >= self.settings.weight_threshold and stored != 0.0:
                    weight[0] = stored
                    self.kept_feature[m].push_back(j)
                    self.kept_value[m].push_back(stored)
                else:
                    weight[0] = 0.0
        for m in range(self.settings.arity):
            self.keep_largest(m, cap)
            weight = weight_of(&self.regressors, m, self.X.n_cols)
            weight[0] = <float32_t>weight[0]

    cdef void route_example(self, index_t position, float64_t* scores,
                            uint8_t* goes) noexcept nogil:
        """CreateChildren (Algorithm 5) for the node's example at `position`: fill
        ``goes[m]`` in {0, 1}."""
        cdef offset_t start = self.local_indptr[position]
        cdef index_t nnz = <index_t>(self.local_indptr[position + 1] - start)
        cdef index_t m
        for m in range(self.settings.arity):
            scores[m] = score(&self.regressors, m, self.local_index.data() + start,
                              self.local_value.data() + start, nnz)
        route(scores, self.settings.arity, self.settings.threshold, goes)

    cdef float64_t weight_of_feature(self, index_t m, index_t feature) noexcept nogil:
        """The weight of regressor m for `feature` (a global id; ``X.n_cols``:
        the bias), 0 for a feature the node's rows do not have."""
        if feature == self.X.n_cols:
            return weight_of(&self.regressors, m, feature)[0]
        if not self.feature_bits[feature // 64] & ((<uint64_t>1) << (feature % 64)):
            return 0.0
        return weight_of(&self.regressors, m, self.local_id[feature])[0]

    cdef void finish_node(self) noexcept nogil:
        """Reset every scratch entry the node touched, ready for the next node."""
        cdef index_t k
        reset_group(&self.regressors, self.node_features.size())
        for k in range(<index_t>self.node_features.size()):
            self.feature_bits[self.node_features[k] // 64] = 0
        for k in range(<index_t>self.node_labels.size()):
            self.label_slot[self.node_labels[k]] = -1


cdef float32_t magnitude_of_rank(const float32_t* values, index_t n, index_t rank,
                                 vector[float32_t]* scratch) noexcept nogil:
    """Return the magnitude of ascending rank `rank` (0-based) among those of
    ``values[0 .. n - 1]``, using `scratch` as working memory.

    The weight budget's cut usually falls far from either end of a large
    node's weights, where a selection over all n magnitudes is slow. Two cuts from
    an evenly spaced sample bracket the rank, each two standard deviations
    of the sample's estimate (and two places) away: one branch-free pass
    keeps the magnitudes between them and counts those below, and the
    selection runs among the kept, about a seventh of them for a central
    rank (over all of them where the sample misled). The value is the same
    as a selection over all (lab notebook, "The weight budget's selection").
    """
    cdef float32_t sample[MAGNITUDE_SAMPLE]
    cdef float32_t lower = -INFINITY, upper = INFINITY, magnitude
    cdef index_t i, estimate, spread, kept = 0, below = 0
    scratch.resize(n)
    cdef float32_t* out = scratch.data()
    if n >= 4 * MAGNITUDE_SAMPLE:
        for i in range(MAGNITUDE_SAMPLE):
            sample[i] = fabs(values[<offset_t>i * n // MAGNITUDE_SAMPLE])
        sort(&sample[0], &sample[0] + MAGNITUDE_SAMPLE)
        estimate = <index_t>(<offset_t>rank * MAGNITUDE_SAMPLE // n)
        spread = 2 + 2 * <index_t>sqrt(<float64_t>estimate * (MAGNITUDE_SAMPLE - estimate)
                                       / MAGNITUDE_SAMPLE)
        if estimate - spread >= 0:
            lower = sample[estimate - spread]
        if estimate + spread < MAGNITUDE_SAMPLE:
            upper = sample[estimate + spread]
        # The kept magnitudes are those of ranks below .. below + kept - 1.
        for i in range(n):
            magnitude = fabs(values[i])
            out[kept] = magnitude
            kept += (magnitude >= lower) & (magnitude <= upper)
            below += magnitude < lower
        if below <= rank < below + kept:
            nth_element(out, out + (rank - below), out + kept)
            return out[rank - below]
    for i in range(n):
        out[i] = fabs(values[i])
    nth_element(out, out + rank, out + n)
    return out[rank]


def _py_magnitude_of_rank(values, index_t rank):
    """Test-only wrapper of `magnitude_of_rank` over a float32 array."""
    cdef const float32_t[::1] view = np.ascontiguousarray(values, dtype=np.float32)
    if not 0 <= rank < view.shape[0]:
        raise ValueError("rank out of range")
    cdef vector[float32_t] scratch
    return magnitude_of_rank(&view[0], <index_t>view.shape[0], rank, &scratch)
