"""Ensembles trained as one network (``n_estimators``)."""

import copy
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from conftest import make_panel
from sklearn.base import clone
from sklearn.frozen import FrozenEstimator
from skorch.callbacks import Callback, GradientNormClipping

from sktspt import SPTClassifier, SPTPretrainer, load
from sktspt.nn.ensemble import Ensemble
from sktspt.nn.heads import ClassificationModel, ReconstructionModel
from sktspt.nn.tokenizers import RocketEmbedding
from sktspt.training import MemberGradientClipping

TINY = dict(depth=1, d_model=16, architecture__n_heads=2, architecture__dim_feedforward=16,
            random_state=0)


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
    pre = SPTPretrainer(pretrain_epochs=2, **TINY).fit(X)
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


def _ensemble(model, tokenizer, positional, differences=0, n_members=3):
    kwargs = {"n_classes": 3} if model is ClassificationModel else {}
    ens = Ensemble(model, n_members, n_channels=2, patch_size=4, max_tokens=8, d_model=16,
                   depth=2, n_heads=2, dim_feedforward=24, dropout=0.1, tokenizer=tokenizer,
                   positional=positional, differences=differences, **kwargs)
    X = torch.randn(5, 2, 32)
    X[1, :, 20:] = float("nan")  # a shorter series: padding tokens
    X[2, 0, 3] = float("nan")
    ens.fit_panel(torch.nan_to_num(X), ~torch.isnan(X))
    with torch.no_grad():  # LayerNorms away from their initial identity, members apart
        for p in ens.parameters():
            p.add_(0.05 * torch.randn_like(p))
    if model is ClassificationModel:
        return ens.eval(), (X,)
    X = X.repeat(n_members, 1, 1)
    return ens.eval(), (X, (torch.rand(X.shape) < 0.5) & ~torch.isnan(X))


def _loop(ens, *args):
    """The member loop, which the stacked path must match."""
    ens.stackable = lambda: False
    try:
        return ens(*args)
    finally:
        del ens.stackable


@pytest.mark.parametrize("model", [ClassificationModel, ReconstructionModel])
@pytest.mark.parametrize("tokenizer, positional, differences", [
    ("rocket", "sinusoidal", 0), ("rocket", "learned", 1), ("patch", "rotary", 0),
    ("conv", "alibi", 1), ("patch", "none", 0),
])
def test_stacked_members_match_the_member_loop(model, tokenizer, positional, differences):
    torch.manual_seed(0)
    ens, args = _ensemble(model, tokenizer, positional, differences)
    assert ens.stackable()
    stacked, loop = ens(*args), _loop(ens, *args)
    torch.testing.assert_close(stacked, loop, atol=1e-5, rtol=1e-4, equal_nan=True)
    params = list(ens.parameters())
    grads = torch.autograd.grad(ens(*args).nan_to_num().square().sum(), params)
    expected = torch.autograd.grad(_loop(ens, *args).nan_to_num().square().sum(), params)
    for got, want in zip(grads, expected):
        torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-3)
    assert all(g.abs().sum() > 0 for g in grads)  # every member's weights are trained


def test_rocket_features_are_computed_once_for_all_members(monkeypatch):
    torch.manual_seed(0)
    ens, (X,) = _ensemble(ClassificationModel, "rocket", "sinusoidal")
    first = ens.members[0].encoder.embed
    for m in ens.members[1:]:  # the thresholds are drawn once for the ensemble
        torch.testing.assert_close(m.encoder.embed.threshold, first.threshold)
        assert not torch.equal(m.encoder.embed.proj.weight, first.proj.weight)
    calls = []
    features = RocketEmbedding.features
    monkeypatch.setattr(RocketEmbedding, "features",
                        lambda self, x, a: calls.append(len(x)) or features(self, x, a))
    ens(X)
    assert calls == [len(X)]


def test_other_architectures_run_member_by_member():
    X, y = make_panel(n=30)
    clf = SPTClassifier(n_estimators=2, architecture="crate", pretrain_epochs=1, max_epochs=1,
                        **TINY).fit(X, y)
    assert not clf.net_.module_.stackable()
    assert clf.predict_proba(X).shape == (30, len(clf.classes_))


def test_members_with_their_own_thresholds_still_match_the_loop():
    """Ensembles saved before the thresholds were shared drew one set per member."""
    torch.manual_seed(0)
    ens, (X,) = _ensemble(ClassificationModel, "rocket", "sinusoidal")
    with torch.no_grad():
        ens.members[1].encoder.embed.threshold.add_(0.3)
    assert ens.stackable()
    torch.testing.assert_close(ens(X), _loop(ens, X), atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("tokenizer", ["rocket", "conv"])
def test_stacked_embeddings_match_the_member_loop(tokenizer):
    torch.manual_seed(0)
    ens, (X,) = _ensemble(ClassificationModel, tokenizer, "sinusoidal")
    stacked = ens.embed(X)
    ens.stackable = lambda: False
    expected = ens.embed(X)
    assert stacked.shape == (len(X), 3 * 16)
    torch.testing.assert_close(stacked, expected, atol=1e-5, rtol=1e-4)


def test_thresholds_are_compared_again_only_after_they_change(monkeypatch):
    """On a GPU each comparison would wait for the device: once per change, not per step."""
    torch.manual_seed(0)
    ens, (X,) = _ensemble(ClassificationModel, "rocket", "sinusoidal")
    compared = []
    equal = torch.equal
    monkeypatch.setattr(torch, "equal", lambda a, b: compared.append(1) or equal(a, b))
    ens(X)
    ens(X)
    assert len(compared) == 2  # members 2 and 3 against the first, once
    with torch.no_grad():
        ens.members[2].encoder.embed.threshold.add_(0.3)
    torch.testing.assert_close(ens(X), _loop(ens, X), atol=1e-5, rtol=1e-4)
    assert len(compared) == 4


def _member_norms(module: Ensemble) -> list[float]:
    return [float(torch.linalg.vector_norm(torch.stack(
        [p.grad.norm() for p in m.parameters() if p.grad is not None]))) for m in module.members]


@pytest.mark.parametrize("callback", [MemberGradientClipping, GradientNormClipping])
def test_each_member_is_clipped_on_its_own(fitted, callback):
    """A member's gradient is its own loss's over ``n_members``; it is clipped as the single
    network's would be (to ``1 / n_members``), whatever the other members' gradients are.
    skorch's joint clipping, the contrast, shrinks the small member with the large one."""
    module = copy.deepcopy(fitted[0].net_.module_)
    generator = torch.Generator().manual_seed(0)
    for member, scale in zip(module.members, [100.0, 1e-3, 1.0]):
        for p in member.parameters():
            p.grad = scale * torch.randn(p.shape, generator=generator)
    before = _member_norms(module)
    net = SimpleNamespace(module_=module)
    callback(gradient_clip_value=1.0).on_grad_computed(net, module.named_parameters())
    after = _member_norms(module)
    if callback is MemberGradientClipping:
        np.testing.assert_allclose([after[0], after[2]], [1 / 3, 1 / 3], rtol=1e-4)
        assert after[1] == pytest.approx(before[1], rel=1e-6)  # under its bound: untouched
    else:
        assert after[1] < before[1] / 10


class MemberNorms(Callback):
    """Each member's gradient norm as the optimizer sees it (after the clipping callback)."""

    def initialize(self):
        self.norms_ = []
        return self

    def on_grad_computed(self, net, named_parameters, **kwargs):
        self.norms_.append(_member_norms(net.module_))


def test_ensemble_fits_clip_every_member():
    X, y = make_panel(n=24, n_classes=2)
    probe = MemberNorms()
    # Unnormalised, large values give gradient norms far above the bound.
    clf = SPTClassifier(n_estimators=2, normalize=None, pretrain_epochs=1, max_epochs=2,
                        callbacks=[probe], **TINY).fit(X * 1e4, y)
    assert isinstance(dict(clf.net_.callbacks_)["grad_clip"], MemberGradientClipping)
    norms = np.array(probe.norms_)
    assert norms.max() <= 0.5 + 1e-4
    assert (norms > 0.49).all(axis=0).any()  # active, on every step, for some member
