"""LOMTree's hyper-parameters, declared once (see :mod:`xmltree._params`)."""

from __future__ import annotations

from .._base import MAX_EPOCHS, MAX_LEARNING_RATE, MAX_NODES, MAX_WIDTH
from .._params import Param
from ._lomtree import LOSSES, OPTIMIZERS

__all__ = ["LOMTREE_PARAMS"]

LOMTREE_PARAMS = (
    Param("max_internal_nodes", "int", 1, MAX_NODES - 1, words=(None,),
          help="node budget (default: classes - 1)"),
    Param("swap_resistance", "real", 0.0, help="swap resistance RS"),
    Param("epochs", "int", 1, MAX_EPOCHS, help="passes over the data"),
    Param("optimizer", "choice", choices=OPTIMIZERS, help="update rule of the node regressors"),
    Param("learning_rate", "real", 0.0, MAX_LEARNING_RATE, strict=True, help="step size"),
    Param("loss", "choice", choices=LOSSES, help="loss of the node regressors"),
    Param("beam_width", "int", 1, MAX_WIDTH, help="prediction beam width (1: the single path)"),
    Param("beam_scale", "real", 0.0, strict=True,
          help="scale c of the beam's routing probabilities"),
    Param("shuffle", "bool", cli=False, help="visit the examples in a random order each epoch"),
    Param("n_jobs", "n_jobs", help="threads for prediction"),
    Param("random_state", "seed", cli=False, help="seed (the command line's --seed)"),
)
