"""xmltree: logarithmic-depth trees for extreme multi-label classification.

Public API
----------
LdSM
    Ensemble of LdSM trees (Majzoubi & Choromanska, AISTATS 2020).
LOMTree
    Online logarithmic-time multiclass tree (Choromanska & Langford, NIPS 2015).
LearnedTree
    Hierarchical softmax over a learned M-ary label tree with representation
    learning (Jernite, Choromanska & Sontag, ICML 2017).
rerank.Reranked
    Any of them followed by a tail-label re-ranker, as one model.
TextClassifier
    Raw documents in, label names out: text features and any learner, as
    one model.
load
    Load any model saved with ``.save(path)``.
datasets, metrics, rerank, text
    Extreme Classification Repository I/O, dataset registry, synthetic data,
    ranking metrics (P@k, nDCG@k, PSP@k, PSnDCG@k), tail-label re-ranking,
    and text features.
"""

__version__ = "0.1.0"

from . import datasets, metrics, rerank, text  # noqa: E402
from ._base import estimator_class  # noqa: E402
from ._persistence import load_model  # noqa: E402
from .exceptions import DataFormatError, ModelFormatError, NotFittedError  # noqa: E402
from .ldsm import LdSM  # noqa: E402
from .learned_tree import LearnedTree  # noqa: E402
from .lomtree import LOMTree  # noqa: E402
from .text_classifier import TextClassifier  # noqa: E402

__all__ = [
    "__version__",
    "LdSM",
    "LOMTree",
    "LearnedTree",
    "TextClassifier",
    "load",
    "datasets",
    "metrics",
    "rerank",
    "text",
    "DataFormatError",
    "ModelFormatError",
    "NotFittedError",
]

def load(path):
    """Load a model of any kind saved with its ``save(path)`` method.

    Parameters
    ----------
    path : str or os.PathLike
        A model file.

    Returns
    -------
    LdSM, LOMTree, LearnedTree, TextClassifier, xmltree.rerank.Reranked or
    xmltree.rerank.Reranker
        The fitted model stored in the file.

    Raises
    ------
    ModelFormatError
        If the file is not a valid xmltree model of a supported version.
    """
    stored = load_model(path)
    try:
        cls = estimator_class(stored.kind)
    except ModelFormatError as exc:
        raise ModelFormatError(f"{path}: {exc}") from None
    return cls._from_file(stored, path)
