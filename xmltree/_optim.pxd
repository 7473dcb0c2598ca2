# Online updates of one linear regressor on one sparse example.
#
# A regressor scores an example x with z = w[bias] + sum_j x_j * w[j], where the
# bias is an extra feature of constant value 1 stored at index `bias_index`
# (= n_features) of every dense array below. Both optimisers minimise the
# logistic cross-entropy of sigmoid(z) against a target in {0, 1}, whose
# gradient with respect to z is g = sigmoid(z) - target.
#
# The state arrays are dense over the feature space so that a step costs
# O(nnz(x)); whoever owns them resets only the entries it touched. Features
# with x_j == 0 (explicit zeros) are skipped everywhere, so they never change
# a weight, a scale or a normaliser.
#
# The *margin* steps are the alternative used by LOMtree: they move the score
# towards a target sign s in {-1, +1} with a hinge-type loss and stop once
# s * z >= 1 (see _optim.pyx).
#
# These kernels are shared by every tree learner that trains linear node
# regressors online (LdSM, LOMtree).

from libc.stdint cimport int64_t

from ._types cimport float32_t, float64_t, index_t


cdef enum OptimizerKind:
    OPTIMIZER_SGD = 0   # plain stochastic gradient descent
    OPTIMIZER_NAG = 1   # normalized adaptive gradient (Ross, Mineiro & Langford 2013)


cdef struct Regressor:
    # One linear regressor and its optimiser state (all arrays n_features + 1 long).
    float64_t* weights      # w_j; weights[bias_index] is the bias
    float64_t* scale        # NAG: s_j, the largest |x_j| seen so far (0 = never seen)
    float64_t* sum_sq_grad  # NAG: G_j, the sum of squared per-feature gradients
    float64_t norm          # NAG: N, the running sum of (x_j / s_j)^2 over updates
    int64_t n_updates       # t, the number of updates applied so far
    index_t bias_index      # index of the constant bias feature (= n_features)


cdef float64_t sigmoid(float64_t z) noexcept nogil

cdef float64_t score(const Regressor* regressor, const index_t* indices,
                     const float32_t* values, index_t nnz) noexcept nogil

cdef float64_t sgd_step(Regressor* regressor, const index_t* indices, const float32_t* values,
                        index_t nnz, float64_t target, float64_t learning_rate) noexcept nogil

cdef float64_t nag_step(Regressor* regressor, const index_t* indices, const float32_t* values,
                        index_t nnz, float64_t target, float64_t learning_rate) noexcept nogil

cdef float64_t regressor_step(OptimizerKind optimizer, Regressor* regressor,
                              const index_t* indices, const float32_t* values, index_t nnz,
                              float64_t target, float64_t learning_rate) noexcept nogil

cdef void reset_regressor(Regressor* regressor, const index_t* features,
                          index_t n_features_touched) noexcept nogil

cdef float64_t sgd_margin_step(Regressor* regressor, const index_t* indices,
                               const float32_t* values, index_t nnz, float64_t sign,
                               float64_t learning_rate) noexcept nogil

cdef float64_t nag_margin_step(Regressor* regressor, const index_t* indices,
                               const float32_t* values, index_t nnz, float64_t sign,
                               float64_t learning_rate) noexcept nogil
