# The LdSM routing rule, shared by training (CreateChildren) and prediction
# (descent), so that an example follows at prediction time exactly the
# children it was sent to while the tree was built.
#
# Contract on the scores fed to `route`: score[m] starts from float64(bias[m]),
# then adds float64(x_j) * float64(w[m, j]) for the features j of the example
# in increasing order. Training and prediction both compute it that way, so
# they agree bit for bit.

from libc.stdint cimport uint8_t

from .._kernels._types cimport float64_t, index_t


cdef inline index_t route(const float64_t* scores, index_t arity, float64_t threshold,
                          uint8_t* goes) noexcept nogil:
    """Choose the children an example descends to.

    The example goes to every child m with ``scores[m] >= threshold``; if there
    is none, to the child with the largest score (the lowest m among ties).
    Writes ``goes[m]`` in {0, 1} for m < arity and returns how many are 1.
    """
    cdef index_t m, n_chosen = 0, best = 0
    for m in range(arity):
        goes[m] = scores[m] >= threshold
        n_chosen += goes[m]
        if scores[m] > scores[best]:
            best = m
    if n_chosen == 0:
        goes[best] = 1
        n_chosen = 1
    return n_chosen
