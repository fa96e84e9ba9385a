"""normalize="auto": per-series scaling only where one global scale cannot serve."""

import numpy as np
import pytest
from conftest import make_panel

from sktspt import SPTClassifier
from sktspt.normalization import resolve_normalization


def _spread_panel(orders: float, n=40, t=32, seed=0):
    X, y = make_panel(n=n, c=2, t=t, seed=seed)
    scales = np.logspace(0, orders, n)[np.random.default_rng(seed).permutation(n)]
    X[:, 1] *= scales[:, None]
    return X, y


def test_auto_keeps_global_statistics_for_comparable_scales():
    X, _ = _spread_panel(orders=1.0)
    assert resolve_normalization("auto", X) == "global"


def test_auto_standardises_each_series_when_scales_span_orders_of_magnitude():
    X, _ = _spread_panel(orders=5.0)
    assert resolve_normalization("auto", X) == "instance"


def test_auto_ignores_missing_values_and_constant_channels():
    X, _ = _spread_panel(orders=0.0)
    X[:, 0] = 3.0  # a constant channel: every std is 0
    X[::2, 1, 20:] = np.nan
    assert resolve_normalization("auto", X) == "global"


@pytest.mark.parametrize("mode", ["global", "instance", None])
def test_explicit_modes_pass_through(mode):
    X, _ = _spread_panel(orders=5.0)
    assert resolve_normalization(mode, X) == mode


def test_estimator_records_the_resolved_mode():
    X, y = _spread_panel(orders=5.0)
    kw = dict(depth=1, d_model=16, architecture__n_heads=2, architecture__dim_feedforward=16,
              pretrain_epochs=1,
              max_epochs=1, random_state=0)
    clf = SPTClassifier(normalize="auto", **kw).fit(X, y)
    assert clf.normalizer_.mode == "instance"
    assert clf.get_params()["normalize"] == "auto"
    X2, y2 = _spread_panel(orders=0.5)
    assert SPTClassifier(normalize="auto", **kw).fit(X2, y2).normalizer_.mode == "global"


def test_unknown_mode_is_rejected():
    X, y = make_panel(n=20, c=1, t=32)
    with pytest.raises(ValueError, match="normalize must be"):
        SPTClassifier(normalize="robust").fit(X, y)
