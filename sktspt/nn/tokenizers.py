"""Tokenizers: how a series ``(n, c, t)`` becomes tokens ``(n, t / p, d_model)``.

Each sees values with hidden or missing entries set to zero plus a 0/1 *not available*
indicator per value (Amos et al. 2024), and makes one token per ``patch_size`` steps, so
masking, padding and the reconstruction head work the same whatever the tokenizer.

- ``"patch"``: one linear map of each patch of all channels (PatchTST-style).
- ``"conv"``: a multi-scale convolutional stem, then a strided convolution that merges
  each patch into a token: local shapes become features before attention sees them.
- ``"rocket"``: MiniRocket's fixed kernels, their PPV pooled per patch: not trained, so
  the stem cannot over-fit a few dozen series (:class:`RocketEmbedding`).
"""

from __future__ import annotations

import itertools
import math

import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["TOKENIZERS", "PatchEmbedding", "ConvEmbedding", "RocketEmbedding", "make_tokenizer",
           "patchify", "unpatchify"]

TOKENIZERS = ("patch", "conv", "rocket")
CONV_KERNELS = (3, 9, 19, 39)
#: Steps past a series' end that its last token's features can see (the widest kernel's
#: half-width; a patch token sees none past its own patch).
STEM_REACH = max(CONV_KERNELS) // 2
#: Most floats one series' stem windows may take before the stem runs as convolutions
#: (4 MB: a 1,460-step univariate series takes 114,000).
IM2COL_MAX = 2**20


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

    The branches (kernels ``3, 9, 19, 39``, "same" padding) share ``d_model`` channels; a
    per-step LayerNorm (outputs must not depend on the batch or the padding) and GELU
    follow, and a convolution of kernel and stride ``patch_size`` makes each token. Both
    run as matrix products (18 % off a fit on ACSF1, round 21): the branches on each step's
    window of the widest kernel (im2col, up to :data:`IM2COL_MAX` floats a series, else as
    a convolution), the merge on each patch's flattened features.
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

    def stem(self, h: torch.Tensor) -> torch.Tensor:
        """The branches' outputs, time-major: ``(n, 2c, t)`` -> ``(n, t, d_model)``."""
        width = max(branch.kernel_size[0] for branch in self.branches)  # as one kernel:
        weight = torch.cat([F.pad(b.weight, ((width - b.kernel_size[0]) // 2,) * 2)
                            for b in self.branches])
        bias = torch.cat([branch.bias for branch in self.branches])
        d, c2, width = weight.shape
        n, _, t = h.shape
        if t * c2 * width > IM2COL_MAX:
            return F.conv1d(h, weight, bias, padding=width // 2).transpose(1, 2)
        # Time-major and padded, each step's window is ``width * 2c`` consecutive floats:
        # a strided view, copied row by row, not a gather.
        padded = F.pad(h, (width // 2, width // 2)).transpose(1, 2).contiguous()
        windows = padded.as_strided((n, t, width * c2), (padded.shape[1] * c2, c2, 1))
        return F.linear(windows, weight.permute(0, 2, 1).reshape(d, width * c2), bias)

    def forward(self, x: torch.Tensor, available: torch.Tensor) -> torch.Tensor:
        h = self.act(self.norm(self.stem(torch.cat(_values_and_flags(x, available), dim=1))))
        n, t, d = h.shape
        weight = self.merge.weight.permute(0, 2, 1).reshape(self.merge.out_channels, -1)
        return F.linear(h.reshape(n, t // self.patch_size, self.patch_size * d), weight,
                        self.merge.bias)


#: MiniRocket's 84 kernels: nine taps, weight 2 at three of them and -1 at the other six.
ROCKET_TAPS = tuple(itertools.combinations(range(9), 3))
#: Dilations per kernel, spaced exponentially from 1 to the longest that fits the series.
ROCKET_DILATIONS = 8
#: Series the thresholds are drawn from (enough for the draws, bounded memory).
ROCKET_FIT_SERIES = 64


def rocket_dilations(max_len: int, n_dilations: int = ROCKET_DILATIONS) -> tuple[int, ...]:
    """Distinct dilations ``2**e`` (floored), ``e`` evenly from 0 to ``log2((L - 1) / 8)``.

    The widest kernel (nine taps) then spans the whole series, as in MiniRocket.
    """
    top = math.log2(max(1.0, (max_len - 1) / 8))
    steps = max(1, n_dilations - 1)
    return tuple(sorted({int(2 ** (top * i / steps)) for i in range(n_dilations)}))


class RocketEmbedding(nn.Module):
    """MiniRocket's fixed kernels, thresholded and pooled per patch, then a linear map.

    Per channel, the 84 kernels of :data:`ROCKET_TAPS` run at each dilation of
    :func:`rocket_dilations` (zero padding). Each (dilation, channel, kernel) has a
    threshold drawn from the training panel (:meth:`fit_panel`). A token holds, for each,
    the mean over its patch of ``sign(response - threshold)`` (``2 * PPV - 1``), and each
    channel's share of unavailable steps, through a LayerNorm and a linear map: only those
    two are trained. Responses are float32 whatever the autocast (a threshold compares them).
    """

    def __init__(self, n_channels: int, patch_size: int, d_model: int, max_len: int = 0,
                 n_dilations: int = ROCKET_DILATIONS):
        super().__init__()
        self.patch_size = patch_size
        self.dilations = rocket_dilations(max(int(max_len), patch_size), n_dilations)
        kernels = torch.full((len(ROCKET_TAPS), 1, 9), -1.0)
        for i, taps in enumerate(ROCKET_TAPS):
            kernels[i, 0, list(taps)] = 2.0
        self.register_buffer("kernels", kernels)
        rows = n_channels * len(ROCKET_TAPS)
        self.register_buffer("threshold", torch.zeros(len(self.dilations), rows))
        features = len(self.dilations) * rows + n_channels
        self.norm = nn.LayerNorm(features)
        self.proj = nn.Linear(features, d_model)

    def _responses(self, values: torch.Tensor, dilation: int) -> torch.Tensor:
        """``(n, c, t)`` -> ``(n, c, t, 84)``: every kernel on every channel, as one matrix
        product of each step's nine dilated taps (1.4-1.8 times ``conv1d``'s speed on CPU)."""
        n, c, t = values.shape
        padded = F.pad(values.reshape(n * c, t), (4 * dilation, 4 * dilation)).contiguous()
        windows = padded.as_strided((n * c, t, 9), (padded.shape[1], 1, dilation))
        return torch.mm(windows.reshape(n * c * t, 9), self.kernels[:, 0].t()).view(
            n, c, t, len(ROCKET_TAPS))

    @torch.no_grad()
    def fit_panel(self, x: torch.Tensor, available: torch.Tensor) -> None:
        """Draw each threshold as a quantile (golden-ratio sequence) of one kernel's responses
        on one random training series, at its available steps (MiniRocket's draw)."""
        values = torch.where(available, x, torch.zeros_like(x)).float()
        pick = torch.randperm(len(values))[:ROCKET_FIT_SERIES]
        values, ok = values[pick], available[pick]
        rows = self.threshold.shape[1]
        channel = torch.arange(rows) // len(ROCKET_TAPS)
        golden = (math.sqrt(5) - 1) / 2
        for j, dilation in enumerate(self.dilations):
            z = self._responses(values, dilation).transpose(2, 3).reshape(len(values), rows, -1)
            series = torch.randint(0, len(values), (rows,))
            valid = ok[series, channel]
            z = torch.where(valid, z[series, torch.arange(rows)], math.inf).sort(dim=1).values
            count = valid.sum(dim=1).clamp_min(1)
            q = ((torch.arange(rows) + j * rows + 1) * golden) % 1.0
            at = (q * (count - 1)).floor().long()
            drawn = z[torch.arange(rows), at]
            self.threshold[j] = torch.where(torch.isfinite(drawn), drawn, 0.0)

    def features(self, x: torch.Tensor, available: torch.Tensor) -> torch.Tensor:
        """The pooled threshold features ``(n, k, features)``, before the trained maps."""
        values, flags = _values_and_flags(x, available)
        n, c, t = values.shape
        p, kernels = self.patch_size, len(ROCKET_TAPS)
        k, rows = t // p, c * kernels
        with torch.autocast(x.device.type, enabled=False):
            values = values.float()
            # Each dilation's pooled block is summed straight into its columns of one
            # output, and the scale applied in place: no concatenated copy.
            out = torch.empty(n, k, len(self.dilations) * rows + c, device=x.device)
            for j, dilation in enumerate(self.dilations):
                z = self._responses(values, dilation)
                z.sub_(self.threshold[j].view(1, c, 1, -1)).sign_()
                block = out[:, :, j * rows:(j + 1) * rows].unflatten(2, (c, kernels))
                torch.sum(z.view(n, c, k, p, kernels).permute(0, 2, 1, 3, 4), dim=3, out=block)
            out[:, :, -c:] = 2 * flags.float().reshape(n, c, k, p).sum(-1).mT
            return out.div_(p)

    def forward(self, x: torch.Tensor, available: torch.Tensor) -> torch.Tensor:
        return self.proj(self.norm(self.features(x, available)))

    def extra_repr(self) -> str:
        return f"dilations={self.dilations}, patch_size={self.patch_size}"


def make_tokenizer(name: str, n_channels: int, patch_size: int, d_model: int,
                   max_len: int = 0) -> nn.Module:
    """The tokenizer ``name``; ``max_len`` (the longest padded series) sets the rocket's
    dilations."""
    if name == "patch":
        return PatchEmbedding(n_channels, patch_size, d_model)
    if name == "conv":
        return ConvEmbedding(n_channels, patch_size, d_model)
    if name == "rocket":
        return RocketEmbedding(n_channels, patch_size, d_model, max_len)
    raise ValueError(f"tokenizer must be one of {TOKENIZERS}, got {name!r}.")
