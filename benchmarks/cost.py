"""What a default fit costs: SPT before and after a change, beside MiniRocket, in one run.

Each fit runs in its own process with one torch thread, one at a time (or ``--jobs`` at a
time, each on its own core): the default ``SPTClassifier`` of the source tree at
``--baseline`` (a git revision, exported to a temporary folder), the one of this tree, and
MiniRocket with a ridge classifier (the benchmark's ``minirocket``). The three fits of a
dataset and seed are queued next to each other, so drift of the machine touches all three
alike. Per fit it records the fit's wall and CPU seconds, test accuracy, and prediction
throughput: series per second of one ``predict`` call on the whole test split. Rows are
appended to ``cost.csv`` as fits end; ``--resume`` skips the ones there.

    python benchmarks/cost.py --baseline 55aedf0 --seeds 3 --output results/cost \\
        --write-docs docs/cost.md

The page says which machine produced it; compare figures only within one page.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATASETS = ("GunPoint", "ArrowHead", "ItalyPowerDemand", "OSULeaf", "ACSF1", "PLAID",
            "BasicMotions", "JapaneseVowels")
MODELS = ("spt-before", "spt-after", "minirocket")
COLUMNS = ["dataset", "seed", "model", "accuracy", "fit_wall_s", "fit_cpu_s",
           "predict_series_per_s", "n_train", "n_test"]


def worker(job: dict) -> dict:
    """One fit and one prediction pass, in this process; ``sktspt`` is the one on the path."""
    import numpy as np
    import torch

    torch.set_num_threads(1)
    from sktspt.benchmark.datasets import load_dataset

    X, y, X_test, y_test, info = load_dataset(job["dataset"])
    if job["model"] == "minirocket":
        from sktspt.benchmark.models import MODELS as specs
        from sktspt.benchmark.models import RunConfig

        cfg = RunConfig(seed=job["seed"], pretrain_epochs="auto", epochs="auto", depth=None,
                        data=info)
        specs["minirocket"].factory(cfg).fit(X, y)  # numba compiles on the first fit
        model = specs["minirocket"].factory(cfg)
    else:
        from sktspt import SPTClassifier

        model = SPTClassifier(random_state=job["seed"], device__threads=1,  # SPT, as measured
                              **{"pretrain_epochs": "auto", **job.get("params", {})})
    wall, cpu = time.perf_counter(), time.process_time()
    model.fit(X, y)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    start = time.perf_counter()
    pred = model.predict(X_test)
    predict_s = time.perf_counter() - start
    return {"accuracy": float(np.mean(np.asarray(pred) == np.asarray(y_test))),
            "fit_wall_s": wall, "fit_cpu_s": cpu,
            "predict_series_per_s": len(y_test) / predict_s, "n_train": len(y),
            "n_test": len(y_test)}


#: Lengths of the scaling rows (synthetic series, the default size, a fixed patch).
SCALING_LENGTHS = (128, 512, 2048)
SCALING_PATCH = 16


def peers_worker(seed: int = 0) -> dict:
    """The rows of the page's second part, on this process's one thread (speed.py's
    functions): the measured float32 matmul peak; the default size's fine-tuning throughput
    on GunPoint and its share of that peak; SPT against sktime's MVTS transformer at equal
    tokens on GunPoint (and at the default patching); time per series against length at
    a fixed patch. Each SPT figure is fine-tuning at the defaults, timed per epoch after
    a warm-up epoch."""
    import dataclasses

    import torch

    torch.set_num_threads(1)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import speed

    peak = speed.matmul_peak()
    X, y, _, _ = speed.load_gunpoint()
    est, epoch, mem = speed.time_spt_fit("finetune", X, y, 8, 16, seed, **speed.DEFAULT_SIZE)
    gunpoint = speed._training_row("GunPoint", "finetune", X, epoch, mem, speed.DEFAULT_SIZE,
                                   16, est.patch_size_, 2, peak)
    cfg = dataclasses.replace(speed.FULL, seed=seed)
    equal = speed.measure_equal_tokens(cfg, log=lambda *a: None)
    scaling = []
    for t in SCALING_LENGTHS:
        Xs, ys = speed.synthetic_panel(32, 1, t, seed)
        est, epoch, mem = speed.time_spt_fit("finetune", Xs, ys, 4, 16, seed,
                                             patch_size=SCALING_PATCH, **speed.DEFAULT_SIZE)
        scaling.append(speed._training_row("synthetic", "finetune", Xs, epoch, mem,
                                           speed.DEFAULT_SIZE, 16, SCALING_PATCH, 2, peak))
    return {"peak": peak, "gunpoint": gunpoint, "equal_tokens": equal, "scaling": scaling}


def peers_section(peers: dict) -> list[str]:
    """The page's second part from :func:`peers_worker`'s rows."""
    import numpy as np

    peak, gp = peers["peak"], peers["gunpoint"]
    lines = [
        "## The network's step: matmul share, MVTS at equal tokens, length",
        "",
        "One process, one torch thread, after the fits above; CPU seconds. Fine-tuning "
        "steps of the default network (depth 3, d_model 64, batch 16), timed per epoch "
        "after a warm-up epoch.",
        "",
        f"- **Share of the matmul peak:** the float32 matmul peak measured here "
        f"(2048 × 2048) is {peak['gflops_cpu']:.1f} GFLOP/s; default-size fine-tuning on "
        f"GunPoint runs {gp['series_per_s_cpu']:.0f} series/s, {gp['achieved_gflops_cpu']:.1f} "
        f"GFLOP/s of the transformer's matrix products, **{100 * gp['peak_fraction_cpu']:.1f} %** "
        "of the peak (the rocket features are not matrix products and are not counted).",
        "",
        "| GunPoint (150 steps), equal size | SPT tokens | MVTS tokens | SPT series/s | "
        "MVTS series/s | MVTS time / SPT time (median, range) |",
        "|---|---|---|---|---|---|",
    ]
    for r in peers["equal_tokens"]:
        what = "one token per step (equal tokens)" if r["spt_tokens"] == r["mvts_tokens"] \
            else f"default patching (patch {r['patch_size']})"
        lines.append(
            f"| {what} | {r['spt_tokens']} | {r['mvts_tokens']} | "
            f"{r['spt_series_per_s_cpu']:.0f} | {r['mvts_series_per_s_cpu']:.0f} | "
            f"**{r['ratio_cpu']:.2f}×** ({r['ratio_cpu_min']:.2f}–{r['ratio_cpu_max']:.2f}) |")
    rows = peers["scaling"]
    lengths = [r["n_timepoints"] for r in rows]
    us = [r["us_per_series_cpu"] for r in rows]
    slope = float(np.polyfit(np.log(lengths), np.log(us), 1)[0])
    lines += [
        "",
        f"Cost against series length at a fixed patch ({SCALING_PATCH} steps; synthetic "
        f"series, one channel): time per series grows as length^{slope:.2f} "
        "(attention is quadratic in the tokens, the rest linear).",
        "",
        "| length | tokens | µs per series | series/s |",
        "|---|---|---|---|",
        *(f"| {r['n_timepoints']} | {r['n_tokens']} | {r['us_per_series_cpu']:.0f} | "
          f"{r['series_per_s_cpu']:.0f} |" for r in rows),
        "",
    ]
    return lines


def export(revision: str, folder: Path) -> Path:
    """The package at ``revision`` as plain files under ``folder`` (``git archive``)."""
    archive = subprocess.run(["git", "archive", "--format=tar", revision, "sktspt"], cwd=ROOT,
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def run_job(job: dict, source: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(source), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    out = subprocess.run([sys.executable, __file__, "--worker", json.dumps(job)], env=env,
                         capture_output=True, text=True, cwd=tempfile.gettempdir())
    if out.returncode:
        raise RuntimeError(f"{job} failed:\n{out.stderr[-3000:]}")
    return {**job, **json.loads(out.stdout.strip().splitlines()[-1])}


def report(rows: list[dict], baseline: str, command: str, seconds: float,
           params: dict | None = None, jobs: int = 1, kept: int = 0,
           peers: dict | None = None) -> str:
    import pandas as pd

    from sktspt.benchmark.report import machine_description

    df = pd.DataFrame(rows)
    for col in COLUMNS[3:]:
        df[col] = pd.to_numeric(df[col])
    mean = df.groupby(["dataset", "model"]).mean(numeric_only=True)
    order = [d for d in DATASETS if d in set(df.dataset)] + sorted(
        set(df.dataset) - set(DATASETS))
    lines = [
        "| dataset | fit before (s) | fit after (s) | speed-up | MiniRocket fit (s) "
        "| acc. before | acc. after | Δ (points) | MiniRocket acc. "
        "| predict after (series/s) | MiniRocket predict (series/s) |",
        "|---|" + "---|" * 10,
    ]
    ups = []

    def cell(name, model, column, fmt):
        return format(mean.loc[(name, model), column], fmt) if (name, model) in mean.index else "—"

    for name in order:
        b, a = mean.loc[(name, "spt-before")], mean.loc[(name, "spt-after")]
        up = b.fit_wall_s / a.fit_wall_s
        ups.append(up)
        lines.append(
            f"| {name} | {b.fit_wall_s:.1f} | {a.fit_wall_s:.1f} | {up:.2f}× | "
            f"{cell(name, 'minirocket', 'fit_wall_s', '.2f')} | {b.accuracy:.3f} | "
            f"{a.accuracy:.3f} | {100 * (a.accuracy - b.accuracy):+.1f} | "
            f"{cell(name, 'minirocket', 'accuracy', '.3f')} | {a.predict_series_per_s:.0f} | "
            f"{cell(name, 'minirocket', 'predict_series_per_s', '.0f')} |")
    fit = df.groupby("model").fit_wall_s.mean()
    acc = {k: df[df.model == k].groupby("dataset").accuracy.mean().mean() for k in MODELS}
    rocket = (f"{fit['minirocket']:.2f}", f"{acc['minirocket']:.3f}") if "minirocket" in fit \
        else ("—", "—")
    lines.append(
        f"| **mean** | {fit['spt-before']:.1f} | {fit['spt-after']:.1f} | "
        f"{speedups(ups)['geometric']:.2f}× (geometric; min {min(ups):.2f}×) | {rocket[0]} | "
        f"{acc['spt-before']:.3f} | {acc['spt-after']:.3f} | "
        f"{100 * (acc['spt-after'] - acc['spt-before']):+.1f} | {rocket[1]} | | |")
    lines += ["", *summary_lines(ups, fit, mean, order)]
    seeds = sorted(set(int(s) for s in df.seed))
    return "\n".join([
        "# What a default fit costs",
        "",
        "Generated by `benchmarks/cost.py`; do not edit by hand.",
        "",
        f"The default `SPTClassifier` at `{baseline}` (before) and at this page's commit "
        "(after), beside MiniRocket with a ridge classifier, on the eight shipped sets' default "
        f"splits, seeds {seeds}; the three fits of a dataset and seed are queued together "
        f"and run {jobs} at a time, each in its own process with one torch thread"
        + (" (so the arms of a dataset and seed run at about the same time)" if jobs > 1
           else "")
        + ". Times are wall seconds of `fit` "
        "(MiniRocket's numba compile is done before timing); accuracy is on the test split; "
        "prediction is series per second of one `predict` call on the whole test split. "
        "Means over seeds; the mean accuracy row is the mean of the per-dataset means."
        + (f" Both SPT arms ran with `{params}` instead of the defaults." if params else ""),
        "",
        *lines,
        "",
        f"- Command: `{command}`",
        f"- Machine: {machine_description()}; one torch thread per fit",
        f"- Date: {time.strftime('%Y-%m-%d %H:%M')}; run took {seconds:.0f} s"
        + (f"; {kept} of the {len(rows)} fits were read from an earlier run's `cost.csv` "
           "(`--resume`)" if kept else ""),
        "",
        *(peers_section(peers) if peers else []),
    ])


def speedups(ups) -> dict:
    """Per-dataset speed-ups summarised: the geometric mean (the mean of ratios that treats
    2× faster and 2× slower alike) and the arithmetic mean, which overstates it."""
    ups = [float(u) for u in ups]
    return {"geometric": math.exp(sum(map(math.log, ups)) / len(ups)),
            "arithmetic": sum(ups) / len(ups)}


def summary_lines(ups, fit, mean, order) -> list[str]:
    """The speed-up three ways, and what the change cost in accuracy, per dataset."""
    s = speedups(ups)
    lost = [(name, 100 * (mean.loc[(name, "spt-after")].accuracy
                          - mean.loc[(name, "spt-before")].accuracy)) for name in order]
    worse = [f"{name} {d:+.1f}" for name, d in lost if d <= -1.0]
    return [
        f"- Speed-up: geometric mean of the per-dataset ratios **{s['geometric']:.2f}×**; "
        f"ratio of the mean fit times {fit['spt-before'] / fit['spt-after']:.2f}× (what the "
        f"eight fits take together); arithmetic mean of the ratios {s['arithmetic']:.2f}× "
        "(overstates: one large ratio outweighs several small ones).",
        "- Accuracy: " + (
            "the change lost a point or more on " + ", ".join(worse) + "; the mean moved "
            f"{sum(d for _, d in lost) / len(lost):+.1f} points (test split, "
            f"{len(ups)} datasets, so a point on one set is within seed noise but the sign "
            "is the change's price)." if worse else
            f"no dataset lost a point or more; the mean moved "
            f"{sum(d for _, d in lost) / len(lost):+.1f} points."),
    ]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--baseline", default="HEAD", help="git revision of the 'before' tree")
    p.add_argument("--datasets", nargs="+", default=list(DATASETS))
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    p.add_argument("--output", type=Path, default=ROOT / "results" / "cost")
    p.add_argument("--params", nargs="+", default=[], metavar="KEY=VALUE",
                   help="SPTClassifier parameters for both SPT arms (e.g. auto_steps=200 to "
                        "time the code alone on a short budget); default: its defaults")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--jobs", type=int, default=1, help="fits at a time (at most the cores)")
    p.add_argument("--write-docs", type=Path, default=None)
    p.add_argument("--no-peers", action="store_true",
                   help="skip the second part (matmul share, MVTS at equal tokens, length)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        job = json.loads(args.worker)
        result = peers_worker(job["seed"]) if job["model"] == "peers" else worker(job)
        print(json.dumps(result, default=float))  # numpy scalars as plain numbers
        return 0
    args.output.mkdir(parents=True, exist_ok=True)
    path = args.output / "cost.csv"
    rows = []
    if args.resume and path.exists():
        with path.open() as f:
            rows = list(csv.DictReader(f))
    elif path.exists():
        path.unlink()
    done = {(r["dataset"], int(r["seed"]), r["model"]) for r in rows}
    start = time.time()
    params = {k: json.loads(v) if v and (v[0].isdigit() or v[0] in "-[{") else v
              for k, v in (item.split("=", 1) for item in args.params)}
    jobs = [{"dataset": name, "seed": seed, "model": model, "params": params}
            for seed in range(args.seeds)
            for name in args.datasets for model in args.models
            if (name, seed, model) not in done]
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(args.jobs) as pool:
        before = export(args.baseline, Path(tmp))
        futures = [pool.submit(run_job, job, before if job["model"] == "spt-before" else ROOT)
                   for job in jobs]
        for future in as_completed(futures):
            row = future.result()
            print(f"{row['dataset']} seed {row['seed']} {row['model']}: acc "
                  f"{row['accuracy']:.3f}, fit {row['fit_wall_s']:.1f} s, predict "
                  f"{row['predict_series_per_s']:.0f} series/s", flush=True)
            new = not path.exists()
            with path.open("a", newline="") as f:
                out = csv.DictWriter(f, COLUMNS, extrasaction="ignore")
                if new:
                    out.writeheader()
                out.writerow(row)
            rows.append(row)
    peers = None
    if not args.no_peers:
        peers = run_job({"model": "peers", "seed": 0}, ROOT)
        (args.output / "peers.json").write_text(json.dumps(peers, indent=1))
    if args.write_docs:
        command = "python benchmarks/cost.py " + " ".join(argv or sys.argv[1:])
        args.write_docs.write_text(report(rows, args.baseline, command, time.time() - start,
                                          params, args.jobs, len(done), peers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
