"""LearnedTree's hyper-parameters, declared once (see :mod:`xmltree._params`)."""

from __future__ import annotations

from .._base import MAX_DEPTH, MAX_EPOCHS, MAX_INDEX, MAX_LEARNING_RATE, MAX_NGRAMS, MAX_WIDTH
from .._params import Param

__all__ = ["LEARNED_TREE_PARAMS", "TREES"]

#: The label trees: learned, or fixed baselines.
TREES = ("learned", "huffman", "random", "flat")

LEARNED_TREE_PARAMS = (
    Param("arity", "int", 2, MAX_WIDTH, help="children per node (M)"),
    Param("dim", "int", 1, MAX_WIDTH, help="embedding dimension"),
    Param("epochs", "int", 1, MAX_EPOCHS, help="passes over the data"),
    Param("learning_rate", "real", 0.0, MAX_LEARNING_RATE, strict=True, help="step size"),
    Param("optimizer", "choice", choices=("adagrad", "sgd"), help="update rule"),
    Param("tree", "choice", choices=TREES, help="label tree"),
    Param("n_tree_updates", "int", 0, MAX_EPOCHS,
          help="times the learned tree is rebuilt during training"),
    Param("max_depth", "int", 1, MAX_DEPTH, words=(None,),
          help="depth of the learned or random tree (none: as deep as needed)"),
    Param("objective", "choice", choices=("classification", "likelihood"),
          help="what training maximises"),
    Param("ngrams", "int", 1, MAX_NGRAMS, help="longest word n-gram (text)"),
    Param("buckets", "int", 1, MAX_INDEX, help="hash buckets of the word n-grams (text)"),
    Param("min_count", "int", 1, help="fewest occurrences of a vocabulary word (text)"),
    Param("n_jobs", "n_jobs", help="threads"),
    Param("random_state", "seed", cli=False, help="seed (the command line's --seed)"),
)
