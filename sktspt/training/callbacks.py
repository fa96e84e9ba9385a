"""skorch callbacks of the SPT estimators: :class:`FiniteLoss`, :class:`LighthouseSchedule`
and :class:`ResumableCheckpoint`. The epoch checkpoint that resuming reads lives in
:mod:`sktspt.training.resume`, the progress bars in :mod:`sktspt.progress`.
"""

from __future__ import annotations

import math
import os
import warnings

from skorch.callbacks import Callback

from ..nn.lighthouse import Lighthouse, middle_attentions, set_sparse_attention

__all__ = ["FiniteLoss", "LighthouseSchedule", "ResumableCheckpoint", "checkpoint_folder",
           "optimizer_steps", "without_checkpoint"]


def optimizer_steps(history) -> int:
    """Optimizer steps recorded in a skorch ``history`` (its training batches)."""
    return int(sum(row.get("train_batch_count", 0) for row in history))


class FiniteLoss(Callback):
    """Stop training with advice as soon as a batch loss is NaN or infinite.

    Once the loss is non-finite every later update is too (the weights become NaN), so
    going on only wastes time and ends in NaN predictions. The check reads the loss
    value skorch has already recorded, so it adds no device synchronisation.
    """

    def on_batch_end(self, net, batch=None, training=None, **kwargs) -> None:
        key = "train_loss" if training else "valid_loss"
        try:
            value = float(net.history[-1, "batches", -1, key])
        except KeyError:
            return
        if math.isfinite(value):
            return
        phase = "training" if training else "validation"
        raise FloatingPointError(
            f"The {phase} loss became {value} in epoch {len(net.history)}: training "
            f"diverged. Try a lower learning rate (lr={net.lr} now), keep normalize="
            "'global' or 'instance' so that inputs are standardised, and check X for "
            "extreme values."
        )


class LighthouseSchedule(Callback):
    """Lighthouse attention for a phase's first steps, dense for the last ``recovery``.

    ``total_steps`` is the phase's planned optimizer steps; the last
    ``ceil(recovery * total_steps)`` run dense on the same weights. Steps already in the
    net's history count, so a resumed fit switches at the same step, and a warm start
    continues dense. Attention is dense again when training ends.
    """

    def __init__(self, lighthouse: Lighthouse, total_steps: int, recovery: float = 0.1):
        self.lighthouse = lighthouse
        self.total_steps = total_steps
        self.recovery = recovery

    def initialize(self):
        self.steps_ = 0
        self.dense_from_ = self.total_steps - math.ceil(self.recovery * self.total_steps)
        return self

    def on_train_begin(self, net, **kwargs) -> None:
        self.steps_ = optimizer_steps(net.history)
        if not middle_attentions(net.module_):
            warnings.warn(
                "attention='lighthouse' has no effect: the encoder has fewer than 3 layers "
                "(the first and last layers always stay dense).", UserWarning, stacklevel=2,
            )

    def on_batch_begin(self, net, batch=None, training=False, **kwargs) -> None:
        if training:
            sparse = self.steps_ < self.dense_from_
            set_sparse_attention(net.module_, self.lighthouse if sparse else None)

    def on_batch_end(self, net, batch=None, training=False, **kwargs) -> None:
        if training:
            self.steps_ += 1

    def on_train_end(self, net, **kwargs) -> None:
        set_sparse_attention(net.module_, None)


class ResumableCheckpoint(Callback):
    """Resumable checkpoints of a whole fit in ``dirname``; pass it in ``callbacks``.

    ``fit`` then writes a checkpoint every epoch of each phase, in ``dirname/pretrain``
    and ``dirname/finetune`` (:class:`~sktspt.training.resume.EpochCheckpoint`), as
    skorch's ``Checkpoint`` and ``LoadInitState`` together: a ``fit`` that was interrupted
    (Ctrl-C, a killed process) resumes from its last epoch when called again with the same
    data and parameters; a finished fit is reloaded, not retrained. A folder written by a
    different fit raises ``ValueError`` (so leave it out under sktime's ``evaluate`` and
    benchmarks, which fit clones repeatedly). The estimator reads it at the start of
    ``fit``; a saved model leaves it out.

    Parameters
    ----------
    dirname : str or path
        Folder of the fit's checkpoints.
    """

    def __init__(self, dirname):
        self.dirname = dirname


def _callback(item):
    return item[1] if isinstance(item, tuple) and len(item) == 2 else item


def checkpoint_folder(callbacks) -> str | os.PathLike | None:
    """The ``dirname`` of the :class:`ResumableCheckpoint` in ``callbacks``, or None."""
    found = [c for c in map(_callback, callbacks or ()) if isinstance(c, ResumableCheckpoint)]
    if len(found) > 1:
        raise ValueError("callbacks hold more than one ResumableCheckpoint; a fit has one "
                         "checkpoint folder.")
    if found and not isinstance(found[0].dirname, str | os.PathLike):
        raise TypeError("ResumableCheckpoint's dirname must be a path, got "
                        f"{type(found[0].dirname).__name__}.")
    return found[0].dirname if found else None


def without_checkpoint(callbacks):
    """``callbacks`` less any :class:`ResumableCheckpoint` (None where nothing is left)."""
    kept = [c for c in callbacks or () if not isinstance(_callback(c), ResumableCheckpoint)]
    return kept if kept or callbacks == [] else None
