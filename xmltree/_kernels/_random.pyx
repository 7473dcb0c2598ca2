# Test-only wrappers around the inline generator of _random.pxd.

import numpy as np

from ._random cimport rng_state, rng_seed, rng_next, rng_uniform, rng_below


def _py_draw(unsigned long long seed, int n, int below=0):
    """Return `n` draws from a generator seeded with `seed`.

    Draws are raw 64-bit integers, uniforms in [0, 1) if ``below == -1``, or
    integers in [0, below) if ``below > 0``. Used by the tests only.
    """
    cdef rng_state state
    rng_seed(&state, seed)
    if below > 0:
        return np.array([rng_below(&state, below) for _ in range(n)], dtype=np.int64)
    if below == -1:
        return np.array([rng_uniform(&state) for _ in range(n)], dtype=np.float64)
    return np.array([rng_next(&state) for _ in range(n)], dtype=np.uint64)
