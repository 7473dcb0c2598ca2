"""The scripts of examples/, run on tiny stand-ins for their corpora."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

TOPICS = {"grain": "wheat corn harvest crop", "crude": "oil barrel opec refinery",
          "money-fx": "dollar yen currency rate"}


@pytest.fixture
def reuters_topics():
    spec = importlib.util.spec_from_file_location("reuters_topics",
                                                  EXAMPLES / "reuters_topics.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_split(folder: Path, split: str, n: int, seed: int) -> None:
    """Stories of one or two topics, in the layout of ../shared/corpora/reuters21578."""
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for _ in range(n):
        topics = sorted(rng.choice(sorted(TOPICS), size=rng.integers(1, 3), replace=False))
        words = " ".join(TOPICS[topic] for topic in topics).split()
        texts.append("HEADLINE " + " ".join(rng.choice(words, size=10)))
        labels.append(" ".join(topics))
    (folder / f"{split}_texts.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    (folder / f"{split}_labels.txt").write_text("\n".join(labels) + "\n", encoding="utf-8")


def test_reuters_example_trains_saves_loads_and_reports(reuters_topics, tmp_path, capsys):
    write_split(tmp_path, "train", 60, 0)
    write_split(tmp_path, "test", 20, 1)
    report = reuters_topics.main(["--corpus", str(tmp_path), "--n-trees", "2", "--json",
                                  str(tmp_path / "r.json")])
    assert report["P@1"] > 0.5 and json.loads((tmp_path / "r.json").read_text())["P@5"] > 0
    printed = capsys.readouterr().out
    assert "3 topics" in printed and "predicted: " in printed


def test_reuters_example_skips_without_the_corpus(reuters_topics, tmp_path, capsys):
    assert reuters_topics.main(["--corpus", str(tmp_path / "absent")]) is None
    assert "skipping: Reuters-21578 not found" in capsys.readouterr().out


REUTERS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "reuters21578"


@pytest.mark.skipif(not (REUTERS / "test_labels.txt").is_file(),
                    reason="Reuters-21578 not in ../shared/corpora")
def test_reuters_example_on_the_real_corpus(reuters_topics):
    # The corpus lists some topics twice for one story; 2 trees keep it quick.
    report = reuters_topics.main(["--n-trees", "2"])
    assert report["P@1"] > 0.85
