# LdSM tree growth (Majzoubi & Choromanska, AISTATS 2020): the best-first
# growth of one tree, its nodes trained by _node_trainer.pyx.
#
# Tree invariants (the flat-tree contract with _forest.pyx): the root is node 0;
# the children of an internal node v are first_child[v] + m for m < arity and
# have larger ids than v; a leaf has first_child == -1, no regressors and a
# label histogram normalised to sum to 1; node v's weights are CSR row v of
# the weight arrays: the sorted union of its regressors' feature ids, each
# with one weight per regressor (0 where that regressor kept none).

from libc.stdint cimport int64_t, uint8_t, uint64_t
from libcpp.queue cimport priority_queue
from libcpp.utility cimport pair
from libcpp.vector cimport vector

from .._kernels._types cimport float32_t, float64_t, index_t, offset_t


from ._node_trainer cimport NodeTrainer


cdef class TreeBuilder:
    # Grows one tree best-first and records it as flat per-node arrays,
    # indexed by node id (ids are given in creation order).
    cdef NodeTrainer trainer              # node training and routing
    cdef index_t arity                    # M
    cdef index_t max_nodes                # growth budget
    cdef bint leaf_frequency              # leaves store label frequencies, not distributions
    cdef index_t max_leaf_labels          # labels a leaf keeps, its most frequent; 0: all
    cdef object node_count                # the int64 counter of nodes expanded, or None
    cdef int64_t* expanded                # its entry (written without the GIL), or NULL
    cdef vector[index_t] first_child      # (n_nodes,) child 0 of the node, -1 for a leaf
    cdef vector[index_t] parent           # (n_nodes,) -1 for the root
    cdef vector[index_t] depth            # (n_nodes,) 0 for the root
    cdef vector[offset_t] n_samples       # (n_nodes,) training examples at the node
    cdef vector[float32_t] bias           # (n_nodes * M,) regressor biases, 0 for leaves
    cdef vector[offset_t] weight_begin    # (n_nodes,) start of the node in weight_feature
    cdef vector[offset_t] weight_end      # (n_nodes,) end of the node in weight_feature
    cdef vector[index_t] weight_feature   # feature ids of all nodes' weights, by span
    cdef vector[float32_t] weight_value   # (M per feature id) their weights, child by child
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
    cdef index_t epochs_run               # passes the node being trained took
    cdef vector[float64_t] scores         # (M,) regressor scores of one example
    cdef vector[uint8_t] goes             # (M,) children chosen for one example

    cdef int grow(self) except -1 nogil
    cdef index_t new_node(self, index_t parent_id, index_t n_rows) except -1 nogil
    cdef int consider(self, index_t node) except -1 nogil
    cdef int expand(self, index_t node) except -1 nogil
    cdef int store_split(self, index_t node) except -1 nogil
    cdef int store_weights(self, index_t node) except -1 nogil
    cdef int count_labels(self, const vector[index_t]& rows) except -1 nogil
    cdef int store_leaf(self, index_t node) except -1 nogil
    cdef int keep_most_frequent_labels(self) except -1 nogil
    cdef void clear_histogram(self) noexcept nogil
    cdef int make_leaf(self, index_t node) except -1 nogil
