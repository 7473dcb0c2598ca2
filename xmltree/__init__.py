"""xmltree: logarithmic-depth trees for extreme multi-label classification.

Public API
----------
LdSM
    Ensemble of LdSM trees (Majzoubi & Choromanska, 2020).
load
    Load any model saved with ``.save(path)``.
datasets, metrics
    Extreme Classification Repository I/O, dataset registry, synthetic data,
    and ranking metrics (P@k, nDCG@k, PSP@k, PSnDCG@k).
"""

__version__ = "0.1.0"

from . import datasets, metrics  # noqa: E402
from .exceptions import DataFormatError, ModelFormatError  # noqa: E402

__all__ = ["__version__", "datasets", "metrics", "DataFormatError", "ModelFormatError"]
