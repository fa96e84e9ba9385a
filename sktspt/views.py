"""Random views of time series for LeJEPA pretraining.

A view is a random crop of the series resampled (linear interpolation) to the
series' own length, with every channel scaled by a factor drawn from
``N(1, scale_std)`` and Gaussian jitter added. *Global* views crop 60-100 % of the
series, *local* views 20-50 %: predicting the global centre from a local view asks the
encoder to infer the whole from a part, at a coarser time scale.

Everything is drawn for all views and series at once with one torch generator, so
views are vectorised and reproducible. NaN keeps its meaning (missing or padding):
a series' padding tail stays padding, and an interpolated value is missing when a
neighbour it depends on is missing.
"""

from __future__ import annotations

import torch

__all__ = ["crop_resample", "make_views", "valid_lengths"]


def valid_lengths(X: torch.Tensor) -> torch.Tensor:
    """Per series, one past the last time step observed in any channel (at least 1)."""
    observed = ~torch.isnan(X).all(dim=1)  # (n, t)
    steps = torch.arange(1, X.shape[-1] + 1, device=X.device)
    return (observed * steps).amax(dim=-1).clamp_min(1)


def crop_resample(X: torch.Tensor, fraction: torch.Tensor, start: torch.Tensor) -> torch.Tensor:
    """Crop each series of NaN-coded ``X`` ``(n, c, t)`` and stretch the crop back over its
    valid length ``L``.

    Args:
        fraction: ``(n,)`` crop lengths, shares of ``L`` in ``(0, 1]``.
        start: ``(n,)`` crop starts, shares of the room left in ``[0, 1]``.

    Output step ``j < L`` samples the input at ``start * (1 - fraction) * (L - 1) +
    fraction * j``; steps ``j >= L`` stay NaN.
    """
    n, c, t = X.shape
    length = valid_lengths(X).to(X.dtype)  # (n,)
    offset = start * (1.0 - fraction) * (length - 1)
    j = torch.arange(t, device=X.device, dtype=X.dtype)
    pos = offset[:, None] + fraction[:, None] * j[None, :]  # (n, t)
    pos = torch.minimum(pos, (length - 1)[:, None])
    i0 = pos.floor().long().clamp(0, t - 1)
    i1 = (i0 + 1).clamp(max=t - 1)
    w = (pos - i0.to(X.dtype))[:, None, :]  # (n, 1, t)
    x0 = X.gather(2, i0[:, None, :].expand(n, c, t))
    x1 = X.gather(2, i1[:, None, :].expand(n, c, t))
    missing = (torch.isnan(x0) & (w < 1)) | (torch.isnan(x1) & (w > 0))
    out = (1 - w) * torch.nan_to_num(x0) + w * torch.nan_to_num(x1)
    padding = (j[None, :] >= length[:, None])[:, None, :]
    return out.masked_fill(missing | padding, float("nan"))


def make_views(
    X: torch.Tensor,
    n_global: int = 2,
    n_local: int = 2,
    generator: torch.Generator | None = None,
    global_crop: tuple[float, float] = (0.6, 1.0),
    local_crop: tuple[float, float] = (0.2, 0.5),
    scale_std: float = 0.1,
    jitter_std: float = 0.05,
) -> torch.Tensor:
    """``n_global + n_local`` views ``(v, n, c, t)`` of NaN-coded ``X`` ``(n, c, t)``, global
    views first: crops of ``global_crop`` or ``local_crop`` shares of each series' valid
    length, per-channel scales from ``N(1, scale_std)`` and jitter ``N(0, jitter_std)``,
    drawn from ``generator`` (None: torch's global one)."""
    if int(n_global) < 1 or int(n_local) < 0:
        raise ValueError(f"need n_global >= 1 and n_local >= 0, got {n_global!r} and {n_local!r}.")
    for name, (low, high) in (("global_crop", global_crop), ("local_crop", local_crop)):
        if not 0.0 < low <= high <= 1.0:
            raise ValueError(f"{name} must satisfy 0 < low <= high <= 1, got {(low, high)!r}.")
    if scale_std < 0 or jitter_std < 0:
        raise ValueError("scale_std and jitter_std must be non-negative.")
    n, c, t = X.shape
    v = int(n_global) + int(n_local)
    kw = dict(generator=generator, device=X.device, dtype=X.dtype)
    is_global = (torch.arange(v, device=X.device) < int(n_global))[:, None]  # (v, 1)
    low = torch.where(is_global, global_crop[0], local_crop[0]).to(X.dtype)
    high = torch.where(is_global, global_crop[1], local_crop[1]).to(X.dtype)
    fraction = low + (high - low) * torch.rand(v, n, **kw)
    start = torch.rand(v, n, **kw)
    tiled = X.unsqueeze(0).expand(v, n, c, t).reshape(v * n, c, t)
    views = crop_resample(tiled, fraction.reshape(-1), start.reshape(-1)).reshape(v, n, c, t)
    scale = 1.0 + scale_std * torch.randn(v, n, c, 1, **kw)
    return views * scale + jitter_std * torch.randn(v, n, c, t, **kw)
