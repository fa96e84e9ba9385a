"""Prediction in passes of fixed shape, so that each series' output depends on it alone.

CPU matrix-multiply kernels pick their summation order from the shape of the whole
product: a series computed alone came out up to 3e-4 apart (relative) from the same series
among 20. So series are grouped by their own token count (:func:`token_groups`) and each
group runs in batches of exactly :data:`INFERENCE_BATCH` series (the last filled with zero
series): each row of the result depends on its own series only (:func:`infer`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

import numpy as np
import torch

from ._concurrency import settle_eval

__all__ = ["INFERENCE_BATCH", "infer", "token_buckets", "token_groups"]

#: Series per forward pass at prediction: fixed, so that results do not depend on which
#: series are predicted together.
INFERENCE_BATCH = 64


def token_buckets(X: np.ndarray, patch_size: int, max_tokens: int) -> np.ndarray:
    """Tokens of the pass each series of prepared ``X`` runs in: ``max_tokens`` (the training
    length), or that times the power of two that holds a longer series."""
    p, base = patch_size, max(1, int(max_tokens))
    t = X.shape[2]
    observed = ~np.isnan(X).all(axis=1)  # (n, t); every series has an observed value
    tokens = np.ceil((t - np.argmax(observed[:, ::-1], axis=1)) / p)
    return np.where(
        tokens <= base, base, base * 2.0 ** np.ceil(np.log2(np.maximum(tokens, 1) / base))
    ).astype(np.int64)


def token_groups(
    X: np.ndarray, patch_size: int, max_tokens: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``(rows, series)`` per token bucket, cut or NaN-padded to the bucket's length."""
    p = patch_size
    t = X.shape[2]
    buckets = token_buckets(X, patch_size, max_tokens)
    for length in np.unique(buckets) * p:
        rows = np.flatnonzero(buckets * p == length)
        group = X[rows, :, : min(t, length)]
        if length > t:
            group = np.pad(group, ((0, 0), (0, 0), (0, length - t)), constant_values=np.nan)
        yield rows, group


def infer(
    forward: Callable[[torch.Tensor], torch.Tensor], module: torch.nn.Module, X: np.ndarray, *,
    patch_size: int, max_tokens: int, device, autocast: AbstractContextManager,
) -> np.ndarray:
    """``forward`` on prepared ``X`` (float64 rows), ``module`` in evaluation mode.

    Shape:
        - X: ``(n, channels, time)``, normalised and NaN-padded as the network takes it.
        - output: ``(n, *out)`` where ``forward`` returns ``(batch, *out)``.
    """
    n, c, _ = X.shape
    out = None
    settle_eval(module)
    with torch.no_grad(), autocast:
        for rows, group in token_groups(X, patch_size, max_tokens):
            length = group.shape[2]
            for start in range(0, len(rows), INFERENCE_BATCH):
                chunk = group[start : start + INFERENCE_BATCH]
                m = len(chunk)
                if m < INFERENCE_BATCH:
                    filler = np.zeros((INFERENCE_BATCH - m, c, length), dtype=X.dtype)
                    chunk = np.concatenate([chunk, filler])
                xb = torch.from_numpy(np.ascontiguousarray(chunk)).to(device)
                res = forward(xb)[:m].double().cpu().numpy()
                if out is None:
                    out = np.empty((n, *res.shape[1:]), dtype=np.float64)
                out[rows[start : start + m]] = res
    return out
