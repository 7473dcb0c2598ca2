"""The training examples of every label's classifier, listed label by label.

``xmltree.ldsm._linear_leaves.neighbourhoods`` describes what a label's
neighbourhood holds. Listing it is a transpose of (example, label) pairs, and
at full scale there are some 90 million of them: building and transposing
them as sparse matrices took five times the memory of the result, next to the
whole forest. This kernel counts the pairs, then writes them straight into
their label's slice, so it needs the result and O(n_labels) more.
"""

from libc.stdint cimport int8_t

import numpy as np

from .._kernels._types cimport index_t, offset_t

__all__ = ["list_neighbourhoods"]


def list_neighbourhoods(const index_t[:, ::1] candidates, const offset_t[::1] label_indptr,
                        const index_t[::1] label_indices, const offset_t[::1] draw_indptr,
                        const index_t[::1] draw_labels, index_t n_labels):
    """Each label's examples (increasing, each once) and their targets.

    Example ``i`` joins the neighbourhood of every label among its
    candidates (``-1`` pads them), its own labels
    ``label_indices[label_indptr[i]:label_indptr[i + 1]]`` and its drawn
    labels ``draw_labels[draw_indptr[i]:draw_indptr[i + 1]]``, with target
    +1 where it carries the label and -1 elsewhere. Every id must lie in
    ``[0, n_labels)`` (the caller's arrays come from the checked labels and
    the forest), and both pointer arrays have one entry per example plus one.

    Returns
    -------
    indptr : numpy.ndarray of int64, shape (n_labels + 1,)
    examples : numpy.ndarray of int32
    targets : numpy.ndarray of int8
    """
    cdef index_t i, n_samples = candidates.shape[0]
    indptr = np.zeros(n_labels + 1, dtype=np.int64)
    last = np.full(n_labels, -1, dtype=np.int32)
    cdef offset_t[::1] counts = indptr
    cdef index_t[::1] last_example = last
    cdef offset_t[::1] fill
    cdef index_t[::1] example_view
    cdef int8_t[::1] target_view
    if n_samples == 0 or n_labels == 0:
        return indptr, np.empty(0, dtype=np.int32), np.empty(0, dtype=np.int8)
    with nogil:
        for i in range(n_samples):
            _visit_example(candidates, label_indptr, label_indices, draw_indptr, draw_labels,
                           i, &last_example[0], &counts[1], NULL, NULL)
    np.cumsum(indptr, out=indptr)
    examples = np.empty(indptr[n_labels], dtype=np.int32)
    targets = np.empty(indptr[n_labels], dtype=np.int8)
    if examples.shape[0] == 0:
        return indptr, examples, targets
    fill = indptr[:n_labels].copy()
    example_view = examples
    target_view = targets
    last.fill(-1)
    with nogil:
        for i in range(n_samples):
            _visit_example(candidates, label_indptr, label_indices, draw_indptr, draw_labels,
                           i, &last_example[0], &fill[0], &example_view[0], &target_view[0])
    return indptr, examples, targets


cdef void _visit_example(const index_t[:, ::1] candidates, const offset_t[::1] label_indptr,
                         const index_t[::1] label_indices, const offset_t[::1] draw_indptr,
                         const index_t[::1] draw_labels, index_t i, index_t* last,
                         offset_t* slots, index_t* examples, int8_t* targets) noexcept nogil:
    """Add example ``i`` to each of its labels' neighbourhoods once.

    Counting pass (``examples`` is NULL): ``slots[label]`` counts. Writing
    pass: ``slots[label]`` is where the label's next example goes. Its own
    labels come first, so that a label it also has among its candidates or
    draws keeps target +1; ``last[label] == i`` marks labels already added.
    """
    cdef offset_t p
    cdef index_t k, label
    for p in range(label_indptr[i], label_indptr[i + 1]):
        _add(label_indices[p], i, 1, last, slots, examples, targets)
    for k in range(candidates.shape[1]):
        label = candidates[i, k]
        if label >= 0:
            _add(label, i, -1, last, slots, examples, targets)
    for p in range(draw_indptr[i], draw_indptr[i + 1]):
        _add(draw_labels[p], i, -1, last, slots, examples, targets)


cdef inline void _add(index_t label, index_t i, int8_t target, index_t* last, offset_t* slots,
                      index_t* examples, int8_t* targets) noexcept nogil:
    """Count or write (example ``i``, ``label``) unless it is already there."""
    if last[label] == i:
        return
    last[label] = i
    if examples != NULL:
        examples[slots[label]] = i
        targets[slots[label]] = target
    slots[label] += 1
