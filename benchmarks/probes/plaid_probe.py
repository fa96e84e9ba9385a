"""PLAID on a holdout of its *training* split: normalisation, patch size, augmentation.

PLAID's series (currents of household appliances) differ in scale by five orders of
magnitude. This probe chose ``normalize="auto"``: one stratified 2/3-1/3 split of the
training split (the test split is never read), seed 0, 50 + 50 epochs (SPT) or 100
(scratch) to keep it short. Prints one line per configuration. (Its rows with window
stretching, ``augment=True``, need sktspt 0.4 or earlier: stretching was removed in 0.5.)

    python benchmarks/probes/plaid_probe.py --n-jobs 2
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from joblib import Parallel, delayed
from sklearn.model_selection import train_test_split
from sktime.datasets import load_UCR_UEA_dataset

from sktspt import SPTClassifier
from sktspt.data import check_panel

#: (name, SPTClassifier parameters); ``pretrain_epochs=0`` rows get 100 fine-tuning epochs.
CONFIGS = [
    ("global, SPT", dict(normalize="global", augment=False, pretrain_epochs=50)),
    ("global, scratch", dict(normalize="global", augment=False, pretrain_epochs=0)),
    ("instance, SPT", dict(normalize="instance", augment=False, pretrain_epochs=50)),
    ("instance, scratch", dict(normalize="instance", augment=False, pretrain_epochs=0)),
    ("instance, patch 16, SPT", dict(normalize="instance", augment=False, tokenizer__patch_size=16,
                                     pretrain_epochs=50)),
]


def run(name: str, params: dict, X, y, train, test) -> tuple[str, float, float]:
    torch.set_num_threads(1)
    params = dict(params)
    params["max_epochs"] = 100 if params["pretrain_epochs"] == 0 else 50
    start = time.perf_counter()
    clf = SPTClassifier(random_state=0, **params).fit(X[train], y[train])
    return name, clf.score(X[test], y[test]), time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n-jobs", type=int, default=1)
    args = parser.parse_args()
    X, y = load_UCR_UEA_dataset("PLAID", split="train", return_X_y=True)
    X, _ = check_panel(X)
    train, test = train_test_split(np.arange(len(y)), test_size=1 / 3, stratify=y,
                                   random_state=0)
    for name, acc, sec in Parallel(n_jobs=args.n_jobs)(
        delayed(run)(name, params, X, y, train, test) for name, params in CONFIGS
    ):
        print(f"{name:36s} holdout accuracy {acc:.3f}  ({sec:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
