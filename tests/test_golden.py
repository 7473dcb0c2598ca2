"""Every estimator still predicts exactly what it predicted when the golden files were made.

See ``tests/golden/make_golden.py`` for the cases and for how to regenerate
the files after a deliberate change of behaviour.
"""

import numpy as np
import pytest
from golden.make_golden import CASES, GOLDEN_DIR


@pytest.mark.parametrize("n_jobs", [1, 2])
@pytest.mark.parametrize("case", sorted(CASES))
def test_predictions_equal_the_golden_files(case, n_jobs):
    with np.load(GOLDEN_DIR / f"{case}.npz") as golden:
        expected_labels, expected_scores = golden["labels"], golden["scores"]
    labels, scores = CASES[case](n_jobs)
    np.testing.assert_array_equal(labels, expected_labels)
    assert scores.dtype == expected_scores.dtype
    np.testing.assert_array_equal(scores, expected_scores)
