"""Training in one room: the skorch nets, the loop that trains them, its callbacks and resuming.

A fit trains in phases (``PHASE_LABELS``): self-supervised *pretraining* on the inputs,
then supervised *fine-tuning* on the labels. An estimator says *what* each phase trains;
this package says *how*: the skorch nets of each phase (:mod:`~sktspt.training.nets`),
:class:`Trainer`, the loop of a fit phase by phase (:mod:`~sktspt.training.loop`), the
callbacks it adds (:mod:`~sktspt.training.callbacks`) and the epoch checkpoints that make a
fit resumable (:mod:`~sktspt.training.resume`).
"""

from .callbacks import FiniteLoss, LighthouseSchedule, ResumableCheckpoint, optimizer_steps
from .loop import PHASE_LABELS, Trainer, fused_adamw_params, net_state, restore_net_state
from .nets import (
    AugmentedNetClassifier,
    AugmentedNetRegressor,
    FineTuningNet,
    LeJEPANet,
    MaskedPretrainNet,
    MaskedSigRegNet,
    SeededStepNet,
    WarmupCosine,
    resolve_warmup,
)
from .resume import EpochCheckpoint

__all__ = [
    "AugmentedNetClassifier", "AugmentedNetRegressor", "EpochCheckpoint", "FineTuningNet",
    "FiniteLoss", "LeJEPANet", "LighthouseSchedule", "MaskedPretrainNet", "MaskedSigRegNet",
    "PHASE_LABELS", "ResumableCheckpoint", "SeededStepNet", "Trainer", "WarmupCosine",
    "fused_adamw_params", "net_state", "optimizer_steps", "resolve_warmup", "restore_net_state",
]
