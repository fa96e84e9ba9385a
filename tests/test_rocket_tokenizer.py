"""The rocket tokenizer: MiniRocket's fixed kernels, thresholds drawn from the training
panel, per-patch PPV, and the estimators around it."""

import itertools
import pickle

import numpy as np
import pytest
import torch
from conftest import make_panel

import sktspt
from sktspt import SPTClassifier, SPTPretrainer
from sktspt.nn.panel_fit import fit_to_panel
from sktspt.nn.tokenizers import ROCKET_TAPS, RocketEmbedding, rocket_dilations

TINY = dict(depth=1, d_model=16, architecture__n_heads=2, architecture__dim_feedforward=32,
            tokenizer="rocket")


def test_kernels_are_minirocket_s_84():
    tok = RocketEmbedding(1, 4, 8, 64)
    w = tok.kernels[:, 0]
    assert w.shape == (84, 9) and len(set(ROCKET_TAPS)) == 84
    assert torch.equal(w.sum(1), torch.zeros(84))  # 3 * 2 - 6: a level shift cancels
    assert {tuple(torch.nonzero(row == 2).flatten().tolist()) for row in w} == set(
        itertools.combinations(range(9), 3))


@pytest.mark.parametrize("length", [9, 24, 251, 1460])
def test_dilations_are_exponential_from_1_to_the_series_length(length):
    d = rocket_dilations(length)
    assert d[0] == 1 and list(d) == sorted(set(d)) and len(d) <= 8
    assert d[-1] == max(1, (length - 1) // 8)  # the widest kernel spans the series
    if len(d) > 2:
        ratios = np.array(d[1:]) / np.array(d[:-1])
        assert ratios.max() < 4


def _reference_features(tok, x, available):
    """The definition, one kernel at a time: mean over each patch of sign(response - b)."""
    values = torch.where(available, x, 0.0).numpy().astype(np.float64)
    n, c, t = values.shape
    p = tok.patch_size
    feats = []
    for j, d in enumerate(tok.dilations):
        padded = np.pad(values, ((0, 0), (0, 0), (4 * d, 4 * d)))
        for ch in range(c):
            for i, taps in enumerate(ROCKET_TAPS):
                w = -np.ones(9)
                w[list(taps)] = 2
                z = sum(w[m] * padded[:, ch, m * d:m * d + t] for m in range(9))
                s = np.sign(z - tok.threshold[j, ch * 84 + i].item())
                feats.append(s.reshape(n, t // p, p).mean(-1))
    flags = (~available).numpy().reshape(n, c, t // p, p).mean(-1)
    h = np.concatenate([np.stack(feats, 1), 2 * flags], 1).transpose(0, 2, 1)
    return torch.as_tensor(h, dtype=torch.float32)


def test_tokens_are_the_thresholded_responses_pooled_per_patch():
    torch.manual_seed(0)
    tok = RocketEmbedding(2, 5, 8, 40)
    x = torch.randn(3, 2, 40)
    available = torch.rand(3, 2, 40) > 0.2
    fit_to_panel(tok, torch.randn(4, 2, 40).numpy())  # not x: no response equals its threshold
    seen = {}
    tok.norm.register_forward_pre_hook(lambda m, args: seen.update(h=args[0]))
    tok(x, available)
    torch.testing.assert_close(seen["h"], _reference_features(tok, x, available),
                               rtol=0, atol=1e-6)


def test_thresholds_are_responses_of_training_series_at_available_steps():
    torch.manual_seed(0)
    X = np.random.default_rng(0).normal(size=(6, 1, 50)).astype(np.float32)
    X[:, :, 40:] = np.nan  # padding: its zeros must not be drawn from
    X[2, :, 30:] = np.nan
    tok = RocketEmbedding(1, 5, 8, 50)
    fit_to_panel(tok, X)
    available = torch.as_tensor(~np.isnan(X))
    x = torch.nan_to_num(torch.as_tensor(X))
    for j, d in enumerate(tok.dilations):
        z = tok._responses(torch.where(available, x, 0.0), d)  # (6, 1, 50, 84)
        for row in range(84):
            observed = z[:, 0, :, row][available[:, 0]]
            assert torch.isclose(observed, tok.threshold[j, row]).any()
    assert tok.threshold.abs().sum() > 0


def test_only_the_norm_and_the_map_are_trained():
    tok = RocketEmbedding(2, 4, 8, 64)
    assert {n for n, _ in tok.named_parameters()} == {
        "norm.weight", "norm.bias", "proj.weight", "proj.bias"}
    assert {n for n, _ in tok.named_buffers()} == {"kernels", "threshold"}


def test_responses_stay_float32_under_bfloat16_autocast():
    torch.manual_seed(0)
    tok = RocketEmbedding(1, 4, 8, 64)
    x = torch.randn(2, 1, 64)
    ones = torch.ones_like(x, dtype=torch.bool)
    fit_to_panel(tok, x.numpy())
    seen = []
    tok.norm.register_forward_pre_hook(lambda m, args: seen.append(args[0]))
    tok(x, ones)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        tok(x, ones)
    assert seen[1].dtype == torch.float32 and torch.equal(seen[0], seen[1])


def _thresholds(est):
    module = est.net_.module_ if hasattr(est, "net_") else None
    return [m.threshold.clone() for m in module.modules() if isinstance(m, RocketEmbedding)]


def test_classifier_fits_draws_thresholds_from_its_data_and_is_reproducible(tmp_path):
    X, y = make_panel(n=40, t=48)
    kw = dict(**TINY, tokenizer__patch_size=4, pretrain_epochs=10, max_epochs=20, lr=3e-3)
    clf = SPTClassifier(random_state=0, **kw).fit(X, y)
    assert clf.score(X, y) > 0.8
    (thr,) = _thresholds(clf)
    assert thr.abs().sum() > 0
    again = SPTClassifier(random_state=0, **kw).fit(X, y)
    np.testing.assert_array_equal(again.predict_proba(X), clf.predict_proba(X))
    other = SPTClassifier(random_state=1, **kw).fit(X, y)
    assert not torch.equal(_thresholds(other)[0], thr)
    clf.save(tmp_path / "rocket.sktspt")
    loaded = sktspt.load(tmp_path / "rocket.sktspt")
    np.testing.assert_allclose(loaded.predict_proba(X), clf.predict_proba(X), rtol=1e-6)
    unpickled = pickle.loads(pickle.dumps(clf))
    np.testing.assert_allclose(unpickled.predict_proba(X), clf.predict_proba(X), rtol=1e-6)


def test_pretraining_learns_and_fine_tuning_keeps_the_thresholds():
    X, y = make_panel(n=40, t=48)
    pre = SPTPretrainer(**TINY, tokenizer__patch_size=4, pretrain_epochs=30, lr=3e-3,
                        random_state=0).fit(X)
    losses = pre.history_[:, "train_loss"]
    assert min(losses[-5:]) < 0.7 * losses[0]
    (thr,) = [m.threshold for m in pre.encoder_.modules() if isinstance(m, RocketEmbedding)]
    clf = SPTClassifier(**TINY, tokenizer__patch_size=4, pretrainer=pre, max_epochs=3,
                        random_state=0).fit(X, y)
    (kept,) = _thresholds(clf)
    assert thr.abs().sum() > 0 and torch.equal(kept, thr)


def test_unequal_lengths_padding_changes_nothing():
    g = np.random.default_rng(0)
    X = [g.normal(size=(1, int(g.integers(20, 60)))).astype(np.float32) for _ in range(20)]
    y = np.arange(20) % 2
    clf = SPTClassifier(**TINY, tokenizer__patch_size=4, pretrain_epochs=1, max_epochs=2,
                        random_state=0).fit(X, y)
    s = X[0]
    padded = np.pad(s, ((0, 0), (0, 9)), constant_values=np.nan)
    np.testing.assert_allclose(clf.predict_proba([padded]), clf.predict_proba([s]),
                               rtol=1e-5, atol=1e-6)


def test_each_channel_draws_at_its_own_available_steps():
    """A channel missing everywhere must not stop the other channel's draws."""
    torch.manual_seed(0)
    X = np.random.default_rng(1).normal(size=(5, 2, 40)).astype(np.float32)
    X[:, 1] = np.nan
    tok = RocketEmbedding(2, 5, 8, 40)
    fit_to_panel(tok, X)
    assert (tok.threshold[:, :84] != 0).float().mean() > 0.9
    assert torch.equal(tok.threshold[:, 84:], torch.zeros_like(tok.threshold[:, 84:]))
