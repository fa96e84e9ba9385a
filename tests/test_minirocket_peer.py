"""The MiniRocket peer is set up as sktime's and aeon's classifiers are: features, a scaler
without centring, then the cross-validated ridge; gaps and unequal lengths are filled."""

import numpy as np
import pytest

from sktspt.benchmark.minirocket import (
    ALPHAS,
    MiniRocketClassifier,
    MiniRocketRidge,
    fill_panel,
)


def test_fill_panel_interpolates_gaps_and_zero_pads_ends():
    X = np.full((2, 1, 6), np.nan)
    X[0, 0, :] = [1.0, np.nan, 3.0, np.nan, np.nan, 6.0]
    X[1, 0, :4] = [np.nan, 2.0, 2.0, 4.0]  # shorter, and a leading gap
    out = fill_panel(X, pad_length=8)
    assert out.shape == (2, 1, 8) and not np.isnan(out).any()
    np.testing.assert_allclose(out[0, 0], [1, 2, 3, 4, 5, 6, 0, 0])
    np.testing.assert_allclose(out[1, 0], [2, 2, 2, 4, 0, 0, 0, 0])


@pytest.mark.parametrize("n_channels", [1, 2])
def test_classifier_scales_features_before_the_ridge(n_channels):
    from sklearn.linear_model import RidgeClassifierCV
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(0)
    y = np.repeat(["a", "b"], 10)
    X = rng.normal(size=(20, n_channels, 40))
    X[y == "b", :, 10:20] += 2.0
    X[3, 0, 5] = np.nan  # a gap is filled, not propagated into the features
    model = MiniRocketClassifier(random_state=0).fit(X, y)
    scaler, ridge = model.steps[1][1], model.steps[2][1]
    assert isinstance(scaler, StandardScaler) and scaler.with_mean is False
    assert isinstance(ridge, RidgeClassifierCV)
    np.testing.assert_array_equal(ridge.alphas, ALPHAS)
    assert (model.predict(X) == y).mean() == 1.0
    # the ridge sees the scaled features: refitting it on them gives the same predictions
    F = scaler.transform(model.features_.transform(X))
    assert np.isfinite(F).all()
    refit = RidgeClassifierCV(alphas=ALPHAS).fit(F, y)
    np.testing.assert_array_equal(refit.predict(F), model.predict(X))


def test_univariate_data_uses_the_univariate_transform():
    from sktime.transformations.panel.rocket import MiniRocket, MiniRocketMultivariate

    rng = np.random.default_rng(1)
    y = np.repeat([0, 1], 6)
    uni = MiniRocketClassifier().fit(rng.normal(size=(12, 1, 30)), y)
    multi = MiniRocketClassifier().fit(rng.normal(size=(12, 3, 30)), y)
    assert type(uni.features_.rocket_) is MiniRocket
    assert type(multi.features_.rocket_) is MiniRocketMultivariate


def test_longer_test_series_are_cut_and_shorter_ones_padded():
    rng = np.random.default_rng(2)
    y = rng.normal(size=12)
    model = MiniRocketRidge(pad_length=30).fit([rng.normal(size=n) for n in range(20, 32)], y)
    assert model.predict([rng.normal(size=35), rng.normal(size=12)]).shape == (2,)


@pytest.mark.parametrize("model", [MiniRocketClassifier, MiniRocketRidge])
def test_series_shorter_than_the_kernels_are_zero_padded_as_aeon_does(model):
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 10)
    X = rng.normal(size=(20, 2, 8))  # PenDigits: 8 steps, 2 channels
    X[y == 1, :, 2:5] += 2.0
    fitted = model(random_state=0).fit(X, y if model is MiniRocketClassifier else y * 1.0)
    assert fitted.features_.length_ == 9
    padded = np.concatenate([X, np.zeros((20, 2, 1))], axis=2)
    np.testing.assert_array_equal(fitted.features_.transform(X),
                                  fitted.features_.transform(padded))
    assert fitted.predict(X[:, :1, :5].repeat(2, axis=1)).shape == (20,)  # shorter still
