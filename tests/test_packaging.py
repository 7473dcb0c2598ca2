"""Packaging invariants cheap enough for every test run.

The sdist's file list is what ``setup.py egg_info`` writes to SOURCES.txt
(``sdist`` ships exactly that list), so MANIFEST.in mistakes show up here in
a second. Building the sdist and a wheel from it, and installing that wheel
without a compiler, is ``tools/check_wheel.sh`` (run by ``.ci/run``).
"""

import subprocess
import sys
from pathlib import Path

import pytest

from xmltree._kernels import _openmp
from xmltree.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def sdist_files(tmp_path_factory):
    """Paths, relative to the repository root, that the sdist would contain."""
    pytest.importorskip("setuptools", reason="setup.py needs setuptools")
    egg_base = tmp_path_factory.mktemp("egg-info")
    subprocess.run([sys.executable, "setup.py", "-q", "egg_info", "--egg-base", str(egg_base)],
                   cwd=ROOT, check=True, capture_output=True)
    sources = next(egg_base.glob("*.egg-info")) / "SOURCES.txt"
    return set(sources.read_text().splitlines())


def test_sdist_ships_sources_tests_and_readme(sdist_files):
    expected = {str(path.relative_to(ROOT)) for pattern in ("*.pyx", "*.pxd", "*.py")
                for path in (ROOT / "xmltree").rglob(pattern)}
    expected |= {str(path.relative_to(ROOT)) for path in (ROOT / "tests").glob("*.py")}
    expected |= {"README.md", "CHANGELOG.md", "pyproject.toml", "setup.py", "MANIFEST.in"}
    assert expected <= sdist_files, sorted(expected - sdist_files)


def test_sdist_ships_no_generated_or_compiled_files(sdist_files):
    generated = sorted(path for path in sdist_files
                       if path.endswith((".c", ".cpp", ".so", ".pyd", ".html", ".pyc")))
    assert generated == []


def test_version_tells_whether_openmp_is_built_in(capsys):
    with pytest.raises(SystemExit):
        main(["--version"])
    expected = "with OpenMP" if _openmp.OPENMP_ENABLED else "without OpenMP"
    assert expected in capsys.readouterr().out


def test_importing_the_package_leaves_scipys_optimisers_unloaded():
    # Only the tail scorers use them, when fitted: every other user of the
    # package would pay their import time and memory.
    code = ("import sys, xmltree, xmltree.ldsm, xmltree.rerank; "
            "print(sorted(m for m in ('scipy.optimize', 'scipy.linalg') if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                            text=True).stdout.strip()
    assert loaded == "[]"
