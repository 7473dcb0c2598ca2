# LdSM tree growth (Majzoubi & Choromanska, AISTATS 2020): node training by
# direction search over the 2^M - 1 non-empty subsets of children, online
# regressor updates, routing of the node's examples to its children, and the
# best-first growth of one tree.
#
# Tree invariants (the flat-tree contract with _forest.pyx): the root is node 0;
# the children of an internal node v are first_child[v] + m for m < arity and
# have larger ids than v; a leaf has first_child == -1, no regressors and a
# label histogram normalised to sum to 1; regressor m of node v is CSR row
# v * arity + m of the weight arrays, with sorted feature ids.

from libc.stdint cimport int64_t, uint8_t, uint64_t
from libcpp.queue cimport priority_queue
from libcpp.utility cimport pair
from libcpp.vector cimport vector

from .._kernels._optim cimport OptimizerKind, RegressorGroup
from .._kernels._random cimport rng_state
from .._kernels._sparse cimport CSRView
from .._kernels._types cimport float32_t, float64_t, index_t, offset_t


cdef struct NodeSettings:
    # Hyper-parameters of node training, identical for every node of a tree.
    index_t arity                 # M, children per internal node
    index_t epochs                # E, passes over the node's examples
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
    cdef vector[float64_t] state          # ((n_features + 1) * (1 + 2M),) weights and NAG
                                          # state of the M regressors (see _optim.pxd)
    cdef RegressorGroup regressors        # the node's M regressors, over `state`
    cdef vector[float64_t] targets        # (M,) 1 if the example goes to child m, else 0
    cdef vector[float64_t] scores         # (M,) regressor scores after a step
    cdef vector[uint64_t] feature_bits    # (ceil(D / 64),) bit j % 64 of word j // 64 set
                                          # if feature j is in node_features
    cdef vector[index_t] node_features    # sorted features present at the node
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
    cdef void train_node(self, const index_t* rows, index_t n_rows, float64_t* trace,
                         index_t* directions) noexcept nogil
    cdef index_t train_example(self, index_t row, float64_t* chosen_objective) noexcept nogil
    cdef void tabulate_terms(self, index_t n_labels) noexcept nogil
    cdef index_t choose_subset(self, index_t n_labels) noexcept nogil
    cdef void update_statistics(self, index_t m, float64_t pred, index_t n_labels) noexcept nogil
    cdef index_t weight_cap(self) noexcept nogil
    cdef void keep_largest(self, index_t m, index_t cap) noexcept nogil
    cdef void round_weights(self) noexcept nogil
    cdef void route_example(self, index_t row, float64_t* scores, uint8_t* goes) noexcept nogil
    cdef void finish_node(self) noexcept nogil


cdef class TreeBuilder:
    # Grows one tree best-first and records it as flat per-node arrays,
    # indexed by node id (ids are given in creation order).
    cdef NodeTrainer trainer              # node training and routing
    cdef index_t arity                    # M
    cdef index_t max_nodes                # growth budget
    cdef bint leaf_frequency              # leaves store label frequencies, not distributions
    cdef index_t max_leaf_labels          # labels a leaf keeps, its most frequent; 0: all
    cdef object progress                  # optional callable(n_expanded), or None
    cdef vector[index_t] first_child      # (n_nodes,) child 0 of the node, -1 for a leaf
    cdef vector[index_t] parent           # (n_nodes,) -1 for the root
    cdef vector[index_t] depth            # (n_nodes,) 0 for the root
    cdef vector[offset_t] n_samples       # (n_nodes,) training examples at the node
    cdef vector[float32_t] bias           # (n_nodes * M,) regressor biases, 0 for leaves
    cdef vector[offset_t] weight_begin    # (n_nodes * M,) start of the regressor in weight_feature
    cdef vector[offset_t] weight_end      # (n_nodes * M,) end of the regressor in weight_feature
    cdef vector[index_t] weight_feature   # stored weights of all regressors, by span
    cdef vector[float32_t] weight_value   # (same length)
    cdef vector[offset_t] leaf_begin      # (n_nodes,) leaf's span in the leaf buffers
    cdef vector[offset_t] leaf_end        # (n_nodes,)
    cdef vector[index_t] leaf_label       # normalised histograms of all leaves, by span
    cdef vector[float32_t] leaf_value     # (same length)
    cdef vector[offset_t] trace_begin     # (n_nodes,) node's span in trace_value
    cdef vector[offset_t] trace_end       # (n_nodes,)
    cdef vector[float32_t] trace_value    # mean chosen J per epoch of each trained node
    cdef vector[vector[index_t]] node_rows    # examples of nodes not yet finalised
    cdef vector[vector[index_t]] child_rows   # (M,) examples routed to each child
    cdef vector[index_t] current_rows     # examples of the node being expanded
    cdef priority_queue[pair[int64_t, index_t]] queue  # (priority, -node id)
    cdef vector[int64_t] label_hist       # (K,) histogram scratch, zero between uses
    cdef vector[index_t] hist_labels      # labels with a non-zero label_hist entry
    cdef vector[int64_t] label_total      # (K,) training examples carrying each label
    cdef vector[pair[int64_t, int64_t]] ranked_labels  # (-count, label_total * K + label)
    cdef int64_t hist_total               # sum of label_hist
    cdef int64_t hist_rows                # rows counted into label_hist
    cdef vector[float64_t] epoch_objective  # (E,) trace of the node being trained
    cdef vector[float64_t] scores         # (M,) regressor scores of one example
    cdef vector[uint8_t] goes             # (M,) children chosen for one example

    cdef int grow(self) except -1 nogil
    cdef index_t new_node(self, index_t parent_id, index_t n_rows) except -1 nogil
    cdef int consider(self, index_t node) except -1 nogil
    cdef int expand(self, index_t node) except -1 nogil
    cdef int store_split(self, index_t node) except -1 nogil
    cdef int count_labels(self, const vector[index_t]& rows) except -1 nogil
    cdef int store_leaf(self, index_t node) except -1 nogil
    cdef int keep_most_frequent_labels(self) except -1 nogil
    cdef void clear_histogram(self) noexcept nogil
    cdef int make_leaf(self, index_t node) except -1 nogil
