"""Training-split CV of several configurations on several CV seeds at once (GPU sweeps).

`tune.py` scores one configuration on one CV seed per command, which on 2 CPU cores is all
a session affords; its single-seed differences were mostly within noise (rounds 4-28). This
runs the whole grid (configs x datasets x CV seeds x folds, SPT and optionally scratch) in
one pool of worker processes, for a machine with many cores or one GPU that a dozen small
fits share. Jobs are ordered CV seed, dataset, fold, then config, so a run cut off by its
time limit still holds *paired* blocks: every config scored on the same folds. Each row is
appended to the CSV as its fit ends, with its CV seed.

    python benchmarks/sweep.py --configs r26_auto r29_rotary --scratch r26_auto \\
        --datasets ArrowHead GunPoint --seeds 0 1 2 --workers 14 --device cuda \\
        --time-limit 500 --output results/sweep.csv
    python benchmarks/sweep.py --summarize --against r26_auto --output results/sweep.csv
"""

from __future__ import annotations

import argparse
import csv
import multiprocessing
import os
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

from sklearn.model_selection import StratifiedKFold

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tune  # noqa: E402  (the configurations and the one-fold fit live there)

COLUMNS = ["config", "dataset", "model", "cv_seed", "fold", "cv_accuracy", "seconds", "note"]


def plan(configs: list[str], scratch: list[str], datasets: list[str], seeds: list[int],
         folds: int) -> list[tuple]:
    """Jobs ``(config, dataset, model, seed, fold)`` in the order that keeps blocks paired."""
    models = [(c, "spt") for c in configs] + [(c, "scratch") for c in scratch]
    return [(config, name, model, seed, fold)
            for seed in seeds for name in datasets for fold in range(folds)
            for config, model in models]


def _one(config: str, name: str, model: str, seed: int, fold: int, folds: int,
         device: str) -> tuple:
    X, y = tune.load(name)
    train, test = list(StratifiedKFold(folds, shuffle=True, random_state=seed).split(X, y))[fold]
    _, _, acc, sec, note = tune.run(tune.CONFIGS[config], X, y, model, fold, train, test,
                                    seed, device)
    return config, name, model, seed, fold, f"{acc:.4f}", f"{sec:.1f}", note


def summary(csv_path: str, baseline: str) -> str:
    """SPT's paired per-fold Δ against ``baseline`` (tune.py's table, folds keyed by CV seed
    too), then the mean CV accuracy of every config and model, scratch rows included."""
    import pandas as pd

    means = pd.read_csv(csv_path).pivot_table(index="dataset", columns=["config", "model"],
                                              values="cv_accuracy")
    return (tune.compare(csv_path, baseline) + "\n\nMean CV accuracy (all scored folds):\n\n"
            + means.round(3).to_string())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--configs", nargs="+", default=["r26_auto"])
    parser.add_argument("--scratch", nargs="*", default=[],
                        help="configs also scored from scratch at equal optimizer steps")
    parser.add_argument("--datasets", nargs="+", default=["ArrowHead", "GunPoint"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--time-limit", type=float, default=None,
                        help="seconds; stop waiting then and keep the rows written so far")
    parser.add_argument("--output", default="results/sweep.csv")
    parser.add_argument("--summarize", action="store_true")
    parser.add_argument("--against", default="r26_auto")
    args = parser.parse_args()
    if args.summarize:
        print(summary(args.output, args.against))
        return
    unknown = sorted(set(args.configs + args.scratch) - set(tune.CONFIGS))
    if unknown:
        parser.error(f"unknown configs: {unknown}")
    jobs = plan(args.configs, args.scratch, args.datasets, args.seeds, args.folds)
    os.makedirs(os.path.dirname(args.output) or ".", exist_ok=True)
    new = not os.path.exists(args.output)
    start, done = time.monotonic(), 0
    context = multiprocessing.get_context("spawn")  # CUDA cannot be forked
    with open(args.output, "a", newline="") as f:
        writer = csv.writer(f)
        if new:
            writer.writerow(COLUMNS)
        pool = ProcessPoolExecutor(args.workers, mp_context=context)
        pending = {pool.submit(_one, *job, args.folds, args.device) for job in jobs}
        while pending:
            left = None if args.time_limit is None else args.time_limit - (time.monotonic() - start)
            if left is not None and left <= 0:
                break
            finished, pending = wait(pending, timeout=left, return_when=FIRST_COMPLETED)
            for future in finished:
                row = future.result()
                writer.writerow(row)
                f.flush()
                done += 1
                print(f"[{time.monotonic() - start:6.0f} s] {done}/{len(jobs)} "
                      + " ".join(map(str, row[:7])), flush=True)
    print(f"{done} of {len(jobs)} fits in {time.monotonic() - start:.0f} s", flush=True)
    if done:
        print(summary(args.output, args.against if args.against in args.configs
                      else args.configs[0]), flush=True)
    if pending:  # the time limit: stop the fits still running, keep what was written
        for worker in multiprocessing.active_children():
            worker.terminate()
        os._exit(0)
    pool.shutdown()


if __name__ == "__main__":
    main()
