"""``class_weight`` and ``sample_weight``: both shift the predictions, weights of one value
train like none, ``"balanced"`` is scikit-learn's, bad weights are refused, and the sktime
adapter announces and passes ``class_weight``.
"""

import numpy as np
import pytest
from conftest import NARROW_NET_NO_DROPOUT as TINY
from conftest import data_fixture, make_shifted_noise

from sktspt import SPTClassifier

data = data_fixture(make_shifted_noise)


def test_class_weight_and_sample_weight_shift_the_predictions(data):
    X, y = data
    params = dict(pretrain_epochs=0, max_epochs=20, lr=1e-2, validation_fraction=0.0, **TINY)
    plain = SPTClassifier(**params).fit(X, y).predict_proba(X)[:, 1].mean()
    favour_0 = SPTClassifier(class_weight={0: 1.0, 1: 0.01}, **params).fit(X, y)
    assert favour_0.predict_proba(X)[:, 1].mean() < plain - 0.1
    w = np.where(y == 1, 1.0, 0.01)
    favour_1 = SPTClassifier(**params).fit(X, y, sample_weight=w)
    assert favour_1.predict_proba(X)[:, 1].mean() > plain + 0.1


def test_unit_weights_train_like_no_weights(data):
    X, y = data
    params = dict(pretrain_epochs=1, max_epochs=2, **TINY)
    plain = SPTClassifier(**params).fit(X, y).predict_proba(X)
    ones = SPTClassifier(**params).fit(X, y, sample_weight=np.full(len(y), 3.0))
    np.testing.assert_allclose(ones.predict_proba(X), plain, atol=1e-5)


def test_balanced_class_weight_is_sklearns(data):
    X, y = data
    y = np.r_[np.zeros(18, int), np.ones(6, int)]
    clf = SPTClassifier(class_weight="balanced", **TINY)
    clf._fit_targets(y, len(y))
    w = clf._sample_weights(None, y)
    assert w[y == 1][0] / w[y == 0][0] == pytest.approx(3.0)
    assert w.mean() == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("class_weight", "sample_weight", "error", "match"),
    [("auto", None, ValueError, "class_weight must be None, 'balanced' or a dict"),
     ([1, 2], None, TypeError, "class_weight must be None"),
     ({5: 1.0}, None, ValueError, "not in class_weight|not found"),
     (None, -np.ones(24), ValueError, "[Nn]egative"),
     (None, np.ones(5), ValueError, "shape|samples"),
     (None, np.zeros(24), ValueError, "positive sum|zero")],
)
def test_weights_are_validated(data, class_weight, sample_weight, error, match):
    X, y = data
    with pytest.raises(error, match=match):
        SPTClassifier(class_weight=class_weight, **TINY).fit(X, y, sample_weight=sample_weight)


def test_sktime_adapter_announces_and_passes_class_weight():
    from sktime.datasets import load_unit_test

    from sktspt import SPTClassifierSktime

    assert SPTClassifierSktime.get_class_tag("capability:class_weight") is True
    X, y = load_unit_test(split="train", return_X_y=True)
    clf = SPTClassifierSktime(class_weight="balanced", pretrain_epochs=0, max_epochs=1, **TINY)
    assert clf.fit(X, y).estimator_.class_weight == "balanced"
