"""Online SGD and NAG updates of groups of linear regressors (see ``_optim.pxd``).

NAG is the *normalized adaptive gradient* update of Ross, Mineiro & Langford
(2013), the default update of Vowpal Wabbit, not Nesterov's method. Per
feature it keeps the largest magnitude seen so far, ``s_j``, and the sum of
squared gradients, ``G_j``; a global normaliser ``N`` accumulates
``(x_j / s_j)^2``. The step for feature j is
``learning_rate * sqrt(t / N) * g_j / (s_j * sqrt(G_j))``, which makes the
update invariant to the scale of each feature. When ``|x_j|`` exceeds ``s_j``
the weight is multiplied by ``s_j / |x_j|`` (the adaptive variant's rescale;
the non-adaptive NG variant would square the ratio). As in Vowpal Wabbit, a
feature seen for the first time (``s_j == 0``) only sets its scale, so that a
non-zero initial weight survives its first occurrence.

The *margin* steps train a regressor towards a target sign ``s`` in {-1, +1}
the way Vowpal Wabbit's ``--log_multi`` trains its node regressors: its
quantile loss (tau = 0.5) on the score clipped to [-1, 1] with safe,
importance-invariant updates. In effect this is a hinge loss with margin 1:
nothing changes once ``s * z >= 1`` (not even the optimiser state), every
other step has a gradient of constant magnitude, and a step never moves the
clipped score past the target: the step size is
``min(learning_rate, |s - clip(z)| / sensitivity)``, where the sensitivity is
how much the score moves per unit of step. With NAG the squared-gradient sums
``G_j`` accumulate ``x_j^2``, and whether to update is decided on the score
before the scales grow, both as in Vowpal Wabbit; the cap is computed on the
score after the resulting rescaling, so that it holds up to the rounding of the
weights as they are stored (float32, see ``_optim.pxd``).
"""

import numpy as np

from libc.math cimport exp, fabs, fmax, fmin, sqrt
from libc.string cimport memset

from ._types cimport float32_t, float64_t, index_t, offset_t

cdef extern from *:
    """
    #include <math.h>
    #include <string.h>

    /* NAG's per-feature step for one regressor: computed in double, stored in float.
       G_j == 0 only when g == 0 (sigmoid saturated on its target): no step, no 0/0. */
    static inline void xmltree_nag_update_one(float* weight, float* sum_sq_grad,
                                              double scale, double x, double g,
                                              double rate, double* z) {
        const double gradient = g * x;
        const double sum = (double)*sum_sq_grad + gradient * gradient;
        *sum_sq_grad = (float)sum;
        if (sum > 0.0) {
            *weight = (float)((double)*weight - rate * gradient / (scale * sqrt(sum)));
        }
        *z = *z + x * (double)*weight;
    }

    /* Two lanes of NAG's per-feature step (see _nag_update_feature): lane by
       lane the same IEEE operations in the same order, with the square roots
       and the divisions in one packed instruction each: the scalar step spends
       most of its time waiting on them. GCC/Clang vector extensions; other
       compilers get the same operations lane after lane. */

    #if defined(__GNUC__)
    typedef double xmltree_pair __attribute__((vector_size(16)));
    typedef long long xmltree_pair_mask __attribute__((vector_size(16)));
    typedef float xmltree_float_pair __attribute__((vector_size(8)));

    static inline void xmltree_nag_update_pair(float* weights, float* sum_sq_grad,
                                               double scale, double x, const double* g,
                                               double rate, double* z) {
        const xmltree_pair xs = {x, x}, scales = {scale, scale}, rates = {rate, rate};
        const xmltree_pair zero = {0.0, 0.0};
        xmltree_pair gradient, sum, weight, score, root, step;
        memcpy(&gradient, g, sizeof gradient);
        sum = (xmltree_pair){sum_sq_grad[0], sum_sq_grad[1]};
        weight = (xmltree_pair){weights[0], weights[1]};
        memcpy(&score, z, sizeof score);
        gradient = gradient * xs;
        sum = sum + gradient * gradient;
        root = (xmltree_pair){sqrt(sum[0]), sqrt(sum[1])};
        step = rates * gradient / (scales * root);
        /* No step where G_j == 0: the step's bits become those of +0.0. */
        step = (xmltree_pair)((xmltree_pair_mask)step & (sum > zero));
        weight = weight - step;
        const xmltree_float_pair stored_sum = __builtin_convertvector(sum, xmltree_float_pair);
        const xmltree_float_pair stored = __builtin_convertvector(weight, xmltree_float_pair);
        memcpy(sum_sq_grad, &stored_sum, sizeof stored_sum);
        memcpy(weights, &stored, sizeof stored);
        /* The score adds the weights as stored. Converted lane by lane, the round
           trip through float was dropped by GCC 12 at -O2 and -O3. */
        score = score + xs * __builtin_convertvector(stored, xmltree_pair);
        memcpy(z, &score, sizeof score);
    }
    #else
    static void xmltree_nag_update_pair(float* weights, float* sum_sq_grad,
                                        double scale, double x, const double* g,
                                        double rate, double* z) {
        xmltree_nag_update_one(weights, sum_sq_grad, scale, x, g[0], rate, z);
        xmltree_nag_update_one(weights + 1, sum_sq_grad + 1, scale, x, g[1], rate, z + 1);
    }
    #endif
    """
    void nag_update_one "xmltree_nag_update_one" (
        float32_t* weight, float32_t* sum_sq_grad, float64_t scale, float64_t x,
        float64_t g, float64_t rate, float64_t* z) noexcept nogil
    void nag_update_pair "xmltree_nag_update_pair" (
        float32_t* weights, float32_t* sum_sq_grad, float64_t scale, float64_t x,
        const float64_t* g, float64_t rate, float64_t* z) noexcept nogil

#: The NumPy dtype of ``state_t``, for arrays that hold a group's state.
STATE_DTYPE = np.float32

# Offsets in a feature block (see _optim.pxd): the scale s_j, then the weight of
# regressor m at WEIGHT + m; in a group of one regressor, G_j at SUM_SQ_GRAD.
cdef enum:
    SCALE = 0
    WEIGHT = 1
    SUM_SQ_GRAD = 2


cdef float64_t sigmoid(float64_t z) noexcept nogil:
    """Return the logistic function of `z` without overflowing ``exp``."""
    cdef float64_t e
    if z >= 0.0:
        return 1.0 / (1.0 + exp(-z))
    e = exp(z)
    return e / (1.0 + e)


cdef float64_t score(const RegressorGroup* group, index_t m, const index_t* indices,
                     const float32_t* values, index_t nnz) noexcept nogil:
    """Return ``z = bias + sum_j x_j * w_j`` of regressor m, bias first, j increasing."""
    cdef float64_t z = weight_of(group, m, group.bias_index)[0]
    cdef index_t k
    for k in range(nnz):
        if values[k] != 0.0:
            z += <float64_t>values[k] * weight_of(group, m, indices[k])[0]
    return z


cdef void sgd_step(RegressorGroup* group, const index_t* indices, const float32_t* values,
                   index_t nnz, const float64_t* targets, float64_t learning_rate,
                   float64_t* scores) noexcept nogil:
    """Apply ``w_j -= learning_rate * g * x_j`` to each regressor; write its new score."""
    cdef state_t* weight
    cdef float64_t step, x, z_after
    cdef index_t m, k
    for m in range(group.n_regressors):
        step = learning_rate * (sigmoid(score(group, m, indices, values, nnz)) - targets[m])
        weight = weight_of(group, m, group.bias_index)
        weight[0] -= step
        z_after = weight[0]
        for k in range(nnz):
            x = values[k]
            if x != 0.0:
                weight = weight_of(group, m, indices[k])
                weight[0] -= step * x
                z_after += x * weight[0]
        scores[m] = z_after
    group.n_updates += 1


cdef inline float64_t _observe_feature(state_t* block, index_t n_regressors, float64_t x,
                                       float64_t* z) noexcept nogil:
    """Grow the scale of a feature block to ``|x|`` if needed (rescaling its weights),
    add ``x * w_j`` to the score ``z[m]`` of each regressor m; return ``(x / s_j)^2``."""
    cdef float64_t magnitude = fabs(x)
    cdef float64_t shrink, ratio
    cdef index_t m
    if magnitude > block[SCALE]:
        if block[SCALE] > 0.0:
            shrink = block[SCALE] / magnitude
            for m in range(n_regressors):
                block[WEIGHT + m] *= shrink
        block[SCALE] = magnitude
    for m in range(n_regressors):
        z[m] += x * block[WEIGHT + m]
    ratio = x / block[SCALE]
    return ratio * ratio


cdef inline void _nag_update_feature(state_t* block, index_t n_regressors, float64_t x,
                                     const float64_t* g, float64_t rate,
                                     float64_t* z) noexcept nogil:
    """Apply the NAG step of each regressor m, of gradient ``g[m]`` in z, to a feature
    block; add ``x * w_j`` after the step to its score ``z[m]``."""
    cdef state_t* weights = block + WEIGHT
    cdef state_t* sum_sq_grad = block + WEIGHT + n_regressors
    cdef index_t m = 0
    while m + 1 < n_regressors:
        nag_update_pair(weights + m, sum_sq_grad + m, block[SCALE], x, g + m, rate, z + m)
        m += 2
    if m < n_regressors:  # an odd one out
        nag_update_one(weights + m, sum_sq_grad + m, block[SCALE], x, g[m], rate, z + m)


cdef void nag_step(RegressorGroup* group, const index_t* indices, const float32_t* values,
                   index_t nnz, const float64_t* targets, float64_t learning_rate,
                   float64_t* scores) noexcept nogil:
    """Apply one normalized adaptive gradient step to each regressor; write its new score."""
    # A constant group size lets the compiler keep the scores in registers;
    # through a loop of run-time length they make a round trip to memory at
    # every feature. Binary nodes are the default.
    if group.n_regressors == 2:
        _nag_step_of(group, 2, indices, values, nnz, targets, learning_rate, scores)
    else:
        _nag_step_of(group, group.n_regressors, indices, values, nnz, targets, learning_rate,
                     scores)


cdef inline void _nag_step_of(RegressorGroup* group, index_t n_regressors,
                              const index_t* indices, const float32_t* values, index_t nnz,
                              const float64_t* targets, float64_t learning_rate,
                              float64_t* scores) noexcept nogil:
    """`nag_step`, with ``group.n_regressors`` passed as `n_regressors` so that a
    caller can inline a constant."""
    cdef float64_t x, rate
    cdef float64_t norm = group.norm  # a local, so the loop keeps it in a register
    # Locals rather than `scores`, which the compiler would have to assume aliases the state.
    cdef float64_t z[MAX_GROUP_SIZE]
    cdef float64_t g[MAX_GROUP_SIZE]
    cdef index_t k, m
    # Pass 1: grow the scales (rescaling weights), then score and normalise. The
    # scores start at -0.0, the exact identity of +, so they begin with the bias itself.
    for m in range(n_regressors):
        z[m] = -0.0
    norm += _observe_feature(feature_block(group, group.bias_index), n_regressors, 1.0, z)
    for k in range(nnz):
        x = values[k]
        if x != 0.0:
            norm += _observe_feature(feature_block(group, indices[k]), n_regressors, x, z)
    group.norm = norm
    group.n_updates += 1
    for m in range(n_regressors):
        g[m] = sigmoid(z[m]) - targets[m]
        z[m] = -0.0
    rate = learning_rate * sqrt(<float64_t>group.n_updates / group.norm)
    # Pass 2: per-feature adaptive steps, accumulating the new scores.
    _nag_update_feature(feature_block(group, group.bias_index), n_regressors, 1.0, g, rate, z)
    for k in range(nnz):
        x = values[k]
        if x != 0.0:
            _nag_update_feature(feature_block(group, indices[k]), n_regressors, x, g, rate, z)
    for m in range(n_regressors):
        scores[m] = z[m]


cdef void regressor_step(OptimizerKind optimizer, RegressorGroup* group,
                         const index_t* indices, const float32_t* values, index_t nnz,
                         const float64_t* targets, float64_t learning_rate,
                         float64_t* scores) noexcept nogil:
    """Dispatch one update of the group to the chosen optimiser; write the new scores."""
    if optimizer == OPTIMIZER_NAG:
        nag_step(group, indices, values, nnz, targets, learning_rate, scores)
    else:
        sgd_step(group, indices, values, nnz, targets, learning_rate, scores)


cdef inline float64_t _margin_error(float64_t z, float64_t sign) noexcept nogil:
    """Return ``sign - clip(z, -1, 1)``: 0 once the margin ``sign * z >= 1`` is met."""
    return sign - fmin(1.0, fmax(-1.0, z))


cdef float64_t sgd_margin_step(RegressorGroup* group, const index_t* indices,
                               const float32_t* values, index_t nnz, float64_t sign,
                               float64_t learning_rate) noexcept nogil:
    """Apply ``w_j += a * sign * x_j``, a safe hinge step; return the score after it.

    ``a = min(learning_rate, |error| / (1 + ||x||^2))``, so the score never
    passes the target; nothing changes when the margin is already met. The
    group holds one regressor.
    """
    cdef float64_t z = score(group, 0, indices, values, nnz)
    cdef float64_t error = _margin_error(z, sign)
    if error == 0.0:
        return z
    cdef float64_t squared_norm = 1.0  # the bias feature
    cdef state_t* weight
    cdef float64_t x, step, z_after
    cdef index_t k
    for k in range(nnz):
        x = values[k]
        squared_norm += x * x
    step = sign * fmin(learning_rate, fabs(error) / squared_norm)
    weight = weight_of(group, 0, group.bias_index)
    weight[0] += step
    z_after = weight[0]
    for k in range(nnz):
        x = values[k]
        if x != 0.0:
            weight = weight_of(group, 0, indices[k])
            weight[0] += step * x
            z_after += x * weight[0]
    group.n_updates += 1
    return z_after


cdef inline float64_t _margin_rate(const state_t* block) noexcept nogil:
    """Return the per-feature rate ``1 / (s_j * sqrt(G_j))`` of a margin step."""
    return 1.0 / (block[SCALE] * sqrt(block[SUM_SQ_GRAD]))


cdef float64_t nag_margin_step(RegressorGroup* group, const index_t* indices,
                               const float32_t* values, index_t nnz, float64_t sign,
                               float64_t learning_rate) noexcept nogil:
    """Apply one safe hinge step with NAG's per-feature rates; return the new score.

    The step on feature j is ``a * sign * x_j / (s_j * sqrt(G_j))`` scaled
    by ``sqrt(t / N)``, with ``a = min(learning_rate, |error| / sensitivity)``.
    The group holds one regressor.
    """
    cdef float64_t z = score(group, 0, indices, values, nnz)
    cdef float64_t error = _margin_error(z, sign)
    if error == 0.0:
        return z
    cdef state_t* block = feature_block(group, group.bias_index)
    cdef float64_t x, multiplier, step, z_after
    cdef float64_t norm = group.norm
    cdef float64_t sensitivity
    cdef index_t k
    # Pass 1: grow the scales (rescaling weights) and G, re-score, and
    # measure how far a unit step moves the score.
    z = -0.0  # the exact identity of +, so that z begins with the bias itself
    norm += _observe_feature(block, 1, 1.0, &z)
    block[SUM_SQ_GRAD] += 1.0
    sensitivity = _margin_rate(block)
    for k in range(nnz):
        x = values[k]
        if x != 0.0:
            block = feature_block(group, indices[k])
            norm += _observe_feature(block, 1, x, &z)
            block[SUM_SQ_GRAD] += x * x
            sensitivity += x * x * _margin_rate(block)
    group.norm = norm
    group.n_updates += 1
    multiplier = sqrt(<float64_t>group.n_updates / norm)
    # The rescaled score sets the cap, so that the step never passes the target.
    error = _margin_error(z, sign)
    step = sign * multiplier * fmin(learning_rate, fabs(error) / (multiplier * sensitivity))
    # Pass 2: the step itself, accumulating the new score.
    block = feature_block(group, group.bias_index)
    block[WEIGHT] += step * _margin_rate(block)
    z_after = block[WEIGHT]
    for k in range(nnz):
        x = values[k]
        if x != 0.0:
            block = feature_block(group, indices[k])
            block[WEIGHT] += step * x * _margin_rate(block)
            z_after += x * block[WEIGHT]
    return z_after


cdef void reset_group(RegressorGroup* group, index_t n_blocks) noexcept nogil:
    """Zero the first `n_blocks` state blocks and the bias's, and the normaliser."""
    memset(group.state, 0, <offset_t>n_blocks * group.block_size * sizeof(state_t))
    memset(feature_block(group, group.bias_index), 0, group.block_size * sizeof(state_t))
    group.norm = 0.0
    group.n_updates = 0


# ----------------------------------------------------------------------------- test wrappers


def _check_step_arguments(weights, indices, values):
    """Validate the arrays of a single-step wrapper; return them as typed arrays."""
    weights = np.asarray(weights)
    if weights.dtype != np.float64 or weights.ndim != 1 or not weights.flags.c_contiguous:
        raise ValueError("weights must be a contiguous 1-D float64 array (bias last)")
    indices = np.ascontiguousarray(indices, dtype=np.int32)
    values = np.ascontiguousarray(values, dtype=np.float32)
    if indices.shape != values.shape or indices.ndim != 1:
        raise ValueError("indices and values must be 1-D arrays of the same length")
    if indices.size and (indices.min() < 0 or indices.max() >= weights.shape[0] - 1):
        raise ValueError(f"feature index out of range [0, {weights.shape[0] - 1})")
    return weights, indices, values


cdef RegressorGroup _group_of_one(state_t[:, ::1] blocks, float64_t norm,
                                  long long n_updates):
    """A group of one regressor over ``blocks``, (n_features + 1, 3): ``s_j, w_j, G_j``."""
    cdef RegressorGroup group = new_group(&blocks[0, 0], 1, blocks.shape[0] - 1)
    group.norm = norm
    group.n_updates = n_updates
    return group


def _py_sgd_step(weights, indices, values, double target, double learning_rate):
    """Apply one SGD step in place to ``weights`` (bias last); return the new score.

    Test-only wrapper around the ``sgd_step`` kernel.
    """
    weights, indices, values = _check_step_arguments(weights, indices, values)
    blocks = np.zeros((weights.shape[0], 3), dtype=STATE_DTYPE)
    blocks[:, WEIGHT] = weights
    cdef const index_t[::1] idx = indices
    cdef const float32_t[::1] val = values
    cdef RegressorGroup group = _group_of_one(blocks, 0.0, 0)
    cdef float64_t z
    sgd_step(&group, &idx[0] if idx.shape[0] else NULL, &val[0] if val.shape[0] else NULL,
             idx.shape[0], &target, learning_rate, &z)
    weights[:] = blocks[:, WEIGHT]
    return z


def _py_nag_step(weights, scale, sum_sq_grad, double norm, long long n_updates, indices, values,
                 double target, double learning_rate):
    """Apply one NAG step in place to ``weights``, ``scale`` and ``sum_sq_grad``.

    Test-only wrapper around the ``nag_step`` kernel. All three arrays are
    float64 of length ``n_features + 1`` (bias last); the kernel holds them
    in float32, so what it writes back is rounded to float32.

    Returns
    -------
    tuple
        ``(score_after_update, norm, n_updates)``.
    """
    weights, indices, values = _check_step_arguments(weights, indices, values)
    for name, array in (("scale", scale), ("sum_sq_grad", sum_sq_grad)):
        if (not isinstance(array, np.ndarray) or array.dtype != np.float64
                or array.shape != weights.shape or not array.flags.c_contiguous):
            raise ValueError(f"{name} must be a contiguous float64 array shaped like weights")
    blocks = np.stack([scale, weights, sum_sq_grad], axis=1).astype(STATE_DTYPE)
    cdef const index_t[::1] idx = indices
    cdef const float32_t[::1] val = values
    cdef RegressorGroup group = _group_of_one(blocks, norm, n_updates)
    cdef float64_t z
    nag_step(&group, &idx[0] if idx.shape[0] else NULL, &val[0] if val.shape[0] else NULL,
             idx.shape[0], &target, learning_rate, &z)
    scale[:], weights[:], sum_sq_grad[:] = blocks.T
    return z, group.norm, group.n_updates
