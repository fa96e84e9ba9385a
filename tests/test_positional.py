"""Positional encodings: relative ones are shift-invariant, absolute ones are not,
ALiBi decays with distance, and every encoding ignores padding."""

import pytest
import torch

from sktspt.nn import POSITIONALS, TransformerEncoder
from sktspt.nn.encoder import SelfAttention
from sktspt.nn.positional import (
    LearnedPosition,
    Rotary,
    SinusoidalPosition,
    alibi_bias,
    alibi_slopes,
)

P = 4  # patch size
KW = dict(n_channels=2, patch_size=P, max_tokens=16, d_model=16, depth=2, n_heads=2,
          dim_feedforward=32, dropout=0.0)


def _encoder(positional: str, seed: int = 0) -> TransformerEncoder:
    torch.manual_seed(seed)
    return TransformerEncoder(**KW, positional=positional).eval()


def _first_layer_logits(enc: TransformerEncoder, x: torch.Tensor) -> torch.Tensor:
    """Pre-softmax scores of layer 0 (q.k / sqrt(d) plus any ALiBi bias), ``(n, h, k, k)``."""
    obs = torch.ones_like(x, dtype=torch.bool)
    h, keep = enc.tokens(x, obs, obs)
    attn = enc.layers[0].attn
    q, k, _ = attn._qkv(enc.layers[0].norm1(h))
    return q @ k.transpose(-2, -1) / attn.head_dim**0.5 + attn._bias(keep, h.shape[1], q.dtype)


# --- rotary ------------------------------------------------------------------------------
def test_rotary_scores_depend_only_on_offset():
    torch.manual_seed(0)
    n, hd = 10, 8
    rot = Rotary(hd)
    # The same query and key content at every position: any variation of q.k comes
    # from the positions alone.
    q = torch.randn(hd).expand(1, 1, n, hd)
    k = torch.randn(hd).expand(1, 1, n, hd)
    qr, kr = rot(q, k)
    s = (qr @ kr.transpose(-2, -1))[0, 0]
    for offset in range(-n + 1, n):
        diag = torch.diagonal(s, offset)
        assert torch.allclose(diag, diag[0].expand_as(diag), atol=1e-5), offset
    # ... and the positions do matter: scores change with the offset.
    assert torch.diagonal(s, 0).std() < 1e-5 < (s[0, 0] - s[0, 3]).abs()


def test_rotary_rejects_odd_head_dim():
    with pytest.raises(ValueError, match="even head dimension"):
        Rotary(5)


def test_rotary_attention_scores_are_shift_invariant():
    """Prepending tokens leaves the raw scores among the original tokens unchanged."""
    torch.manual_seed(0)
    attn = SelfAttention(d_model=16, n_heads=2, dropout=0.0, positional="rotary").eval()
    x = torch.randn(1, 7, 16)
    shifted = torch.cat([torch.randn(1, 5, 16), x], dim=1)
    q, k, _ = attn._qkv(x)
    qs, ks, _ = attn._qkv(shifted)
    assert torch.allclose(q @ k.transpose(-2, -1), (qs @ ks.transpose(-2, -1))[..., 5:, 5:],
                          atol=1e-4)
    # The rotated queries themselves moved: the invariance is relative, not trivial.
    assert not torch.allclose(q, qs[..., 5:, :], atol=1e-3)


@pytest.mark.parametrize("positional", POSITIONALS)
def test_shift_invariance_separates_relative_from_absolute(positional):
    """Through the whole token pipeline, prepend 3 patches to a series: the layer-0
    logits among the original patches stay equal for relative (or no) encodings and
    change for absolute ones."""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(1, 2, 6 * P, generator=g)
    shifted = torch.cat([torch.randn(1, 2, 3 * P, generator=g), x], dim=2)
    enc = _encoder(positional)
    with torch.no_grad():
        a = _first_layer_logits(enc, x)
        b = _first_layer_logits(enc, shifted)[..., 3:, 3:]
    same = torch.allclose(a, b, atol=1e-4)
    assert same == (positional in ("rotary", "alibi", "none"))


@pytest.mark.parametrize("positional", POSITIONALS)
def test_inspected_weights_are_the_ones_the_forward_pass_uses(positional):
    """``attention_weights`` (explicit softmax) must match the fused SDPA forward, or
    everything measured on attention maps describes a different network."""
    torch.manual_seed(0)
    attn = SelfAttention(d_model=16, n_heads=2, dropout=0.0, positional=positional).eval()
    x = torch.randn(3, 7, 16)
    keep = torch.ones(3, 7, dtype=torch.bool)
    keep[1, 4:] = False
    with torch.no_grad():
        _, _, v = attn._qkv(x)
        w = attn.attention_weights(x, keep)
        by_hand = attn.out((w @ v).transpose(1, 2).reshape(3, 7, 16))
        assert torch.allclose(attn(x, keep), by_hand, atol=1e-5)


# --- ALiBi -------------------------------------------------------------------------------
@pytest.mark.parametrize("n_heads", [1, 3, 4, 8])
def test_alibi_slopes_positive_distinct_geometric(n_heads):
    s = alibi_slopes(n_heads)
    assert s.shape == (n_heads,) and (s > 0).all() and (s <= 1).all()
    if n_heads > 1:
        ratio = s[1:] / s[:-1]
        assert (ratio < 1).all() and torch.allclose(ratio, ratio[0].expand_as(ratio))


@pytest.mark.parametrize("n_heads", [1, 3, 4])
def test_alibi_bias_symmetric_and_strictly_decreasing_with_distance(n_heads):
    n = 9
    bias = alibi_bias(alibi_slopes(n_heads), n)
    assert bias.shape == (n_heads, n, n)
    assert torch.equal(bias, bias.transpose(1, 2))
    assert torch.equal(torch.diagonal(bias, dim1=1, dim2=2), torch.zeros(n_heads, n))
    dist = (torch.arange(n)[None, :] - torch.arange(n)[:, None]).abs()
    for h in range(n_heads):
        # a function of |i - j| only ...
        assert torch.equal(bias[h], bias[h, 0][dist])
        # ... strictly decreasing in it, from every query position
        for i in range(n):
            right, left = bias[h, i, i:], bias[h, i, : i + 1].flip(0)
            assert (right.diff() < 0).all() and (left.diff() < 0).all()


def test_alibi_attention_decays_with_distance_and_skips_padding():
    """With content-free scores (zero q/k), attention is the ALiBi prior alone."""
    attn = SelfAttention(d_model=8, n_heads=2, dropout=0.0, positional="alibi").eval()
    torch.nn.init.zeros_(attn.qkv.weight)
    torch.nn.init.zeros_(attn.qkv.bias)
    keep = torch.ones(1, 8, dtype=torch.bool)
    keep[0, 6:] = False
    w = attn.attention_weights(torch.randn(1, 8, 8), keep)[0]
    assert torch.equal(w[..., 6:], torch.zeros(2, 8, 2))
    assert torch.allclose(w.sum(-1), torch.ones(2, 8), atol=1e-6)
    row = w[:, 2, :6]  # query 2 among 6 real keys
    assert (row[:, 2:].diff(dim=-1) < 0).all() and (row[:, :3].diff(dim=-1) > 0).all()


# --- absolute encodings ------------------------------------------------------------------
@pytest.mark.parametrize("d_model", [16, 7])
def test_sinusoidal_distinct_per_position_and_length_independent(d_model):
    enc = SinusoidalPosition(d_model)
    pe = enc(torch.zeros(1, 12, d_model))[0]
    assert pe.shape == (12, d_model)
    assert torch.cdist(pe, pe).add(torch.eye(12)).min() > 1e-3  # every row distinct
    # a shorter sequence gets the same vectors: appending tokens moves nothing
    assert torch.equal(enc(torch.zeros(1, 5, d_model))[0], pe[:5])
    x = torch.randn(2, 12, d_model)
    assert torch.allclose(enc(x) - x, pe.expand_as(x), atol=1e-6)


def test_learned_positions_distinct_and_bounded():
    torch.manual_seed(0)
    enc = LearnedPosition(8, max_tokens=6)
    pe = enc(torch.zeros(1, 6, 8))[0]
    assert torch.cdist(pe, pe).add(torch.eye(6)).min() > 0
    assert torch.equal(enc(torch.zeros(1, 4, 8))[0], pe[:4])
    with pytest.raises(ValueError, match="at most 6"):
        enc(torch.zeros(1, 7, 8))


@pytest.mark.parametrize("positional", POSITIONALS)
def test_only_absolute_encodings_tell_identical_patches_apart(positional):
    """A constant series has identical patches: only an absolute encoding can make
    their output tokens differ (relative ones attend over identical values)."""
    enc = _encoder(positional)
    x = torch.ones(1, 2, 8 * P)
    obs = torch.ones_like(x, dtype=torch.bool)
    with torch.no_grad():
        h, _ = enc(x, obs, obs)
    spread = (h[0] - h[0, :1]).abs().max().item()
    if positional in ("sinusoidal", "learned"):
        assert spread > 1e-3
    else:
        assert spread < 1e-5


# --- padding and variable length ---------------------------------------------------------
def _ragged_batch() -> tuple[torch.Tensor, torch.Tensor]:
    """Series 0 full (8 patches); series 1 ends after 5 patches; series 2 has patch 3
    entirely missing (a gap token) and one missing value elsewhere."""
    g = torch.Generator().manual_seed(2)
    x = torch.randn(3, 2, 8 * P, generator=g)
    x[1, :, 5 * P :] = float("nan")
    x[2, :, 3 * P : 4 * P] = float("nan")
    x[2, 0, 1] = float("nan")
    keep = torch.ones(3, 8, dtype=torch.bool)
    keep[1, 5:] = False
    keep[2, 3] = False
    return x, keep


def _run(enc: TransformerEncoder, x: torch.Tensor):
    obs = ~torch.isnan(x)
    x0 = torch.nan_to_num(x)
    with torch.no_grad():
        h, keep = enc(x0, obs, obs)
        maps = enc.attention_maps(x0, obs, obs)
    return h, keep, maps


@pytest.mark.parametrize("positional", POSITIONALS)
def test_padding_tokens_receive_zero_attention(positional):
    x, expected_keep = _ragged_batch()
    _, keep, maps = _run(_encoder(positional), x)
    assert torch.equal(keep, expected_keep)
    for m in maps:
        assert torch.equal(m * ~keep[:, None, None, :], torch.zeros_like(m))
        assert torch.allclose(m.sum(-1), torch.ones(m.shape[:3]), atol=1e-5)
        assert (m[keep[:, None, None, :].expand_as(m)] > 0).all()


@pytest.mark.parametrize("positional", POSITIONALS)
def test_appended_padding_leaves_real_tokens_unchanged(positional):
    x, keep = _ragged_batch()
    enc = _encoder(positional)
    h, _, maps = _run(enc, x)
    padded = torch.cat([x, torch.full((3, 2, 5 * P), float("nan"))], dim=2)
    hp, keep_p, maps_p = _run(enc, padded)
    assert not keep_p[:, 8:].any()
    assert torch.allclose(hp[:, :8][keep], h[keep], atol=1e-5)
    for m, mp in zip(maps, maps_p, strict=True):
        assert torch.allclose(mp[..., :8, :8], m, atol=1e-6)


@pytest.mark.parametrize("positional", POSITIONALS)
def test_short_series_alone_equals_short_series_in_padded_batch(positional):
    x, _ = _ragged_batch()
    enc = _encoder(positional)
    h, _, _ = _run(enc, x)
    alone, keep_alone, _ = _run(enc, x[1:2, :, : 5 * P])
    assert keep_alone.all()
    assert torch.allclose(alone[0], h[1, :5], atol=1e-5)
