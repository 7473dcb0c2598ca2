"""Tests of the dataset registry, data-home resolution and the on-disk loader."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from xmltree.datasets import DATASETS, get_data_home, load_dataset
from xmltree.datasets._registry import LAYOUTS, find_dataset_files

# Table 5 of Majzoubi & Choromanska (2020), transcribed independently of the
# registry: name -> (features, labels, train points, test points).
LDSM_TABLE_5 = {
    "Mediamill": (120, 101, 30993, 12914),
    "Bibtex": (1836, 159, 4880, 2515),
    "Delicious": (500, 983, 12920, 3185),
    "EURLex-4K": (5000, 3993, 15539, 3809),
    "AmazonCat-13K": (203882, 13330, 1186239, 306782),
    "Wiki10-31K": (101938, 30938, 14146, 6616),
    "Delicious-200K": (782585, 205443, 196606, 100095),
    "Amazon-670K": (135909, 670091, 490449, 153025),
}


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# ---------------------------------------------------------------- registry


@pytest.mark.parametrize("name", sorted(LDSM_TABLE_5))
def test_registry_matches_the_ldsm_paper(name):
    info = DATASETS[name]
    assert (info.n_features, info.n_labels, info.n_train, info.n_test) == LDSM_TABLE_5[name]


@pytest.mark.parametrize("name", list(DATASETS))
def test_published_averages_are_consistent(name):
    # Both averages count the same label assignments, over the training set
    # or over train + test, so one of the two products must agree.
    info = DATASETS[name]
    assignments = info.n_labels * info.avg_points_per_label
    ratios = [n * info.avg_labels_per_point / assignments
              for n in (info.n_train, info.n_train + info.n_test)]
    assert min(abs(r - 1) for r in ratios) < 0.01
    assert 1 <= info.avg_labels_per_point < info.n_labels
    assert info.layout in LAYOUTS


@pytest.mark.parametrize("spelling", ["EURLex-4K", "eurlex-4k", "EURLEX_4K", "eurlex4k",
                                      " eurlex 4k"])
def test_lookup_ignores_case_and_separators(spelling):
    assert DATASETS[spelling] is DATASETS["EURLex-4K"]
    assert spelling in DATASETS


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(KeyError, match="known datasets: Mediamill, Bibtex"):
        DATASETS["bibtext"]
    assert "bibtext" not in DATASETS
    with pytest.raises(KeyError, match="unknown dataset"):
        load_dataset("no-such-set")


def test_iteration_gives_canonical_names_and_unique_storage():
    names = list(DATASETS)
    assert len(names) == len(DATASETS) >= 8
    assert {info.name for info in DATASETS.values()} == set(names)
    assert len({info.folder for info in DATASETS.values()}) == len(names)
    assert len({info.archive for info in DATASETS.values()}) == len(names)


@pytest.mark.parametrize(
    ("name", "expected"),
    [("Amazon-670K", (0.6, 2.6)), ("AmazonCat-13K", (0.6, 2.6)),
     ("Wiki10-31K", (0.5, 0.4)), ("WikiLSHTC-325K", (0.5, 0.4)),
     ("Bibtex", (0.55, 1.5)), ("Delicious-200K", (0.55, 1.5))],
)
def test_propensity_parameters_by_family(name, expected):
    assert DATASETS[name].propensity == expected


def test_entries_are_frozen_and_registry_read_only():
    with pytest.raises(dataclasses.FrozenInstanceError):
        DATASETS["bibtex"].n_train = 1
    with pytest.raises(TypeError):
        DATASETS["mine"] = DATASETS["bibtex"]


# ---------------------------------------------------------------- data home


def test_data_home_argument_is_created(tmp_path, monkeypatch):
    monkeypatch.setenv("XMLTREE_DATA", str(tmp_path / "ignored"))
    home = get_data_home(tmp_path / "a" / "b")
    assert home == tmp_path / "a" / "b" and home.is_dir()
    assert not (tmp_path / "ignored").exists()


def test_data_home_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("XMLTREE_DATA", str(tmp_path / "env"))
    assert get_data_home() == tmp_path / "env"
    assert (tmp_path / "env").is_dir()


def test_data_home_default_and_tilde(tmp_path, monkeypatch):
    monkeypatch.delenv("XMLTREE_DATA", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert get_data_home() == tmp_path / "xmltree_data"
    assert get_data_home("~/other") == tmp_path / "other"


# ---------------------------------------------------------------- layouts


def test_single_layout_plain_and_prefixed(tmp_path):
    _write(tmp_path / "a" / "train.txt", "")
    _write(tmp_path / "a" / "test.txt", "")
    assert find_dataset_files(tmp_path / "a") == (
        "single", {"train": tmp_path / "a" / "train.txt", "test": tmp_path / "a" / "test.txt"})
    _write(tmp_path / "b" / "Eurlex" / "eurlex_train.txt", "")
    _write(tmp_path / "b" / "Eurlex" / "EURLEX_TEST.TXT", "")
    layout, files = find_dataset_files(tmp_path / "b")
    assert layout == "single"
    assert files["test"].name == "EURLEX_TEST.TXT" and files["train"].parent.name == "Eurlex"


def test_split_and_bow_pair_layouts(tmp_path):
    for name in ("Bibtex_data.txt", "bibtex_trSplit.txt", "bibtex_tstSplit.txt"):
        _write(tmp_path / "split" / "Bibtex" / name, "")
    layout, files = find_dataset_files(tmp_path / "split")
    assert layout == "split"
    assert sorted(files) == ["data", "test_split", "train_split"]
    assert files["train_split"].name == "bibtex_trSplit.txt"
    for name in ("trn_X_Xf.txt", "trn_X_Y.txt", "tst_X_Xf.txt", "tst_X_Y.txt"):
        _write(tmp_path / "bow" / name, "")
    layout, files = find_dataset_files(tmp_path / "bow")
    assert layout == "bow_pair" and files["test_labels"].name == "tst_X_Y.txt"


def test_incomplete_or_missing_layouts(tmp_path):
    assert find_dataset_files(tmp_path / "absent") is None
    _write(tmp_path / "part" / "train.txt", "")
    _write(tmp_path / "part" / "trn_X_Xf.txt", "")
    assert find_dataset_files(tmp_path / "part") is None


def test_ambiguous_files_are_an_error(tmp_path):
    for name in ("train.txt", "eurlex_train.txt", "test.txt"):
        _write(tmp_path / name, "")
    with pytest.raises(FileNotFoundError, match="several files could be the train file"):
        find_dataset_files(tmp_path)


def test_preferred_layout_wins(tmp_path):
    for name in ("train.txt", "test.txt", "X_data.txt", "x_trSplit.txt", "x_tstSplit.txt"):
        _write(tmp_path / name, "")
    assert find_dataset_files(tmp_path)[0] == "single"
    assert find_dataset_files(tmp_path, prefer="split")[0] == "split"


# ---------------------------------------------------------------- loading

MEDIAMILL = DATASETS["mediamill"]


def test_load_single_layout_widens_train_and_test_alike(tmp_path):
    wide = MEDIAMILL.n_features + 10
    _write(tmp_path / "mediamill" / "train.txt",
           f"2 {MEDIAMILL.n_features} 101\n0,5 1:0.5 3:2\n100 0:1\n")
    _write(tmp_path / "mediamill" / "test.txt", f"1 {wide} 101\n7 {wide - 1}:3\n")
    (X_train, Y_train), (X_test, Y_test) = load_dataset("mediamill", tmp_path, subset="both")
    assert X_train.shape == (2, wide) and X_test.shape == (1, wide)
    assert Y_train.shape == (2, 101) and Y_test.shape == (1, 101)
    np.testing.assert_array_equal(X_train.toarray()[0, :4], [0, 0.5, 0, 2])
    assert Y_train[0].indices.tolist() == [0, 5] and Y_test[0].indices.tolist() == [7]
    assert X_test[0, wide - 1] == 3
    for matrix in (X_train, Y_train, X_test, Y_test):
        assert matrix.indices.dtype == np.int32 and matrix.indptr.dtype == np.int32
    X, Y = load_dataset("MEDIAMILL", tmp_path, subset="test")
    assert X.shape == (1, wide) and Y.shape == (1, 101)
    # Alone, the train file is widened to the registry's dimensions.
    X, Y = load_dataset("mediamill", tmp_path)
    assert X.shape == (2, MEDIAMILL.n_features)


def test_load_split_layout_uses_the_requested_column(tmp_path):
    rows = ["0 0:1", "1 1:1", "2 2:1", "3 3:1", "4 4:1"]
    folder = tmp_path / "Bibtex"  # the folder name is matched up to case
    _write(folder / "Bibtex_data.txt", "5 10 6\n" + "\n".join(rows) + "\n")
    _write(folder / "bibtex_trSplit.txt", "1 2\n2 3\n3 4\n")
    _write(folder / "bibtex_tstSplit.txt", "4 1\n5 5\n")
    X, Y = load_dataset("bibtex", tmp_path, split=1)
    assert X.shape == (3, 1836) and Y.shape == (3, 159)
    assert Y.indices.tolist() == [1, 2, 3]
    X, Y = load_dataset("bibtex", tmp_path, subset="test", split=0)
    assert Y.indices.tolist() == [3, 4]


def test_load_bow_pair_layout(tmp_path):
    folder = tmp_path / "eurlex_4k"
    _write(folder / "trn_X_Xf.txt", "2 5000\n0:1.5\n4999:1\n")
    _write(folder / "trn_X_Y.txt", "2 3993\n10:1\n3992:1 0:1\n")
    _write(folder / "tst_X_Xf.txt", "1 5000\n7:2\n")
    _write(folder / "tst_X_Y.txt", "1 3993\n5:1\n")
    (X, Y), (X_test, Y_test) = load_dataset("EURLex-4K", tmp_path, subset="both")
    assert X.shape == (2, 5000) and Y.shape == (2, 3993) and X_test.shape == (1, 5000)
    assert Y[1].indices.tolist() == [0, 3992] and Y_test[0].indices.tolist() == [5]


def test_missing_data_explains_where_and_how(tmp_path):
    with pytest.raises(FileNotFoundError) as error:
        load_dataset("Delicious-200K", tmp_path)
    message = str(error.value)
    assert str(tmp_path / "delicious-200k") in message
    assert "train.txt" in message and "download=True" in message
    assert "XMLTREE_DATASETS_URL" in message and "datasets/README.md" in message


def test_download_without_a_mirror_is_refused(tmp_path, monkeypatch):
    monkeypatch.delenv("XMLTREE_DATASETS_URL", raising=False)
    with pytest.raises(ValueError, match="XMLTREE_DATASETS_URL"):
        load_dataset("bibtex", tmp_path, download=True)


@pytest.mark.parametrize(("kwargs", "message"),
                         [({"subset": "all"}, "subset"), ({"split": -1}, "split"),
                          ({"split": 1.0}, "split"), ({"split": True}, "split"),
                          ({"split": 2**31}, "split")])
def test_bad_arguments(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        load_dataset("bibtex", tmp_path, **kwargs)


def test_shared_bibtex_end_to_end(shared_datasets):
    (X_train, Y_train), (X_test, Y_test) = load_dataset(
        "bibtex", data_home=shared_datasets, subset="both")
    assert X_train.shape == (4880, 1836) and X_test.shape == (2515, 1836)
    assert Y_train.shape == (4880, 159) and Y_test.shape == (2515, 159)
    assert 2.3 < Y_train.nnz / Y_train.shape[0] < 2.5
    X, Y = load_dataset("Bibtex", data_home=shared_datasets, subset="test")
    assert (X != X_test).nnz == 0 and (Y != Y_test).nnz == 0


def test_readme_table_matches_the_registry():
    readme = Path(__file__).resolve().parents[1] / "datasets" / "README.md"
    rows = {}
    for line in readme.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if cells[0] in DATASETS:
            rows[cells[0]] = cells
    assert set(rows) == set(DATASETS)
    for name, cells in rows.items():
        info = DATASETS[name]
        numbers = [float(cell.replace(",", "")) for cell in cells[1:7]]
        assert numbers == [info.n_train, info.n_test, info.n_features, info.n_labels,
                           info.avg_labels_per_point, info.avg_points_per_label]
        assert cells[7] == info.layout
        assert cells[8] == f"{info.propensity_a} / {info.propensity_b}"
        assert cells[9] == f"`{info.folder}/`"


def test_shared_delicious_end_to_end(shared_datasets):
    (X_train, Y_train), (X_test, Y_test) = load_dataset(
        "delicious", data_home=shared_datasets, subset="both")
    assert X_train.shape == (12908, 500) and X_test.shape == (3183, 500)
    assert Y_train.shape == (12908, 983) and Y_test.shape == (3183, 983)
