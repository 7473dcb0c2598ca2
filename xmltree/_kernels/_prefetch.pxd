# The cache hint of the kernels that read memory in an order the hardware
# prefetcher cannot guess: rows visited in a random order, short runs in a
# large array.

cdef extern from *:
    """
    #if defined(__GNUC__)
    #define XMLTREE_PREFETCH(address) __builtin_prefetch(address)
    #else
    #define XMLTREE_PREFETCH(address) ((void)(address))
    #endif
    """
    # Hint the CPU to start loading a cache line (GCC/Clang builtin; a no-op
    # elsewhere).
    void prefetch "XMLTREE_PREFETCH" (const void* address) noexcept nogil
