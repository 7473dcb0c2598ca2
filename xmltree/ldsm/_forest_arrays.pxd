# The raw arrays of a Forest and the per-thread scratch memory of
# prediction, shared by the descent (``_descent``) and the scoring
# (``_tree``) kernels.
#
# Every tree of the ensemble is concatenated into the same arrays; node ids
# are global (tree t owns nodes tree_offset[t] .. tree_offset[t + 1] - 1, and
# its root is tree_offset[t]). Invariants, checked in Python before any
# kernel runs (see `xmltree.ldsm._tree_arrays.check_tree`): inside each tree a
# child id is larger than its parent's id, an internal node has exactly
# `arity` consecutive children and `arity` regressors sharing one sorted list
# of feature ids, a leaf has no weights and a non-empty label histogram,
# every weight index is < n_features and every label is < n_labels.
#
# Feature ids are as the kernels index them (``_tree_arrays.FeatureIds``):
# the model's own, or their ranks among those the weights use, in the
# weights and the rows alike. Tables indexed by feature id are as long as
# the weights require (n_tree_ids, n_label_ids), never n_features, which a
# model file may claim without the weights to back it: a row's ids beyond
# them are features no weight has.

from libc.stdint cimport uint8_t

from ._label_models cimport LabelModelView
from .._kernels._sparse cimport CSRView
from .._kernels._top_k cimport ScoredLabel
from .._kernels._types cimport float32_t, float64_t, index_t, offset_t


cdef enum:
    # Most examples descended together, tree by tree and node by node, so
    # that a node's weights are read once for all the examples that reach
    # it, and the loads of different examples overlap. A block visits most
    # nodes of a tree, spreading each node's weights, so the more rows share
    # that cost the better: on Amazon-670K-shaped data (trees of ~10,000
    # nodes) blocks of 20,000 rows descended 4x faster than blocks of 1024,
    # and Bibtex, Delicious, RCV1 and Yahoo Arts gained too (1024 had beaten
    # 128 and 512 there). Scratch memory grows with the block (see Scratch);
    # `block_rows` shrinks blocks to balance the threads.
    MAX_BLOCK_SIZE = 32768
    # Examples of one node scored in step on a binary dense node, so that
    # their chains of dependent additions overlap.
    SCORE_GROUP = 4
    # Binary-search steps that cost about as much as spreading one weight
    # into the node block and clearing it again (see `spreading_pays`);
    # 1 and 4 were slower than 2 on Amazon-670K-shaped data, Bibtex and
    # Delicious.
    SPREAD_COST = 2


cdef struct ForestArrays:
    # Raw views of a Forest's arrays, filled with the GIL held so that the
    # prediction kernels can run without it.
    index_t n_trees              # number of trees
    index_t arity                # children per internal node (M)
    index_t n_tree_ids           # length of feature_slot: the trees' largest id + 1
    index_t n_slots              # rows of a node block: features the trees use, + 1
                                 # slot (the last) shared by all others, always zero
    index_t n_labels             # number of labels (K)
    index_t max_tree_nodes       # nodes of the largest tree: bounds the descent stack
    float64_t threshold          # routing threshold on the raw score z
    float64_t training_threshold # the routing rule's threshold when the trees were trained
    index_t max_wide_branches    # with threshold < training_threshold: children a path may
                                 # take that only `threshold` admits; -1: no limit
    index_t route_row_features   # features of an example that route it, its strongest;
                                 # 0: all
    bint dense_scores            # accumulate scores without tracking touched labels,
                                 # then find them by scanning all n_labels scores
    bint sum_leaves              # a tree adds up the leaves an example reaches
                                 # instead of averaging them
    const offset_t* tree_offset  # (n_trees + 1,) first global node id of each tree
    const index_t* first_child   # (n_nodes,) global id of child 0, -1 for a leaf
    const offset_t* weight_indptr    # (n_nodes + 1,) CSR rows = nodes
    const index_t* weight_indices    # sorted feature ids within each node
    const float32_t* weight_values   # (n_weight_ids * arity,) for each id, its weight
                                     # in every regressor of the node (0: none kept)
    const float32_t* bias            # (n_nodes * arity,) regressor biases
    const index_t* feature_slot      # (n_tree_ids,) position of each feature in a node
                                     # block (see Scratch.node_block): most used features
                                     # first, sharing cache lines; n_slots - 1 for a
                                     # feature no regressor has
    const offset_t* leaf_indptr      # (n_nodes + 1,) CSR rows = leaf histograms
    const index_t* leaf_labels       # sorted label ids within each leaf
    const float32_t* leaf_values     # histogram values, positive (see check_tree)
    bint rescore                     # label classifiers re-score the best labels
    LabelModelView label_models      # the classifiers (when `rescore`)
    index_t n_label_ids              # their largest feature id + 1: the length of dense_x
    index_t n_candidates             # labels re-scored per example, by histogram score
    float64_t histogram_weight       # beta: score = sigmoid(margin_scale * z)^(1 - beta)
    float64_t margin_scale           #   * histogram^beta


cdef struct LeafPair:
    # One leaf reached by one example of the block in the current tree.
    index_t example              # position of the example in the block
    index_t leaf                 # global node id of the leaf


cdef struct Scratch:
    # Per-thread working memory for one block of examples. Dense buffers are
    # reset through the node's weight list and the touched-label list, so
    # resetting costs what was used, not D or K.
    float64_t* label_score       # (n_labels,) accumulated ensemble scores
    uint8_t* label_seen          # (n_labels,) 1 if the label is in `touched`
    index_t* touched             # (n_labels + 1,) labels with a score, first-seen order
                                 # (one spare slot for the branch-free append)
    index_t n_touched            # length of `touched`
    ScoredLabel* ranked          # (n_labels,) the touched labels and their scores, for
                                 # a selection of the best that needs no order
    index_t* stack               # (max_tree_nodes,) descent stack of node ids
    offset_t* stack_start        # (max_tree_nodes,) where each stacked node's examples
                                 # start in `members`
    index_t* stack_count         # (max_tree_nodes,) how many examples reached it
    index_t* members             # examples of the block (0 .. block_size - 1) that
                                 # reached each stacked node, one segment per node
    offset_t members_capacity    # allocated length of members (grows on demand)
    uint8_t* member_wide_branches  # (members_capacity,) wide branches taken on the path
                                   # of each entry of members
    index_t* child_count         # (arity,) examples sent to each child of a node
    LeafPair* pairs              # leaves reached in the current tree, left to right
    offset_t pairs_capacity      # allocated length of pairs (grows on demand)
    index_t* block_leaves        # leaves reached by a block of examples, all trees
    offset_t block_capacity      # allocated length of block_leaves (grows on demand)
    index_t block_size           # most rows of a block in this prediction
    offset_t* block_first_leaf   # (n_trees * block_size,) start in block_leaves of
                                 # (tree, example of the block), tree-major
    index_t* block_n_leaves      # (n_trees * block_size,) number of those leaves
    bint failed                  # a growable buffer could not grow; results are invalid
    float64_t* node_scores       # (SCORE_GROUP * arity,) regressor scores of the
                                 # examples being routed at the current node
    offset_t* example_start      # (block_size + 1,) start of each example of the block
                                 # in block_slots, feature_value and feature_index
    index_t* block_slots         # the block's features as their feature_slot, example
                                 # by example
    offset_t block_slots_capacity  # allocated length of block_slots (grows on demand)
    const float32_t* feature_value  # the block's feature values and ids: the rows' own
    const index_t* feature_index    # arrays from the block's first entry (not copied)
    float32_t* node_block        # (n_slots * arity,) the current node's weights,
                                 # feature-major: child m's weight for feature j at
                                 # feature_slot[j] * arity + m; all zero between nodes
    uint8_t* goes                # (arity,) children chosen by the routing rule
    uint8_t* trained_goes        # (arity,) those the training rule alone would choose
    const CSRView* rows          # the examples being predicted (for re-scoring)
    float32_t* dense_x           # (n_label_ids + 1,) one example spread out, zero between
                                 # examples (only with label classifiers)
    index_t* candidate_labels    # (n_candidates,) the labels to re-score
    float64_t* candidate_scores  # (n_candidates,) their histogram scores
    index_t* candidate_slot      # (n_labels,) 1 + a candidate's position in
                                 # candidate_labels, 0 for other labels; all 0 between
                                 # examples (only with label classifiers)
    float64_t* candidate_margins # (n_candidates,) their classifiers' margins
