"""Shared fixtures: a seeded RNG and the location of the shared benchmark data."""

from pathlib import Path

import numpy as np
import pytest

#: ``../shared/datasets`` next to the repository, present on developer and CI
#: machines; tests that need it skip when it is absent.
SHARED_DATASETS = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"


@pytest.fixture
def rng():
    """A NumPy generator with a fixed seed, so failures are reproducible."""
    return np.random.default_rng(0)


@pytest.fixture
def shared_datasets():
    """Path of ``../shared/datasets``; skips the test when it holds no data set.

    An empty directory counts as missing: looking a data set up under a data
    home creates that directory (as scikit-learn's ``get_data_home`` does), so
    a lookup elsewhere can leave one behind.
    """
    if not any(SHARED_DATASETS.glob("*/train.txt")):
        pytest.skip(f"shared benchmark data not found at {SHARED_DATASETS}")
    return SHARED_DATASETS
