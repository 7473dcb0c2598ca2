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
#
# Callers that need the k best but not their order (candidates to re-score,
# or to train on) use `partition_top_k` instead: a selection in place over
# an array of all the (label, score) pairs, O(n) on average against the
# heap's O(n log k), the same k pairs by the same total order.

from libc.math cimport sqrt

from ._types cimport float32_t, float64_t, index_t, offset_t


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


cdef struct ScoredLabel:
    float64_t score
    index_t label


cdef inline bint precedes(const ScoredLabel* a, const ScoredLabel* b) noexcept nogil:
    """Whether `a` ranks before `b` in the total order of `ranks_below`."""
    return ranks_below(b.score, b.label, a.score, a.label)


cdef inline void swap_pairs(ScoredLabel* pairs, index_t i, index_t j) noexcept nogil:
    """Exchange the pairs at positions `i` and `j`."""
    cdef ScoredLabel held = pairs[i]
    pairs[i] = pairs[j]
    pairs[j] = held


cdef inline index_t median_of_three(const ScoredLabel* pairs, index_t a, index_t b,
                                    index_t c) noexcept nogil:
    """The position among `a`, `b`, `c` whose pair ranks between the other two."""
    if precedes(&pairs[a], &pairs[b]):
        if precedes(&pairs[b], &pairs[c]):
            return b
        return c if precedes(&pairs[a], &pairs[c]) else a
    if precedes(&pairs[a], &pairs[c]):
        return a
    return c if precedes(&pairs[b], &pairs[c]) else b


cdef enum:
    # Pairs of the sample that the first pivot of `partition_top_k` comes from.
    PIVOT_SAMPLE = 256


cdef inline index_t worst_position(const ScoredLabel* pairs, index_t n) noexcept nogil:
    """The position of the pair that ranks last of ``pairs[0 .. n - 1]``."""
    cdef index_t i, worst = 0
    for i in range(1, n):
        if precedes(&pairs[worst], &pairs[i]):
            worst = i
    return worst


cdef inline index_t sampled_pivot(const ScoredLabel* pairs, index_t n, index_t k) noexcept nogil:
    """The position of a pair that likely ranks a little after the k-th best,
    or -1 where a sample would not help (k not far below n).

    The pair of rank ``k * PIVOT_SAMPLE / n`` in an evenly spaced sample,
    moved down by two standard deviations of that estimate, so that a
    partition around it usually leaves the k best, and few more, before it:
    one pass over all the pairs, then the selection among about k of them.
    """
    cdef ScoredLabel sample[PIVOT_SAMPLE]
    cdef index_t i, rank, chosen
    if n < 4 * PIVOT_SAMPLE or 2 * k > n:
        return -1
    rank = <index_t>(<offset_t>k * PIVOT_SAMPLE // n)
    rank += 2 * <index_t>sqrt(<float64_t>rank) + 2
    if rank >= PIVOT_SAMPLE:
        return -1
    for i in range(PIVOT_SAMPLE):
        sample[i] = pairs[<offset_t>i * n // PIVOT_SAMPLE]
    partition_top_k(sample, PIVOT_SAMPLE, rank + 1)
    chosen = sample[worst_position(sample, rank + 1)].label
    # Back to its place among the pairs: it came from one, and labels differ.
    for i in range(PIVOT_SAMPLE):
        if pairs[<offset_t>i * n // PIVOT_SAMPLE].label == chosen:
            return <index_t>(<offset_t>i * n // PIVOT_SAMPLE)
    return -1


cdef inline index_t partition_around(ScoredLabel* pairs, index_t low, index_t high,
                                     index_t pivot) noexcept nogil:
    """Split ``pairs[low .. high]`` around the pair at `pivot`; return the pivot's
    final position, before which every pair ranks before it and after which
    every pair ranks after it."""
    cdef index_t i, store = low
    swap_pairs(pairs, pivot, high)
    for i in range(low, high):
        if precedes(&pairs[i], &pairs[high]):
            swap_pairs(pairs, i, store)
            store += 1
    swap_pairs(pairs, store, high)
    return store


cdef inline void partition_top_k(ScoredLabel* pairs, index_t n, index_t k) noexcept nogil:
    """Reorder the `n` pairs so that the best k of them come first, in no
    particular order (Hoare's selection; nothing to do unless ``0 < k < n``).

    The labels of the pairs must differ: the order then has no ties, and the
    first k are the k that `offer_top_k` would keep, whatever the input order.
    The first pivot comes from a sample (`sampled_pivot`) where k is well
    below n, the others are medians of three.
    """
    cdef index_t low = 0, high = n - 1, pivot
    if k <= 0 or k >= n:
        return
    pivot = sampled_pivot(pairs, n, k)
    # Invariant: low <= k - 1 < k <= high, and every pair left of `low` ranks
    # before every pair from it on, every pair right of `high` after every
    # pair up to it. Done once a pivot lands on either side of the boundary.
    while True:
        if pivot < 0:
            pivot = median_of_three(pairs, low, low + (high - low) // 2, high)
        pivot = partition_around(pairs, low, high, pivot)
        if pivot == k or pivot == k - 1:
            return
        if pivot > k:
            high = pivot - 1
        else:
            low = pivot + 1
        pivot = -1
