"""Values of any magnitude: finite inputs however large give finite probabilities that sum
to 1, a non-finite network output is an error and never a label, and data in any units
(1e-12 to 1e12) give the same normalised values and the same predictions.
"""

import numpy as np
import pytest
from conftest import FAST_FIT as FAST
from conftest import TINY_NET as TINY
from conftest import data_fixture, make_panel
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sktspt import SPTClassifier
from sktspt.data import Normalizer

data = data_fixture(n=24, t=24)


@pytest.fixture(scope="module")
def fitted_by_mode(data):
    X, y = data
    return {m: SPTClassifier(normalize=m, **FAST).fit(X, y) for m in ("global", "instance")}


# --- huge values ---------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["global", "instance"])
def test_a_huge_test_value_gives_finite_probabilities(fitted_by_mode, data, mode):
    X, _ = data
    clf = fitted_by_mode[mode]
    Xt = X[:4].copy()
    Xt[0, 0, 5] = 1e20
    Xt[1, :, :] *= 1e30
    proba = clf.predict_proba(Xt)
    assert np.isfinite(proba).all()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(proba[2:], clf.predict_proba(X[2:4]))


def test_non_finite_output_is_an_error_not_a_label(data):
    X, y = data
    # Linear patches pass 1e20 on to the logits (the conv stem's LayerNorm would absorb it).
    clf = SPTClassifier(normalize=None, tokenizer="patch", **FAST).fit(X, y)
    Xt = X[:3].copy()
    Xt[0, 0, 5] = 1e20
    with pytest.raises(ValueError, match=r"not finite for 1 of 3 series \(rows \[0\]\)"):
        clf.predict(Xt)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    mode=st.sampled_from(["global", "instance"]),
    exponent=st.integers(-40, 38),
    sign=st.sampled_from([-1.0, 1.0]),
    rows=st.lists(st.integers(0, 5), min_size=1, max_size=6),
    frac=st.floats(0.01, 1.0),
)
def test_finite_inputs_of_any_magnitude_give_finite_outputs(
    fitted_by_mode, data, mode, exponent, sign, rows, frac
):
    X, _ = data
    clf = fitted_by_mode[mode]
    Xt = X[:6].astype(np.float64)
    g = np.random.default_rng(exponent + 100)
    hit = np.zeros(Xt.shape, dtype=bool)
    hit[rows] = g.random(Xt[rows].shape) < frac
    Xt[hit] = sign * min(10.0**exponent, 3.4e38) * g.random(hit.sum())
    proba = clf.predict_proba(Xt.astype(np.float32))
    assert np.isfinite(proba).all()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.isfinite(clf.transform(Xt.astype(np.float32))).all()


# --- the data's units ----------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(
    mode=st.sampled_from(["global", "instance"]),
    exponent=st.integers(-12, 12),
    constant_channel=st.booleans(),
    seed=st.integers(0, 3),
)
def test_normalisation_is_invariant_to_units(mode, exponent, constant_channel, seed):
    X, _ = make_panel(n=8, c=2, t=16, seed=seed)
    if constant_channel:
        X[:, 1] = 0.25
    X[0, 0, 3:6] = np.nan
    scaled = (X.astype(np.float64) * 10.0**exponent).astype(np.float32)
    ref = Normalizer(mode).fit(X).transform(X)
    out = Normalizer(mode).fit(scaled).transform(scaled)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    assert np.nanstd(out[:, 0]) > 0.5  # the signal is kept, not flattened by the floor


@pytest.mark.parametrize("normalize", ["global", "instance"])
def test_predictions_do_not_depend_on_the_data_units(data, normalize):
    X, y = data
    params = dict(normalize=normalize, pretrain_epochs=0, max_epochs=3, **TINY)
    ref = SPTClassifier(**params).fit(X, y).predict_proba(X)
    for scale in (1e-12, 1e12):
        Xs = (X.astype(np.float64) * scale).astype(np.float32)
        proba = SPTClassifier(**params).fit(Xs, y).predict_proba(Xs)
        np.testing.assert_allclose(proba, ref, atol=1e-3)
