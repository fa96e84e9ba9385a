"""Tokenizers: how a series ``(n, c, t)`` becomes tokens ``(n, t / p, d_model)``.

Both see values with hidden or missing entries set to zero plus a 0/1 *not available*
indicator per value, so the model knows which zeros are real (Amos et al. 2024), and
both make one token per ``patch_size`` steps, so masking, padding and the
reconstruction head work the same whatever the tokenizer.

- ``"patch"``: one linear map of each patch of all channels (PatchTST-style).
- ``"conv"``: a multi-scale convolutional stem (InceptionTime/ConvTran-style parallel
  kernels), then a strided convolution that merges each patch into a token. Local
  shape patterns, which linear patches capture poorly, become features before
  attention sees them.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["TOKENIZERS", "PatchEmbedding", "ConvEmbedding", "make_tokenizer", "patchify",
           "unpatchify"]

TOKENIZERS = ("patch", "conv")
CONV_KERNELS = (3, 9, 19, 39)
#: Steps past a series' end that its last token's features can see (the widest kernel's
#: half-width; a patch token sees none past its own patch).
STEM_REACH = max(CONV_KERNELS) // 2


def patchify(x: torch.Tensor, patch_size: int) -> torch.Tensor:
    """``(n, c, t)`` -> ``(n, t / p, c * p)``; ``t`` must be a multiple of ``p``."""
    n, c, t = x.shape
    return x.reshape(n, c, t // patch_size, patch_size).permute(0, 2, 1, 3).reshape(
        n, t // patch_size, c * patch_size
    )


def unpatchify(tokens: torch.Tensor, n_channels: int, patch_size: int) -> torch.Tensor:
    """Inverse of :func:`patchify`."""
    n, k, _ = tokens.shape
    return tokens.reshape(n, k, n_channels, patch_size).permute(0, 2, 1, 3).reshape(
        n, n_channels, k * patch_size
    )


def _values_and_flags(x: torch.Tensor, available: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return torch.where(available, x, torch.zeros_like(x)), (~available).to(x.dtype)


class PatchEmbedding(nn.Module):
    """Embed each patch of all channels, with its availability indicators, linearly."""

    def __init__(self, n_channels: int, patch_size: int, d_model: int):
        super().__init__()
        self.patch_size = patch_size
        self.proj = nn.Linear(2 * n_channels * patch_size, d_model)

    def forward(self, x: torch.Tensor, available: torch.Tensor) -> torch.Tensor:
        values, flags = _values_and_flags(x, available)
        return self.proj(torch.cat([patchify(values, self.patch_size),
                                    patchify(flags, self.patch_size)], dim=-1))


class ConvEmbedding(nn.Module):
    """Parallel 1D convolutions of several widths, LayerNorm, GELU, then patch merging.

    The branches (kernels ``3, 9, 19, 39`` steps, "same" padding) share ``d_model``
    output channels; a per-step LayerNorm (not BatchNorm: outputs must not depend on
    which series share a batch, nor on padding) and GELU follow, and a convolution of
    kernel and stride ``patch_size`` turns each patch into one token.

    That convolution's windows do not overlap, so it is applied as one matrix product
    over each patch's flattened ``(patch_size, d_model)`` features: the same weights
    and the same function, without transposing the full-resolution features back. On
    CPU the strided convolution's backward pass was the costliest step of a fit on long
    series; as a product, a default PLAID fit takes 147 s instead of 192 s on 2 cores.
    """

    def __init__(self, n_channels: int, patch_size: int, d_model: int,
                 kernels: tuple[int, ...] = CONV_KERNELS):
        super().__init__()
        self.patch_size = patch_size
        widths = [d_model // len(kernels)] * len(kernels)
        widths[0] += d_model - sum(widths)
        self.branches = nn.ModuleList(
            nn.Conv1d(2 * n_channels, w, k, padding=k // 2) for k, w in zip(kernels, widths)
        )
        self.norm = nn.LayerNorm(d_model)
        self.act = nn.GELU()
        self.merge = nn.Conv1d(d_model, d_model, patch_size, stride=patch_size)

    def forward(self, x: torch.Tensor, available: torch.Tensor) -> torch.Tensor:
        h = torch.cat(_values_and_flags(x, available), dim=1)
        h = torch.cat([branch(h) for branch in self.branches], dim=1)
        h = self.act(self.norm(h.transpose(1, 2)))
        n, t, d = h.shape
        weight = self.merge.weight.permute(0, 2, 1).reshape(self.merge.out_channels, -1)
        return F.linear(h.reshape(n, t // self.patch_size, self.patch_size * d), weight,
                        self.merge.bias)


def make_tokenizer(name: str, n_channels: int, patch_size: int, d_model: int) -> nn.Module:
    if name == "patch":
        return PatchEmbedding(n_channels, patch_size, d_model)
    if name == "conv":
        return ConvEmbedding(n_channels, patch_size, d_model)
    raise ValueError(f"tokenizer must be one of {TOKENIZERS}, got {name!r}.")
