"""Ensembles trained as one network (``n_estimators``)."""

import numpy as np
import pytest
import torch
from conftest import make_panel
from sklearn.base import clone
from sklearn.frozen import FrozenEstimator

from sktspt import SPTClassifier, SPTPretrainer, load
from sktspt.nn.ensemble import Ensemble

TINY = dict(depth=1, d_model=16, n_heads=2, dim_feedforward=16, random_state=0)


@pytest.fixture(scope="module")
def fitted():
    X, y = make_panel(n=40, n_classes=3)
    clf = SPTClassifier(n_estimators=3, pretrain_epochs=2, max_epochs=3, **TINY).fit(X, y)
    return clf, X, y


def test_predict_proba_averages_the_members(fitted):
    clf, X, _ = fitted
    members = clf.net_.module_.members
    assert len(members) == 3
    Xp = torch.from_numpy(clf._input(X))
    with torch.no_grad():
        each = [torch.softmax(m.eval()(Xp), dim=-1).numpy() for m in members]
    np.testing.assert_allclose(clf.predict_proba(X), np.mean(each, axis=0), atol=1e-6)
    assert not np.allclose(each[0], each[1])  # members differ
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[clf.predict_proba(X).argmax(1)])


def test_transform_concatenates_member_embeddings(fitted):
    clf, X, _ = fitted
    Z = clf.transform(X)
    assert Z.shape == (len(X), 3 * 16) and Z.dtype == np.float32
    assert len(clf.get_feature_names_out()) == 48


def test_members_pretrain_with_their_own_masks(monkeypatch):
    seen = []
    forward = Ensemble.forward

    def record(self, X, hidden=None):
        if hidden is not None:
            seen.append(hidden.chunk(self.n_members))
        return forward(self, X, hidden)

    monkeypatch.setattr(Ensemble, "forward", record)
    X, y = make_panel(n=40)
    SPTClassifier(n_estimators=2, pretrain_epochs=1, max_epochs=0, **TINY).fit(X, y)
    assert seen and all(a.shape == b.shape for a, b in seen)
    assert not any(torch.equal(a, b) for a, b in seen)


def test_ensemble_round_trips(tmp_path, fitted):
    clf, X, _ = fitted
    path = tmp_path / "ens.sktspt"
    clf.save(path)
    np.testing.assert_allclose(load(path).predict_proba(X), clf.predict_proba(X), atol=1e-7)
    again = clone(clf).fit(X, fitted[2])
    np.testing.assert_array_equal(again.predict_proba(X), clf.predict_proba(X))


def test_pretrained_encoder_starts_every_member():
    X, y = make_panel(n=40)
    pre = SPTPretrainer(max_epochs=2, **TINY).fit(X)
    clf = SPTClassifier(n_estimators=2, pretrainer=FrozenEstimator(pre), max_epochs=0,
                        **TINY).fit(X, y)
    expected = pre.encoder_.state_dict()
    for m in clf.net_.module_.members:
        for name, value in m.encoder.state_dict().items():
            torch.testing.assert_close(value, expected[name])


@pytest.mark.parametrize("params, match", [
    ({"n_estimators": 0}, "n_estimators must be a positive integer"),
    ({"n_estimators": 2.0}, "n_estimators must be a positive integer"),
    ({"n_estimators": 2, "pretrain_objective": "lejepa"}, "masked reconstruction only"),
])
def test_bad_ensembles_are_refused(params, match):
    X, y = make_panel(n=20)
    with pytest.raises(ValueError, match=match):
        SPTClassifier(**{**TINY, **params}).fit(X, y)
