"""skorch callbacks of the SPT estimators that are not about resuming.

:class:`FiniteLoss` stops a diverged fit at once with advice instead of letting NaN
weights train on silently; :class:`MemberGradientClipping` clips an ensemble's members as
the single networks they copy would be clipped; :class:`LighthouseSchedule` switches
Lighthouse attention on for a phase's first steps. Other callbacks live with what they
serve: the checkpoint that makes fits resumable with the rest of resuming
(:mod:`sktspt.training.resume`) and the progress bars in :mod:`sktspt.progress`.
"""

from __future__ import annotations

import math
import warnings

import torch
from skorch.callbacks import Callback, GradientNormClipping
from torch.nn.utils import clip_grad_norm_

from ..nn.ensemble import Ensemble
from ..nn.lighthouse import Lighthouse, middle_attentions, set_sparse_attention

__all__ = ["FiniteLoss", "LighthouseSchedule", "MemberGradientClipping", "optimizer_steps"]


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


class MemberGradientClipping(GradientNormClipping):
    """skorch's gradient-norm clipping, with each member of an ensemble clipped on its own.

    An :class:`~sktspt.nn.ensemble.Ensemble` trains on the mean of its members' losses, so
    a member's gradient is its own divided by ``n_members``. Clipping all members' gradients
    together, as ``GradientNormClipping`` does, would couple them (one member's spike
    shrinks every member's step) and clip them less often than the single network each one
    copies (the joint norm is about ``1 / sqrt(n_members)`` of a member's own). Here each
    member's gradient is clipped to ``gradient_clip_value / n_members``: the single
    network's clip of its own loss, scaled by the mean. Other modules are clipped as
    skorch does.
    """

    def on_grad_computed(self, net, named_parameters, **kwargs) -> None:
        module = net.module_
        if isinstance(module, torch.nn.parallel.DistributedDataParallel):
            module = module.module
        if self.gradient_clip_value is None or not isinstance(module, Ensemble):
            super().on_grad_computed(net, named_parameters, **kwargs)
            return
        for member in module.members:
            clip_grad_norm_(member.parameters(), self.gradient_clip_value / module.n_members,
                            norm_type=self.gradient_clip_norm_type)


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
