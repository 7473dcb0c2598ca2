"""Tests of scaling out: merged shards, Dask training, chunked prediction to disk,
estimators shipped to worker processes."""

import pickle
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from test_ldsm import clustered_problem, model_from_random_trees, needs_build_tree

from xmltree import LearnedTree, LOMTree
from xmltree._base import label_id_count
from xmltree._validation import check_features, check_labels
from xmltree.datasets import iter_xc_chunks, read_predictions, read_xc, write_predictions, write_xc
from xmltree.exceptions import DataFormatError, NotFittedError
from xmltree.ldsm import LdSM, merge

FAST = {"max_nodes": 15, "epochs": 3, "leaf_model": "histogram"}


def assert_same_trees(trees_a, trees_b):
    assert len(trees_a) == len(trees_b)
    for a, b in zip(trees_a, trees_b):
        assert a.keys() == b.keys()
        for name in a:
            np.testing.assert_array_equal(a[name], b[name], err_msg=name)


@pytest.fixture(scope="module")
def problem():
    X, labels, _ = clustered_problem(np.random.default_rng(5), 150)
    return X, labels


# ----------------------------------------------------------------------
# Merging
# ----------------------------------------------------------------------

@needs_build_tree
def test_merged_shards_equal_one_fit_bit_for_bit(problem):
    X, labels = problem
    whole = LdSM(n_trees=5, random_state=11, **FAST).fit(X, labels)
    head = LdSM(n_trees=3, random_state=11, **FAST).fit(X, labels)
    tail = LdSM(n_trees=2, random_state=11, first_tree=3, **FAST).fit(X, labels)
    merged = merge([head, tail])
    assert_same_trees(merged.trees_, whole.trees_)
    assert merged.get_params() == whole.get_params()
    for got, expected in zip(merged.predict(X, k=4), whole.predict(X, k=4)):
        np.testing.assert_array_equal(got, expected)
    # Shards in the wrong order hold the same trees but not the same ensemble.
    swapped = merge([tail, head])
    assert swapped.random_state is None and swapped.first_tree == 0


@needs_build_tree
def test_first_tree_selects_a_slice_of_the_seeded_ensemble(problem):
    X, labels = problem
    whole = LdSM(n_trees=4, random_state=2, **FAST).fit(X, labels)
    middle = LdSM(n_trees=2, random_state=2, first_tree=1, **FAST).fit(X, labels)
    assert_same_trees(middle.trees_, whole.trees_[1:3])


def test_merged_model_averages_the_trees_of_its_shards(rng):
    a, _ = model_from_random_trees(rng, n_trees=3)
    b, _ = model_from_random_trees(rng, n_trees=1)
    X = sp.random(40, a.n_features_in_, density=0.3, random_state=1, format="csr",
                  dtype=np.float32)
    merged = merge([a, b])
    assert len(merged.trees_) == merged.n_trees == 4
    expected = (3 * a.predict_scores(X).toarray() + b.predict_scores(X).toarray()) / 4
    np.testing.assert_allclose(merged.predict_scores(X).toarray(), expected, atol=1e-6)
    np.testing.assert_array_equal(merged.n_nodes_, np.concatenate([a.n_nodes_, b.n_nodes_]))


def test_merged_model_survives_save_and_load(rng, tmp_path):
    a, _ = model_from_random_trees(rng, n_trees=2)
    b, _ = model_from_random_trees(rng, n_trees=2)
    merged = merge([a, b])
    merged.save(tmp_path / "merged.npz")
    loaded = LdSM.load(tmp_path / "merged.npz")
    assert_same_trees(loaded.trees_, merged.trees_)


@pytest.mark.parametrize("change, problem_name", [
    ({"arity": 3}, "arity"),
    ({"routing": "sigmoid"}, "routing"),
    ({"epochs": 7}, "epochs"),
])
def test_merge_refuses_incompatible_hyper_parameters(rng, change, problem_name):
    a, _ = model_from_random_trees(rng, n_trees=1)
    b, _ = model_from_random_trees(rng, n_trees=1, arity=change.get("arity", 2),
                                   routing=change.get("routing", "margin"))
    b.set_params(**change)
    with pytest.raises(ValueError, match=f"model 1 has {problem_name}="):
        merge([a, b])


def test_merge_refuses_other_shapes_duplicates_and_bad_input(rng):
    a, trees = model_from_random_trees(rng, n_trees=2)
    wider = LdSM(n_trees=2, leaf_model="histogram", feature_scaling=None,
                 leaf_scores="distribution")
    wider._set_trees(trees, a.n_features_in_ + 1, a.n_labels_)
    with pytest.raises(ValueError, match="n_features_in_="):
        merge([a, wider])
    a.set_params(random_state=4)
    twin, _ = model_from_random_trees(rng, n_trees=3)
    twin.set_params(random_state=4, first_tree=1)
    with pytest.raises(ValueError, match="both hold tree 1 of random_state=4"):
        merge([a, twin])
    with pytest.raises(ValueError, match="non-empty sequence"):
        merge([])
    with pytest.raises(ValueError, match="non-empty sequence"):
        merge([a, "model"])
    with pytest.raises(NotFittedError):
        merge([a, LdSM()])


def test_first_tree_is_validated():
    with pytest.raises(ValueError, match=r"first_tree must be an integer in \[0, 100000\]"):
        LdSM(first_tree=-1).fit(np.ones((2, 2)), [[0], [1]])


# ----------------------------------------------------------------------
# Dask
# ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def dask_client():
    """A client of a local cluster of two single-threaded worker processes."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client


def run_on_dask(client, monkeypatch, work):
    """Run ``work()`` inside joblib's Dask backend; return its result, the type
    names of the objects scattered to the cluster and whether every task ran
    on one of the cluster's workers."""
    import distributed
    import joblib

    scattered = []
    real_scatter = client.scatter

    def counting_scatter(data, *args, **kwargs):
        scattered.append(type(data).__name__)
        return real_scatter(data, *args, **kwargs)

    monkeypatch.setattr(client, "scatter", counting_scatter)
    with distributed.get_task_stream(client) as stream, joblib.parallel_backend("dask"):
        result = work()
    workers = set(client.scheduler_info()["workers"])
    on_workers = bool(stream.data) and {task["worker"] for task in stream.data} <= workers
    return result, scattered, on_workers


@needs_build_tree
def test_dask_cluster_trains_the_same_model_shipping_data_once(problem, dask_client,
                                                               monkeypatch):
    X, labels = problem
    params = dict(n_trees=4, random_state=9, **FAST)
    local = LdSM(**params).fit(X, labels)
    remote, scattered, on_workers = run_on_dask(
        dask_client, monkeypatch, lambda: LdSM(**params, verbose=True).fit(X, labels))
    # The trees ran as tasks on the cluster's worker processes, and X and Y
    # were scattered once each for the whole fit, not once per tree.
    assert on_workers
    assert len(scattered) == 2, scattered
    assert_same_trees(remote.trees_, local.trees_)


def test_dask_cluster_predicts_a_file_chunk_by_chunk(rng, tmp_path, xc_file, dask_client,
                                                     monkeypatch):
    model, _ = model_from_random_trees(rng, n_trees=3)
    local, remote = tmp_path / "local.txt", tmp_path / "remote.txt"
    model.predict_file(xc_file, local, k=4, chunk_size=5)
    n_rows, scattered, on_workers = run_on_dask(
        dask_client, monkeypatch, lambda: model.predict_file(xc_file, remote, k=4, chunk_size=5))
    # Five chunks ran on the workers; the model was sent once, not with each.
    assert n_rows == 23 and on_workers
    assert scattered.count("LdSM") == 1, scattered
    assert remote.read_bytes() == local.read_bytes()


# ----------------------------------------------------------------------
# Estimators travel to worker processes as their model state
# ----------------------------------------------------------------------

def test_fitted_ldsm_pickles_to_an_identical_model(problem):
    X, labels = problem
    model = LdSM(n_trees=2, random_state=1, **FAST).fit(X, labels)
    copy = pickle.loads(pickle.dumps(model))
    assert copy.get_params() == model.get_params()
    assert copy.resolved_params_ == model.resolved_params_
    assert_same_trees(copy.trees_, model.trees_)
    for got, expected in zip(copy.predict(X, k=3), model.predict(X, k=3)):
        np.testing.assert_array_equal(got, expected)
    # Its size counts the arrays, so that joblib's Dask backend scatters it.
    n_bytes = sum(a.nbytes for tree in model.trees_ for a in tree.values())
    assert sys.getsizeof(model) > n_bytes > sys.getsizeof(LdSM())


def test_fitted_lomtree_and_learned_tree_pickle_to_identical_models():
    rng = np.random.default_rng(2)
    X = sp.random(200, 12, density=0.4, random_state=3, format="csr", dtype=np.float32)
    y = rng.integers(6, size=200)
    lom = LOMTree(random_state=0).fit(X, y)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(lom)).predict(X), lom.predict(X))
    learned = LearnedTree(arity=3, dim=8, epochs=2, n_jobs=1, random_state=0).fit(X, y)
    for got, expected in zip(pickle.loads(pickle.dumps(learned)).predict(X, k=2),
                             learned.predict(X, k=2)):
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("estimator", [LdSM(n_trees=3, arity=4), LOMTree(swap_resistance=6),
                                       LearnedTree(dim=7)])
def test_unfitted_estimators_pickle_with_their_parameters(estimator):
    copy = pickle.loads(pickle.dumps(estimator))
    assert type(copy) is type(estimator) and copy.get_params() == estimator.get_params()
    with pytest.raises(NotFittedError):
        copy._get_state()


# ----------------------------------------------------------------------
# Chunked prediction to disk
# ----------------------------------------------------------------------

@pytest.fixture
def xc_file(rng, tmp_path):
    """An XC data file with 23 rows, including a blank row and an unlabelled one."""
    X = sp.random(23, 18, density=0.3, random_state=3, format="csr", dtype=np.float32)
    X = sp.csr_matrix(sp.diags((np.arange(23) != 4).astype(np.float32)) @ X)
    X.eliminate_zeros()
    labels = [[int(i % 7), 9] for i in range(23)]
    labels[4], labels[10] = [], []
    path = tmp_path / "test.txt"
    write_xc(path, X, labels)
    return path


@pytest.mark.parametrize("chunk_size", [1, 5, 23, 1000])
def test_predict_file_equals_predict_on_the_whole_file(rng, tmp_path, xc_file, chunk_size):
    model, _ = model_from_random_trees(rng, n_trees=3)
    X, _ = read_xc(xc_file)
    expected, got = tmp_path / "expected.txt", tmp_path / "got.txt"
    write_predictions(expected, *model.predict(X, k=4), model.n_labels_)
    assert model.predict_file(xc_file, got, k=4, chunk_size=chunk_size) == 23
    assert got.read_bytes() == expected.read_bytes()
    assert read_predictions(got).shape == (23, model.n_labels_)


def test_every_learner_of_label_ids_predicts_a_file(tmp_path, xc_file):
    X, Y = read_xc(xc_file)
    classes = np.asarray(Y.argmax(axis=1)).ravel()
    for model in (LOMTree(random_state=0).fit(X, classes),
                  LearnedTree(dim=4, epochs=1, random_state=0).fit(X, classes)):
        expected, got = tmp_path / "expected.txt", tmp_path / "got.txt"
        write_predictions(expected, *model.predict_top_k(X, 3), label_id_count(model))
        assert model.predict_file(xc_file, got, k=3, chunk_size=7) == 23
        assert got.read_bytes() == expected.read_bytes()
    named = LearnedTree(dim=4, epochs=1, random_state=0).fit(
        X, np.array(["abcdefghij"[c % 10] for c in classes]))
    with pytest.raises(ValueError, match="label ids"):
        named.predict_file(xc_file, tmp_path / "named.txt")


def test_iter_xc_chunks_yields_the_rows_of_read_xc(xc_file):
    X, _ = read_xc(xc_file)
    chunks = list(iter_xc_chunks(xc_file, 10))
    assert [c.shape[0] for _, c in chunks] == [10, 10, 3]
    assert all(n_rows == 23 for n_rows, _ in chunks)
    np.testing.assert_array_equal(sp.vstack([c for _, c in chunks]).toarray(), X.toarray())


@pytest.mark.parametrize("body, problem, line", [
    (b"2 4 3\n0 1:1\n1 9:1\n", "feature id 9 is out of range", 3),
    (b"2 4 3\n0 1:1\n5 2:1\n", "label id 5 is out of range", 3),
    (b"3 4 3\n0 1:1\n1 2:1\n", "ends after 2", 4),
    (b"1 4 3\n0 1:1\n1 2:1\n2 0:1\n", "declares 1 rows but the file has 2", 3),
    (b"2 4 3\n0 1:1\n1 2:x\n", "is not a number", 3),
    (b"2 4 3\n0 1:1\n1 2:1", "does not end with a newline", 3),
    (b"2 4\n", "is not 'N D L'", 1),
    (b"", "file is empty", 1),
])
def test_predict_file_rejects_bad_files_and_keeps_the_old_output(rng, tmp_path, body,
                                                                 problem, line):
    model, _ = model_from_random_trees(rng, n_trees=1)
    source, out = tmp_path / "bad.txt", tmp_path / "out.txt"
    source.write_bytes(body)
    out.write_text("previous\n")
    with pytest.raises(DataFormatError, match=problem) as info:
        model.predict_file(source, out, chunk_size=1)
    assert info.value.line == line
    assert out.read_text() == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.txt", "out.txt"]


def test_predict_file_checks_arguments(rng, tmp_path, xc_file):
    model, _ = model_from_random_trees(rng, n_trees=1)
    for bad in (0, 2.5, None):
        with pytest.raises(ValueError, match="chunk_size must be an integer >= 1"):
            model.predict_file(xc_file, tmp_path / "out.txt", chunk_size=bad)
    with pytest.raises(ValueError, match="k must be"):
        model.predict_file(xc_file, tmp_path / "out.txt", k=0)
    with pytest.raises(NotFittedError):
        LdSM().predict_file(xc_file, tmp_path / "out.txt")
    wide = tmp_path / "wide.txt"
    wide.write_bytes(b"1 99 3\n0 98:1\n")
    with pytest.raises(DataFormatError):
        model.predict_file(wide, tmp_path / "out.txt")
    assert not (tmp_path / "out.txt").exists()


def test_predict_file_of_zero_rows_writes_a_header(rng, tmp_path):
    model, _ = model_from_random_trees(rng, n_trees=1)
    source = tmp_path / "empty.txt"
    source.write_bytes(b"0 4 3\n")
    assert model.predict_file(source, tmp_path / "out.txt") == 0
    assert (tmp_path / "out.txt").read_text() == f"0 {model.n_labels_}\n"


@needs_build_tree
def test_dask_cluster_trains_the_whole_default_model(problem, dask_client):
    # Issue #35: the label classifiers of linear leaves trained on the client only.
    X, labels = problem
    params = dict(n_trees=2, max_nodes=15, epochs=2, random_state=3, leaf_model="linear")
    import distributed
    import joblib

    local = LdSM(**params).fit(X, labels)
    with distributed.get_task_stream(dask_client) as stream, joblib.parallel_backend("dask"):
        remote = LdSM(**params).fit(X, labels)
    keys = [str(task["key"]) for task in stream.data]
    assert any("train_label_models" in key for key in keys), keys
    assert_same_trees(remote.trees_, local.trees_)
    for name in ("data", "indices", "indptr"):
        np.testing.assert_array_equal(getattr(remote.label_weights_, name),
                                      getattr(local.label_weights_, name))
    np.testing.assert_array_equal(remote.label_bias_, local.label_bias_)
    for got, expected in zip(remote.predict(X, k=3), local.predict(X, k=3)):
        np.testing.assert_array_equal(got, expected)


def test_label_blocks_train_the_classifiers_of_one_call(problem):
    from xmltree.ldsm._label_models import train_label_models
    from xmltree.ldsm._linear_leaves import _train_in_blocks, neighbourhoods

    X, labels = problem
    model = LdSM(n_trees=1, max_nodes=15, epochs=1, random_state=0,
                 leaf_model="histogram").fit(X, labels)
    Xs = model.scaler_.transform(check_features(X))
    Y = check_labels(labels, n_samples=X.shape[0])
    candidates, _ = model._forest.predict_top_k(Xs, 10, 1, check_input=False)
    indptr, examples, targets = neighbourhoods(candidates, Y, random_negatives=2, seed=5)
    solver = {"C": 0.5, "max_epochs": 20, "tolerance": 0.1, "first_negatives": 0.1,
              "weight_threshold": 0.05, "seed": 11, "n_threads": 2}
    whole, bias = train_label_models(Xs, indptr, examples, targets, **solver)
    for n_blocks in (1, 3, Y.shape[1], 10 * Y.shape[1]):
        blocks, block_bias = _train_in_blocks(Xs, indptr, examples, targets, solver, n_blocks)
        assert blocks.indptr.dtype == np.int64 and blocks.indices.dtype == np.int32
        for name in ("data", "indices", "indptr"):
            np.testing.assert_array_equal(getattr(blocks, name), getattr(whole, name))
        np.testing.assert_array_equal(block_bias, bias)
    with pytest.raises(ValueError, match="first_label"):
        train_label_models(Xs, indptr, examples, targets, **solver, first_label=-1)
