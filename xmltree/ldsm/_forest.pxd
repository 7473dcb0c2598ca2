# A forest of LdSM trees stored as one struct-of-arrays (``_forest_arrays.pxd``),
# and the kernels that predict with it.

from ._forest_arrays cimport ForestArrays
from .._kernels._types cimport float64_t, index_t


cdef class Forest:
    # Python-level owner of the concatenated arrays (kept alive while kernels
    # hold raw pointers into them).
    cdef readonly object tree_offset     # int64 (n_trees + 1,)
    cdef readonly object first_child     # int32 (n_nodes,), global ids, -1 for leaves
    cdef readonly object weight_indptr   # int64 (n_nodes + 1,)
    cdef readonly object weight_indices  # int32 (n_weight_ids,)
    cdef readonly object weight_values   # float32 (n_weight_ids, arity)
    cdef readonly object bias            # float32 (n_nodes * arity,)
    cdef readonly object tree_ids        # FeatureIds of the trees' weights
    cdef readonly object feature_slot    # int32 (tree_ids.width,), see ForestArrays
    cdef readonly index_t n_slots        # see ForestArrays.n_slots
    cdef readonly object leaf_indptr     # int64 (n_nodes + 1,)
    cdef readonly object leaf_labels     # int32 (n_leaf_entries,)
    cdef readonly object leaf_values     # float32 (n_leaf_entries,)
    cdef readonly index_t arity          # children per internal node
    cdef readonly index_t n_features     # feature-space width the trees were trained on
    cdef readonly index_t n_labels       # label-space size
    cdef readonly float64_t threshold    # routing threshold on the raw score
    cdef readonly float64_t training_threshold  # see ForestArrays.training_threshold
    cdef readonly index_t max_wide_branches     # see ForestArrays.max_wide_branches
    cdef readonly index_t route_row_features    # see ForestArrays.route_row_features
    cdef readonly bint dense_scores      # see ForestArrays.dense_scores
    cdef readonly bint sum_leaves        # see ForestArrays.sum_leaves
    cdef readonly object label_indptr    # int64 (n_labels + 1,), or None: histograms only
    cdef readonly object label_indices   # int32 feature ids of the label classifiers
    cdef readonly object label_ids       # their FeatureIds
    cdef readonly object label_values    # float32 weights of the label classifiers
    cdef readonly object label_bias      # float32 (n_labels,)
    cdef readonly object label_columns   # the classifiers' weights by feature id:
                                         # (indptr, labels, values), see LabelModelView
    cdef readonly index_t n_candidates   # see ForestArrays.n_candidates
    cdef readonly float64_t histogram_weight  # see ForestArrays.histogram_weight
    cdef readonly float64_t margin_scale      # see ForestArrays.margin_scale
    cdef ForestArrays arrays             # raw views for the kernels

    cdef void _fill_arrays(self)
