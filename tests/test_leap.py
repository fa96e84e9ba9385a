"""LEAP: the exit-aware loss and the early-exit rule (sktspt.leap)."""

import numpy as np
import pytest
import torch
from conftest import make_panel
from torch import nn

from sktspt import SPTClassifier, load
from sktspt.leap import early_exit_pass
from sktspt.nn.encoder import masked_mean
from sktspt.nn.heads import ClassificationModel
from sktspt.nn.tokenizers import patchify
from sktspt.objectives import EXIT_TAU, exit_loss

TINY = dict(depth=3, d_model=16, architecture__n_heads=2, architecture__dim_feedforward=32,
            pretrain_epochs=1,
            max_epochs=3, device__threads=1, random_state=0)


@pytest.fixture(scope="module")
def fitted():
    X, y = make_panel(n=40, t=32)
    return SPTClassifier(early_exit__loss_weight=1.0, **TINY).fit(X, y), X, y


# --- the exit rule on a constructed network ---------------------------------------------
class PatchTokens(nn.Module):
    """Tokens are the raw patches (d_model = patch size, one channel)."""

    def __init__(self, patch_size):
        super().__init__()
        self.patch_size = patch_size

    def forward(self, x, available):
        return patchify(x, self.patch_size)


class Shift(nn.Module):
    """``h + v``; with ``gated``, only for series whose first feature is positive on average.

    Counts the rows of every call, to see how much work each layer does.
    """

    def __init__(self, v, gated=False):
        super().__init__()
        self.register_buffer("v", v)
        self.gated = gated
        self.rows = []

    def forward(self, h, keep):
        self.rows.append(h.shape[0])
        gate = (h[:, :, :1].mean(dim=1, keepdim=True) > 0).to(h.dtype) if self.gated else 1.0
        return h + self.v * gate


def constructed_model():
    """Layer 1 moves every series, layer 2 only 'positive' ones, layer 3 nothing, 4 all."""
    g = torch.Generator().manual_seed(0)
    model = ClassificationModel(
        n_classes=3, n_channels=1, patch_size=8, max_tokens=4, d_model=8, depth=4,
        n_heads=2, dim_feedforward=8, dropout=0.0,
    )
    enc = model.encoder
    enc.embed, enc.position = PatchTokens(8), nn.Identity()

    def direction():
        v = 10 * torch.randn(8, generator=g)
        v[0] = 0.0  # the gate reads feature 0 of the input, which no layer changes
        return v

    enc.layers = nn.ModuleList([Shift(direction()), Shift(direction(), gated=True),
                                Shift(torch.zeros(8)), Shift(direction())])
    return model.eval()


def constructed_input():
    g = np.random.default_rng(0)
    sign = np.array([1, -1, 1, -1, -1, -1])
    X = sign[:, None, None] + 0.1 * g.normal(size=(6, 1, 32))
    return torch.tensor(X, dtype=torch.float32), sign


@pytest.mark.parametrize("min_layer, expected_pos, expected_neg", [
    (1, 3, 2),  # positive series move in layer 2 and stop at 3; negative ones stop at 2
    (3, 3, 3),
    (4, 4, 4),  # layer 4 moves every series: the last layer always exits
])
def test_exit_rule_stops_at_first_converged_layer(min_layer, expected_pos, expected_neg):
    model = constructed_model()
    X, sign = constructed_input()
    with torch.no_grad():
        logits, pooled, exits = early_exit_pass(model, X, 0.999, min_layer, batch=2)
        states, keep = model.encoder.layer_states(X, ~torch.isnan(X), ~torch.isnan(X))
    expected = np.where(sign > 0, expected_pos, expected_neg)
    np.testing.assert_array_equal(exits.numpy(), expected)
    # The head reads the pooled, normalised state of the exit layer.
    for i, layer in enumerate(exits.tolist()):
        e = masked_mean(model.encoder.norm(states[layer][i : i + 1]), keep[i : i + 1])
        torch.testing.assert_close(pooled[i : i + 1], e)
        torch.testing.assert_close(logits[i : i + 1], model.head(e))


def test_exited_series_leave_the_batch():
    model = constructed_model()
    X, _ = constructed_input()  # 2 positive, 4 negative series; passes of 2 rows
    with torch.no_grad():
        early_exit_pass(model, X, 0.999, 1, batch=2)
    rows = [sum(layer.rows) for layer in model.encoder.layers]
    # Layers 1-2 see all 6 series, layer 3 only the 2 positive ones, layer 4 none.
    assert rows == [6, 6, 2, 0]
    for layer in model.encoder.layers:
        layer.rows.clear()
    with torch.no_grad():
        early_exit_pass(model, X, None, 1, batch=2)
    assert [sum(layer.rows) for layer in model.encoder.layers] == [6, 6, 6, 6]


# --- the loss -----------------------------------------------------------------------------
def test_exit_loss_values_and_stop_gradient():
    final = torch.tensor([[1.0, 0.0]], requires_grad=True)
    same = torch.tensor([[2.0, 0.0]], requires_grad=True)
    orthogonal = torch.tensor([[0.0, 1.0]], requires_grad=True)
    loss = exit_loss([same, orthogonal, final])
    expected = 0.5 * (torch.sigmoid(torch.tensor(10 * (EXIT_TAU - 1.0)))
                      + torch.sigmoid(torch.tensor(10 * EXIT_TAU)))
    torch.testing.assert_close(loss, expected)
    loss.backward()
    assert final.grad is None  # the final representation is the target only
    assert orthogonal.grad is not None and orthogonal.grad.abs().sum() > 0
    assert float(exit_loss([final.detach()])) == 0.0


def test_finetuning_loss_adds_weighted_exit_loss(fitted):
    clf, X, y = fitted
    net = clf.net_
    net.module_.eval()
    Xt = torch.from_numpy(clf._input(X[:8]))
    yt = torch.from_numpy(clf._label_encoder.transform(y[:8]))
    with torch.no_grad():
        loss, _ = net.random_step((Xt, yt), torch.Generator(), training=False)
        x = torch.nan_to_num(Xt)
        states, keep = clf.encoder_.layer_states(x, ~torch.isnan(Xt), ~torch.isnan(Xt))
        pooled = [masked_mean(clf.encoder_.norm(h), keep) for h in states[1:]]
        ce = net.criterion_(net.module_.head(pooled[-1]), yt)
    torch.testing.assert_close(loss, ce + 1.0 * exit_loss(pooled))
    assert float(exit_loss(pooled)) > 0


# --- through the estimator ------------------------------------------------------------------
def test_threshold_one_equals_full_model(fitted):
    clf, X, _ = fitted
    full_proba, full_emb = clf.predict_proba(X), clf.transform(X)
    clf.set_params(early_exit=1.0, early_exit__min_layer=1)
    try:
        assert (clf.exit_layers(X) == 3).all()
        np.testing.assert_array_equal(clf.predict_proba(X), full_proba)
        np.testing.assert_array_equal(clf.transform(X), full_emb)
    finally:
        clf.set_params(early_exit=None, early_exit__min_layer=2)
    assert (clf.exit_layers(X) == 3).all()


def test_outputs_agree_and_are_batch_invariant(fitted):
    clf, X, _ = fitted
    clf.set_params(early_exit=-1.0, early_exit__min_layer=2)  # every series exits at layer 2
    try:
        exits = clf.exit_layers(X)
        assert (exits == 2).all()
        proba, emb = clf.predict_proba(X), clf.transform(X)
        np.testing.assert_array_equal(clf.predict(X), clf.classes_[proba.argmax(axis=1)])
        logits = clf.net_.module_.head(torch.from_numpy(emb)).detach().double().numpy()
        soft = np.exp(logits - logits.max(axis=1, keepdims=True))
        np.testing.assert_allclose(soft / soft.sum(axis=1, keepdims=True), proba, rtol=1e-5)
        # A series' result does not depend on the series predicted with it.
        np.testing.assert_array_equal(clf.predict_proba(X[3:5]), proba[3:5])
    finally:
        clf.set_params(early_exit=None)


def test_parameters_are_validated_and_saved(fitted, tmp_path):
    clf, X, y = fitted
    with pytest.raises(ValueError, match="early_exit__loss_weight"):
        SPTClassifier(early_exit__loss_weight=-1.0, **TINY).fit(X, y)
    for params, name in (({"early_exit": 1.5}, "early_exit"),
                         ({"early_exit": 0.9, "early_exit__min_layer": 0},
                          "early_exit__min_layer")):
        clf.set_params(**params)
        try:
            with pytest.raises(ValueError, match=name):
                clf.predict(X)
        finally:
            clf.set_params(early_exit=None, early_exit__min_layer=2)
    clf.set_params(early_exit=0.5)
    try:
        clf.save(tmp_path / "leap.zip")
        back = load(tmp_path / "leap.zip")
        assert (back.early_exit, back.early_exit__loss_weight) == (0.5, 1.0)
        np.testing.assert_array_equal(back.exit_layers(X), clf.exit_layers(X))
        np.testing.assert_array_equal(back.predict_proba(X), clf.predict_proba(X))
    finally:
        clf.set_params(early_exit=None)


def test_sktime_adapter_passes_exit_settings(fitted):
    from sktspt import SPTClassifierSktime

    _, X, y = fitted
    adapter = SPTClassifierSktime(early_exit__loss_weight=1.0, early_exit=-1.0, **TINY).fit(X, y)
    core = adapter.estimator_
    assert (core.early_exit__loss_weight, core.early_exit,
            core.early_exit__min_layer) == (1.0, -1.0, 2)
    assert (core.exit_layers(X) == 2).all()  # every series exits at layer 2
    early = adapter.predict_proba(X)
    np.testing.assert_array_equal(early, core.predict_proba(X))
    assert not np.array_equal(early, core.set_params(early_exit=None).predict_proba(X))
