# distutils: language = c++
"""Kernels of the tail-label re-ranker (see ``xmltree/rerank.py``).

Two kernels, reading only what the Python layer has validated (CSR
structure, feature ids below n_features, candidate ids in
``[-1, n_labels)``); they check array lengths against each other themselves.

``tail_log_scores``
    ``log t_l(x)`` for every (row, candidate) pair, where
    ``t_l(x) = 1 / (1 + exp(gamma * ||x_hat - mu_l||^2))``, where ``x_hat``
    is the row with each feature scaled by its weight (e.g. its IDF), then
    unit-normalised. The squared
    distance is expanded as ``||x_hat||^2 - 2 x_hat . mu_l + ||mu_l||^2``, so
    only the dot products of the row with its candidates' centroids are
    needed. Each row takes the cheaper of two ways to them: gather each
    candidate centroid row against the row scattered into a dense feature
    buffer (cost: the candidates' centroid lengths), or walk the centroid
    columns of the row's features, accumulating into a per-thread label
    buffer (cost: those column lengths, independent of the candidate count).
    Parallel over rows. Scratch is one n_features and one n_labels vector
    per thread; nothing of size n_samples x n_labels or n_features x
    n_labels is built.
``rank_candidates``
    The permutation that sorts each row's candidates by decreasing key,
    ties broken by lower label id, with padded slots (label -1) kept last in
    their original order. Sequential: a partial sort of ~100 pairs per row
    costs far less than the tail scores.
"""

import numpy as np

from cython.parallel cimport prange, threadid
from libc.math cimport INFINITY, exp, log1p, sqrt
from libc.string cimport memset
from libcpp.algorithm cimport partial_sort, sort
from libcpp.pair cimport pair
from libcpp.vector cimport vector

from .._kernels._openmp cimport omp_get_max_threads
from .._kernels._types cimport float32_t, float64_t, index_t, offset_t

# (negated key, label): std::sort on these pairs orders by decreasing key and
# then by increasing label id, which is the documented tie rule.
ctypedef pair[float64_t, index_t] keyed_label
# A keyed label and the slot it came from, so the sort yields a permutation.
ctypedef pair[keyed_label, index_t] ranked_slot

_ONE_INDEX = np.zeros(1, dtype=np.int32)
_ONE_VALUE = np.zeros(1, dtype=np.float32)


cdef inline float64_t log_sigmoid_of_negative(float64_t z) noexcept nogil:
    """Return ``log(1 / (1 + exp(z)))`` = ``-softplus(z)`` without overflow."""
    if z > 0.0:
        return -z - log1p(exp(-z))
    return -log1p(exp(z))


cdef struct Centroids:
    # The label centroids mu_l stored twice, so each row can take the cheaper
    # of two ways to get its dot products (see ``score_row``).
    const offset_t* by_label_indptr     # CSR over labels: row l holds mu_l
    const index_t* by_label_features    # feature id of each stored value
    const float32_t* by_label_values    # mu_l[feature]
    const offset_t* by_feature_indptr   # CSC over features: column f lists labels
    const index_t* by_feature_labels    # label id of each stored value
    const float32_t* by_feature_values  # mu_label[f]
    const float64_t* sq_norms           # ||mu_l||^2 per label
    offset_t n_labels                   # rows of the centroid matrix
    const float32_t* feature_weights    # scale of each feature before normalising


cdef float64_t row_inverse_norm(const float32_t* weights, const index_t* features,
                                const float32_t* values, offset_t nnz) noexcept nogil:
    """Return 1 / ||x||, x weighted, or 0 for a row with no non-zero value (it stays zero)."""
    cdef float64_t sq_norm = 0.0
    cdef float64_t value
    cdef offset_t k
    for k in range(nnz):
        value = <float64_t>values[k] * weights[features[k]]
        sq_norm += value * value
    return 1.0 / sqrt(sq_norm) if sq_norm > 0.0 else 0.0


cdef void dots_by_label(const Centroids* centroids, const index_t* x_features,
                        const float32_t* x_values, offset_t x_nnz, float64_t inv_norm,
                        const index_t* candidates, index_t n_candidates,
                        float64_t* feature_buffer, float64_t* dots) noexcept nogil:
    """Dot products via candidate centroid rows: O(sum of their lengths).

    The row is scattered into the all-zero `feature_buffer` (n_features long)
    and each candidate's centroid row is gathered against it; the buffer is
    all-zero again on return.
    """
    cdef offset_t k
    cdef index_t j, label
    cdef float64_t dot
    for k in range(x_nnz):
        feature_buffer[x_features[k]] = (x_values[k] * centroids.feature_weights[x_features[k]]
                                         * inv_norm)
    for j in range(n_candidates):
        label = candidates[j]
        if label < 0:
            continue
        dot = 0.0
        for k in range(centroids.by_label_indptr[label], centroids.by_label_indptr[label + 1]):
            dot += centroids.by_label_values[k] * feature_buffer[centroids.by_label_features[k]]
        dots[j] = dot
    for k in range(x_nnz):
        feature_buffer[x_features[k]] = 0.0


cdef void dots_by_feature(const Centroids* centroids, const index_t* x_features,
                          const float32_t* x_values, offset_t x_nnz, float64_t inv_norm,
                          const index_t* candidates, index_t n_candidates, offset_t n_walked,
                          float64_t* label_buffer, float64_t* dots) noexcept nogil:
    """Dot products via the row's feature columns: O(sum of their lengths).

    Accumulates ``x_hat . mu_l`` for every label sharing a feature with the
    row into the all-zero `label_buffer` (n_labels long, per thread), reads
    the candidates, then zeroes it again: by walking the same `n_walked`
    entries, or with one memset when that is shorter.
    """
    cdef offset_t k, m
    cdef index_t j
    cdef float64_t value
    for k in range(x_nnz):
        value = x_values[k] * centroids.feature_weights[x_features[k]] * inv_norm
        for m in range(centroids.by_feature_indptr[x_features[k]],
                       centroids.by_feature_indptr[x_features[k] + 1]):
            label_buffer[centroids.by_feature_labels[m]] += value * centroids.by_feature_values[m]
    for j in range(n_candidates):
        if candidates[j] >= 0:
            dots[j] = label_buffer[candidates[j]]
    if n_walked >= centroids.n_labels:
        memset(label_buffer, 0, centroids.n_labels * sizeof(float64_t))
        return
    for k in range(x_nnz):
        for m in range(centroids.by_feature_indptr[x_features[k]],
                       centroids.by_feature_indptr[x_features[k] + 1]):
            label_buffer[centroids.by_feature_labels[m]] = 0.0


cdef void score_row(const Centroids* centroids, const index_t* x_features,
                    const float32_t* x_values, offset_t x_nnz, const index_t* candidates,
                    index_t n_candidates, float64_t gamma, float64_t* feature_buffer,
                    float64_t* label_buffer, float64_t* out) noexcept nogil:
    """Fill ``out[j] = log t_{candidates[j]}(x)`` for one row; -inf for padded slots."""
    cdef float64_t inv_norm = row_inverse_norm(centroids.feature_weights, x_features,
                                               x_values, x_nnz)
    cdef float64_t x_sq_norm = 1.0 if inv_norm > 0.0 else 0.0
    cdef offset_t label_cost = 0, n_walked = 0
    cdef offset_t k
    cdef index_t j, label
    cdef float64_t distance
    # Pick the cheaper way to the dot products; the feature-wise way also
    # pays for resetting its buffer (see dots_by_feature), counting a memset
    # element as an eighth of a scattered write.
    for j in range(n_candidates):
        label = candidates[j]
        if label >= 0:
            label_cost += centroids.by_label_indptr[label + 1] - centroids.by_label_indptr[label]
    for k in range(x_nnz):
        n_walked += (centroids.by_feature_indptr[x_features[k] + 1]
                     - centroids.by_feature_indptr[x_features[k]])
    if n_walked + min(n_walked, centroids.n_labels // 8) < label_cost:
        dots_by_feature(centroids, x_features, x_values, x_nnz, inv_norm, candidates,
                        n_candidates, n_walked, label_buffer, out)
    else:
        dots_by_label(centroids, x_features, x_values, x_nnz, inv_norm, candidates,
                      n_candidates, feature_buffer, out)
    for j in range(n_candidates):
        label = candidates[j]
        if label < 0:
            out[j] = -INFINITY
            continue
        distance = x_sq_norm - 2.0 * out[j] + centroids.sq_norms[label]
        # Rounding can push an exact zero distance slightly negative.
        if distance < 0.0:
            distance = 0.0
        out[j] = log_sigmoid_of_negative(gamma * distance)


def tail_log_scores(const offset_t[::1] x_indptr, const index_t[::1] x_indices,
                    const float32_t[::1] x_values,
                    const offset_t[::1] by_label_indptr, const index_t[::1] by_label_features,
                    const float32_t[::1] by_label_values,
                    const offset_t[::1] by_feature_indptr, const index_t[::1] by_feature_labels,
                    const float32_t[::1] by_feature_values,
                    const float64_t[::1] centroid_sq_norms,
                    const float32_t[::1] feature_weights,
                    const index_t[:, ::1] candidates, float64_t gamma):
    """Return ``log t_l(x)`` for every (row, candidate) pair.

    Parameters
    ----------
    x_indptr, x_indices, x_values : numpy.ndarray
        CSR arrays of the (unnormalised) feature rows; indices < n_features.
    by_label_indptr, by_label_features, by_label_values : numpy.ndarray
        The centroid matrix (n_labels x n_features) in CSR.
    by_feature_indptr, by_feature_labels, by_feature_values : numpy.ndarray
        The same matrix in CSC; ``by_feature_indptr`` has n_features + 1 entries.
    centroid_sq_norms : numpy.ndarray of shape (n_labels,)
        ``||mu_l||^2`` per label.
    feature_weights : numpy.ndarray of shape (n_features,), float32
        Factor applied to each feature before the row is unit-normalised.
    candidates : numpy.ndarray of shape (n_samples, n_candidates), int32
        Label ids in ``[0, n_labels)``, or -1 for a padded slot.
    gamma : float
        Sharpness of the tail classifier (> 0).

    Returns
    -------
    numpy.ndarray of shape (n_samples, n_candidates), float64
        ``-log(1 + exp(gamma * distance))``; -inf in padded slots.
    """
    cdef Py_ssize_t n_samples = candidates.shape[0]
    cdef index_t n_candidates = <index_t>candidates.shape[1]
    cdef Py_ssize_t n_features = by_feature_indptr.shape[0] - 1
    cdef Py_ssize_t n_labels = centroid_sq_norms.shape[0]
    if x_indptr.shape[0] != n_samples + 1 or by_label_indptr.shape[0] != n_labels + 1:
        raise ValueError("tail_log_scores: indptr lengths disagree with the row counts")
    if feature_weights.shape[0] != n_features:
        raise ValueError("tail_log_scores: feature_weights length differs from n_features")
    result = np.full((n_samples, n_candidates), -np.inf, dtype=np.float64)
    if n_samples == 0 or n_candidates == 0:
        return result
    # ``&view[0]`` of an empty view is refused by bounds-checked debug builds;
    # a one-entry stand-in is never read because every range is then empty.
    if x_indices.shape[0] == 0:
        x_indices, x_values = _ONE_INDEX, _ONE_VALUE
    if by_label_features.shape[0] == 0:
        by_label_features, by_label_values = _ONE_INDEX, _ONE_VALUE
        by_feature_labels, by_feature_values = _ONE_INDEX, _ONE_VALUE
    cdef Centroids centroids
    centroids.by_label_indptr = &by_label_indptr[0]
    centroids.by_label_features = &by_label_features[0]
    centroids.by_label_values = &by_label_values[0]
    centroids.by_feature_indptr = &by_feature_indptr[0]
    centroids.by_feature_labels = &by_feature_labels[0]
    centroids.by_feature_values = &by_feature_values[0]
    centroids.sq_norms = &centroid_sq_norms[0]
    centroids.n_labels = n_labels
    # Never read when there is no feature (every row is then empty).
    centroids.feature_weights = &feature_weights[0] if n_features > 0 else NULL
    cdef int n_threads = min(omp_get_max_threads(), n_samples)
    # All-zero scratch buffers, one row per thread, owned here so that no
    # thread has to allocate (or report an allocation failure) in the loop.
    cdef float64_t[:, ::1] feature_buffers = np.zeros((n_threads, n_features + 1))
    cdef float64_t[:, ::1] label_buffers = np.zeros((n_threads, n_labels + 1))
    cdef float64_t[:, ::1] out = result
    cdef Py_ssize_t i
    for i in prange(n_samples, nogil=True, schedule="static", num_threads=n_threads):
        score_row(&centroids, &x_indices[0] + x_indptr[i], &x_values[0] + x_indptr[i],
                  x_indptr[i + 1] - x_indptr[i], &candidates[i, 0], n_candidates, gamma,
                  &feature_buffers[threadid(), 0], &label_buffers[threadid(), 0], &out[i, 0])
    return result


cdef void rank_row(const index_t* labels, const float64_t* keys, index_t n_candidates,
                   index_t n_ranked, ranked_slot* scratch, index_t* order) noexcept nogil:
    """Write the ranked slot order of one row into `order` (see ``rank_candidates``)."""
    cdef index_t n_real = 0
    cdef index_t j, position
    for j in range(n_candidates):
        if labels[j] >= 0:
            scratch[n_real] = ranked_slot(keyed_label(-keys[j], labels[j]), j)
            n_real += 1
    if n_ranked < n_real:
        partial_sort(scratch, scratch + n_ranked, scratch + n_real)
    else:
        sort(scratch, scratch + n_real)
    for j in range(n_real):
        order[j] = scratch[j].second
    position = n_real
    for j in range(n_candidates):
        if labels[j] < 0:
            order[position] = j
            position += 1


def rank_candidates(const index_t[:, ::1] labels, const float64_t[:, ::1] keys,
                    index_t n_ranked=-1):
    """Return the permutation that sorts each row's candidates.

    Real candidates come first by decreasing key, ties by increasing label id
    (then by slot, for repeated ids); padded slots (label < 0) follow in
    their original order. Keys of real candidates must not be NaN (the
    order would be undefined); -inf sorts last among them.

    Parameters
    ----------
    labels : numpy.ndarray of shape (n_samples, n_candidates), int32
        Candidate label ids, -1 for padding.
    keys : numpy.ndarray of shape (n_samples, n_candidates), float64
        Sort keys (higher is better).
    n_ranked : int, default=-1
        If in ``[0, n_candidates)``, only the first `n_ranked` positions of
        each row are guaranteed sorted (a partial sort, which is cheaper);
        the remaining real candidates follow in unspecified order, then the
        padded slots. -1 sorts everything.

    Returns
    -------
    numpy.ndarray of shape (n_samples, n_candidates), int32
        ``order[i]`` lists slot indices of row ``i`` in ranked order.
    """
    cdef Py_ssize_t n_samples = labels.shape[0]
    cdef index_t n_candidates = <index_t>labels.shape[1]
    result = np.empty((n_samples, n_candidates), dtype=np.int32)
    cdef index_t[:, ::1] order = result
    cdef vector[ranked_slot] scratch
    cdef Py_ssize_t i
    if keys.shape[0] != n_samples or keys.shape[1] != n_candidates:
        raise ValueError("rank_candidates: keys and labels differ in shape")
    if n_samples == 0 or n_candidates == 0:
        return result
    if n_ranked < 0 or n_ranked > n_candidates:
        n_ranked = n_candidates
    scratch.resize(n_candidates)
    with nogil:
        for i in range(n_samples):
            rank_row(&labels[i, 0], &keys[i, 0], n_candidates, n_ranked, scratch.data(),
                     &order[i, 0])
    return result
