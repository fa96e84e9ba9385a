"""Quick start: SPT versus the same transformer trained from scratch, on any UCR/UEA dataset.

Both models see only the training split and keep their last epoch; the test split is scored
once per model. Equal optimizer steps: SPT (``pretrain_epochs="auto"``) splits
``2 * schedule__steps`` steps between masked reconstruction and fine-tuning; scratch runs all
of them as fine-tuning.

    python examples/quickstart.py [--dataset GunPoint] [--data-dir DIR] [--seeds 0 1 2]

``--dataset`` takes any archive name: the eight shipped with sktime load offline, others come
from ``--data-dir`` (``DIR/<Name>/<Name>_TRAIN.ts`` and ``_TEST.ts``) or sktime's downloader.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from sktspt import SPTClassifier
from sktspt.benchmark import load_dataset


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="GunPoint")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=None,
                        help="optimizer steps per phase on average (schedule__steps; default "
                             "the package's, 'auto'): SPT splits twice this by "
                             "schedule__pretrain_share, scratch fine-tunes for all of it")
    args = parser.parse_args()

    X_train, y_train, X_test, y_test, _ = load_dataset(args.dataset, args.data_dir)
    print(f"{args.dataset}: {len(X_train)} training and {len(X_test)} test series")

    # schedule__steps="auto" already gives a fit from scratch both phases' steps
    steps = "auto" if args.steps is None else args.steps
    models = {
        "SPT": dict(pretrain_epochs="auto", schedule__steps=steps),
        "scratch": dict(pretrain_epochs=0,
                        schedule__steps="auto" if args.steps is None else 2 * args.steps),
    }
    for name, params in models.items():
        scores, seconds = [], []
        for seed in args.seeds:
            start = time.perf_counter()
            clf = SPTClassifier(**params, device__threads=1, random_state=seed).fit(X_train,
                                                                                    y_train)
            seconds.append(time.perf_counter() - start)
            scores.append(clf.score(X_test, y_test))
        print(f"{name:8s} accuracy {np.mean(scores):.3f} ± {np.std(scores):.3f} "
              f"(seeds {args.seeds}: {', '.join(f'{s:.3f}' for s in scores)}), "
              f"fit {np.mean(seconds):.1f} s")


if __name__ == "__main__":
    main()
