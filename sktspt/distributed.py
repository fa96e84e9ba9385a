"""One fit on several processes (GPUs, CPU cores or machines) with torch DDP.

PyTorch's ``DistributedDataParallel`` (DDP) does the work: every process holds a copy of
the network, trains on its share of each batch, and DDP averages the gradients during
``backward``, so all copies take the same step. ``torchrun`` starts the processes;
:class:`DataParallel` is the skorch callback that plugs a fit into it. Every process runs
``fit`` on the same data with the same integer ``random_state`` (checked when training
starts), trains on every ``world_size``-th series of each shuffled epoch in batches of
``ceil(batch_size / world_size)`` (so the schedule is a one-process fit's), and validates
on the whole split (so all keep the same epoch); save from ``rank() == 0`` after
``set_params(callbacks=None, pretrain__callbacks=None)``. Launch commands and a complete
script: ``docs/performance.md``, ``examples/ddp.py``.
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
    """The training iterator's shard (:class:`~sktspt.loaders.TensorBatchIterator`), set as
    attributes: skorch reads them every epoch; ``set_params`` would re-initialise the module."""
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
