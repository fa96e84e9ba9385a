"""Buffers fitted to the training panel before training starts.

Some modules hold statistics of the training data rather than trained weights: the
rocket tokenizer's thresholds (:mod:`sktspt.nn.tokenizers`). Such a module defines
``fit_panel(x, available)``; the estimators call :func:`fit_to_panel` once on a fresh
network, and the buffers are then saved and loaded with the weights.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

__all__ = ["fit_to_panel"]


def fit_to_panel(module: nn.Module, X: np.ndarray) -> None:
    """Call ``fit_panel`` of every submodule of ``module`` that has one, on NaN-coded ``X``
    ``(n, c, t)``: values with zeros where missing, and which are available."""
    subs = [sub for sub in module.modules() if callable(getattr(sub, "fit_panel", None))]
    if subs:  # else no float32 copy of the panel
        X = torch.as_tensor(np.asarray(X, dtype=np.float32))
        available = ~torch.isnan(X)
        x = torch.nan_to_num(X, nan=0.0)
        for sub in subs:
            sub.fit_panel(x, available)
