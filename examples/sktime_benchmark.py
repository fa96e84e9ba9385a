"""SPT beside MiniRocket in sktime's ClassificationBenchmark, on GunPoint.

sktime's benchmark accepts only sktime estimators, so SPT enters through
:class:`sktspt.SPTClassifierSktime`. Both classifiers are scored on GunPoint's
official split (50 training, 150 test series), expressed as a ``PredefinedSplit`` on
the concatenated data, so the numbers are comparable with published results. The SPT
settings are small so that the script runs in a few minutes on a CPU; they are not
tuned and the published-scale model is larger (see ``docs`` and
``sktspt.benchmark`` for the full protocol).

Run with ``python examples/sktime_benchmark.py``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from sklearn.metrics import accuracy_score, balanced_accuracy_score
from sklearn.model_selection import PredefinedSplit
from sktime.benchmarking.classification import ClassificationBenchmark
from sktime.classification.kernel_based import RocketClassifier
from sktime.datasets import load_gunpoint

from sktspt import SPTClassifierSktime


def gunpoint_official_split() -> tuple[tuple[pd.DataFrame, np.ndarray], PredefinedSplit]:
    """GunPoint train + test in one panel, and the splitter that separates them again."""
    X_train, y_train = load_gunpoint(split="train", return_X_y=True)
    X_test, y_test = load_gunpoint(split="test", return_X_y=True)
    X = pd.concat([X_train, X_test], ignore_index=True)
    y = np.concatenate([y_train, y_test])
    test_fold = np.r_[np.full(len(y_train), -1), np.zeros(len(y_test), dtype=int)]
    return (X, y), PredefinedSplit(test_fold)


def main() -> pd.DataFrame:
    data, split = gunpoint_official_split()
    bm = ClassificationBenchmark()
    bm.add_estimator(
        SPTClassifierSktime(
            depth=2, d_model=32, architecture__n_heads=4, architecture__dim_feedforward=64,
                tokenizer__patch_size=8,
            pretrain_epochs=50, max_epochs=100, random_state=0,
        ),
        "SPT (small)",
    )
    bm.add_estimator(
        RocketClassifier(rocket_transform="minirocket", random_state=0), "MiniRocket"
    )
    bm.add_task(data, split, [accuracy_score, balanced_accuracy_score], task_id="GunPoint")
    with warnings.catch_warnings():
        # one fold: sktime's per-task standard deviation is NaN and numpy says so
        warnings.filterwarnings("ignore", category=RuntimeWarning, module="numpy")
        results = bm.run()
    if bm.failed_experiments:
        raise RuntimeError(f"Failed experiments: {bm.failed_experiments}")
    table = results.set_index("model_id")[
        ["accuracy_score_mean", "balanced_accuracy_score_mean", "fit_time_mean", "pred_time_mean"]
    ]
    with pd.option_context(
        "display.float_format", "{:.3f}".format, "display.width", 200,
        "display.max_columns", None,
    ):
        print(table)
    return table


if __name__ == "__main__":
    main()
