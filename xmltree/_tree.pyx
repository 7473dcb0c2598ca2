"""Forest storage and multi-leaf prediction kernels for LdSM ensembles.

A :class:`Forest` concatenates the flat trees returned by
``xmltree._ldsm.build_tree`` into one set of arrays (see ``_tree.pxd``), so a
single ``prange`` over blocks of examples descends every tree without the GIL.

Prediction follows Algorithm 2 of Majzoubi & Choromanska (2020): an example
descends from the root to *every* child chosen by the routing rule of
``_routing.pxd``; a tree scores the example with the average of the
normalised label histograms of all the leaves reached (or, as an option,
their sum), and the ensemble averages the trees. Regressor scores are
computed exactly as during training (float64, starting from the bias, then
features in increasing order), so an example follows at prediction time the
children it was sent to while the tree was built.

Speed comes from these choices, each measured on Delicious and Bibtex: a
block of up to MAX_BLOCK_SIZE examples descends each tree together, node by
node, so a node's weights are fetched once for all the examples that reach
it and the examples' independent loads overlap (2-3x faster descent than one
example at a time); a node's sparse weights are spread once per block into
a feature-major per-thread block, where each example looks its few features
up, four examples in step so that their chains of additions overlap; a
node that few examples reach has them binary-search its sparse weights
instead (measured on Amazon-670K-shaped data too); the block's features
are gathered once as their slots in the node block; scores are accumulated
in a dense per-thread buffer, reset through the list of labels it touched,
and with few labels that list is found afterwards by one scan instead of
being kept entry by entry.
"""

cimport cython
cimport numpy as cnp
from cython.parallel cimport prange, threadid
from libc.stdint cimport uint8_t
from libc.math cimport exp, log, log1p
from libc.stdlib cimport calloc, free, malloc, qsort, realloc

import numpy as np
import scipy.sparse as sp

cdef extern from *:
    """
    #if defined(__GNUC__)
    #define XMLTREE_PREFETCH(address) __builtin_prefetch(address)
    #else
    #define XMLTREE_PREFETCH(address) ((void)(address))
    #endif
    """
    # Hint the CPU to start loading a cache line (GCC/Clang builtin; a no-op
    # elsewhere).
    void prefetch "XMLTREE_PREFETCH" (const void* address) noexcept nogil

from ._label_models cimport label_margin
from ._routing cimport route
from ._row_buffer cimport (RowBuffer, allocate_row_buffers, check_row_buffers, free_row_buffers,
                           gather_rows, reserve_pairs)
from ._sparse cimport CSRView, csr_view, row_indices, row_nnz, row_values
from ._top_k cimport offer_top_k, sort_top_k
from ._types cimport float32_t, float64_t, index_t, offset_t

from ._flat_tree import MAX_ARITY, check_tree, concatenate_trees, routing_threshold
from ._validation import check_features
from .exceptions import ModelFormatError

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
        Flat trees as returned by ``xmltree._ldsm.build_tree``; each is
        validated with :func:`check_tree` (raising ``ModelFormatError``)
        before anything else happens.
    arity : int
        Children per internal node, the same for every tree.
    n_features, n_labels : int
        Sizes of the feature and label spaces.
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
    release : bool, default=False
        Remove each tree's weight and leaf arrays from its dict as soon as
        they are copied, so that a caller owning the dicts holds the model
        about 1.5 times rather than twice while the forest is built.
    check_trees : bool, default=True
        Check every tree with :func:`check_tree` (and the sizes) first, as
        trees read from a file must be. ``False`` is for trees the builder
        just grew or that a forest already holds; the hyper-parameters are
        the estimator's, checked by it.
    """

    def __init__(self, trees, *, arity, n_features, n_labels, routing,
                 leaf_scores="distribution", leaf_aggregation="mean", descent_threshold=None,
                 release=False, check_trees=True):
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
        self.threshold = (routing_threshold(routing) if descent_threshold is None
                          else descent_threshold)
        self.sum_leaves = leaf_aggregation == "sum"
        self.label_indptr = None
        arrays = concatenate_trees(list(trees), arity, n_features, release)
        self.tree_offset = arrays["tree_offset"]
        self.first_child = arrays["first_child"]
        self.weight_indptr = arrays["weight_indptr"]
        self.weight_indices = arrays["weight_indices"]
        self.weight_values = arrays["weight_values"]
        self.bias = arrays["bias"]
        self.feature_slot = arrays["feature_slot"]
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
        cdef const index_t[::1] weight_indices = self.weight_indices
        cdef const float32_t[::1] weight_values = self.weight_values
        cdef const float32_t[::1] bias = self.bias
        cdef const index_t[::1] feature_slot = self.feature_slot
        cdef const offset_t[::1] leaf_indptr = self.leaf_indptr
        cdef const index_t[::1] leaf_labels = self.leaf_labels
        cdef const float32_t[::1] leaf_values = self.leaf_values
        self.arrays.n_trees = tree_offset.shape[0] - 1
        self.arrays.arity = self.arity
        self.arrays.n_features = self.n_features
        self.arrays.n_labels = self.n_labels
        self.arrays.max_tree_nodes = int(np.max(np.diff(self.tree_offset)))
        self.arrays.threshold = self.threshold
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
        self.arrays.feature_slot = &feature_slot[0]
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
            finite values, as ``xmltree._flat_tree.check_label_models`` checks.
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
        self.label_values = weights.data
        self.label_bias = bias
        # Each thread holds n_candidates slots: never more than there are labels.
        self.n_candidates = min(n_candidates, self.n_labels)
        self.histogram_weight = histogram_weight
        self.margin_scale = margin_scale
        cdef const offset_t[::1] indptr = self.label_indptr
        cdef const index_t[::1] indices = self.label_indices
        cdef const float32_t[::1] values = self.label_values
        cdef const float32_t[::1] bias_view = self.label_bias
        self.arrays.label_models.indptr = &indptr[0]
        self.arrays.label_models.indices = &indices[0] if indices.shape[0] else NULL
        self.arrays.label_models.values = &values[0] if values.shape[0] else NULL
        self.arrays.label_models.bias = &bias_view[0]
        self.arrays.n_candidates = self.n_candidates
        self.arrays.histogram_weight = histogram_weight
        self.arrays.margin_scale = margin_scale
        self.arrays.rescore = True

    @property
    def n_trees(self):
        """Number of trees in the forest."""
        return self.arrays.n_trees

    def predict_top_k(self, X, index_t k, int n_threads=1, bint check_input=True):
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

        Returns
        -------
        labels : numpy.ndarray of int32, shape (n_samples, k)
            Best labels first; equal scores are ordered by increasing label
            id. Rows with fewer than ``k`` labels of non-zero score are
            padded with label -1 and score 0.
        scores : numpy.ndarray of float32, shape (n_samples, k)
            Averaged ensemble scores of ``labels``.
        """
        if check_input:
            if k < 1:
                raise ValueError(f"k must be >= 1, got {k}")
            X = check_features(X, n_features=self.n_features)
        labels = np.full((X.shape[0], k), -1, dtype=np.int32)
        scores = np.zeros((X.shape[0], k), dtype=np.float32)
        cdef TopKOutput out
        out.labels = <index_t*>cnp.PyArray_DATA(labels)
        out.scores = <float32_t*>cnp.PyArray_DATA(scores)
        out.k = k
        out.heap_size = min(k, self.n_labels)
        predict_blocks(&self.arrays, X, n_threads, rank_block, &out)
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
            predict_blocks(&self.arrays, X, n_threads, collect_block_scores, &out)
            check_row_buffers(out.buffers, n_threads)
            return gather_rows(out.buffers, row_thread, row_start, row_nnz, self.n_labels)
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
        predict_blocks(&self.arrays, X, n_threads, count_block_leaves,
                       <index_t*>cnp.PyArray_DATA(counts))
        return counts


# --------------------------------------------------------------------------
# The block-parallel scaffold and what it does with each block
# --------------------------------------------------------------------------

cdef int predict_blocks(const ForestArrays* f, X, int n_threads, BlockAction action,
                        void* output) except -1:
    """Descend the rows of the checked matrix `X` through every tree, block by
    block on `n_threads` threads, and hand each descended block to `action`
    with the thread's scratch (the one prediction loop of the forest).

    Raises MemoryError if a thread's scratch could not grow.
    """
    cdef CSRView rows = csr_view(X)
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
                descend_block(f, scratch, &rows, first, n_rows)
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
        select_top_k(s, out.heap_size, out.labels + at, out.scores + at)
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
    s.n_touched = 0
    s.stack = <index_t*>malloc(f.max_tree_nodes * sizeof(index_t))
    s.stack_start = <offset_t*>malloc(f.max_tree_nodes * sizeof(offset_t))
    s.stack_count = <index_t*>malloc(f.max_tree_nodes * sizeof(index_t))
    # The root's segment plus one level of children; deeper levels grow it.
    s.block_size = block_size
    s.members_capacity = <offset_t>(f.arity + 1) * block_size
    s.members = <index_t*>malloc(s.members_capacity * sizeof(index_t))
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
    s.node_block = <float32_t*>calloc(<offset_t>f.n_features * f.arity, sizeof(float32_t))
    s.goes = <uint8_t*>malloc(f.arity * sizeof(uint8_t))
    if f.rescore:
        s.dense_x = <float32_t*>calloc(f.n_features, sizeof(float32_t))
        s.candidate_labels = <index_t*>malloc(f.n_candidates * sizeof(index_t))
        s.candidate_scores = <float64_t*>malloc(f.n_candidates * sizeof(float64_t))
        if s.dense_x == NULL or s.candidate_labels == NULL or s.candidate_scores == NULL:
            return -1
    if (s.label_score == NULL or s.label_seen == NULL
            or s.touched == NULL or s.stack == NULL or s.stack_start == NULL
            or s.stack_count == NULL or s.members == NULL or s.child_count == NULL
            or s.pairs == NULL
            or s.block_leaves == NULL or s.block_first_leaf == NULL
            or s.block_n_leaves == NULL
            or s.node_scores == NULL or s.example_start == NULL or s.node_block == NULL
            or s.goes == NULL):
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
        free(scratches[t].stack)
        free(scratches[t].stack_start)
        free(scratches[t].stack_count)
        free(scratches[t].members)
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
        free(scratches[t].dense_x)
        free(scratches[t].candidate_labels)
        free(scratches[t].candidate_scores)
    free(scratches)


# --------------------------------------------------------------------------
# Descent kernels
# --------------------------------------------------------------------------

cdef bint gather_block_features(const ForestArrays* f, Scratch* s, const CSRView* rows,
                                index_t first, index_t n_rows) noexcept nogil:
    """Copy the slots in a node block (`feature_slot`) of the features of
    examples ``first .. first + n_rows - 1``, so that scoring an example at
    each node it reaches does not look them up again, and point at their
    values and ids in `rows`. False if out of memory.

    Four bytes an entry, so that a large block's features stay in cache: as
    64-bit offsets in the block and float64 values (sixteen bytes), the
    descent was 10-15% slower on Amazon-670K-shaped data, Delicious and
    Yahoo Arts.
    """
    cdef offset_t begin = rows.indptr[first], n_entries, p
    cdef index_t k
    n_entries = rows.indptr[first + n_rows] - begin
    if not reserve(<void**>&s.block_slots, &s.block_slots_capacity, n_entries, sizeof(index_t)):
        return False
    for k in range(n_rows + 1):
        s.example_start[k] = rows.indptr[first + k] - begin
    s.feature_index = rows.indices + begin if rows.indices != NULL else NULL
    s.feature_value = rows.values + begin if rows.values != NULL else NULL
    for p in range(n_entries):
        s.block_slots[p] = f.feature_slot[rows.indices[begin + p]]
    return True


cdef inline void score_node(const float32_t* block, index_t arity, const Scratch* s,
                            index_t k, float64_t* scores) noexcept nogil:
    """Add the products of example `k` of the block with the node weights
    spread in `block` to ``scores[0 .. arity - 1]``, in increasing feature
    order."""
    cdef index_t m
    cdef offset_t p
    cdef const float32_t* weights
    if arity == 2:
        score_binary_node(block, s, k, scores)
        return
    for p in range(s.example_start[k], s.example_start[k + 1]):
        weights = block + <offset_t>s.block_slots[p] * arity
        for m in range(arity):
            scores[m] += <float64_t>s.feature_value[p] * <float64_t>weights[m]


cdef inline void score_binary_node(const float32_t* block, const Scratch* s,
                                         index_t k, float64_t* scores) noexcept nogil:
    """`score_node` for the common arity 2, with both sums in registers
    (same operations, same order)."""
    cdef float64_t left = scores[0], right = scores[1], value
    cdef offset_t p, j
    for p in range(s.example_start[k], s.example_start[k + 1]):
        j = 2 * <offset_t>s.block_slots[p]
        value = s.feature_value[p]
        left += value * <float64_t>block[j]
        right += value * <float64_t>block[j + 1]
    scores[0] = left
    scores[1] = right


cdef void score_binary_group(const float32_t* block, const Scratch* s,
                                   const index_t* examples, float64_t* scores) noexcept nogil:
    """`score_binary_node` for the SCORE_GROUP (4) examples of the block
    listed in `examples`, example g's scores at ``scores[2 g]``, ``scores[2 g + 1]``.

    Each example's two sums form a chain of dependent float64 additions (the
    order is fixed by the routing contract); advancing four examples in step
    keeps eight independent chains in flight instead of two. Each example
    still adds its own products in its own order, so its scores are exactly
    those of `score_binary_node`.
    """
    cdef offset_t p0 = s.example_start[examples[0]], p1 = s.example_start[examples[1]]
    cdef offset_t p2 = s.example_start[examples[2]], p3 = s.example_start[examples[3]]
    cdef offset_t q, common
    cdef float64_t l0 = scores[0], r0 = scores[1], l1 = scores[2], r1 = scores[3]
    cdef float64_t l2 = scores[4], r2 = scores[5], l3 = scores[6], r3 = scores[7]
    cdef const index_t* slot = s.block_slots
    cdef const float32_t* value = s.feature_value
    cdef const float32_t* weights
    cdef float64_t x
    common = min(min(s.example_start[examples[0] + 1] - p0,
                     s.example_start[examples[1] + 1] - p1),
                 min(s.example_start[examples[2] + 1] - p2,
                     s.example_start[examples[3] + 1] - p3))
    for q in range(common):
        weights = block + 2 * <offset_t>slot[p0 + q]
        x = value[p0 + q]
        l0 += x * <float64_t>weights[0]
        r0 += x * <float64_t>weights[1]
        weights = block + 2 * <offset_t>slot[p1 + q]
        x = value[p1 + q]
        l1 += x * <float64_t>weights[0]
        r1 += x * <float64_t>weights[1]
        weights = block + 2 * <offset_t>slot[p2 + q]
        x = value[p2 + q]
        l2 += x * <float64_t>weights[0]
        r2 += x * <float64_t>weights[1]
        weights = block + 2 * <offset_t>slot[p3 + q]
        x = value[p3 + q]
        l3 += x * <float64_t>weights[0]
        r3 += x * <float64_t>weights[1]
    scores[0] = l0
    scores[1] = r0
    scores[2] = l1
    scores[3] = r1
    scores[4] = l2
    scores[5] = r2
    scores[6] = l3
    scores[7] = r3
    # The longer examples finish alone, continuing in their own order.
    finish_binary_scores(block, s, p0 + common, s.example_start[examples[0] + 1], scores)
    finish_binary_scores(block, s, p1 + common, s.example_start[examples[1] + 1], scores + 2)
    finish_binary_scores(block, s, p2 + common, s.example_start[examples[2] + 1], scores + 4)
    finish_binary_scores(block, s, p3 + common, s.example_start[examples[3] + 1], scores + 6)


cdef inline void finish_binary_scores(const float32_t* block, const Scratch* s, offset_t begin,
                                      offset_t end, float64_t* scores) noexcept nogil:
    """Add the products of gathered features ``begin .. end - 1`` to a binary
    node's two scores."""
    cdef offset_t p
    cdef const float32_t* weights
    for p in range(begin, end):
        weights = block + 2 * <offset_t>s.block_slots[p]
        scores[0] += <float64_t>s.feature_value[p] * <float64_t>weights[0]
        scores[1] += <float64_t>s.feature_value[p] * <float64_t>weights[1]


cdef index_t score_examples(const ForestArrays* f, index_t node, const Scratch* s,
                            const index_t* examples, index_t n_examples,
                            bint spread) noexcept nogil:
    """Score the next examples of `node` with every one of its regressors,
    looking the weights up in ``s.node_block`` if they are `spread` there,
    else in the node's sparse regressors (`search_node_weights`).

    Scores SCORE_GROUP examples of `examples` at once when the weights are
    spread, the node is binary and that many remain, otherwise the first
    one only; writes example g's M scores at ``s.node_scores[g M]`` and
    returns how many examples it scored.

    Follows the contract of ``_routing.pxd`` exactly as the trainer
    (``_optim.score``) does: start from the bias, add the float64 products
    in increasing feature order. Features of the example that the node has
    no weight for add ``0.0``, which leaves a float64 sum unchanged (up to
    the sign of a zero sum, which routing does not see), so the routing is
    the same as training's.
    """
    cdef index_t g, m, arity = f.arity
    cdef index_t n_scored = (SCORE_GROUP if spread and arity == 2 and n_examples >= SCORE_GROUP
                             else 1)
    cdef offset_t regressor = <offset_t>node * arity
    for g in range(n_scored):
        for m in range(arity):
            s.node_scores[g * arity + m] = f.bias[regressor + m]
    if n_scored == SCORE_GROUP:
        score_binary_group(s.node_block, s, examples, s.node_scores)
    elif spread:
        score_node(s.node_block, arity, s, examples[0], s.node_scores)
    else:
        search_node_weights(f, node, s, examples[0], s.node_scores)
    return n_scored


cdef inline offset_t find_weight(const index_t* indices, offset_t n,
                                 index_t feature) noexcept nogil:
    """Position of `feature` in the sorted ``indices[0 .. n - 1]`` (n >= 1)
    if it is there, else of the last entry below it, or 0.

    Without branches on the data, so that no step is mispredicted and the
    searches of an example's next features start before this one ends."""
    cdef const index_t* base = indices
    cdef offset_t half
    while n > 1:
        half = n // 2
        base = base + half if base[half] <= feature else base
        n -= half
    return base - indices


cdef void search_node_weights(const ForestArrays* f, index_t node, const Scratch* s,
                              index_t k, float64_t* scores) noexcept nogil:
    """`score_node` for weights that are not spread: look each feature of
    example `k` of the block up in the node's sorted regressors.

    Adds the products `score_node` adds, in the same order: the feature's
    weight when the regressor has one, else 0.0 as the all-zero entries of
    the node block give, so the scores are the same bit for bit.
    """
    cdef index_t m
    cdef offset_t p, j, begin, n, regressor = <offset_t>node * f.arity
    cdef const index_t* indices
    cdef float64_t score, weight
    for m in range(f.arity):
        begin = f.weight_indptr[regressor + m]
        n = f.weight_indptr[regressor + m + 1] - begin
        indices = f.weight_indices + begin
        score = scores[m]
        for p in range(s.example_start[k], s.example_start[k + 1]):
            if n > 0:
                j = find_weight(indices, n, s.feature_index[p])
                weight = f.weight_values[begin + j] if indices[j] == s.feature_index[p] else 0.0
            else:
                weight = 0.0
            score += <float64_t>s.feature_value[p] * weight
        scores[m] = score


cdef bint spreading_pays(const ForestArrays* f, const Scratch* s, index_t node,
                         const index_t* examples, index_t count) noexcept nogil:
    """Whether spreading the weights of `node` for its `count` examples
    costs less than searching them for each example.

    Spreading writes every weight of the node and later clears it, about
    SPREAD_COST binary-search steps a weight; searching takes about log2
    (weights per regressor) steps per feature of each example and regressor.
    Deep in a large tree a node often receives one or two examples of the
    block: spreading its thousands of weights then costs several times
    more than looking their ~100 features up.
    """
    cdef offset_t regressor = <offset_t>node * f.arity
    cdef offset_t n_weights = f.weight_indptr[regressor + f.arity] - f.weight_indptr[regressor]
    cdef offset_t per_regressor = n_weights // f.arity, steps = 1, n_steps = 0
    cdef index_t i, k
    while per_regressor > 1:
        per_regressor //= 2
        steps += 1
    for i in range(count):
        k = examples[i]
        n_steps += (s.example_start[k + 1] - s.example_start[k]) * f.arity * steps
        if n_steps > SPREAD_COST * n_weights:
            return True
    return False


cdef void spread_node_weights(const ForestArrays* f, index_t node, float32_t* block,
                              bint clear) noexcept nogil:
    """Write the sparse regressors of `node` into the all-zero node `block`,
    feature-major (weight of child m for feature j at
    ``feature_slot[j] * arity + m``, so one cache line serves every child);
    with `clear`, zero those entries again."""
    cdef index_t m, arity = f.arity
    cdef offset_t p, regressor = <offset_t>node * arity
    for m in range(arity):
        for p in range(f.weight_indptr[regressor + m], f.weight_indptr[regressor + m + 1]):
            block[<offset_t>f.feature_slot[f.weight_indices[p]] * arity + m] = (
                0 if clear else f.weight_values[p])


cdef index_t split_node(const ForestArrays* f, Scratch* s, index_t depth) noexcept nogil:
    """Route the examples of the internal node on top of the descent stack
    (popped by the caller, still at ``s.stack[depth]``) to its children.

    Every example is scored and routed exactly as it would be alone, so it
    reaches the same children. Pushes the children that received examples,
    rightmost first, and returns the new stack depth, or -1 if memory runs
    out. Child m's segment of ``s.members`` goes past the node's own, the
    rightmost child lowest: segments then lie in stack order, and the node
    popped next always owns the topmost segment, so the space above it is
    free.
    """
    cdef index_t node = s.stack[depth], arity = f.arity, i = 0, g, k, m, n_scored
    cdef offset_t start = s.stack_start[depth], base
    cdef index_t count = s.stack_count[depth]
    cdef bint spread = spreading_pays(f, s, node, s.members + start, count)
    base = start + count
    if not reserve(<void**>&s.members, &s.members_capacity,
                   base + <offset_t>arity * count, sizeof(index_t)):
        return -1
    for m in range(arity):
        s.child_count[m] = 0
    # Spreading the weights once makes each example cost its own features,
    # looked up in a block that stays in cache. (Per-node dense copies of the
    # weights, read from memory, were slower on Bibtex and no faster on
    # Delicious; walking the sparse weights for a single example no faster.)
    # A node that few examples reach has them binary-search its sparse
    # weights instead (`spreading_pays`).
    if spread:
        spread_node_weights(f, node, s.node_block, False)
    while i < count:
        n_scored = score_examples(f, node, s, s.members + start + i, count - i, spread)
        for g in range(n_scored):
            k = s.members[start + i]
            route(s.node_scores + g * arity, arity, f.threshold, s.goes)
            for m in range(arity):
                # Branch-free append: the slot is overwritten unless the
                # example goes to child m (child_count[m] <= i < count, so it
                # stays in the child's segment).
                s.members[base + <offset_t>(arity - 1 - m) * count + s.child_count[m]] = k
                s.child_count[m] += s.goes[m]
            i += 1
    if spread:
        spread_node_weights(f, node, s.node_block, True)
    for m in range(arity - 1, -1, -1):
        if s.child_count[m] > 0:
            s.stack[depth] = f.first_child[node] + m
            s.stack_start[depth] = base + <offset_t>(arity - 1 - m) * count
            s.stack_count[depth] = s.child_count[m]
            depth += 1
    return depth


cdef offset_t descend_tree(const ForestArrays* f, Scratch* s, index_t n_rows,
                           index_t tree) noexcept nogil:
    """Descend one tree with the `n_rows` examples of the block (gathered by
    `gather_block_features`) together, node by node, and list the leaves
    they reach in ``s.pairs``.

    The descent is depth-first, leftmost child first, so the pairs come in
    left-to-right leaf order, and each example's leaves in the order its own
    descent would reach them. Each node is pushed at most once (the tree
    property checked at load time), so the stack never exceeds the tree's
    size. Returns the number of pairs, or -1 if memory runs out.
    """
    cdef index_t depth = 1, k, i, node
    cdef offset_t n_pairs = 0, start
    for k in range(n_rows):
        s.members[k] = k
    s.stack[0] = <index_t>f.tree_offset[tree]
    s.stack_start[0] = 0
    s.stack_count[0] = n_rows
    while depth > 0:
        depth -= 1
        node = s.stack[depth]
        if f.first_child[node] >= 0:
            depth = split_node(f, s, depth)
            if depth < 0:
                return -1
            continue
        if not reserve(<void**>&s.pairs, &s.pairs_capacity,
                       n_pairs + s.stack_count[depth], sizeof(LeafPair)):
            return -1
        start = s.stack_start[depth]
        for i in range(s.stack_count[depth]):
            s.pairs[n_pairs].example = s.members[start + i]
            s.pairs[n_pairs].leaf = node
            n_pairs += 1
    return n_pairs


cdef bint reserve(void** array, offset_t* capacity, offset_t needed,
                  size_t item_size) noexcept nogil:
    """Grow ``*array`` to hold `needed` items; False if out of memory."""
    cdef offset_t grown_capacity
    cdef void* grown
    if needed <= capacity[0]:
        return True
    grown_capacity = max(needed, 2 * capacity[0])
    grown = realloc(array[0], grown_capacity * item_size)
    if grown == NULL:
        return False
    array[0] = grown
    capacity[0] = grown_capacity
    return True


cdef offset_t store_tree_leaves(Scratch* s, index_t tree, index_t n_rows,
                                offset_t n_pairs, offset_t used) noexcept nogil:
    """Sort the pairs of `tree` by example into ``s.block_leaves`` from
    position `used` (stable, so each example keeps its left-to-right order);
    return the new used length, or -1 if memory runs out."""
    cdef offset_t* first_leaf = s.block_first_leaf + <offset_t>tree * s.block_size
    cdef index_t* n_leaves = s.block_n_leaves + <offset_t>tree * s.block_size
    cdef offset_t p
    cdef index_t k
    if not reserve(<void**>&s.block_leaves, &s.block_capacity, used + n_pairs,
                   sizeof(index_t)):
        return -1
    for k in range(n_rows):
        n_leaves[k] = 0
    for p in range(n_pairs):
        n_leaves[s.pairs[p].example] += 1
    # Each example's leaves fill its range from the end, the pairs taken last
    # to first, so its first_leaf ends at the range's start (no cursor
    # array: a block can be too large for one on the stack).
    for k in range(n_rows):
        used += n_leaves[k]
        first_leaf[k] = used
    for p in range(n_pairs - 1, -1, -1):
        k = s.pairs[p].example
        first_leaf[k] -= 1
        s.block_leaves[first_leaf[k]] = s.pairs[p].leaf
    return used


cdef void descend_block(const ForestArrays* f, Scratch* s, const CSRView* rows,
                        index_t first, index_t n_rows) noexcept nogil:
    """Record the leaves examples ``first .. first + n_rows - 1`` reach in
    every tree (``n_rows <= s.block_size``).

    Goes tree by tree over the whole block (see `descend_tree`). Sets
    ``s.failed`` if memory runs out.
    """
    cdef index_t tree
    cdef offset_t used = 0, n_pairs
    if not gather_block_features(f, s, rows, first, n_rows):
        s.failed = True
        return
    for tree in range(f.n_trees):
        n_pairs = descend_tree(f, s, n_rows, tree)
        if n_pairs >= 0:
            used = store_tree_leaves(s, tree, n_rows, n_pairs, used)
        if n_pairs < 0 or used < 0:
            s.failed = True
            return


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
    for its ``n_candidates`` best labels by histogram score; the others go."""
    cdef index_t j, label, size = 0
    cdef index_t nnz = row_nnz(s.rows, row)
    cdef const index_t* features = row_indices(s.rows, row)
    cdef const float32_t* values = row_values(s.rows, row)
    cdef float64_t margin, log_sigmoid
    for j in range(s.n_touched):
        label = s.touched[j]
        size = offer_top_k(s.candidate_labels, s.candidate_scores, size, f.n_candidates,
                           label, s.label_score[label])
    clear_labels(s)
    for j in range(nnz):
        s.dense_x[features[j]] = values[j]
    for j in range(size):
        label = s.candidate_labels[j]
        margin = f.margin_scale * label_margin(&f.label_models, label, s.dense_x)
        # log(sigmoid(m)), without overflow for large |m|.
        log_sigmoid = -log1p(exp(-margin)) if margin > 0 else margin - log1p(exp(margin))
        s.label_score[label] = exp((1.0 - f.histogram_weight) * log_sigmoid
                                   + f.histogram_weight * log(s.candidate_scores[j]))
        s.label_seen[label] = 1
        s.touched[j] = label
    s.n_touched = size
    for j in range(nnz):
        s.dense_x[features[j]] = 0.0


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
