"""How much class information does per-series normalisation remove from PLAID?

``normalize="auto"`` standardises each PLAID series on its own (its scales span five
orders of magnitude), which removes each series' level and scale. This probe asks, on
the *training* split only (the folds of ``benchmarks/tune.py --seed S``), how much those
removed statistics tell the classes apart, and what MiniRocket loses without them:

- a random forest on the statistics alone (log standard deviation, log largest absolute
  value, mean / standard deviation, and the series' length);
- MiniRocket (standardised features, ``RidgeClassifierCV``) on the zero-padded series as
  recorded and on the same series each standardised first.

    python benchmarks/probes/plaid_scale_probe.py            # about a minute on 2 cores
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import RidgeClassifierCV
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sktime.datasets import load_UCR_UEA_dataset
from sktime.transformations.panel.rocket import MiniRocket


def statistics(series: list[np.ndarray]) -> np.ndarray:
    """Per series: log10 std, log10 max |x|, mean / std, length."""
    tiny = 1e-12
    return np.array([[np.log10(s.std() + tiny), np.log10(np.abs(s).max() + tiny),
                      s.mean() / (s.std() + tiny), len(s)] for s in series])


def padded(series: list[np.ndarray], standardise: bool) -> np.ndarray:
    """``(n, 1, longest)``, zero after each series' end (the benchmark's MiniRocket input)."""
    out = np.zeros((len(series), 1, max(len(s) for s in series)))
    for i, s in enumerate(series):
        out[i, 0, : len(s)] = (s - s.mean()) / (s.std() + 1e-12) if standardise else s
    return out


def minirocket_cv(X: np.ndarray, y: np.ndarray, folds: StratifiedKFold, seed: int) -> list:
    scores = []
    for train, test in folds.split(X, y):
        rocket = MiniRocket(random_state=seed).fit(X[train])
        F, Ft = rocket.transform(X[train]), rocket.transform(X[test])
        mean, std = F.mean(0), F.std(0) + 1e-8
        ridge = RidgeClassifierCV(alphas=np.logspace(-3, 3, 10)).fit((F - mean) / std, y[train])
        scores.append(ridge.score((Ft - mean) / std, y[test]))
    return scores


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0, help="CV seed (tune.py's --seed)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    X, y = load_UCR_UEA_dataset("PLAID", split="train", return_X_y=True)
    series = [np.asarray(cell, dtype=float) for cell in X.iloc[:, 0]]
    folds = StratifiedKFold(3, shuffle=True, random_state=args.seed)
    stats = statistics(series)
    for name, columns in [("log std", [0]), ("level and scale", [0, 1, 2]),
                          ("length", [3]), ("all four", [0, 1, 2, 3])]:
        forest = RandomForestClassifier(300, random_state=args.seed)
        acc = cross_val_score(forest, stats[:, columns], y, cv=folds).mean()
        print(f"random forest on {name:16s} {acc:.3f}", flush=True)
    for standardise in (False, True):
        scores = minirocket_cv(padded(series, standardise), y, folds, args.seed)
        name = "each series standardised" if standardise else "as recorded"
        print(f"MiniRocket, {name:24s} {np.round(scores, 3)} mean {np.mean(scores):.3f}",
              flush=True)


if __name__ == "__main__":
    main()
