"""Choose the fine-tuning budget of a pretrained start on training data only.

For a sample of the archive's problems, each problem's *training* split is cut once into
70 % to fit and 30 % to score (stratified, seed 0; no test split is read). SPT fine-tunes
from the half-archive encoder that never saw the problem (``--encoders``: the folder of
``half-A.sktspt`` and ``half-B.sktspt``) for each budget of optimizer steps, and the same
network trained from scratch gets the same steps. The table gives the mean held-out
accuracy per budget and per start; the smallest budget within half a point of the best
is the one to ship.

    python benchmarks/archive_budget.py --data-dir ucr2018 --encoders results/encoders \\
        --budgets 100 250 500 1000 --n-problems 16
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np


def sample_problems(data_dir: str, n: int, max_train: int, seed: int = 0) -> list[str]:
    """``n`` problems with at most ``max_train`` training series, drawn with ``seed``, half
    from each half of the archive (name order, alternately A and B)."""
    from sktspt.benchmark.datasets import load_dataset, local_problems

    names = sorted(local_problems(data_dir))
    rng = np.random.default_rng(seed)
    picked = []
    for half in (names[0::2], names[1::2]):
        order = rng.permutation(len(half))
        chosen = [half[i] for i in order
                  if len(load_dataset(half[i], data_dir)[1]) <= max_train][: n // 2]
        picked += chosen
    return sorted(picked)


def holdout(name: str, data_dir: str, seed: int = 0):
    """The training split of ``name`` cut 70/30, stratified where the classes allow."""
    from sklearn.model_selection import train_test_split

    from sktspt.benchmark.datasets import load_dataset

    X, y = load_dataset(name, data_dir)[:2]
    _, counts = np.unique(y, return_counts=True)
    # stratified where every class has two series and the 30 % can hold one of each
    stratify = y if counts.min() >= 2 and np.ceil(0.3 * len(y)) >= len(counts) else None
    return train_test_split(X, y, test_size=0.3, random_state=seed, stratify=stratify)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", required=True)
    p.add_argument("--encoders", required=True, help="folder of the half-archive encoders")
    p.add_argument("--budgets", type=int, nargs="+", default=[100, 250, 500, 1000])
    p.add_argument("--n-problems", type=int, default=16)
    p.add_argument("--max-train", type=int, default=500, help="skip larger training splits")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)

    from sktspt import SPTClassifier
    from sktspt.benchmark.models import half_encoder
    from sktspt.pretrained import pretrained

    warnings.simplefilter("ignore")
    names = sample_problems(args.data_dir, args.n_problems, args.max_train)
    print("problems:", " ".join(names), flush=True)
    scores = {(start, b): [] for start in ("pretrained", "scratch") for b in args.budgets}
    seconds = dict.fromkeys(scores, 0.0)
    for name in names:
        X_fit, X_val, y_fit, y_val = holdout(name, args.data_dir)
        encoder = pretrained(path=half_encoder(name, args.encoders))
        for budget in args.budgets:
            for start in ("pretrained", "scratch"):
                kw = (dict(pretrainer=encoder) if start == "pretrained" else
                      dict(pretrain_epochs=0, **{k: v for k, v in
                           encoder.estimator.get_params().items()
                           if k in ("normalize", "tokenizer", "tokenizer__length")}))
                clf = SPTClassifier(random_state=0, schedule__steps=budget,
                                    device__threads=args.threads, **kw)
                t = time.perf_counter()
                clf.fit(X_fit, y_fit)
                seconds[start, budget] += time.perf_counter() - t
                acc = float(np.mean(clf.predict(X_val) == y_val))
                scores[start, budget].append(acc)
                print(f"{name}\t{start}\t{budget}\t{acc:.3f}\t{seconds[start, budget]:.0f}",
                      flush=True)
    print("\n| start | steps | mean held-out accuracy | fit time (s, all problems) |")
    print("|---|---|---|---|")
    for (start, budget), accs in scores.items():
        print(f"| {start} | {budget} | {np.mean(accs):.3f} | {seconds[start, budget]:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
