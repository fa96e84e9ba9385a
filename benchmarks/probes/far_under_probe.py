"""Why is the default far under ResNet on a problem? Single changes on its training split.

Stratified k-fold cross-validation of one archive problem's *training* split (no test split
is read; ``k`` is at most the smallest class's size, so PigAirwayPressure's two series a
class give 2 folds of one series a class each). Each arm is ``SPTClassifier(random_state=S)``
with the arm's settings; ``minirocket`` is the benchmark's MiniRocket on the same folds, the
level the folds allow. Prints one line per arm: mean accuracy over folds (and seeds).

    python benchmarks/probes/far_under_probe.py --data-dir ucr2018 --problem PigAirwayPressure \\
        --arms default mixup=0 tokenizer__patch_size=16 augment=False minirocket
"""

from __future__ import annotations

import argparse
import ast
import time
import warnings

import numpy as np


def arm_settings(arm: str) -> dict:
    """``"a=1,b=x"`` as keyword arguments (values read as Python literals where they parse)."""
    if arm == "default":
        return {}
    out = {}
    for item in arm.split(","):
        key, _, value = item.partition("=")
        try:
            out[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            out[key] = value
    return out


def main(argv=None) -> int:
    import torch
    from sklearn.model_selection import StratifiedKFold

    from sktspt import SPTClassifier
    from sktspt.benchmark.datasets import load_dataset
    from sktspt.benchmark.minirocket import MiniRocketClassifier

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", required=True)
    p.add_argument("--problem", required=True)
    p.add_argument("--arms", nargs="+", default=["default", "minirocket"])
    p.add_argument("--seeds", nargs="+", type=int, default=[0])
    p.add_argument("--folds", type=int, default=3)
    args = p.parse_args(argv)

    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    X, y = load_dataset(args.problem, args.data_dir)[:2]
    X, y = np.asarray(X), np.asarray(y)
    k = min(args.folds, int(np.unique(y, return_counts=True)[1].min()))
    folds = list(StratifiedKFold(k, shuffle=True, random_state=0).split(X[:, 0, :1], y))
    print(f"{args.problem}: {len(y)} training series, {len(np.unique(y))} classes, "
          f"{k} folds", flush=True)
    for arm in args.arms:
        scores, t = [], time.perf_counter()
        for seed in args.seeds:
            for fit, val in folds:
                if arm == "minirocket":
                    clf = MiniRocketClassifier(seed)
                else:
                    clf = SPTClassifier(random_state=seed, device__threads=1,
                                        **arm_settings(arm))
                clf.fit(X[fit], y[fit])
                scores.append(float(np.mean(clf.predict(X[val]) == y[val])))
        print(f"{arm}\t{np.mean(scores):.3f}\t" + " ".join(f"{s:.3f}" for s in scores)
              + f"\t{time.perf_counter() - t:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
