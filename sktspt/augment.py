"""Label-preserving augmentation of training batches.

A few dozen labelled series are too few for a transformer to learn which differences
do not matter. Each training batch can therefore be replaced by a random variant of
itself. :meth:`Augmentation.shift_only` moves each series in time by up to 10 % of its
length (the steps shifted in are NaN, i.e. not observed), scales every channel by a factor
from ``N(1, scale_std)`` and adds Gaussian jitter: the class of a series survives all
three, its exact alignment, amplitude and noise do not. :meth:`Augmentation.roll_only`
turns each series circularly by a uniform share of its length, for data whose start point
is arbitrary: a closed outline traced from any point (OSULeaf), a daily load whose events
fall at any hour (ACSF1). Validation and prediction batches are never augmented.
(Stretching a random window back to the series' length was removed in 0.5: it changes a
series' frequency content, which is the class on datasets such as ACSF1,
``docs/tuning-history.md``.)

Draws come from a ``torch.Generator``, for all series at once, so a seeded fit is
reproducible. NaN keeps its meaning (missing or padding), as in :mod:`sktspt.views`.
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
#: (a blend of two smooth series is another plausible smooth series, a blend of two noisy
#: spectra, ACSF1, is not: ``docs/tuning-history.md``, rounds 17-18), a window (CutMix) anywhere.
#: ``mixup_kind="auto"`` blends smooth series and cuts the others (round 20).
AUTO_MIXUP_ALPHA = 0.4
SMOOTH_LAG1 = 0.9
#: The augmentations a fit can train with (``augment`` besides booleans and ``"auto"``).
AUGMENTS = ("shift", "roll")
#: How :func:`mixup` combines a series with its partner (``mixup_kind``, besides ``"auto"``).
MIXUP_KINDS = ("blend", "cutmix")
#: Values of ``X`` that :func:`lag1_autocorrelation` takes at a time.
_BLOCK_VALUES = 2**22


def shift_series(X: torch.Tensor, fraction: torch.Tensor) -> torch.Tensor:
    """Move each series of NaN-coded ``X`` ``(n, c, t)`` in time by ``fraction`` ``(n,)``.

    Series ``i`` moves by ``round(fraction[i] * L_i)`` steps (``L_i`` its valid length;
    positive is later). Steps shifted in are NaN, values shifted past either end are
    dropped, and the padding beyond ``L_i`` stays NaN, so the valid length is unchanged.
    """
    n, c, t = X.shape
    length = valid_lengths(X)  # (n,)
    steps = torch.round(fraction * length.to(fraction.dtype)).long()
    j = torch.arange(t, device=X.device)
    source = j[None, :] - steps[:, None]  # (n, t)
    inside = (source >= 0) & (source < length[:, None]) & (j[None, :] < length[:, None])
    moved = X.gather(2, source.clamp(0, t - 1)[:, None, :].expand(n, c, t))
    return torch.where(inside[:, None, :], moved, torch.full_like(moved, float("nan")))


def roll_series(X: torch.Tensor, fraction: torch.Tensor) -> torch.Tensor:
    """Turn each series of NaN-coded ``X`` ``(n, c, t)`` circularly by ``fraction`` ``(n,)``.

    Series ``i`` rolls by ``floor(fraction[i] * L_i)`` steps within its valid length
    ``L_i``: nothing is lost or invented, and the padding beyond ``L_i`` stays NaN.
    """
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

    Parameters
    ----------
    scale_std : float
        Standard deviation of the per-channel scale factor around 1.
    jitter_std : float
        Standard deviation of additive Gaussian noise, in normalised units.
    shift : float
        Largest shift in time, as a fraction of each series' valid length; each series
        moves by a uniform whole number of steps in ``[-shift, shift]`` of its length.
    roll : bool
        Turn each series circularly by a uniform share of its valid length
        (:func:`roll_series`), before the shift.
    """

    scale_std: float = 0.1
    jitter_std: float = 0.03
    shift: float = 0.0
    roll: bool = False

    @classmethod
    def shift_only(cls) -> Augmentation:
        """Shift by up to 10 % of the length, scale and jitter."""
        return cls(shift=0.1)

    @classmethod
    def roll_only(cls) -> Augmentation:
        """Turn each series circularly by a uniform share of its length, and nothing else."""
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

    For each series-channel, the Pearson correlation of its observed values with their
    next observed neighbours (pairs of steps ``t, t + 1`` both observed). Unlike the
    textbook estimator (one mean and variance for the whole series) it is not biased
    towards 0 on short series, so 24-step and 500-step series of one smoothness score
    alike. Series-channels with fewer than three pairs or no variance are left out; 0.0
    when none is left. Computed a block of series at a time, so long panels need little
    memory beyond ``X``.
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
        How mixup combines a series with its partner: ``"blend"`` mixes their values;
        ``"cutmix"`` replaces a window of ``1 - lam`` of the series by the partner's values
        there and weighs the targets by the share kept (:func:`~sktspt.augment.mixup`), which
        keeps each series' local shape where a blend of two oscillations cancels. ``"auto"``:
        a blend where the training series are smooth (as for ``mixup="auto"``), else the
        window (``mixup_kind_``). Only used where ``mixup`` (or ``mixup_``) is above 0.
    """

    kind: str = "auto"


def resolve_mixup(alpha: float | str, X: np.ndarray, kind: str = "auto") -> tuple[float, str]:
    """The mixup ``(alpha, kind)`` that ``"auto"`` stands for on prepared training panel ``X``.

    ``kind="auto"`` is ``"blend"`` for smooth series (:func:`lag1_autocorrelation` at
    least :data:`SMOOTH_LAG1`), else ``"cutmix"``. ``alpha="auto"`` is
    :data:`AUTO_MIXUP_ALPHA` where the series are smooth or the kind is ``"cutmix"``, else
    0.0 (rough series are not blended). Numbers are returned as floats; the
    autocorrelation is computed only where an ``"auto"`` needs it.
    """
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
    """Mix each series of ``X`` ``(n, c, t)`` with another of the batch.

    Not label-preserving: the caller mixes the targets with the returned weights
    ``lam``. A partner is drawn for every series and ``lam ~ Beta(alpha, alpha)``,
    folded to ``[0.5, 1]``, so every series stays mostly itself (its own valid length and
    padding). Where the partner is NaN (shorter, or missing there) the series keeps its
    own value. Returns ``(mixed, partner, lam)``.

    ``kind="blend"`` (mixup, Zhang et al. 2018): series ``i`` becomes
    ``lam[i] * X[i] + (1 - lam[i]) * X[partner[i]]``. ``kind="cutmix"`` (Yun et al. 2019,
    here in time): a window of ``1 - lam[i]`` of series ``i``'s valid length, at a random
    place, is replaced by the partner's values there, and ``lam[i]`` becomes the share of
    its observed values that it kept. A blend of two oscillations of different phase
    mostly cancels; a window keeps each one's local shape.
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


def _window(X: torch.Tensor, lam: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """``(n, 1, t)``: per series a run of ``1 - lam`` of its valid length, at a random start."""
    length = valid_lengths(X).to(X.dtype)
    width = torch.round((1.0 - lam) * length)
    u = torch.rand(X.shape[0], generator=generator, device=generator.device).to(X.device)
    start = torch.floor(u * (length - width + 1))
    steps = torch.arange(X.shape[2], device=X.device, dtype=X.dtype)[None, :]
    return ((steps >= start[:, None]) & (steps < (start + width)[:, None]))[:, None, :]


def _cutmix(X: torch.Tensor, other: torch.Tensor, lam: torch.Tensor,
            generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """``X`` with each series' window from ``other``, and the share of its values kept."""
    window = _window(X, lam, generator) & ~torch.isnan(other) & ~torch.isnan(X)
    observed = (~torch.isnan(X)).sum(dim=(1, 2)).clamp_min(1).to(X.dtype)
    kept = 1.0 - window.sum(dim=(1, 2)).to(X.dtype) / observed
    return torch.where(window, other, X), kept
