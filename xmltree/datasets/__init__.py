"""Extreme Classification Repository I/O, dataset registry and synthetic data.

Readers return ``X`` as a ``scipy.sparse.csr_matrix`` (float32 values, sorted
int32 indices) and ``Y`` as a binary CSR label matrix of the same row count.
"""

from ._arff import read_arff
from ._download import DownloadError
from ._libsvm import read_libsvm
from ._memmap import open_csr_npy, write_csr_npy
from ._predictions import read_predictions, write_predictions
from ._registry import DATASETS, DatasetInfo, get_data_home, load_dataset
from ._synthetic import SYNTHETIC_PRESETS, SyntheticPreset, make_synthetic, make_synthetic_preset
from ._xc import iter_xc_chunks, read_bow_pair, read_xc, read_xc_split, write_xc

#: The readers of single-file formats by the name the command line's ``--format`` takes.
READERS = {"xc": read_xc, "libsvm": read_libsvm}

__all__ = [
    "READERS",
    "read_xc",
    "iter_xc_chunks",
    "write_xc",
    "write_csr_npy",
    "open_csr_npy",
    "read_xc_split",
    "read_bow_pair",
    "read_libsvm",
    "read_arff",
    "read_predictions",
    "write_predictions",
    "load_dataset",
    "get_data_home",
    "DATASETS",
    "DatasetInfo",
    "DownloadError",
    "make_synthetic",
    "make_synthetic_preset",
    "SyntheticPreset",
    "SYNTHETIC_PRESETS",
]
