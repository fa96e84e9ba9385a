"""``benchmarks/probes/ridge_probe.py``: pooled layer states as features for a ridge classifier."""

import numpy as np
from conftest import load_benchmark, make_panel

from sktspt import SPTPretrainer


def test_pooled_states_are_mean_and_max_of_every_layer_per_series():
    probe = load_benchmark("probes/ridge_probe")
    X, _ = make_panel(n=12, c=2, t=32)
    pre = SPTPretrainer(depth=2, d_model=16, architecture__n_heads=2, pretrain_epochs=1,
                        random_state=0).fit(X)
    F = probe.pooled_states(pre, pre.net_.module_, X)
    assert F.shape == (12, 2 * (2 + 1) * 16)  # tokens and 2 layers, mean and max of each
    assert np.isfinite(F).all()
    mean, top = F.reshape(12, 3, 2, 16)[:, :, 0], F.reshape(12, 3, 2, 16)[:, :, 1]
    assert (top >= mean - 1e-6).all()
    # a row is a function of its own series: the same features with other series around
    np.testing.assert_allclose(probe.pooled_states(pre, pre.net_.module_, X[3:5]), F[3:5],
                               rtol=1e-5, atol=1e-6)


def test_ridge_score_separates_separable_features():
    probe = load_benchmark("probes/ridge_probe")
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 20)
    F = rng.normal(size=(40, 5)) + 3.0 * y[:, None]
    assert probe.ridge_score(F[::2], y[::2], F[1::2], y[1::2]) == 1.0
    assert probe.ridge_score(F[::2], y[::2], F[1::2], 1 - y[1::2]) == 0.0
