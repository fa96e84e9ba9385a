"""Normalisation of the panels the estimators see: per series or with global statistics.

:func:`resolve_normalization` decides what ``normalize="auto"`` means for a training panel;
:class:`Normalizer` fits the statistics and applies them, with NaN (unobserved values)
left as it is.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["CLIP", "Normalizer", "SCALE_SPREAD_LIMIT", "resolve_normalization"]


#: Above this spread of per-series scales (90th / 10th percentile of the standard
#: deviations, in any channel) one global scale cannot serve every series.
SCALE_SPREAD_LIMIT = 1000.0


def resolve_normalization(mode: str | None, X: np.ndarray) -> str | None:
    """The normalisation ``mode="auto"`` stands for on training panel ``X``: ``"instance"``
    where the series' scales spread over more than three orders of magnitude (PLAID's span
    five; global statistics would squash the quiet series), else ``"global"``, which keeps
    the amplitude differences that often carry the class."""
    if mode != "auto":
        return mode
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        std = np.nanstd(X.astype(np.float64), axis=2)  # (n, c)
        low, high = np.nanpercentile(std, [10, 90], axis=0)
    spread = np.nan_to_num(high / np.maximum(low, np.finfo(np.float64).tiny), nan=1.0)
    return "instance" if spread.max() > SCALE_SPREAD_LIMIT else "global"


#: Normalised values are clipped to ``[-CLIP, CLIP]`` standard deviations, so that any
#: finite input, however extreme, reaches the network as a finite, moderate number.
CLIP = 1e4


def _floor(std: np.ndarray, magnitude: np.ndarray, eps: float, relative: bool) -> np.ndarray:
    """``std`` floored at ``eps`` (absolute) or ``eps * magnitude`` (relative, per entry)."""
    std = np.nan_to_num(np.asarray(std, dtype=np.float64))
    if not relative:
        return np.maximum(std, eps)
    magnitude = np.nan_to_num(np.asarray(magnitude, dtype=np.float64))
    # A series or channel that is 0 everywhere has no scale: any floor gives 0 for it.
    floor = np.where(magnitude > 0, eps * magnitude, 1.0)
    return np.maximum(std, np.maximum(floor, np.finfo(np.float64).tiny))


class Normalizer:
    """Per-channel standardisation: ``"global"`` statistics of the training panel's observed
    values, each series on its own (``"instance"``), or none (None).

    The standard deviation is floored at ``eps`` times the channel's (or series') largest
    absolute value (``floor="relative"``: ``transform(c * X) == transform(X)`` for
    ``c > 0``), or at ``eps`` (``"absolute"``, files of older sktspt). Computed in float64
    and clipped to ``[-CLIP, CLIP]``, so finite inputs of any magnitude stay finite.
    """

    def __init__(self, mode: str | None = "global", eps: float = 1e-6, floor: str = "relative"):
        if mode not in ("global", "instance", None):
            raise ValueError(
                f"normalize must be 'auto', 'global', 'instance' or None, got {mode!r}."
            )
        if floor not in ("relative", "absolute"):
            raise ValueError(f"floor must be 'relative' or 'absolute', got {floor!r}.")
        self.mode = mode
        self.eps = eps
        self.floor = floor

    def fit(self, X: np.ndarray) -> Normalizer:
        if self.mode == "global":
            relative = self.floor == "relative"
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                # In float64, one channel at a time: float32 sums and squares overflow on
                # large values (and lose precision on long series).
                mean, std = [], []
                for i in range(X.shape[1]):
                    values = X[:, i].astype(np.float64)
                    mean.append(np.nanmean(values))
                    std.append(_floor(np.nanstd(values), np.nanmax(np.abs(values)),
                                      self.eps, relative))
            self.mean_ = np.nan_to_num(np.array(mean)).astype(np.float32)
            std = np.array(std, dtype=np.float32)
            # float32 rounding must not bring a floored value back to 0.
            self.std_ = np.maximum(std, np.finfo(np.float32).smallest_subnormal)
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        if self.mode is None:
            return X
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            X = np.asarray(X, dtype=np.float64)  # float32 squares and quotients overflow
            if self.mode == "global":
                mean = self.mean_.astype(np.float64)[None, :, None]
                std = self.std_.astype(np.float64)[None, :, None]
            else:
                mean = np.nan_to_num(np.nanmean(X, axis=2, keepdims=True))
                magnitude = np.nanmax(np.abs(X), axis=2, keepdims=True)
                std = _floor(np.nanstd(X, axis=2, keepdims=True), magnitude, self.eps,
                             self.floor == "relative")
            Z = (X - mean) / std
        return np.clip(Z, -CLIP, CLIP).astype(np.float32)

    def state(self) -> dict:
        """Fitted statistics as plain lists, for JSON persistence."""
        if self.mode != "global":
            return {"mode": self.mode}
        return {"mode": self.mode, "mean": self.mean_.tolist(), "std": self.std_.tolist()}
