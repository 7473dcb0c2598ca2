"""Model files: round trip, atomic writes, and refusal of anything unsafe or foreign."""

import json
import zipfile

import numpy as np
import pytest

from xmltree._persistence import FORMAT_VERSION, OLDEST_READABLE_VERSION, load_model, save_model
from xmltree.exceptions import ModelFormatError


def rewrite_meta(path, **changes):
    """Edit the JSON metadata of a saved model file in place (to forge bad files)."""
    with np.load(path) as archive:
        contents = {name: archive[name] for name in archive.files}
    meta = json.loads(contents["__meta__"].tobytes())
    meta.update(changes)
    contents["__meta__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez(path, **contents)


def _arrays():
    return {"a": np.arange(5, dtype=np.int32), "b": np.linspace(0, 1, 7, dtype=np.float32)}


def test_round_trip_keeps_kind_params_and_arrays(tmp_path):
    path = tmp_path / "model.npz"
    save_model(path, "ldsm", {"arity": 2, "name": "x"}, _arrays())
    kind, version, params, arrays = load_model(path, kind="ldsm")
    assert kind == "ldsm" and params == {"arity": 2, "name": "x"}
    assert version == FORMAT_VERSION == 3
    for name, expected in _arrays().items():
        assert arrays[name].dtype == expected.dtype
        assert np.array_equal(arrays[name], expected)


def test_failed_save_leaves_previous_file_and_no_temporary(tmp_path):
    path = tmp_path / "model.npz"
    save_model(path, "ldsm", {}, _arrays())
    before = path.read_bytes()
    with pytest.raises(TypeError):
        save_model(path, "ldsm", {"bad": object()}, _arrays())
    with pytest.raises(TypeError):
        save_model(path, "ldsm", {}, {"obj": np.array([object()])})
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.npz"]


def test_wrong_kind_is_refused(tmp_path):
    path = tmp_path / "model.npz"
    save_model(path, "ldsm", {}, _arrays())
    with pytest.raises(ModelFormatError, match="expected 'lomtree'"):
        load_model(path, kind="lomtree")


@pytest.mark.parametrize("version,message", [
    (FORMAT_VERSION + 1, "version 4 was written by a newer xmltree .* upgrade xmltree"),
    (0, "version 0 is not supported .*reads versions 1 to 3.*train the model again"),
    ("2", "version '2' is not supported"),
    (True, "version True is not supported"),
    (None, "version None is not supported"),
])
def test_unreadable_format_versions_are_refused_saying_what_to_do(tmp_path, version, message):
    path = tmp_path / "model.npz"
    save_model(path, "ldsm", {}, _arrays())
    rewrite_meta(path, format_version=version)
    with pytest.raises(ModelFormatError, match=message):
        load_model(path)


def test_older_readable_versions_are_returned_for_the_estimator_to_upgrade(tmp_path):
    path = tmp_path / "model.npz"
    save_model(path, "ldsm", {"a": 1}, _arrays())
    rewrite_meta(path, format_version=OLDEST_READABLE_VERSION)
    stored = load_model(path)
    assert (stored.kind, stored.version, stored.params) == ("ldsm", 1, {"a": 1})


def test_foreign_npz_and_truncated_file_and_pickles_are_refused(tmp_path):
    foreign = tmp_path / "foreign.npz"
    np.savez(foreign, a=np.zeros(3))
    with pytest.raises(ModelFormatError, match="not an xmltree model"):
        load_model(foreign)

    truncated = tmp_path / "truncated.npz"
    save_model(truncated, "ldsm", {}, _arrays())
    truncated.write_bytes(truncated.read_bytes()[:100])
    with pytest.raises(ModelFormatError):
        load_model(truncated)

    pickled = tmp_path / "pickled.npz"
    save_model(pickled, "ldsm", {}, _arrays())
    with zipfile.ZipFile(pickled, "a") as archive:
        with archive.open("evil.npy", "w") as handle:
            np.save(handle, np.array([{"x": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ModelFormatError):
        load_model(pickled)

    not_zip = tmp_path / "text.npz"
    not_zip.write_text("hello")
    with pytest.raises(ModelFormatError):
        load_model(not_zip)


def test_top_level_load_returns_the_saved_kind(tmp_path):
    import xmltree
    from xmltree.datasets import make_synthetic

    X, y = make_synthetic(200, 40, 5, multiclass=True, random_state=0)
    models = [
        xmltree.LOMTree(random_state=0).fit(X, y),
        xmltree.LearnedTree(dim=8, epochs=1, random_state=0).fit(X, y),
    ]
    for model in models:
        path = tmp_path / f"{model._KIND}.npz"
        model.save(path)
        loaded = xmltree.load(path)
        assert type(loaded) is type(model)
        np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    save_model(tmp_path / "odd.npz", "forest-of-ents", {}, _arrays())
    with pytest.raises(ModelFormatError, match="unknown model kind"):
        xmltree.load(tmp_path / "odd.npz")
