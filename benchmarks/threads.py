"""Time default SPTClassifier fits on GunPoint's training split per torch thread count.

    python benchmarks/threads.py --threads none 1 2 --auto-steps 200 [--busy]

``none`` is ``n_threads=None`` (the package's choice). ``--busy`` runs one spinning
process beside the fits, as other work on a shared machine would. Each fit prints its
time, the thread count it ran with and the 1-minute load average; nothing is asserted
(timings depend on the machine and its load).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import torch
from skorch.callbacks import Callback
from sktime.datasets import load_gunpoint

from sktspt import SPTClassifier


class _SeenThreads(Callback):
    def on_epoch_end(self, net, **kwargs):
        self.count = torch.get_num_threads()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", nargs="+", default=["none", "1"],
                        help="n_threads values to time ('none' for None)")
    parser.add_argument("--auto-steps", type=int, default=None,
                        help="auto_steps of the fits (default: the estimator's)")
    parser.add_argument("--busy", action="store_true",
                        help="run one spinning process beside the fits")
    args = parser.parse_args(argv)
    X, y = load_gunpoint(split="train", return_X_y=True, return_type="numpy3D")
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.busy else None
    try:
        for value in args.threads:
            n_threads = None if value == "none" else int(value)
            seen = _SeenThreads()
            kw = {} if args.auto_steps is None else {"schedule__steps": args.auto_steps}
            start = time.perf_counter()
            SPTClassifier(pretrain_epochs="auto", random_state=0, device__threads=n_threads,
                          callbacks=[seen], **kw).fit(X, y)
            seconds = time.perf_counter() - start
            print(f"n_threads={n_threads} ran_with={seen.count} auto_steps="
                  f"{args.auto_steps or 'default'} busy={args.busy} fit_s={seconds:.1f} "
                  f"load1={os.getloadavg()[0]:.2f}", flush=True)
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()


if __name__ == "__main__":
    main()
