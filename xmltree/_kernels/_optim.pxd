# Online updates of linear regressors on one sparse example.
#
# A regressor scores an example x with z = w[bias] + sum_j x_j * w[j], where the
# bias is an extra feature of constant value 1 stored at index `bias_index`
# (= n_features) of the dense state below. Both optimisers minimise the
# logistic cross-entropy of sigmoid(z) against a target in {0, 1}, whose
# gradient with respect to z is g = sigmoid(z) - target.
#
# Regressors are trained in groups that see the same examples: the M
# regressors of an LdSM node (one per child), or the single regressor of a
# LOMtree node. A step updates every regressor of its group on one example,
# each towards its own target. NAG's scales s_j and normaliser N depend only
# on the examples, so the regressors of a group share them: they hold what M
# separate regressors stepped on the same examples would hold, computed once.
#
# The state of a group is dense over the feature ids its examples use, so that
# a step costs O(nnz(x)); whoever owns it resets only the entries it touched (an
# LdSM node numbers its own features from 0, so that those lie together). Each
# feature has one block of 1 + 2M float32 (`state_t`), so that a step reads and
# writes one or two cache lines per feature for the whole group (separate arrays
# per quantity and per regressor took 3M):
#
#     block_j = [s_j, w_j^0 .. w_j^(M-1), G_j^0 .. G_j^(M-1)]
#
# The steps compute in float64 and store in float32, as Vowpal Wabbit keeps
# its weights: where examples have many distinct features the state is read
# at random, and half the bytes wait half as long on memory.
#
# Features with x_j == 0 (explicit zeros) are skipped everywhere, so they
# never change a weight, a scale or a normaliser.
#
# The *margin* steps are the alternative used by LOMtree: they move the score
# towards a target sign s in {-1, +1} with a hinge-type loss and stop once
# s * z >= 1 (see _optim.pyx). Whether a regressor steps then depends on its
# own score, so they take groups of one regressor.
#
# These kernels are shared by every tree learner that trains linear node
# regressors online (LdSM, LOMtree).

from libc.stdint cimport int64_t

from ._types cimport float32_t, float64_t, index_t, offset_t


ctypedef float32_t state_t  # an entry of the optimiser state (see above)


cdef enum OptimizerKind:
    OPTIMIZER_SGD = 0   # plain stochastic gradient descent
    OPTIMIZER_NAG = 1   # normalized adaptive gradient (Ross, Mineiro & Langford 2013)


cdef enum:
    # Regressors per group, at most (at least xmltree.ldsm._tree_arrays.MAX_ARITY).
    MAX_GROUP_SIZE = 8


cdef struct RegressorGroup:
    # M linear regressors trained on the same examples, and their optimiser state.
    state_t* state          # (n_features + 1) blocks of block_size entries, bias last
    index_t n_regressors    # M, 1 to MAX_GROUP_SIZE
    index_t block_size      # 1 + 2M: s_j, then w_j of each regressor, then G_j of each
    float64_t norm          # NAG: N, the running sum of (x_j / s_j)^2 over updates
    int64_t n_updates       # t, the number of updates applied so far
    index_t bias_index      # index of the constant bias feature (= n_features)


cdef inline index_t group_block_size(index_t n_regressors) noexcept nogil:
    """Entries per feature block of a group of `n_regressors`: s_j, then w_j
    and G_j of each regressor."""
    return 1 + 2 * n_regressors


cdef inline RegressorGroup new_group(state_t* state, index_t n_regressors,
                                     index_t n_features) noexcept nogil:
    """A group of `n_regressors` over `state`, ``n_features + 1`` blocks of
    ``group_block_size(n_regressors)`` entries that the caller zeroes (or
    fills), with no update applied yet."""
    cdef RegressorGroup group
    group.state = state
    group.n_regressors = n_regressors
    group.block_size = group_block_size(n_regressors)
    group.norm = 0.0
    group.n_updates = 0
    group.bias_index = n_features
    return group


cdef inline state_t* feature_block(const RegressorGroup* group, index_t j) noexcept nogil:
    """Return the state block of feature j (the bias for ``j == bias_index``)."""
    return group.state + <offset_t>j * group.block_size


cdef inline state_t* weight_of(const RegressorGroup* group, index_t m, index_t j) noexcept nogil:
    """Return a pointer to w_j of regressor m (its bias for ``j == bias_index``)."""
    return feature_block(group, j) + 1 + m


cdef float64_t sigmoid(float64_t z) noexcept nogil

cdef float64_t score(const RegressorGroup* group, index_t m, const index_t* indices,
                     const float32_t* values, index_t nnz) noexcept nogil

cdef void sgd_step(RegressorGroup* group, const index_t* indices, const float32_t* values,
                   index_t nnz, const float64_t* targets, float64_t learning_rate,
                   float64_t* scores) noexcept nogil

cdef void nag_step(RegressorGroup* group, const index_t* indices, const float32_t* values,
                   index_t nnz, const float64_t* targets, float64_t learning_rate,
                   float64_t* scores) noexcept nogil

cdef void regressor_step(OptimizerKind optimizer, RegressorGroup* group,
                         const index_t* indices, const float32_t* values, index_t nnz,
                         const float64_t* targets, float64_t learning_rate,
                         float64_t* scores) noexcept nogil

cdef void reset_group(RegressorGroup* group, index_t n_blocks) noexcept nogil

cdef float64_t sgd_margin_step(RegressorGroup* group, const index_t* indices,
                               const float32_t* values, index_t nnz, float64_t sign,
                               float64_t learning_rate) noexcept nogil

cdef float64_t nag_margin_step(RegressorGroup* group, const index_t* indices,
                               const float32_t* values, index_t nnz, float64_t sign,
                               float64_t learning_rate) noexcept nogil
