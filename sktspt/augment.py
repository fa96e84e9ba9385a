"""Augmentation of training batches: label-preserving variants, and mixup.

A few dozen labelled series are too few for a transformer to learn which differences do
not matter, so each training batch can be replaced by a random variant of itself (never
validation or prediction batches): shifted, scaled and jittered
(:meth:`Augmentation.shift_only`), or rolled where the start point is arbitrary, as on a
closed outline (OSULeaf) or a daily load (:meth:`Augmentation.roll_only`). Draws come from
a ``torch.Generator``, for all series at once; NaN keeps its meaning (missing or padding).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .views import valid_lengths

__all__ = ["AUGMENTS", "MIXUP_KINDS", "Augmentation", "Mixup", "lag1_autocorrelation", "mixup",
           "resolve_mixup", "roll_series", "shift_series"]

#: ``mixup="auto"`` mixes with this ``alpha`` wherever the kind of mix suits the training
#: series: a blend where the median lag-1 autocorrelation is at least :data:`SMOOTH_LAG1`
#: (a blend of two smooth series is another plausible one, of two noisy spectra, ACSF1,
#: not: rounds 17-18), a window (CutMix) anywhere; ``mixup__kind="auto"`` blends smooth
#: series and cuts the others (round 20).
AUTO_MIXUP_ALPHA = 0.4
SMOOTH_LAG1 = 0.9
#: The augmentations a fit can train with (``augment`` besides booleans and ``"auto"``).
AUGMENTS = ("shift", "roll")
#: How :func:`mixup` combines a series with its partner (``mixup_kind``, besides ``"auto"``).
MIXUP_KINDS = ("blend", "cutmix")
#: Values of ``X`` that :func:`lag1_autocorrelation` takes at a time.
_BLOCK_VALUES = 2**22


def shift_series(X: torch.Tensor, fraction: torch.Tensor) -> torch.Tensor:
    """Move series ``i`` of NaN-coded ``X`` ``(n, c, t)`` later by ``round(fraction[i] * L_i)``
    steps (``L_i`` its valid length, which stays): steps shifted in are NaN, values shifted
    past either end are dropped."""
    n, c, t = X.shape
    length = valid_lengths(X)  # (n,)
    steps = torch.round(fraction * length.to(fraction.dtype)).long()
    j = torch.arange(t, device=X.device)
    source = j[None, :] - steps[:, None]  # (n, t)
    inside = (source >= 0) & (source < length[:, None]) & (j[None, :] < length[:, None])
    moved = X.gather(2, source.clamp(0, t - 1)[:, None, :].expand(n, c, t))
    return torch.where(inside[:, None, :], moved, torch.full_like(moved, float("nan")))


def roll_series(X: torch.Tensor, fraction: torch.Tensor) -> torch.Tensor:
    """Roll series ``i`` of NaN-coded ``X`` ``(n, c, t)`` circularly by
    ``floor(fraction[i] * L_i)`` steps within its valid length ``L_i`` (padding stays)."""
    n, c, t = X.shape
    length = valid_lengths(X).clamp(min=1)  # (n,)
    steps = torch.floor(fraction * length.to(fraction.dtype)).long()
    j = torch.arange(t, device=X.device)
    source = torch.remainder(j[None, :] - steps[:, None], length[:, None])
    source = torch.where(j[None, :] < length[:, None], source, j[None, :])
    return X.gather(2, source[:, None, :].expand(n, c, t))


@dataclass(frozen=True)
class Augmentation:
    """Random rolls, shifts, scaling and jitter of a NaN-coded batch ``(n, c, t)``.

    Args:
        scale_std: standard deviation of the per-channel scale factor around 1.
        jitter_std: standard deviation of additive Gaussian noise (normalised units).
        shift: largest shift, a uniform share of each series' valid length either way.
        roll: roll each series by a uniform share of its length, before the shift.
    """

    scale_std: float = 0.1
    jitter_std: float = 0.03
    shift: float = 0.0
    roll: bool = False

    @classmethod
    def shift_only(cls) -> Augmentation:
        """``augment="shift"``: shift by up to 10 % of the length, scale and jitter."""
        return cls(shift=0.1)

    @classmethod
    def roll_only(cls) -> Augmentation:
        """``augment="roll"``: rolls and nothing else."""
        return cls(scale_std=0.0, jitter_std=0.0, roll=True)

    def __post_init__(self):
        if self.scale_std < 0 or self.jitter_std < 0:
            raise ValueError("scale_std and jitter_std must be non-negative.")
        if not 0.0 <= self.shift < 1.0:
            raise ValueError(f"shift must be in [0, 1), got {self.shift!r}.")

    def __call__(self, X: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        n, c, t = X.shape
        kw = dict(generator=generator, device=X.device, dtype=X.dtype)
        if self.roll:
            X = roll_series(X, torch.rand(n, **kw))
        if self.shift > 0:
            X = shift_series(X, self.shift * (2.0 * torch.rand(n, **kw) - 1.0))
        if self.scale_std > 0:
            X = X * (1.0 + self.scale_std * torch.randn(n, c, 1, **kw))
        if self.jitter_std > 0:
            X = X + self.jitter_std * torch.randn(n, c, t, **kw)
        return X


def lag1_autocorrelation(X: np.ndarray) -> float:
    """Median lag-1 autocorrelation over the series and channels of NaN-coded ``X`` ``(n, c, t)``.

    Per series-channel, the Pearson correlation of the observed pairs of steps ``t, t + 1``:
    unlike the textbook estimator, unbiased on short series. Series-channels with fewer than
    three pairs or no variance are left out (0.0 when none is left). Computed by blocks of
    series, so long panels need little memory beyond ``X``.
    """
    X = np.asarray(X)
    n, c, t = X.shape
    block = max(1, _BLOCK_VALUES // max(c * t, 1))
    r = [_lag1_correlations(X[i:i + block]) for i in range(0, n, block)]
    r = np.concatenate(r) if r else np.empty(0)
    return float(np.median(r)) if r.size else 0.0


def _lag1_correlations(X: np.ndarray) -> np.ndarray:
    """The usable series-channels' lag-1 correlations of ``X``, flat."""
    X = X.astype(np.float64)
    a, b = X[..., :-1], X[..., 1:]
    pair = ~(np.isnan(a) | np.isnan(b))
    count = pair.sum(axis=2)
    a, b = np.where(pair, a, 0.0), np.where(pair, b, 0.0)
    with np.errstate(all="ignore"):
        a = np.where(pair, a - (a.sum(axis=2) / count)[..., None], 0.0)
        b = np.where(pair, b - (b.sum(axis=2) / count)[..., None], 0.0)
        var_a, var_b = (a * a).sum(axis=2), (b * b).sum(axis=2)
        r = (a * b).sum(axis=2) / np.sqrt(var_a * var_b)
    return r[(count >= 3) & (var_a > 0) & (var_b > 0)]


@dataclass(frozen=True, kw_only=True)
class Mixup:
    """How mixup mixes: the estimators' ``mixup__`` settings (``kind`` goes to
    :func:`resolve_mixup`).

    Parameters
    ----------
    kind : {"auto", "blend", "cutmix"}
        How mixup combines a series with its partner (:func:`~sktspt.augment.mixup`):
        ``"blend"`` mixes their values; ``"cutmix"`` takes a window of the partner's, which
        keeps each one's local shape where a blend of two oscillations cancels. ``"auto"``:
        a blend where the training series are smooth, else the window (``mixup_kind_``).
    """

    kind: str = "auto"


def resolve_mixup(alpha: float | str, X: np.ndarray, kind: str = "auto") -> tuple[float, str]:
    """The mixup ``(alpha, kind)`` that ``"auto"`` stands for on prepared training panel ``X``
    (see :data:`AUTO_MIXUP_ALPHA`); the autocorrelation is computed only where needed."""
    if kind != "auto" and kind not in MIXUP_KINDS:
        raise ValueError(f"mixup_kind must be one of {MIXUP_KINDS + ('auto',)}, got {kind!r}.")
    smooth = None
    if kind == "auto" or (isinstance(alpha, str) and alpha == "auto" and kind == "blend"):
        smooth = lag1_autocorrelation(X) >= SMOOTH_LAG1
    if kind == "auto":
        kind = "blend" if smooth else "cutmix"
    if isinstance(alpha, str) and alpha == "auto":
        alpha = AUTO_MIXUP_ALPHA if kind == "cutmix" or smooth else 0.0
    return float(alpha), kind


def mixup(
    X: torch.Tensor, alpha: float, generator: torch.Generator, kind: str = "blend"
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Mix each series of ``X`` ``(n, c, t)`` with a partner: ``(mixed, partner, lam)``.

    ``lam ~ Beta(alpha, alpha)`` folded to ``[0.5, 1]``, so every series stays mostly itself;
    the caller mixes the targets by ``lam``. Where the partner is NaN the series keeps its
    value. ``"blend"`` (Zhang et al. 2018): ``lam * X[i] + (1 - lam) * X[partner[i]]``;
    ``"cutmix"`` (Yun et al. 2019, in time): a window of ``1 - lam`` of the valid length
    takes the partner's values, and ``lam`` becomes the share of observed values kept.
    """
    if kind not in MIXUP_KINDS:
        raise ValueError(f"mixup_kind must be one of {MIXUP_KINDS}, got {kind!r}.")
    n = X.shape[0]
    partner = torch.randperm(n, generator=generator, device=generator.device).to(X.device)
    # torch's Beta sampler takes no generator: draw from numpy, seeded by the stream (on a
    # GPU that reads one number back per step, only when mixup is on).
    seed = int(torch.randint(0, 2**62, (1,), generator=generator, device=generator.device))
    lam = np.random.default_rng(seed).beta(alpha, alpha, size=n)
    lam = torch.as_tensor(np.maximum(lam, 1.0 - lam), dtype=X.dtype, device=X.device)
    other = X[partner]
    if kind == "cutmix":
        mixed, kept = _cutmix(X, other, lam, generator)
        return mixed, partner, kept
    mixed = lam[:, None, None] * X + (1.0 - lam[:, None, None]) * other
    return torch.where(torch.isnan(other), X, mixed), partner, lam


def _cutmix(X: torch.Tensor, other: torch.Tensor, lam: torch.Tensor,
            generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """``X`` with a run of ``1 - lam`` of each series' valid length, at a random start, from
    ``other``; and the share of its values kept."""
    length = valid_lengths(X).to(X.dtype)
    width = torch.round((1.0 - lam) * length)
    u = torch.rand(X.shape[0], generator=generator, device=generator.device).to(X.device)
    start = torch.floor(u * (length - width + 1))
    steps = torch.arange(X.shape[2], device=X.device, dtype=X.dtype)[None, :]
    window = ((steps >= start[:, None]) & (steps < (start + width)[:, None]))[:, None, :]
    window = window & ~torch.isnan(other) & ~torch.isnan(X)
    observed = (~torch.isnan(X)).sum(dim=(1, 2)).clamp_min(1).to(X.dtype)
    kept = 1.0 - window.sum(dim=(1, 2)).to(X.dtype) / observed
    return torch.where(window, other, X), kept
