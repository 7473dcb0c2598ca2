"""Whether the compiled kernels were built with OpenMP (see setup.py)."""

#: True if ``prange`` loops run on several threads; False if setup.py found
#: no OpenMP (or ``XMLTREE_OPENMP=0``), so they run on one.
OPENMP_ENABLED = bool(XMLTREE_OPENMP)
