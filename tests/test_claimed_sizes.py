"""Sizes a model file claims must not size the memory of loading and predicting it (issue #32).

No array of an LdSM file with "l2" or no feature scaling confirms its
``n_features``: the forest must size its lookups by the feature ids its
weights use. A legitimate model over a hashed feature space, where the
weights use a few ids spread over millions, must predict as the same model
over a compact feature space does.
"""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp
from test_tree import random_features, random_flat_tree, reference_scores, reference_top_k

from xmltree import LdSM
from xmltree.datasets import make_synthetic
from xmltree.exceptions import ModelFormatError
from xmltree.ldsm import _tree_arrays
from xmltree.ldsm._forest import Forest
from xmltree.ldsm._tree_arrays import routing_threshold

SMALL = {"n_trees": 2, "max_nodes": 15, "epochs": 2, "n_jobs": 1, "random_state": 0,
         "feature_scaling": "l2"}
# The most features a model can have and still be given rows (int32 ids below 2**31 - 1).
CLAIMED_FEATURES = 2**31 - 2
HUGE_ID = CLAIMED_FEATURES - 1
HASHED_FEATURES = 2**24


@pytest.fixture(scope="module")
def problem():
    return make_synthetic(200, 40, 12, avg_labels=1.5, random_state=0)


# ----------------------------------------------------------------------
# Forged model files
# ----------------------------------------------------------------------

def read_model(path):
    with np.load(path) as archive:
        arrays = {name: archive[name] for name in archive.files}
    return json.loads(arrays.pop("__meta__").tobytes()), arrays


def write_model(path, meta, arrays):
    np.savez(path, **arrays, __meta__=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8))


def append_weight(arrays, prefix, row, feature, value):
    """Add the weight (`feature`, `value`) at the end of row `row` of the stored CSR
    block whose arrays are named `prefix` + indptr, indices, values (a tree's
    node: the weight of its first regressor, the others' 0)."""
    indptr = arrays[prefix + "indptr"].copy()
    at = indptr[row + 1]
    values = arrays[prefix + "values"]
    entry = np.zeros(values.shape[1:], dtype=np.float32)
    entry.flat[0] = value
    arrays[prefix + "indices"] = np.insert(arrays[prefix + "indices"], at, np.int32(feature))
    arrays[prefix + "values"] = np.insert(values, at, entry, axis=0)
    indptr[row + 1:] += 1
    arrays[prefix + "indptr"] = indptr


# Loads and predicts a model file with its address space capped at 1 GiB more
# than after the imports, and reports the growth of its peak resident memory.
MEASURE = textwrap.dedent("""
    import resource, sys
    import numpy as np
    import scipy.sparse as sp
    from xmltree import LdSM
    X = sp.load_npz(sys.argv[2])
    with open("/proc/self/status") as status:
        size = next(int(line.split()[1]) for line in status if line.startswith("VmSize"))
    resource.setrlimit(resource.RLIMIT_AS, ((size << 10) + (1 << 30), resource.RLIM_INFINITY))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    model = LdSM.load(sys.argv[1])
    labels, scores = model.predict(X, k=5)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    np.savez(sys.argv[3], labels=labels, scores=scores, grown_kib=grown)
""")


def load_and_predict_measured(path, X, tmp_path):
    """Top-5 predictions of the model file at `path`, and its peak memory growth in MiB."""
    sp.save_npz(tmp_path / "X.npz", X)
    out = tmp_path / "predictions.npz"
    run = subprocess.run([sys.executable, "-c", MEASURE, str(path), str(tmp_path / "X.npz"),
                          str(out)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    with np.load(out) as result:
        return result["labels"], result["scores"], int(result["grown_kib"]) / 1024


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
@pytest.mark.parametrize("leaf_model", ["histogram", "linear"])
@pytest.mark.parametrize("huge_weight", [False, True])
def test_a_file_claiming_2_to_the_31_features_loads_and_predicts_in_little_memory(
        problem, tmp_path, leaf_model, huge_weight):
    X, Y = problem
    model = LdSM(**SMALL, leaf_model=leaf_model).fit(X, Y)
    model.save(tmp_path / "model.npz")
    meta, arrays = read_model(tmp_path / "model.npz")
    meta["params"]["n_features"] = CLAIMED_FEATURES
    if huge_weight:
        # One weight at the largest id, in the root's first regressor (and in
        # label 0's classifier): no row of X has it, so nothing changes.
        append_weight(arrays, "tree0/weight_", 0, HUGE_ID, 1.5)
        if leaf_model == "linear":
            append_weight(arrays, "labels/", 0, HUGE_ID, 1.5)
    write_model(tmp_path / "forged.npz", meta, arrays)
    labels, scores, grown_mib = load_and_predict_measured(tmp_path / "forged.npz", X, tmp_path)
    expected_labels, expected_scores = model.predict(X, k=5)
    np.testing.assert_array_equal(labels, expected_labels)
    np.testing.assert_array_equal(scores, expected_scores)
    assert grown_mib < 200


# ----------------------------------------------------------------------
# Hashed feature spaces: few ids used among millions
# ----------------------------------------------------------------------

def spread_ids(rng, n_ids, n_features):
    """`n_ids` sorted distinct ids drawn from ``range(n_features)``, the last one at its end."""
    ids = np.unique(rng.integers(0, n_features - 1, size=4 * n_ids))
    ids = np.sort(rng.choice(ids, size=n_ids - 1, replace=False))
    return np.append(ids, n_features - 1).astype(np.int32)


def respaced_trees(trees, new_ids):
    """The trees with feature id j of their weights replaced by ``new_ids[j]``."""
    return [{**tree, "weight_indices": new_ids[tree["weight_indices"]]} for tree in trees]


def respaced_rows(X, new_ids, n_features):
    """`X` with column j moved to ``new_ids[j]`` in a space of `n_features` columns."""
    return sp.csr_matrix((X.data, new_ids[X.indices], X.indptr), shape=(X.shape[0], n_features))


def with_noise(rng, X, n_features, avoid, per_row=20):
    """`X` plus about `per_row` random entries a row in columns outside `avoid`
    (features no weight uses), some as large as the largest of `X`."""
    rows = rng.integers(0, X.shape[0], size=per_row * X.shape[0])
    columns = rng.integers(0, n_features, size=rows.size)
    keep = ~np.isin(columns, avoid)
    noise = sp.csr_matrix((rng.uniform(0.5, 2.0, size=keep.sum()).astype(np.float32),
                           (rows[keep], columns[keep])), shape=X.shape)
    noise.sum_duplicates()
    return sp.csr_matrix(X + noise)


def random_label_models(rng, n_labels, n_features):
    weights = sp.random(n_labels, n_features, density=0.4, format="csr", dtype=np.float32,
                        random_state=np.random.RandomState(rng.integers(2**31)))
    weights.data -= 0.5
    weights.indptr = weights.indptr.astype(np.int64)
    return weights, rng.normal(size=n_labels).astype(np.float32)


def hashed_pair(rng, n_features=40, n_labels=30, **options):
    """A forest over `n_features` ids and the same forest with its ids spread over 2**24."""
    trees = [random_flat_tree(rng, arity=2, n_features=n_features, n_labels=n_labels,
                              max_nodes=30) for _ in range(3)]
    new_ids = spread_ids(rng, n_features, HASHED_FEATURES)
    small = Forest(trees, arity=2, n_features=n_features, n_labels=n_labels,
                   routing="margin", **options)
    hashed = Forest(respaced_trees(trees, new_ids), arity=2, n_features=HASHED_FEATURES,
                    n_labels=n_labels, routing="margin", **options)
    return small, hashed, trees, new_ids


def assert_same_predictions(forest_a, X_a, forest_b, X_b):
    for a, b in zip(forest_a.predict_top_k(X_a, 7), forest_b.predict_top_k(X_b, 7)):
        np.testing.assert_array_equal(a, b)
    a, b = forest_a.predict_scores(X_a), forest_b.predict_scores(X_b)
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_array_equal(a.data, b.data)
    np.testing.assert_array_equal(forest_a.leaves_reached(X_a), forest_b.leaves_reached(X_b))


@pytest.mark.parametrize("n_threads", [1, 2])
def test_a_hashed_feature_space_predicts_as_its_compact_copy(rng, n_threads):
    small, hashed, trees, new_ids = hashed_pair(rng)
    assert hashed.feature_slot.nbytes < 1000
    X = random_features(rng, 300, 40, density=0.2)
    X_hashed = with_noise(rng, respaced_rows(X, new_ids, HASHED_FEATURES), HASHED_FEATURES,
                          new_ids)
    assert X_hashed.nnz > X.nnz
    assert_same_predictions(small, X, hashed, X_hashed)
    expected, _ = reference_scores(trees, X, 2, routing_threshold("margin"), 30)
    np.testing.assert_array_equal(hashed.predict_top_k(X_hashed, 7, n_threads)[0],
                                  reference_top_k(expected, 7)[0])


def test_hashed_label_classifiers_rescore_as_their_compact_copy(rng):
    small, hashed, _, new_ids = hashed_pair(rng)
    weights, bias = random_label_models(rng, 30, 40)
    hashed_weights = sp.csr_matrix((weights.data, new_ids[weights.indices], weights.indptr),
                                   shape=(30, HASHED_FEATURES))
    hashed_weights.indptr = weights.indptr
    for forest, label_weights in ((small, weights), (hashed, hashed_weights)):
        forest.use_label_models(label_weights, bias, n_candidates=6, histogram_weight=0.3,
                                margin_scale=4.0)
    # Each thread spreads an example over a table of label_ids.width floats.
    assert hashed.label_ids.compact and hashed.label_ids.width <= 40
    X = random_features(rng, 200, 40, density=0.2)
    X_hashed = with_noise(rng, respaced_rows(X, new_ids, HASHED_FEATURES), HASHED_FEATURES,
                          new_ids)
    assert_same_predictions(small, X, hashed, X_hashed)


@pytest.mark.parametrize("route_row_features", [None, 3])
@pytest.mark.parametrize("rescore", [False, True])
def test_compact_and_direct_ids_predict_alike(rng, monkeypatch, route_row_features, rescore):
    # The same hashed model, its ids once ranked among the used ones
    # (compact) and once taken as they are: rows with features no weight
    # uses, cut to their strongest features or not, route and score alike.
    # (A smaller space than HASHED_FEATURES: the direct tables are as wide.)
    n_features = 2**20
    trees = [random_flat_tree(rng, arity=3, n_features=40, n_labels=30, max_nodes=30)
             for _ in range(3)]
    new_ids = spread_ids(rng, 40, n_features)
    weights, bias = random_label_models(rng, 30, 40)
    weights.indices = new_ids[weights.indices]

    def forest():
        built = Forest(respaced_trees(trees, new_ids), arity=3, n_features=n_features,
                       n_labels=30, routing="sigmoid", route_row_features=route_row_features)
        if rescore:
            built.use_label_models(weights, bias, n_candidates=5, histogram_weight=0.5,
                                   margin_scale=4.0)
        return built

    compact = forest()
    monkeypatch.setattr(_tree_arrays, "MIN_DIRECT_IDS", n_features)
    direct = forest()
    assert compact.tree_ids.compact and not direct.tree_ids.compact
    assert not rescore or (compact.label_ids.compact and not direct.label_ids.compact)
    assert compact.feature_slot.shape[0] == 40 and direct.feature_slot.shape[0] == n_features
    X = with_noise(rng, respaced_rows(random_features(rng, 200, 40, density=0.3), new_ids,
                                      n_features), n_features, new_ids)
    assert_same_predictions(compact, X, direct, X)


def test_features_beyond_the_weights_contribute_nothing(rng):
    # Direct ids: the lookups end at the largest id a weight uses; a row's
    # larger ids (still below n_features) are features no weight has.
    trees = [random_flat_tree(rng, arity=2, n_features=25, n_labels=30) for _ in range(3)]
    forest = Forest(trees, arity=2, n_features=60, n_labels=30, routing="margin")
    assert forest.feature_slot.shape[0] <= 25
    X = random_features(rng, 200, 60, density=0.3)
    expected, _ = reference_scores(trees, X, 2, routing_threshold("margin"), 30)
    np.testing.assert_array_equal(forest.predict_top_k(X, 5)[0], reference_top_k(expected, 5)[0])
    assert_same_predictions(forest, X, forest, X[:, :25])


@pytest.mark.parametrize("name", ["n_features", "n_labels"])
def test_a_count_no_row_can_match_is_refused_at_load(problem, tmp_path, name):
    # Rows have at most 2**31 - 2 columns (int32 ids): a model claiming
    # 2**31 - 1 features could load, but never predict.
    X, Y = problem
    LdSM(**SMALL).fit(X, Y).save(tmp_path / "model.npz")
    meta, arrays = read_model(tmp_path / "model.npz")
    meta["params"][name] = 2**31 - 1
    write_model(tmp_path / "forged.npz", meta, arrays)
    with pytest.raises(ModelFormatError, match=f"{name} must be a positive integer below"):
        LdSM.load(tmp_path / "forged.npz")
