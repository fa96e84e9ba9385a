"""``tokenizer__length``: every series resampled to one length, in fit and after, so an
encoder takes series of any length with the same tokens (what a pretrained encoder for a
corpus of varied lengths needs)."""

import numpy as np
import pytest

from sktspt import SPTClassifier, SPTPretrainer, load
from sktspt.resampling import resample

TINY = dict(depth=1, d_model=16, architecture__n_heads=2, architecture__dim_feedforward=16,
            augment=False, random_state=0)


def test_resample_stretches_each_series_observed_part_and_fills_its_gaps():
    X = np.full((3, 2, 6), np.nan)
    X[0, 0] = np.arange(6.0)                  # full length
    X[1, 0, :3] = [0.0, 1.0, 2.0]             # padded after 3 steps
    X[1, 1, :3] = [5.0, np.nan, 7.0]          # a gap inside: interpolated
    X[2, 1, :2] = [1.0, 3.0]                  # channel 0 never observed: zeros
    out = resample(X, 5)
    assert out.shape == (3, 2, 5) and np.isfinite(out).all()
    np.testing.assert_allclose(out[0, 0], np.linspace(0, 5, 5))
    np.testing.assert_allclose(out[1, 0], np.linspace(0, 2, 5))   # stretched, not padded
    np.testing.assert_allclose(out[1, 1], np.linspace(5, 7, 5))
    np.testing.assert_allclose(out[2, 0], 0.0)
    np.testing.assert_allclose(out[2, 1], np.linspace(1, 3, 5))


def test_a_resampling_estimator_takes_any_length_and_saves_the_length(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(16, 1, 90))
    X[:5, :, 40:] = np.nan  # unequal lengths
    y = np.arange(16) % 2
    clf = SPTClassifier(tokenizer__length=32, pretrain_epochs=1, max_epochs=1, **TINY).fit(X, y)
    assert (clf.n_timepoints_, clf.patch_size_, clf.max_tokens_) == (32, 1, 32)
    short, long = rng.normal(size=(3, 1, 7)), rng.normal(size=(3, 1, 700))
    assert clf.predict(short).shape == clf.predict(long).shape == (3,)
    # The same series at twice its length, linearly interpolated, gives the same tokens.
    base = np.sin(np.linspace(0, 3, 33))[None, None]
    finer = np.interp(np.linspace(0, 3, 65), np.linspace(0, 3, 33), base[0, 0])[None, None]
    np.testing.assert_allclose(clf.predict_proba(base), clf.predict_proba(finer), atol=1e-5)
    clf.save(tmp_path / "c.sktspt")
    again = load(tmp_path / "c.sktspt")
    assert again.input_spec_.resample_length == 32
    np.testing.assert_array_equal(again.predict_proba(long), clf.predict_proba(long))


def test_a_pretrainer_hands_its_resampling_to_the_classifier():
    from sklearn.frozen import FrozenEstimator

    rng = np.random.default_rng(1)
    pre = SPTPretrainer(tokenizer__length=24, pretrain_epochs=1, **TINY).fit(
        rng.normal(size=(12, 1, 50)))
    clf = SPTClassifier(pretrainer=FrozenEstimator(pre), max_epochs=1, random_state=0,
                        augment=False).fit(rng.normal(size=(10, 1, 200)), np.arange(10) % 2)
    assert clf.input_spec_.resample_length == 24 and clf.predict(
        rng.normal(size=(2, 1, 13))).shape == (2,)


@pytest.mark.parametrize("value", [1, 0, 2.5, "auto"])
def test_a_bad_length_is_refused_by_name(value):
    with pytest.raises((ValueError, TypeError), match="tokenizer__length"):
        SPTClassifier(tokenizer__length=value).fit(np.zeros((4, 1, 10)), [0, 1, 0, 1])
