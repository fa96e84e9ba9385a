"""The training loop of a fit, phase by phase: one object the estimators use.

An estimator decides *what* to train (which skorch net, module, loss, augmentation);
:class:`Trainer` decides *how*: the optimizer and its warm-up/cosine schedule, the epochs
that a step budget gives, the validation split for best-epoch choice, the callbacks
(gradient clipping, the finite-loss guard, Lighthouse's sparse-to-dense switch, early
stopping, progress), the checkpoint folder of each phase, and resuming a phase from its
last checkpoint. It holds plain settings, read once from the estimator's parameters, and
never reads an estimator's attributes.

Examples
--------
>>> from sktspt.training import Trainer
>>> trainer = Trainer(batch_size=16, auto_steps=1000)
>>> trainer.epochs("auto", n=36, seed=0)  # 36 series are 3 batches an epoch
334
"""

from __future__ import annotations

import copy
import math
import os
from dataclasses import dataclass
from functools import cache

import numpy as np
import torch
from skorch.callbacks import EarlyStopping, GradientNormClipping, LRScheduler
from skorch.dataset import ValidSplit
from skorch.history import History
from skorch.utils import noop

from .._concurrency import settle_eval
from ..data import InputSpec
from ..loaders import TensorBatchIterator
from ..nn.lighthouse import Lighthouse
from ..nn.tokenizers import STEM_REACH
from ..precision import autocast_dtype
from ..progress import PhaseProgress, PhaseTable
from .callbacks import FiniteLoss, LighthouseSchedule
from .nets import WarmupCosine, resolve_warmup
from .resume import RESUME_CALLBACK, EpochCheckpoint, stopped_early

__all__ = ["PHASE_LABELS", "AdamW", "Schedule", "Trainer", "TwoPhaseSchedule",
           "fused_adamw_params", "net_state", "restore_net_state"]

#: Names that ``verbose`` shows for the training phases.
PHASE_LABELS = {"pretrain": "pretraining", "finetune": "fine-tuning"}


@cache
def _has_fused_adamw(device_type: str) -> bool:
    try:
        torch.optim.AdamW([torch.zeros(1, device=device_type, requires_grad=True)], fused=True)
    except Exception:  # an unusable device fails later, with skorch's own message
        return False
    return True


def fused_adamw_params(device) -> dict:
    """``{"optimizer__fused": True}`` where torch has a fused AdamW for ``device``, else ``{}``.

    The fused kernel updates every weight in one call instead of a Python loop over the
    parameter tensors: about a tenth of a training step of these small models on CPU
    (``benchmarks/speed.py``, levers). CPU support came with torch 2.4, hence the check.
    """
    if device is None:
        return {}
    return {"optimizer__fused": True} if _has_fused_adamw(torch.device(device).type) else {}


@dataclass(frozen=True, kw_only=True)
class Schedule:
    """Training length, early stopping and the learning-rate schedule: the estimators'
    ``schedule__`` settings, which :class:`Trainer` runs.

    Parameters
    ----------
    steps : int or "auto"
        Optimizer steps per phase that ``"auto"`` epochs aim at, positive: small datasets get
        enough updates, large ones are not over-trained. Where both phases are ``"auto"``,
        their ``2 * schedule__steps`` steps are split by ``schedule__pretrain_share``.
        ``"auto"``: :data:`PHASE_STEPS` (1000) per phase, and both phases' 2000 for a fit that
        does not pretrain, so a fit from scratch takes the steps of a pretraining one.
    warmup : float or "auto"
        Linear learning-rate warm-up at the start of each phase, as a fraction of the phase's
        optimizer steps in ``[0, 1)``; the cosine decay follows. ``"auto"``: a tenth of the
        steps, at most 100.
    patience : int or None
        Early-stopping patience in epochs, positive: a phase stops once its validation loss has
        not improved for this many epochs, and the best epoch is restored. Only used where
        ``validation_fraction`` holds data out; None runs all epochs and restores the best.
    """

    steps: int | str = "auto"
    warmup: float | str = "auto"
    patience: int | None = None


@dataclass(frozen=True, kw_only=True)
class TwoPhaseSchedule(Schedule):
    """:class:`Schedule` of a fit that pretrains, then fine-tunes (the supervised estimators').

    Parameters
    ----------
    pretrain_share : float
        Share of the ``2 * schedule__steps`` optimizer steps that pretraining takes when
        ``pretrain_epochs`` and ``max_epochs`` are both ``"auto"``, in ``(0, 1)``; fine-tuning
        takes the rest, so the from-scratch control at equal steps is unchanged: 500 + 1500
        steps by default. Unused where either phase has a fixed epoch count or a fitted
        ``pretrainer`` is given (how the split was chosen: ``docs/tuning.md``).
    """

    pretrain_share: float = 0.25


class AdamW(torch.optim.AdamW):
    """torch's AdamW, with this package's weight decay: the estimators' ``optimizer__``
    settings, routed by skorch (``optimizer__weight_decay``).

    Parameters
    ----------
    weight_decay : float
        AdamW weight decay, ``>= 0``.
    """

    def __init__(self, params, lr=1e-3, *, weight_decay=0.01, **kwargs):
        super().__init__(params, lr=lr, weight_decay=weight_decay, **kwargs)


@dataclass(frozen=True)
class Trainer:
    """How the phases of one fit train: schedule, budget, split, callbacks, resuming.

    Args:
        lr: peak learning rate of AdamW.
        weight_decay: AdamW weight decay.
        batch_size: series per training batch.
        warmup: warm-up as a fraction of a phase's steps, or ``"auto"``.
        auto_steps: optimizer steps that an ``"auto"`` phase aims at.
        auto_min_batches: batches an epoch of an ``"auto"`` phase counts as at least, so a
            small training set runs at most ``steps / auto_min_batches`` epochs.
        validation_fraction: share of the training data held out for best-epoch choice.
        patience: early-stopping patience in epochs (``schedule__patience``); None restores
            the best epoch only.
        verbose: 0 silent, 1 a progress bar per phase, 2 skorch's epoch table.
        device: torch device the nets train on (resolved, never ``"auto"``).
        precision: the estimator's ``precision`` (see :mod:`sktspt.precision`).
        checkpoint_dir: folder of the phases' checkpoints (the ``dirname`` of the
            estimator's :class:`~sktspt.training.resume.ResumableCheckpoint`), or None.
        lighthouse: Lighthouse settings for sparse attention in training (its
            ``recovery``: share of a phase's last steps trained dense again), or None.
        input_spec: what fit learned about the input (batches of unequal-length series
            are cut after their longest series), or None.
        owner: the estimator's class name, for messages.
    """

    lr: float = 1e-3
    weight_decay: float = 0.01
    batch_size: int = 16
    warmup: float | str = "auto"
    auto_steps: int = 1000
    auto_min_batches: int = 1
    validation_fraction: float = 0.0
    patience: int | None = None
    verbose: int = 0
    device: str = "cpu"
    precision: str = "auto"
    checkpoint_dir: str | os.PathLike | None = None
    lighthouse: Lighthouse | None = None
    input_spec: InputSpec | None = None
    owner: str = "SPTClassifier"

    # --- budget and split ------------------------------------------------------------
    def split(self, n: int, seed: int, y=None) -> ValidSplit | None:
        """A split of the *training* data for best-epoch selection, or None if too small."""
        frac = float(self.validation_fraction)
        if frac == 0.0:
            return None
        n_valid = int(math.ceil(n * frac))
        if n_valid < 2 or n - n_valid < 2:
            return None
        if y is not None:
            counts = np.bincount(y)
            if n_valid < len(counts) or counts.min() < 2:
                return None
            return ValidSplit(frac, stratified=True, random_state=seed)
        return ValidSplit(frac, stratified=False, random_state=seed)

    def _n_train(self, n: int, seed: int, y=None) -> int:
        held_out = self.split(n, seed, y) is not None
        return n - (math.ceil(n * self.validation_fraction) if held_out else 0)

    def epochs(self, epochs, n: int, seed: int, y=None, steps: int | None = None) -> int:
        """``epochs``, or for ``"auto"`` the epochs that give about ``steps`` steps.

        A budget in optimizer steps rather than epochs gives small datasets enough
        updates (36 series in batches of 16 are 3 steps an epoch) without over-training
        large ones. ``steps`` defaults to ``auto_steps``. An epoch of fewer than
        ``auto_min_batches`` batches counts as that many, so a small training set runs at
        most ``steps / auto_min_batches`` epochs (fewer steps than the budget).
        """
        if epochs != "auto":
            return int(epochs)
        steps = self.auto_steps if steps is None else steps
        per_epoch = max(self.batches(n, seed, y), int(self.auto_min_batches))
        return max(1, math.ceil(steps / per_epoch))

    def batches(self, n: int, seed: int, y=None) -> int:
        """Optimizer steps an epoch of ``n`` series takes (after any validation split)."""
        return max(1, math.ceil(self._n_train(n, seed, y) / self.batch_size))

    # --- the skorch settings of a phase ----------------------------------------------------
    def net_kwargs(
        self, n: int, epochs: int, seed: int, y=None, callbacks=None, phase: str | None = None
    ) -> dict:
        """skorch settings shared by the pretraining and fine-tuning nets.

        AdamW with the warm-up/cosine schedule, whole-tensor batches, and a validation
        split of the training data (stratified on ``y`` when given) for best-epoch choice.
        ``n`` is 0 for a net built to load saved weights into.
        """
        split = self.split(n, seed, y)
        n_train = self._n_train(n, seed, y)
        pin = torch.device(self.device).type == "cuda"  # pinned copies help CUDA fits only
        return dict(
            optimizer=AdamW,
            optimizer__weight_decay=self.weight_decay,
            **fused_adamw_params(self.device),
            lr=self.lr,
            max_epochs=epochs,
            batch_size=self.batch_size,
            train_split=split,
            iterator_train=TensorBatchIterator,
            iterator_train__shuffle=True,
            iterator_valid=TensorBatchIterator,
            iterator_valid__batch_size=max(self.batch_size, 256),
            iterator_train__pin_memory=pin,
            iterator_valid__pin_memory=pin,
            **self._trim_params(),
            callbacks=self.callbacks(n_train, epochs, split is not None, callbacks, phase),
            callbacks__print_log=self._print_log(phase),
            device=self.device,
            verbose=self.verbose,
            # A fit (n > 0) raises for a precision the device cannot train in; a net built
            # to load a saved model (n == 0) falls back to float32 there instead.
            precision=autocast_dtype(self.precision, self.device, training=n > 0),
        )

    def _trim_params(self) -> dict:
        """Batches cut after their longest series (see :class:`TensorBatchIterator`).

        Only unequal-length (NaN-padded) panels have steps to cut; the margin is the widest
        reach of a tokenizer past a series' end, so the cut changes no observed token.
        """
        spec = self.input_spec
        if spec is None or spec.equal_length:
            return {}
        trim = dict(trim_multiple=spec.patch_size, trim_margin=STEM_REACH)
        return {f"iterator_{part}__{k}": v for part in ("train", "valid") for k, v in trim.items()}

    def _print_log(self, phase: str | None):
        """skorch's epoch table for ``verbose >= 2`` (headed by the phase), else none.

        ``verbose=1`` shows a progress bar per phase instead (:class:`PhaseProgress`).
        """
        if self.verbose == 1:
            return None
        return PhaseTable(PHASE_LABELS.get(phase, phase or "")) if self.verbose else None

    def callbacks(
        self, n_train: int, epochs: int, has_valid: bool, user=(), phase: str | None = None
    ) -> list:
        """Default callbacks; with a ``checkpoint_dir``, ``phase`` names the checkpoint folder."""
        steps = epochs * max(1, math.ceil(n_train / self.batch_size))
        schedule = WarmupCosine(steps, warmup_steps=resolve_warmup(self.warmup, steps))
        checkpoint = self.checkpoint(phase)
        # A resumed phase continues the per-batch schedule where its checkpoint stopped.
        done = checkpoint.steps_done() if checkpoint is not None else 0
        resume = {"last_epoch": done - 1} if done else {}
        callbacks = [
            ("lr_schedule", LRScheduler(
                policy=torch.optim.lr_scheduler.LambdaLR, lr_lambda=schedule, step_every="batch",
                **resume,
            )),
            ("grad_clip", GradientNormClipping(gradient_clip_value=1.0)),
            ("finite_loss", FiniteLoss()),
        ]
        if self.lighthouse is not None:  # sparse in training, dense for the last steps
            callbacks.append(("lighthouse", LighthouseSchedule(
                self.lighthouse, steps, self.lighthouse.recovery)))
        if has_valid:
            patience = epochs if self.patience is None else self.patience
            callbacks.append(("best_epoch", EarlyStopping(
                monitor="valid_loss", patience=patience, threshold=0.0, load_best=True,
                sink=print if self.verbose >= 2 else noop,  # 1 shows only the bars
            )))
        callbacks += list(user or ())
        if self.verbose == 1:
            label = PHASE_LABELS.get(phase, phase or "training")
            callbacks.append(("progress", PhaseProgress(label, epochs)))
        if checkpoint is not None:
            callbacks.append((RESUME_CALLBACK, checkpoint))
        return callbacks

    def checkpoint(self, phase: str | None) -> EpochCheckpoint | None:
        """The checkpoint of ``phase`` in ``checkpoint_dir``; None where nothing is saved."""
        if self.checkpoint_dir is None or phase is None:
            return None
        return EpochCheckpoint(os.path.join(os.fspath(self.checkpoint_dir), phase))

    # --- running a phase -------------------------------------------------------------------
    def train(self, net, X, y, epochs: int, phase: str):
        """Train ``net`` for ``epochs`` epochs, resuming from its checkpoint if it has one.

        skorch ends ``partial_fit`` quietly on KeyboardInterrupt (Ctrl-C); an
        interrupted phase is re-raised here, so that a fit never goes on to fine-tune an
        encoder whose pretraining was cut short, nor reports itself fitted.
        """
        if not getattr(net, "initialized_", False):
            net.initialize()
        checkpoint = dict(net.callbacks_).get(RESUME_CALLBACK)
        done = 0
        if checkpoint is not None:
            folder, finished = checkpoint.latest()
            if folder is not None:
                done = checkpoint.restore(net, folder)
                if finished:
                    return net
        remaining = 0 if stopped_early(net) else max(epochs - done, 0)
        # Zero epochs still runs on_train_begin/on_train_end (best weights restored).
        net.partial_fit(X, y, epochs=remaining)
        if len(net.history) - done < remaining and not stopped_early(net):
            where = (
                f"{self.owner}.fit was interrupted in {phase}, in epoch "
                f"{len(net.history)} of {epochs}."
            )
            raise KeyboardInterrupt(where + (
                " Pass callbacks=[ResumableCheckpoint(dirname)] to be able to resume an "
                "interrupted fit." if checkpoint is None else " Call fit again with "
                f"ResumableCheckpoint({self.checkpoint_dir!r}) to resume from epoch "
                f"{checkpoint.epochs_done()}."))
        if checkpoint is not None:
            checkpoint.finish(net)
        return net


_ABSENT = object()


def net_state(net) -> dict:
    """What a warm start changes in ``net`` in place: weights, optimizer state, history, the
    loss's reduction and the training precision (for :func:`restore_net_state`)."""
    return {
        "module": {k: v.detach().clone() for k, v in net.module_.state_dict().items()},
        "optimizer": copy.deepcopy(net.optimizer_.state_dict()),
        "history": copy.deepcopy(net.history.to_list()),
        "reduction": getattr(net.criterion_, "reduction", None),
        "precision": vars(net).get("precision", _ABSENT),
    }


def restore_net_state(net, state: dict) -> None:
    """Put back what :func:`net_state` saved: a failed warm start leaves the net as it was."""
    net.module_.load_state_dict(state["module"])
    net.optimizer_.load_state_dict(state["optimizer"])
    net.history[:] = History(state["history"])  # in place: history_ is the same object
    if state["reduction"] is not None:
        net.criterion_.reduction = state["reduction"]
    if state["precision"] is not _ABSENT:
        net.precision = state["precision"]
    settle_eval(net.module_)
