"""Prediction over large files: read rows in chunks, stream ranked labels to disk.

The file is read with :func:`xmltree.datasets.iter_xc_chunks`, so memory holds
one block of features and one block of predictions, never the whole file. The
predictions go to a temporary file that replaces the destination only when
every row is done.
"""

from __future__ import annotations

import logging

from ._atomic import atomic_write
from .datasets._formats import _prediction_lines, iter_xc_chunks

__all__ = ["predict_xc_file"]

logger = logging.getLogger(__name__)


def predict_xc_file(model, path_in, path_out, *, k: int, chunk_size: int,
                    rerank: bool) -> int:
    """Write ``model.predict`` of every row of an XC file, chunk by chunk.

    Parameters
    ----------
    model : fitted estimator
        Anything with ``predict(X, k=..., rerank=...)`` and ``n_labels_``.
    path_in : str or os.PathLike
        XC data file (its labels are read and checked, then ignored).
    path_out : str or os.PathLike
        Prediction file, in the format of
        :func:`xmltree.datasets.write_predictions`; written atomically.
    k : int
        Labels per row.
    chunk_size : int
        Rows predicted at a time, >= 1.
    rerank : bool
        Passed to ``model.predict``.

    Returns
    -------
    int
        Number of rows predicted.

    Raises
    ------
    ValueError
        If ``chunk_size`` is not an integer >= 1, or ``model.predict`` refuses
        its arguments.
    DataFormatError
        If the input file is malformed or wider than the training data; the
        destination is then left untouched.
    """
    n_done = 0
    with atomic_write(path_out, "w", encoding="ascii", newline="\n") as handle:
        for n_rows, X in iter_xc_chunks(path_in, chunk_size):
            if n_done == 0:
                handle.write(f"{n_rows} {model.n_labels_}\n")
            labels, scores = model.predict(X, k=k, rerank=rerank)
            handle.write(_prediction_lines(labels, scores))
            n_done += X.shape[0]
            logger.debug("predicted rows %d / %d of %s", n_done, n_rows, path_in)
        if n_done == 0:
            # A file of zero rows has no chunk; its header is still valid.
            handle.write(f"0 {model.n_labels_}\n")
    return n_done
