"""Model files, hyper-parameters and the command line, fuzzed: a clear error or a working model.

Runs the properties of ``tools/fuzz_models.py`` (see its docstring) on a small
derandomized budget, so CI tries the same cases every time;
``python tools/fuzz_models.py --examples N --seed S`` runs deeper.
"""

import importlib.util
import sys
import tracemalloc
from pathlib import Path

import pytest

#: Cases per kind of surface: the whole file runs in about twenty seconds.
EXAMPLES = {"file": 500, "params": 500, "cli": 500}


def load_script(name):
    """Import a script of ``tools/``, which is not a package."""
    path = Path(__file__).resolve().parents[1] / "tools" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    # Registered first: dataclasses look their module up while it executes.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


fuzz_models = load_script("fuzz_models")


@pytest.mark.parametrize("surface", fuzz_models.surfaces(), ids=lambda surface: surface.name)
def test_hostile_input_gives_a_clear_error_or_a_working_model(surface):
    examples = EXAMPLES[surface.name.split("_")[0]]
    counts = fuzz_models.fuzz(surface, examples)
    assert sum(counts.values()) >= examples
    # Both outcomes must occur, or the cases no longer reach what they test.
    assert len(counts) >= 2, counts


def test_damage_reaches_json_values_and_arrays():
    meta = {"params": {"n_trees": 2, "reranker": {"alpha": 0.5}}}
    paths = fuzz_models.json_paths(meta)
    assert ("params", "reranker", "alpha") in paths and len(paths) == 5
    fuzz_models.mutate_json(meta, 1, "<delete>")  # the second path: n_trees
    assert meta == {"params": {"reranker": {"alpha": 0.5}}}
    arrays = {"a": fuzz_models.np.arange(3), "b": fuzz_models.np.zeros(2)}
    fuzz_models.mutate_array(arrays, 0, "value", 1, -1, None)
    fuzz_models.mutate_array(arrays, 1, "delete", 0, 0, None)
    assert arrays["a"].tolist() == [0, -1, 2] and "b" not in arrays


def size_fields(meta: dict) -> list[tuple]:
    """Paths of the integer counts (``n_*``) in a model's metadata."""
    def value_at(path):
        value = meta
        for key in path:
            value = value[key]
        return value
    return [path for path in fuzz_models.json_paths(meta)[1:]
            if isinstance(path[-1], str) and path[-1].startswith("n_")
            and type(value_at(path)) is int]


@pytest.mark.parametrize("kind", fuzz_models.MODEL_KINDS)
def test_every_claimed_count_is_checked_before_memory_is_spent_on_it(kind, tmp_path):
    # Each count in turn claims 10**8 or 2**31 - 1: the file is refused, or
    # loads and predicts, without numpy allocating by the claim (traced).
    meta, arrays = fuzz_models.saved_state(kind)
    fields = size_fields(meta)
    assert fields
    for path in fields:
        for claim in (10**8, 2**31 - 1):
            damaged = fuzz_models.copy.deepcopy(meta)
            parent = damaged
            for key in path[:-1]:
                parent = parent[key]
            parent[path[-1]] = claim
            model_file = tmp_path / "model.npz"
            text = fuzz_models.json.dumps(damaged).encode()
            fuzz_models.np.savez(model_file, **arrays,
                                 __meta__=fuzz_models.np.frombuffer(text, dtype="uint8"))
            tracemalloc.start()
            try:
                model = fuzz_models.xmltree.load(model_file)
                fuzz_models.probe(model, 3)
            except fuzz_models.ModelFormatError:
                pass
            finally:
                peak = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
            assert peak < 50 * 2**20, (path, claim, peak)
