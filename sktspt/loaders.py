"""Batches sliced from whole tensors instead of per-sample ``Dataset.__getitem__`` calls.

skorch's default ``DataLoader`` indexes and collates one series at a time; for the small
models this package trains, that Python overhead costs as much as the model. The whole
training set is turned into one tensor once, and each batch is a single indexing op.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch.utils.data import Subset

from .views import valid_lengths

__all__ = ["TensorBatchIterator", "net_input", "stack_panels"]


def _as_tensors(dataset, pin_memory: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``(X, y)`` tensors of a skorch ``Dataset`` or a ``Subset`` of one (from ValidSplit),
    made once; ``pin_memory`` (a fit on a CUDA device) pins X for asynchronous copies."""
    cached = getattr(dataset, "_sktspt_tensors", None)
    if cached is not None:
        return cached
    base, indices = dataset, None
    if isinstance(dataset, Subset):
        base, indices = dataset.dataset, np.asarray(dataset.indices)

    def tensor(a, pin=False):
        t = torch.as_tensor(np.asarray(a))
        t = t if indices is None else t[indices]
        return t.pin_memory() if pin else t

    # X may be a dict of arrays (skorch passes each key to the module or step by name).
    X = ({k: tensor(v, pin_memory) for k, v in base.X.items()} if isinstance(base.X, dict)
         else tensor(base.X, pin_memory))
    y = None if base.y is None else tensor(base.y)
    dataset._sktspt_tensors = (X, y)
    return X, y


class TensorBatchIterator:
    """Iterate over ``(X_batch, y_batch)`` slices of a dataset held as tensors.

    Accepts the arguments skorch passes to ``iterator_train`` / ``iterator_valid``
    (``pin_memory`` pins the tensors: set for fits on a CUDA device only);
    ``shuffle`` draws a permutation from torch's global generator (seeded by the
    estimators), so batches are reproducible.

    ``num_replicas > 1`` (data-parallel training, see :mod:`sktspt.distributed`) gives
    process ``rank`` every ``num_replicas``-th series of the (shuffled) order, padded by
    wrapping round to a multiple of ``num_replicas`` as ``DistributedSampler`` does, in
    batches of ``ceil(batch_size / num_replicas)``: every process runs the same number of
    batches, and together they cover about ``batch_size`` series per step.

    ``trim_multiple > 0`` cuts each batch of a NaN-padded panel after the last patch of its
    longest series (``trim_multiple`` is the patch size) plus ``trim_margin`` steps, rounded
    up to a whole patch. A panel of unequal lengths is padded to its longest series, so
    without the cut every batch would pay for that one; the margin keeps what a
    tokenizer's receptive field sees past a series' end the same as in the full-length
    panel, so the cut changes no observed token.
    """

    def __init__(self, dataset, batch_size: int = 16, shuffle: bool = False,
                 num_replicas: int = 1, rank: int = 0, pin_memory: bool = False,
                 trim_multiple: int = 0, trim_margin: int = 0, **kwargs):
        self.dataset = dataset
        self.trim_multiple = trim_multiple
        self.trim_margin = trim_margin
        self.pin_memory = pin_memory
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.num_replicas = num_replicas
        self.rank = rank

    def _shard(self, n: int) -> tuple[int, int]:
        """``(series this process sees, its batch size)``."""
        k = max(1, int(self.num_replicas))
        return math.ceil(n / k), math.ceil(self.batch_size / k)

    def __len__(self) -> int:
        n, batch = self._shard(len(self.dataset))
        return math.ceil(n / batch)

    def __iter__(self):
        X, y = _as_tensors(self.dataset, self.pin_memory)
        n = len(next(iter(X.values()))) if isinstance(X, dict) else len(X)
        order = torch.randperm(n) if self.shuffle else None
        batch_size = self.batch_size
        if self.num_replicas > 1:
            if order is None:
                order = torch.arange(n)
            k, (n, batch_size) = int(self.num_replicas), self._shard(n)
            order = order.repeat(math.ceil(n * k / len(order)))[: n * k][self.rank :: k]
        for start in range(0, n, batch_size):
            stop = start + batch_size
            idx = slice(start, stop) if order is None else order[start:stop]
            Xb = {k: v[idx] for k, v in X.items()} if isinstance(X, dict) else X[idx]
            yield self._trim(Xb), (torch.zeros(0) if y is None else y[idx])

    def _length(self, Xb: torch.Tensor) -> int | None:
        """Steps of ``Xb`` that the cut keeps, or None to keep them all (see above)."""
        if not self.trim_multiple or Xb.ndim != 3 or not Xb.is_floating_point():
            return None
        p = self.trim_multiple
        # The last token's whole patch, then the margin its padded steps can see beyond it.
        end = math.ceil(int(valid_lengths(Xb).max()) / p) * p + self.trim_margin
        length = math.ceil(end / p) * p
        return length if length < Xb.shape[2] else None

    def _trim(self, Xb):
        """``Xb`` without the trailing steps that pad every one of its series (see above); of
        a dict, ``"X"`` so, and its ``"features"`` (per token, ``(n, k, f)``) by the same tokens."""
        if not isinstance(Xb, dict):
            length = self._length(Xb)
            return Xb if length is None else Xb[:, :, :length]
        length = self._length(Xb["X"]) if "X" in Xb else None
        if length is None:
            return Xb
        Xb = {**Xb, "X": Xb["X"][:, :, :length]}
        if "features" in Xb:
            Xb["features"] = Xb["features"][:, : length // self.trim_multiple]
        return Xb


def _pad_to(X: np.ndarray, length: int) -> np.ndarray:
    return np.pad(X, ((0, 0), (0, 0), (0, length - X.shape[2])), constant_values=np.nan)


def stack_panels(Xp: np.ndarray, U: np.ndarray) -> np.ndarray:
    """Prepared panels ``Xp`` and ``U`` as one, the shorter NaN-padded to the longer."""
    t = max(Xp.shape[2], U.shape[2])
    return np.concatenate([_pad_to(Xp, t), _pad_to(U, t)])


def net_input(Xp: np.ndarray, weights: np.ndarray | None = None):
    """Training input for skorch: ``Xp``, or a dict with per-series loss weights beside it
    (skorch slices every key alike)."""
    return Xp if weights is None else {"X": Xp, "sample_weight": weights}
