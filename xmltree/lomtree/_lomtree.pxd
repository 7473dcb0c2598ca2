# distutils: language = c++
# Online LOMtree (Choromanska & Langford, NIPS 2015, Algorithm 1).
#
# The tree is a flat array of nodes. Invariants kept by every kernel:
# node 0 is the root (parent -1); a node is a leaf iff left == right == -1;
# an internal node has both children and owns one regressor slot; every node
# ever created stays in the tree (a swap re-attaches recycled nodes), so the
# nodes form one binary tree with n_nodes == 2 * n_internal + 1.

from libc.stdint cimport int32_t, int64_t
from libcpp.vector cimport vector

from .._kernels._optim cimport OptimizerKind, RegressorGroup, state_t
from .._kernels._types cimport float32_t, float64_t, index_t


cdef enum LossKind:
    LOSS_HINGE = 0      # margin steps to a target sign (Vowpal Wabbit's log_multi)
    LOSS_LOGISTIC = 1   # logistic loss against a target in {0, 1}


cdef struct Node:
    index_t parent        # parent node id; -1 for the root
    index_t left          # left child id (taken when the score is < 0); -1 for a leaf
    index_t right         # right child id (score >= 0); -1 for a leaf
    index_t regressor     # regressor slot of an internal node; -1 for a leaf
    int64_t min_count     # C_v: examples that reached the smallest leaf of the subtree
    int64_t max_reached   # max_y l_v(y): the count of the most frequent class at v
    float64_t score_sum   # sum_y m_v(y); E_v = score_sum / n_trained
    int64_t n_trained     # sum_y n_v(y): examples that trained the regressor of v
    int32_t n_recycled    # how many times a swap recycled this node (Lemma 3 bound)


cdef struct BeamEntry:
    # A node on the beam of a beam-search descent.
    float64_t log_prob    # log-probability of the path from the root to the node
    index_t node


cdef struct ClassStats:
    # Per-class running statistics of one node; a node keeps them sorted by label.
    index_t label         # class id y (encoded, 0 <= y < n_classes)
    int64_t n_reached     # l_v(y): examples of class y that reached v
    int64_t n_trained     # n_v(y): examples of class y that trained the regressor of v
    float64_t score_sum   # m_v(y): sum of their scores; e_v(y) = score_sum / n_trained


cdef class LOMTreeBuilder:
    cdef vector[Node] nodes                    # the tree; capacity 2 * max_internal_nodes + 1
    cdef vector[vector[ClassStats]] stats      # stats[v]: ClassStats of node v, sorted by label
    cdef vector[RegressorGroup] regressors     # one group of one regressor per slot in use
                                               # (n_internal); capacity T; over state rows
    cdef state_t[:, :, ::1] state              # (max_internal_nodes, n_features + 1, 3): per
                                               # slot and feature s_j, w_j, G_j; bias last
    cdef readonly index_t n_features           # dimension of x (without the bias)
    cdef readonly index_t n_classes            # class ids are 0 .. n_classes - 1
    cdef readonly index_t max_internal_nodes   # T, the budget of regressors
    cdef readonly index_t n_internal           # regressor slots in use (t of Algorithm 1)
    cdef readonly float64_t swap_resistance    # RS of Inequality 2
    cdef readonly float64_t learning_rate      # step size of the node regressors
    cdef OptimizerKind optimizer               # SGD or NAG (shared _optim kernels)
    cdef LossKind loss                         # loss of the node regressors
    cdef readonly int64_t n_swaps              # swaps performed so far
    cdef readonly int64_t n_examples_seen      # training examples processed so far
    cdef object ranking                        # cached _ranked_histograms(); None when stale
    cdef object margins                        # cached routing_margins(); None when stale

    cdef ClassStats* _observe_class(self, index_t node, index_t label) except NULL nogil
    cdef void _update_min_count(self, index_t node) noexcept nogil
    cdef bint _may_split(self, index_t leaf) noexcept nogil
    cdef index_t _smallest_leaf(self) noexcept nogil
    cdef void _reset_node(self, index_t node, index_t parent) noexcept nogil
    cdef void _append_leaf(self, index_t parent) noexcept nogil
    cdef void _append_regressor(self) noexcept nogil
    cdef void _reset_regressor(self, index_t slot) noexcept nogil
    cdef bint _recycle_into(self, index_t leaf) noexcept nogil
    cdef bint _split(self, index_t leaf) noexcept nogil
    cdef bint _finite(self) noexcept nogil
    cdef index_t _train_node(self, index_t node, ClassStats* stats, const index_t* indices,
                             const float32_t* values, index_t nnz) noexcept nogil
    cdef int _learn_one(self, const index_t* indices, const float32_t* values, index_t nnz,
                        index_t label) except -1 nogil
    cdef index_t _descend(self, const index_t* indices, const float32_t* values,
                          index_t nnz) noexcept nogil
    cdef int _beam_search(self, const index_t* indices, const float32_t* values,
                          index_t nnz, int width, float64_t scale, const float64_t* margins,
                          BeamEntry* work) noexcept nogil
    cdef index_t _route(self, const index_t* indices, const float32_t* values, index_t nnz,
                        int width, float64_t scale, const float64_t* margins,
                        BeamEntry* work) noexcept nogil
    cdef int _mix_histograms(self, const BeamEntry* beam, int n_beam, const int64_t* rank_ptr,
                             const index_t* rank_label, const float32_t* rank_score, int k,
                             float64_t* mass, unsigned char* listed, index_t* touched,
                             float64_t* best, index_t* out_labels,
                             float32_t* out_scores) noexcept nogil
    cdef void _fill_ranking(self, index_t leaf, const int64_t* rank_ptr,
                            const index_t* rank_label, const float32_t* rank_score, int k,
                            int filled, index_t* out_labels, float32_t* out_scores) noexcept nogil
