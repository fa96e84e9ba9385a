"""How long should the network train? Budgets compared on the archive's training splits only.

``schedule__steps="auto"`` gives every fit about 2,000 optimizer steps (batch 16), which is
4 epochs of Crop and 18 of PhalangesOutlinesCorrect. This script asks, on data a default may
be chosen on, whether a budget that grows with the training set pays: each problem's
*training* split is cut once 70/30 (stratified where the classes allow, seed 0; no test
split is read, see ``archive_budget.holdout``), the default classifier from scratch fits the
70 % under each budget and is scored on the 30 %.

Budgets (``--arms``): ``today`` is 0.4's default, ``SPTClassifier(random_state=0)`` with its
flat 2,000 steps (``schedule__steps=2000``: the same fit, bit for bit); ``eN`` trains
at least ``N`` epochs (``max_epochs = max(today's epochs, N)``, capped at ``--max-steps``
optimizer steps), so it differs from ``today`` only where ``N`` epochs are more than 2,000
steps, i.e. on training sets of more than ``16 * 2000 / N`` series; ``eN-noaug`` is the same
with ``augment=False``, ``-nomix`` with ``mixup=0`` (and ``noaug``, ``nomix`` today's
fit with them). Self-pretraining at the new budget: ``spt`` is
``SPTClassifier(random_state=0, pretrain_epochs="auto")`` as shipped, at the default's total
steps (pretraining takes ``schedule__pretrain_share`` of them); ``eN+spt`` is ``eN``'s
fine-tuning with that same pretraining added on top (the seeds' protocol: pretraining on top
of a from-scratch budget that has converged). Problems: every archive problem with at least
``--min-train`` training series, none of the package's development or held-out sets. Rows go to
``--output`` as they finish (cheapest first), so a stopped run resumes.

    python benchmarks/archive_scale.py --data-dir ucr2018 --output results/scale.csv \\
        --arms today e50 e100 e200 --n-jobs 1
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import time
import warnings
from pathlib import Path

import numpy as np
from archive_budget import holdout

FIELDS = ["dataset", "arm", "n_fit", "epochs", "pretrain_epochs", "steps", "augment", "accuracy",
          "fit_s"]
ARM = re.compile(r"(?:today|e(\d+)|(spt))((?:-noaug|-nomix)*)(\+spt)?|noaug|nomix")
#: What an arm's suffix turns off.
OFF = {"noaug": {"augment": False}, "nomix": {"mixup": 0}}


def problems(data_dir: str, min_train: int, exclude=()) -> list[tuple[str, int]]:
    """(name, training-set size) of the problems with at least ``min_train`` series."""
    from sktspt.benchmark.datasets import load_dataset, local_problems

    out = []
    for name in sorted(set(local_problems(data_dir)) - set(exclude)):
        n = len(load_dataset(name, data_dir)[1])
        if n >= min_train:
            out.append((name, n))
    return out


def classifier(arm: str, n_fit: int, y_fit, max_steps: int):
    """The arm's classifier for a 70 % cut of ``n_fit`` series, with its epochs and steps."""
    from sktspt import SPTClassifier

    m = ARM.fullmatch(arm)
    if m is None or (m.group(2) and m.group(4)):
        raise ValueError(f"unknown arm {arm!r}: 'today', 'eN' or 'spt', each with optional "
                         "'-noaug' and '-nomix', 'noaug', 'nomix', and 'eN+spt'")
    kw = {}
    for flag in re.findall(r"noaug|nomix", arm.split("+")[0]):
        kw.update(OFF[flag])
    if m.group(2):  # SPT as shipped: the default budget, pretraining a share of its steps
        clf = SPTClassifier(random_state=0, device__threads=1, pretrain_epochs="auto", **kw)
        return clf, clf._planned_steps(n_fit, y=y_fit)
    # today: 0.4's flat budget, 2,000 steps from scratch (an integer has no epoch floor)
    clf = SPTClassifier(random_state=0, device__threads=1, schedule__steps=2000, **kw)
    steps = clf._planned_steps(n_fit, y=y_fit)
    # the labelled series' batches an epoch: batch size and seed are the same in every arm
    per_epoch = clf._trainer().batches(n_fit, clf._seed(),
                                       clf._stratify(np.unique(y_fit, return_inverse=True)[1]))
    if m.group(1) is not None:
        today_epochs = math.ceil(steps / per_epoch)
        epochs = max(today_epochs, min(int(m.group(1)), max(1, max_steps // per_epoch)))
        if epochs != today_epochs:
            clf.set_params(max_epochs=epochs)
    if m.group(4):  # + the pretraining SPT as shipped does, on top of this fine-tuning
        spt = SPTClassifier(random_state=0, pretrain_epochs="auto")
        clf.set_params(pretrain_epochs=spt._trainer().epochs(
            "auto", n_fit, spt._seed(), steps=spt._auto_budget("pretrain", per_epoch)))
    return clf, clf._planned_steps(n_fit, y=y_fit)


def fit_score(name: str, arm: str, data_dir: str, max_steps: int) -> dict:
    import torch

    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    X_fit, X_val, y_fit, y_val = holdout(name, data_dir)
    clf, steps = classifier(arm, len(y_fit), y_fit, max_steps)
    t = time.perf_counter()
    clf.fit(X_fit, y_fit)
    seconds = time.perf_counter() - t
    return {"dataset": name, "arm": arm, "n_fit": len(y_fit), "epochs": clf.max_epochs_,
            "pretrain_epochs": clf.pretrain_epochs_,
            "steps": steps, "augment": clf.augment_ or "none",
            "accuracy": f"{np.mean(clf.predict(X_val) == y_val):.4f}",
            "fit_s": f"{seconds:.1f}"}


def summary(rows: list[dict], base: str = "today") -> str:
    """Markdown: accuracy per problem and arm, then each arm against ``base``."""
    from scipy.stats import wilcoxon

    acc = {(r["dataset"], r["arm"]): float(r["accuracy"]) for r in rows}
    cost = {(r["dataset"], r["arm"]): float(r["fit_s"]) for r in rows}
    arms = sorted({a for _, a in acc}, key=lambda a: (a != base, len(a), a))
    names = sorted({d for d, _ in acc})
    lines = ["| problem | " + " | ".join(arms) + " |", "|---|" + "---|" * len(arms)]
    for d in names:
        cells = [f"{acc[d, a]:.3f}" if (d, a) in acc else "" for a in arms]
        lines.append(f"| {d} | " + " | ".join(cells) + " |")
    lines += ["", "| arm | problems | mean | − today (points) | W / D / L | Wilcoxon p | "
              "fit s (sum) |", "|---|---|---|---|---|---|---|"]
    for a in arms:
        both = [d for d in names if (d, a) in acc and (d, base) in acc]
        if not both:
            continue
        diff = np.array([acc[d, a] - acc[d, base] for d in both])
        w, lo = int((diff > 1e-9).sum()), int((diff < -1e-9).sum())
        p = wilcoxon(diff).pvalue if w + lo else float("nan")
        lines.append(f"| {a} | {len(both)} | {np.mean([acc[d, a] for d in both]):.3f} | "
                     f"{100 * diff.mean():+.1f} | {w} / {len(both) - w - lo} / {lo} | "
                     f"{p:.2g} | {sum(cost[d, a] for d in both):.0f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    from joblib import Parallel, delayed

    from sktspt.benchmark.datasets import DATASETS, HELDOUT

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", required=True)
    p.add_argument("--arms", nargs="+", default=["today", "e50", "e100", "e200"])
    p.add_argument("--min-train", type=int, default=500, help="skip smaller training splits")
    p.add_argument("--problems", nargs="+", help="these problems instead (--min-train unused)")
    p.add_argument("--max-steps", type=int, default=16000, help="cap on an eN arm's steps")
    p.add_argument("--output", type=Path, required=True, help="CSV of rows; resumed if present")
    p.add_argument("--n-jobs", type=int, default=1)
    args = p.parse_args(argv)

    exclude = set(DATASETS) | set(HELDOUT)
    names = problems(args.data_dir, 0 if args.problems else args.min_train, exclude)
    if args.problems:
        unknown = set(args.problems) - {n for n, _ in names}
        if unknown:
            p.error(f"not in --data-dir, or a development or held-out set: {sorted(unknown)}")
        names = [(n, k) for n, k in names if n in args.problems]
    print("problems:", " ".join(n for n, _ in names), flush=True)
    rows = list(csv.DictReader(args.output.open())) if args.output.exists() else []
    if rows and list(rows[0]) != FIELDS:  # written before a column was added: rewrite
        with args.output.open("w", newline="") as f:
            csv.DictWriter(f, FIELDS, restval="").writeheader()
            csv.DictWriter(f, FIELDS, restval="").writerows(rows)
    done = {(r["dataset"], r["arm"]): r for r in rows}
    # one fit per distinct plan: arms whose epochs agree on a problem (a small set, or a
    # capped large one) share that fit's row. Arms in the order given, each over the
    # problems smallest first, so early rows are cheap.
    plans: dict[tuple, list[str]] = {}
    for arm in args.arms:
        for name, _ in sorted(names, key=lambda t: t[1]):
            y_fit = holdout(name, args.data_dir)[2]
            clf = classifier(arm, len(y_fit), y_fit, args.max_steps)[0]
            plan = (name, clf.max_epochs, clf.pretrain_epochs, clf.augment, clf.mixup)
            plans.setdefault(plan, []).append(arm)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    with args.output.open("a", newline="") as f:
        writer = csv.DictWriter(f, FIELDS, restval="")
        if not rows:
            writer.writeheader()

        def record(row, arms):
            for arm in arms:
                if (row["dataset"], arm) not in done:
                    done[row["dataset"], arm] = out = {**row, "arm": arm}
                    rows.append(out)
                    writer.writerow(out)
                    print("\t".join(str(out.get(k, "")) for k in FIELDS), flush=True)
            f.flush()

        todo = []
        for (name, epochs, pre, augment, mix), arms in plans.items():
            fitted = [done[name, a] for a in arms if (name, a) in done]
            if not fitted and augment is False:  # the same fit where the screen chose none
                twins = plans.get((name, epochs, pre, "auto", mix), [])
                fitted = [done[name, a] for a in twins if (name, a) in done
                          and done[name, a].get("augment") == "none"]
            if fitted:
                record(fitted[0], arms)
            else:
                todo.append((name, arms))
        for (_, arms), row in zip(todo, Parallel(n_jobs=args.n_jobs, return_as="generator")(
                delayed(fit_score)(name, arms[0], args.data_dir, args.max_steps)
                for name, arms in todo)):
            record(row, arms)
    print(summary(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
