"""Training in one room: the skorch nets, the loop that trains them, its callbacks and resuming.

A fit trains in phases (``PHASE_LABELS``): self-supervised *pretraining* on the inputs,
then supervised *fine-tuning* on the labels.
An estimator says *what* each phase trains; this package says *how*:

- :mod:`~sktspt.training.nets`: the skorch nets of each phase, each with one
  ``random_step`` (:class:`SeededStepNet`, the pretraining nets :class:`MaskedPretrainNet`,
  :class:`MaskedSigRegNet` and :class:`LeJEPANet`, the fine-tuning nets
  :class:`AugmentedNetClassifier` and :class:`AugmentedNetRegressor`) and the
  warm-up/cosine learning-rate schedule;
- :mod:`~sktspt.training.loop`: :class:`Trainer`, the training loop of a fit, phase by
  phase (optimizer, schedule, epochs from a step budget, validation split, callbacks,
  checkpoint folders, resuming a phase);
- :mod:`~sktspt.training.callbacks`: the skorch callbacks the loop adds (finite-loss guard,
  Lighthouse's sparse-to-dense switch);
- :mod:`~sktspt.training.resume`: the epoch checkpoints that make a fit resumable (claiming
  a checkpoint folder for one fit: :mod:`sktspt.claim`).
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
from .resume import RESUME_CALLBACK, EpochCheckpoint

__all__ = [
    "AugmentedNetClassifier", "AugmentedNetRegressor", "EpochCheckpoint", "FineTuningNet",
    "FiniteLoss", "LeJEPANet", "LighthouseSchedule", "MaskedPretrainNet", "MaskedSigRegNet",
    "PHASE_LABELS", "RESUME_CALLBACK", "ResumableCheckpoint", "SeededStepNet", "Trainer",
    "WarmupCosine",
    "fused_adamw_params", "net_state", "optimizer_steps", "resolve_warmup", "restore_net_state",
]
