"""One SPTClassifier fit on several processes with torch DDP, launched by torchrun.

Every process loads the same data and fits the same estimator; the ``DataParallel``
callback (:mod:`sktspt.distributed`) wraps the network in ``DistributedDataParallel``
and gives each process its share of every batch. Launch::

    torchrun --standalone --nproc_per_node 2 examples/ddp.py              # 2 CPU processes (gloo)
    torchrun --standalone --nproc_per_node 4 examples/ddp.py --device cuda # 4 GPUs (nccl)
    # several machines: the same command on each, with --nnodes, --node_rank and
    # --rdzv_endpoint host:port (see torchrun --help)

Run with plain ``python examples/ddp.py`` it is an ordinary one-process fit, the
reference to compare with. Rank 0 prints the test accuracy; ``--out DIR`` makes every
process write ``rank<r>.json`` (accuracy and a checksum of its weights, which must agree
across processes) and ``--save PATH`` saves the model from rank 0.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time

import numpy as np
import torch


def synthetic(n: int, seed: int, t: int = 48, n_classes: int = 3):
    """Sines whose frequency depends on the class, random phase, noise."""
    g = np.random.default_rng(seed)
    y = np.arange(n) % n_classes
    tt = np.linspace(0, 1, t)
    X = np.sin(2 * np.pi * (2 + 3 * y)[:, None, None] * tt + g.uniform(0, 2 * np.pi, (n, 1, 1)))
    return (X + 0.1 * g.normal(size=X.shape)).astype(np.float32), y


def load(name: str):
    if name == "synthetic":
        return (*synthetic(64, 1), *synthetic(60, 2))
    from sktime.datasets import load_UCR_UEA_dataset

    X, y = load_UCR_UEA_dataset(name, split="train", return_X_y=True, return_type="numpy3D")
    Xt, yt = load_UCR_UEA_dataset(name, split="test", return_X_y=True, return_type="numpy3D")
    return X, y, Xt, yt


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="GunPoint", help="UCR/UEA name or 'synthetic'")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (one GPU per process)")
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--tiny", action="store_true", help="a small, fast network (tests)")
    parser.add_argument("--out", help="folder for rank<r>.json")
    parser.add_argument("--save", help="save the fitted model here (rank 0)")
    args = parser.parse_args(argv)

    from sktspt import SPTClassifier
    from sktspt.distributed import DataParallel, init_process_group, local_rank, rank, world_size

    init_process_group()
    device = args.device
    if device == "cuda":
        torch.cuda.set_device(local_rank())
        device = f"cuda:{local_rank()}"
    X, y, Xt, yt = load(args.dataset)
    params = dict(random_state=0, device__threads=1, device=device,
                  device__precision=args.precision)
    if args.tiny:
        params.update(depth=1, d_model=16, architecture__n_heads=2,
                      architecture__dim_feedforward=32, architecture__dropout=0.0,
                      batch_size=8, validation_fraction=0.0, pretrain_epochs=2, max_epochs=10,
                      lr=3e-3)
    clf = SPTClassifier(callbacks=[DataParallel()], pretrain__callbacks=[DataParallel()], **params)
    start = time.perf_counter()
    clf.fit(X, y)
    seconds = time.perf_counter() - start
    accuracy = float(clf.score(Xt, yt))
    weights = b"".join(p.detach().cpu().numpy().tobytes() for p in clf.net_.module_.parameters())
    # series this process trained on in the last fine-tuning epoch (its share of the data)
    seen = sum(b["train_batch_size"] for b in clf.history_[-1, "batches"] if "train_loss" in b)
    result = dict(rank=rank(), world_size=world_size(), accuracy=accuracy,
                  fit_seconds=round(seconds, 2), train_series_per_epoch=int(seen),
                  weights_sha1=hashlib.sha1(weights).hexdigest())
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, f"rank{rank()}.json"), "w") as f:
            json.dump(result, f)
    if rank() == 0:
        print(f"{world_size()} process(es): test accuracy {accuracy:.3f}, fit {seconds:.1f} s")
        if args.save:
            clf.set_params(callbacks=None, pretrain__callbacks=None).save(args.save)
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()
    return result


if __name__ == "__main__":
    main()
