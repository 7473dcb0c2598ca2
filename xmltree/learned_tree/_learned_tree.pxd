# Kernels of the learned M-ary tree (Jernite, Choromanska & Sontag, 2017).
#
# Model layout, shared by every kernel:
#   embeddings[f, :]        input embedding of feature f (word or n-gram bucket)
#   weights[n, j, :]        row of the softmax of internal node n for child slot j
#   biases[n, j]            bias of that row
#   children[n, j]          slot code: >= 0 internal node, -1 empty, <= -2 leaf
#                           of label -code - 2 (see xmltree/label_tree.py)
#   path_nodes[i, d]        node at depth d on the root-to-leaf path of label i
#   path_slots[i, d]        child slot taken there; both are -1 past the end
#   label_depth[i]          number of nodes on that path
#   *_squares               Adagrad: running sums of squared gradients, one per
#                           parameter, same shapes; NULL with plain SGD
# The input representation h is the mean of the embeddings of the example's
# features weighted by their values (counts); an example without features
# has h = 0. Empty slots are masked out of every node softmax.

from .._kernels._random cimport rng_state
from .._kernels._sparse cimport CSRView
from .._kernels._types cimport float32_t, float64_t, index_t, offset_t


cdef struct Model:
    # Raw views of the parameter and tree arrays (C-contiguous, kept alive by
    # the Python caller for the duration of a kernel call).
    float32_t* embeddings       # [n_features, dim]
    float32_t* weights          # [n_nodes, arity, dim]
    float32_t* biases           # [n_nodes, arity]
    float32_t* embedding_squares  # NULL or [n_features, dim]
    float32_t* weight_squares   # NULL or [n_nodes, arity, dim]
    float32_t* bias_squares     # NULL or [n_nodes, arity]
    const index_t* children     # [n_nodes, arity] slot codes
    const index_t* path_nodes   # [n_labels, max_depth]
    const index_t* path_slots   # [n_labels, max_depth]
    const index_t* label_depth  # [n_labels]
    index_t dim                 # embedding dimension
    index_t arity               # child slots per node
    index_t max_depth           # stride of path_nodes / path_slots
    index_t n_nodes             # number of internal nodes


cdef struct Scratch:
    # Per-thread work buffers, so Hogwild threads never share temporaries.
    float32_t* hidden           # h, length dim
    float32_t* grad_hidden      # dLoss/dh accumulated along the path, length dim
    float64_t* probas           # node softmax over the arity slots
    rng_state rng               # draws one label of a multi-label row


cdef struct Stats:
    # Running statistics of AssignLabels, indexed by (label, depth on path).
    float32_t* sum_probas       # [n_labels, max_depth, arity] sums of node softmaxes
    float32_t* counts           # [n_labels, max_depth] number of visits
    bint enabled                # False for fixed trees: skip the bookkeeping


cdef float32_t embed_mean(const Model* model, const CSRView* rows, index_t row,
                          float32_t* hidden) noexcept nogil

cdef void node_softmax(const Model* model, index_t node, const float32_t* hidden,
                       float64_t* probas) noexcept nogil

cdef float64_t node_step(Model* model, index_t node, index_t target, const float32_t* hidden,
                         float32_t* grad_hidden, float64_t* probas,
                         float32_t learning_rate) noexcept nogil
