# A small, fast, deterministic random number generator for nogil kernels.
#
# Each tree (or thread) owns one `rng_state` seeded from a 64-bit integer that
# Python derives from the user's random_state with numpy.random.SeedSequence,
# so results are bit-identical whatever the number of threads. The generator
# is xoshiro256** (Blackman & Vigna), seeded through splitmix64 as its authors
# recommend; both are public-domain algorithms, written out here from their
# published definitions.

from libc.stdint cimport uint64_t

from ._types cimport float64_t, index_t


cdef struct rng_state:
    uint64_t s0
    uint64_t s1
    uint64_t s2
    uint64_t s3


cdef inline uint64_t _splitmix64(uint64_t* x) noexcept nogil:
    x[0] += <uint64_t>0x9E3779B97F4A7C15
    cdef uint64_t z = x[0]
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EB
    return z ^ (z >> 31)


cdef inline void rng_seed(rng_state* state, uint64_t seed) noexcept nogil:
    """Initialise `state` from a 64-bit seed (any value, including 0)."""
    cdef uint64_t x = seed
    state.s0 = _splitmix64(&x)
    state.s1 = _splitmix64(&x)
    state.s2 = _splitmix64(&x)
    state.s3 = _splitmix64(&x)


cdef inline uint64_t _rotl(uint64_t x, int k) noexcept nogil:
    return (x << k) | (x >> (64 - k))


cdef inline uint64_t rng_next(rng_state* state) noexcept nogil:
    """Return the next 64 random bits."""
    cdef uint64_t result = _rotl(state.s1 * 5, 7) * 9
    cdef uint64_t t = state.s1 << 17
    state.s2 ^= state.s0
    state.s3 ^= state.s1
    state.s1 ^= state.s2
    state.s0 ^= state.s3
    state.s2 ^= t
    state.s3 = _rotl(state.s3, 45)
    return result


cdef inline float64_t rng_uniform(rng_state* state) noexcept nogil:
    """Return a float uniformly distributed in [0, 1) with 53 random bits."""
    return (rng_next(state) >> 11) * (1.0 / 9007199254740992.0)


cdef inline index_t rng_below(rng_state* state, index_t n) noexcept nogil:
    """Return an integer uniformly distributed in [0, n); `n` must be > 0."""
    # Multiply-shift (Lemire); the bias is below 2**-32 for n < 2**31.
    return <index_t>(((rng_next(state) >> 32) * <uint64_t>n) >> 32)


cdef inline void rng_shuffle(rng_state* state, index_t* values, index_t n) noexcept nogil:
    """Shuffle `values[0:n]` in place (Fisher-Yates)."""
    cdef index_t i, j, tmp
    for i in range(n - 1, 0, -1):
        j = rng_below(state, i + 1)
        tmp = values[i]
        values[i] = values[j]
        values[j] = tmp
