"""Is a series' start point arbitrary? Training-data evidence for ``augment="auto"``.

Rolls (``augment="roll"``) gained OSULeaf 4-7.5 points in training-split CV and cost ACSF1
13 (round 25), so whether to roll is decided from the training data: where
:func:`alignment_gain` (a screen of about a second) finds that circular alignment does not
help a nearest neighbour, rolls are not tried; where it does, the classifier fine-tunes
both ways on a held-out split and keeps the better (``SPTClassifier._choose_augment``).
"""

from __future__ import annotations

import numpy as np
import torch

from .resampling import resample
from .views import valid_lengths

__all__ = ["alignment_gain", "loo_accuracy", "shift_distances", "znorm"]

#: The screen looks at most this many series (a random subset) ...
SCREEN_SERIES = 256
#: ... each resampled to at most this many steps, so it stays a second or two.
SCREEN_LENGTH = 512


def znorm(X: np.ndarray) -> np.ndarray:
    """Each series (and channel) to mean 0 and standard deviation 1."""
    X = X - X.mean(axis=-1, keepdims=True)
    return X / (X.std(axis=-1, keepdims=True) + 1e-8)


def loo_accuracy(D: np.ndarray, y: np.ndarray) -> float:
    """Leave-one-out 1-NN accuracy from a square distance matrix."""
    D = D.copy()
    np.fill_diagonal(D, np.inf)
    return float((y[D.argmin(axis=1)] == y).mean())


def shift_distances(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Squared Euclidean distances of ``(n, c, t)``, plain and minimised over circular
    shifts (all shifts at once by FFT cross-correlation; channels share the shift)."""
    n, _, t = X.shape
    flat = X.reshape(n, -1)
    sq = (flat**2).sum(axis=1)
    plain = sq[:, None] + sq[None, :] - 2.0 * flat @ flat.T
    spectra = np.fft.rfft(X, axis=-1)  # (n, c, f)
    shifted = np.empty((n, n))
    for i in range(n):
        cross = np.fft.irfft((spectra[i][None] * np.conj(spectra)).sum(axis=1), n=t, axis=-1)
        shifted[i] = sq[i] + sq - 2.0 * cross.max(axis=1)
    return plain, shifted


def alignment_gain(X: np.ndarray, y: np.ndarray, seed: int = 0) -> float:
    """Leave-one-out 1-NN accuracy of z-normalised series after the best circular shift,
    minus without it, on at most :data:`SCREEN_SERIES` series of prepared panel ``X`` (drawn
    with ``seed``), resampled to their median length (at most :data:`SCREEN_LENGTH`)."""
    y = np.asarray(y)
    if len(y) > SCREEN_SERIES:
        keep = np.sort(np.random.default_rng(seed).choice(len(y), SCREEN_SERIES, replace=False))
        X, y = X[keep], y[keep]
    median = int(np.median(valid_lengths(torch.from_numpy(X)).numpy()))
    Z = znorm(resample(X, max(2, min(median, SCREEN_LENGTH))))
    plain, shifted = shift_distances(Z)
    return loo_accuracy(shifted, y) - loo_accuracy(plain, y)
