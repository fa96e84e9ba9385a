"""Dropout whose random draws are cheap on CPU, and attention that uses it.

On CPU, drawing the Bernoulli mask is most of what dropout costs (one draw per value,
several nanoseconds each). Here one 64-bit draw decides four values through its four
16-bit quarters, each uniform: the same dropout, with the rate rounded to a multiple of
1/65536 (kept values are scaled by the rounded rate, so the expectation is exact), from the
same seeded generator. On a GPU, and outside training, torch's own paths run.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["Dropout", "dropout", "attention"]

_LEVELS = 2**16


def _keep_scale(x: torch.Tensor, p: float) -> torch.Tensor:
    """A ``0`` / ``1 / (1 - p')`` tensor like ``x``: which values dropout keeps."""
    n = x.numel()
    draws = torch.empty((n + 3) // 4, dtype=torch.int64, device=x.device)
    draws.random_(-(2**63), 2**63 - 1)  # the whole range: all four quarters uniform
    quarters = draws.view(torch.int16)[:n].view(x.shape)
    cut = round(p * _LEVELS)
    keep = quarters >= (cut - _LEVELS // 2)
    return keep.to(x.dtype).mul_(_LEVELS / (_LEVELS - cut))


def dropout(x: torch.Tensor, p: float, training: bool = True) -> torch.Tensor:
    """``F.dropout``, with the cheap draws of this module on CPU in training."""
    if not training or x.device.type != "cpu" or not 0.0 < p < 1.0:
        return F.dropout(x, p, training)
    return x * _keep_scale(x, p)


class Dropout(nn.Dropout):
    """``nn.Dropout`` (same parameters, no state) drawing its mask with :func:`dropout`."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return dropout(x, self.p, self.training)


def attention(q, k, v, bias: torch.Tensor, dropout_p: float) -> torch.Tensor:
    """``scaled_dot_product_attention`` with an additive ``bias``; with dropout on CPU
    written out as torch computes it, the dropout being :func:`dropout`."""
    if dropout_p == 0.0 or q.device.type != "cpu":
        return F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=dropout_p)
    scores = torch.baddbmm(
        bias.expand(q.shape[0], q.shape[1], q.shape[2], k.shape[2]).reshape(-1, q.shape[2],
                                                                           k.shape[2]),
        q.reshape(-1, q.shape[2], q.shape[3]),
        k.reshape(-1, k.shape[2], k.shape[3]).transpose(1, 2),
        alpha=q.shape[-1] ** -0.5,
    )
    probs = dropout(torch.softmax(scores, dim=-1), dropout_p)
    return torch.bmm(probs, v.reshape(-1, v.shape[2], v.shape[3])).view(q.shape[:3] + (-1,))
