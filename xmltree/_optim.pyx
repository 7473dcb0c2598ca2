"""Online SGD and NAG updates of one linear regressor (see ``_optim.pxd``).

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
score after the resulting rescaling, so that it holds exactly.
"""

import numpy as np

from libc.math cimport exp, fabs, fmax, fmin, sqrt

from ._types cimport float32_t, float64_t, index_t


cdef float64_t sigmoid(float64_t z) noexcept nogil:
    """Return the logistic function of `z` without overflowing ``exp``."""
    cdef float64_t e
    if z >= 0.0:
        return 1.0 / (1.0 + exp(-z))
    e = exp(z)
    return e / (1.0 + e)


cdef float64_t score(const Regressor* regressor, const index_t* indices,
                     const float32_t* values, index_t nnz) noexcept nogil:
    """Return ``z = bias + sum_j x_j * w_j``, accumulated bias first, j increasing."""
    cdef const float64_t* weights = regressor.weights
    cdef float64_t z = weights[regressor.bias_index]
    cdef index_t k
    for k in range(nnz):
        if values[k] != 0.0:
            z += <float64_t>values[k] * weights[indices[k]]
    return z


cdef float64_t sgd_step(Regressor* regressor, const index_t* indices, const float32_t* values,
                        index_t nnz, float64_t target, float64_t learning_rate) noexcept nogil:
    """Apply ``w_j -= learning_rate * g * x_j`` and return the score after the update."""
    cdef float64_t* weights = regressor.weights
    cdef index_t bias = regressor.bias_index
    cdef float64_t z = score(regressor, indices, values, nnz)
    cdef float64_t step = learning_rate * (sigmoid(z) - target)
    cdef float64_t x, z_after
    cdef index_t k, j
    weights[bias] -= step
    z_after = weights[bias]
    for k in range(nnz):
        x = values[k]
        if x != 0.0:
            j = indices[k]
            weights[j] -= step * x
            z_after += x * weights[j]
    regressor.n_updates += 1
    return z_after


cdef inline float64_t _observe_feature(Regressor* regressor, index_t j,
                                       float64_t x) noexcept nogil:
    """Grow the scale of feature j to ``|x|`` if needed; return ``(x / s_j)^2``."""
    cdef float64_t magnitude = fabs(x)
    cdef float64_t* scale = regressor.scale
    cdef float64_t ratio
    if magnitude > scale[j]:
        if scale[j] > 0.0:
            regressor.weights[j] *= scale[j] / magnitude
        scale[j] = magnitude
    ratio = x / scale[j]
    return ratio * ratio


cdef inline float64_t _nag_update_feature(Regressor* regressor, index_t j, float64_t x,
                                          float64_t g, float64_t rate) noexcept nogil:
    """Apply the NAG step to feature j; return ``x * w_j`` after the update."""
    cdef float64_t gradient = g * x
    cdef float64_t* weights = regressor.weights
    regressor.sum_sq_grad[j] += gradient * gradient
    # G_j == 0 only when g == 0 (sigmoid saturated on its target): no step, no 0/0.
    if regressor.sum_sq_grad[j] > 0.0:
        weights[j] -= rate * gradient / (regressor.scale[j] * sqrt(regressor.sum_sq_grad[j]))
    return x * weights[j]


cdef float64_t nag_step(Regressor* regressor, const index_t* indices, const float32_t* values,
                        index_t nnz, float64_t target, float64_t learning_rate) noexcept nogil:
    """Apply one normalized adaptive gradient step; return the score after the update."""
    cdef index_t bias = regressor.bias_index
    cdef float64_t* weights = regressor.weights
    cdef float64_t x, z, g, rate, z_after
    cdef float64_t norm = regressor.norm  # a local, so the loop keeps it in a register
    cdef index_t k
    # Pass 1: grow the scales (rescaling weights), then score and normalise.
    norm += _observe_feature(regressor, bias, 1.0)
    z = weights[bias]
    for k in range(nnz):
        x = values[k]
        if x != 0.0:
            norm += _observe_feature(regressor, indices[k], x)
            z += x * weights[indices[k]]
    regressor.norm = norm
    regressor.n_updates += 1
    g = sigmoid(z) - target
    rate = learning_rate * sqrt(<float64_t>regressor.n_updates / regressor.norm)
    # Pass 2: per-feature adaptive step, accumulating the new score.
    z_after = _nag_update_feature(regressor, bias, 1.0, g, rate)
    for k in range(nnz):
        x = values[k]
        if x != 0.0:
            z_after += _nag_update_feature(regressor, indices[k], x, g, rate)
    return z_after


cdef float64_t regressor_step(OptimizerKind optimizer, Regressor* regressor,
                              const index_t* indices, const float32_t* values, index_t nnz,
                              float64_t target, float64_t learning_rate) noexcept nogil:
    """Dispatch one update to the chosen optimiser; return the score after it."""
    if optimizer == OPTIMIZER_NAG:
        return nag_step(regressor, indices, values, nnz, target, learning_rate)
    return sgd_step(regressor, indices, values, nnz, target, learning_rate)


cdef inline float64_t _margin_error(float64_t z, float64_t sign) noexcept nogil:
    """Return ``sign - clip(z, -1, 1)``: 0 once the margin ``sign * z >= 1`` is met."""
    return sign - fmin(1.0, fmax(-1.0, z))


cdef float64_t sgd_margin_step(Regressor* regressor, const index_t* indices,
                               const float32_t* values, index_t nnz, float64_t sign,
                               float64_t learning_rate) noexcept nogil:
    """Apply ``w_j += a * sign * x_j``, a safe hinge step; return the score after it.

    ``a = min(learning_rate, |error| / (1 + ||x||^2))``, so the score never
    passes the target; nothing changes when the margin is already met.
    """
    cdef float64_t* weights = regressor.weights
    cdef index_t bias = regressor.bias_index
    cdef float64_t z = score(regressor, indices, values, nnz)
    cdef float64_t error = _margin_error(z, sign)
    if error == 0.0:
        return z
    cdef float64_t squared_norm = 1.0  # the bias feature
    cdef float64_t x, step, z_after
    cdef index_t k, j
    for k in range(nnz):
        x = values[k]
        squared_norm += x * x
    step = sign * fmin(learning_rate, fabs(error) / squared_norm)
    weights[bias] += step
    z_after = weights[bias]
    for k in range(nnz):
        x = values[k]
        if x != 0.0:
            j = indices[k]
            weights[j] += step * x
            z_after += x * weights[j]
    regressor.n_updates += 1
    return z_after


cdef inline float64_t _margin_rate(const Regressor* regressor, index_t j) noexcept nogil:
    """Return the per-feature rate ``1 / (s_j * sqrt(G_j))`` of a margin step."""
    return 1.0 / (regressor.scale[j] * sqrt(regressor.sum_sq_grad[j]))


cdef float64_t nag_margin_step(Regressor* regressor, const index_t* indices,
                               const float32_t* values, index_t nnz, float64_t sign,
                               float64_t learning_rate) noexcept nogil:
    """Apply one safe hinge step with NAG's per-feature rates; return the new score.

    The step on feature j is ``a * sign * x_j / (s_j * sqrt(G_j))`` scaled
    by ``sqrt(t / N)``, with ``a = min(learning_rate, |error| / sensitivity)``.
    """
    cdef index_t bias = regressor.bias_index
    cdef float64_t* weights = regressor.weights
    cdef float64_t z = score(regressor, indices, values, nnz)
    cdef float64_t error = _margin_error(z, sign)
    if error == 0.0:
        return z
    cdef float64_t x, multiplier, step, z_after
    cdef float64_t norm = regressor.norm
    cdef float64_t sensitivity
    cdef index_t k, j
    # Pass 1: grow the scales (rescaling weights) and G, re-score, and
    # measure how far a unit step moves the score.
    norm += _observe_feature(regressor, bias, 1.0)
    regressor.sum_sq_grad[bias] += 1.0
    sensitivity = _margin_rate(regressor, bias)
    z = weights[bias]
    for k in range(nnz):
        x = values[k]
        if x != 0.0:
            j = indices[k]
            norm += _observe_feature(regressor, j, x)
            regressor.sum_sq_grad[j] += x * x
            sensitivity += x * x * _margin_rate(regressor, j)
            z += x * weights[j]
    regressor.norm = norm
    regressor.n_updates += 1
    multiplier = sqrt(<float64_t>regressor.n_updates / norm)
    # The rescaled score sets the cap, so that the step never passes the target.
    error = _margin_error(z, sign)
    step = sign * multiplier * fmin(learning_rate, fabs(error) / (multiplier * sensitivity))
    # Pass 2: the step itself, accumulating the new score.
    weights[bias] += step * _margin_rate(regressor, bias)
    z_after = weights[bias]
    for k in range(nnz):
        x = values[k]
        if x != 0.0:
            j = indices[k]
            weights[j] += step * x * _margin_rate(regressor, j)
            z_after += x * weights[j]
    return z_after


cdef void reset_regressor(Regressor* regressor, const index_t* features,
                          index_t n_features_touched) noexcept nogil:
    """Zero the weights and optimiser state of `features` and of the bias."""
    cdef index_t k, j
    for k in range(n_features_touched + 1):
        j = features[k] if k < n_features_touched else regressor.bias_index
        regressor.weights[j] = 0.0
        regressor.scale[j] = 0.0
        regressor.sum_sq_grad[j] = 0.0
    regressor.norm = 0.0
    regressor.n_updates = 0


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


def _py_sgd_step(weights, indices, values, double target, double learning_rate):
    """Apply one SGD step in place to ``weights`` (bias last); return the new score.

    Test-only wrapper around the ``sgd_step`` kernel.
    """
    weights, indices, values = _check_step_arguments(weights, indices, values)
    cdef float64_t[::1] w = weights
    cdef const index_t[::1] idx = indices
    cdef const float32_t[::1] val = values
    cdef Regressor regressor
    regressor.weights = &w[0]
    regressor.scale = NULL
    regressor.sum_sq_grad = NULL
    regressor.norm = 0.0
    regressor.n_updates = 0
    regressor.bias_index = w.shape[0] - 1
    return sgd_step(&regressor, &idx[0] if idx.shape[0] else NULL,
                    &val[0] if val.shape[0] else NULL, idx.shape[0], target, learning_rate)


def _py_nag_step(weights, scale, sum_sq_grad, double norm, long long n_updates, indices, values,
                 double target, double learning_rate):
    """Apply one NAG step in place to ``weights``, ``scale`` and ``sum_sq_grad``.

    Test-only wrapper around the ``nag_step`` kernel. All three arrays are
    float64 of length ``n_features + 1`` (bias last).

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
    cdef float64_t[::1] w = weights
    cdef float64_t[::1] s = scale
    cdef float64_t[::1] G = sum_sq_grad
    cdef const index_t[::1] idx = indices
    cdef const float32_t[::1] val = values
    cdef Regressor regressor
    regressor.weights = &w[0]
    regressor.scale = &s[0]
    regressor.sum_sq_grad = &G[0]
    regressor.norm = norm
    regressor.n_updates = n_updates
    regressor.bias_index = w.shape[0] - 1
    z = nag_step(&regressor, &idx[0] if idx.shape[0] else NULL,
                 &val[0] if val.shape[0] else NULL, idx.shape[0], target, learning_rate)
    return z, regressor.norm, regressor.n_updates
