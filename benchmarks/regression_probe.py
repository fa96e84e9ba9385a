"""A first measurement of SPTRegressor on the TSER problems that ship inside sktime.

On ``Covid3Month`` and ``Tecator`` (their train/test splits, read from sktime's own
files: nothing is downloaded) it fits, per seed,

- ``spt``: the default :class:`~sktspt.SPTRegressor` (pretraining, then fine-tuning);
- ``scratch``: the same with ``pretrain_epochs=0`` and ``auto_steps`` doubled, the
  from-scratch control at equal optimizer steps;
- ``minirocket``: MiniRocket features (sktime's ``MiniRocketMultivariate``, 10,000
  features), standardised, then scikit-learn's ``RidgeCV`` over ``logspace(-3, 3, 10)``,

and reports the test RMSE and R² of each, with the fit time. One torch thread per fit.
This is a probe, not the benchmark (``python -m sktspt.benchmark`` has no regression task
yet)::

    nice -n 10 python benchmarks/regression_probe.py --seeds 0 --output results/tser.csv
"""

from __future__ import annotations

import argparse
import csv
import time

import numpy as np
import torch
from sklearn.linear_model import RidgeCV
from sklearn.metrics import mean_squared_error, r2_score
from sklearn.preprocessing import StandardScaler
from sktime.datatypes import convert_to

from sktspt import SPTRegressor

#: The TSER problems in sktime's own data folder, by their loader.
DATASETS = {"Covid3Month": "load_covid_3month", "Tecator": "load_tecator"}


def load(name: str, split: str) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)`` of a shipped TSER problem as float32 ``(n, c, t)`` and float64 ``(n,)``."""
    import sktime.datasets

    X, y = getattr(sktime.datasets, DATASETS[name])(split=split, return_X_y=True)
    return convert_to(X, "numpy3D").astype(np.float32), np.asarray(y, dtype=np.float64)


class MiniRocketRidge:
    """MiniRocket features, standardised, then ``RidgeCV``: sktime's ``RocketRegressor``
    recipe, written out because an sktime transformer inside a scikit-learn ``Pipeline``
    fails under scikit-learn's callback context (1.9)."""

    def __init__(self, seed: int):
        from sktime.transformations.panel.rocket import MiniRocketMultivariate

        self.rocket = MiniRocketMultivariate(random_state=seed, n_jobs=1)
        self.scaler = StandardScaler()
        self.ridge = RidgeCV(alphas=np.logspace(-3, 3, 10))

    def fit(self, X, y):
        self.ridge.fit(self.scaler.fit_transform(self.rocket.fit_transform(X)), y)
        return self

    def predict(self, X):
        return self.ridge.predict(self.scaler.transform(self.rocket.transform(X)))


def models(seed: int) -> dict:
    """The three regressors compared, fresh."""
    return {
        "spt": SPTRegressor(random_state=seed, n_threads=1),
        "scratch": SPTRegressor(pretrain_epochs=0, auto_steps=2000, random_state=seed,
                                n_threads=1),
        "minirocket": MiniRocketRidge(seed),
    }


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--models", nargs="+", default=["spt", "scratch", "minirocket"],
                        choices=["spt", "scratch", "minirocket"])
    parser.add_argument("--output", default=None, help="CSV file for the rows")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    rows = []
    for name in args.datasets:
        X, y = load(name, "train")
        X_test, y_test = load(name, "test")
        for seed in args.seeds:
            for model, est in models(seed).items():
                if model not in args.models:
                    continue
                start = time.perf_counter()
                est.fit(X, y)
                seconds = time.perf_counter() - start
                pred = est.predict(X_test)
                row = dict(dataset=name, model=model, seed=seed,
                           rmse=float(np.sqrt(mean_squared_error(y_test, pred))),
                           r2=float(r2_score(y_test, pred)), fit_seconds=round(seconds, 1))
                rows.append(row)
                print(f"{name:12s} {model:10s} seed {seed}: RMSE {row['rmse']:.4f}  "
                      f"R2 {row['r2']:.3f}  ({row['fit_seconds']} s)", flush=True)
    if args.output:
        with open(args.output, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return rows


if __name__ == "__main__":
    main()
