"""Transformer layers: multi-head self-attention and the pre-norm encoder layer.

The white-box layers (:mod:`sktspt.nn.whitebox`) build on :class:`SelfAttention`, and the
encoder (:mod:`sktspt.nn.encoder`) stacks either kind, so these live apart from both.
"""

from __future__ import annotations

import torch
from torch import nn

from .dropout import Dropout, attention
from .positional import Rotary, alibi_bias, alibi_slopes

__all__ = ["SelfAttention", "EncoderLayer"]


class SelfAttention(nn.Module):
    """Multi-head self-attention on ``scaled_dot_product_attention``: only ``keep`` ``(n, k)``
    tokens are keys; relative positions (rotary, ALiBi) act here."""

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
        y = attention(q, kk, v, bias, self.dropout if self.training else 0.0)
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
            Dropout(dropout),
            nn.Linear(dim_feedforward, d_model),
        )
        self.drop = Dropout(dropout)

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        x = x + self.drop(self.attn(self.norm1(x), keep))
        return x + self.drop(self.ffn(self.norm2(x)))

    def attention_weights(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        return self.attn.attention_weights(self.norm1(x), keep)
