"""Registry of the standard Extreme Classification Repository benchmark sets.

:data:`DATASETS` records, for each set, the statistics published by the
repository (http://manikvarma.org/downloads/XC/XMLRepository.html; the same
numbers as Table 5 of Majzoubi & Choromanska, 2020), the file layout it
ships in, and the Jain et al. (2016) propensity parameters the repository
uses for it. :func:`load_dataset` finds a set on disk in any of the known
layouts and, on request, downloads and unpacks it first.

The project never ships data. The repository serves its archives through
Google Drive links that a plain HTTP client cannot fetch, so downloading
needs a mirror: a directory served over HTTP(S) (or ``file://``) holding
the archives under the names in :attr:`DatasetInfo.archive`.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import scipy.sparse as sp

from . import _xc
from ._checks import check_dimension
from ._download import download_file, extract_archive

logger = logging.getLogger(__name__)

__all__ = ["DatasetInfo", "DATASETS", "LAYOUTS", "get_data_home", "find_dataset_files",
           "load_dataset"]

#: Environment variable naming the data home.
DATA_HOME_ENV = "XMLTREE_DATA"
#: Environment variable naming the mirror that serves the archives.
BASE_URL_ENV = "XMLTREE_DATASETS_URL"

#: The file layouts the loader recognises, in the order they are tried.
LAYOUTS = ("single", "split", "bow_pair")


@dataclass(frozen=True)
class DatasetInfo:
    """Published statistics and storage details of one benchmark set.

    Attributes
    ----------
    name : str
        Canonical name, as spelled by the repository (e.g. ``"EURLex-4K"``).
    n_train, n_test : int
        Number of training and test points.
    n_features, n_labels : int
        Feature and label dimensionality.
    avg_labels_per_point, avg_points_per_label : float
        Published averages, as the repository reports them (over the
        training set for most sets, over train and test for Mediamill,
        Bibtex, Delicious, EURLex-4K, Wikipedia-500K and Amazon-3M).
    layout : str
        How the repository ships the files: ``"single"`` (one XC-format file
        per split, ``train.txt`` / ``<prefix>_train.txt``), ``"split"`` (one
        ``<Name>_data.txt`` plus ``<name>_trSplit.txt`` / ``_tstSplit.txt``
        whose columns list the row ids of alternative splits) or
        ``"bow_pair"`` (``trn_X_Xf.txt`` features with ``trn_X_Y.txt``
        labels, and ``tst_`` likewise).
    archive : str
        File name of the archive on a mirror.
    folder : str
        Directory under the data home that holds (or receives) the files.
    propensity_a, propensity_b : float
        Parameters A and B of the Jain et al. propensity model used by the
        repository for propensity-scored metrics on this set.
    sha256 : str or None
        Checksum of the archive, when known; verified after download.
    size : int or None
        Size of the archive in bytes, when known; verified after download.
    """

    name: str
    n_train: int
    n_test: int
    n_features: int
    n_labels: int
    avg_labels_per_point: float
    avg_points_per_label: float
    layout: str
    archive: str
    folder: str
    propensity_a: float
    propensity_b: float
    sha256: str | None = None
    size: int | None = None

    @property
    def propensity(self) -> tuple[float, float]:
        """``(A, B)`` for :func:`xmltree.metrics` propensity weights."""
        return (self.propensity_a, self.propensity_b)


# Propensity parameters the repository prescribes, by data family.
_AMAZON = (0.6, 2.6)
_WIKIPEDIA = (0.5, 0.4)
_OTHER = (0.55, 1.5)


def _entry(name, n_features, n_labels, n_train, n_test, labels_per_point, points_per_label,
           layout, propensity) -> DatasetInfo:
    """Build a registry entry in the column order of the repository's table."""
    return DatasetInfo(
        name=name, n_train=n_train, n_test=n_test, n_features=n_features, n_labels=n_labels,
        avg_labels_per_point=labels_per_point, avg_points_per_label=points_per_label,
        layout=layout, archive=f"{name}.zip", folder=name.lower(),
        propensity_a=propensity[0], propensity_b=propensity[1],
    )


def _text_entry(name, n_features, n_labels, n_train, n_test, labels_per_point) -> DatasetInfo:
    """An entry of the raw-count text sets of the mldr.datasets collection.

    They are not in the Extreme Classification Repository: their splits (a
    seeded 70/30) are converted to its single-file layout, and a mirror serves
    them as ``<name>.zip`` like the others (see ``datasets/README.md``).
    """
    return _entry(name, n_features, n_labels, n_train, n_test, labels_per_point,
                  round(labels_per_point * n_train / n_labels, 2), "single", _OTHER)


_ENTRIES = (
    # name, D, L, N train, N test, labels/point, points/label, layout, propensity (A, B)
    _entry("Mediamill", 120, 101, 30993, 12914, 4.38, 1902.15, "split", _OTHER),
    _entry("Bibtex", 1836, 159, 4880, 2515, 2.40, 111.71, "split", _OTHER),
    _entry("Delicious", 500, 983, 12920, 3185, 19.03, 311.61, "split", _OTHER),
    _entry("RCV1-2K", 47236, 2456, 623847, 155962, 4.79, 1218.56, "single", _OTHER),
    _entry("EURLex-4K", 5000, 3993, 15539, 3809, 5.31, 25.73, "single", _OTHER),
    _entry("Wiki10-31K", 101938, 30938, 14146, 6616, 18.64, 8.52, "single", _WIKIPEDIA),
    _entry("AmazonCat-13K", 203882, 13330, 1186239, 306782, 5.04, 448.57, "single", _AMAZON),
    _entry("Delicious-200K", 782585, 205443, 196606, 100095, 75.54, 72.29, "single", _OTHER),
    _entry("WikiLSHTC-325K", 1617899, 325056, 1778351, 587084, 3.19, 17.46, "single",
           _WIKIPEDIA),
    _entry("Wikipedia-500K", 2381304, 501070, 1813391, 783743, 4.77, 24.75, "single",
           _WIKIPEDIA),
    _entry("Amazon-670K", 135909, 670091, 490449, 153025, 5.45, 3.99, "single", _AMAZON),
    _entry("Amazon-3M", 337067, 2812281, 1717899, 742507, 36.04, 31.64, "single", _AMAZON),
    # Raw-count text (mldr.datasets): name, D, L, N train, N test, labels/point.
    _text_entry("yahoo_arts", 23146, 26, 5239, 2245, 1.64),
    _text_entry("stackex_chemistry", 540, 175, 4873, 2088, 2.10),
    _text_entry("rcv1sub1", 47236, 101, 4200, 1800, 2.88),
)


def _normalise_name(name: str) -> str:
    """Fold case and drop separators, so ``eurlex_4k`` matches ``EURLex-4K``."""
    return re.sub(r"[-_\s]", "", str(name)).lower()


class _Registry(Mapping):
    """Read-only mapping from canonical names to entries, with forgiving lookups.

    Iteration yields the canonical names in table order; ``registry[key]``
    and ``key in registry`` ignore case and ``-``/``_``.
    """

    def __init__(self, entries):
        self._entries = {info.name: info for info in entries}
        self._by_key = {_normalise_name(info.name): info for info in entries}

    def __getitem__(self, name: str) -> DatasetInfo:
        try:
            return self._by_key[_normalise_name(name)]
        except KeyError:
            known = ", ".join(self._entries)
            raise KeyError(f"unknown dataset {name!r}; known datasets: {known}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"DATASETS({', '.join(self._entries)})"


#: Registry of benchmark sets: ``DATASETS["eurlex_4k"]`` is the entry of
#: ``EURLex-4K``. Raises ``KeyError`` listing the known names on a miss.
DATASETS: Mapping[str, DatasetInfo] = _Registry(_ENTRIES)


def get_data_home(data_home: str | os.PathLike | None = None) -> Path:
    """Return the directory that holds downloaded datasets, creating it if needed.

    Parameters
    ----------
    data_home : str or os.PathLike, optional
        Explicit location. Otherwise the ``XMLTREE_DATA`` environment
        variable, otherwise ``~/xmltree_data``. ``~`` is expanded.

    Returns
    -------
    pathlib.Path
    """
    if data_home is None:
        data_home = os.environ.get(DATA_HOME_ENV) or Path("~") / "xmltree_data"
    path = Path(data_home).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path


# --------------------------------------------------------------------------- layouts

# File-name patterns of each layout, matched case-insensitively against the
# whole name. "single" accepts both ``train.txt`` and ``<prefix>_train.txt``.
_PATTERNS = {
    "single": {"train": r"(.+_)?train\.txt", "test": r"(.+_)?test\.txt"},
    "split": {"data": r".+_data\.txt", "train_split": r".+_trsplit\.txt",
              "test_split": r".+_tstsplit\.txt"},
    "bow_pair": {"train_features": r"trn_x_xf\.txt", "train_labels": r"trn_x_y\.txt",
                 "test_features": r"tst_x_xf\.txt", "test_labels": r"tst_x_y\.txt"},
}


def find_dataset_files(folder: str | os.PathLike,
                       prefer: str | None = None) -> tuple[str, dict[str, Path]] | None:
    """Find the files of one dataset in ``folder`` or one directory below it.

    Parameters
    ----------
    folder : str or os.PathLike
        Directory to search; archives usually unpack into a subdirectory,
        so its immediate subdirectories are searched too.
    prefer : str, optional
        Layout to try first (the one the registry expects).

    Returns
    -------
    (layout, files) or None
        ``layout`` is one of :data:`LAYOUTS` and ``files`` maps each role of
        that layout (``"train"``, ``"data"``, ``"train_features"``, ...) to
        a path. None when no layout is complete.

    Raises
    ------
    FileNotFoundError
        If a layout matches more than one file for the same role, which
        would make the choice arbitrary.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return None
    order = sorted(LAYOUTS, key=lambda layout: layout != prefer)
    directories = [folder] + sorted(p for p in folder.iterdir() if p.is_dir())
    for directory in directories:
        names = sorted(p.name for p in directory.iterdir() if p.is_file())
        for layout in order:
            files = _match_layout(directory, names, _PATTERNS[layout])
            if files is not None:
                return layout, files
    return None


def _match_layout(directory: Path, names: list[str],
                  patterns: dict[str, str]) -> dict[str, Path] | None:
    """Map every role in ``patterns`` to its unique file in ``names``, or return None."""
    files = {}
    for role, pattern in patterns.items():
        matches = [n for n in names if re.fullmatch(pattern, n, flags=re.IGNORECASE)]
        if not matches:
            return None
        if len(matches) > 1:
            raise FileNotFoundError(
                f"{directory}: several files could be the {role.replace('_', ' ')} file "
                f"({', '.join(matches)}); keep only one")
        files[role] = directory / matches[0]
    return files


# --------------------------------------------------------------------------- loading


def load_dataset(name: str, data_home: str | os.PathLike | None = None, *,
                 download: bool = False, subset: str = "train", split: int = 0,
                 base_url: str | None = None, verbose: bool = True):
    """Load a benchmark set of the Extreme Classification Repository.

    The files are looked for in ``data_home/<folder>/`` (``folder`` is the
    lowercase canonical name, e.g. ``bibtex``; a directory whose name
    matches up to case, ``-`` and ``_`` is also accepted), in any of the
    layouts described in :class:`DatasetInfo`.

    Parameters
    ----------
    name : str
        Registry name, matched ignoring case and ``-``/``_``.
    data_home : str or os.PathLike, optional
        See :func:`get_data_home`.
    download : bool, default=False
        If the files are missing, download the archive from the mirror and
        unpack it (the archive is deleted afterwards).
    subset : {"train", "test", "both"}, default="train"
        Which part to return.
    split : int, default=0
        For sets in the ``"split"`` layout, the 0-based column of the
        ``trSplit``/``tstSplit`` files to use (the repository ships several
        random splits). Ignored for other layouts.
    base_url : str, optional
        Mirror URL the archive name is appended to; otherwise the
        ``XMLTREE_DATASETS_URL`` environment variable.
    verbose : bool, default=True
        Show a download progress bar (on a terminal only).

    Returns
    -------
    (X, Y) or ((X_train, Y_train), (X_test, Y_test))
        ``X`` is CSR float32 of shape (n_samples, n_features), ``Y`` binary
        CSR of shape (n_samples, n_labels). ``"both"`` returns a pair of
        pairs. Train and test always share their column counts: each is
        widened to the largest of the registry's dimensions and of the
        headers of the files loaded.

    Raises
    ------
    KeyError
        If ``name`` is not in the registry.
    FileNotFoundError
        If the files are missing and ``download`` is False; the message
        says where the loader looked and how to obtain the data.
    ValueError
        On a bad ``subset``, a ``split`` that is not an integer in
        ``[0, 2**31 - 1]``, or when downloading without a mirror.
    DownloadError
        If the download fails (an :class:`OSError`; see
        :func:`~xmltree.datasets._download.download_file`).
    """
    if subset not in ("train", "test", "both"):
        raise ValueError(f"subset must be 'train', 'test' or 'both', got {subset!r}")
    check_dimension("split", split)
    info = DATASETS[name]
    home = get_data_home(data_home)
    folder = _existing_folder(home, info)
    found = find_dataset_files(folder, prefer=info.layout)
    if found is None:
        if not download:
            raise FileNotFoundError(_missing_message(info, folder))
        _download_and_extract(info, home, folder, base_url, verbose)
        found = find_dataset_files(folder, prefer=info.layout)
        if found is None:
            raise FileNotFoundError(
                f"{info.archive} was unpacked into {folder} but no known file layout "
                f"was found there; expected one of: {_layout_help()}")
    layout, files = found
    logger.info("loading %s (%s layout) from %s", info.name, layout, folder)
    parts = ("train", "test") if subset == "both" else (subset,)
    loaded = [_read_part(layout, files, part, split) for part in parts]
    loaded = _widen_to_common_shape(loaded, info)
    return tuple(loaded) if subset == "both" else loaded[0]


def _existing_folder(home: Path, info: DatasetInfo) -> Path:
    """Return the folder of ``info`` under ``home``, accepting spelling variants."""
    wanted = _normalise_name(info.folder)
    for candidate in sorted(home.iterdir()):
        if candidate.is_dir() and _normalise_name(candidate.name) == wanted:
            return candidate
    return home / info.folder


def _read_part(layout: str, files: dict[str, Path], part: str, split: int):
    """Read the train or test part of a dataset stored in ``layout``."""
    if layout == "single":
        return _xc.read_xc(files[part])
    if layout == "split":
        return _xc.read_xc_split(files["data"], files[f"{part}_split"], split)
    return _xc.read_bow_pair(files[f"{part}_features"], files[f"{part}_labels"])


def _widen_to_common_shape(parts: list, info: DatasetInfo) -> list:
    """Give every ``(X, Y)`` the same column counts, at least the registry's."""
    n_features = max([info.n_features] + [X.shape[1] for X, _ in parts])
    n_labels = max([info.n_labels] + [Y.shape[1] for _, Y in parts])
    return [(_with_columns(X, n_features), _with_columns(Y, n_labels)) for X, Y in parts]


def _with_columns(matrix: sp.csr_matrix, n_columns: int) -> sp.csr_matrix:
    """Widen a canonical CSR matrix with empty columns, keeping its index arrays."""
    if matrix.shape[1] == n_columns:
        return matrix
    widened = sp.csr_matrix((matrix.data, matrix.indices, matrix.indptr),
                            shape=(matrix.shape[0], n_columns))
    # The constructor may change the index dtypes; restore the readers' ones.
    widened.indices, widened.indptr = matrix.indices, matrix.indptr
    return widened


def _layout_help() -> str:
    """One-line description of the accepted layouts, for error messages."""
    return ("train.txt + test.txt (or <prefix>_train.txt + <prefix>_test.txt); "
            "<Name>_data.txt + <name>_trSplit.txt + <name>_tstSplit.txt; "
            "trn_X_Xf.txt + trn_X_Y.txt + tst_X_Xf.txt + tst_X_Y.txt")


def _missing_message(info: DatasetInfo, folder: Path) -> str:
    """Explain where the loader looked and how to get the data."""
    return (
        f"dataset {info.name} not found: looked in {folder} and its subdirectories for "
        f"{_layout_help()}. Either put the files there (or point data_home / "
        f"${DATA_HOME_ENV} at a directory containing a '{info.folder}' folder), or call "
        f"load_dataset({info.name!r}, download=True, base_url=...) with a mirror serving "
        f"{info.archive} (or set ${BASE_URL_ENV}). See datasets/README.md."
    )


def _resolve_base_url(base_url: str | None) -> str:
    """Return the mirror URL from the argument or the environment.

    There is deliberately no default: no public host offers the archives
    under stable direct links.
    """
    url = base_url or os.environ.get(BASE_URL_ENV)
    if not url:
        raise ValueError(
            f"no download location: pass base_url=... or set ${BASE_URL_ENV} to a URL "
            "serving the dataset archives (the Extreme Classification Repository only "
            "offers Google Drive links, which cannot be fetched directly)")
    return url


def _download_and_extract(info: DatasetInfo, home: Path, folder: Path,
                          base_url: str | None, verbose: bool) -> None:
    """Fetch ``info.archive`` from the mirror and unpack it into ``folder``."""
    url = _resolve_base_url(base_url).rstrip("/") + "/" + info.archive
    archive = download_file(url, home / info.archive, sha256=info.sha256, size=info.size,
                            verbose=verbose)
    logger.info("unpacking %s into %s", archive, folder)
    extract_archive(archive, folder)
    archive.unlink()
