"""skorch callbacks of the SPT estimators that are not about resuming.

:class:`FiniteLoss` stops a diverged fit at once with advice instead of letting NaN
weights train on silently. Other callbacks live with what they serve: the checkpoint that
makes fits resumable with the rest of resuming (:mod:`sktspt.resume`), Lighthouse's
sparse-to-dense switch in :mod:`sktspt.nn.lighthouse` and the progress bars in
:mod:`sktspt.progress`.
"""

from __future__ import annotations

import math

from skorch.callbacks import Callback

__all__ = ["FiniteLoss"]


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
