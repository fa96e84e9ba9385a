"""White-box encoder layers: CRATE and the attention-only variant.

Both come from reading a transformer layer as one step of optimising *sparse rate
reduction*: the attention compresses tokens towards a few subspaces and the second
step makes them sparse.

* ``"crate"`` (Yu et al. 2023): ``z½ = z + MSSA(LN z)``, then ``z' = ISTA(LN z½)`` with
  no residual around ISTA. MSSA (multi-head subspace self-attention) has a single
  projection ``U`` used as query, key *and* value; ISTA is one proximal-gradient step
  of sparse coding against a learned ``d x d`` dictionary ``D``.
* ``"attention_only"`` (Bai et al. 2026): when the pretraining objective already
  expands the representation (LeJEPA's Gaussian target), the dictionary is not
  needed: ISTA with ``D = I`` is ``ReLU(x - eta * lambda)``, which gives the layer
  ``z' = ReLU(LN(z + MSSA(LN z)) - theta)`` with a learnable threshold ``theta``. It
  keeps the compression and sparsity steps and drops about a third of the weights.

The layers take ``(x, keep)`` and offer ``attention_weights`` like
:class:`~sktspt.nn.layers.EncoderLayer`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .layers import EncoderLayer, SelfAttention

__all__ = ["ARCHITECTURES", "MSSA", "ISTA", "CRATELayer", "AttentionOnlyLayer", "encoder_layer"]

ARCHITECTURES = ("transformer", "crate", "attention_only")


class MSSA(SelfAttention):
    """Multi-head subspace self-attention: per head ``softmax(w wᵀ / sqrt(d_h)) w`` with
    ``w = U_h x`` (one bias-free ``U`` for q, k and v; rotary rotates q and k only), then
    :class:`~sktspt.nn.layers.SelfAttention`'s output map, masking and dropout."""

    def __init__(self, d_model: int, n_heads: int, dropout: float, positional: str):
        super().__init__(d_model, n_heads, dropout, positional)
        del self.qkv
        self.U = nn.Linear(d_model, d_model, bias=False)

    def _qkv(self, x: torch.Tensor):
        n, k, _ = x.shape
        w = self.U(x).reshape(n, k, self.n_heads, self.head_dim).transpose(1, 2)
        if self.rotary is not None:
            q, kk = self.rotary(w, w)
            return q, kk, w
        return w, w, w


class ISTA(nn.Module):
    """One ISTA step of sparse coding: ``ReLU(x + eta * Dᵀ(x - D x) - eta * lambd)``, with
    a learned dictionary ``D`` (Kaiming-uniform, as in the CRATE reference code): towards
    a sparse, non-negative code whose reconstruction ``D x`` stays close to ``x``."""

    def __init__(self, d_model: int, step_size: float = 0.1, lambd: float = 0.1):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(d_model, d_model))
        nn.init.kaiming_uniform_(self.weight)
        self.step_size = step_size
        self.lambd = lambd

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        residual = x - F.linear(x, self.weight)
        grad = F.linear(residual, self.weight.t())
        return F.relu(x + self.step_size * grad - self.step_size * self.lambd)


class CRATELayer(nn.Module):
    """CRATE layer: ``z½ = z + MSSA(LN z)``, then ``ISTA(LN z½)`` (no residual, outputs
    non-negative). ``dim_feedforward`` is ignored (ISTA's dictionary is square)."""

    def __init__(self, d_model, n_heads, dim_feedforward, dropout, positional,
                 step_size: float = 0.1, lambd: float = 0.1):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.attn = MSSA(d_model, n_heads, dropout, positional)
        self.norm2 = nn.LayerNorm(d_model)
        self.ista = ISTA(d_model, step_size, lambd)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        x = x + self.drop(self.attn(self.norm1(x), keep))
        return self.ista(self.norm2(x))

    def attention_weights(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        return self.attn.attention_weights(self.norm1(x), keep)


class AttentionOnlyLayer(nn.Module):
    """Attention-only white-box layer: ``ReLU(LN(z + MSSA(LN z)) - theta)``, ``theta`` one
    learnable scalar (ISTA with ``D = I``). ``dim_feedforward`` is ignored."""

    def __init__(self, d_model, n_heads, dim_feedforward, dropout, positional,
                 theta: float = 0.01):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.attn = MSSA(d_model, n_heads, dropout, positional)
        self.norm2 = nn.LayerNorm(d_model)
        self.theta = nn.Parameter(torch.tensor(float(theta)))
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        x = x + self.drop(self.attn(self.norm1(x), keep))
        return F.relu(self.norm2(x) - self.theta)

    def attention_weights(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        return self.attn.attention_weights(self.norm1(x), keep)


_LAYERS = {
    "transformer": EncoderLayer,
    "crate": CRATELayer,
    "attention_only": AttentionOnlyLayer,
}


def encoder_layer(
    architecture: str, d_model: int, n_heads: int, dim_feedforward: int, dropout: float,
    positional: str,
) -> nn.Module:
    """One encoder layer of the named architecture (see :data:`ARCHITECTURES`)."""
    if architecture not in _LAYERS:
        raise ValueError(f"architecture must be one of {ARCHITECTURES}, got {architecture!r}.")
    return _LAYERS[architecture](d_model, n_heads, dim_feedforward, dropout, positional)
