# distutils: language = c++
"""Kernels of the online LOMtree (Choromanska & Langford 2015, Algorithm 1).

Each internal node v holds a linear regressor h_v trained online with the
shared SGD / NAG updates of :mod:`xmltree._kernels._optim`. An example of class y that
reaches v gets the binary target "left" when the running mean score of v,
E_v, exceeds that of its own class, e_v(y), and "right" otherwise; after the
update, it follows the sign of h_v(x) (left when negative). With the hinge
loss (the margin steps, as in Vowpal Wabbit's ``--log_multi``) "left" is the
target sign -1 and "right" +1; with the logistic loss they are targets 0 and 1.

A leaf splits when it has seen at least two classes and either the budget T
of internal nodes is not exhausted, or Inequality 2 holds:
``C_j - max_y l_j(y) > RS * (C_root + 1)``. In the latter case the smallest
leaf s of the whole tree and its parent are detached (the sibling of s takes
their place) and become the children of j: they are *recycled*; j inherits
the regressor slot of s's parent, zeroed. When s hangs directly under the
root there is no grandparent to re-attach its sibling to, and when s is j
itself (possible only for RS < 1: a leaf cannot become its own child), the
split is skipped. Lemma 3 bounds the number of times a node is recycled by
log2 of the stream length when RS >= 4.

Prediction follows the paper (one path, by the signs of the scores) or, with
a beam width B > 1, a beam search: going right at v has probability
``sigmoid(c * h_v(x) / m_v)``, with c > 0 given at prediction time (the
estimator's ``beam_scale``) and m_v the node's margin, the typical size of
its scores (:meth:`LOMTreeBuilder.routing_margins`); the B most probable
nodes are expanded level by level. The most probable leaf is the one
:meth:`LOMTreeBuilder.leaves` reports; classes are ranked by their share in
the mixture of the beam's leaves, each weighted by its probability
(normalised over the beam). B = 1 is exactly the single path.

The slow pure-Python twin of these kernels is ``tests/lomtree_reference.py``;
both must produce identical trees.
"""

import numpy as np

from cython.parallel cimport parallel, prange, threadid
from libc.math cimport exp, isfinite, log1p
from libc.stdint cimport int32_t, int64_t
from libc.string cimport memset
from libcpp.vector cimport vector

from .._kernels._optim cimport OPTIMIZER_NAG, OPTIMIZER_SGD, RegressorGroup, nag_margin_step, new_group
from .._kernels._optim cimport regressor_step, score, sgd_margin_step, state_t
from .._kernels._sparse cimport CSRView, csr_view, row_indices, row_nnz, row_values
from .._kernels._top_k cimport offer_top_k, sort_top_k
from .._kernels._types cimport float32_t, float64_t, index_t, offset_t

from .._kernels._optim import STATE_DTYPE

#: Names of the optimisers accepted by :class:`LOMTreeBuilder`.
OPTIMIZERS = ("sgd", "nag")

#: Names of the losses accepted by :class:`LOMTreeBuilder`.
LOSSES = ("hinge", "logistic")

#: Per-node arrays returned by :meth:`LOMTreeBuilder.get_state` (name, dtype).
NODE_FIELDS = (("parent", np.int32), ("left", np.int32), ("right", np.int32),
               ("regressor", np.int32), ("min_count", np.int64), ("score_sum", np.float64),
               ("n_trained", np.int64), ("n_recycled", np.int32))

#: Per-(node, class) arrays returned by :meth:`LOMTreeBuilder.get_state`.
STATS_FIELDS = (("stats_label", np.int32), ("stats_reached", np.int64),
                ("stats_trained", np.int64), ("stats_score_sum", np.float64))

#: Per-regressor arrays returned by :meth:`LOMTreeBuilder.get_state`.
REGRESSOR_FIELDS = (("weights", np.float64), ("scale", np.float64),
                    ("sum_sq_grad", np.float64), ("regressor_norm", np.float64),
                    ("regressor_n_updates", np.int64))


cdef class LOMTreeBuilder:
    """Mutable LOMtree: node arrays, per-class statistics and node regressors.

    The builder keeps all state between calls to :meth:`learn`, which is how
    the estimator streams over batches. Every ``def`` method checks the index
    ranges of its arguments before any kernel runs.

    Parameters
    ----------
    n_features : int
        Dimension of the examples.
    n_classes : int
        Number of classes; labels are ``0 .. n_classes - 1``.
    max_internal_nodes : int
        The budget T of internal nodes (and regressors), at least 1.
    swap_resistance : float
        RS of Inequality 2.
    optimizer : {"sgd", "nag"}
        Online update of the node regressors.
    learning_rate : float
        Step size of the node regressors.
    loss : {"hinge", "logistic"}
        Loss of the node regressors.
    """

    def __cinit__(self, index_t n_features, index_t n_classes, index_t max_internal_nodes,
                  double swap_resistance, str optimizer, double learning_rate, str loss):
        # Node ids (up to 2 T + 1) must fit in index_t.
        if n_features < 0 or n_classes < 1 or not 1 <= max_internal_nodes < 2**30:
            raise ValueError("need n_features >= 0, n_classes >= 1 and "
                             "1 <= max_internal_nodes < 2**30")
        if optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
        if loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
        self.n_features = n_features
        self.n_classes = n_classes
        self.max_internal_nodes = max_internal_nodes
        self.swap_resistance = swap_resistance
        self.learning_rate = learning_rate
        self.optimizer = OPTIMIZER_NAG if optimizer == "nag" else OPTIMIZER_SGD
        self.loss = LOSS_HINGE if loss == "hinge" else LOSS_LOGISTIC
        # np.zeros maps untouched pages lazily, so an unused slot costs no memory.
        self.state = np.zeros((max_internal_nodes, n_features + 1, 3), dtype=STATE_DTYPE)
        # Reserving the final sizes keeps Node* and ClassStats* pointers valid
        # while growing, and lets the noexcept _append_* never allocate. The
        # memory is touched only as nodes and slots come into use, so a large
        # budget costs nothing up front.
        self.regressors.reserve(max_internal_nodes)
        self.nodes.reserve(2 * <size_t>max_internal_nodes + 1)
        self.stats.reserve(2 * <size_t>max_internal_nodes + 1)
        self._append_leaf(-1)

    @property
    def optimizer_name(self):
        """The optimiser of the node regressors, ``"sgd"`` or ``"nag"``."""
        return "nag" if self.optimizer == OPTIMIZER_NAG else "sgd"

    @property
    def n_nodes(self):
        """Number of nodes of the tree (internal and leaves)."""
        return self.nodes.size()

    # ------------------------------------------------------------------ tree bookkeeping

    cdef void _reset_node(self, index_t node, index_t parent) noexcept nogil:
        """SetNode of Algorithm 1: make `node` an empty leaf below `parent`."""
        cdef Node* v = &self.nodes[node]
        v.parent = parent
        v.left = -1
        v.right = -1
        v.regressor = -1
        v.min_count = 0
        v.max_reached = 0
        v.score_sum = 0.0
        v.n_trained = 0
        self.stats[node].clear()

    cdef void _append_leaf(self, index_t parent) noexcept nogil:
        """Append a fresh leaf below `parent`.

        noexcept is safe: ``__cinit__`` reserved the capacity of every node,
        so neither push_back allocates (an empty statistics table is moved in).
        """
        cdef Node fresh
        fresh.n_recycled = 0
        self.nodes.push_back(fresh)
        self.stats.push_back(vector[ClassStats]())
        self._reset_node(<index_t>self.nodes.size() - 1, parent)

    cdef void _append_regressor(self) noexcept nogil:
        """Bring the next regressor slot into use, zeroed (its row is still untouched).

        noexcept is safe: ``__cinit__`` reserved the capacity of every slot.
        """
        cdef index_t slot = <index_t>self.regressors.size()
        self.regressors.push_back(new_group(&self.state[slot, 0, 0], 1, self.n_features))

    cdef void _reset_regressor(self, index_t slot) noexcept nogil:
        """Zero the weights and optimiser state of a regressor slot."""
        memset(self.regressors[slot].state, 0,
               (self.n_features + 1) * self.regressors[slot].block_size * sizeof(state_t))
        self.regressors[slot].norm = 0.0
        self.regressors[slot].n_updates = 0

    cdef ClassStats* _observe_class(self, index_t node, index_t label) except NULL nogil:
        """Count one more example of `label` at `node` (l_v(y)++); return its statistics.

        A class new to the node grows its table: ``except NULL`` lets Cython
        turn a failed allocation into MemoryError (see ``_types.pxd``).
        """
        cdef vector[ClassStats]* table = &self.stats[node]
        cdef size_t low = 0
        cdef size_t high = table.size()
        cdef size_t middle
        cdef ClassStats fresh
        while low < high:  # binary search of the first entry with label >= `label`
            middle = (low + high) // 2
            if table[0][middle].label < label:
                low = middle + 1
            else:
                high = middle
        if low == table.size() or table[0][low].label != label:
            fresh.label = label
            fresh.n_reached = 0
            fresh.n_trained = 0
            fresh.score_sum = 0.0
            table.insert(table.begin() + low, fresh)
        cdef ClassStats* entry = &table[0][low]
        entry.n_reached += 1
        if entry.n_reached > self.nodes[node].max_reached:
            self.nodes[node].max_reached = entry.n_reached
        return entry

    cdef void _update_min_count(self, index_t node) noexcept nogil:
        """UpdateC: propagate a change of C at `node` towards the root."""
        cdef index_t parent
        cdef Node* p
        while node != 0:
            parent = self.nodes[node].parent
            p = &self.nodes[parent]
            if p.min_count == self.nodes[node].min_count:
                return
            p.min_count = min(self.nodes[p.left].min_count, self.nodes[p.right].min_count)
            node = parent

    cdef index_t _smallest_leaf(self) noexcept nogil:
        """Return a leaf s with C_s = C_root, following equal C downwards (left first)."""
        cdef index_t node = 0
        cdef Node* v
        while self.nodes[node].left >= 0:
            v = &self.nodes[node]
            node = v.left if self.nodes[v.left].min_count == v.min_count else v.right
        return node

    cdef bint _may_split(self, index_t leaf) noexcept nogil:
        """Whether `leaf` has seen two classes and the budget or Inequality 2 allows a split."""
        cdef Node* v = &self.nodes[leaf]
        if self.stats[leaf].size() < 2:
            return False
        if self.n_internal < self.max_internal_nodes:
            return True
        return (v.min_count - v.max_reached
                > self.swap_resistance * (self.nodes[0].min_count + 1))

    cdef bint _recycle_into(self, index_t leaf) noexcept nogil:
        """Swap: detach the smallest leaf and its parent and make them children of `leaf`.

        Returns False (and changes nothing) when the smallest leaf is a child
        of the root, which has no grandparent to take its sibling, or is
        `leaf` itself, which cannot become its own child.
        """
        cdef index_t orphan = self._smallest_leaf()
        cdef index_t orphan_parent = self.nodes[orphan].parent
        if orphan_parent <= 0 or orphan == leaf:
            return False
        cdef Node* op = &self.nodes[orphan_parent]
        cdef index_t grandparent = op.parent
        cdef index_t sibling = op.right if op.left == orphan else op.left
        if self.nodes[grandparent].left == orphan_parent:
            self.nodes[grandparent].left = sibling
        else:
            self.nodes[grandparent].right = sibling
        self.nodes[sibling].parent = grandparent
        self._update_min_count(sibling)
        cdef index_t slot = op.regressor
        self._reset_regressor(slot)
        self._reset_node(orphan, leaf)
        self._reset_node(orphan_parent, leaf)
        self.nodes[orphan].n_recycled += 1
        self.nodes[orphan_parent].n_recycled += 1
        self.nodes[leaf].regressor = slot
        self.nodes[leaf].left = orphan
        self.nodes[leaf].right = orphan_parent
        self.n_swaps += 1
        return True

    cdef bint _split(self, index_t leaf) noexcept nogil:
        """Give `leaf` two children, new or recycled, and share its C between them."""
        cdef index_t first
        if self.n_internal < self.max_internal_nodes:
            first = <index_t>self.nodes.size()
            self._append_leaf(leaf)
            self._append_leaf(leaf)
            self.nodes[leaf].left = first
            self.nodes[leaf].right = first + 1
            self.nodes[leaf].regressor = self.n_internal
            self._append_regressor()
            self.n_internal += 1
        elif not self._recycle_into(leaf):
            return False
        cdef Node* v = &self.nodes[leaf]
        self.nodes[v.left].min_count = v.min_count // 2
        self.nodes[v.right].min_count = v.min_count - v.min_count // 2
        self._update_min_count(v.left)
        return True

    # ------------------------------------------------------------------ training

    cdef index_t _train_node(self, index_t node, ClassStats* stats, const index_t* indices,
                             const float32_t* values, index_t nnz) noexcept nogil:
        """Train h_v on (x, c) with c from E_v vs e_v(y); return the child x goes to."""
        cdef Node* v = &self.nodes[node]
        cdef float64_t mean_score = v.score_sum / v.n_trained if v.n_trained > 0 else 0.0
        cdef float64_t class_mean = (stats.score_sum / stats.n_trained
                                     if stats.n_trained > 0 else 0.0)
        cdef bint go_left = mean_score > class_mean
        cdef RegressorGroup* regressor = &self.regressors[v.regressor]
        cdef float64_t target = 0.0 if go_left else 1.0
        cdef float64_t z
        if self.loss == LOSS_LOGISTIC:
            regressor_step(self.optimizer, regressor, indices, values, nnz, &target,
                           self.learning_rate, &z)
        elif self.optimizer == OPTIMIZER_NAG:
            z = nag_margin_step(regressor, indices, values, nnz, -1.0 if go_left else 1.0,
                                self.learning_rate)
        else:
            z = sgd_margin_step(regressor, indices, values, nnz, -1.0 if go_left else 1.0,
                                self.learning_rate)
        stats.n_trained += 1
        stats.score_sum += z
        v.n_trained += 1
        v.score_sum += z
        return v.left if z < 0.0 else v.right

    cdef int _learn_one(self, const index_t* indices, const float32_t* values, index_t nnz,
                        index_t label) except -1 nogil:
        """Algorithm 1 for one example: update, split or swap, train and descend."""
        cdef index_t node = 0
        cdef ClassStats* stats
        while True:
            stats = self._observe_class(node, label)
            if self.nodes[node].left < 0:
                if not (self._may_split(node) and self._split(node)):
                    self.nodes[node].min_count += 1
                    self._update_min_count(node)
                    break
            node = self._train_node(node, stats, indices, values, nnz)
        self.n_examples_seen += 1
        return 0

    def learn(self, X, labels, order):
        """Train on the rows ``order[0], order[1], ...`` of a CSR matrix, in that order.

        Every argument is trusted (the estimator made or checked it).

        Parameters
        ----------
        X : scipy.sparse.csr_matrix
            Features from ``check_features`` with ``n_features`` columns
            (see ``_sparse.pxd``).
        labels : numpy.ndarray of int32
            Class id of every row, in ``[0, n_classes)``.
        order : numpy.ndarray of int64
            Row ids to visit, in ``[0, n_rows)``; rows may repeat.
        """
        cdef CSRView rows = csr_view(X)
        cdef const index_t[::1] y = labels
        cdef const int64_t[::1] visits = order
        cdef Py_ssize_t i
        cdef index_t row
        self.ranking = None
        self.margins = None
        with nogil:
            for i in range(visits.shape[0]):
                row = <index_t>visits[i]
                self._learn_one(row_indices(&rows, row), row_values(&rows, row),
                                row_nnz(&rows, row), y[row])

    def is_finite(self):
        """Whether every score sum and regressor norm is finite: training has not diverged.

        Huge steps make the regressors diverge to infinity or NaN; the loader
        refuses such a tree, so training checks this rather than keep a model
        it could not read back. Diverged weights show in the scores of the
        examples that follow, so the sums (a few numbers per node) tell
        without scanning the dense weight rows after every batch.
        """
        return self._finite()

    cdef bint _finite(self) noexcept nogil:
        cdef size_t node, entry, slot
        for node in range(self.nodes.size()):
            if not isfinite(self.nodes[node].score_sum):
                return False
            for entry in range(self.stats[node].size()):
                if not isfinite(self.stats[node][entry].score_sum):
                    return False
        for slot in range(self.regressors.size()):
            if not isfinite(self.regressors[slot].norm):
                return False
        return True

    # ------------------------------------------------------------------ prediction

    cdef index_t _descend(self, const index_t* indices, const float32_t* values,
                          index_t nnz) noexcept nogil:
        """Return the leaf reached by x (left when a node's score is negative)."""
        cdef index_t node = 0
        cdef Node* v
        while self.nodes[node].left >= 0:
            v = &self.nodes[node]
            node = v.left if score(&self.regressors[v.regressor], 0, indices, values,
                                   nnz) < 0.0 else v.right
        return node

    cdef int _beam_search(self, const index_t* indices, const float32_t* values,
                          index_t nnz, int width, float64_t scale, const float64_t* margins,
                          BeamEntry* work) noexcept nogil:
        """Beam search of `width` nodes; return how many leaves it ends with.

        Going right at v has probability ``sigmoid(scale * h_v(x) / margins[v])``.

        `work` holds 3 * width entries: the beam, then the candidates. On
        return the beam (the first entries) holds leaves only, most probable first.
        """
        cdef BeamEntry* beam = work
        cdef BeamEntry* candidates = work + width
        cdef int n_beam = 1
        cdef int n_candidates, i
        cdef bint expanded = True
        cdef Node* v
        cdef float64_t s
        beam[0].log_prob = 0.0
        beam[0].node = 0
        while expanded:
            expanded = False
            n_candidates = 0
            for i in range(n_beam):
                v = &self.nodes[beam[i].node]
                if v.left < 0:  # a leaf stays on the beam as it is
                    candidates[n_candidates] = beam[i]
                    n_candidates += 1
                    continue
                expanded = True
                s = (scale * score(&self.regressors[v.regressor], 0, indices, values, nnz)
                     / margins[beam[i].node])
                # Right first: on a tie (s == 0) it wins, as on the single path.
                candidates[n_candidates].log_prob = beam[i].log_prob + _log_sigmoid(s)
                candidates[n_candidates].node = v.right
                candidates[n_candidates + 1].log_prob = beam[i].log_prob + _log_sigmoid(-s)
                candidates[n_candidates + 1].node = v.left
                n_candidates += 2
            n_beam = _keep_most_probable(candidates, n_candidates, beam, width)
        return n_beam

    cdef index_t _route(self, const index_t* indices, const float32_t* values, index_t nnz,
                        int width, float64_t scale, const float64_t* margins,
                        BeamEntry* work) noexcept nogil:
        """Return the leaf of x: the single path when `width` is 1, else the beam search."""
        if width == 1:
            return self._descend(indices, values, nnz)
        self._beam_search(indices, values, nnz, width, scale, margins, work)
        return work[0].node

    def leaves(self, X, int beam_width=1, double beam_scale=1.0):
        """Return the leaf id (int32) reached by every row of a CSR matrix.

        ``beam_width`` > 1 selects the leaf by beam search with routing
        probabilities ``sigmoid(beam_scale * h_v(x) / m_v)`` (see the module
        notes and :meth:`routing_margins`). The rows are as in :meth:`learn`;
        the beam settings as ``LOMTree`` checks them (width >= 1, finite
        scale > 0).
        """
        cdef const float64_t[::1] margins = self._cached_margins()
        cdef CSRView rows = csr_view(X)
        out = np.empty(rows.n_rows, dtype=np.int32)
        cdef index_t[::1] leaf = out
        cdef unsigned char[::1] work_bytes = _beam_buffer(1, beam_width)
        cdef BeamEntry* work = <BeamEntry*>&work_bytes[0]
        cdef index_t row
        with nogil:
            for row in range(rows.n_rows):
                leaf[row] = self._route(row_indices(&rows, row), row_values(&rows, row),
                                        row_nnz(&rows, row), beam_width,
                                        beam_scale, &margins[0], work)
        return out

    def predict_top_k(self, X, int k, int n_threads=1, int beam_width=1,
                      double beam_scale=1.0):
        """Top-k classes of every row from the class histogram of its leaf.

        With ``beam_width`` > 1 the classes come from the probability-weighted
        mixture of the histograms of the leaves a beam search ends with
        (going right at v has probability ``sigmoid(beam_scale * h_v(x) / m_v)``;
        a leaf no training example reached lends its nearest ancestor's); the
        scores are the mixture's shares, and the completion below starts
        from the most probable leaf.

        Classes are ranked by how many training examples of each reached the
        leaf (ties: smaller id first); their score is that count over the
        leaf's total. When the leaf knows fewer than k classes, the list is
        completed from the histograms of its ancestors, nearest first, with
        score 0; slots left when even the root knows fewer than k classes
        hold label -1. The rows and beam settings are as in :meth:`leaves`,
        ``k >= 1`` and ``n_threads >= 1``.

        Returns
        -------
        labels : numpy.ndarray of int32, shape (n_rows, k)
        scores : numpy.ndarray of float32, shape (n_rows, k)
        """
        cdef CSRView rows = csr_view(X)
        cdef unsigned char[::1] work_bytes = _beam_buffer(n_threads, beam_width)
        cdef BeamEntry* work = <BeamEntry*>&work_bytes[0]
        # Per-thread mixture accumulators; all-zero between rows.
        n_mixed = self.n_classes if beam_width > 1 else 1
        cdef float64_t[:, ::1] mass = np.zeros((n_threads, n_mixed))
        cdef unsigned char[:, ::1] listed = np.zeros((n_threads, n_mixed), dtype=np.uint8)
        cdef index_t[:, ::1] touched = np.empty((n_threads, n_mixed), dtype=np.int32)
        cdef float64_t[:, ::1] best = np.zeros((n_threads, k))
        if self.ranking is None:
            self.ranking = self._ranked_histograms()
        rank_ptr_array, rank_label_array, rank_score_array = self.ranking
        cdef const float64_t[::1] margins = self._cached_margins()
        cdef const int64_t[::1] rank_ptr = rank_ptr_array
        cdef const index_t[::1] rank_label = rank_label_array
        cdef const float32_t[::1] rank_score = rank_score_array
        n_rows = rows.n_rows
        labels_out = np.full((n_rows, k), -1, dtype=np.int32)
        scores_out = np.zeros((n_rows, k), dtype=np.float32)
        cdef index_t[:, ::1] top_labels = labels_out
        cdef float32_t[:, ::1] top_scores = scores_out
        cdef Py_ssize_t row
        cdef index_t leaf
        cdef int thread, n_beam, filled
        cdef BeamEntry* beam
        if n_rows == 0:
            return labels_out, scores_out
        with nogil, parallel(num_threads=n_threads):
            for row in prange(n_rows, schedule="static"):
                if beam_width == 1:
                    leaf = self._descend(row_indices(&rows, row), row_values(&rows, row),
                                         row_nnz(&rows, row))
                    filled = 0
                else:
                    thread = threadid()
                    beam = work + 3 * beam_width * thread
                    n_beam = self._beam_search(row_indices(&rows, row), row_values(&rows, row),
                                               row_nnz(&rows, row), beam_width,
                                               beam_scale, &margins[0], beam)
                    leaf = beam[0].node
                    filled = self._mix_histograms(
                        beam, n_beam, &rank_ptr[0], &rank_label[0], &rank_score[0], k,
                        &mass[thread, 0], &listed[thread, 0], &touched[thread, 0],
                        &best[thread, 0], &top_labels[row, 0], &top_scores[row, 0])
                self._fill_ranking(leaf, &rank_ptr[0], &rank_label[0], &rank_score[0], k,
                                   filled, &top_labels[row, 0], &top_scores[row, 0])
        return labels_out, scores_out

    cdef int _mix_histograms(self, const BeamEntry* beam, int n_beam, const int64_t* rank_ptr,
                             const index_t* rank_label, const float32_t* rank_score, int k,
                             float64_t* mass, unsigned char* listed, index_t* touched,
                             float64_t* best, index_t* out_labels,
                             float32_t* out_scores) noexcept nogil:
        """Write the k classes of largest mixture share of the beam's leaves; return how many.

        `mass` and `listed` (one slot per class) are all zero on entry and on
        return; `touched` is scratch space of the same length, `best` of k
        (the shares of the top-k heap, ``_top_k.pxd``).
        """
        cdef float64_t total = 0.0
        cdef float64_t weight
        cdef int i
        cdef int n_touched = 0
        cdef int filled = 0
        cdef index_t node, label
        cdef int64_t entry
        for i in range(n_beam):
            total += exp(beam[i].log_prob - beam[0].log_prob)
        for i in range(n_beam):
            weight = exp(beam[i].log_prob - beam[0].log_prob) / total
            node = beam[i].node
            while rank_ptr[node] == rank_ptr[node + 1] and self.nodes[node].parent >= 0:
                node = self.nodes[node].parent
            for entry in range(rank_ptr[node], rank_ptr[node + 1]):
                label = rank_label[entry]
                if not listed[label]:
                    listed[label] = 1
                    touched[n_touched] = label
                    n_touched += 1
                mass[label] += weight * rank_score[entry]
        for i in range(n_touched):
            filled = offer_top_k(out_labels, best, filled, k, touched[i], mass[touched[i]])
        sort_top_k(out_labels, best, filled, out_labels, best)
        for i in range(filled):
            out_scores[i] = <float32_t>best[i]
        for i in range(n_touched):
            mass[touched[i]] = 0.0
            listed[touched[i]] = 0
        return filled

    cdef void _fill_ranking(self, index_t leaf, const int64_t* rank_ptr,
                            const index_t* rank_label, const float32_t* rank_score, int k,
                            int filled, index_t* out_labels, float32_t* out_scores) noexcept nogil:
        """Fill slots `filled` .. k - 1 with the best classes of `leaf`, then of its ancestors.

        Classes already listed are skipped.
        """
        cdef int previous
        cdef index_t node = leaf
        cdef int64_t entry
        cdef bint seen
        while node >= 0 and filled < k:
            entry = rank_ptr[node]
            while entry < rank_ptr[node + 1] and filled < k:
                seen = False
                for previous in range(filled):
                    if out_labels[previous] == rank_label[entry]:
                        seen = True
                        break
                if not seen:
                    out_labels[filled] = rank_label[entry]
                    out_scores[filled] = rank_score[entry] if node == leaf else 0.0
                    filled += 1
                entry += 1
            node = self.nodes[node].parent

    def _cached_margins(self):
        """Return :meth:`routing_margins`, computed once per trained state."""
        if self.margins is None:
            self.margins = self.routing_margins()
        return self.margins

    def routing_margins(self):
        """Per node v, the margin m_v that the beam divides the scores of h_v by.

        m_v is half the gap between the mean training score of the classes v
        sends right (``e_v(y) >= E_v``, the target rule of training) and that
        of the classes it sends left, each class weighted by its n_v(y): the
        typical size of a score at v, which differs a lot between nodes of
        one tree (deep nodes of unbalanced trees separate their classes by
        small scores). It is 1 for leaves and where a side has no class or
        the gap is not positive.

        Returns
        -------
        numpy.ndarray of float64, shape (n_nodes,)
        """
        state = self.stats_arrays()
        nodes = self.node_arrays()
        ptr, trained, sums = state["stats_ptr"], state["stats_trained"], state["stats_score_sum"]
        n_nodes = len(ptr) - 1
        node_of_entry = np.repeat(np.arange(n_nodes), np.diff(ptr))
        node_mean = nodes["score_sum"] / np.maximum(nodes["n_trained"], 1)
        class_mean = sums / np.maximum(trained, 1)
        seen = trained > 0
        right = seen & ~(node_mean[node_of_entry] > class_mean)
        left = seen & ~right
        side_means = []
        for side in (right, left):
            count = np.bincount(node_of_entry[side], trained[side], minlength=n_nodes)
            total = np.bincount(node_of_entry[side], sums[side], minlength=n_nodes)
            side_means.append(np.divide(total, count, out=np.zeros(n_nodes), where=count > 0))
        gap = (side_means[0] - side_means[1]) / 2
        usable = (np.bincount(node_of_entry[right], minlength=n_nodes) > 0) & (
            np.bincount(node_of_entry[left], minlength=n_nodes) > 0) & (gap > 0)
        return np.where(usable, gap, 1.0)

    def _ranked_histograms(self):
        """Per node, its classes by decreasing count (CSR) with their share of the node."""
        state = self.stats_arrays()
        ptr, labels, reached = state["stats_ptr"], state["stats_label"], state["stats_reached"]
        node_of_entry = np.repeat(np.arange(len(ptr) - 1, dtype=np.int64), np.diff(ptr))
        # Entries are grouped by node and sorted by label within it, so one
        # stable sort on (node, decreasing count) keeps ties in label order.
        most = int(reached.max()) + 1 if reached.size else 1
        if len(ptr) * most < 2**62:  # one int64 key: several times faster than lexsort
            order = np.argsort(node_of_entry * most + (most - 1 - reached), kind="stable")
        else:
            order = np.lexsort((-reached, node_of_entry))
        totals = np.maximum(_node_totals(ptr, reached), 1)
        share = (reached[order] / totals[node_of_entry[order]]).astype(np.float32)
        # A sentinel entry keeps &rank_label[0] valid when no class was ever seen.
        return (ptr, np.append(labels[order], -1).astype(np.int32),
                np.append(share, np.float32(0)))

    # ------------------------------------------------------------------ state

    def stats_arrays(self):
        """Flatten the per-node class statistics: ``stats_ptr`` and :data:`STATS_FIELDS`.

        The entries of node v are ``stats_ptr[v]:stats_ptr[v + 1]``, sorted by class id.
        """
        cdef Py_ssize_t n_nodes = self.nodes.size()
        ptr = np.zeros(n_nodes + 1, dtype=np.int64)
        cdef Py_ssize_t node, entry
        for node in range(n_nodes):
            ptr[node + 1] = ptr[node] + self.stats[node].size()
        out = {name: np.empty(ptr[n_nodes], dtype=dtype) for name, dtype in STATS_FIELDS}
        cdef index_t[::1] label = out["stats_label"]
        cdef int64_t[::1] reached = out["stats_reached"]
        cdef int64_t[::1] trained = out["stats_trained"]
        cdef float64_t[::1] score_sum = out["stats_score_sum"]
        cdef int64_t position = 0
        for node in range(n_nodes):
            for entry in range(<Py_ssize_t>self.stats[node].size()):
                label[position] = self.stats[node][entry].label
                reached[position] = self.stats[node][entry].n_reached
                trained[position] = self.stats[node][entry].n_trained
                score_sum[position] = self.stats[node][entry].score_sum
                position += 1
        out["stats_ptr"] = ptr
        return out

    def node_arrays(self):
        """Return copies of the per-node fields, one array per :data:`NODE_FIELDS` name."""
        cdef Py_ssize_t n_nodes = self.nodes.size()
        out = {name: np.empty(n_nodes, dtype=dtype) for name, dtype in NODE_FIELDS}
        cdef Py_ssize_t node
        for node in range(n_nodes):
            out["parent"][node] = self.nodes[node].parent
            out["left"][node] = self.nodes[node].left
            out["right"][node] = self.nodes[node].right
            out["regressor"][node] = self.nodes[node].regressor
            out["min_count"][node] = self.nodes[node].min_count
            out["score_sum"][node] = self.nodes[node].score_sum
            out["n_trained"][node] = self.nodes[node].n_trained
            out["n_recycled"][node] = self.nodes[node].n_recycled
        return out

    def get_state(self):
        """Return every array needed to rebuild the builder with :func:`builder_from_state`.

        Returns
        -------
        dict of str to numpy.ndarray
            Node arrays (:data:`NODE_FIELDS`), class statistics
            (``stats_ptr`` and :data:`STATS_FIELDS`) and the ``n_internal``
            used regressors (:data:`REGRESSOR_FIELDS`). All are copies.
        """
        out = self.node_arrays()
        out.update(self.stats_arrays())
        used = self.n_internal
        state = np.asarray(self.state)[:used]
        # Stored as float32, saved as float64 (exactly): the files' format predates the change.
        out["weights"] = state[:, :, 1].astype(np.float64)
        out["scale"] = state[:, :, 0].astype(np.float64)
        out["sum_sq_grad"] = state[:, :, 2].astype(np.float64)
        out["regressor_norm"] = np.array([self.regressors[s].norm for s in range(used)],
                                         dtype=np.float64)
        out["regressor_n_updates"] = np.array(
            [self.regressors[s].n_updates for s in range(used)], dtype=np.int64)
        return out

    def _restore(self, arrays, int64_t n_swaps, int64_t n_examples_seen):
        """Overwrite a fresh builder with validated arrays from :meth:`get_state`."""
        n_nodes = arrays["parent"].shape[0]
        used = arrays["weights"].shape[0]
        cdef Py_ssize_t extra
        for extra in range(n_nodes - 1):
            self._append_leaf(-1)
        ptr = arrays["stats_ptr"]
        cdef Py_ssize_t node, entry
        cdef ClassStats item
        cdef Node* v
        for node in range(n_nodes):
            v = &self.nodes[node]
            v.parent = arrays["parent"][node]
            v.left = arrays["left"][node]
            v.right = arrays["right"][node]
            v.regressor = arrays["regressor"][node]
            v.min_count = arrays["min_count"][node]
            v.score_sum = arrays["score_sum"][node]
            v.n_trained = arrays["n_trained"][node]
            v.n_recycled = arrays["n_recycled"][node]
            for entry in range(ptr[node], ptr[node + 1]):
                item.label = arrays["stats_label"][entry]
                item.n_reached = arrays["stats_reached"][entry]
                item.n_trained = arrays["stats_trained"][entry]
                item.score_sum = arrays["stats_score_sum"][entry]
                self.stats[node].push_back(item)
                v.max_reached = max(v.max_reached, item.n_reached)
        state = np.asarray(self.state)[:used]
        state[:, :, 0] = arrays["scale"]
        state[:, :, 1] = arrays["weights"]
        state[:, :, 2] = arrays["sum_sq_grad"]
        for slot in range(used):
            self._append_regressor()
            self.regressors[slot].norm = arrays["regressor_norm"][slot]
            self.regressors[slot].n_updates = arrays["regressor_n_updates"][slot]
        self.n_internal = used
        self.n_swaps = n_swaps
        self.n_examples_seen = n_examples_seen


def builder_from_state(params, arrays):
    """Rebuild a :class:`LOMTreeBuilder` from validated ``get_state`` arrays.

    Parameters
    ----------
    params : dict
        ``n_features``, ``n_classes``, ``max_internal_nodes``,
        ``swap_resistance``, ``optimizer``, ``learning_rate``, ``loss``,
        ``n_swaps`` and ``n_examples_seen``.
    arrays : dict of str to numpy.ndarray
        Output of :meth:`LOMTreeBuilder.get_state`, already checked by the
        caller (shapes, dtypes, index ranges and tree structure).
    """
    builder = LOMTreeBuilder(params["n_features"], params["n_classes"],
                             params["max_internal_nodes"], params["swap_resistance"],
                             params["optimizer"], params["learning_rate"], params["loss"])
    builder._restore(arrays, params["n_swaps"], params["n_examples_seen"])
    return builder


cdef inline float64_t _log_sigmoid(float64_t s) noexcept nogil:
    """Return ``log(1 / (1 + exp(-s)))`` without overflowing ``exp``."""
    if s >= 0.0:
        return -log1p(exp(-s))
    return s - log1p(exp(s))


cdef int _keep_most_probable(const BeamEntry* candidates, int n_candidates, BeamEntry* out,
                             int width) noexcept nogil:
    """Copy the `width` most probable candidates to `out`, best first; return how many.

    Stable: of equally probable candidates, the earlier one ranks first.
    """
    cdef int n_out = 0
    cdef int i, position, slot
    for i in range(n_candidates):
        position = n_out
        while position > 0 and out[position - 1].log_prob < candidates[i].log_prob:
            position -= 1
        if position >= width:
            continue
        slot = n_out if n_out < width else width - 1  # the last one falls off a full beam
        while slot > position:
            out[slot] = out[slot - 1]
            slot -= 1
        out[position] = candidates[i]
        if n_out < width:
            n_out += 1
    return n_out


def _beam_buffer(int n_threads, int beam_width):
    """Scratch bytes for beam searches: 3 * beam_width entries per thread."""
    return np.empty(n_threads * 3 * beam_width * sizeof(BeamEntry), dtype=np.uint8)


def _node_totals(ptr, reached):
    """Sum of ``reached`` over each node's entries (0 for nodes without entries)."""
    cumulative = np.concatenate(([0], np.cumsum(reached, dtype=np.int64)))
    return np.diff(cumulative[ptr])
