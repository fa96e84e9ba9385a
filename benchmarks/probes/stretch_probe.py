"""Why window-stretch augmentation hurts ACSF1: what a 90 % window stretched back loses.

For each dataset (training split, globally standardised): the lag-1 autocorrelation, and
the mean squared error between a 90 % window stretched to full length (what
``augment=True`` fed the network until 0.5) and that window as recorded, after
resampling the stretched series back onto the window's own time grid. Smooth series lose
nothing; series whose consecutive values are nearly independent lose a large part of
their variance to the linear interpolation.

    python benchmarks/probes/stretch_probe.py
"""

import numpy as np
import torch
from sktime.datasets import load_UCR_UEA_dataset

from sktspt.views import crop_resample

DATASETS = ["GunPoint", "ArrowHead", "ItalyPowerDemand", "OSULeaf", "ACSF1", "BasicMotions"]

for name in DATASETS:
    X, _ = load_UCR_UEA_dataset(name, split="train", return_X_y=True, return_type="numpy3D")
    X = ((X - X.mean()) / X.std()).astype(np.float32)
    lag1 = np.nanmean([np.corrcoef(s[:-1], s[1:])[0, 1] for s in X[:, 0]])
    out = crop_resample(torch.from_numpy(X), torch.full((len(X),), 0.9),
                        torch.zeros(len(X))).numpy()
    t = X.shape[2]
    k = int(round(0.9 * t))
    grid = np.linspace(0, k - 1, t)
    err = np.mean([(np.interp(np.arange(k), grid, o[0]) - s[0, :k]) ** 2 for o, s in zip(out, X)])
    print(f"{name:17s} lag-1 autocorrelation {lag1:+.2f}   stretch error (MSE, variance 1) "
          f"{err:.3f}")
