"""Warm prediction throughput: SPT's ``predict`` beside MiniRocket's, second call timed.

``benchmarks/cost.py`` times the first ``predict`` of a fresh process, which includes
one-time set-up. This fits each shipped set once (SPT with a short budget: the roll
screen, which decides how many rolled copies prediction averages, does not depend on it),
calls ``predict`` on the test split once to warm up, then times the median of three more
calls. One torch thread; series per second. Issue 59, round 41.

    python benchmarks/probes/predict_probe.py
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import torch

from sktspt import SPTClassifier
from sktspt.benchmark.datasets import load_dataset
from sktspt.benchmark.models import MODELS, RunConfig

DATASETS = ("GunPoint", "ArrowHead", "ItalyPowerDemand", "OSULeaf", "ACSF1", "PLAID",
            "BasicMotions", "JapaneseVowels")


def warm_rate(model, X) -> float:
    model.predict(X)
    times = []
    for _ in range(3):
        start = time.perf_counter()
        model.predict(X)
        times.append(time.perf_counter() - start)
    return len(X) / float(np.median(times))


def main() -> None:
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    print("| dataset | test series | SPT rolled copies | SPT series/s | MiniRocket series/s |")
    print("|---|---|---|---|---|")
    for name in DATASETS:
        X, y, X_test, _, info = load_dataset(name)
        spt = SPTClassifier(pretrain_epochs="auto", random_state=0, device__threads=1,
                            schedule__steps=20).fit(X, y)
        cfg = RunConfig(seed=0, pretrain_epochs="auto", epochs="auto", depth=None, data=info)
        rocket = MODELS["minirocket"].factory(cfg).fit(X, y)
        copies = 8 if spt.augment_ == "roll" else 1
        print(f"| {name} | {len(X_test)} | {copies} | {warm_rate(spt, X_test):.0f} | "
              f"{warm_rate(rocket, X_test):.0f} |", flush=True)


if __name__ == "__main__":
    main()
