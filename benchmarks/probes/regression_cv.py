"""Training-split CV of a few SPTRegressor settings on the shipped TSER problems.

3-fold CV (shuffled, seed 0) on each dataset's training split only; the test split is not
read. Prints each setting's RMSE per fold and its mean, one torch thread per fit, two
fits at a time. Findings: docs/tuning-history.md, "Regression, round R1" (whose
``differences=1`` row needs sktspt 0.4 or earlier: the option was removed in 0.5).

    python benchmarks/probes/regression_cv.py
"""

from __future__ import annotations

import sys
import time

import numpy as np
from joblib import Parallel, delayed
from sklearn.model_selection import KFold

CONFIGS = {
    "default": {},
    "mixup=0": {"mixup": 0.0},
    "auto_steps=2000": {"schedule__steps": 2000},
}


def fold_rmse(dataset: str, config: str, fold: int) -> tuple[str, str, int, float, float]:
    from sktspt import SPTRegressor
    from sktspt.benchmark.datasets import load_dataset

    X, y, _, _, _ = load_dataset(dataset)
    train, valid = list(KFold(3, shuffle=True, random_state=0).split(X))[fold]
    start = time.perf_counter()
    reg = SPTRegressor(random_state=0, device__threads=1, **CONFIGS[config]).fit(X[train], y[train])
    rmse = float(np.sqrt(np.mean((reg.predict(X[valid]) - y[valid]) ** 2)))
    return dataset, config, fold, rmse, time.perf_counter() - start


def main() -> None:
    jobs = [(d, c, f) for d in ("Covid3Month", "Tecator") for c in CONFIGS for f in range(3)]
    rows = Parallel(n_jobs=2)(delayed(fold_rmse)(*job) for job in jobs)
    for dataset in ("Covid3Month", "Tecator"):
        print(f"\n{dataset} (training-split 3-fold CV RMSE)")
        for config in CONFIGS:
            scores = [r[3] for r in rows if r[0] == dataset and r[1] == config]
            secs = np.mean([r[4] for r in rows if r[0] == dataset and r[1] == config])
            print(f"  {config:16s} mean {np.mean(scores):.4g}  folds "
                  f"{', '.join(f'{s:.4g}' for s in scores)}  ({secs:.0f} s a fit)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
