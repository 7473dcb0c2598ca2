"""Compiled building blocks shared by the learners.

``_types`` (fixed-width typedefs), ``_sparse`` (CSR views), ``_random``
(seeded generators), ``_optim`` (SGD / NAG regressor updates), ``_top_k``
(bounded heaps), ``_row_buffer`` (growable per-thread pair buffers) and
``_openmp`` (whether the build has OpenMP).
"""
