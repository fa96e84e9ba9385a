"""Is the encoder's representation or its fine-tuned classifier what trails MiniRocket?

On the folds of ``benchmarks/tune.py`` (stratified k-fold CV on the *training split*
only; the test split is never read), each fold fits a default :class:`SPTPretrainer`,
then a default :class:`SPTClassifier` from it, and scores:

- ``spt``: the fine-tuned classifier, as a default fit uses it;
- ``ridge_pre``: a ridge classifier (MiniRocket's: standardised features,
  ``RidgeClassifierCV`` over ``logspace(-3, 3, 10)``) on the *pretrained* encoder's
  token states, mean- and max-pooled after the tokenizer and after every layer;
- ``ridge_pre_mean``: the same ridge on ``SPTPretrainer.transform`` (the last layer's
  mean only), the embedding a pipeline gets today;
- ``ridge_ft``: the same ridge on the *fine-tuned* encoder's pooled states.

    python benchmarks/probes/ridge_probe.py --datasets ArrowHead GunPoint OSULeaf ACSF1 \
        --n-jobs 2 --output results/ridge_probe.csv
"""

from __future__ import annotations

import argparse
import csv
import os
import time

import numpy as np
import torch
from joblib import Parallel, delayed
from sklearn.linear_model import RidgeClassifierCV
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sktime.datasets import load_UCR_UEA_dataset

from sktspt import SPTClassifier, SPTPretrainer
from sktspt.nn.encoder import masked_mean
from sktspt.nn.heads import split_input


def pooled_states(estimator, module: torch.nn.Module, X: np.ndarray) -> np.ndarray:
    """Mean and max over tokens of every layer's states: ``(n, 2 * (depth + 1) * d)``."""

    def features(xb: torch.Tensor) -> torch.Tensor:
        x, observed = split_input(xb)
        states, keep = module.encoder.layer_states(x, observed, observed)
        out = []
        for h in states:
            out.append(masked_mean(h, keep))
            out.append(h.masked_fill(~keep[..., None], float("-inf")).amax(1))
        return torch.cat(out, dim=1)

    return estimator._infer(features, module, estimator._input(X))


def ridge_score(F_train, y_train, F_test, y_test) -> float:
    ridge = make_pipeline(StandardScaler(), RidgeClassifierCV(alphas=np.logspace(-3, 3, 10)))
    return ridge.fit(F_train, y_train).score(F_test, y_test)


def fold(X, y, train, test, seed: int) -> dict[str, float]:
    torch.set_num_threads(1)
    start = time.perf_counter()
    pre = SPTPretrainer(random_state=seed).fit(X[train])
    pre_module = pre.net_.module_
    scores = {
        "ridge_pre": ridge_score(pooled_states(pre, pre_module, X[train]), y[train],
                                 pooled_states(pre, pre_module, X[test]), y[test]),
        "ridge_pre_mean": ridge_score(pre.transform(X[train]), y[train],
                                      pre.transform(X[test]), y[test]),
    }
    clf = SPTClassifier(pretrainer=pre, random_state=seed).fit(X[train], y[train])
    scores["spt"] = clf.score(X[test], y[test])
    ft = clf.net_.module_
    scores["ridge_ft"] = ridge_score(pooled_states(clf, ft, X[train]), y[train],
                                     pooled_states(clf, ft, X[test]), y[test])
    scores["seconds"] = time.perf_counter() - start
    return scores


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--datasets", nargs="+", default=["ArrowHead", "GunPoint"])
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--output", default="results/ridge_probe.csv")
    args = parser.parse_args()
    os.makedirs(os.path.dirname(args.output) or ".", exist_ok=True)
    new = not os.path.exists(args.output)
    with open(args.output, "a", newline="") as f:
        writer = csv.writer(f)
        if new:
            writer.writerow(["dataset", "fold", "scorer", "cv_accuracy", "seconds"])
        for name in args.datasets:
            X, y = load_UCR_UEA_dataset(name, split="train", return_X_y=True,
                                        return_type="numpy3D")
            splits = StratifiedKFold(args.folds, shuffle=True, random_state=args.seed)
            results = Parallel(n_jobs=args.n_jobs)(
                delayed(fold)(X, y, tr, te, args.seed) for tr, te in splits.split(X, y)
            )
            for i, scores in enumerate(results):
                seconds = scores.pop("seconds")
                for scorer, acc in scores.items():
                    writer.writerow([name, i, scorer, f"{acc:.4f}", f"{seconds:.1f}"])
            f.flush()
            means = {k: np.mean([r[k] for r in results]) for k in results[0]}
            print(name, " ".join(f"{k} {v:.3f}" for k, v in means.items()), flush=True)


if __name__ == "__main__":
    main()
