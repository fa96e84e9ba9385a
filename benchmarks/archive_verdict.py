"""SPT against the same network from scratch, judged on the archive's training splits only.

The archive page's verdict on self-pretraining comes from test splits, which must not
choose a default. This script asks the same question where a default may be chosen: for a
sample of the archive's problems (none of the package's development or held-out sets),
each problem's *training* split is cut once into 70 % to fit and 30 % to score (stratified,
seed 0; no test split is read). Default SPT and the identical network from scratch at
equal optimizer steps (``pretrain_epochs=0`` with both phases' steps) fit the 70 % and are
scored on the 30 %. Rows go to ``--output`` as they finish, so a stopped run resumes.

    python benchmarks/archive_verdict.py --data-dir ucr2018 --n-problems 24 \\
        --output results/verdict.csv --n-jobs 2
"""

from __future__ import annotations

import argparse
import csv
import time
import warnings
from pathlib import Path

import numpy as np
from archive_budget import holdout

MODELS = ("spt", "scratch")


def sample(data_dir: str, n: int, max_train: int, exclude=(), seed: int = 0) -> list[str]:
    """``n`` problems drawn with ``seed`` among those with at most ``max_train`` training
    series, none of ``exclude``; sorted by name."""
    from sktspt.benchmark.datasets import load_dataset, local_problems

    names = sorted(set(local_problems(data_dir)) - set(exclude))
    picked = []
    for i in np.random.default_rng(seed).permutation(len(names)):
        if len(picked) == n:
            break
        if len(load_dataset(names[i], data_dir)[1]) <= max_train:
            picked.append(names[i])
    return sorted(picked)


def fit_score(name: str, model: str, data_dir: str, depth: int | None) -> tuple:
    """Held-out accuracy and fit seconds of ``model`` on ``name``'s 70/30 training cut."""
    import torch

    from sktspt import SPTClassifier

    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    X_fit, X_val, y_fit, y_val = holdout(name, data_dir)
    kw = {} if depth is None else {"depth": depth}
    # scratch: both "auto" phases' steps in one phase, which schedule__steps="auto" gives
    kw["pretrain_epochs"] = 0 if model == "scratch" else "auto"
    clf = SPTClassifier(random_state=0, device__threads=1, **kw)
    t = time.perf_counter()
    clf.fit(X_fit, y_fit)
    seconds = time.perf_counter() - t
    return name, model, float(np.mean(clf.predict(X_val) == y_val)), seconds


def verdict(rows: list[dict]) -> str:
    """Markdown: per-problem accuracies, then SPT − scratch with W/D/L and Wilcoxon p."""
    from scipy.stats import wilcoxon

    acc = {(r["dataset"], r["model"]): float(r["accuracy"]) for r in rows}
    names = sorted({d for d, m in acc if all((d, k) in acc for k in MODELS)})
    lines = ["| problem | SPT | scratch | SPT − scratch |", "|---|---|---|---|"]
    diff = []
    for d in names:
        diff.append(acc[d, "spt"] - acc[d, "scratch"])
        lines.append(f"| {d} | {acc[d, 'spt']:.3f} | {acc[d, 'scratch']:.3f} | "
                     f"{100 * diff[-1]:+.1f} |")
    if not diff:
        return "no problem has both models yet"
    diff = np.array(diff)
    wins, losses = int((diff > 1e-9).sum()), int((diff < -1e-9).sum())
    p = wilcoxon(diff).pvalue if wins + losses else float("nan")
    lines += ["", f"- {len(diff)} problems: SPT {np.mean([acc[d, 'spt'] for d in names]):.3f}, "
              f"scratch {np.mean([acc[d, 'scratch'] for d in names]):.3f}; SPT − scratch "
              f"{100 * diff.mean():+.1f} points, {wins} / {len(diff) - wins - losses} / "
              f"{losses}, Wilcoxon p {p:.2g}"]
    return "\n".join(lines)


def main(argv=None) -> int:
    from joblib import Parallel, delayed

    from sktspt.benchmark.datasets import DATASETS, HELDOUT

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", required=True)
    p.add_argument("--n-problems", type=int, default=24)
    p.add_argument("--max-train", type=int, default=500, help="skip larger training splits")
    p.add_argument("--depth", type=int, default=None, help="both models' depth (default: SPT's)")
    p.add_argument("--output", type=Path, required=True, help="CSV of rows; resumed if present")
    p.add_argument("--n-jobs", type=int, default=1)
    args = p.parse_args(argv)

    names = sample(args.data_dir, args.n_problems, args.max_train,
                   exclude=set(DATASETS) | set(HELDOUT))  # the package's own sets
    print("problems:", " ".join(names), flush=True)
    rows = list(csv.DictReader(args.output.open())) if args.output.exists() else []
    done = {(r["dataset"], r["model"]) for r in rows}
    todo = [(n, m) for n in names for m in MODELS if (n, m) not in done]
    args.output.parent.mkdir(parents=True, exist_ok=True)
    with args.output.open("a", newline="") as f:
        writer = csv.DictWriter(f, ["dataset", "model", "accuracy", "fit_s"])
        if not rows:
            writer.writeheader()
        for name, model, acc, sec in Parallel(n_jobs=args.n_jobs, return_as="generator")(
                delayed(fit_score)(n, m, args.data_dir, args.depth) for n, m in todo):
            row = {"dataset": name, "model": model, "accuracy": f"{acc:.4f}",
                   "fit_s": f"{sec:.1f}"}
            writer.writerow(row)
            f.flush()
            rows.append(row)
            print(f"{name}\t{model}\t{acc:.3f}\t{sec:.0f} s", flush=True)
    print(verdict([r for r in rows if r["dataset"] in names]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
