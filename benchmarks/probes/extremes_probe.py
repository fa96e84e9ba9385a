"""``augment="auto"`` at the archive's extremes: a development set cut to 2 series a class.

With dozens of classes of 2-3 training series, the 1-NN screen that decides rolls has one
neighbour of each series' class to align with (from round 32 to 37 a held-out comparison
on one series of each class had to agree). This probe asks whether that decision is safe
where the answer is known from the full training split: ACSF1, whose classes depend on
where things happen (rolls cost it 13 points with the convolutional tokenizer), and PLAID,
where rolls won some CV folds and lost others. For each draw, ``--per-class`` training
series of each class are kept (the rest of the training split is never read); a default
fit (``augment="auto"``) and a fit with ``augment=False`` are scored on the whole test
split. Prints the screen's gain, the choice, and both test accuracies.

    python benchmarks/probes/extremes_probe.py --datasets ACSF1 PLAID --draws 3 --n-jobs 2
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from joblib import Parallel, delayed
from sklearn.utils import _safe_indexing

from sktspt import SPTClassifier
from sktspt.benchmark.datasets import load_dataset


def draw(y: np.ndarray, per_class: int, seed: int) -> np.ndarray:
    """``per_class`` random training series of each class, in their original order."""
    rng = np.random.default_rng(seed)
    return np.sort(np.concatenate([rng.choice(np.flatnonzero(y == c), per_class, replace=False)
                                   for c in np.unique(y)]))


def fit_score(name: str, per_class: int, seed: int, augment) -> dict:
    torch.set_num_threads(1)
    X, y, X_test, y_test, _ = load_dataset(name)
    keep = draw(y, per_class, seed)
    start = time.perf_counter()
    clf = SPTClassifier(augment=augment, pretrain_epochs="auto", random_state=seed)
    clf.fit(_safe_indexing(X, keep), y[keep])
    return {"dataset": name, "draw": seed, "augment": augment, "chose": clf.augment_,
            "evidence": clf.augment_evidence_, "accuracy": clf.score(X_test, y_test),
            "seconds": time.perf_counter() - start}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["ACSF1", "PLAID"])
    parser.add_argument("--per-class", type=int, default=2)
    parser.add_argument("--draws", type=int, default=3)
    parser.add_argument("--first-draw", type=int, default=0,
                        help="seed of the first draw (to add draws to an earlier run)")
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args(argv)
    jobs = [(name, args.per_class, seed, augment) for name in args.datasets
            for seed in range(args.first_draw, args.first_draw + args.draws)
            for augment in ("auto", False)]
    rows = Parallel(n_jobs=args.n_jobs)(delayed(fit_score)(*job) for job in jobs)
    print("| dataset | draw | screen gain | chose | "
          "auto test acc | no-roll test acc | auto fit s |")
    print("|---|---|---|---|---|---|---|")
    for auto, plain in zip(rows[::2], rows[1::2]):
        gain = (auto["evidence"] or {}).get("alignment_gain", float("nan"))
        print(f"| {auto['dataset']} | {auto['draw']} | {gain:+.3f} | {auto['chose'] or 'none'} | "
              f"{auto['accuracy']:.3f} | {plain['accuracy']:.3f} | {auto['seconds']:.0f} |")

if __name__ == "__main__":
    main()
