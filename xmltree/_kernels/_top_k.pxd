# Bounded top-k selection, shared by every kernel that ranks labels.
#
# The k best (label, score) pairs of a stream are kept in a binary heap
# whose root is the worst of them, so that each new pair costs O(log k):
# `offer_top_k` adds a pair, `sort_top_k` pops the heap into best-first
# order. One total order everywhere: a larger score ranks first, and of two
# equal scores the smaller label id, so results never depend on the order in
# which labels are offered (nor on threads).
#
# The heap lives in two caller-owned arrays of k entries (labels, scores);
# `sort_top_k` may write its output over them.

from ._types cimport float32_t, float64_t, index_t


ctypedef fused score_t:
    float32_t
    float64_t


cdef inline bint ranks_below(score_t score_a, index_t label_a, score_t score_b,
                             index_t label_b) noexcept nogil:
    """Whether (score_a, label_a) ranks after (score_b, label_b)."""
    return score_a < score_b or (score_a == score_b and label_a > label_b)


cdef inline void sift_down(index_t* labels, score_t* scores, index_t size,
                           index_t position) noexcept nogil:
    """Restore the heap order below `position` (the root holds the worst)."""
    cdef index_t child, worst
    cdef index_t label = labels[position]
    cdef score_t score = scores[position]
    while True:
        child = 2 * position + 1
        if child >= size:
            break
        worst = child
        if child + 1 < size and ranks_below(scores[child + 1], labels[child + 1],
                                            scores[child], labels[child]):
            worst = child + 1
        if not ranks_below(scores[worst], labels[worst], score, label):
            break
        labels[position] = labels[worst]
        scores[position] = scores[worst]
        position = worst
    labels[position] = label
    scores[position] = score


cdef inline index_t offer_top_k(index_t* labels, score_t* scores, index_t size, index_t k,
                                index_t label, score_t score) noexcept nogil:
    """Offer (label, score) to a heap of `size` <= k pairs; return its new size.

    A pair enters while the heap has room, or when it ranks above the worst
    kept pair, which then leaves.
    """
    cdef index_t position
    if size < k:
        # Append as a leaf, then move it up while it ranks below its parent.
        position = size
        while position > 0 and ranks_below(score, label, scores[(position - 1) // 2],
                                           labels[(position - 1) // 2]):
            labels[position] = labels[(position - 1) // 2]
            scores[position] = scores[(position - 1) // 2]
            position = (position - 1) // 2
        labels[position] = label
        scores[position] = score
        return size + 1
    if ranks_below(scores[0], labels[0], score, label):
        labels[0] = label
        scores[0] = score
        sift_down(labels, scores, size, 0)
    return size


cdef inline void sort_top_k(index_t* labels, score_t* scores, index_t size,
                            index_t* out_labels, score_t* out_scores) noexcept nogil:
    """Empty the heap into ``out[0 .. size - 1]``, best first (`out` may be the heap)."""
    cdef index_t label
    cdef score_t score
    while size > 0:
        size -= 1
        label = labels[0]
        score = scores[0]
        labels[0] = labels[size]
        scores[0] = scores[size]
        sift_down(labels, scores, size, 0)
        out_labels[size] = label
        out_scores[size] = score
