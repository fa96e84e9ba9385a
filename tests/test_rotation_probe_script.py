"""``benchmarks/probes/rotation_probe.py``: 1-NN with and without the best circular shift.

The distances themselves are :mod:`sktspt.invariance`'s (``tests/test_invariance.py``)."""

import numpy as np
import pandas as pd
from conftest import load_benchmark


def test_unequal_lengths_are_resampled_to_the_median():
    probe = load_benchmark("probes/rotation_probe")
    frame = pd.DataFrame({"dim_0": [pd.Series(np.arange(n, dtype=float)) for n in (10, 20, 30)]})
    X = probe.as_equal_length(frame)
    assert X.shape == (3, 1, 20)
    np.testing.assert_allclose(X[:, 0, -1], [9.0, 19.0, 29.0])
