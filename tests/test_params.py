"""The parameter tables: complete, and the one source of checks and command-line flags."""

import inspect
import math

import pytest

from xmltree import LdSM, LearnedTree, LOMTree
from xmltree._cli_options import PARAMETER_TABLES
from xmltree._params import Param, check_param, describe
from xmltree.cli import _build_parser, _learner_class

LEARNERS = {"ldsm": LdSM, "lomtree": LOMTree, "learned-tree": LearnedTree}


@pytest.mark.parametrize("learner", sorted(PARAMETER_TABLES))
def test_each_table_lists_exactly_the_constructor_parameters(learner):
    names = [param.name for param in PARAMETER_TABLES[learner]]
    assert len(names) == len(set(names))
    assert set(names) == set(inspect.signature(_learner_class(learner)).parameters)


@pytest.mark.parametrize("learner", sorted(PARAMETER_TABLES))
def test_every_parameter_has_a_flag_or_is_python_only(learner):
    parser = _build_parser()
    train = parser._subparsers._group_actions[0].choices["train"]
    flags = {option for action in train._actions for option in action.option_strings}
    for param in PARAMETER_TABLES[learner]:
        flag = "--" + param.name.replace("_", "-")
        assert (flag in flags) == param.cli, f"{learner} {param.name}"


@pytest.mark.parametrize("learner", sorted(PARAMETER_TABLES))
def test_the_defaults_pass_their_own_checks(learner):
    cls = LEARNERS[learner]
    defaults = cls().get_params()
    for param in PARAMETER_TABLES[learner]:
        check_param(param, defaults[param.name])


def test_checks_and_their_words():
    auto_int = Param("epochs", "int", 1, 10, words=("auto",))
    assert check_param(auto_int, "auto") == "auto" and check_param(auto_int, 3) == 3
    for bad in (0, 11, 2.5, "Auto", None, True, float("nan")):
        with pytest.raises(ValueError, match=r"epochs must be 'auto' or an integer in \[1, 10\]"):
            check_param(auto_int, bad)
    threshold = Param("t", "real", words=("auto", None))
    assert check_param(threshold, -3) == -3.0 and check_param(threshold, None) is None
    with pytest.raises(ValueError, match="t must be 'auto', None or a number"):
        check_param(threshold, math.inf)
    rate = Param("rate", "real", 0.0, 1.0, strict=True)
    assert describe(rate) == "a number in (0, 1]"
    with pytest.raises(ValueError, match=r"rate must be in \(0.0, 1.0\]"):
        check_param(rate, 0.0)
    with pytest.raises(ValueError, match="unknown parameter kind"):
        Param("x", "complex")


def test_paper_configuration_is_one_spelling():
    model = LdSM.paper(n_trees=3)
    assert (model.leaf_model, model.leaf_scores, model.feature_scaling, model.epochs,
            model.max_nodes, model.n_trees) == ("histogram", "distribution", None, 20, 1000, 3)
