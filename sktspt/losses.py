"""Training objectives."""

from __future__ import annotations

import torch

__all__ = ["masked_reconstruction_loss"]


def masked_reconstruction_loss(
    reconstruction: torch.Tensor, X: torch.Tensor, hidden: torch.Tensor, kind: str = "mse"
) -> torch.Tensor:
    """Error on the values that were hidden *and* observed; padding and gaps never count.

    ``X`` is the NaN-coded input; ``hidden`` the mask that was applied. Returns 0 (with
    a gradient path) when a batch happens to hide nothing.
    """
    target_mask = hidden & ~torch.isnan(X)
    target = torch.nan_to_num(X, nan=0.0)
    diff = reconstruction.float() - target.float()
    err = diff.abs() if kind == "l1" else diff.square()
    w = target_mask.to(err.dtype)
    return (err * w).sum() / w.sum().clamp_min(1.0)
