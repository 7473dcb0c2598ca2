"""Forest storage and multi-leaf prediction kernels for LdSM ensembles.

A :class:`Forest` concatenates the flat trees returned by
``xmltree.ldsm._builder.build_tree`` into one set of arrays (see ``_forest_arrays.pxd``), so a
single ``prange`` over blocks of examples descends every tree without the GIL.

Prediction follows Algorithm 2 of Majzoubi & Choromanska (2020): an example
descends from the root to *every* child chosen by the routing rule of
``_routing.pxd``; a tree scores the example with the average of the
normalised label histograms of all the leaves reached (or, as an option,
their sum), and the ensemble averages the trees. Regressor scores are
computed exactly as during training (float64, starting from the bias, then
features in increasing order), so an example follows at prediction time the
children it was sent to while the tree was built.

The leaves a block of examples reaches are found by ``_descent``; this
module scores them. Scores are accumulated in a dense per-thread buffer,
reset through the list of labels it touched, and with few labels that list
is found afterwards by one scan instead of being kept entry by entry
(measured on Delicious and Bibtex).
"""

cimport numpy as cnp
from cython.parallel cimport prange, threadid
from libc.stdint cimport uint8_t
from libc.math cimport exp, log, log1p
from libc.stdlib cimport calloc, free, malloc, qsort

import numpy as np
import scipy.sparse as sp

from ._descent cimport descend_block
from ._forest_arrays cimport (MAX_BLOCK_SIZE, SCORE_GROUP, ForestArrays, LeafPair,
                              Scratch)
from ._label_models cimport LabelModelView, label_margin
from .._kernels._row_buffer cimport (RowBuffer, allocate_row_buffers, check_row_buffers, free_row_buffers,
                           gather_rows, reserve_pairs)
from .._kernels._prefetch cimport prefetch
from .._kernels._sparse cimport CSRView, csr_view, row_indices, row_nnz, row_values
from .._kernels._top_k cimport ScoredLabel, offer_top_k, partition_top_k, sort_top_k
from .._kernels._types cimport float32_t, float64_t, index_t, offset_t

from ._tree_arrays import (MAX_ARITY, FeatureIds, check_tree, concatenate_trees,
                           feature_slots, routing_threshold)
from ._strongest import keep_strongest
from .._validation import check_features
from ..exceptions import ModelFormatError

__all__ = ["Forest"]

cnp.import_array()

#: Scores are accumulated without tracking which labels they touch when the
#: label space is at most this many times the histogram entries an example
#: adds up (trees x mean leaf histogram length, a lower bound): finding the
#: touched labels afterwards by scanning every score then costs less than
#: tracking each entry. Measured on Delicious (983 labels, ~19,000 entries
#: per example with 50 trees), this made prediction 7-15% faster (Bibtex: 2-5%).
DENSE_SCORES_RATIO = 1.0

# --------------------------------------------------------------------------
# Internal structs
# --------------------------------------------------------------------------

ctypedef void (*BlockAction)(const ForestArrays* f, Scratch* s, index_t first, index_t n_rows,
                             int thread, void* output) noexcept nogil


cdef struct TopKOutput:
    # Where rank_block writes: row-major (n_samples, k) arrays.
    index_t* labels              # best labels, -1 padding
    float32_t* scores            # their scores, 0 padding
    index_t k                    # row length
    index_t heap_size            # min(k, n_labels): labels a row can have
    bint ordered                 # best first; else the best in no particular order


cdef struct ScoresOutput:
    # Where collect_block_scores writes: each thread appends to its own
    # buffer and records, per row, where that row's pairs went.
    RowBuffer* buffers           # (n_threads,)
    index_t* row_thread          # (n_samples,) buffer holding the row
    offset_t* row_start          # (n_samples,) first pair of the row in it
    offset_t* row_nnz            # (n_samples,) pairs of the row


# --------------------------------------------------------------------------
# The forest
# --------------------------------------------------------------------------

cdef class Forest:
    """An LdSM ensemble concatenated into one set of flat arrays.

    Parameters
    ----------
    trees : list of dict
        Flat trees as returned by ``xmltree.ldsm._builder.build_tree``; each is
        validated with :func:`check_tree` (raising ``ModelFormatError``)
        before anything else happens.
    arity : int
        Children per internal node, the same for every tree.
    n_features, n_labels : int
        Sizes of the feature and label spaces. Rows are checked against
        `n_features`, but memory follows the feature ids the weights use
        (``xmltree.ldsm._tree_arrays.FeatureIds``): a model file may claim
        any count.
    routing : {"margin", "sigmoid"}
        Routing mode the trees were trained with.
    leaf_scores : {"distribution", "frequency"}, default="distribution"
        What the leaves store (see :func:`check_tree`).
    leaf_aggregation : {"mean", "sum"}, default="mean"
        How a tree combines the leaves an example reaches (see
        :data:`LEAF_AGGREGATIONS`); the ensemble always averages its trees.
    descent_threshold : float or None, default=None
        Score at or above which an example descends to a child (the best
        child when none qualifies); ``None``: the routing threshold of
        training, so that training examples follow their training paths.
    max_wide_branches : int or None, default=None
        With a `descent_threshold` below the training rule's: how many
        children a path may take that only `descent_threshold` admits (0 to
        255; the training rule's children are always taken). None: no limit.
    route_row_features : int or None, default=None
        Features of an example that route it down the trees: its largest
        |values| (see ``xmltree.ldsm._strongest.keep_strongest``); the label
        classifiers see them all. None: all.
    release : bool, default=False
        Remove each tree's weight and leaf arrays from its dict as soon as
        they are copied, so that a caller owning the dicts holds them once
        (and one tree's array twice) rather than twice while the forest is built.
    check_trees : bool, default=True
        Check every tree with :func:`check_tree` (and the sizes) first, as
        trees read from a file must be. ``False`` is for trees the builder
        just grew or that a forest already holds; the hyper-parameters are
        the estimator's, checked by it.
    """

    def __init__(self, trees, *, arity, n_features, n_labels, routing,
                 leaf_scores="distribution", leaf_aggregation="mean", descent_threshold=None,
                 max_wide_branches=None, route_row_features=None, release=False,
                 check_trees=True):
        if check_trees:
            if len(trees) < 1:
                raise ModelFormatError("a forest needs at least one tree")
            if not 2 <= arity <= MAX_ARITY or n_features < 1 or n_labels < 1:
                raise ModelFormatError("forest arity, n_features or n_labels out of range")
            for tree in trees:
                check_tree(tree, arity, n_features, n_labels, leaf_scores)
        self.arity = arity
        self.n_features = n_features
        self.n_labels = n_labels
        self.training_threshold = routing_threshold(routing)
        self.threshold = (self.training_threshold if descent_threshold is None
                          else descent_threshold)
        self.max_wide_branches = -1 if max_wide_branches is None else max_wide_branches
        self.route_row_features = 0 if route_row_features is None else route_row_features
        self.sum_leaves = leaf_aggregation == "sum"
        self.label_indptr = None
        arrays = concatenate_trees(list(trees), arity, release)
        self.tree_offset = arrays["tree_offset"]
        self.first_child = arrays["first_child"]
        self.weight_indptr = arrays["weight_indptr"]
        self.weight_indices = arrays["weight_indices"]
        self.weight_values = arrays["weight_values"]
        self.bias = arrays["bias"]
        self.tree_ids = FeatureIds(self.weight_indices)
        self.feature_slot, self.n_slots = feature_slots(self.tree_ids.kernel_indices,
                                                        self.tree_ids.width)
        self.leaf_indptr = arrays["leaf_indptr"]
        self.leaf_labels = arrays["leaf_labels"]
        self.leaf_values = arrays["leaf_values"]
        n_leaves = int(np.sum(self.first_child < 0))
        self.dense_scores = (n_labels <= DENSE_SCORES_RATIO * len(trees)
                             * self.leaf_labels.shape[0] / n_leaves)
        self._fill_arrays()

    cdef void _fill_arrays(self):
        cdef const offset_t[::1] tree_offset = self.tree_offset
        cdef const index_t[::1] first_child = self.first_child
        cdef const offset_t[::1] weight_indptr = self.weight_indptr
        cdef const index_t[::1] weight_indices = self.tree_ids.kernel_indices
        cdef const float32_t[::1] weight_values = self.weight_values.reshape(-1)
        cdef const float32_t[::1] bias = self.bias
        cdef const index_t[::1] feature_slot = self.feature_slot
        cdef const offset_t[::1] leaf_indptr = self.leaf_indptr
        cdef const index_t[::1] leaf_labels = self.leaf_labels
        cdef const float32_t[::1] leaf_values = self.leaf_values
        self.arrays.n_trees = tree_offset.shape[0] - 1
        self.arrays.arity = self.arity
        self.arrays.n_tree_ids = self.tree_ids.width
        self.arrays.n_slots = self.n_slots
        self.arrays.n_labels = self.n_labels
        self.arrays.max_tree_nodes = int(np.max(np.diff(self.tree_offset)))
        self.arrays.threshold = self.threshold
        self.arrays.training_threshold = self.training_threshold
        self.arrays.max_wide_branches = self.max_wide_branches
        self.arrays.route_row_features = self.route_row_features
        self.arrays.dense_scores = self.dense_scores
        self.arrays.sum_leaves = self.sum_leaves
        self.arrays.tree_offset = &tree_offset[0]
        self.arrays.first_child = &first_child[0]
        self.arrays.weight_indptr = &weight_indptr[0]
        # Empty arrays have no element 0; leave the pointer NULL (never read,
        # since every CSR row is then empty).
        self.arrays.weight_indices = &weight_indices[0] if weight_indices.shape[0] else NULL
        self.arrays.weight_values = &weight_values[0] if weight_values.shape[0] else NULL
        self.arrays.bias = &bias[0]
        self.arrays.feature_slot = &feature_slot[0] if feature_slot.shape[0] else NULL
        self.arrays.leaf_indptr = &leaf_indptr[0]
        self.arrays.leaf_labels = &leaf_labels[0]
        self.arrays.leaf_values = &leaf_values[0]
        self.arrays.rescore = False

    def use_label_models(self, weights, bias, *, index_t n_candidates,
                         double histogram_weight, double margin_scale):
        """Re-score each example's best labels with per-label linear classifiers.

        From then on, the ``n_candidates`` labels of highest histogram score
        ``h`` of an example are scored ``sigmoid(margin_scale * z) ** (1 -
        histogram_weight) * h ** histogram_weight``, where ``z`` is the
        label's classifier margin, and the other labels are dropped.

        Parameters
        ----------
        weights : scipy.sparse.csr_matrix of float32, shape (n_labels, n_features)
            One classifier per label, int64 indptr, int32 sorted feature ids,
            finite values, as ``xmltree.ldsm._tree_arrays.check_label_models`` checks.
        bias : numpy.ndarray of float32, shape (n_labels,)
            Their biases.
        n_candidates : int
            Labels re-scored per example, >= 1 (at most ``n_labels`` are).
        histogram_weight : float
            Exponent of the histogram score, in [0, 1].
        margin_scale : float
            Slope of the sigmoid of the margin, > 0.
        """
        self.label_indptr = weights.indptr
        self.label_indices = weights.indices
        self.label_ids = FeatureIds(weights.indices)
        self.label_values = weights.data
        self.label_bias = bias
        self.label_columns = _by_feature(weights, self.label_ids)
        # Each thread holds n_candidates slots: never more than there are labels.
        self.n_candidates = min(n_candidates, self.n_labels)
        self.histogram_weight = histogram_weight
        self.margin_scale = margin_scale
        cdef const offset_t[::1] indptr = self.label_indptr
        cdef const index_t[::1] indices = self.label_ids.kernel_indices
        cdef const float32_t[::1] values = self.label_values
        cdef const float32_t[::1] bias_view = self.label_bias
        cdef const offset_t[::1] column_indptr = self.label_columns[0]
        cdef const index_t[::1] column_labels = self.label_columns[1]
        cdef const float32_t[::1] column_values = self.label_columns[2]
        self.arrays.label_models.indptr = &indptr[0]
        self.arrays.label_models.indices = &indices[0] if indices.shape[0] else NULL
        self.arrays.label_models.values = &values[0] if values.shape[0] else NULL
        self.arrays.label_models.bias = &bias_view[0]
        self.arrays.label_models.column_indptr = &column_indptr[0]
        self.arrays.label_models.column_labels = (&column_labels[0] if column_labels.shape[0]
                                                  else NULL)
        self.arrays.label_models.column_values = (&column_values[0] if column_values.shape[0]
                                                  else NULL)
        self.arrays.n_label_ids = self.label_ids.width
        self.arrays.n_candidates = self.n_candidates
        self.arrays.histogram_weight = histogram_weight
        self.arrays.margin_scale = margin_scale
        self.arrays.rescore = True

    @property
    def n_trees(self):
        """Number of trees in the forest."""
        return self.arrays.n_trees

    def predict_top_k(self, X, index_t k, int n_threads=1, bint check_input=True,
                      labels=None, bint ordered=True):
        """Return the ``k`` best labels of each example and their scores.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Examples; validated with ``check_features`` (fewer columns than
            the forest's are widened, more is a ``DataFormatError``).
        k : int
            Labels per example, >= 1.
        n_threads : int, default=1
            OpenMP threads.
        check_input : bool, default=True
            ``False``: ``X`` is already what ``check_features(X,
            n_features=self.n_features)`` returns and ``k >= 1``; nothing is
            checked again (the estimator's path).
        labels : numpy.ndarray of int32, shape (n_samples, k), optional
            A C-contiguous, writeable array to write the labels into (and
            return) instead of a new one: where the caller keeps them anyway.
        ordered : bool, default=True
            ``False``: each row's ``k`` best labels in no particular order,
            the same labels found in less time (what training needs).

        Returns
        -------
        labels : numpy.ndarray of int32, shape (n_samples, k)
            Best labels first; equal scores are ordered by increasing label
            id. Rows with fewer than ``k`` labels of non-zero score are
            padded with label -1 and score 0.
        scores : numpy.ndarray of float32, shape (n_samples, k)
            Averaged ensemble scores of ``labels``.

        Raises
        ------
        ValueError
            If `labels` is not such an array.
        """
        if check_input:
            if k < 1:
                raise ValueError(f"k must be >= 1, got {k}")
            X = check_features(X, n_features=self.n_features)
        if labels is None:
            labels = np.empty((X.shape[0], k), dtype=np.int32)
        elif not (isinstance(labels, np.ndarray) and labels.dtype == np.int32
                  and labels.shape == (X.shape[0], k) and labels.flags.c_contiguous
                  and labels.flags.writeable):
            raise ValueError(f"labels must be a writeable C-contiguous int32 array of shape "
                             f"{(X.shape[0], k)}")
        labels.fill(-1)
        scores = np.zeros((X.shape[0], k), dtype=np.float32)
        cdef TopKOutput out
        out.labels = <index_t*>cnp.PyArray_DATA(labels)
        out.scores = <float32_t*>cnp.PyArray_DATA(scores)
        out.k = k
        out.heap_size = min(k, self.n_labels)
        out.ordered = ordered
        predict_blocks(self, X, n_threads, rank_block, &out)
        return labels, scores

    def predict_scores(self, X, int n_threads=1, bint check_input=True):
        """Return every non-zero averaged ensemble score.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Examples, validated as in :meth:`predict_top_k`.
        n_threads : int, default=1
            OpenMP threads.
        check_input : bool, default=True
            As in :meth:`predict_top_k`.

        Returns
        -------
        scipy.sparse.csr_matrix of shape (n_samples, n_labels)
            float32 scores with sorted label ids; with distribution leaves
            averaged ("mean") each row sums to 1 (up to rounding), since every
            example reaches at least one leaf.
        """
        if check_input:
            X = check_features(X, n_features=self.n_features)
        n_samples = X.shape[0]
        row_thread = np.zeros(n_samples, dtype=np.int32)
        row_start = np.zeros(n_samples, dtype=np.int64)
        row_nnz = np.zeros(n_samples, dtype=np.int64)
        cdef ScoresOutput out
        out.row_thread = <index_t*>cnp.PyArray_DATA(row_thread)
        out.row_start = <offset_t*>cnp.PyArray_DATA(row_start)
        out.row_nnz = <offset_t*>cnp.PyArray_DATA(row_nnz)
        out.buffers = allocate_row_buffers(n_threads)
        try:
            predict_blocks(self, X, n_threads, collect_block_scores, &out)
            check_row_buffers(out.buffers, n_threads)
            return gather_rows(out.buffers, n_threads, row_thread, row_start, row_nnz,
                               self.n_labels)
        finally:
            free_row_buffers(out.buffers, n_threads)

    def leaves_reached(self, X, int n_threads=1, bint check_input=True):
        """Count the leaves each example reaches in each tree.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Examples, validated as in :meth:`predict_top_k`.
        n_threads : int, default=1
            OpenMP threads.
        check_input : bool, default=True
            As in :meth:`predict_top_k`.

        Returns
        -------
        numpy.ndarray of int32, shape (n_samples, n_trees)
            Every entry is >= 1.
        """
        if check_input:
            X = check_features(X, n_features=self.n_features)
        counts = np.zeros((X.shape[0], self.arrays.n_trees), dtype=np.int32)
        predict_blocks(self, X, n_threads, count_block_leaves,
                       <index_t*>cnp.PyArray_DATA(counts))
        return counts


def _by_feature(weights, ids):
    """The label classifiers' weights feature by feature, in the kernels' ids.

    Returns ``(indptr, labels, values)``: int64 pointers to each of
    ``ids.width`` features, the int32 labels whose weight for it is stored,
    increasing, and their float32 weights.
    """
    columns = sp.csr_matrix((weights.data, ids.kernel_indices, weights.indptr),
                            shape=(weights.shape[0], ids.width), copy=False).tocsc()
    return (columns.indptr.astype(np.int64), columns.indices.astype(np.int32, copy=False),
            columns.data)


# --------------------------------------------------------------------------
# The block-parallel scaffold and what it does with each block
# --------------------------------------------------------------------------

cdef int predict_blocks(Forest forest, X, int n_threads, BlockAction action,
                        void* output) except -1:
    """Descend the rows of the checked matrix `X` through every tree of
    `forest`, block by block on `n_threads` threads, and hand each descended
    block to `action` with the thread's scratch (the one prediction loop of
    the forest).

    The rows descend by their ``route_row_features`` strongest features (all
    with 0); `action` sees every feature. Both
    see the feature ids as the kernels index them (``FeatureIds.of_rows``).

    Raises MemoryError if a thread's scratch could not grow.
    """
    cdef const ForestArrays* f = &forest.arrays
    # The views point into these matrices: they must live until the end.
    X_route = X if f.route_row_features == 0 else keep_strongest(X, f.route_row_features)
    X_route = forest.tree_ids.of_rows(X_route)
    X_rescore = forest.label_ids.of_rows(X) if f.rescore else X
    cdef CSRView route_rows = csr_view(X_route)
    cdef CSRView rows = csr_view(X_rescore)
    cdef index_t n_samples = rows.n_rows
    cdef index_t rows_per_block = block_rows(n_samples, n_threads)
    cdef Scratch* scratches = allocate_scratch(f, n_threads, rows_per_block)
    cdef Scratch* scratch
    cdef index_t block, first, n_rows
    cdef int thread
    try:
        with nogil:
            for block in prange(n_blocks(n_samples, rows_per_block), num_threads=n_threads,
                                schedule="dynamic"):
                thread = threadid()
                scratch = &scratches[thread]
                scratch.rows = &rows
                first = block * rows_per_block
                n_rows = min(rows_per_block, n_samples - first)
                descend_block(f, scratch, &route_rows, first, n_rows)
                if not scratch.failed:
                    action(f, scratch, first, n_rows, thread, output)
        check_not_failed(scratches, n_threads)
    finally:
        free_scratch(scratches, n_threads)
    return 0


cdef void rank_block(const ForestArrays* f, Scratch* s, index_t first, index_t n_rows,
                     int thread, void* output) noexcept nogil:
    """Write the top k labels of every row of the block (a TopKOutput)."""
    cdef TopKOutput* out = <TopKOutput*>output
    cdef offset_t at
    cdef index_t j
    prefetch_histograms(f, s, 0)
    for j in range(n_rows):
        if j + 1 < n_rows:
            prefetch_histograms(f, s, j + 1)
        score_example(f, s, j)
        if f.rescore:
            rescore_example(f, s, first + j)
        at = <offset_t>(first + j) * out.k
        if out.ordered:
            select_top_k(s, out.heap_size, out.labels + at, out.scores + at)
        else:
            select_best_k(s, out.heap_size, out.labels + at, out.scores + at)
        clear_labels(s)


cdef void collect_block_scores(const ForestArrays* f, Scratch* s, index_t first,
                               index_t n_rows, int thread, void* output) noexcept nogil:
    """Append every row's non-zero scores to the thread's buffer (a ScoresOutput)."""
    cdef ScoresOutput* out = <ScoresOutput*>output
    cdef index_t j
    for j in range(n_rows):
        score_example(f, s, j)
        if f.rescore:
            rescore_example(f, s, first + j)
        out.row_thread[first + j] = thread
        out.row_start[first + j] = out.buffers[thread].size
        out.row_nnz[first + j] = s.n_touched
        append_sorted_scores(s, &out.buffers[thread])
        clear_labels(s)


cdef void count_block_leaves(const ForestArrays* f, Scratch* s, index_t first, index_t n_rows,
                             int thread, void* output) noexcept nogil:
    """Write the leaves each row reached in each tree (row-major (n_samples, n_trees))."""
    cdef index_t* counts = <index_t*>output
    cdef index_t j, tree
    for j in range(n_rows):
        for tree in range(f.n_trees):
            counts[<offset_t>(first + j) * f.n_trees + tree] = (
                s.block_n_leaves[<offset_t>tree * s.block_size + j])


cdef index_t block_rows(index_t n_samples, int n_threads) noexcept nogil:
    """Rows per descent block: at most MAX_BLOCK_SIZE, and close to equal blocks
    in a multiple of `n_threads`, so that no thread is left with a short
    last block while another still has a full one."""
    cdef offset_t per_round = <offset_t>n_threads * MAX_BLOCK_SIZE
    cdef offset_t count = max(1, (n_samples + per_round - 1) // per_round * n_threads)
    return <index_t>max(1, (n_samples + count - 1) // count)


cdef inline index_t n_blocks(index_t n_samples, index_t rows_per_block) noexcept nogil:
    """Number of blocks of `rows_per_block` rows covering `n_samples` examples."""
    return (n_samples + rows_per_block - 1) // rows_per_block


cdef int check_not_failed(Scratch* scratches, int n_threads) except -1:
    """Raise MemoryError if a thread could not grow its block buffer."""
    cdef int thread
    for thread in range(n_threads):
        if scratches[thread].failed:
            raise MemoryError("cannot allocate memory for the leaves reached")
    return 0


cdef Scratch* allocate_scratch(const ForestArrays* f, int n_threads,
                               index_t block_size) except NULL:
    """Allocate one zeroed scratch area per thread for blocks of at most
    `block_size` rows (free with `free_scratch`)."""
    if n_threads < 1:
        raise ValueError(f"n_threads must be >= 1, got {n_threads}")
    cdef Scratch* scratches = <Scratch*>calloc(n_threads, sizeof(Scratch))
    if scratches == NULL:
        raise MemoryError()
    cdef int thread
    for thread in range(n_threads):
        if init_scratch(&scratches[thread], f, block_size) != 0:
            free_scratch(scratches, n_threads)
            raise MemoryError("cannot allocate prediction scratch memory")
    return scratches


# --------------------------------------------------------------------------
# Scratch memory
# --------------------------------------------------------------------------

cdef int init_scratch(Scratch* s, const ForestArrays* f, index_t block_size) noexcept nogil:
    """Allocate one thread's buffers (zeroed) for blocks of at most
    `block_size` rows; return -1 if memory runs out."""
    s.label_score = <float64_t*>calloc(f.n_labels, sizeof(float64_t))
    s.label_seen = <uint8_t*>calloc(f.n_labels, sizeof(uint8_t))
    s.touched = <index_t*>malloc((f.n_labels + 1) * sizeof(index_t))
    s.ranked = <ScoredLabel*>malloc((f.n_labels + 1) * sizeof(ScoredLabel))
    s.n_touched = 0
    s.stack = <index_t*>malloc(f.max_tree_nodes * sizeof(index_t))
    s.stack_start = <offset_t*>malloc(f.max_tree_nodes * sizeof(offset_t))
    s.stack_count = <index_t*>malloc(f.max_tree_nodes * sizeof(index_t))
    # The root's segment plus one level of children; deeper levels grow it.
    s.block_size = block_size
    s.members_capacity = <offset_t>(f.arity + 1) * block_size
    s.members = <index_t*>malloc(s.members_capacity * sizeof(index_t))
    s.member_wide_branches = <uint8_t*>malloc(s.members_capacity * sizeof(uint8_t))
    s.child_count = <index_t*>malloc(f.arity * sizeof(index_t))
    s.pairs_capacity = 2 * <offset_t>block_size
    s.pairs = <LeafPair*>malloc(s.pairs_capacity * sizeof(LeafPair))
    s.block_capacity = <offset_t>f.n_trees * block_size * 2
    s.block_leaves = <index_t*>malloc(s.block_capacity * sizeof(index_t))
    s.block_first_leaf = <offset_t*>malloc(<offset_t>f.n_trees * block_size * sizeof(offset_t))
    s.block_n_leaves = <index_t*>malloc(<offset_t>f.n_trees * block_size * sizeof(index_t))
    s.failed = False
    s.node_scores = <float64_t*>malloc(SCORE_GROUP * f.arity * sizeof(float64_t))
    s.example_start = <offset_t*>malloc((<offset_t>block_size + 1) * sizeof(offset_t))
    # block_slots grows on demand (realloc of NULL).
    s.block_slots = NULL
    s.block_slots_capacity = 0
    s.node_block = <float32_t*>calloc(<offset_t>f.n_slots * f.arity, sizeof(float32_t))
    s.goes = <uint8_t*>malloc(f.arity * sizeof(uint8_t))
    s.trained_goes = <uint8_t*>malloc(f.arity * sizeof(uint8_t))
    if f.rescore:
        # One spare entry: calloc(0) may return NULL.
        s.dense_x = <float32_t*>calloc(<offset_t>f.n_label_ids + 1, sizeof(float32_t))
        s.candidate_labels = <index_t*>malloc(f.n_candidates * sizeof(index_t))
        s.candidate_scores = <float64_t*>malloc(f.n_candidates * sizeof(float64_t))
        s.candidate_slot = <index_t*>calloc(f.n_labels, sizeof(index_t))
        s.candidate_margins = <float64_t*>malloc(f.n_candidates * sizeof(float64_t))
        if (s.dense_x == NULL or s.candidate_labels == NULL or s.candidate_scores == NULL
                or s.candidate_slot == NULL or s.candidate_margins == NULL):
            return -1
    if (s.label_score == NULL or s.label_seen == NULL
            or s.touched == NULL or s.ranked == NULL or s.stack == NULL or s.stack_start == NULL
            or s.stack_count == NULL or s.members == NULL or s.member_wide_branches == NULL
            or s.child_count == NULL
            or s.pairs == NULL
            or s.block_leaves == NULL or s.block_first_leaf == NULL
            or s.block_n_leaves == NULL
            or s.node_scores == NULL or s.example_start == NULL or s.node_block == NULL
            or s.goes == NULL or s.trained_goes == NULL):
        return -1
    return 0


cdef void free_scratch(Scratch* scratches, int n_threads) noexcept nogil:
    """Release the buffers of `n_threads` scratch areas and the array itself."""
    cdef int t
    if scratches == NULL:
        return
    for t in range(n_threads):
        free(scratches[t].label_score)
        free(scratches[t].label_seen)
        free(scratches[t].touched)
        free(scratches[t].ranked)
        free(scratches[t].stack)
        free(scratches[t].stack_start)
        free(scratches[t].stack_count)
        free(scratches[t].members)
        free(scratches[t].member_wide_branches)
        free(scratches[t].child_count)
        free(scratches[t].pairs)
        free(scratches[t].block_leaves)
        free(scratches[t].block_first_leaf)
        free(scratches[t].block_n_leaves)
        free(scratches[t].node_scores)
        free(scratches[t].example_start)
        free(scratches[t].block_slots)
        free(scratches[t].node_block)
        free(scratches[t].goes)
        free(scratches[t].trained_goes)
        free(scratches[t].dense_x)
        free(scratches[t].candidate_labels)
        free(scratches[t].candidate_scores)
        free(scratches[t].candidate_slot)
        free(scratches[t].candidate_margins)
    free(scratches)


cdef void add_leaf_histograms(const ForestArrays* f, Scratch* s, const index_t* leaves,
                              index_t n_leaves, float64_t weight) noexcept nogil:
    """Add ``weight`` times the histogram of each of ``leaves`` to the scores,
    listing the labels seen for the first time in ``s.touched`` unless
    ``f.dense_scores``."""
    # Local copies let the compiler keep the loop state in registers.
    cdef index_t j, label, n_touched = s.n_touched
    cdef index_t* touched = s.touched
    cdef uint8_t* seen = s.label_seen
    cdef float64_t* label_score = s.label_score
    cdef offset_t p
    if f.dense_scores:
        for j in range(n_leaves):
            for p in range(f.leaf_indptr[leaves[j]], f.leaf_indptr[leaves[j] + 1]):
                label_score[f.leaf_labels[p]] += weight * <float64_t>f.leaf_values[p]
        return
    for j in range(n_leaves):
        for p in range(f.leaf_indptr[leaves[j]], f.leaf_indptr[leaves[j] + 1]):
            label = f.leaf_labels[p]
            # Branch-free append: the slot past the list is overwritten
            # unless the label is new.
            touched[n_touched] = label
            n_touched += 1 - seen[label]
            seen[label] = 1
            label_score[label] += weight * <float64_t>f.leaf_values[p]
    s.n_touched = n_touched


cdef void prefetch_histograms(const ForestArrays* f, const Scratch* s,
                              index_t k) noexcept nogil:
    """Start loading the histograms of the leaves example `k` of the block
    reached. Issued one example ahead: each leaf is a short run in a large
    array, too short for the hardware prefetcher to pick up on its own."""
    cdef index_t tree, j, leaf
    cdef offset_t slot, p
    # 16 entries of 4 bytes fill one 64-byte cache line.
    for tree in range(f.n_trees):
        slot = <offset_t>tree * s.block_size + k
        for j in range(s.block_n_leaves[slot]):
            leaf = s.block_leaves[s.block_first_leaf[slot] + j]
            for p in range(f.leaf_indptr[leaf], f.leaf_indptr[leaf + 1], 16):
                prefetch(f.leaf_labels + p)
                prefetch(f.leaf_values + p)


cdef void score_example(const ForestArrays* f, Scratch* s, index_t k) noexcept nogil:
    """Accumulate the averaged leaf histograms of example `k` of the block
    last passed to `descend_block` (which must not have failed).

    Each tree weighs its ``n`` reached leaves by ``1 / (n * n_trees)``, so
    the tree averages its leaves and the ensemble averages its trees; with
    ``f.sum_leaves``, by ``1 / n_trees``, so the tree sums its leaves.
    """
    cdef index_t tree, n_leaves
    cdef offset_t slot
    for tree in range(f.n_trees):
        slot = <offset_t>tree * s.block_size + k
        n_leaves = s.block_n_leaves[slot]
        add_leaf_histograms(f, s, s.block_leaves + s.block_first_leaf[slot], n_leaves,
                            1.0 / ((1 if f.sum_leaves else <float64_t>n_leaves) * f.n_trees))
    if f.dense_scores:
        list_scored_labels(f, s)


cdef void list_scored_labels(const ForestArrays* f, Scratch* s) noexcept nogil:
    """Fill ``s.touched`` with the labels of non-zero score, by increasing id.

    Leaf histogram values are positive (checked at load time), so these are
    exactly the labels of the leaves reached.
    """
    cdef index_t label, n_touched = 0
    cdef index_t* touched = s.touched
    cdef const float64_t* label_score = s.label_score
    for label in range(f.n_labels):
        # Branch-free append, as in add_leaf_histograms.
        touched[n_touched] = label
        n_touched += label_score[label] != 0
    s.n_touched = n_touched


cdef void rescore_example(const ForestArrays* f, Scratch* s, index_t row) noexcept nogil:
    """Replace the scores of example `row` (just accumulated by
    `score_example`) by the blend of its label classifiers and histograms,
    for its ``n_candidates`` best labels by histogram score; the others go.

    The margins are read label by label or feature by feature, whichever
    holds fewer of the weights: with few labels, or long classifiers, an
    example's features hold far fewer than its candidates. Both add the
    same products in the same order (increasing feature id), so the scores
    are the same to the bit.
    """
    cdef index_t j, label, size
    cdef index_t nnz = row_nnz(s.rows, row)
    cdef const index_t* features = row_indices(s.rows, row)
    cdef const float32_t* values = row_values(s.rows, row)
    cdef const LabelModelView* models = &f.label_models
    cdef offset_t by_label = 0, by_feature = 0
    cdef float64_t margin, log_sigmoid
    size = rank_touched(s, f.n_candidates, False)
    for j in range(size):
        s.candidate_labels[j] = s.ranked[j].label
        s.candidate_scores[j] = s.ranked[j].score
    clear_labels(s)
    for j in range(size):
        label = s.candidate_labels[j]
        by_label += models.indptr[label + 1] - models.indptr[label]
    # A feature at or beyond n_label_ids is in no classifier.
    for j in range(nnz):
        if features[j] < f.n_label_ids:
            by_feature += (models.column_indptr[features[j] + 1]
                           - models.column_indptr[features[j]])
    if by_feature < by_label:
        margins_by_feature(f, s, features, values, nnz, size)
    else:
        margins_by_label(f, s, features, values, nnz, size)
    for j in range(size):
        label = s.candidate_labels[j]
        margin = f.margin_scale * s.candidate_margins[j]
        # log(sigmoid(m)), without overflow for large |m|.
        log_sigmoid = -log1p(exp(-margin)) if margin > 0 else margin - log1p(exp(margin))
        s.label_score[label] = exp((1.0 - f.histogram_weight) * log_sigmoid
                                   + f.histogram_weight * log(s.candidate_scores[j]))
        s.label_seen[label] = 1
        s.touched[j] = label
    s.n_touched = size


cdef void margins_by_label(const ForestArrays* f, Scratch* s, const index_t* features,
                           const float32_t* values, index_t nnz, index_t size) noexcept nogil:
    """Write the margins of the `size` candidates, reading each one's classifier
    against the example spread out in ``s.dense_x``."""
    cdef index_t j
    for j in range(nnz):
        if features[j] < f.n_label_ids:
            s.dense_x[features[j]] = values[j]
    for j in range(size):
        s.candidate_margins[j] = label_margin(&f.label_models, s.candidate_labels[j],
                                              s.dense_x)
    for j in range(nnz):
        if features[j] < f.n_label_ids:
            s.dense_x[features[j]] = 0.0


cdef void margins_by_feature(const ForestArrays* f, Scratch* s, const index_t* features,
                             const float32_t* values, index_t nnz,
                             index_t size) noexcept nogil:
    """Write the margins of the `size` candidates, reading the weights of each
    of the example's features and keeping the candidates' (``s.candidate_slot``)."""
    cdef const LabelModelView* models = &f.label_models
    cdef index_t j, feature, slot
    cdef offset_t p
    cdef float64_t x
    for j in range(size):
        s.candidate_slot[s.candidate_labels[j]] = j + 1
        s.candidate_margins[j] = models.bias[s.candidate_labels[j]]
    for j in range(nnz):
        feature = features[j]
        if feature >= f.n_label_ids:
            continue
        x = values[j]
        for p in range(models.column_indptr[feature], models.column_indptr[feature + 1]):
            slot = s.candidate_slot[models.column_labels[p]]
            if slot:
                s.candidate_margins[slot - 1] += <float64_t>models.column_values[p] * x
    for j in range(size):
        s.candidate_slot[s.candidate_labels[j]] = 0


cdef inline void clear_labels(Scratch* s) noexcept nogil:
    """Reset the label accumulator through the touched list."""
    cdef index_t j
    for j in range(s.n_touched):
        s.label_score[s.touched[j]] = 0.0
        s.label_seen[s.touched[j]] = 0
    s.n_touched = 0


# --------------------------------------------------------------------------
# Top-k selection and sorted output
# --------------------------------------------------------------------------

cdef void select_top_k(Scratch* s, index_t k, index_t* out_labels,
                       float32_t* out_scores) noexcept nogil:
    """Write the best ``min(k, n_touched)`` labels, best first, ranking on the
    float32 scores that are returned, so that ties are visible to the caller
    and broken by increasing label id (``_top_k.pxd``). The output row is the
    heap; positions past the candidates keep the caller's padding.
    """
    cdef index_t size = 0, j, label
    for j in range(s.n_touched):
        label = s.touched[j]
        size = offer_top_k(out_labels, out_scores, size, k, label,
                           <float32_t>s.label_score[label])
    sort_top_k(out_labels, out_scores, size, out_labels, out_scores)


cdef index_t rank_touched(Scratch* s, index_t k, bint as_float32) noexcept nogil:
    """Move the best ``min(k, n_touched)`` touched labels, with their scores,
    to the front of ``s.ranked`` in no particular order; return how many.
    `as_float32` ranks on the scores rounded as `select_top_k` returns them.
    """
    cdef index_t j, label
    for j in range(s.n_touched):
        label = s.touched[j]
        s.ranked[j].label = label
        s.ranked[j].score = (<float32_t>s.label_score[label] if as_float32
                             else s.label_score[label])
    partition_top_k(s.ranked, s.n_touched, k)
    return min(k, s.n_touched)


cdef void select_best_k(Scratch* s, index_t k, index_t* out_labels,
                        float32_t* out_scores) noexcept nogil:
    """`select_top_k`'s labels and scores in no particular order."""
    cdef index_t j, size = rank_touched(s, k, True)
    for j in range(size):
        out_labels[j] = s.ranked[j].label
        out_scores[j] = <float32_t>s.ranked[j].score


cdef int compare_index(const void* a, const void* b) noexcept nogil:
    cdef index_t x = (<const index_t*>a)[0], y = (<const index_t*>b)[0]
    return (x > y) - (x < y)


cdef void append_sorted_scores(Scratch* s, RowBuffer* buffer) noexcept nogil:
    """Append the example's (label, score) pairs to `buffer`, by label id."""
    cdef index_t j
    if not reserve_pairs(buffer, s.n_touched):
        return
    qsort(s.touched, s.n_touched, sizeof(index_t), compare_index)
    for j in range(s.n_touched):
        buffer.indices[buffer.size + j] = s.touched[j]
        buffer.values[buffer.size + j] = <float32_t>s.label_score[s.touched[j]]
    buffer.size += s.n_touched
