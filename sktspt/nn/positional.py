"""Positional encodings.

Absolute encodings (``sinusoidal``, ``learned``) are added to the token embeddings;
relative ones act inside attention: ``rotary`` rotates queries and keys so scores
depend only on the offset between positions, ``alibi`` adds a bias that falls
linearly with distance (a built-in locality prior, the strongest no-SPT control).
"""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = [
    "POSITIONALS",
    "SinusoidalPosition",
    "LearnedPosition",
    "Rotary",
    "alibi_slopes",
    "alibi_bias",
]

POSITIONALS = ("sinusoidal", "learned", "rotary", "alibi", "none")


class SinusoidalPosition(nn.Module):
    """Fixed sine/cosine encodings (Vaswani et al.), any length."""

    def __init__(self, d_model: int):
        super().__init__()
        self.d_model = d_model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[1]
        pos = torch.arange(n, device=x.device, dtype=torch.float32)[:, None]
        half = (self.d_model + 1) // 2
        freq = torch.exp(
            torch.arange(half, device=x.device, dtype=torch.float32)
            * (-math.log(10000.0) / max(half, 1))
        )
        angles = pos * freq
        pe = torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)[:, : self.d_model]
        return x + pe.to(x.dtype)


class LearnedPosition(nn.Module):
    """One learned vector per token position, up to ``max_tokens``."""

    def __init__(self, d_model: int, max_tokens: int):
        super().__init__()
        self.max_tokens = max_tokens
        self.weight = nn.Parameter(torch.randn(max_tokens, d_model) * 0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[1]
        if n > self.max_tokens:
            raise ValueError(f"Series has {n} tokens but learned positions were fitted for at most "
                             f"{self.max_tokens}; use positional='sinusoidal', 'rotary' or 'alibi' "
                             "for longer series.")
        return x + self.weight[:n]


class Rotary(nn.Module):
    """Rotary position embedding (RoPE) applied to queries and keys."""

    def __init__(self, head_dim: int, base: float = 10000.0):
        super().__init__()
        if head_dim % 2:
            raise ValueError(f"rotary positions need an even head dimension, got {head_dim}.")
        inv = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        self.register_buffer("inv_freq", inv, persistent=False)

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        n = q.shape[-2]
        pos = torch.arange(n, device=q.device, dtype=torch.float32)
        angles = pos[:, None] * self.inv_freq[None, :]
        cos, sin = angles.cos().to(q.dtype), angles.sin().to(q.dtype)
        return _rotate(q, cos, sin), _rotate(k, cos, sin)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out = torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)
    return out.flatten(-2)


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """Geometric head slopes 2^(-8/h), 2^(-16/h), ... as in Press et al. (2022)."""
    return torch.tensor([2.0 ** (-8.0 * (i + 1) / n_heads) for i in range(n_heads)])


def alibi_bias(slopes: torch.Tensor, n: int) -> torch.Tensor:
    """Symmetric bias ``-slope * |i - j|`` of shape ``(heads, n, n)``."""
    pos = torch.arange(n, device=slopes.device, dtype=torch.float32)
    dist = (pos[None, :] - pos[:, None]).abs()
    return -slopes[:, None, None] * dist[None]
