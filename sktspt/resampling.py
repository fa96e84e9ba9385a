"""Resampling series of any length onto a fixed number of steps.

A pretrained encoder meets series from 15 to thousands of steps; resampled to one length
(``tokenizer__length``), each makes the same tokens whatever its length, so the tokens
do not depend on a patch size chosen for one dataset.
"""

from __future__ import annotations

import numpy as np

__all__ = ["resample"]


def resample(X: np.ndarray, length: int) -> np.ndarray:
    """NaN-padded ``(n, c, t)`` -> ``(n, c, length)``: each series' observed part linearly
    interpolated onto ``length`` steps, gaps too (zeros where a channel has no value)."""
    X = np.asarray(X)
    observed = ~np.isnan(X).all(axis=1)  # (n, t)
    lengths = np.where(observed.any(axis=1), X.shape[-1] - np.argmax(observed[:, ::-1], axis=1), 1)
    grid = np.linspace(0.0, 1.0, length)
    out = np.zeros((X.shape[0], X.shape[1], length))
    for i, n_valid in enumerate(lengths.tolist()):
        steps = np.linspace(0.0, 1.0, n_valid)
        for ch in range(X.shape[1]):
            s = X[i, ch, :n_valid].astype(np.float64)
            seen = np.isfinite(s)
            if seen.any():
                out[i, ch] = np.interp(grid, steps[seen], s[seen])
    return out
