"""Tokenizers: shapes, no leak of hidden values, batch independence, estimator option."""

import pytest
import torch
from conftest import make_panel

from sktspt import SPTClassifier, SPTPretrainer
from sktspt.nn.tokenizers import ConvEmbedding, PatchEmbedding, RocketEmbedding, make_tokenizer


@pytest.mark.parametrize("cls", [PatchEmbedding, ConvEmbedding, RocketEmbedding])
def test_one_token_per_patch(cls):
    tok = cls(n_channels=3, patch_size=4, d_model=16)
    x = torch.randn(5, 3, 40)
    out = tok(x, torch.ones_like(x, dtype=torch.bool))
    assert out.shape == (5, 10, 16)


@pytest.mark.parametrize("cls", [PatchEmbedding, ConvEmbedding, RocketEmbedding])
def test_hidden_values_do_not_reach_the_tokens(cls):
    """Masked reconstruction is only honest if a hidden value cannot leak into any token."""
    torch.manual_seed(0)
    tok = cls(n_channels=2, patch_size=4, d_model=16)
    x = torch.randn(2, 2, 32)
    available = torch.rand(2, 2, 32) > 0.3
    changed = torch.where(available, x, x + 100.0)
    assert torch.equal(tok(x, available), tok(changed, available))
    # ... while an available value does change them.
    other = x.clone()
    i = torch.nonzero(available[0, 0])[0].item()
    other[0, 0, i] += 5.0  # large enough to move a thresholded response across
    assert not torch.equal(tok(x, available), tok(other, available))


def test_conv_tokens_do_not_depend_on_the_batch():
    torch.manual_seed(0)
    tok = ConvEmbedding(n_channels=1, patch_size=4, d_model=16).eval()
    x = torch.randn(6, 1, 32)
    ones = torch.ones_like(x, dtype=torch.bool)
    alone = tok(x[:1], ones[:1])
    torch.testing.assert_close(tok(x, ones)[:1], alone)


def test_unknown_tokenizer_is_refused():
    with pytest.raises(ValueError, match="tokenizer must be one of"):
        make_tokenizer("wavelet", 1, 4, 16)
    X, y = make_panel(n=20)
    with pytest.raises(ValueError, match="tokenizer must be one of"):
        SPTClassifier(tokenizer="wavelet", pretrain_epochs=0, max_epochs=1).fit(X, y)


def test_conv_tokenizer_pretrains_and_classifies():
    X, y = make_panel(n=40, t=48)
    pre = SPTPretrainer(tokenizer="conv", depth=1, d_model=16, pretrain_epochs=30, lr=3e-3,
                        validation_fraction=0.0, random_state=0).fit(X)
    losses = pre.history_[:, "train_loss"]
    assert min(losses[-5:]) < 0.6 * losses[0]
    clf = SPTClassifier(tokenizer="conv", depth=1, d_model=16, pretrain_epochs=5,
                        max_epochs=15, random_state=0).fit(X, y)
    assert clf.encoder_kwargs_["tokenizer"] == "conv"
    assert clf.score(X, y) > 0.8


def test_conv_patch_merge_is_the_strided_convolution():
    """The merge runs as a matrix product; it must equal the convolution it stands for."""
    torch.manual_seed(0)
    tok = ConvEmbedding(n_channels=2, patch_size=5, d_model=12)
    x = torch.randn(3, 2, 40)
    available = torch.rand(3, 2, 40) > 0.2
    h = torch.cat([torch.where(available, x, 0.0), (~available).float()], dim=1)
    h = torch.cat([branch(h) for branch in tok.branches], dim=1)
    h = tok.act(tok.norm(h.transpose(1, 2))).transpose(1, 2)
    expected = tok.merge(h).transpose(1, 2)
    torch.testing.assert_close(tok(x, available), expected)


def _branch_reference(tok, x, available):
    """The stem as its definition: each branch a convolution, LayerNorm, GELU, the merge."""
    h = torch.cat([torch.where(available, x, 0.0), (~available).float()], dim=1)
    h = torch.cat([branch(h) for branch in tok.branches], dim=1)
    h = tok.act(tok.norm(h.transpose(1, 2))).transpose(1, 2)
    return tok.merge(h).transpose(1, 2)


@pytest.mark.parametrize("im2col_max", [0, 2**20], ids=["convolution", "im2col"])
def test_conv_stem_products_match_the_branches_and_their_gradients(monkeypatch, im2col_max):
    """Both ways the stem runs (windows times weights, or one convolution) are the branches'
    function, with the branches' gradients, for several channels and an odd length."""
    import sktspt.nn.tokenizers as tokenizers

    monkeypatch.setattr(tokenizers, "IM2COL_MAX", im2col_max)
    torch.manual_seed(1)
    tok = ConvEmbedding(n_channels=3, patch_size=7, d_model=20)
    x = torch.randn(4, 3, 49)
    available = torch.rand(4, 3, 49) > 0.3
    fast = tok(x, available)
    fast.square().sum().backward()
    fast_grads = [p.grad.clone() for p in tok.parameters()]
    tok.zero_grad()
    slow = _branch_reference(tok, x, available)
    slow.square().sum().backward()
    torch.testing.assert_close(fast, slow, rtol=1e-5, atol=1e-5)
    for got, want in zip(fast_grads, [p.grad for p in tok.parameters()]):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_long_many_channel_series_take_the_convolution(monkeypatch):
    """Past IM2COL_MAX floats of windows a series, the stem must not build the windows."""
    import sktspt.nn.tokenizers as tokenizers

    tok = ConvEmbedding(n_channels=2, patch_size=4, d_model=8)
    x = torch.randn(2, 2, 64)
    ones = torch.ones_like(x, dtype=torch.bool)
    calls, conv1d = [], tokenizers.F.conv1d
    monkeypatch.setattr(tokenizers.F, "conv1d", lambda *a, **k: calls.append(1) or conv1d(*a, **k))
    tok(x, ones)
    assert not calls
    monkeypatch.setattr(tokenizers, "IM2COL_MAX", 64 * 4 * 39 - 1)
    tok(x, ones)
    assert calls
