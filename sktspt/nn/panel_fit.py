"""Buffers fitted to the training panel before training starts.

Some modules hold statistics of the training data rather than trained weights: the
rocket tokenizer's thresholds (:mod:`sktspt.nn.tokenizers`). A module that needs them defines
``fit_panel(x, available)``; the estimators call :func:`fit_to_panel` once on a fresh
network, before pretraining (or before fine-tuning from scratch), and the buffers are
then saved and loaded with the weights.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

__all__ = ["fit_to_panel", "fit_panel_tensors"]


def fit_to_panel(module: nn.Module, X: np.ndarray) -> None:
    """Call ``fit_panel`` of every submodule of ``module`` that has one, on the panel ``X``.

    ``X`` is NaN-coded ``(n, c, t)`` as the estimators prepare it. Outermost modules
    come first and their submodules are skipped: a module whose children must be
    fitted in order fits them itself (the encoder fits its tokenizer).
    """
    if not any(callable(getattr(sub, "fit_panel", None)) for sub in module.modules()):
        return  # nothing to fit: no float32 copy of the panel
    X = torch.as_tensor(np.asarray(X, dtype=np.float32))
    available = ~torch.isnan(X)
    fit_panel_tensors(module, torch.nan_to_num(X, nan=0.0), available)


def fit_panel_tensors(module: nn.Module, x: torch.Tensor, available: torch.Tensor) -> None:
    """:func:`fit_to_panel` on values ``x`` (zeros where missing) and ``available``."""
    fitted: list[str] = []
    for name, sub in module.named_modules():
        if any(p == "" or name.startswith(p + ".") for p in fitted):
            continue
        if not callable(getattr(sub, "fit_panel", None)):
            continue
        sub.fit_panel(x, available)
        fitted.append(name)
