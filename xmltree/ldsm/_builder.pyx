# distutils: language = c++
"""LdSM tree growth: best-first expansion of one tree (Algorithms 1 and 5).

Implements the growth of Majzoubi & Choromanska (AISTATS 2020): nodes are
expanded in order of priority from a queue, each trained by
``_node_trainer.NodeTrainer`` (the objective J and the choices the paper
leaves open are described there), until the node budget is spent.

* A split makes no progress, and the node stays a leaf, when one child
  receives every example of the node. The paper says so for a split that
  sends everything to a single child; with multi-way routing a child can also
  get every example while others get some, and it would then repeat its
  parent's data and spend the node budget (at M = 4 on Delicious, 161 of 249
  expansions did that).

Random draws of one tree, in order: the permutation of the training rows,
then for every expanded node its M initial biases and its tie breaks.
"""

import numpy as np

from .._fit_progress import check_counters
from ._tree_arrays import mapped_empty

cimport numpy as cnp
from libc.stdint cimport int64_t
from libcpp.algorithm cimport nth_element, sort
from libcpp.utility cimport pair
from libcpp.vector cimport vector

from .._kernels._optim cimport MAX_GROUP_SIZE, weight_of
from .._kernels._random cimport rng_shuffle
from .._kernels._sparse cimport CSRView, csr_view
from .._kernels._types cimport float32_t, float64_t, index_t, offset_t
from ._node_trainer cimport NodeTrainer

cnp.import_array()

cdef class TreeBuilder:
    """Best-first growth of one LdSM tree (Algorithm 1); see ``_builder.pxd``.

    Parameters
    ----------
    trainer : NodeTrainer
        Data, hyper-parameters and generator of the tree.
    max_nodes : int
        A node is expanded only while ``n_nodes + arity <= max_nodes``.
    node_count : numpy.ndarray of int64, shape (1,), or None
        Where the number of nodes expanded so far is written after each
        expansion (see :func:`build_tree`).
    leaf_scores : {"distribution", "frequency"}
        What a leaf stores for each of its labels, as in :func:`build_tree`.
    max_leaf_labels : int or None
        Labels a leaf keeps at most, as in :func:`build_tree`.
    """

    def __init__(self, NodeTrainer trainer, index_t max_nodes, node_count=None,
                 leaf_scores="distribution", max_leaf_labels=None):
        cdef offset_t k
        self.trainer = trainer
        self.arity = trainer.settings.arity
        self.max_nodes = max_nodes
        self.leaf_frequency = leaf_scores == "frequency"
        self.max_leaf_labels = 0 if max_leaf_labels is None else max_leaf_labels
        self.label_total.assign(trainer.Y.n_cols, 0)
        for k in range(trainer.Y.indptr[trainer.Y.n_rows]):
            self.label_total[trainer.Y.indices[k]] += 1
        check_counters(node_count, 1, "node_count")
        self.node_count = node_count
        self.expanded = NULL
        if node_count is not None:
            self.expanded = <int64_t*>cnp.PyArray_DATA(node_count)
        self.child_rows.resize(self.arity)
        self.label_hist.assign(trainer.Y.n_cols, 0)
        self.hist_total = 0
        self.hist_rows = 0
        self.epoch_objective.assign(max(trainer.settings.epochs, 1), 0.0)
        self.scores.assign(self.arity, 0.0)
        self.goes.assign(self.arity, 0)

    cdef int grow(self) except -1 nogil:
        """Build the whole tree, without the GIL."""
        cdef index_t i, node, n_expanded = 0
        cdef index_t n_rows = self.trainer.X.n_rows
        self.new_node(-1, n_rows)
        self.node_rows[0].resize(n_rows)
        for i in range(n_rows):
            self.node_rows[0][i] = i
        rng_shuffle(&self.trainer.rng, self.node_rows[0].data(), n_rows)
        self.consider(0)
        while not self.queue.empty():
            node = -self.queue.top().second
            self.queue.pop()
            if <index_t>self.first_child.size() + self.arity > self.max_nodes:
                self.make_leaf(node)
            elif self.expand(node):
                n_expanded += 1
                if self.expanded != NULL:
                    self.expanded[0] = n_expanded
            else:
                self.make_leaf(node)
        return 0

    cdef index_t new_node(self, index_t parent_id, index_t n_rows) except -1 nogil:
        """Append a leaf-for-now node and return its id."""
        cdef index_t node = self.first_child.size()
        self.first_child.push_back(-1)
        self.parent.push_back(parent_id)
        self.depth.push_back(0 if parent_id < 0 else self.depth[parent_id] + 1)
        self.n_samples.push_back(n_rows)
        self.bias.resize((node + 1) * self.arity, 0.0)
        self.weight_begin.push_back(0)
        self.weight_end.push_back(0)
        self.leaf_begin.push_back(0)
        self.leaf_end.push_back(0)
        self.trace_begin.push_back(0)
        self.trace_end.push_back(0)
        self.node_rows.resize(node + 1)
        return node

    cdef int consider(self, index_t node) except -1 nogil:
        """Queue a new node for expansion, or finalise it as a leaf if it cannot split."""
        cdef int64_t largest = 0, priority
        cdef index_t k
        self.count_labels(self.node_rows[node])
        for k in range(<index_t>self.hist_labels.size()):
            largest = max(largest, self.label_hist[self.hist_labels[k]])
        priority = self.hist_total - largest
        if self.node_rows[node].size() < 2 or priority == 0:
            self.store_leaf(node)
            self.clear_histogram()
            vector[index_t]().swap(self.node_rows[node])
        else:
            self.clear_histogram()
            self.queue.push(pair[int64_t, index_t](priority, -node))
        return 0

    cdef int expand(self, index_t node) except -1 nogil:
        """Train the node and split it; return 0 (node untouched) if a child got every example."""
        cdef index_t i, m, n_rows, n_whole = 0
        self.current_rows.swap(self.node_rows[node])
        n_rows = self.current_rows.size()
        self.trainer.start_node(self.current_rows.data(), n_rows)
        self.epochs_run = self.trainer.train_node(self.current_rows.data(), n_rows,
                                                  self.epoch_objective.data(), NULL)
        self.trainer.round_weights()
        for m in range(self.arity):
            self.child_rows[m].clear()
        for i in range(n_rows):
            self.trainer.route_example(i, self.scores.data(), self.goes.data())
            for m in range(self.arity):
                if self.goes[m]:
                    self.child_rows[m].push_back(self.current_rows[i])
        for m in range(self.arity):
            n_whole += <index_t>self.child_rows[m].size() == n_rows
        if n_whole > 0:
            self.trainer.finish_node()
            self.node_rows[node].swap(self.current_rows)
            return 0
        self.store_split(node)
        self.trainer.finish_node()
        self.current_rows.clear()
        return 1

    cdef int store_split(self, index_t node) except -1 nogil:
        """Record the trained node's regressors and trace, and create its children."""
        cdef index_t m, k, first
        cdef bint has_empty_child = False
        self.store_weights(node)
        for m in range(self.arity):
            self.bias[node * self.arity + m] = <float32_t>weight_of(&self.trainer.regressors, m,
                                                                   self.trainer.X.n_cols)[0]
        self.trace_begin[node] = self.trace_value.size()
        for k in range(self.epochs_run):
            self.trace_value.push_back(<float32_t>self.epoch_objective[k])
        self.trace_end[node] = self.trace_value.size()
        first = self.first_child.size()
        self.first_child[node] = first
        for m in range(self.arity):
            self.new_node(node, self.child_rows[m].size())
            self.node_rows[first + m].swap(self.child_rows[m])
            has_empty_child |= self.node_rows[first + m].empty()
        if has_empty_child:
            # An empty child predicts with its parent's histogram, stored as a leaf's.
            self.count_labels(self.current_rows)
            for m in range(self.arity):
                if self.node_rows[first + m].empty():
                    self.store_leaf(first + m)
            self.clear_histogram()
        for m in range(self.arity):
            if not self.node_rows[first + m].empty():
                self.consider(first + m)
        return 0

    cdef int store_weights(self, index_t node) except -1 nogil:
        """Record the kept weights of the node's regressors under one list of
        feature ids, the union of theirs (each regressor's list is sorted, so
        this is a merge), with a weight per regressor, 0 where it kept none.

        Sibling regressors keep many of the same features, so one id for M
        weights stores a node in less memory than M lists of (id, weight)
        pairs, and prediction looks a feature up once a node rather than once
        a regressor ("One list of feature ids a node" in the benchmarks' lab
        notebook).
        """
        cdef index_t position[MAX_GROUP_SIZE]
        cdef index_t m, feature, arity = self.arity
        cdef bint any_left
        for m in range(arity):
            position[m] = 0
        self.weight_begin[node] = self.weight_feature.size()
        while True:
            any_left = False
            for m in range(arity):
                if position[m] < <index_t>self.trainer.kept_feature[m].size():
                    if not any_left or self.trainer.kept_feature[m][position[m]] < feature:
                        feature = self.trainer.kept_feature[m][position[m]]
                    any_left = True
            if not any_left:
                break
            self.weight_feature.push_back(feature)
            for m in range(arity):
                if (position[m] < <index_t>self.trainer.kept_feature[m].size()
                        and self.trainer.kept_feature[m][position[m]] == feature):
                    self.weight_value.push_back(self.trainer.kept_value[m][position[m]])
                    position[m] += 1
                else:
                    self.weight_value.push_back(0.0)
        self.weight_end[node] = self.weight_feature.size()
        return 0

    cdef int count_labels(self, const vector[index_t]& rows) except -1 nogil:
        """Accumulate the label histogram of ``rows`` into the (clear) scratch."""
        cdef const CSRView* Y = &self.trainer.Y
        cdef index_t i, label
        cdef offset_t k
        for i in range(<index_t>rows.size()):
            for k in range(Y.indptr[rows[i]], Y.indptr[rows[i] + 1]):
                label = Y.indices[k]
                if self.label_hist[label] == 0:
                    self.hist_labels.push_back(label)
                self.label_hist[label] += 1
                self.hist_total += 1
        self.hist_rows += rows.size()
        return 0

    cdef int store_leaf(self, index_t node) except -1 nogil:
        """Store the scratch histogram as the leaf scores of ``node``: divided by
        its total (a distribution), or by the number of rows counted (the
        fraction of the leaf's examples that carry each label).

        Only the ``max_leaf_labels`` most frequent labels are stored (if set),
        with the scores they have among all of the leaf's labels."""
        cdef index_t k, label
        cdef float64_t total = self.hist_rows if self.leaf_frequency else self.hist_total
        if 0 < self.max_leaf_labels < <index_t>self.hist_labels.size():
            self.keep_most_frequent_labels()
        sort(self.hist_labels.begin(), self.hist_labels.end())
        self.leaf_begin[node] = self.leaf_label.size()
        for k in range(<index_t>self.hist_labels.size()):
            label = self.hist_labels[k]
            self.leaf_label.push_back(label)
            self.leaf_value.push_back(<float32_t>(self.label_hist[label] / total))
        self.leaf_end[node] = self.leaf_label.size()
        return 0

    cdef int keep_most_frequent_labels(self) except -1 nogil:
        """Shorten ``hist_labels`` to its ``max_leaf_labels`` labels of the
        largest counts (in no particular order).

        Ties go to the labels fewer training examples carry, then to smaller
        ids: a frequent label is found through many other leaves, a rare one
        through few. The labels dropped are zeroed in ``label_hist``, which
        `clear_histogram` no longer reaches them through.
        """
        cdef index_t k, label, n_kept = self.max_leaf_labels
        cdef int64_t n_labels = self.label_total.size(), key
        self.ranked_labels.clear()
        for k in range(<index_t>self.hist_labels.size()):
            label = self.hist_labels[k]
            # Both parts of the tie-break in one key: totals and ids are < 2**31.
            key = self.label_total[label] * n_labels + label
            self.ranked_labels.push_back(pair[int64_t, int64_t](-self.label_hist[label], key))
        nth_element(self.ranked_labels.begin(), self.ranked_labels.begin() + n_kept,
                    self.ranked_labels.end())
        for k in range(n_kept, <index_t>self.ranked_labels.size()):
            self.label_hist[self.ranked_labels[k].second % n_labels] = 0
        self.hist_labels.resize(n_kept)
        for k in range(n_kept):
            self.hist_labels[k] = self.ranked_labels[k].second % n_labels
        return 0

    cdef void clear_histogram(self) noexcept nogil:
        """Zero the histogram scratch through its list of touched labels."""
        cdef index_t k
        for k in range(<index_t>self.hist_labels.size()):
            self.label_hist[self.hist_labels[k]] = 0
        self.hist_labels.clear()
        self.hist_total = 0
        self.hist_rows = 0

    cdef int make_leaf(self, index_t node) except -1 nogil:
        """Finalise a queued node as a leaf and release its example list."""
        self.count_labels(self.node_rows[node])
        self.store_leaf(node)
        self.clear_histogram()
        vector[index_t]().swap(self.node_rows[node])
        return 0

    def to_arrays(self):
        """Return the grown tree as the flat arrays documented in :func:`build_tree`.

        The builder's buffers are released as they are copied (call it once):
        at peak a tree is held about once and a half, never as Python lists.
        """
        cdef index_t n_nodes = self.first_child.size()
        tree = {
            "first_child": _copy_buffer(self.first_child.data(), n_nodes, np.int32),
            "parent": _copy_buffer(self.parent.data(), n_nodes, np.int32),
            "depth": _copy_buffer(self.depth.data(), n_nodes, np.int32),
            "n_samples": _copy_buffer(self.n_samples.data(), n_nodes, np.int64),
            "bias": _copy_buffer(self.bias.data(), self.bias.size(),
                                 np.float32).reshape(n_nodes, self.arity),
            "weight_indptr": _spans_indptr(self.weight_begin, self.weight_end),
            "weight_indices": _gather_spans(self.weight_feature.data(), self.weight_begin,
                                            self.weight_end, np.int32),
        }
        vector[index_t]().swap(self.weight_feature)
        tree["weight_values"] = _gather_spans(self.weight_value.data(), self.weight_begin,
                                              self.weight_end, np.float32,
                                              self.arity).reshape(-1, self.arity)
        vector[float32_t]().swap(self.weight_value)
        tree["leaf_indptr"] = _spans_indptr(self.leaf_begin, self.leaf_end)
        tree["leaf_labels"] = _gather_spans(self.leaf_label.data(), self.leaf_begin,
                                            self.leaf_end, np.int32)
        vector[index_t]().swap(self.leaf_label)
        tree["leaf_values"] = _gather_spans(self.leaf_value.data(), self.leaf_begin,
                                            self.leaf_end, np.float32)
        vector[float32_t]().swap(self.leaf_value)
        tree["trace_indptr"] = _spans_indptr(self.trace_begin, self.trace_end)
        tree["trace_values"] = _gather_spans(self.trace_value.data(), self.trace_begin,
                                             self.trace_end, np.float32)
        return tree


ctypedef fused stored_t:
    index_t
    offset_t
    float32_t


cdef object _copy_buffer(const stored_t* buffer, offset_t size, dtype):
    """Copy ``size`` entries of a C++ buffer into a new array of the matching dtype."""
    cdef offset_t i
    array = mapped_empty(size, dtype)
    if size == 0:
        return array
    cdef stored_t[::1] out = array
    for i in range(size):
        out[i] = buffer[i]
    return array


cdef object _spans_indptr(const vector[offset_t]& begin, const vector[offset_t]& end):
    """CSR row pointers of rows stored as spans ``[begin[r], end[r])`` of a buffer."""
    cdef offset_t row, n_rows = begin.size()
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    cdef offset_t[::1] out = indptr
    for row in range(n_rows):
        out[row + 1] = out[row] + end[row] - begin[row]
    return indptr


cdef object _gather_spans(const stored_t* buffer, const vector[offset_t]& begin,
                          const vector[offset_t]& end, dtype, index_t width=1):
    """Copy the spans of a buffer into one array, row after row.

    Rows were written to their buffers in processing order, not in node-id
    order; this lays them out in node-id order, as CSR rows. Each position
    of a span holds `width` consecutive entries of the buffer.
    """
    cdef offset_t row, p, position = 0, total = 0
    for row in range(<offset_t>begin.size()):
        total += end[row] - begin[row]
    array = mapped_empty(total * width, dtype)
    if total == 0:
        return array
    cdef stored_t[::1] out = array
    for row in range(<offset_t>begin.size()):
        for p in range(begin[row] * width, end[row] * width):
            out[position] = buffer[p]
            position += 1
    return array


def build_tree(X, Y, *, arity, max_nodes, epochs, lambda1, lambda2, optimizer, learning_rate,
               routing, weight_threshold, seed, max_weights=None, weights_per_row=None,
               node_count=None, leaf_scores="distribution", max_leaf_labels=None,
               epoch_tolerance=0.0):
    """Grow one LdSM tree and return it as flat arrays.

    The inputs are trusted, as every kernel's are: X and Y as
    :func:`xmltree._validation.check_features` and ``check_labels`` return
    them, the settings as ``LdSM._validate_params`` accepts them (the
    ranges below). Nothing is checked again here.

    Parameters
    ----------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features)
        float32 values, int32 sorted indices, int64 indptr.
    Y : scipy.sparse.csr_matrix of shape (n_samples, n_labels)
        Binary labels, same layout and rows as ``X``.
    arity : int
        Children per internal node, M (2 to ``xmltree.ldsm._tree_arrays.MAX_ARITY``).
    max_nodes : int
        Node budget, >= 1: a node is expanded only while ``n_nodes + arity <= max_nodes``.
    epochs : int
        Passes over a node's examples when training it, >= 0 (at most, with
        ``epoch_tolerance``).
    lambda1, lambda2 : float
        Weights of the class-integrity term and of the multi-way penalty in J.
    optimizer : {"sgd", "nag"}
        Regressor update rule (NAG = normalized adaptive gradient).
    learning_rate : float
        Step size of the regressor updates.
    routing : {"margin", "sigmoid"}
        ``"margin"``: an example goes to child m when ``z_m >= 0.5`` and the
        statistics use ``clamp(z, 0, 1)``; ``"sigmoid"``: when ``z_m >= 0``,
        statistics use ``sigmoid(z)``.
    weight_threshold : float
        Stored weights satisfy ``|w| >= weight_threshold`` (biases are always kept).
    seed : int
        Seed of the tree's generator, in ``[0, 2**64)``.
    max_weights : int or None, default=None
        Stored weights per regressor (biases aside), at most: the largest
        magnitudes are kept. With ``weights_per_row``, the floor of the
        budget instead. Both ``None``: no limit.
    weights_per_row : float or None, default=None
        Budget per training example of the node: a regressor keeps at most
        ``max(max_weights, weights_per_row * n_rows)`` weights.
    node_count : numpy.ndarray of int64, shape (1,), optional
        Its entry is set to the number of nodes expanded so far after each
        expansion, while the tree grows without the GIL: another Python
        thread may read it to show progress (a callback would take the GIL
        at every node, and the threads growing the other trees would wait
        on it).
    leaf_scores : {"distribution", "frequency"}, default="distribution"
        What a leaf stores for each label of its training examples: the
        label's share of all their label occurrences (the paper's normalised
        histogram, summing to 1), or the fraction of the examples that carry
        the label (in (0, 1]; an estimate of P(label | leaf)).
    max_leaf_labels : int or None, default=None
        Labels a leaf stores at most, >= 1: its most frequent (ties to the
        labels fewer training examples carry, then to smaller ids), with the
        scores they have among all its labels. None: all.
    epoch_tolerance : float, default=0.0
        A node stops before its ``epochs`` passes once the mean objective of
        a pass differs from the previous pass's by at most this fraction of
        it, >= 0; 0: every node takes all ``epochs``.

    Returns
    -------
    dict of str to numpy.ndarray
        ``first_child``, ``parent``, ``depth`` (int32, n_nodes), ``n_samples``
        (int64), ``weight_indptr`` (int64, n_nodes + 1), ``weight_indices``
        (int32: a node's feature ids, sorted), ``weight_values`` (float32,
        (n_weight_ids, arity): each id's weight in every regressor of its
        node), ``bias`` (float32, (n_nodes, arity)), ``leaf_indptr`` (int64, n_nodes + 1),
        ``leaf_labels`` (int32), ``leaf_values`` (float32), ``trace_indptr``
        (int64, n_nodes + 1) and ``trace_values`` (float32, the mean objective
        of each pass an internal node took): root 0, child ids larger than
        their parent's.
    """
    trainer = NodeTrainer(X, Y, arity=arity, epochs=epochs, lambda1=lambda1, lambda2=lambda2,
                          optimizer=optimizer, learning_rate=learning_rate, routing=routing,
                          weight_threshold=weight_threshold, seed=seed, max_weights=max_weights,
                          weights_per_row=weights_per_row, epoch_tolerance=epoch_tolerance)
    cdef TreeBuilder builder = TreeBuilder(trainer, max_nodes, node_count, leaf_scores,
                                           max_leaf_labels)
    with nogil:
        builder.grow()
    return builder.to_arrays()


cdef object _dense_weights(NodeTrainer trainer):
    """Copy the trainer's weights into an (arity, n_features + 1) array, bias last."""
    cdef index_t m, j
    weights = np.empty((trainer.settings.arity, trainer.X.n_cols + 1))
    cdef float64_t[:, ::1] out = weights
    for m in range(trainer.settings.arity):
        for j in range(trainer.X.n_cols + 1):
            out[m, j] = trainer.weight_of_feature(m, j)
    return weights


def _py_train_node(X, Y, rows, *, arity, epochs, lambda1, lambda2, optimizer, learning_rate,
                   routing, seed, max_weights=None, epoch_tolerance=0.0):
    """Train one node on ``rows`` and return its internals (for the tests).

    Returns
    -------
    dict
        ``directions`` (int32, (passes, len(rows))): chosen subset bitmask per
        (pass, example), 0 for examples without labels; ``trace`` (passes,),
        the mean objective of each of the passes taken (``epochs`` or fewer);
        ``total_count`` (C_v); ``labels``: sorted labels of the node, with
        ``label_count`` (l_v) and ``label_prob`` (P_m^k, (n_labels, arity));
        ``prob`` (P_m); ``weights`` (float64, (arity, n_features)) and
        ``bias`` (arity,) before rounding and sparsification;
        ``stored_weights`` as stored: rounded to float32 and cut to the budget.
    """
    cdef NodeTrainer trainer = NodeTrainer(
        X, Y, arity=arity, epochs=epochs, lambda1=lambda1, lambda2=lambda2, optimizer=optimizer,
        learning_rate=learning_rate, routing=routing, weight_threshold=0.0, seed=seed,
        max_weights=max_weights, epoch_tolerance=epoch_tolerance)
    rows = np.ascontiguousarray(rows, dtype=np.int32)
    # Distinct, as a node's rows are: the trainer's copy of them holds X once.
    if (rows.ndim != 1 or np.unique(rows).size != rows.size
            or (rows.size and (rows.min() < 0 or rows.max() >= X.shape[0]))):
        raise ValueError(f"rows must be a 1-D array of distinct row ids in [0, {X.shape[0]})")
    directions = np.zeros((epochs, rows.size), dtype=np.int32)
    trace = np.zeros(max(epochs, 1), dtype=np.float64)
    cdef const index_t* row_ptr = <const index_t*>cnp.PyArray_DATA(rows)
    trainer.start_node(row_ptr, rows.size)
    n_passes = trainer.train_node(row_ptr, rows.size, <float64_t*>cnp.PyArray_DATA(trace),
                                  <index_t*>cnp.PyArray_DATA(directions))
    n_features = X.shape[1]
    dense = _dense_weights(trainer)
    node_labels = np.asarray(trainer.node_labels, dtype=np.int32)
    order = np.argsort(node_labels)
    result = {
        "directions": directions[:n_passes],
        "trace": trace[:n_passes],
        "total_count": trainer.total_count,
        "labels": node_labels[order],
        "label_count": np.asarray(trainer.label_count, dtype=np.int64)[order],
        "label_prob": np.asarray(trainer.label_prob, dtype=np.float64).reshape(-1, arity)[order],
        "prob": np.asarray(trainer.prob, dtype=np.float64),
        "weights": dense[:, :n_features],
        "bias": dense[:, n_features],
    }
    trainer.round_weights()
    result["stored_weights"] = _dense_weights(trainer)[:, :n_features]
    trainer.finish_node()
    return result
