# LdSM node training (Majzoubi & Choromanska, AISTATS 2020): direction search
# over the 2^M - 1 non-empty subsets of children, online regressor updates, the
# weight budget, and the routing of the node's examples to its children.

from libc.stdint cimport int64_t, uint8_t, uint64_t
from libcpp.queue cimport priority_queue
from libcpp.utility cimport pair
from libcpp.vector cimport vector

from .._kernels._optim cimport OptimizerKind, RegressorGroup, state_t
from .._kernels._random cimport rng_state
from .._kernels._sparse cimport CSRView
from .._kernels._types cimport float32_t, float64_t, index_t, offset_t


cdef struct NodeSettings:
    # Hyper-parameters of node training, identical for every node of a tree.
    index_t arity                 # M, children per internal node
    index_t epochs                # E, passes over the node's examples, at most
    float64_t epoch_tolerance     # stop once a pass changes the mean chosen J by at most
                                  # this fraction of the previous pass's; 0: all E passes
    float64_t lambda1             # weight of the class-integrity term of J
    float64_t lambda2             # weight of the multi-way penalty of J
    float64_t learning_rate       # eta of the regressor updates
    OptimizerKind optimizer       # SGD or NAG
    bint sigmoid_routing          # statistics use sigmoid(z) instead of clamp(z, 0, 1)
    float64_t threshold           # routing threshold on z: 0.5 (margin) or 0 (sigmoid)
    float64_t weight_threshold    # stored weights need |w| >= this
    index_t max_weights           # weight budget of a regressor: max(max_weights,
    float64_t weights_per_row     # weights_per_row * examples of the node); >= D: no cap


cdef class NodeTrainer:
    # Trains the M regressors of one node at a time and routes its examples.
    # All scratch is sized once per tree (dense in D and K) and reset through
    # the lists of features and labels the node touched.
    cdef object _keep_alive               # the numpy arrays behind X and Y
    cdef CSRView X                        # features, float32 values
    cdef CSRView Y                        # binary labels
    cdef NodeSettings settings            # hyper-parameters
    cdef rng_state rng                    # the tree's generator (permutation, init, ties)
    cdef index_t n_rows                   # examples of the node being trained
    cdef vector[state_t] state            # ((n_features + 1) * (1 + 2M),) weights and NAG
                                          # state of the M regressors (see _optim.pxd), a
                                          # block per local id, the bias's last
    cdef RegressorGroup regressors        # the node's M regressors, over `state`
    cdef vector[float64_t] targets        # (M,) 1 if the example goes to child m, else 0
    cdef vector[float64_t] scores         # (M,) regressor scores after a step
    cdef vector[uint64_t] feature_bits    # (ceil(D / 64),) bit j % 64 of word j // 64 set
                                          # if feature j is in node_features
    cdef vector[index_t] node_features    # sorted features present at the node
    cdef vector[index_t] local_id         # (D,) local id of a feature: its position in
                                          # node_features (valid for those only); the state
                                          # block of node_features[k] is block k
    cdef vector[offset_t] local_indptr    # (n_samples + 1,) the node's rows in the order
    cdef vector[index_t] local_index      # (nnz(X),) given to start_node, as CSR over
    cdef vector[float32_t] local_value    # (nnz(X),) local ids
    cdef vector[index_t] label_slot       # (K,) local slot of a label at the node, or -1
    cdef vector[index_t] node_labels      # labels reaching the node, by slot
    cdef vector[int64_t] label_count      # (slots,) l_v[k], label occurrences seen so far
    cdef vector[float64_t] label_prob     # (slots * M,) P_m^k, indexed slot * M + m
    cdef vector[float64_t] prob           # (M,) P_m
    cdef int64_t total_count              # C_v, label occurrences seen so far
    cdef vector[index_t] example_slots    # slots of the current example's labels
    cdef vector[float64_t] tentative      # (2 * M,) P_m if the example goes (1) or not (0)
    cdef vector[float64_t] label_row      # (2 * M,) same for P_m^k of one label
    cdef vector[float64_t] pair_integrity  # (4 * M(M-1)/2,) integrity sums per pair and case
    cdef vector[float64_t] objective      # (2^M,) J of each direction subset
    cdef vector[index_t] tied             # (2^M,) subsets tied for the lowest J
    cdef vector[vector[index_t]] kept_feature  # (M,) features of a regressor's stored
                                               # weights, increasing (D reserved)
    cdef vector[vector[float32_t]] kept_value  # (M,) the stored weights (D reserved)
    cdef vector[float32_t] magnitudes     # |w| of a regressor's stored weights (D reserved)

    cdef int start_node(self, const index_t* rows, index_t n_rows) except -1 nogil
    cdef void sort_node_features(self) noexcept nogil
    cdef void local_rows(self) noexcept nogil
    cdef index_t train_node(self, const index_t* rows, index_t n_rows, float64_t* trace,
                            index_t* directions) noexcept nogil
    cdef bint converged(self, float64_t previous, float64_t current) noexcept nogil
    cdef index_t train_example(self, index_t position, index_t row,
                                float64_t* chosen_objective) noexcept nogil
    cdef index_t weight_cap(self) noexcept nogil
    cdef void keep_largest(self, index_t m, index_t cap) noexcept nogil
    cdef void round_weights(self) noexcept nogil
    cdef void route_example(self, index_t position, float64_t* scores,
                            uint8_t* goes) noexcept nogil
    cdef float64_t weight_of_feature(self, index_t m, index_t feature) noexcept nogil
    cdef void finish_node(self) noexcept nogil
