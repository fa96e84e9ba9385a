"""Quick start: SPT versus the same transformer trained from scratch, on GunPoint.

Both models see only the training split; the best epoch is picked on a validation
split carved from it. The test split is scored once per model. Equal total epochs:
SPT runs ``pretrain_epochs`` of masked reconstruction plus ``max_epochs`` of
fine-tuning; scratch runs ``pretrain_epochs + max_epochs`` of fine-tuning.

    python examples/quickstart.py [--dataset GunPoint] [--seeds 0 1 2]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from sktime.datasets import load_UCR_UEA_dataset

from sktspt import SPTClassifier


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="GunPoint")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--pretrain-epochs", type=int, default=100)
    parser.add_argument("--epochs", type=int, default=100)
    args = parser.parse_args()
    torch.set_num_threads(1)

    def load(split):
        return load_UCR_UEA_dataset(args.dataset, split=split, return_X_y=True,
                                    return_type="numpy3D")

    X_train, y_train = load("train")
    X_test, y_test = load("test")
    print(f"{args.dataset}: train {X_train.shape}, test {X_test.shape}")

    total = args.pretrain_epochs + args.epochs
    models = {
        "SPT": dict(pretrain_epochs=args.pretrain_epochs, max_epochs=args.epochs),
        "scratch": dict(pretrain_epochs=0, max_epochs=total),
    }
    for name, params in models.items():
        scores, seconds = [], []
        for seed in args.seeds:
            start = time.perf_counter()
            clf = SPTClassifier(**params, random_state=seed).fit(X_train, y_train)
            seconds.append(time.perf_counter() - start)
            scores.append(clf.score(X_test, y_test))
        print(f"{name:8s} accuracy {np.mean(scores):.3f} ± {np.std(scores):.3f} "
              f"(seeds {args.seeds}: {', '.join(f'{s:.3f}' for s in scores)}), "
              f"fit {np.mean(seconds):.1f} s")


if __name__ == "__main__":
    main()
