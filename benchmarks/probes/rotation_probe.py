"""Does a series' start point carry its class? A 1-NN probe on the training split.

For each dataset, leave-one-out 1-nearest-neighbour accuracy on the *training* split (the
test split is never read) with two distances between z-normalised series:

- Euclidean, position by position;
- the same after the best circular shift of one series against the other (computed for
  all shifts at once by FFT cross-correlation; channels share the shift).

Where the second is well ahead, the same shape turns up at arbitrary offsets (a closed
outline traced from any point, a daily load whose events fall at any hour) and position
is noise to a classifier; where it is behind, the position is part of the class. Series
of unequal length (PLAID, JapaneseVowels) are resampled to their median length first.

    python benchmarks/probes/rotation_probe.py                  # the eight sets, about a minute
    python benchmarks/probes/rotation_probe.py --datasets OSULeaf ACSF1
"""

from __future__ import annotations

import argparse

import numpy as np

from sktspt.benchmark.datasets import DATASETS, load_dataset
from sktspt.invariance import loo_accuracy, shift_distances, znorm


def as_equal_length(X) -> np.ndarray:
    """numpy3D ``(n, c, t)``; a nested frame's series resampled to their median length."""
    if isinstance(X, np.ndarray):
        return X.astype(np.float64)
    rows = [[np.asarray(cell, dtype=np.float64) for cell in row] for row in X.itertuples(False)]
    t = int(np.median([len(row[0]) for row in rows]))
    grid = np.linspace(0.0, 1.0, t)
    return np.array([[np.interp(grid, np.linspace(0.0, 1.0, len(s)), s) for s in row]
                     for row in rows])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    args = parser.parse_args(argv)
    print("| dataset | series | length | 1-NN Euclidean | 1-NN best circular shift | Δ |")
    print("|---|---|---|---|---|---|")
    for name in args.datasets:
        X, y = load_dataset(name)[:2]
        X = znorm(as_equal_length(X))
        y = np.asarray(y)
        plain, shifted = shift_distances(X)
        a, b = loo_accuracy(plain, y), loo_accuracy(shifted, y)
        print(f"| {name} | {len(y)} | {X.shape[-1]} | {a:.3f} | {b:.3f} | {b - a:+.3f} |",
              flush=True)


if __name__ == "__main__":
    main()
