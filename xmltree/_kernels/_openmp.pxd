# The OpenMP functions that kernels call, usable in builds without OpenMP.
#
# Cython's own ``openmp.pxd`` includes <omp.h> unconditionally, which a
# compiler without OpenMP lacks (Apple clang) or cannot link (GCC without
# -fopenmp). Here the real header is used only when the compiler defines
# _OPENMP; otherwise the stand-ins describe the one thread that runs
# ``prange`` loops. setup.py decides which build it is.

cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    #define XMLTREE_OPENMP 1
    #else
    #define XMLTREE_OPENMP 0
    static inline int omp_get_max_threads(void) { return 1; }
    #endif
    """
    # 1 if this module was compiled with OpenMP, else 0.
    const int XMLTREE_OPENMP
    int omp_get_max_threads() noexcept nogil
