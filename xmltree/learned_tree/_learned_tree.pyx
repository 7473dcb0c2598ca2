"""Compiled kernels of the learned M-ary tree: training, top-k, likelihood.

The estimator in ``xmltree/learned_tree.py`` validates every array before it
reaches these kernels (bounds checking is off); the model layout is described
in ``_learned_tree.pxd``. Training is Hogwild-style: ``n_jobs`` threads run
without the GIL on disjoint slices of the example order and update the shared
parameters (and AssignLabels statistics) without locks, so results with
``n_jobs > 1`` are not bit-reproducible; with one thread they are. The step
is plain SGD or, when the caller passes squared-gradient accumulators,
Adagrad (Duchi, Hazan & Singer, 2011), as the paper trains its language
models.
"""

import numpy as np

from cython.parallel cimport prange, threadid
from libc.math cimport exp, log, sqrtf, INFINITY
from libc.stdint cimport uint64_t
from libc.stdlib cimport free, malloc

from .._kernels._random cimport rng_below, rng_seed, rng_shuffle, rng_uniform
from .._kernels._sparse cimport CSRView, csr_view, row_nnz
from .._kernels._top_k cimport offer_top_k, sort_top_k

# Slot code of an empty child (xmltree.label_tree.EMPTY).
cdef index_t EMPTY = -1

# Probabilities below this count as this (log = -690.8): a label whose softmax
# underflowed keeps a finite score, so top-k always returns k labels.
cdef float64_t TINY = 1e-300

# Added to Adagrad's denominator: keeps the division defined in float32.
cdef float32_t ADAGRAD_EPSILON = 1e-8


cdef inline float64_t safe_log(float64_t p) noexcept nogil:
    return log(p if p > TINY else TINY)


cdef inline float64_t training_loss(float64_t p) noexcept nogil:
    """``-safe_log(p)``, except that NaN stays NaN.

    Diverged parameters make the softmax NaN; the loss must show it, so that
    ``fit`` stops instead of training (and saving) NaN parameters.
    """
    return p if p != p else -safe_log(p)


cdef inline float32_t dot(const float32_t* x, const float32_t* y, index_t n) noexcept nogil:
    """Return x . y with eight partial sums, which the compiler vectorises
    (a single running sum is a dependency chain it must keep in order)."""
    cdef float32_t acc[8]
    cdef index_t i, k
    for k in range(8):
        acc[k] = 0
    for i in range(0, n - 7, 8):
        for k in range(8):
            acc[k] += x[i + k] * y[i + k]
    for i in range((n // 8) * 8, n):
        acc[0] += x[i] * y[i]
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))


cdef inline void axpy(float32_t a, const float32_t* x, float32_t* y, index_t n) noexcept nogil:
    """y += a x."""
    cdef index_t i
    for i in range(n):
        y[i] += a * x[i]


cdef inline float32_t* row_or_null(float32_t* base, offset_t start) noexcept nogil:
    """Return ``base + start``, or NULL when `base` is NULL (no accumulators)."""
    return NULL if base == NULL else base + start


cdef inline void descend(float32_t* param, float32_t* squares, float32_t scale,
                         const float32_t* direction, float32_t learning_rate,
                         index_t n) noexcept nogil:
    """Step `param[:n]` against its gradient ``scale * direction``.

    Plain SGD when `squares` is NULL. Otherwise Adagrad: every coordinate
    adds its squared gradient to `squares` and steps by ``learning_rate *
    g / sqrt(squares)``. The denominator uses this thread's own sum, which
    includes ``g * g``, so a Hogwild race on `squares` can lose an update
    but never makes a step longer than `learning_rate`.
    """
    cdef index_t i
    cdef float32_t g, total
    if squares == NULL:
        axpy(-learning_rate * scale, direction, param, n)
        return
    for i in range(n):
        g = scale * direction[i]
        total = squares[i] + g * g
        squares[i] = total
        param[i] -= learning_rate * g / (sqrtf(total) + ADAGRAD_EPSILON)


# ---------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------

cdef float32_t embed_mean(const Model* model, const CSRView* rows, index_t row,
                          float32_t* hidden) noexcept nogil:
    """Write the value-weighted mean embedding of `row` into `hidden`.

    Returns the sum of the row's values (0 for an empty row, whose `hidden`
    is the zero vector).
    """
    cdef index_t k
    cdef index_t dim = model.dim
    cdef offset_t p
    cdef float32_t value, total = 0
    for k in range(dim):
        hidden[k] = 0
    for p in range(rows.indptr[row], rows.indptr[row + 1]):
        value = rows.values[p]
        total += value
        axpy(value, model.embeddings + <offset_t>rows.indices[p] * dim, hidden, dim)
    if total > 0:
        for k in range(dim):
            hidden[k] /= total
    return total


cdef void node_softmax(const Model* model, index_t node, const float32_t* hidden,
                       float64_t* probas) noexcept nogil:
    """Write the softmax of node `node` over its child slots into `probas`.

    Empty slots get probability 0. The exponentials are taken in float64.
    """
    cdef index_t j, arity = model.arity
    cdef index_t dim = model.dim
    cdef offset_t row
    cdef float64_t logit, largest = -INFINITY, total = 0
    for j in range(arity):
        row = <offset_t>node * arity + j
        if model.children[row] == EMPTY:
            continue
        logit = model.biases[row] + dot(model.weights + row * dim, hidden, dim)
        probas[j] = logit
        if logit > largest:
            largest = logit
    for j in range(arity):
        if model.children[<offset_t>node * arity + j] == EMPTY:
            probas[j] = 0
        else:
            probas[j] = exp(probas[j] - largest)
            total += probas[j]
    for j in range(arity):
        probas[j] /= total


cdef float64_t node_step(Model* model, index_t node, index_t target, const float32_t* hidden,
                         float32_t* grad_hidden, float64_t* probas,
                         float32_t learning_rate) noexcept nogil:
    """One SGD or Adagrad step on node `node` towards child slot `target`.

    Adds dLoss/dh (computed with the weights before the step) to
    `grad_hidden`, updates the node's weights and biases, leaves the node
    softmax in `probas` and returns the loss ``-log p_target`` (NaN once the
    parameters have diverged, see `training_loss`).
    """
    cdef index_t j, arity = model.arity
    cdef index_t dim = model.dim
    cdef offset_t row
    cdef float32_t g, one = 1
    cdef float32_t* w
    node_softmax(model, node, hidden, probas)
    for j in range(arity):
        row = <offset_t>node * arity + j
        if model.children[row] == EMPTY:
            continue
        # d(-log softmax_target)/d logit_j = p_j - [j == target]
        g = <float32_t>(probas[j] - (j == target))
        w = model.weights + row * dim
        axpy(g, w, grad_hidden, dim)
        descend(w, row_or_null(model.weight_squares, row * dim), g, hidden, learning_rate,
                dim)
        descend(model.biases + row, row_or_null(model.bias_squares, row), g, &one,
                learning_rate, 1)
    return training_loss(probas[target])


cdef inline float32_t scheduled_rate(float64_t initial, float64_t progress) noexcept nogil:
    """Learning rate of the paper: constant for the first half, then linear to 0."""
    if progress < 0.5:
        return <float32_t>initial
    return <float32_t>(initial * 2.0 * (1.0 - progress))


cdef float64_t train_example(Model* model, const CSRView* rows, index_t row, index_t label,
                             Stats* stats, Scratch* scratch,
                             float32_t learning_rate) noexcept nogil:
    """Take the SGD or Adagrad step of one (example, label) pair along its path.

    Updates the node parameters on the path, the embeddings of the example's
    features (through the mean) and, if enabled, the AssignLabels statistics.
    Returns the path negative log-likelihood.
    """
    cdef index_t d, j, k, node, arity = model.arity
    cdef index_t dim = model.dim
    cdef offset_t p, at, start
    cdef float32_t total
    cdef float64_t loss = 0
    total = embed_mean(model, rows, row, scratch.hidden)
    for k in range(dim):
        scratch.grad_hidden[k] = 0
    for d in range(model.label_depth[label]):
        at = <offset_t>label * model.max_depth + d
        node = model.path_nodes[at]
        loss += node_step(model, node, model.path_slots[at], scratch.hidden,
                          scratch.grad_hidden, scratch.probas, learning_rate)
        if stats.enabled:
            stats.counts[at] += 1
            for j in range(arity):
                stats.sum_probas[at * arity + j] += <float32_t>scratch.probas[j]
    if total > 0:
        for p in range(rows.indptr[row], rows.indptr[row + 1]):
            start = <offset_t>rows.indices[p] * dim
            descend(model.embeddings + start, row_or_null(model.embedding_squares, start),
                    rows.values[p] / total, scratch.grad_hidden, learning_rate, dim)
    return loss


cdef float64_t train_slice(Model* model, const CSRView* rows, const CSRView* labels,
                           const index_t* order,
                           index_t begin, index_t end, float64_t initial_rate,
                           float64_t progress_start, float64_t progress_end,
                           Stats* stats, Scratch* scratch) noexcept nogil:
    """Train on examples ``order[begin:end]`` (one Hogwild thread's share).

    Progress, hence the learning rate, advances linearly over the slice from
    `progress_start` to `progress_end`. A row with several labels trains on
    one of them drawn uniformly (as fastText and the paper do).
    """
    cdef index_t i, row, n_labels
    cdef offset_t first
    cdef float64_t loss = 0, progress
    cdef float64_t span = progress_end - progress_start
    for i in range(begin, end):
        row = order[i]
        progress = progress_start + span * (i - begin) / (end - begin)
        first = labels.indptr[row]
        n_labels = row_nnz(labels, row)
        if n_labels > 1:
            first += rng_below(&scratch.rng, n_labels)
        loss += train_example(model, rows, row, labels.indices[first], stats, scratch,
                              scheduled_rate(initial_rate, progress))
    return loss


# ---------------------------------------------------------------------------
# Python-facing plumbing
# ---------------------------------------------------------------------------

cdef Model make_model(tuple arrays) except *:
    """Fill a Model with pointers into the validated arrays of `arrays`.

    `arrays` is ``(embeddings, weights, biases, children, path_nodes,
    path_slots, label_depth)``; the caller keeps them alive.
    """
    cdef float32_t[:, ::1] embeddings = arrays[0]
    cdef float32_t[:, :, ::1] weights = arrays[1]
    cdef float32_t[:, ::1] biases = arrays[2]
    cdef const index_t[:, ::1] children = arrays[3]
    cdef const index_t[:, ::1] path_nodes = arrays[4]
    cdef const index_t[:, ::1] path_slots = arrays[5]
    cdef const index_t[::1] label_depth = arrays[6]
    cdef Model model
    model.embeddings = &embeddings[0, 0]
    model.weights = &weights[0, 0, 0]
    model.biases = &biases[0, 0]
    model.children = &children[0, 0]
    model.path_nodes = &path_nodes[0, 0]
    model.path_slots = &path_slots[0, 0]
    model.label_depth = &label_depth[0]
    model.embedding_squares = NULL
    model.weight_squares = NULL
    model.bias_squares = NULL
    model.dim = <index_t>embeddings.shape[1]
    model.arity = <index_t>children.shape[1]
    model.max_depth = <index_t>path_nodes.shape[1]
    model.n_nodes = <index_t>children.shape[0]
    return model


cdef void attach_squares(Model* model, tuple model_arrays, tuple squares) except *:
    """Point `model` at Adagrad accumulators ``(embeddings, weights, biases)``.

    They have the shapes of the first three `model_arrays` (checked here)
    and are updated in place; the caller keeps them alive.
    """
    cdef float32_t[:, ::1] embedding_squares = squares[0]
    cdef float32_t[:, :, ::1] weight_squares = squares[1]
    cdef float32_t[:, ::1] bias_squares = squares[2]
    if any(np.shape(sq) != np.shape(param) for sq, param in zip(squares, model_arrays[:3])):
        raise ValueError("squares: accumulator shapes differ from the parameters")
    model.embedding_squares = &embedding_squares[0, 0]
    model.weight_squares = &weight_squares[0, 0, 0]
    model.bias_squares = &bias_squares[0, 0]


cdef Scratch* make_scratch(int n_threads, float32_t[:, ::1] hidden, float32_t[:, ::1] grad,
                           float64_t[:, ::1] probas, uint64_t seed) except NULL:
    """Allocate one Scratch per thread over rows of the given buffers."""
    cdef Scratch* scratch = <Scratch*>malloc(n_threads * sizeof(Scratch))
    cdef int t
    if scratch == NULL:
        raise MemoryError()
    for t in range(n_threads):
        scratch[t].hidden = &hidden[t, 0]
        scratch[t].grad_hidden = &grad[t, 0]
        scratch[t].probas = &probas[t, 0]
        rng_seed(&scratch[t].rng, seed + <uint64_t>t * <uint64_t>0x9E3779B97F4A7C15)
    return scratch


def train_epoch_part(tuple model_arrays, X, Y,
                     const index_t[::1] order, double initial_rate, double progress_start,
                     double progress_end, stats_arrays, int n_jobs, unsigned long long seed,
                     squares=None):
    """Train on the examples ``order`` with ``n_jobs`` Hogwild threads.

    Parameters
    ----------
    model_arrays : tuple
        ``(embeddings, weights, biases, children, path_nodes, path_slots,
        label_depth)``, updated in place (the first three).
    X : scipy.sparse.csr_matrix
        Features from ``check_features`` (see ``_sparse.pxd``).
    Y : scipy.sparse.csr_matrix
        Label sets from ``check_labels``; every row has at least one label.
    order : numpy.ndarray of int32
        Rows to visit, in order.
    initial_rate : float
        Learning rate of the schedule at the start of training.
    progress_start, progress_end : float
        Fraction of the whole training this call starts and ends at.
    stats_arrays : tuple or None
        ``(sum_probas, counts)`` of shape ``(n_labels, max_depth, arity)``
        and ``(n_labels, max_depth)``, accumulated in place; None to skip.
    n_jobs : int
        Number of threads.
    seed : int
        Seed of the per-thread generators that draw labels of multi-label rows.
    squares : tuple or None
        Adagrad accumulators ``(embeddings, weights, biases)`` shaped like
        the first three model arrays, updated in place; None for plain SGD.

    Returns
    -------
    float
        Sum of the path negative log-likelihoods of the visited examples;
        NaN if the parameters diverged.
    """
    cdef Model model = make_model(model_arrays)
    cdef CSRView rows = csr_view(X)
    if squares is not None:
        attach_squares(&model, model_arrays, squares)
    cdef CSRView labels = csr_view(Y)
    cdef float32_t[:, :, ::1] sum_probas
    cdef float32_t[:, ::1] counts
    cdef Stats stats
    stats.enabled = stats_arrays is not None
    if stats.enabled:
        sum_probas, counts = stats_arrays
        stats.sum_probas = &sum_probas[0, 0, 0]
        stats.counts = &counts[0, 0]
    cdef index_t n = <index_t>order.shape[0]
    cdef float32_t[:, ::1] hidden = np.zeros((n_jobs, model.dim), dtype=np.float32)
    cdef float32_t[:, ::1] grad = np.zeros((n_jobs, model.dim), dtype=np.float32)
    cdef float64_t[:, ::1] probas = np.zeros((n_jobs, model.arity), dtype=np.float64)
    cdef float64_t[::1] losses = np.zeros(n_jobs, dtype=np.float64)
    cdef Scratch* scratch = make_scratch(n_jobs, hidden, grad, probas, seed)
    cdef int t
    if n == 0:
        free(scratch)
        return 0.0
    try:
        for t in prange(n_jobs, nogil=True, num_threads=n_jobs, schedule="static", chunksize=1):
            losses[t] = train_slice(&model, &rows, &labels, &order[0],
                                    <index_t>((<offset_t>n * t) // n_jobs),
                                    <index_t>((<offset_t>n * (t + 1)) // n_jobs),
                                    initial_rate, progress_start, progress_end,
                                    &stats, &scratch[t])
    finally:
        free(scratch)
    return float(np.sum(losses))


# ---------------------------------------------------------------------------
# Prediction
# ---------------------------------------------------------------------------

cdef void sort_slots(const float64_t* probas, index_t* slots, index_t n) noexcept nogil:
    """Sort `slots[:n]` by increasing probability (insertion sort, n <= arity)."""
    cdef index_t i, j, slot
    for i in range(1, n):
        slot = slots[i]
        j = i
        while j > 0 and probas[slots[j - 1]] > probas[slot]:
            slots[j] = slots[j - 1]
            j -= 1
        slots[j] = slot


cdef void top_k_example(const Model* model, const CSRView* rows, index_t row, index_t k,
                        Scratch* scratch, index_t* stack_nodes, float64_t* stack_scores,
                        index_t* slots, index_t* labels, float64_t* scores) noexcept nogil:
    """Branch-and-bound depth-first search for the k most likely labels.

    A node whose path log-probability is below the k-th best leaf found so
    far cannot lead to a better leaf (probabilities only shrink along a
    path), so its subtree is pruned. Children are explored best first. The
    output row (`labels`, `scores`, filled with -1 and -inf by the caller)
    is the top-k heap of ``_top_k.pxd``, so ties go to the smaller label id.
    """
    cdef index_t i, j, code, node, top = 1, n_internal, arity = model.arity, size = 0
    cdef float64_t score, child_score
    embed_mean(model, rows, row, scratch.hidden)
    stack_nodes[0] = 0
    stack_scores[0] = 0.0
    while top > 0:
        top -= 1
        node = stack_nodes[top]
        score = stack_scores[top]
        if size == k and score < scores[0]:
            continue
        node_softmax(model, node, scratch.hidden, scratch.probas)
        n_internal = 0
        for j in range(arity):
            code = model.children[<offset_t>node * arity + j]
            if code == EMPTY:
                continue
            child_score = score + safe_log(scratch.probas[j])
            if size == k and child_score < scores[0]:
                continue
            if code < EMPTY:
                size = offer_top_k(labels, scores, size, k, -code - 2, child_score)
            else:
                slots[n_internal] = j
                n_internal += 1
        sort_slots(scratch.probas, slots, n_internal)
        for i in range(n_internal):
            j = slots[i]
            stack_nodes[top] = model.children[<offset_t>node * arity + j]
            stack_scores[top] = score + safe_log(scratch.probas[j])
            top += 1
    sort_top_k(labels, scores, size, labels, scores)


def predict_top_k(tuple model_arrays, X, int k, int n_jobs):
    """Return the k most likely labels of every row and their log-probabilities.

    Returns
    -------
    labels : numpy.ndarray of shape (n_rows, k), int32
        Best first; -1 only where k exceeds the number of labels.
    scores : numpy.ndarray of shape (n_rows, k), float64
        Log-probabilities (-inf for the -1 entries).
    """
    cdef Model model = make_model(model_arrays)
    cdef CSRView rows = csr_view(X)
    cdef index_t n = rows.n_rows
    cdef index_t[:, ::1] labels = np.full((n, k), -1, dtype=np.int32)
    cdef float64_t[:, ::1] scores = np.full((n, k), -np.inf, dtype=np.float64)
    cdef float32_t[:, ::1] hidden = np.zeros((n_jobs, model.dim), dtype=np.float32)
    cdef float64_t[:, ::1] probas = np.zeros((n_jobs, model.arity), dtype=np.float64)
    cdef index_t[:, ::1] stack_nodes = np.zeros((n_jobs, model.n_nodes), dtype=np.int32)
    cdef float64_t[:, ::1] stack_scores = np.zeros((n_jobs, model.n_nodes), dtype=np.float64)
    cdef index_t[:, ::1] slots = np.zeros((n_jobs, model.arity), dtype=np.int32)
    # Prediction never uses grad_hidden, so it may alias hidden.
    cdef Scratch* scratch = make_scratch(n_jobs, hidden, hidden, probas, 0)
    cdef index_t row
    cdef int t
    try:
        for row in prange(n, nogil=True, num_threads=n_jobs, schedule="dynamic", chunksize=64):
            t = threadid()
            top_k_example(&model, &rows, row, k, &scratch[t], &stack_nodes[t, 0],
                          &stack_scores[t, 0], &slots[t, 0], &labels[row, 0], &scores[row, 0])
    finally:
        free(scratch)
    return np.asarray(labels), np.asarray(scores)


cdef float64_t path_log_likelihood(const Model* model, const CSRView* rows, index_t row,
                                   index_t label, Scratch* scratch) noexcept nogil:
    """Return log p(label | row): the sum of log node probabilities on its path."""
    cdef index_t d
    cdef offset_t at
    cdef float64_t total = 0
    embed_mean(model, rows, row, scratch.hidden)
    for d in range(model.label_depth[label]):
        at = <offset_t>label * model.max_depth + d
        node_softmax(model, model.path_nodes[at], scratch.hidden, scratch.probas)
        total += safe_log(scratch.probas[model.path_slots[at]])
    return total


def log_likelihood(tuple model_arrays, X, const index_t[::1] targets,
                   int n_jobs):
    """Return ``log p(targets[i] | row i)`` for every row (float64 array)."""
    cdef Model model = make_model(model_arrays)
    cdef CSRView rows = csr_view(X)
    cdef index_t n = <index_t>targets.shape[0]
    cdef float64_t[::1] out = np.zeros(n, dtype=np.float64)
    cdef float32_t[:, ::1] hidden = np.zeros((n_jobs, model.dim), dtype=np.float32)
    cdef float64_t[:, ::1] probas = np.zeros((n_jobs, model.arity), dtype=np.float64)
    cdef Scratch* scratch = make_scratch(n_jobs, hidden, hidden, probas, 0)
    cdef index_t row
    try:
        for row in prange(n, nogil=True, num_threads=n_jobs, schedule="static"):
            out[row] = path_log_likelihood(&model, &rows, row, targets[row],
                                           &scratch[threadid()])
    finally:
        free(scratch)
    return np.asarray(out)


cdef void all_log_proba_example(const Model* model, const CSRView* rows, index_t row,
                                const index_t[::1] node_order, Scratch* scratch,
                                float64_t* node_scores, float64_t* out) noexcept nogil:
    """Fill `out[label]` with log p(label | row) for every label."""
    cdef index_t i, j, node, code, arity = model.arity
    cdef float64_t child_score
    embed_mean(model, rows, row, scratch.hidden)
    node_scores[0] = 0.0
    for i in range(node_order.shape[0]):
        node = node_order[i]
        node_softmax(model, node, scratch.hidden, scratch.probas)
        for j in range(arity):
            code = model.children[<offset_t>node * arity + j]
            if code == EMPTY:
                continue
            child_score = node_scores[node] + safe_log(scratch.probas[j])
            if code >= 0:
                node_scores[code] = child_score
            else:
                out[-code - 2] = child_score


def all_log_proba(tuple model_arrays, X, const index_t[::1] node_order,
                  int n_labels, int n_jobs):
    """Return the full matrix of label log-probabilities (n_rows, n_labels).

    Visits every node once per row, parents before children (`node_order`);
    meant for small label sets and for checking the other kernels.
    """
    cdef Model model = make_model(model_arrays)
    cdef CSRView rows = csr_view(X)
    cdef index_t n = rows.n_rows
    cdef float64_t[:, ::1] out = np.full((n, n_labels), -np.inf, dtype=np.float64)
    cdef float32_t[:, ::1] hidden = np.zeros((n_jobs, model.dim), dtype=np.float32)
    cdef float64_t[:, ::1] probas = np.zeros((n_jobs, model.arity), dtype=np.float64)
    cdef float64_t[:, ::1] node_scores = np.zeros((n_jobs, model.n_nodes), dtype=np.float64)
    cdef Scratch* scratch = make_scratch(n_jobs, hidden, hidden, probas, 0)
    cdef index_t row
    try:
        for row in prange(n, nogil=True, num_threads=n_jobs, schedule="static"):
            all_log_proba_example(&model, &rows, row, node_order, &scratch[threadid()],
                                  &node_scores[threadid(), 0], &out[row, 0])
    finally:
        free(scratch)
    return np.asarray(out)


# ---------------------------------------------------------------------------
# Randomness and test hooks
# ---------------------------------------------------------------------------

def random_permutation(index_t n, unsigned long long seed):
    """Return a random permutation of ``range(n)`` (int32) from xoshiro256**."""
    cdef index_t[::1] values = np.arange(n, dtype=np.int32)
    cdef rng_state state
    rng_seed(&state, seed)
    if n > 1:
        rng_shuffle(&state, &values[0], n)
    return np.asarray(values)


def uniform_matrix(index_t n_rows, index_t n_cols, double scale, unsigned long long seed):
    """Return a float32 matrix with entries uniform in [-scale, scale)."""
    cdef float32_t[:, ::1] out = np.empty((n_rows, n_cols), dtype=np.float32)
    cdef rng_state state
    cdef index_t i, j
    rng_seed(&state, seed)
    for i in range(n_rows):
        for j in range(n_cols):
            out[i, j] = <float32_t>((2.0 * rng_uniform(&state) - 1.0) * scale)
    return np.asarray(out)


def _py_node_step(tuple model_arrays, const float32_t[::1] hidden, index_t node, index_t target,
                  float learning_rate, squares=None):
    """Run `node_step` once (tests only); returns (loss, grad_hidden, probas).

    `squares` as in `train_epoch_part` (Adagrad), or None (SGD).
    """
    cdef Model model = make_model(model_arrays)
    if squares is not None:
        attach_squares(&model, model_arrays, squares)
    cdef float32_t[::1] grad = np.zeros(model.dim, dtype=np.float32)
    cdef float64_t[::1] probas = np.zeros(model.arity, dtype=np.float64)
    loss = node_step(&model, node, target, &hidden[0], &grad[0], &probas[0], learning_rate)
    return loss, np.asarray(grad), np.asarray(probas)


# ---------------------------------------------------------------------------
# AssignLabels inner loop
# ---------------------------------------------------------------------------

def greedy_assign(const index_t[::1] pair_labels, const index_t[::1] pair_children,
                  index_t n_real, index_t n_total, index_t arity, index_t limit):
    """Assign labels to child slots by walking (label, child) pairs best first.

    A pair is taken if its label is unassigned and its child still has room.
    With ``limit > 0`` a child has room while it holds fewer than ``limit``
    labels (depth-constrained mode). With ``limit == 0`` every child must
    end with a label count ≡ 1 (mod arity − 1): a child at such a count may
    grow by a new block of ``arity − 1`` labels only while spare blocks
    remain, which keeps the remaining labels always placeable. Labels
    ``n_real..n_total-1`` (dummies) go last to the first child with room.

    Returns
    -------
    numpy.ndarray of shape (n_total,), int32
        Child slot of every label.
    """
    cdef index_t[::1] assigned = np.full(n_total, -1, dtype=np.int32)
    cdef index_t[::1] size = np.zeros(arity, dtype=np.int32)
    cdef index_t[::1] target = np.ones(arity, dtype=np.int32)
    cdef index_t step = arity - 1
    cdef index_t spare = (n_total - arity) // step if limit == 0 and n_total >= arity else 0
    cdef index_t left = n_real, p, label, child
    with nogil:
        for p in range(pair_labels.shape[0]):
            if left == 0:
                break
            label = pair_labels[p]
            child = pair_children[p]
            if assigned[label] < 0 and has_room(child, size, target, spare, limit):
                assigned[label] = child
                spare -= grow(child, size, target, step, limit)
                left -= 1
        for label in range(n_real, n_total):
            for child in range(arity):
                if has_room(child, size, target, spare, limit):
                    break
            assigned[label] = child
            spare -= grow(child, size, target, step, limit)
    return np.asarray(assigned)


cdef inline bint has_room(index_t child, const index_t[::1] size, const index_t[::1] target,
                          index_t spare, index_t limit) noexcept nogil:
    if limit > 0:
        return size[child] < limit
    return size[child] < target[child] or spare > 0


cdef inline index_t grow(index_t child, index_t[::1] size, index_t[::1] target, index_t step,
                         index_t limit) noexcept nogil:
    """Add one label to `child`; return 1 if that opened a new block."""
    cdef index_t opened = 0
    if limit == 0 and size[child] == target[child]:
        target[child] += step
        opened = 1
    size[child] += 1
    return opened
