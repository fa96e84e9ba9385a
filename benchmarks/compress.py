"""Cheaper prediction from fitted models: LEAP early exit and TWT layer fusion, measured.

``python benchmarks/compress.py`` fits, per dataset (the eight shipped ones by default) and
seed, two ``SPTClassifier`` of ``--depth`` layers with the estimator's defaults (step budget
``--auto-steps``) on the default train split (one without, one with the LEAP exit loss,
``exit_loss_weight``) and measures on the test split:

- **LEAP:** accuracy, mean exit layer ("depth kept") and prediction speed-up for each
  ``early_exit`` threshold, for both models;
- **Truncation control:** the first k layers of the model without exit loss, nothing
  trained (``sktspt.compress.truncate_layers``), for each depth of ``--fuse-depths``;
- **TWT:** ``sktspt.compress.fuse_layers`` of the model without exit loss to each depth of
  ``--fuse-depths`` (default: every depth from 1 to ``depth - 1``; ``max_depth``,
  ``tolerance=None``), with and without the end-to-end fine-tune, plus the depth the
  default ``tolerance`` picks.

Speed is CPU time (``time.process_time``, one torch thread: on a shared machine the
steadier clock) at two batch sizes: **batch 1** runs the network on one series at a time
(``early_exit_pass`` with passes of one row, or ``module(x)`` for full and fused models),
summed over ``--latency-series`` test series; **batch 256** is ``predict_proba`` on 256
test series (repeated if the split is smaller), which runs passes of 64 series
(``INFERENCE_BATCH``) that shrink as series exit. Speed-up = full-model time / time.
Writes ``--output`` (Markdown), a plot next to it (``.png``) and the raw rows (``.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

from sktspt import SPTClassifier
from sktspt._routed import PHASE_STEPS
from sktspt.benchmark import DATASETS, load_dataset
from sktspt.compress import fuse_layers, truncate_layers
from sktspt.data import check_panel
from sktspt.leap import early_exit_pass

THRESHOLDS = (0.9, 0.95, 0.99)
#: Where the hand-written part of an existing page starts; a rerun keeps it.
HAND_WRITTEN = "## Usage"


def cpu_time(fn, repeats: int = 1) -> float:
    """Median CPU seconds of ``fn()`` over ``repeats`` calls (after one warm-up call)."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return statistics.median(times)


def batch1_time(clf, Xp: np.ndarray, threshold) -> float:
    """CPU seconds to run the network on each series of prepared Xp alone, summed."""
    module = clf.net_.module_
    module.eval()
    rows = [torch.from_numpy(np.ascontiguousarray(Xp[i : i + 1])) for i in range(len(Xp))]
    min_layer = int(clf.early_exit__min_layer)

    def run():
        with torch.no_grad():
            for x in rows:
                if threshold is None:
                    module(x)
                else:
                    early_exit_pass(module, x, threshold, min_layer, batch=1)

    return cpu_time(run, repeats=3)


def batch256_time(clf, X256: np.ndarray) -> float:
    return cpu_time(lambda: clf.predict_proba(X256), repeats=3)


def measure(clf, X_test, y_test, Xp1, X256, threshold, base_times) -> dict:
    """Accuracy, depth kept and speed-ups of ``clf`` with ``early_exit=threshold``."""
    clf.set_params(early_exit=threshold)
    try:
        acc = float(np.mean(clf.predict(X_test) == y_test))
        exits = clf.exit_layers(X_test)
        t1, t256 = batch1_time(clf, Xp1, threshold), batch256_time(clf, X256)
    finally:
        clf.set_params(early_exit=None)
    row = dict(accuracy=acc, depth_kept=float(exits.mean()), t1=t1, t256=t256)
    if base_times is not None:
        row.update(speedup1=base_times[0] / t1, speedup256=base_times[1] / t256)
    return row


def run_dataset(name, seed, args, log) -> list[dict]:
    X, y, X_test, y_test, _ = load_dataset(name)
    # Unequal-length sets come as nested frames; the NaN-padded array is what fit sees too.
    X256 = check_panel(X_test)[0][np.arange(256) % len(y_test)]
    rows = []
    common = dict(depth=args.depth, pretrain_epochs=args.pretrain_epochs,
                  max_epochs=args.epochs, schedule__steps=args.auto_steps, device__threads=1,
                  random_state=seed)
    models = {}
    for label, weight in (("no exit loss", 0.0), ("LEAP loss", args.exit_loss_weight)):
        start = time.perf_counter()
        models[label] = SPTClassifier(early_exit__loss_weight=weight, **common).fit(X, y)
        log(f"{name} seed {seed}: fitted depth-{args.depth} model ({label}) in "
            f"{time.perf_counter() - start:.0f} s")
    base = models["no exit loss"]
    Xp1 = base._input(X_test)[: args.latency_series]
    base_row = measure(base, X_test, y_test, Xp1, X256, None, None)
    base_times = (base_row["t1"], base_row["t256"])
    common_row = dict(dataset=name, seed=seed, depth=args.depth)
    rows.append({**common_row, "method": "full model", "setting": "",
                 **base_row, "speedup1": 1.0, "speedup256": 1.0})
    for label, clf in models.items():
        if label != "no exit loss":
            full = measure(clf, X_test, y_test, Xp1, X256, None, base_times)
            rows.append({**common_row, "method": f"full model, {label}", "setting": "", **full})
        for theta in THRESHOLDS:
            row = measure(clf, X_test, y_test, Xp1, X256, theta, base_times)
            rows.append({**common_row, "method": f"LEAP exit, {label}",
                         "setting": f"theta={theta}", **row})
        log(f"{name} seed {seed}: LEAP ({label}) measured")
    for k in fuse_depths(args):
        row = measure(truncate_layers(base, k), X_test, y_test, Xp1, X256, None, base_times)
        rows.append({**common_row, "method": "truncation (control)",
                     "setting": f"max_depth={k}", **row})
    for finetune in (0, args.finetune_steps):
        kind = "TWT fusion" + (" + fine-tune" if finetune else "")
        for k in fuse_depths(args):
            fused = fuse_layers(base, X, max_depth=k, tolerance=None, steps=args.steps,
                                finetune_steps=finetune, random_state=seed)
            row = measure(fused, X_test, y_test, Xp1, X256, None, base_times)
            rows.append({**common_row, "method": kind, "setting": f"max_depth={k}",
                         "groups": str(fused.fused_groups_), **row})
        log(f"{name} seed {seed}: {kind} measured")
    fused = fuse_layers(base, X, steps=args.steps, finetune_steps=args.finetune_steps,
                        random_state=seed)
    row = measure(fused, X_test, y_test, Xp1, X256, None, base_times)
    rows.append({**common_row, "method": "TWT fusion + fine-tune",
                 "setting": "tolerance=0.1 (default)", "groups": str(fused.fused_groups_),
                 "distances": np.round(fused.layer_distances_, 4).tolist(), **row})
    return rows


def fuse_depths(args) -> list[int]:
    """Depths to fuse to: ``--fuse-depths`` below ``--depth``, or all of 1 .. depth - 1."""
    return sorted(k for k in (args.fuse_depths or range(1, args.depth)) if 1 <= k < args.depth)


def summarise(rows: list[dict]) -> list[dict]:
    """Mean over datasets and seeds per (method, setting)."""
    keys = []
    for r in rows:
        if (r["method"], r["setting"]) not in keys:
            keys.append((r["method"], r["setting"]))
    out = []
    for method, setting in keys:
        sel = [r for r in rows if r["method"] == method and r["setting"] == setting]
        out.append(dict(
            method=method, setting=setting,
            **{k: float(np.mean([r[k] for r in sel]))
               for k in ("accuracy", "depth_kept", "speedup1", "speedup256")},
        ))
    return out


def plot(rows: list[dict], path: Path, depth: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    n_panels = len(datasets) + 1
    n_cols = min(n_panels, 3)
    n_rows = -(-n_panels // n_cols)
    fig, grid = plt.subplots(n_rows, n_cols, figsize=(3.8 * n_cols, 3.4 * n_rows),
                             sharex=True, squeeze=False)
    axes = grid.ravel()
    for ax in axes[n_panels:]:
        ax.set_visible(False)
    styles = {
        "truncation (control)": dict(marker="x", color="tab:gray", linestyle="--"),
        "TWT fusion": dict(marker="o", color="tab:blue"),
        "TWT fusion + fine-tune": dict(marker="s", color="tab:cyan"),
        "LEAP exit, no exit loss": dict(marker="^", color="tab:red", linestyle=":"),
        "LEAP exit, LEAP loss": dict(marker="v", color="tab:green", linestyle=":"),
    }

    def points(sel, method):
        if method.startswith(("TWT", "truncation")):
            pts = [r for r in sel if r["method"] == method and r["setting"].startswith("max")]
            full = [r for r in sel if r["method"] == "full model"]
            return sorted([(r["depth_kept"], r["accuracy"]) for r in pts + full])
        label = method.split(", ", 1)[1]
        full = [r for r in sel if r["method"] == (
            "full model" if label == "no exit loss" else f"full model, {label}")]
        pts = [r for r in sel if r["method"] == method]
        return sorted([(r["depth_kept"], r["accuracy"]) for r in pts + full])

    for ax, name in zip(axes[:n_panels], [*datasets, "mean"], strict=True):
        sel = rows if name == "mean" else [r for r in rows if r["dataset"] == name]
        if name == "mean":
            sel = [dict(r, dataset="mean") for r in summarise(rows)]
        for method, style in styles.items():
            pts = points(sel, method)
            if pts:
                ax.plot(*zip(*pts, strict=True), label=method, **style)
        ax.set_title(name)
        ax.set_xlabel("depth kept (layers run, mean)")
        ax.set_xticks(range(1, depth + 1))
        ax.grid(alpha=0.3)
    for ax in grid[:, 0]:
        ax.set_ylabel("test accuracy")
    axes[n_panels - 1].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_page(rows, args, seconds, path: Path) -> None:
    summary = summarise(rows)
    lines = [
        "# Cheaper prediction: LEAP early exit and TWT layer fusion",
        "",
        "The tables and the plot are generated by `benchmarks/compress.py` (issue 15); the "
        "sections\n*Usage* and *Findings* at the end are written by hand.",
        "",
        "**Command:** `" + " ".join(["python", *sys.argv]) + "`",
        "",
        f"**Datasets and settings (this run):** datasets {', '.join(args.datasets)} (default "
        f"train/test splits), seeds {', '.join(map(str, args.seeds))}, depth {args.depth} "
        f"(d_model 64, 4 heads, tokenizer={SPTClassifier().tokenizer!r}, "
        f"validation_fraction={SPTClassifier().validation_fraction}: the SPTClassifier "
        f"defaults of this run), pretrain_epochs={args.pretrain_epochs!r}, "
        f"max_epochs={args.epochs!r}, auto_steps={args.auto_steps}, "
        f"LEAP exit_loss_weight={args.exit_loss_weight}, "
        f"min_exit_layer=2, thresholds {', '.join(map(str, THRESHOLDS))}; TWT surrogates "
        f"{args.steps} AdamW steps each (lr 3e-4, batch 32), end-to-end fine-tune "
        f"{args.finetune_steps} steps. One torch thread, `nice -n 10`, on "
        f"{platform.machine()} with {os.cpu_count()} cores shared with other work; "
        f"{seconds / 60:.1f} minutes"
        + (f" for this invocation ({args.kept} dataset-seed pairs kept from an earlier "
           "run with `--resume`)." if args.kept else " in all."),
        "",
        "**Speed:** CPU time with one thread. *Batch 1*: the network run on one series at a "
        f"time, summed over {args.latency_series} test series. *Batch 256*: `predict_proba` "
        "on 256 test series (passes of 64 series that shrink as series exit). "
        "Speed-up = time of the full model without exit loss / time.",
        "",
        "## Mean over datasets",
        "",
        "| method | setting | accuracy | depth kept | speed-up, batch 1 | speed-up, batch 256 |",
        "|---|---|---|---|---|---|",
    ]
    for r in summary:
        lines.append(
            f"| {r['method']} | {r['setting']} | {r['accuracy']:.3f} | {r['depth_kept']:.2f} | "
            f"{r['speedup1']:.2f}x | {r['speedup256']:.2f}x |"
        )
    lines += ["", f"![accuracy against depth kept]({path.with_suffix('.png').name})", "",
              "## Per dataset", "",
              "| dataset | method | setting | accuracy | depth kept | speed-up 1 | "
              "speed-up 256 | groups |",
              "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['dataset']} | {r['method']} | {r['setting']} | {r['accuracy']:.3f} | "
            f"{r['depth_kept']:.2f} | {r['speedup1']:.2f}x | {r['speedup256']:.2f}x | "
            f"{r.get('groups', '')} |"
        )
    # The hand-written sections of an existing page (from "## Usage" on) are kept.
    old = path.read_text() if path.exists() else ""
    kept = old[old.index(HAND_WRITTEN):] if HAND_WRITTEN in old else ""
    path.write_text("\n".join(lines) + "\n" + (kept and "\n" + kept) + args.notes)


def _epochs(text: str):
    return text if text == "auto" else int(text)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--depth", type=int, default=6)
    parser.add_argument("--pretrain-epochs", type=_epochs, default="auto")
    parser.add_argument("--epochs", type=_epochs, default="auto")
    parser.add_argument("--auto-steps", type=int,
                        default=PHASE_STEPS,
                        help="optimizer steps per phase for 'auto' epochs")
    parser.add_argument("--fuse-depths", nargs="+", type=int, default=None,
                        help="depths TWT fuses to (default: 1 .. depth - 1)")
    parser.add_argument("--exit-loss-weight", type=float, default=1.0)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--finetune-steps", type=int, default=300)
    parser.add_argument("--latency-series", type=int, default=32)
    parser.add_argument("--output", type=Path, default=Path("docs/compression.md"))
    parser.add_argument("--resume", action="store_true",
                        help="keep the rows of the --output .json written so far and measure "
                             "only the (dataset, seed) pairs it lacks")
    parser.add_argument("--notes", type=Path, default=None,
                        help="Markdown appended to the page (the discussion of the numbers).")
    args = parser.parse_args(argv)
    args.notes = args.notes.read_text() if args.notes else ""
    torch.set_num_threads(1)
    start = time.perf_counter()

    def log(msg):
        print(f"[{time.perf_counter() - start:6.0f} s] {msg}", flush=True)

    raw = args.output.with_suffix(".json")
    raw.parent.mkdir(parents=True, exist_ok=True)
    rows = json.loads(raw.read_text()) if args.resume and raw.exists() else []
    done = {(r["dataset"], r["seed"]) for r in rows if r["depth"] == args.depth}
    rows = [r for r in rows if (r["dataset"], r["seed"]) in done]
    args.kept = len(done)
    for name in args.datasets:
        for seed in args.seeds:
            if (name, seed) in done:
                log(f"{name} seed {seed}: kept from {raw}")
                continue
            rows.extend(run_dataset(name, seed, args, log))
            # Written after each pair, so that an interrupted run loses one pair at most.
            raw.write_text(json.dumps(rows, indent=1))
    seconds = time.perf_counter() - start
    plot(rows, args.output.with_suffix(".png"), args.depth)
    write_page(rows, args, seconds, args.output)
    log(f"wrote {args.output}")


if __name__ == "__main__":
    main()
