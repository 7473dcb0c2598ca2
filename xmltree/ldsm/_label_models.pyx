"""Training of per-label linear classifiers by dual coordinate descent.

Each label gets an L2-regularised squared-hinge ("L2-loss SVM") classifier,

    min_w  1/2 |w|^2 + C sum_i max(0, 1 - y_i w.[x_i, 1])^2,

over its own set of examples (for LdSM: the training examples whose tree
neighbourhood holds the label, see ``xmltree.ldsm``), with targets y_i = +1 for
the examples carrying the label and -1 for the others. The solver is the dual
coordinate descent of Hsieh et al. (ICML 2008), the method of LIBLINEAR: one
dual variable alpha_i >= 0 per example, updated in closed form in a random
order, with w = sum_i alpha_i y_i [x_i, 1] kept up to date, so that a pass
costs O(non-zeros of the examples). The bias is the weight of an extra
constant feature 1, regularised like the others, as LIBLINEAR's ``-B 1``.

The descent stops once the projected gradients of a pass span at most
``tolerance`` (LIBLINEAR's criterion; its default for this dual is 0.1), or
after ``max_epochs`` passes; LIBLINEAR's shrinking leaves the examples that
are already far on the right side out of the passes, and the first passes
visit the positives and a sample of the negatives only (see ``_descend``).
Weights below ``weight_threshold`` in magnitude are dropped: the stored model
stays O(useful weights), as Parabel's.

Labels are independent: they are trained in parallel (``prange``), each with
its own generator seeded from ``seed`` and the label id, so the result does
not depend on the number of threads.
"""

cimport numpy as cnp
from cython.parallel cimport prange, threadid
from libc.math cimport INFINITY, fabs
from libc.stdint cimport int8_t, int64_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, qsort

import numpy as np

from .._fit_progress import check_counters

from .._kernels._random cimport rng_seed, rng_shuffle, rng_state, rng_uniform
from .._kernels._row_buffer cimport (RowBuffer, allocate_row_buffers, check_row_buffers, free_row_buffers,
                           gather_rows, reserve_pairs)
from .._kernels._sparse cimport CSRView, csr_view, prefetch_row, row_nnz
from .._kernels._types cimport float32_t, float64_t, index_t, offset_t

__all__ = ["train_label_models"]

cnp.import_array()


cdef enum:
    # A label's rows are copied from rows spread through X, so each row is a
    # cache miss: its loading starts this many examples ahead, while the rows
    # before it are copied.
    PREFETCH_AHEAD = 2


cdef struct SolverSettings:
    # Hyper-parameters of the dual coordinate descent, shared by every label.
    float64_t diagonal           # 1 / (2 C): the squared-hinge term of the dual
    index_t max_epochs           # passes over a label's examples, at most
    float64_t tolerance          # stop when a pass's projected gradients span <= this
    float64_t first_negatives    # share of the negatives in the first passes' set
    float32_t weight_threshold   # stored weights need |w| >= this
    uint64_t seed                # generator seed, combined with the label id
    index_t first_label          # id of the first label of this call, for the seeds


cdef struct SolverScratch:
    # One thread's working memory, sized once for the largest label. A label
    # numbers the features of its examples from 0 (its local ids), so that
    # its weights lie together (see `_copy_rows`).
    float64_t* weights           # (n_features,) dense w by local id, zero between labels
    index_t* local_id            # (n_features,) a feature's local id, -1 between labels
    index_t* feature             # (n_features,) the feature of each local id
    offset_t* row_start          # (max examples of a label + 1,) the label's examples'
    index_t* entry_index         # (max entries of a label,) rows, copied in order over
    float32_t* entry_value       # local ids
    float64_t* alpha             # (max examples of a label,) dual variables
    index_t* order               # (same,) visiting order of the examples


cdef struct LabelOutput:
    # Where each label's weights went (see _row_buffer.pxd).
    RowBuffer* buffers           # (n_threads,)
    index_t* label_buffer        # (n_labels,) buffer holding the label's weights
    offset_t* label_start        # (n_labels,) first pair of the label in it
    offset_t* label_nnz          # (n_labels,) weights kept
    float32_t* bias              # (n_labels,) biases
    int64_t* done                # (n_threads,) labels each thread finished, or NULL


def train_label_models(X, label_indptr, label_examples, label_targets, *, double C,
                       int max_epochs, double tolerance, double first_negatives,
                       double weight_threshold, seed, int n_threads=1, index_t first_label=0,
                       progress=None):
    """Train one squared-hinge classifier per label.

    Parameters
    ----------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features)
        Features as ``xmltree._validation.check_features`` returns them.
    label_indptr : numpy.ndarray of int64, shape (n_labels + 1,)
        Label ``l`` is trained on examples ``label_examples[label_indptr[l]:
        label_indptr[l + 1]]``.
    label_examples : numpy.ndarray of int32
        Row ids of ``X``, each < n_samples.
    label_targets : numpy.ndarray of int8, same length
        +1 where the example carries the label, -1 elsewhere.
    C : float
        Weight of the loss against the regulariser, > 0.
    max_epochs : int
        Passes over a label's examples, at most; >= 1.
    tolerance : float
        Stopping tolerance: largest minus smallest projected gradient of a
        pass, >= 0.
    first_negatives : float
        Share of a label's negatives, drawn at random, that its first passes
        visit beside every positive, in [0, 1]: the passes over all the
        examples start once these have converged, or after half of
        `max_epochs` (see ``_descend``).
    weight_threshold : float
        Stored weights satisfy ``|w| >= weight_threshold``.
    seed : int
        Seed in ``[0, 2**64)`` of the visiting orders.
    n_threads : int, default=1
        OpenMP threads.
    first_label : int, default=0
        The label id of the first label given: a label's generator is seeded
        with its id, so labels trained in blocks (one call per block) get the
        classifiers of one call over all of them.
    progress : numpy.ndarray of int64, shape (n_threads,), optional
        Counters of the labels finished, one per thread, each advanced by
        its thread alone while the call runs: another Python thread may read
        their sum to show progress (``xmltree._fit_progress.counted_bar``).

    Returns
    -------
    weights : scipy.sparse.csr_matrix of float32, shape (n_labels, n_features)
        One row per label, sorted feature ids, int64 row pointers and int32
        feature ids.
    bias : numpy.ndarray of float32, shape (n_labels,)
        The labels' biases. A label without examples gets an empty row and
        a zero bias.
    """
    cdef index_t n_labels = label_indptr.shape[0] - 1
    _check_problem(X, label_indptr, label_examples, label_targets, C, max_epochs,
                   first_negatives, n_threads)
    if first_label < 0:
        raise ValueError("first_label must be >= 0")
    check_counters(progress, n_threads, "progress")
    cdef CSRView rows = csr_view(X)
    cdef const offset_t[::1] indptr = label_indptr
    cdef const index_t[::1] examples = label_examples
    cdef const int8_t[::1] targets = label_targets
    cdef const float64_t[::1] squared_norms = _squared_norms(X)
    cdef SolverSettings settings
    settings.diagonal = 0.5 / C
    settings.max_epochs = max_epochs
    settings.tolerance = tolerance
    settings.first_negatives = first_negatives
    settings.weight_threshold = <float32_t>weight_threshold
    settings.seed = <uint64_t>seed
    settings.first_label = first_label
    label_buffer = np.zeros(n_labels, dtype=np.int32)
    label_start = np.zeros(n_labels, dtype=np.int64)
    label_nnz = np.zeros(n_labels, dtype=np.int64)
    bias = np.zeros(n_labels, dtype=np.float32)
    cdef LabelOutput out
    out.label_buffer = <index_t*>cnp.PyArray_DATA(label_buffer)
    out.label_start = <offset_t*>cnp.PyArray_DATA(label_start)
    out.label_nnz = <offset_t*>cnp.PyArray_DATA(label_nnz)
    out.bias = <float32_t*>cnp.PyArray_DATA(bias)
    out.done = NULL if progress is None else <int64_t*>cnp.PyArray_DATA(progress)
    cdef index_t largest = int(np.max(np.diff(label_indptr), initial=0))
    cdef offset_t largest_entries = _largest_label_entries(&rows, label_indptr, label_examples,
                                                           n_threads)
    cdef SolverScratch* scratches = _allocate_scratch(n_threads, rows.n_cols, largest,
                                                      largest_entries)
    out.buffers = NULL
    # Empty arrays have no element 0: NULL, never read (every label is then empty).
    cdef const index_t* examples_ptr = &examples[0] if examples.shape[0] else NULL
    cdef const int8_t* targets_ptr = &targets[0] if targets.shape[0] else NULL
    cdef const float64_t* norms_ptr = &squared_norms[0] if squared_norms.shape[0] else NULL
    cdef index_t label
    cdef int thread
    try:
        out.buffers = allocate_row_buffers(n_threads)
        with nogil:
            for label in prange(n_labels, num_threads=n_threads, schedule="dynamic"):
                thread = threadid()
                _train_label(&rows, &indptr[0], examples_ptr, targets_ptr, norms_ptr,
                             &settings, &scratches[thread], label, thread, &out)
        check_row_buffers(out.buffers, n_threads)
        weights = gather_rows(out.buffers, n_threads, label_buffer, label_start, label_nnz,
                              rows.n_cols)
        # The layout of the prediction kernels (scipy may narrow the pointers).
        weights.indptr = weights.indptr.astype(np.int64, copy=False)
        weights.indices = weights.indices.astype(np.int32, copy=False)
    finally:
        _free_scratch(scratches, n_threads)
        free_row_buffers(out.buffers, n_threads)
    return weights, bias


def _check_problem(X, label_indptr, label_examples, label_targets, C, max_epochs,
                   first_negatives, n_threads):
    """Check the layout of the arrays (their contents come from the estimator)."""
    if label_indptr.dtype != np.int64 or label_examples.dtype != np.int32:
        raise TypeError("label_indptr must be int64 and label_examples int32")
    if label_targets.dtype != np.int8 or label_targets.shape != label_examples.shape:
        raise TypeError("label_targets must be int8 and as long as label_examples")
    if label_indptr.shape[0] < 1 or label_indptr[-1] != label_examples.shape[0]:
        raise ValueError("label_indptr does not match label_examples")
    if not (C > 0 and max_epochs >= 1 and n_threads >= 1):
        raise ValueError("C, max_epochs and n_threads must be positive")
    if not 0 <= first_negatives <= 1:
        raise ValueError(f"first_negatives must be in [0, 1], got {first_negatives}")


cdef offset_t _largest_label_entries(const CSRView* X, const offset_t[::1] label_indptr,
                                     const index_t[::1] label_examples, int n_threads):
    """The most non-zeros the examples of one label hold together."""
    cdef index_t label, n_labels = label_indptr.shape[0] - 1
    entries = np.zeros(n_labels, dtype=np.int64)
    cdef offset_t[::1] out = entries
    # Empty arrays have no element 0: NULL, never read (every label is then empty).
    cdef const index_t* examples = &label_examples[0] if label_examples.shape[0] else NULL
    with nogil:
        for label in prange(n_labels, num_threads=n_threads, schedule="static"):
            out[label] = _label_entries(X, examples, label_indptr[label],
                                        label_indptr[label + 1])
    return int(entries.max(initial=0))


cdef inline offset_t _label_entries(const CSRView* X, const index_t* examples, offset_t first,
                                    offset_t end) noexcept nogil:
    """Non-zeros of the rows ``examples[first:end]``."""
    cdef offset_t p, entries = 0
    for p in range(first, end):
        entries += row_nnz(X, examples[p])
    return entries


def _squared_norms(X):
    """|x_i|^2 + 1 (the bias feature) of every row, as float64."""
    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    values = X.data.astype(np.float64)
    return np.bincount(rows, weights=values * values, minlength=X.shape[0]) + 1.0


cdef SolverScratch* _allocate_scratch(int n_threads, index_t n_features, index_t largest,
                                      offset_t largest_entries) except NULL:
    """One scratch per thread, ready for a first label (release with `_free_scratch`)."""
    cdef SolverScratch* scratches = <SolverScratch*>calloc(n_threads, sizeof(SolverScratch))
    if scratches == NULL:
        raise MemoryError()
    cdef int t
    cdef index_t j
    for t in range(n_threads):
        scratches[t].weights = <float64_t*>calloc(n_features, sizeof(float64_t))
        scratches[t].local_id = <index_t*>malloc(max(n_features, 1) * sizeof(index_t))
        scratches[t].feature = <index_t*>malloc(max(n_features, 1) * sizeof(index_t))
        scratches[t].row_start = <offset_t*>malloc((largest + 1) * sizeof(offset_t))
        scratches[t].entry_index = <index_t*>malloc(max(largest_entries, 1) * sizeof(index_t))
        scratches[t].entry_value = <float32_t*>malloc(max(largest_entries, 1)
                                                      * sizeof(float32_t))
        scratches[t].alpha = <float64_t*>malloc(max(largest, 1) * sizeof(float64_t))
        scratches[t].order = <index_t*>malloc(max(largest, 1) * sizeof(index_t))
        if (scratches[t].weights == NULL or scratches[t].local_id == NULL
                or scratches[t].feature == NULL or scratches[t].row_start == NULL
                or scratches[t].entry_index == NULL or scratches[t].entry_value == NULL
                or scratches[t].alpha == NULL or scratches[t].order == NULL):
            _free_scratch(scratches, n_threads)
            raise MemoryError("cannot allocate the label classifiers' scratch memory")
        for j in range(n_features):
            scratches[t].local_id[j] = -1
    return scratches


cdef void _free_scratch(SolverScratch* scratches, int n_threads) noexcept nogil:
    cdef int t
    if scratches == NULL:
        return
    for t in range(n_threads):
        free(scratches[t].weights)
        free(scratches[t].local_id)
        free(scratches[t].feature)
        free(scratches[t].row_start)
        free(scratches[t].entry_index)
        free(scratches[t].entry_value)
        free(scratches[t].alpha)
        free(scratches[t].order)
    free(scratches)


cdef void _train_label(const CSRView* X, const offset_t* label_indptr,
                       const index_t* label_examples, const int8_t* label_targets,
                       const float64_t* squared_norms, const SolverSettings* settings,
                       SolverScratch* s, index_t label, int thread,
                       LabelOutput* out) noexcept nogil:
    """Solve label `label`'s dual, then store its weights and bias."""
    cdef offset_t first = label_indptr[label]
    cdef index_t n = <index_t>(label_indptr[label + 1] - first)
    cdef const index_t* examples = label_examples + first
    cdef const int8_t* targets = label_targets + first
    cdef index_t n_local = _copy_rows(X, examples, n, s)
    cdef float64_t bias = _descend(examples, targets, n, squared_norms, settings, s, label)
    out.bias[label] = <float32_t>bias
    out.label_buffer[label] = thread
    _store_weights(s, n_local, settings.weight_threshold, &out.buffers[thread],
                   &out.label_start[label], &out.label_nnz[label])
    if out.done != NULL:
        out.done[thread] += 1


cdef index_t _copy_rows(const CSRView* X, const index_t* examples, index_t n,
                        SolverScratch* s) noexcept nogil:
    """Copy the rows of the label's `n` examples into ``s.entry_index`` and
    ``s.entry_value`` over local ids, numbered as first met, and return how
    many features they hold.

    The descent then reads the weights ``s.weights[:n_local]`` together
    rather than spread over all the features, and the rows in one buffer,
    not spread through X: a label's weights then fit in the faster caches.
    Each row keeps its entries' order, so every sum runs as over X itself.
    """
    cdef index_t i, j, n_local = 0
    cdef offset_t p, position = 0
    for i in range(n):
        if i + PREFETCH_AHEAD < n:
            prefetch_row(X, examples[i + PREFETCH_AHEAD])
        s.row_start[i] = position
        for p in range(X.indptr[examples[i]], X.indptr[examples[i] + 1]):
            j = X.indices[p]
            if s.local_id[j] < 0:
                s.local_id[j] = n_local
                s.feature[n_local] = j
                n_local += 1
            s.entry_index[position] = s.local_id[j]
            s.entry_value[position] = X.values[p]
            position += 1
    s.row_start[n] = position
    return n_local


cdef float64_t _descend(const index_t* examples, const int8_t* targets, index_t n,
                        const float64_t* squared_norms, const SolverSettings* settings,
                        SolverScratch* s, index_t label) noexcept nogil:
    """Dual coordinate descent over the label's examples, as `_copy_rows` left
    them, with LIBLINEAR's shrinking; return the bias. ``s.weights`` holds
    the weights by local id.

    Shrinking: an example whose alpha is 0 and whose gradient exceeds the
    largest projected gradient of the previous pass is a negative the
    classifier already gets right by a margin; it leaves the active set, so
    that later passes cost what the hard examples cost. When the active set
    has converged, every example is checked once more before stopping.

    The first active set is every positive and a random share
    (``settings.first_negatives``) of the negatives, until it converges or
    has had half of the passes. From w = 0, a pass over every example gives
    each a positive alpha, and shrinking can only drop an example once its
    alpha is back at 0, so with every example active from the start the
    first three passes visit them all. A classifier converged on a sample of
    the negatives already puts most of the others beyond the margin: they
    keep alpha = 0 in the first pass over all of them and leave the active
    set in the next. It is the same problem, solved to the same tolerance.
    """
    cdef rng_state rng
    rng_seed(&rng, settings.seed ^ (<uint64_t>(settings.first_label + label)
                                    * <uint64_t>0x9E3779B97F4A7C15))
    cdef float64_t bias = 0.0, gradient, projected, old, step, y
    cdef float64_t largest_old = INFINITY, largest, smallest
    cdef bint converged
    cdef index_t i, epoch, position, row, k, nnz, active, swapped
    cdef const index_t* features
    cdef const float32_t* values
    cdef float64_t* w = s.weights
    for i in range(n):
        s.alpha[i] = 0.0
    active = _order_first_passes(targets, n, settings.first_negatives, &rng, s.order)
    # Passes after which a sample that has not converged gives way to every example.
    cdef index_t sample_passes = max(1, settings.max_epochs // 2) if active < n else 0
    for epoch in range(settings.max_epochs):
        rng_shuffle(&rng, s.order, active)
        largest, smallest = -INFINITY, INFINITY
        position = 0
        while position < active:
            i = s.order[position]
            row = examples[i]
            y = targets[i]
            features = s.entry_index + s.row_start[i]
            values = s.entry_value + s.row_start[i]
            nnz = <index_t>(s.row_start[i + 1] - s.row_start[i])
            gradient = bias
            for k in range(nnz):
                gradient += w[features[k]] * values[k]
            gradient = y * gradient - 1.0 + settings.diagonal * s.alpha[i]
            if s.alpha[i] == 0.0:
                if gradient > largest_old:
                    active -= 1
                    swapped = s.order[active]
                    s.order[active] = i
                    s.order[position] = swapped
                    continue
                projected = min(gradient, 0.0)
            else:
                projected = gradient
            largest, smallest = max(largest, projected), min(smallest, projected)
            position += 1
            if fabs(projected) <= 1e-12:
                continue
            old = s.alpha[i]
            s.alpha[i] = max(old - gradient / (squared_norms[row] + settings.diagonal), 0.0)
            step = (s.alpha[i] - old) * y
            for k in range(nnz):
                w[features[k]] += step * values[k]
            bias += step
        converged = largest - smallest <= settings.tolerance
        if converged and active == n:
            break
        # A converged active set, or a sample that has had its share of the
        # passes: every example joins.
        if converged or epoch + 1 == sample_passes:
            active, largest_old = n, INFINITY
        else:
            largest_old = largest if largest > 0 else INFINITY
    return bias


cdef index_t _order_first_passes(const int8_t* targets, index_t n, float64_t share,
                                 rng_state* rng, index_t* order) noexcept nogil:
    """Write the examples into `order`: first every positive and each negative
    drawn with probability `share` (one draw a negative, in turn), then the
    other negatives, from the end; return how many come first."""
    cdef index_t i, first = 0, last = n
    for i in range(n):
        if targets[i] > 0 or rng_uniform(rng) < share:
            order[first] = i
            first += 1
        else:
            last -= 1
            order[last] = i
    return first


cdef int _compare_index(const void* a, const void* b) noexcept nogil:
    cdef index_t x = (<const index_t*>a)[0], y = (<const index_t*>b)[0]
    return (x > y) - (x < y)


cdef void _store_weights(SolverScratch* s, index_t n_local, float32_t threshold,
                         RowBuffer* buffer, offset_t* start, offset_t* count) noexcept nogil:
    """Append the label's weights of magnitude >= threshold to `buffer`, by
    feature id, and reset the scratch of its `n_local` features for the next
    label."""
    cdef index_t k, j
    cdef float32_t value
    cdef offset_t p
    start[0] = buffer.size
    count[0] = 0
    if reserve_pairs(buffer, n_local):
        for k in range(n_local):
            value = <float32_t>s.weights[k]
            if value != 0 and fabs(value) >= threshold:
                buffer.indices[buffer.size] = s.feature[k]
                buffer.size += 1
        count[0] = buffer.size - start[0]
        # Only the kept ids are sorted (a few of the label's features).
        qsort(buffer.indices + start[0], count[0], sizeof(index_t), _compare_index)
        for p in range(start[0], buffer.size):
            j = buffer.indices[p]
            buffer.values[p] = <float32_t>s.weights[s.local_id[j]]
    for k in range(n_local):
        s.weights[k] = 0.0
        s.local_id[s.feature[k]] = -1
