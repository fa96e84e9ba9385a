"""What ``fit`` checks in its inputs, naming the one at fault.

Series a fitted pretrainer does not take, ``X_unlabeled`` that no phase uses or that is
longer than the learned positions, regression targets without a representable spread,
labels that cannot be classes, and ``device="meta"``; sample weights up to the float64
maximum are scaled, not overflowed to zeros.
"""

import warnings

import numpy as np
import pytest
from conftest import NARROW_NET_ONE_THREAD as TINY
from conftest import ONE_EPOCH_FIT as FAST
from conftest import data_fixture

from sktspt import SPTClassifier, SPTPretrainer, SPTRegressor

data = data_fixture(n=12, t=16)


# --- pretrainer -----------------------------------------------------------------------------
def test_a_pretrainer_refuses_series_of_another_length(data):
    X, y = data
    pre = SPTPretrainer(pretrain_epochs=1, **TINY).fit(X)
    with pytest.raises(ValueError, match="series of length 12, but the pretrainer"):
        SPTClassifier(pretrainer=pre, **FAST).fit(X[:, :, :12], y)


# --- sample weights and X_unlabeled ---------------------------------------------------------
def test_huge_sample_weights_are_scaled_not_zeroed(data):
    X, y = data
    clf = SPTClassifier(**FAST)
    clf.fit(X, y)  # for _sample_weights' classes_
    w = clf._sample_weights(np.full(len(y), 1e308), clf._label_encoder.transform(y))
    np.testing.assert_array_equal(w, np.ones(len(y), dtype=np.float32))
    w = clf._sample_weights(np.r_[np.full(len(y) - 1, 1e308), 0.0],
                            clf._label_encoder.transform(y))
    assert np.isfinite(w).all() and w.max() > 0 and np.isclose(w.mean(), 1)
    huge = SPTClassifier(**FAST).fit(X, y, sample_weight=np.full(len(y), 1e308))
    ones = SPTClassifier(**FAST).fit(X, y, sample_weight=np.ones(len(y)))
    np.testing.assert_array_equal(huge.predict_proba(X), ones.predict_proba(X))


@pytest.mark.parametrize("how", ["pretrain_epochs=0", "pretrainer"])
def test_x_unlabeled_that_no_phase_uses_is_reported(data, how):
    X, y = data
    if how == "pretrainer":
        params = dict(pretrainer=SPTPretrainer(pretrain_epochs=1, **TINY).fit(X))
    else:
        params = dict(pretrain_epochs=0)
    clf = SPTClassifier(**{**FAST, **params})
    with pytest.warns(UserWarning, match="X_unlabeled is not used"):
        clf.fit(X, y, X_unlabeled=X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SPTClassifier(**FAST).fit(X, y, X_unlabeled=X)  # pretraining uses it: no warning


# --- regression targets -----------------------------------------------------------------------
@pytest.mark.parametrize("factor, size", [(1e200, "too large"), (1e-300, "too small"),
                                          (1e307, "too large")])
def test_targets_without_a_representable_spread_are_refused_naming_y(data, factor, size):
    X, _ = data
    y = np.linspace(-1, 1, len(X)) * factor
    reg = SPTRegressor(**FAST)
    with pytest.raises(ValueError, match=f"^y cannot be standardised.* {size} to represent"):
        reg.fit(X, y)
    assert not hasattr(reg, "target_scale_")


# --- errors that name the problem ---------------------------------------------------------------
def test_device_meta_is_refused_when_fit_validates(data):
    X, y = data
    with pytest.raises(ValueError, match="device='meta' holds no data"):
        SPTClassifier(device="meta", **FAST).fit(X, y)


@pytest.mark.parametrize("label, match", [(None, r"no label \(None or NaN\) for 1 series"),
                                          (3, "mixes labels of types")])
def test_labels_that_cannot_be_classes_name_y(data, label, match):
    X, y = data
    labels = np.array(["a", "b"] * (len(y) // 2), dtype=object)
    labels[0] = label
    with pytest.raises(ValueError, match=match):
        SPTClassifier(**FAST).fit(X, labels)


def test_x_unlabeled_longer_than_learned_positions_is_named(data):
    X, y = data
    with pytest.raises(ValueError, match="^X_unlabeled has series of length 32"):
        SPTClassifier(architecture__positional="learned", **FAST).fit(
            X, y, X_unlabeled=np.concatenate([X, X], axis=2))
