# Per-label linear classifiers ("linear leaves" of LdSM): training by dual
# coordinate descent, and the margin of one label for one example.
#
# Label l has a sparse weight vector (CSR row l of indptr / indices / values,
# sorted feature ids) and a bias: its margin for an example x is
# z = bias[l] + sum_j w_lj * x_j. Invariants, checked in Python before any
# kernel reads a stored model (xmltree.ldsm._tree_arrays.check_label_models):
# indptr has n_labels + 1 non-decreasing entries from 0 to len(indices), every
# feature id is < n_features and sorted within its row, all values are finite.
# The columns are built from those checked rows (Forest.use_label_models).

from .._kernels._types cimport float32_t, float64_t, index_t, offset_t


cdef struct LabelModelView:
    # Raw views of the arrays of a set of label classifiers, label by label
    # and the same weights feature by feature (CSC: a column per feature id,
    # the labels increasing within it), for examples whose features hold
    # fewer weights than their candidates do.
    const offset_t* indptr       # (n_labels + 1,) row pointers
    const index_t* indices       # feature ids, sorted within each label
    const float32_t* values      # weights
    const float32_t* bias        # (n_labels,) biases
    const offset_t* column_indptr  # (n_feature_ids + 1,) column pointers
    const index_t* column_labels   # label ids, sorted within each feature
    const float32_t* column_values # weights


cdef inline float64_t label_margin(const LabelModelView* models, index_t label,
                                   const float32_t* dense_x) noexcept nogil:
    """Margin of `label` for the example spread in `dense_x` (n_features long,
    zero where the example has no value)."""
    cdef float64_t margin = models.bias[label]
    cdef offset_t p
    for p in range(models.indptr[label], models.indptr[label + 1]):
        margin += <float64_t>models.values[p] * dense_x[models.indices[p]]
    return margin
