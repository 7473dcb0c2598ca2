"""The shared nogil generator: deterministic, in range, roughly uniform."""

import numpy as np

from xmltree._kernels._random import _py_draw


def test_same_seed_same_stream_different_seed_different_stream():
    assert np.array_equal(_py_draw(42, 100), _py_draw(42, 100))
    assert not np.array_equal(_py_draw(0, 100), _py_draw(1, 100))


def test_uniform_draws_are_in_unit_interval_with_mean_one_half():
    draws = _py_draw(7, 20000, -1)
    assert draws.min() >= 0.0 and draws.max() < 1.0
    assert abs(draws.mean() - 0.5) < 0.01


def test_bounded_draws_cover_the_range_evenly():
    draws = _py_draw(3, 70000, 7)
    counts = np.bincount(draws, minlength=7)
    assert counts.shape == (7,)
    assert np.all(np.abs(counts / draws.size - 1 / 7) < 0.01)
