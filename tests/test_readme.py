"""Every Python code block of README.md and docs/*.rst runs as written.

The blocks of one file run in order in one namespace, as a reader would run
them, in a temporary directory holding small stand-ins for the files they
name (``bibtex/train.txt``, ``train.txt``...) and with the arrays they leave
to the reader (``X``, ``Y``, ``y``...) defined. A block that needs what a test
cannot provide is marked just before it, ``<!-- docs-test: skip (why) -->``
in Markdown or ``.. docs-test: skip (why)`` in reStructuredText, and is
reported as skipped with that reason. A block that needs an optional package
is marked ``docs-test: needs (package, ...)`` the same way: it runs where the
packages import (CI installs them) and is skipped elsewhere.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

from xmltree.datasets import make_synthetic, write_xc

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.rst"))]

_MARKER = (r"(?:<!--|\.\.) docs-test: (?P<marker>skip|needs) \((?P<detail>[^)]*)\)(?: -->)?"
           r"\s*\n")
_MARKDOWN_BLOCK = re.compile(rf"(?:{_MARKER})?```python\n(?P<code>.*?)```", re.DOTALL)
_RST_BLOCK = re.compile(rf"(?:{_MARKER}\s*)?\.\. code-block:: python\n\n"
                        r"(?P<code>(?:(?: {3}.*)?\n)+)")


def code_blocks(path: Path) -> list[tuple[str, str | None]]:
    """``(code, reason to skip it here or None)`` of every Python block of a
    document, in order."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".md":
        return [(match["code"], _skip_reason(match))
                for match in _MARKDOWN_BLOCK.finditer(text)]
    return [(re.sub(r"(?m)^ {3}", "", match["code"]), _skip_reason(match))
            for match in _RST_BLOCK.finditer(text)]


def _skip_reason(match: re.Match) -> str | None:
    """Why the block of `match` cannot run here: its skip marker's reason, or
    the first package of its needs marker that does not import."""
    if match["marker"] == "skip":
        return match["detail"]
    if match["marker"] == "needs":
        for package in match["detail"].split(","):
            if importlib.util.find_spec(package.strip()) is None:
                return f"needs {package.strip()}, not installed"
    return None


BLOCKS = [(path, index) for path in DOCUMENTS for index in range(len(code_blocks(path)))]


def test_the_documents_have_blocks_to_run():
    assert {path.name for path, _ in BLOCKS} >= {"README.md", "sklearn.rst", "text.rst"}


def write_stand_ins(folder: Path) -> dict:
    """Small files under the names the blocks read, and the arrays they take as given."""
    X, Y = make_synthetic(n_samples=300, n_features=60, n_labels=15, avg_labels=2.0,
                          random_state=0)
    (folder / "bibtex").mkdir()
    write_xc(folder / "bibtex" / "train.txt", X[:240], Y[:240])
    write_xc(folder / "bibtex" / "test.txt", X[240:], Y[240:])
    rng = np.random.default_rng(0)
    topics = {"grain": "wheat corn harvest crop", "oil": "crude barrel opec refinery",
              "ship": "port vessel cargo tanker"}
    for name, n_documents in (("train.txt", 60), ("test.txt", 20)):
        lines = []
        for _ in range(n_documents):
            topic = str(rng.choice(sorted(topics)))
            lines.append(f"__label__{topic} " + " ".join(rng.choice(topics[topic].split(), 5)))
        (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    y = Y.indices[Y.indptr[:-1]]  # one class per row (every synthetic row has a label)
    return {"X": X[:200], "Y": Y[:200], "y": y[:200], "X_more": X[200:], "y_more": y[200:]}


@pytest.fixture(scope="module")
def namespaces(tmp_path_factory):
    """Per document: its namespace and how many of its blocks have run."""
    return {"folder": tmp_path_factory.mktemp("docs")}


@pytest.mark.parametrize("path, index", BLOCKS,
                         ids=[f"{path.name}-{index}" for path, index in BLOCKS])
def test_code_block_runs(path, index, namespaces, monkeypatch):
    blocks = code_blocks(path)
    if blocks[index][1] is not None:
        pytest.skip(f"{path.name} block {index}: {blocks[index][1]}")
    folder = namespaces["folder"] / path.name
    if path not in namespaces:
        folder.mkdir()
        namespaces[path] = [write_stand_ins(folder), 0]
    monkeypatch.chdir(folder)
    namespace, n_run = namespaces[path]
    # Run the earlier blocks first when this one is run alone (pytest -k).
    for earlier in range(n_run, index + 1):
        code, reason = blocks[earlier]
        if reason is None:
            exec(compile(code, f"{path.name} block {earlier}", "exec"), namespace)
        namespaces[path][1] = earlier + 1
