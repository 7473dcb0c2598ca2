"""The shared checks of ``xmltree._base``: bounded sizes, capped k and threads."""

import joblib
import numpy as np
import pytest

from xmltree import LdSM, LearnedTree, LOMTree
from xmltree._base import MAX_N_JOBS, THREADS_PER_CORE, check_choice, check_k, n_threads
from xmltree.rerank import Reranker


def test_n_jobs_is_bounded_and_threads_are_capped_per_core():
    cores = joblib.cpu_count()
    assert n_threads(None) == 1 and n_threads(-1) == cores
    # 1000 threads used to make libgomp exit the process.
    assert n_threads(1000) == min(1000, THREADS_PER_CORE * cores)
    assert n_threads(-(MAX_N_JOBS)) == 1
    for bad in (0, 2**31, -(2**31), MAX_N_JOBS + 1, 2.0, True, "2"):
        with pytest.raises(ValueError, match="n_jobs must be"):
            n_threads(bad)


def test_k_is_capped_at_the_labels():
    assert check_k(3, 10) == 3 and check_k(10**30, 10) == 10 and check_k(2**63, 1) == 1
    for bad in (0, -1, 2.0, None):
        with pytest.raises(ValueError, match="k must be"):
            check_k(bad, 10)


def test_unhashable_choices_are_refused_with_a_value_error():
    # A list read from a model file used to raise TypeError in a dict lookup.
    with pytest.raises(ValueError, match="routing must be one of"):
        check_choice("routing", [1], {"margin": 0.5})
    with pytest.raises(ValueError, match="method must be one of"):
        check_choice("method", np.array(["geometric", "linear"]), ("geometric", "linear"))


#: (estimator, parameter, value): each used to pass validation, then fail with
#: an OverflowError in a kernel, a MemoryError, or hours of work.
HUGE = [
    (LdSM, "n_trees", 10**12),
    (LdSM, "max_nodes", 10**10),
    (LdSM, "epochs", 2**31),
    (LdSM, "first_tree", 10**12),
    (LdSM, "max_weights_per_regressor", 2**40),
    (LdSM, "learning_rate", 1e300),
    (LdSM, "n_jobs", 2**31),
    (LOMTree, "max_internal_nodes", 2**30),
    (LOMTree, "epochs", 2**31),
    (LOMTree, "learning_rate", 1e300),
    (LOMTree, "beam_width", 2**17),
    (LOMTree, "n_jobs", -(2**31)),
    (LearnedTree, "dim", 10**9),
    (LearnedTree, "arity", 2**20),
    (LearnedTree, "epochs", 2**31),
    (LearnedTree, "n_tree_updates", 10**9),
    (LearnedTree, "max_depth", 10**6),
    (LearnedTree, "ngrams", 10**6),
    (LearnedTree, "buckets", 2**40),
    (LearnedTree, "learning_rate", 1e300),
    (LearnedTree, "n_jobs", 2**31),
]


@pytest.mark.parametrize(("cls", "name", "value"), HUGE,
                         ids=[f"{cls.__name__}-{name}" for cls, name, _ in HUGE])
def test_every_size_hyper_parameter_is_bounded_from_above(cls, name, value):
    with pytest.raises(ValueError, match=f"{name} must be"):
        cls(**{name: value})._validate_params()


def test_a_huge_size_fails_at_fit_before_any_work():
    X, y = np.eye(4), [0, 1, 2, 3]
    with pytest.raises(ValueError, match="max_nodes must be"):
        LdSM(max_nodes=10**10).fit(X, [[label] for label in y])
    with pytest.raises(ValueError, match="dim must be"):
        LearnedTree(dim=10**9).fit(X, y)


def test_n_candidates_is_bounded():
    with pytest.raises(ValueError, match="n_candidates must be"):
        Reranker(n_candidates=2**31)
