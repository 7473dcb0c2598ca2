"""Prediction over large files: read rows in chunks, stream ranked labels to disk.

The file is read with :func:`xmltree.datasets.iter_xc_chunks`, so memory holds
a few blocks of features and predictions, never the whole file. The
predictions go to a temporary file that replaces the destination only when
every row is done.

By default the chunks are predicted here, one after the other (the kernels use
every core for each chunk). Inside a joblib backend that does not use threads,
such as ``joblib.parallel_backend("dask")``, the chunks become tasks of that
backend instead: the model travels to the workers once (joblib's Dask backend
scatters it, see ``Estimator.__sizeof__``), the chunks are read and sent a few
at a time, and the results are written in file order as they come back.
"""

from __future__ import annotations

import itertools
import logging

import joblib

from ._atomic import atomic_write
from .datasets._predictions import _prediction_lines
from .datasets._xc import iter_xc_chunks

__all__ = ["predict_xc_file"]

logger = logging.getLogger(__name__)


def predict_xc_file(model, path_in, path_out, *, k: int, chunk_size: int,
                    n_labels: int) -> int:
    """Write ``model.predict_top_k`` of every row of an XC file, chunk by chunk.

    Parameters
    ----------
    model : fitted estimator
        Anything with ``predict_top_k(X, k)`` that ranks label ids.
    path_in : str or os.PathLike
        XC data file (its labels are read and checked, then ignored).
    path_out : str or os.PathLike
        Prediction file, in the format of
        :func:`xmltree.datasets.write_predictions`; written atomically.
    k : int
        Labels per row.
    chunk_size : int
        Rows predicted at a time, >= 1.
    n_labels : int
        The label ids the model knows, for the file's header.

    Returns
    -------
    int
        Number of rows predicted.

    Raises
    ------
    ValueError
        If ``chunk_size`` is not an integer >= 1, or ``model.predict_top_k`` refuses
        its arguments.
    DataFormatError
        If the input file is malformed or wider than the training data; the
        destination is then left untouched.
    """
    chunks = iter_xc_chunks(path_in, chunk_size)
    first = next(chunks, None)
    n_rows = 0 if first is None else first[0]
    n_done = 0
    with atomic_write(path_out, "w", encoding="ascii", newline="\n") as handle:
        handle.write(f"{n_rows} {n_labels}\n")
        if first is not None:
            blocks = itertools.chain([first[1]], (X for _, X in chunks))
            for labels, scores in _predict_blocks(model, blocks, k):
                handle.write(_prediction_lines(labels, scores))
                n_done += labels.shape[0]
                logger.debug("predicted rows %d / %d of %s", n_done, n_rows, path_in)
    return n_done


def _predict_blocks(model, blocks, k: int):
    """Yield ``model.predict_top_k`` of each block, in order.

    Locally (no joblib backend, or a threaded one) the blocks are predicted
    one by one in this process; under another joblib backend they are that
    backend's tasks, at most a few in flight, results yielded in order.
    """
    backend, _ = joblib.parallel.get_active_backend(prefer="threads")
    if getattr(backend, "uses_threads", False):
        for X in blocks:
            yield model.predict_top_k(X, k)
        return
    runner = joblib.Parallel(return_as="generator")
    yield from runner(joblib.delayed(_predict_block)(model, X, k) for X in blocks)


def _predict_block(model, X, k: int):
    # The model is an argument, not a bound method's ``self``, because joblib
    # scatters large arguments once; a function is shipped with every task.
    return model.predict_top_k(X, k)
