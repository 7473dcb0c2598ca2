"""The forest descent: which leaves each example of a block reaches in every tree.

Part of prediction: ``xmltree.ldsm._forest`` scores the leaves found here.
Regressor scores follow the contract of ``_routing.pxd`` exactly as
training computes them, so an example reaches at prediction the leaves it
reached while the tree was built.

Speed comes from these choices, each measured on Delicious and Bibtex: a
block of up to MAX_BLOCK_SIZE examples descends each tree together, node by
node, so a node's weights are fetched once for all the examples that reach
it and the examples' independent loads overlap (2-3x faster descent than one
example at a time); a node's sparse weights are spread once per block into
a feature-major per-thread block, where each example looks its few features
up, four examples in step so that their chains of additions overlap; a
node that few examples reach has them binary-search its sparse weights
instead (measured on Amazon-670K-shaped data too); the block's features
are gathered once as their slots in the node block.
"""

from libc.stdint cimport uint8_t
from libc.stdlib cimport realloc

from ._forest_arrays cimport (SCORE_GROUP, SPREAD_COST, ForestArrays, LeafPair,
                              Scratch)
from ._routing cimport route
from .._kernels._sparse cimport CSRView
from .._kernels._types cimport float32_t, float64_t, index_t, offset_t


cdef bint gather_block_features(const ForestArrays* f, Scratch* s, const CSRView* rows,
                                index_t first, index_t n_rows) noexcept nogil:
    """Copy the slots in a node block (`feature_slot`) of the features of
    examples ``first .. first + n_rows - 1``, so that scoring an example at
    each node it reaches does not look them up again, and point at their
    values and ids in `rows`. False if out of memory.

    Four bytes an entry, so that a large block's features stay in cache: as
    64-bit offsets in the block and float64 values (sixteen bytes), the
    descent was 10-15% slower on Amazon-670K-shaped data, Delicious and
    Yahoo Arts.
    """
    cdef offset_t begin = rows.indptr[first], n_entries, p
    cdef index_t k
    n_entries = rows.indptr[first + n_rows] - begin
    if not reserve(<void**>&s.block_slots, &s.block_slots_capacity, n_entries, sizeof(index_t)):
        return False
    for k in range(n_rows + 1):
        s.example_start[k] = rows.indptr[first + k] - begin
    s.feature_index = rows.indices + begin if rows.indices != NULL else NULL
    s.feature_value = rows.values + begin if rows.values != NULL else NULL
    for p in range(n_entries):
        s.block_slots[p] = node_block_slot(f, rows.indices[begin + p])
    return True


cdef inline index_t node_block_slot(const ForestArrays* f, index_t feature) noexcept nogil:
    """Slot of `feature` in a node block: the shared all-zero last slot for an id
    beyond those of the weights (``_forest_arrays.pxd``)."""
    return f.feature_slot[feature] if feature < f.n_tree_ids else f.n_slots - 1


cdef inline void score_node(const float32_t* block, index_t arity, const Scratch* s,
                            index_t k, float64_t* scores) noexcept nogil:
    """Add the products of example `k` of the block with the node weights
    spread in `block` to ``scores[0 .. arity - 1]``, in increasing feature
    order."""
    cdef index_t m
    cdef offset_t p
    cdef const float32_t* weights
    if arity == 2:
        score_binary_node(block, s, k, scores)
        return
    for p in range(s.example_start[k], s.example_start[k + 1]):
        weights = block + <offset_t>s.block_slots[p] * arity
        for m in range(arity):
            scores[m] += <float64_t>s.feature_value[p] * <float64_t>weights[m]


cdef inline void score_binary_node(const float32_t* block, const Scratch* s,
                                         index_t k, float64_t* scores) noexcept nogil:
    """`score_node` for the common arity 2, with both sums in registers
    (same operations, same order)."""
    cdef float64_t left = scores[0], right = scores[1], value
    cdef offset_t p, j
    for p in range(s.example_start[k], s.example_start[k + 1]):
        j = 2 * <offset_t>s.block_slots[p]
        value = s.feature_value[p]
        left += value * <float64_t>block[j]
        right += value * <float64_t>block[j + 1]
    scores[0] = left
    scores[1] = right


cdef void score_binary_group(const float32_t* block, const Scratch* s,
                                   const index_t* examples, float64_t* scores) noexcept nogil:
    """`score_binary_node` for the SCORE_GROUP (4) examples of the block
    listed in `examples`, example g's scores at ``scores[2 g]``, ``scores[2 g + 1]``.

    Each example's two sums form a chain of dependent float64 additions (the
    order is fixed by the routing contract); advancing four examples in step
    keeps eight independent chains in flight instead of two. Each example
    still adds its own products in its own order, so its scores are exactly
    those of `score_binary_node`.
    """
    cdef offset_t p0 = s.example_start[examples[0]], p1 = s.example_start[examples[1]]
    cdef offset_t p2 = s.example_start[examples[2]], p3 = s.example_start[examples[3]]
    cdef offset_t q, common
    cdef float64_t l0 = scores[0], r0 = scores[1], l1 = scores[2], r1 = scores[3]
    cdef float64_t l2 = scores[4], r2 = scores[5], l3 = scores[6], r3 = scores[7]
    cdef const index_t* slot = s.block_slots
    cdef const float32_t* value = s.feature_value
    cdef const float32_t* weights
    cdef float64_t x
    common = min(min(s.example_start[examples[0] + 1] - p0,
                     s.example_start[examples[1] + 1] - p1),
                 min(s.example_start[examples[2] + 1] - p2,
                     s.example_start[examples[3] + 1] - p3))
    for q in range(common):
        weights = block + 2 * <offset_t>slot[p0 + q]
        x = value[p0 + q]
        l0 += x * <float64_t>weights[0]
        r0 += x * <float64_t>weights[1]
        weights = block + 2 * <offset_t>slot[p1 + q]
        x = value[p1 + q]
        l1 += x * <float64_t>weights[0]
        r1 += x * <float64_t>weights[1]
        weights = block + 2 * <offset_t>slot[p2 + q]
        x = value[p2 + q]
        l2 += x * <float64_t>weights[0]
        r2 += x * <float64_t>weights[1]
        weights = block + 2 * <offset_t>slot[p3 + q]
        x = value[p3 + q]
        l3 += x * <float64_t>weights[0]
        r3 += x * <float64_t>weights[1]
    scores[0] = l0
    scores[1] = r0
    scores[2] = l1
    scores[3] = r1
    scores[4] = l2
    scores[5] = r2
    scores[6] = l3
    scores[7] = r3
    # The longer examples finish alone, continuing in their own order.
    finish_binary_scores(block, s, p0 + common, s.example_start[examples[0] + 1], scores)
    finish_binary_scores(block, s, p1 + common, s.example_start[examples[1] + 1], scores + 2)
    finish_binary_scores(block, s, p2 + common, s.example_start[examples[2] + 1], scores + 4)
    finish_binary_scores(block, s, p3 + common, s.example_start[examples[3] + 1], scores + 6)


cdef inline void finish_binary_scores(const float32_t* block, const Scratch* s, offset_t begin,
                                      offset_t end, float64_t* scores) noexcept nogil:
    """Add the products of gathered features ``begin .. end - 1`` to a binary
    node's two scores."""
    cdef offset_t p
    cdef const float32_t* weights
    for p in range(begin, end):
        weights = block + 2 * <offset_t>s.block_slots[p]
        scores[0] += <float64_t>s.feature_value[p] * <float64_t>weights[0]
        scores[1] += <float64_t>s.feature_value[p] * <float64_t>weights[1]


cdef index_t score_examples(const ForestArrays* f, index_t node, const Scratch* s,
                            const index_t* examples, index_t n_examples,
                            bint spread) noexcept nogil:
    """Score the next examples of `node` with every one of its regressors,
    looking the weights up in ``s.node_block`` if they are `spread` there,
    else in the node's sparse regressors (`search_node_weights`).

    Scores SCORE_GROUP examples of `examples` at once when the weights are
    spread, the node is binary and that many remain, otherwise the first
    one only; writes example g's M scores at ``s.node_scores[g M]`` and
    returns how many examples it scored.

    Follows the contract of ``_routing.pxd`` exactly as the trainer
    (``_optim.score``) does: start from the bias, add the float64 products
    in increasing feature order. Features of the example that the node has
    no weight for add ``0.0``, which leaves a float64 sum unchanged (up to
    the sign of a zero sum, which routing does not see), so the routing is
    the same as training's.
    """
    cdef index_t g, m, arity = f.arity
    cdef index_t n_scored = (SCORE_GROUP if spread and arity == 2 and n_examples >= SCORE_GROUP
                             else 1)
    cdef offset_t regressor = <offset_t>node * arity
    for g in range(n_scored):
        for m in range(arity):
            s.node_scores[g * arity + m] = f.bias[regressor + m]
    if n_scored == SCORE_GROUP:
        score_binary_group(s.node_block, s, examples, s.node_scores)
    elif spread:
        score_node(s.node_block, arity, s, examples[0], s.node_scores)
    else:
        search_node_weights(f, node, s, examples[0], s.node_scores)
    return n_scored


cdef inline offset_t find_weight(const index_t* indices, offset_t n,
                                 index_t feature) noexcept nogil:
    """Position of `feature` in the sorted ``indices[0 .. n - 1]`` (n >= 1)
    if it is there, else of the last entry below it, or 0.

    Without branches on the data, so that no step is mispredicted and the
    searches of an example's next features start before this one ends."""
    cdef const index_t* base = indices
    cdef offset_t half
    while n > 1:
        half = n // 2
        base = base + half if base[half] <= feature else base
        n -= half
    return base - indices


cdef void search_node_weights(const ForestArrays* f, index_t node, const Scratch* s,
                              index_t k, float64_t* scores) noexcept nogil:
    """`score_node` for weights that are not spread: look each feature of
    example `k` of the block up in the node's sorted feature ids, once for
    all its regressors.

    Adds the products `score_node` adds, in the same order: the feature's
    weight when the node has one, else 0.0 as the all-zero entries of the
    node block give, so the scores are the same bit for bit.
    """
    cdef index_t m, arity = f.arity
    cdef offset_t p, j, begin = f.weight_indptr[node]
    cdef offset_t n = f.weight_indptr[node + 1] - begin
    cdef const index_t* indices = f.weight_indices + begin
    cdef const float32_t* weights
    cdef float64_t value
    if n == 0:
        return  # every product is x * 0.0: the scores stay the bias
    for p in range(s.example_start[k], s.example_start[k + 1]):
        j = find_weight(indices, n, s.feature_index[p])
        if indices[j] != s.feature_index[p]:
            continue  # x * 0.0 for every regressor: no change to a float64 sum
        weights = f.weight_values + (begin + j) * arity
        value = <float64_t>s.feature_value[p]
        for m in range(arity):
            scores[m] += value * <float64_t>weights[m]


cdef bint spreading_pays(const ForestArrays* f, const Scratch* s, index_t node,
                         const index_t* examples, index_t count) noexcept nogil:
    """Whether spreading the weights of `node` for its `count` examples
    costs less than searching them for each example.

    Spreading writes the weights of every feature id of the node and later
    clears them, about SPREAD_COST binary-search steps an id; searching
    takes about log2(feature ids of the node) steps per feature of each
    example. Deep in a large tree a node often receives one or two examples
    of the block: spreading its thousands of weights then costs several
    times more than looking their ~100 features up.
    """
    cdef offset_t n_ids = f.weight_indptr[node + 1] - f.weight_indptr[node]
    cdef offset_t remaining = n_ids, steps = 1, n_steps = 0
    cdef index_t i, k
    while remaining > 1:
        remaining //= 2
        steps += 1
    for i in range(count):
        k = examples[i]
        n_steps += (s.example_start[k + 1] - s.example_start[k]) * steps
        if n_steps > SPREAD_COST * n_ids:
            return True
    return False


cdef void spread_node_weights(const ForestArrays* f, index_t node, float32_t* block,
                              bint clear) noexcept nogil:
    """Write the weights of `node` into the all-zero node `block`,
    feature-major (weight of child m for feature j at
    ``feature_slot[j] * arity + m``, so one cache line serves every child);
    with `clear`, zero those entries again."""
    cdef index_t m, arity = f.arity
    cdef offset_t p
    cdef float32_t* slot
    for p in range(f.weight_indptr[node], f.weight_indptr[node + 1]):
        slot = block + <offset_t>f.feature_slot[f.weight_indices[p]] * arity
        for m in range(arity):
            slot[m] = 0 if clear else f.weight_values[p * arity + m]


cdef index_t split_node(const ForestArrays* f, Scratch* s, index_t depth) noexcept nogil:
    """Route the examples of the internal node on top of the descent stack
    (popped by the caller, still at ``s.stack[depth]``) to its children.

    Every example is scored and routed exactly as it would be alone, so it
    reaches the same children. Pushes the children that received examples,
    rightmost first, and returns the new stack depth, or -1 if memory runs
    out. Child m's segment of ``s.members`` goes past the node's own, the
    rightmost child lowest: segments then lie in stack order, and the node
    popped next always owns the topmost segment, so the space above it is
    free.
    """
    cdef index_t node = s.stack[depth], arity = f.arity, i = 0, g, k, m, n_scored
    cdef offset_t start = s.stack_start[depth], base
    cdef index_t count = s.stack_count[depth]
    cdef bint spread = spreading_pays(f, s, node, s.members + start, count)
    cdef bint limited = f.max_wide_branches >= 0 and f.threshold < f.training_threshold
    cdef uint8_t taken
    cdef offset_t capacity = s.members_capacity, slot
    base = start + count
    if not reserve(<void**>&s.members, &s.members_capacity,
                   base + <offset_t>arity * count, sizeof(index_t)):
        return -1
    if not reserve(<void**>&s.member_wide_branches, &capacity, s.members_capacity,
                   sizeof(uint8_t)):
        return -1
    for m in range(arity):
        s.child_count[m] = 0
    # Spreading the weights once makes each example cost its own features,
    # looked up in a block that stays in cache. (Per-node dense copies of the
    # weights, read from memory, were slower on Bibtex and no faster on
    # Delicious; walking the sparse weights for a single example no faster.)
    # A node that few examples reach has them binary-search its sparse
    # weights instead (`spreading_pays`).
    if spread:
        spread_node_weights(f, node, s.node_block, False)
    while i < count:
        n_scored = score_examples(f, node, s, s.members + start + i, count - i, spread)
        for g in range(n_scored):
            k = s.members[start + i]
            taken = s.member_wide_branches[start + i]
            route(s.node_scores + g * arity, arity, f.threshold, s.goes)
            if limited:
                route(s.node_scores + g * arity, arity, f.training_threshold, s.trained_goes)
            for m in range(arity):
                # Branch-free append: the slot is overwritten unless the
                # example goes to child m (child_count[m] <= i < count, so it
                # stays in the child's segment).
                slot = base + <offset_t>(arity - 1 - m) * count + s.child_count[m]
                s.members[slot] = k
                s.member_wide_branches[slot] = taken
                if limited and s.goes[m] and not s.trained_goes[m]:
                    # A child only the wider threshold admits: one more wide branch.
                    s.goes[m] = taken < f.max_wide_branches
                    s.member_wide_branches[slot] = taken + 1
                s.child_count[m] += s.goes[m]
            i += 1
    if spread:
        spread_node_weights(f, node, s.node_block, True)
    for m in range(arity - 1, -1, -1):
        if s.child_count[m] > 0:
            s.stack[depth] = f.first_child[node] + m
            s.stack_start[depth] = base + <offset_t>(arity - 1 - m) * count
            s.stack_count[depth] = s.child_count[m]
            depth += 1
    return depth


cdef offset_t descend_tree(const ForestArrays* f, Scratch* s, index_t n_rows,
                           index_t tree) noexcept nogil:
    """Descend one tree with the `n_rows` examples of the block (gathered by
    `gather_block_features`) together, node by node, and list the leaves
    they reach in ``s.pairs``.

    The descent is depth-first, leftmost child first, so the pairs come in
    left-to-right leaf order, and each example's leaves in the order its own
    descent would reach them. Each node is pushed at most once (the tree
    property checked at load time), so the stack never exceeds the tree's
    size. Returns the number of pairs, or -1 if memory runs out.
    """
    cdef index_t depth = 1, k, i, node
    cdef offset_t n_pairs = 0, start
    for k in range(n_rows):
        s.members[k] = k
        s.member_wide_branches[k] = 0
    s.stack[0] = <index_t>f.tree_offset[tree]
    s.stack_start[0] = 0
    s.stack_count[0] = n_rows
    while depth > 0:
        depth -= 1
        node = s.stack[depth]
        if f.first_child[node] >= 0:
            depth = split_node(f, s, depth)
            if depth < 0:
                return -1
            continue
        if not reserve(<void**>&s.pairs, &s.pairs_capacity,
                       n_pairs + s.stack_count[depth], sizeof(LeafPair)):
            return -1
        start = s.stack_start[depth]
        for i in range(s.stack_count[depth]):
            s.pairs[n_pairs].example = s.members[start + i]
            s.pairs[n_pairs].leaf = node
            n_pairs += 1
    return n_pairs


cdef bint reserve(void** array, offset_t* capacity, offset_t needed,
                  size_t item_size) noexcept nogil:
    """Grow ``*array`` to hold `needed` items; False if out of memory."""
    cdef offset_t grown_capacity
    cdef void* grown
    if needed <= capacity[0]:
        return True
    grown_capacity = max(needed, 2 * capacity[0])
    grown = realloc(array[0], grown_capacity * item_size)
    if grown == NULL:
        return False
    array[0] = grown
    capacity[0] = grown_capacity
    return True


cdef offset_t store_tree_leaves(Scratch* s, index_t tree, index_t n_rows,
                                offset_t n_pairs, offset_t used) noexcept nogil:
    """Sort the pairs of `tree` by example into ``s.block_leaves`` from
    position `used` (stable, so each example keeps its left-to-right order);
    return the new used length, or -1 if memory runs out."""
    cdef offset_t* first_leaf = s.block_first_leaf + <offset_t>tree * s.block_size
    cdef index_t* n_leaves = s.block_n_leaves + <offset_t>tree * s.block_size
    cdef offset_t p
    cdef index_t k
    if not reserve(<void**>&s.block_leaves, &s.block_capacity, used + n_pairs,
                   sizeof(index_t)):
        return -1
    for k in range(n_rows):
        n_leaves[k] = 0
    for p in range(n_pairs):
        n_leaves[s.pairs[p].example] += 1
    # Each example's leaves fill its range from the end, the pairs taken last
    # to first, so its first_leaf ends at the range's start (no cursor
    # array: a block can be too large for one on the stack).
    for k in range(n_rows):
        used += n_leaves[k]
        first_leaf[k] = used
    for p in range(n_pairs - 1, -1, -1):
        k = s.pairs[p].example
        first_leaf[k] -= 1
        s.block_leaves[first_leaf[k]] = s.pairs[p].leaf
    return used


cdef void descend_block(const ForestArrays* f, Scratch* s, const CSRView* rows,
                        index_t first, index_t n_rows) noexcept nogil:
    """Record the leaves examples ``first .. first + n_rows - 1`` reach in
    every tree (``n_rows <= s.block_size``).

    Goes tree by tree over the whole block (see `descend_tree`). Sets
    ``s.failed`` if memory runs out.
    """
    cdef index_t tree
    cdef offset_t used = 0, n_pairs
    if not gather_block_features(f, s, rows, first, n_rows):
        s.failed = True
        return
    for tree in range(f.n_trees):
        n_pairs = descend_tree(f, s, n_rows, tree)
        if n_pairs >= 0:
            used = store_tree_leaves(s, tree, n_rows, n_pairs, used)
        if n_pairs < 0 or used < 0:
            s.failed = True
            return
