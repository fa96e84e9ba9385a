"""Lighthouse attention (issue 14): exactness, coverage, gradients, padding, schedule.

Small tiles (``tile_windows=4``) let a few hundred tokens span several tiles, so the
hierarchical selection is exercised without long series.
"""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import make_panel
from skorch.callbacks import Callback

from sktspt import ResumableCheckpoint, SPTClassifier, SPTPretrainer
from sktspt.nn.encoder import SelfAttention
from sktspt.nn.heads import ReconstructionModel
from sktspt.nn.lighthouse import (
    Lighthouse,
    lighthouse_attention,
    select_entries,
    set_sparse_attention,
)
from sktspt.persistence import load, save
from sktspt.training import SeededStepNet

SMALL = Lighthouse(levels=3, pool=2, topk=2, tile_windows=4)  # tiles of 16 tokens
TINY = dict(depth=3, d_model=16, architecture__n_heads=2, architecture__dim_feedforward=16,
            architecture__dropout=0.0, batch_size=8,
            tokenizer__patch_size=1, device__threads=1, random_state=0)
LIGHT = dict(attention="lighthouse", attention__levels=3, attention__pool=2, attention__topk=2)


def qkv(n=2, h=2, N=100, d=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(n, h, N, d, generator=g, requires_grad=True) for _ in range(3)]


@pytest.mark.parametrize("positional", ["sinusoidal", "alibi"])
def test_one_level_equals_sdpa_forward_and_backward(positional):
    torch.manual_seed(0)
    attn = SelfAttention(16, 2, 0.0, positional).train()
    x = torch.randn(3, 37, 16, requires_grad=True)
    keep = torch.ones(3, 37, dtype=torch.bool)
    keep[1, 30:] = False
    keep[2, 5:9] = False  # missing tokens inside a series
    grad = torch.randn(3, 37, 16)
    results = []
    for sparse in (None, Lighthouse(levels=1)):
        attn.sparse_attention = sparse
        attn.zero_grad()
        x.grad = None
        y = attn(x, keep)
        y.backward(grad)
        results.append((y.detach(), x.grad.clone(), attn.qkv.weight.grad.clone()))
    for dense, light in zip(*results):
        assert torch.equal(dense, light)


def _cover_counts(start, size, n_tokens):
    counts = np.zeros(n_tokens, dtype=int)
    for s, z in zip(start.tolist(), size.tolist()):
        counts[s:s + z] += 1
    return counts


def test_every_position_covered_exactly_once_per_level():
    q, k, _ = qkv(N=4 * SMALL.tile_tokens)
    keep = torch.ones(2, q.shape[2], dtype=torch.bool)
    keep[1, 50:] = False
    entries = select_entries(q.detach(), k.detach(), keep, SMALL)
    p, L, tile = SMALL.pool, SMALL.levels, SMALL.tile_tokens
    # Per level: the selected windows there plus the summaries left at it or above.
    summaries = []
    for level, dropped, selected in entries.levels:
        summaries.append((level, dropped))
        for row in range(dropped.shape[0]):
            counts = np.zeros(tile, dtype=int)
            for lv, windows in summaries + [(level, selected)]:
                for w in windows[row].tolist():
                    counts[w * p**lv:(w + 1) * p**lv] += 1
            assert (counts == 1).all(), (level, row)
    # The final sequence: a partition of the timeline, of the predicted length.
    n_entries = SMALL.tile_windows + (L - 1) * (p - 1) * SMALL.topk
    assert entries.flat.shape == (2, 2, 4 * n_entries)
    for i in range(2):
        for j in range(2):
            assert (_cover_counts(entries.start[i, j], entries.size[i, j], 4 * tile) == 1).all()
            assert (np.diff(entries.start[i, j].numpy()) > 0).all()  # ordered by position


def test_gradients_reach_q_k_v_through_selected_entries():
    q, k, v = qkv(n=1, h=1, N=2 * SMALL.tile_tokens)
    keep = torch.ones(1, q.shape[2], dtype=torch.bool)
    keep[0, 27:] = False
    y = lighthouse_attention(q, k, v, keep, SMALL)
    (y[:, :, :27] * torch.randn_like(y[:, :, :27])).sum().backward()
    entries = select_entries(q.detach(), k.detach(), keep, SMALL)
    fine = entries.start[0, 0][entries.size[0, 0] == 1]
    fine = fine[fine < 27]
    assert len(fine) >= 2
    for t in (q, k, v):
        g = t.grad[0, 0]
        assert (g[fine].abs().sum(-1) > 0).all()  # every selected token has its own gradient
        assert not torch.allclose(g[fine[0]], g[fine[1]])
        assert (g[:27].abs().sum(-1) > 0).all()  # summaries pass it on through the means
    for t in (k, v):
        assert (t.grad[0, 0, 27:] == 0).all()  # padding is never attended to
    # A summary window shares one pooled query: its tokens get equal query gradients.
    coarse = (entries.size[0, 0] > 1) & (entries.start[0, 0] + entries.size[0, 0] <= 27)
    s, z = entries.start[0, 0][coarse][0].item(), entries.size[0, 0][coarse][0].item()
    assert torch.allclose(q.grad[0, 0, s:s + z], q.grad[0, 0, s:s + 1].expand(z, -1))


def test_padding_never_selected_nor_attended():
    q, k, v = qkv(n=1, h=2, N=3 * SMALL.tile_tokens)
    keep = torch.ones(1, q.shape[2], dtype=torch.bool)
    keep[0, 40:] = False
    keep[0, 3:6] = False
    entries = select_entries(q.detach(), k.detach(), keep, SMALL)
    # Every tile has enough windows with a kept token: only those are selected.
    tiles = torch.arange(2 * 3) % 3
    for level, _, selected in entries.levels[:-1]:
        c = SMALL.pool**level
        first = selected * c + (tiles * SMALL.tile_tokens)[:, None]
        window_kept = torch.stack([keep[0][first + i] for i in range(c)]).any(0)
        assert window_kept.all(), level
    y = lighthouse_attention(q, k, v, keep, SMALL)
    k2, v2 = k.detach().clone(), v.detach().clone()
    k2[..., 40:, :] = 1e3
    v2[..., 40:, :] = -1e3
    k2[..., 3:6, :] = 1e3
    y2 = lighthouse_attention(q.detach(), k2, v2, keep, SMALL)
    kept = keep[0]
    assert torch.allclose(y[..., kept, :], y2[..., kept, :], atol=1e-6)


def _module(sparse):
    torch.manual_seed(0)
    model = ReconstructionModel(n_channels=1, patch_size=1, max_tokens=256, d_model=16,
                                depth=3, n_heads=2, dim_feedforward=16, dropout=0.0).train()
    assert set_sparse_attention(model, sparse) == 1
    return model


def test_more_padding_leaves_the_training_loss_unchanged():
    g = np.random.default_rng(0)
    X = torch.tensor(g.normal(size=(2, 1, 37)), dtype=torch.float32)
    X[1, :, 30:] = float("nan")
    hidden = torch.tensor(g.random((2, 1, 37)) < 0.3)
    losses = []
    for sparse in (SMALL, None):
        model = _module(sparse)
        for extra in (0, 11, 100):  # within the last tile, and whole tiles more
            Xp = F.pad(X, (0, extra), value=float("nan"))
            out = model(Xp, F.pad(hidden, (0, extra)))[..., :37]
            target = (hidden & ~torch.isnan(X))
            losses.append(((out - torch.nan_to_num(X)) ** 2)[target].mean())
    light, dense = losses[:3], losses[3:]
    for loss in light[1:]:
        assert torch.allclose(loss, light[0], rtol=1e-5)
    assert not torch.allclose(light[0], dense[0], rtol=1e-3)  # the sparse path did act


def test_middle_layers_only_and_eval_is_dense():
    model = _module(SMALL)
    attns = [layer.attn.sparse_attention for layer in model.encoder.layers]
    assert attns == [None, SMALL, None]
    X = torch.randn(2, 1, 40)
    model.eval()
    with torch.no_grad():
        sparse_eval = model(X)
        set_sparse_attention(model, None)
        dense_eval = model(X)
    assert torch.equal(sparse_eval, dense_eval)


def test_white_box_layers_get_it():
    crate = ReconstructionModel(n_channels=1, patch_size=1, max_tokens=8, d_model=8, depth=3,
                                n_heads=2, dim_feedforward=8, dropout=0.0, architecture="crate")
    assert set_sparse_attention(crate, SMALL) == 1
    assert crate.encoder.layers[1].attn.sparse_attention is SMALL


class SparseSpy(Callback):
    """Records, per training batch, which layers run sparse attention."""

    def initialize(self):
        self.seen_ = []
        return self

    def on_batch_begin(self, net, training=False, **kwargs):
        if training:
            layers = net.module_.encoder.layers
            self.seen_.append(tuple(la.attn.sparse_attention is not None for la in layers))


def test_recovery_switches_to_dense_for_the_last_steps():
    X, _ = make_panel(n=24, t=40)
    spy = SparseSpy()
    pre = SPTPretrainer(pretrain_epochs=4, validation_fraction=0.0, attention__recovery=0.25,
                        callbacks=[spy], **LIGHT, **TINY).fit(X)
    steps = 4 * math.ceil(24 / 8)
    recovery = math.ceil(0.25 * steps)
    assert spy.seen_ == [(False, True, False)] * (steps - recovery) + [(False,) * 3] * recovery
    assert all(la.attn.sparse_attention is None for la in pre.encoder_.layers)


def test_deterministic_under_a_seed_and_different_from_dense():
    X, _ = make_panel(n=16, t=40)
    kw = dict(pretrain_epochs=2, validation_fraction=0.0, **TINY)
    a = SPTPretrainer(**LIGHT, **kw).fit(X)
    b = SPTPretrainer(**LIGHT, **kw).fit(X)
    dense = SPTPretrainer(**kw).fit(X)
    assert a.history_[:, "train_loss"] == b.history_[:, "train_loss"]
    assert np.array_equal(a.transform(X), b.transform(X))
    assert a.history_[:, "train_loss"] != dense.history_[:, "train_loss"]


def test_classifier_save_load_and_padded_prediction(tmp_path):
    X, y = make_panel(n=16, t=40)
    X[0, :, 30:] = np.nan  # a shorter series: the model accepts other lengths
    clf = SPTClassifier(pretrain_epochs=1, max_epochs=2, **LIGHT, **TINY).fit(X, y)
    path = tmp_path / "lighthouse.zip"
    save(clf, path)
    loaded = load(path)
    assert loaded.get_params()["attention"] == "lighthouse"
    assert np.array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    padded = np.pad(X, ((0, 0), (0, 0), (0, 25)), constant_values=np.nan)
    assert np.allclose(clf.predict_proba(padded), clf.predict_proba(X), atol=1e-6)


def test_resumed_fit_switches_at_the_same_step(tmp_path, monkeypatch):
    X, _ = make_panel(n=16, t=40)
    kw = dict(pretrain_epochs=4, validation_fraction=0.0, attention__recovery=0.3, **LIGHT, **TINY)
    ref = SPTPretrainer(**kw).fit(X)
    original = SeededStepNet.train_step
    fired = []

    def step(self, batch, **kwargs):
        if len(self.history) == 3 and not fired:
            fired.append(True)
            raise KeyboardInterrupt
        return original(self, batch, **kwargs)

    monkeypatch.setattr(SeededStepNet, "train_step", step)
    with pytest.raises(KeyboardInterrupt):
        SPTPretrainer(callbacks=[ResumableCheckpoint(tmp_path)], **kw).fit(X)
    resumed = SPTPretrainer(callbacks=[ResumableCheckpoint(tmp_path)], **kw).fit(X)
    assert resumed.history_[:, "train_loss"] == ref.history_[:, "train_loss"]
    assert np.array_equal(resumed.transform(X), ref.transform(X))


@pytest.mark.parametrize("params, match", [
    (dict(attention="sparse"), "attention must be one of"),
    (dict(attention="lighthouse", attention__levels=0), "attention__levels"),
    (dict(attention="lighthouse", attention__pool=1), "attention__pool"),
    (dict(attention="lighthouse", attention__topk=2.5), "attention__topk"),
    (dict(attention="lighthouse", attention__recovery=1.5), "attention__recovery"),
    (dict(attention="lighthouse", depth=2), "depth >= 3"),
])
def test_invalid_parameters_are_named(params, match):
    X, y = make_panel(n=8, t=16)
    with pytest.raises(ValueError, match=match):
        SPTClassifier(**{**TINY, **params}).fit(X, y)


def test_benchmark_has_a_lighthouse_variant():
    from sktspt.benchmark import MODELS
    from sktspt.benchmark.models import RunConfig

    cfg = RunConfig(seed=1, pretrain_epochs=2, epochs=3, depth=4, data=None,
                    params={"d_model": 16})
    est = MODELS["spt-lighthouse"].factory(cfg)
    assert (est.attention, est.depth, est.d_model, est.random_state) == ("lighthouse", 4, 16, 1)
