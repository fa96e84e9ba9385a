"""The transformer encoder: patch embedding, pre-norm self-attention layers, pooling."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .positional import (
    POSITIONALS,
    LearnedPosition,
    Rotary,
    SinusoidalPosition,
    alibi_bias,
    alibi_slopes,
)
from .tokenizers import PatchEmbedding, make_tokenizer, patchify, unpatchify

__all__ = [
    "PatchEmbedding", "SelfAttention", "EncoderLayer", "TransformerEncoder", "patchify",
    "unpatchify",
]


class SelfAttention(nn.Module):
    """Multi-head self-attention on ``scaled_dot_product_attention``.

    ``keep`` (``n, k`` boolean) marks tokens that may be attended to; padding tokens
    are never keys. Relative positions (rotary, ALiBi) act here.
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float, positional: str):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} must be divisible by n_heads={n_heads}.")
        self.n_heads = n_heads
        self.head_dim = d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.dropout = dropout
        self.rotary = Rotary(self.head_dim) if positional == "rotary" else None
        if positional == "alibi":
            self.register_buffer("slopes", alibi_slopes(n_heads), persistent=False)
        else:
            self.slopes = None
        #: Training-time sparse attention (a :class:`~sktspt.nn.lighthouse.Lighthouse`),
        #: set and cleared by a callback; None, and always in eval mode, is dense SDPA.
        self.sparse_attention = None

    def _qkv(self, x: torch.Tensor):
        n, k, d = x.shape
        q, kk, v = self.qkv(x).reshape(n, k, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        if self.rotary is not None:
            q, kk = self.rotary(q, kk)
        return q, kk, v

    def _bias(self, keep: torch.Tensor, n_tokens: int, dtype) -> torch.Tensor:
        """Additive bias ``(n, heads or 1, k, k)``: -inf on padding keys, ALiBi if set."""
        mask = torch.zeros(keep.shape[0], 1, 1, n_tokens, device=keep.device, dtype=dtype)
        mask = mask.masked_fill(~keep[:, None, None, :], float("-inf"))
        if self.slopes is not None:
            mask = mask + alibi_bias(self.slopes, n_tokens).to(dtype)[None]
        return mask

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        n, k, d = x.shape
        q, kk, v = self._qkv(x)
        if self.training and getattr(self, "sparse_attention", None) is not None:
            y = self.sparse_attention(q, kk, v, keep, self.slopes, self.dropout)
            return self.out(y.transpose(1, 2).reshape(n, k, d))
        bias = self._bias(keep, k, q.dtype)
        y = F.scaled_dot_product_attention(
            q, kk, v, attn_mask=bias, dropout_p=self.dropout if self.training else 0.0
        )
        return self.out(y.transpose(1, 2).reshape(n, k, d))

    def attention_weights(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        """Attention probabilities ``(n, heads, k, k)``, for inspection."""
        q, kk, _ = self._qkv(x)
        scores = q @ kk.transpose(-2, -1) / self.head_dim**0.5
        return torch.softmax(scores + self._bias(keep, x.shape[1], q.dtype), dim=-1)


class EncoderLayer(nn.Module):
    """Pre-norm transformer layer: ``x + Attn(LN x)``, then ``x + FFN(LN x)``."""

    def __init__(self, d_model, n_heads, dim_feedforward, dropout, positional):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.attn = SelfAttention(d_model, n_heads, dropout, positional)
        self.norm2 = nn.LayerNorm(d_model)
        self.ffn = nn.Sequential(
            nn.Linear(d_model, dim_feedforward),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(dim_feedforward, d_model),
        )
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        x = x + self.drop(self.attn(self.norm1(x), keep))
        return x + self.drop(self.ffn(self.norm2(x)))

    def attention_weights(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        return self.attn.attention_weights(self.norm1(x), keep)


class TransformerEncoder(nn.Module):
    """Time-series transformer: patches -> tokens -> ``depth`` layers -> token states.

    ``forward(x, available)`` takes normalised values ``(n, c, t)`` (``t`` a multiple
    of ``patch_size``) and a boolean ``available`` mask of the same shape, and
    returns token states ``(n, k, d_model)`` and ``keep`` ``(n, k)``: which tokens
    hold at least one observed value (the rest are padding).

    ``tokenizer`` picks how tokens are made (:mod:`sktspt.nn.tokenizers`);
    ``architecture`` picks the layer: ``"transformer"`` (:class:`EncoderLayer`),
    ``"crate"`` or ``"attention_only"`` (white-box layers, :mod:`sktspt.nn.whitebox`).
    """

    def __init__(
        self,
        n_channels: int,
        patch_size: int,
        max_tokens: int,
        d_model: int = 64,
        depth: int = 3,
        n_heads: int = 4,
        dim_feedforward: int = 128,
        dropout: float = 0.1,
        positional: str = "sinusoidal",
        architecture: str = "transformer",
        tokenizer: str = "patch",
    ):
        super().__init__()
        # whitebox builds its layers on this module's attention, hence the late import.
        from .whitebox import encoder_layer

        if positional not in POSITIONALS:
            raise ValueError(f"positional must be one of {POSITIONALS}, got {positional!r}.")
        self.n_channels = n_channels
        self.patch_size = patch_size
        self.d_model = d_model
        self.embed = make_tokenizer(tokenizer, n_channels, patch_size, d_model)
        if positional == "sinusoidal":
            self.position = SinusoidalPosition(d_model)
        elif positional == "learned":
            self.position = LearnedPosition(d_model, max_tokens)
        else:
            self.position = nn.Identity()
        self.layers = nn.ModuleList(
            encoder_layer(architecture, d_model, n_heads, dim_feedforward, dropout, positional)
            for _ in range(depth)
        )
        self.norm = nn.LayerNorm(d_model)

    def tokens(self, x: torch.Tensor, available: torch.Tensor, observed: torch.Tensor):
        """Embedded tokens with positions, and which tokens are not padding."""
        keep = patchify(observed.to(x.dtype), self.patch_size).amax(dim=-1) > 0
        return self.position(self.embed(x, available)), keep

    def forward(self, x: torch.Tensor, available: torch.Tensor, observed: torch.Tensor):
        h, keep = self.tokens(x, available, observed)
        for layer in self.layers:
            h = layer(h, keep)
        return self.norm(h), keep

    def layer_states(self, x: torch.Tensor, available: torch.Tensor, observed: torch.Tensor):
        """Token states before the first layer and after each layer, and ``keep``.

        Returns a list of ``depth + 1`` tensors ``(n, k, d_model)`` (the embedded tokens,
        then each layer's output, without the final norm) and ``keep`` ``(n, k)``. The last
        state, normalised by ``norm``, is what ``forward`` returns.
        """
        h, keep = self.tokens(x, available, observed)
        states = [h]
        for layer in self.layers:
            h = layer(h, keep)
            states.append(h)
        return states, keep

    def attention_maps(self, x, available, observed) -> list[torch.Tensor]:
        """Per layer, attention probabilities ``(n, heads, k, k)``."""
        h, keep = self.tokens(x, available, observed)
        maps = []
        for layer in self.layers:
            maps.append(layer.attention_weights(h, keep))
            h = layer(h, keep)
        return maps


def masked_mean(h: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """Mean over tokens that are not padding: ``(n, k, d)`` -> ``(n, d)``."""
    w = keep.to(h.dtype)[..., None]
    return (h * w).sum(1) / w.sum(1).clamp_min(1.0)
