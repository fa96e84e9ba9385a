"""One fit on several processes (GPUs, CPU cores or machines) with torch DDP.

PyTorch's ``DistributedDataParallel`` (DDP) does the work: every process holds a copy
of the network, trains on its own share of each batch, and DDP averages the gradients
across processes during ``backward``, so all copies take the same optimizer step and
stay identical. ``torchrun`` (shipped with torch) starts the processes and sets up their
rendezvous; :class:`DataParallel` is the skorch callback that plugs a fit into it::

    # train.py
    from sktspt import SPTClassifier
    from sktspt.distributed import DataParallel, init_process_group

    init_process_group()                       # reads torchrun's environment
    clf = SPTClassifier(random_state=0, device=device_for_this_process(),
                        callbacks=[DataParallel()], pretrain__callbacks=[DataParallel()])
    clf.fit(X, y)                              # every process: the same X, y and seed

    # torchrun --nproc_per_node 2 train.py                  (2 CPU processes, gloo)
    # torchrun --nproc_per_node 8 train.py                  (8 GPUs, nccl)

See ``examples/ddp.py`` for a complete script and ``docs/performance.md`` for the launch
commands. What each process does:

- It loads the whole training set and runs the estimator's ``fit`` with the same
  parameters, including an integer ``random_state``: the validation split, the shuffled
  batch order and the initial weights are drawn identically everywhere (checked when
  training starts: a process whose random state differs raises ``ValueError``).
- It trains on every ``world_size``-th series of each epoch's shuffled order, in batches
  of ``ceil(batch_size / world_size)``: ``batch_size`` stays the batch of one optimizer
  step across all processes, so the learning-rate schedule and the number of steps are
  those of a one-process fit.
- Validation (best-epoch choice) runs on the whole validation split in every process,
  so every process keeps the same epoch.

After ``fit`` every process holds the same fitted estimator (the wrapper is removed at
the end of each phase); save it from one process (``rank() == 0``), with
``callbacks=None, pretrain__callbacks=None`` set first.
"""

from __future__ import annotations

import hashlib
import os

import torch
import torch.distributed as dist
from skorch.callbacks import Callback
from torch.nn.parallel import DistributedDataParallel

__all__ = ["DataParallel", "init_process_group", "rank", "world_size", "local_rank"]


def init_process_group(backend: str | None = None) -> None:
    """Join the process group that ``torchrun`` set up (no-op without it, or if joined).

    ``backend`` defaults to ``"nccl"`` when CUDA is available and ``"gloo"`` otherwise.
    A GPU process should also ``torch.cuda.set_device(local_rank())``.
    """
    if not dist.is_available():
        raise RuntimeError("this torch build has no torch.distributed")
    if dist.is_initialized() or "WORLD_SIZE" not in os.environ:
        return
    if backend is None:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend=backend)


def _active() -> bool:
    return dist.is_available() and dist.is_initialized()


def rank() -> int:
    """This process's rank (0 without a process group)."""
    return dist.get_rank() if _active() else 0


def world_size() -> int:
    """Number of processes (1 without a process group)."""
    return dist.get_world_size() if _active() else 1


def local_rank() -> int:
    """Rank on this machine, from torchrun's ``LOCAL_RANK`` (0 without it)."""
    return int(os.environ.get("LOCAL_RANK", 0))


class _DDP(DistributedDataParallel):
    """DDP whose unknown attributes come from the wrapped network.

    The training code reaches ``module_.encoder`` (hooks for SIGReg and LEAP) and
    ``module_.embed``; through this wrapper they still resolve, while the forward pass
    goes through DDP and so synchronises gradients.
    """

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.module, name)


def _shard_iterator(net, num_replicas: int, rank: int) -> None:
    """Arguments of the training iterator (:class:`~sktspt.loaders.TensorBatchIterator`).

    Set as attributes: skorch reads ``iterator_train__*`` from them at every epoch, and
    ``set_params`` would re-initialise the module of an initialised net.
    """
    vars(net).update(iterator_train__num_replicas=num_replicas, iterator_train__rank=rank)


class DataParallel(Callback):
    """skorch callback: train this net with DistributedDataParallel across processes.

    Pass it in ``callbacks`` (fine-tuning) and ``pretrain__callbacks`` (pretraining) of
    :class:`~sktspt.SPTClassifier`, or ``callbacks`` of :class:`~sktspt.SPTPretrainer`.
    Without a process group (a plain ``python`` run) it does nothing, so the same
    script runs on one process too.

    Parameters
    ----------
    find_unused_parameters : bool, default=False
        Passed to ``DistributedDataParallel``; only needed for networks with weights
        that some forward passes skip.
    """

    def __init__(self, find_unused_parameters: bool = False):
        self.find_unused_parameters = find_unused_parameters

    def on_train_begin(self, net, X=None, y=None, **kwargs):
        if not _active() or world_size() == 1 or isinstance(net.module_, _DDP):
            return
        self._check_same_random_state(net)
        device = torch.device(net.device)
        ids = [device.index if device.index is not None else torch.cuda.current_device()] \
            if device.type == "cuda" else None
        net.module_ = _DDP(net.module_, device_ids=ids,
                           find_unused_parameters=self.find_unused_parameters)
        _shard_iterator(net, world_size(), rank())

    def on_train_end(self, net, X=None, y=None, **kwargs):
        if isinstance(net.module_, _DDP):
            net.module_ = net.module_.module
            _shard_iterator(net, 1, 0)

    @staticmethod
    def _check_same_random_state(net) -> None:
        """All processes must draw the same batches: compare their torch RNG states."""
        digest = hashlib.sha1(torch.random.get_rng_state().numpy().tobytes()).hexdigest()
        value = torch.tensor([float(int(digest[:12], 16))], dtype=torch.float64)
        device = net.device if torch.device(net.device).type == "cuda" else "cpu"
        low, high = value.to(device), value.clone().to(device)
        dist.all_reduce(low, op=dist.ReduceOp.MIN)
        dist.all_reduce(high, op=dist.ReduceOp.MAX)
        if low.item() != high.item():
            raise ValueError(
                "Data-parallel processes started training with different random states: "
                "give every process the same integer random_state (and the same data), "
                "so that they draw the same validation split and batch order."
            )
