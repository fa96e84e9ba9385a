"""What ``n_estimators`` members cost against one network: fit time of SPTClassifier.

    python benchmarks/ensemble_cost.py --datasets ArrowHead ACSF1 --members 1 3 5 --threads 1 2

For each dataset, thread count and member count it fits ``SPTClassifier`` with the defaults
(``--steps`` overrides ``auto_steps`` for a quicker run) on the dataset's default training
split and prints wall-clock and process CPU seconds, and each one's ratio to one member.
``--loop`` also times the members run one after another (:class:`~sktspt.nn.ensemble.Ensemble`
without its stacked path), the way ensembles trained before the stacked path existed.
``--device cuda`` times on a GPU, where ``precision="auto"`` trains in bfloat16. The best of
``--repeats`` fits is kept: another process on the machine only ever adds time. A small
ensemble is fitted first, untimed, so that no timed fit pays the process's one-time costs.
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Iterator

import torch

from sktspt import SPTClassifier
from sktspt.benchmark.datasets import load_dataset
from sktspt.nn.ensemble import Ensemble


@contextlib.contextmanager
def member_loop(on: bool) -> Iterator[None]:
    """Run ensembles member by member (``on``) instead of stacked."""
    if not on:
        yield
        return
    stackable = Ensemble.stackable
    Ensemble.stackable = lambda self: False
    try:
        yield
    finally:
        Ensemble.stackable = stackable


def fit_seconds(X, y, members: int, threads: int, device: str, steps: int | None,
                repeats: int) -> tuple[float, float]:
    """Best wall-clock and CPU seconds of ``repeats`` fits."""
    wall, cpu = float("inf"), float("inf")
    for _ in range(repeats):
        clf = SPTClassifier(n_estimators=members, device__threads=threads, device=device,
                            random_state=0, pretrain_epochs="auto",
                            **({} if steps is None else {"schedule__steps": steps}))
        if device == "cuda":
            torch.cuda.synchronize()
        w, c = time.perf_counter(), time.process_time()
        clf.fit(X, y)
        if device == "cuda":
            torch.cuda.synchronize()
        wall, cpu = min(wall, time.perf_counter() - w), min(cpu, time.process_time() - c)
    return wall, cpu


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["ArrowHead", "ACSF1"])
    parser.add_argument("--members", nargs="+", type=int, default=[1, 5])
    parser.add_argument("--threads", nargs="+", type=int, default=[1])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--steps", type=int, default=None, help="auto_steps (default: 1000)")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--loop", action="store_true", help="also time the member loop")
    args = parser.parse_args(argv)
    X, y = load_dataset(args.datasets[0])[:2]
    # One-time costs (lazy imports) out of the timings: 2 members, 1 thread, 2 steps, once.
    fit_seconds(X, y, members=2, threads=1, device=args.device, steps=2, repeats=1)
    print("| dataset | threads | members | path | wall s | x one (wall) | CPU s | x one (CPU) |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.datasets:
        X, y = load_dataset(name)[:2]
        for threads in args.threads:
            one = None
            for members in args.members:
                for loop in ([False, True] if args.loop and members > 1 else [False]):
                    with member_loop(loop):
                        wall, cpu = fit_seconds(X, y, members, threads, args.device, args.steps,
                                                args.repeats)
                    one = one or (wall, cpu)
                    path = "one network" if members == 1 else ("loop" if loop else "stacked")
                    print(f"| {name} | {threads} | {members} | {path} | {wall:.1f} | "
                          f"{wall / one[0]:.2f} | {cpu:.1f} | {cpu / one[1]:.2f} |", flush=True)


if __name__ == "__main__":
    main()
