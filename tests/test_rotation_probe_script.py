"""``benchmarks/rotation_probe.py``: 1-NN with and without the best circular shift."""

import numpy as np
import pandas as pd
from conftest import load_benchmark


def test_a_turned_copy_is_at_distance_zero_only_under_the_shifted_distance():
    probe = load_benchmark("rotation_probe")
    rng = np.random.default_rng(0)
    X = probe.znorm(rng.normal(size=(6, 2, 40)))
    X[3] = np.roll(X[0], 11, axis=-1)  # both channels turned alike
    plain, shifted = probe.distances(X)
    assert shifted[0, 3] < 1e-8 and plain[0, 3] > 10.0
    assert (shifted <= plain + 1e-8).all()
    np.testing.assert_allclose(np.diag(shifted), 0.0, atol=1e-8)
    np.testing.assert_allclose(shifted, shifted.T, atol=1e-8)


def test_leave_one_out_tells_turned_classes_apart_only_with_the_shift():
    probe = load_benchmark("rotation_probe")
    rng = np.random.default_rng(1)
    t = np.arange(64)
    bump = np.exp(-0.5 * ((t - 32) / 2.0) ** 2)
    shapes = [bump, bump - np.roll(bump, 6)]  # a peak; a peak beside a trough
    y = np.repeat([0, 1], 10)
    X = np.stack([np.roll(shapes[k], rng.integers(64)) for k in y])[:, None]
    X = probe.znorm(X + 0.05 * rng.normal(size=X.shape))
    plain, shifted = probe.distances(X)
    assert probe.loo_accuracy(shifted, y) == 1.0
    assert probe.loo_accuracy(plain, y) < 1.0


def test_unequal_lengths_are_resampled_to_the_median():
    probe = load_benchmark("rotation_probe")
    frame = pd.DataFrame({"dim_0": [pd.Series(np.arange(n, dtype=float)) for n in (10, 20, 30)]})
    X = probe.as_equal_length(frame)
    assert X.shape == (3, 1, 20)
    np.testing.assert_allclose(X[:, 0, -1], [9.0, 19.0, 29.0])
