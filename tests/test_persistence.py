"""Model files: round trip, atomic writes, and refusal of anything unsafe or foreign."""

import json
import zipfile

import numpy as np
import pytest
from test_tree import with_regressor_rows

from xmltree._persistence import FORMAT_VERSION, OLDEST_READABLE_VERSION, load_model, save_model
from xmltree.exceptions import ModelFormatError


def rewrite_meta(path, **changes):
    """Edit the JSON metadata of a saved model file in place (to forge bad files).

    A `format_version` below 5 also gives LdSM trees the weight layout of
    those versions, as files written then hold it.
    """
    with np.load(path) as archive:
        contents = {name: archive[name] for name in archive.files}
    version = changes.get("format_version")
    if type(version) is int and version < 5:
        contents = with_regressor_rows(contents)
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
    assert version == FORMAT_VERSION == 6
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
    (FORMAT_VERSION + 1, "version 7 was written by a newer xmltree .* upgrade xmltree"),
    (0, "version 0 is not supported .*reads versions 1 to 6.*train the model again"),
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


# ----------------------------------------------------------------------------- hostile files


def members(path):
    """The raw ``.npy`` bytes of every member of an archive."""
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def write_members(path, contents, compression=zipfile.ZIP_STORED):
    """Write raw member bytes as an archive (each with a correct CRC)."""
    with zipfile.ZipFile(path, "w", compression) as archive:
        for name, data in contents.items():
            archive.writestr(name, data)


def damaged(path, old, new):
    """Replace `old` by `new` in the header of member ``a.npy`` of the file at `path`."""
    contents = members(path)
    contents["a.npy"] = contents["a.npy"].replace(old, new, 1)
    write_members(path, contents)


@pytest.mark.parametrize(("old", "new", "words"), [
    # Each used to escape np.load: MemoryError (4 TiB), tokenize.TokenError;
    # a structured dtype was read as if it were numbers.
    (b"(5,)", b"(1099511627776,)", "announces 4398046511104 bytes"),
    (b"'descr'", b"'''descr'", "corrupt array header"),
    (b"'<i4'", b"[('x', '<i4')]", "not a plain numeric one"),
    (b"'<i4'", b"'<c8'", "not a plain numeric one"),
])
def test_damaged_array_headers_are_refused_before_reading(tmp_path, old, new, words):
    path = tmp_path / "model.npz"
    save_model(path, "ldsm", {}, _arrays())
    damaged(path, old, new)
    with pytest.raises(ModelFormatError, match=f"{tmp_path}.*{words}"):
        load_model(path)


def test_compressed_or_undecodable_members_are_refused(tmp_path):
    path = tmp_path / "model.npz"
    save_model(path, "ldsm", {}, _arrays())
    write_members(path, members(path), zipfile.ZIP_DEFLATED)
    with pytest.raises(ModelFormatError, match="compressed"):
        load_model(path)
    # An unknown compression method in the directory used to raise NotImplementedError.
    save_model(path, "ldsm", {}, _arrays())
    data = bytearray(path.read_bytes())
    directory = data.index(b"PK\x01\x02")
    data[directory + 10:directory + 12] = (99).to_bytes(2, "little")
    path.write_bytes(bytes(data))
    with pytest.raises(ModelFormatError, match="compressed"):
        load_model(path)


def forged_meta(path, text):
    """Replace the JSON metadata of the file at `path` by `text`, verbatim."""
    contents = {name: np.load(path)[name] for name in ("a", "b")}
    contents["__meta__"] = np.frombuffer(text.encode(), dtype=np.uint8)
    np.savez(path, **contents)


@pytest.mark.parametrize(("params", "kind", "words"), [
    ('{"n": NaN}', '"ldsm"', "non-finite number NaN"),
    ('{"ngrams": Infinity}', '"ldsm"', "non-finite number Infinity"),
    ("[" * 100_000 + "]" * 100_000, '"ldsm"', "RecursionError"),  # used to escape
    ("[]", '"ldsm"', "parameters a JSON object"),
    ("{}", "[]", "kind must be a string"),  # a TypeError in xmltree.load
], ids=["nan", "infinity", "deep", "list", "kind"])
def test_malformed_metadata_is_refused_naming_the_file(tmp_path, params, kind, words):
    import xmltree

    path = tmp_path / "model.npz"
    save_model(path, "ldsm", {}, _arrays())
    forged_meta(path, f'{{"magic": "xmltree-model", "format_version": {FORMAT_VERSION}, '
                      f'"kind": {kind}, "params": {params}}}')
    with pytest.raises(ModelFormatError, match=f"{tmp_path}.*{words}"):
        xmltree.load(path)


def test_a_directory_is_an_os_error_not_a_format_error(tmp_path):
    with pytest.raises(IsADirectoryError):
        load_model(tmp_path)


# ------------------------------------------------------------------ counts of estimators


def rewrite_state(path, change):
    """Apply ``change(params, arrays)`` (in place) to a saved model file."""
    with np.load(path) as archive:
        arrays = {name: archive[name] for name in archive.files}
    meta = json.loads(arrays.pop("__meta__").tobytes())
    change(meta["params"], arrays)
    arrays["__meta__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez(path, **arrays)


@pytest.fixture(scope="module")
def problem():
    from xmltree.datasets import make_synthetic

    return make_synthetic(120, 20, 6, avg_labels=1.5, random_state=0)


def saved(tmp_path, model, X, y):
    path = tmp_path / f"{model._KIND}.npz"
    model.fit(X, y).save(path)
    return path


def test_a_huge_tree_count_is_refused_at_once(tmp_path, problem):
    import xmltree

    X, Y = problem
    path = saved(tmp_path, xmltree.LdSM(n_trees=2, max_nodes=7, epochs=1, n_jobs=1), X, Y)
    # It used to build 13 x n_trees array names before comparing (a hang).
    rewrite_state(path, lambda params, arrays: params.update(n_trees=2**31 - 1))
    with pytest.raises(ModelFormatError, match=f"{path}.*n_trees=2147483647 disagrees"):
        xmltree.load(path)


@pytest.mark.parametrize("params", [None, 3, ["reranker"]])
def test_a_reranked_ldsm_whose_parameters_are_no_dict_is_refused(tmp_path, problem, params):
    # Found by tools/fuzz_models.py: a TypeError looking for an old re-ranker in them.
    import xmltree
    from xmltree.rerank import Reranked, Reranker

    X, Y = problem
    ldsm = xmltree.LdSM(n_trees=2, max_nodes=7, epochs=1, n_jobs=1).fit(X, Y)
    path = tmp_path / "reranked.npz"
    Reranked(ldsm, Reranker(n_candidates=3)).fit(X, Y).save(path)
    rewrite_state(path, lambda params_, arrays: params_.update(estimator=params))
    with pytest.raises(ModelFormatError, match=f"{path}.*missing parameters"):
        xmltree.load(path)


def reranked_ldsm(X, Y):
    """A small fitted LdSM, behind a re-ranker still to fit."""
    from xmltree import LdSM
    from xmltree.rerank import Reranked

    return Reranked(LdSM(n_trees=1, max_nodes=7, epochs=1, n_jobs=1).fit(X, Y))


def widen_reranker(params, arrays):
    """Give the stored re-ranker one more feature than the model (consistently)."""
    params["reranker"]["n_features"] += 1
    arrays["rerank.feature_weights"] = np.append(arrays["rerank.feature_weights"], np.float32(1))


def test_a_reranker_of_another_width_is_refused_at_load(tmp_path, problem):
    import xmltree

    X, Y = problem
    path = saved(tmp_path, reranked_ldsm(X, Y), X, Y)
    # It used to load, then blame the caller's X at predict.
    rewrite_state(path, widen_reranker)
    with pytest.raises(ModelFormatError, match="re-ranker does not match"):
        xmltree.load(path)


def huge_n_jobs(params, arrays):
    params.get("hyper_parameters", params)["n_jobs"] = 2**31


def huge_n_candidates(params, arrays):
    params["reranker"]["n_candidates"] = 2**31


@pytest.mark.parametrize(("kind", "change", "words"), [
    # Both used to load, then raise OverflowError at predict.
    ("ldsm", huge_n_jobs, "n_jobs must be"),
    ("lomtree", huge_n_jobs, "n_jobs must be"),
    ("learned_tree", huge_n_jobs, "n_jobs must be"),
    ("reranked", huge_n_candidates, "n_candidates must be"),
])
def test_sizes_beyond_the_bounds_are_refused_at_load(tmp_path, problem, kind, change, words):
    import xmltree

    X, Y = problem
    y = np.asarray(Y.argmax(axis=1)).ravel()
    model, target = {
        "ldsm": (xmltree.LdSM(n_trees=1, max_nodes=7, epochs=1, n_jobs=1), Y),
        "reranked": (reranked_ldsm(X, Y), Y),
        "lomtree": (xmltree.LOMTree(), y),
        "learned_tree": (xmltree.LearnedTree(dim=4, epochs=1), y),
    }[kind]
    path = saved(tmp_path, model, X, target)
    rewrite_state(path, change)
    with pytest.raises(ModelFormatError, match=f"{path}.*{words}"):
        xmltree.load(path)


def test_text_vectorizer_settings_must_be_the_models(tmp_path):
    import xmltree

    texts = ["red apple", "green pear", "red cherry", "green apple"] * 3
    path = saved(tmp_path, xmltree.LearnedTree(dim=4, epochs=1, ngrams=2, buckets=16), texts,
                 ["fruit", "pome", "fruit", "pome"] * 3)
    rewrite_state(path, lambda params, arrays: params["vectorizer"].update(ngrams=5))
    with pytest.raises(ModelFormatError, match="vectorizer's settings disagree"):
        xmltree.load(path)


def test_a_node_budget_that_cannot_be_reserved_is_a_format_error(tmp_path, problem):
    import xmltree

    X, Y = problem
    y = np.asarray(Y.argmax(axis=1)).ravel()
    path = saved(tmp_path, xmltree.LOMTree(), X, y)
    rewrite_state(path, lambda params, arrays: params.update(
        effective_max_internal_nodes=2**30 - 1, n_features=X.shape[1]))
    # Reserved lazily: it loads and predicts if the address space allows, at once.
    try:
        model = xmltree.load(path)
    except ModelFormatError as error:
        assert "cannot be reserved" in str(error)
    else:
        np.testing.assert_array_equal(model.predict(X), xmltree.LOMTree().fit(X, y).predict(X))


def test_a_model_kind_that_is_not_a_name_is_unknown():
    from xmltree._base import estimator_class

    with pytest.raises(ModelFormatError, match="unknown model kind"):
        estimator_class(["ldsm"])  # a TypeError in a dict lookup


def test_a_reranker_confirms_the_feature_count_before_the_forest_allocates(tmp_path, problem):
    import xmltree

    X, Y = problem
    path = saved(tmp_path, reranked_ldsm(X, Y), X, Y)
    # The forest would allocate 12 bytes per claimed feature: 24 GiB.
    rewrite_state(path, lambda params, arrays: params["estimator"].update(n_features=2**31 - 1))
    with pytest.raises(ModelFormatError, match="re-ranker does not match"):
        xmltree.load(path)
