"""skorch pieces: the masked-reconstruction net and the learning-rate schedule.

skorch runs every training loop in this package. Self-pretraining needs only one
thing skorch does not have: a fresh mask per training batch (and a fixed one for
validation, so validation loss is comparable across epochs). That lives in
:class:`MaskedPretrainNet`, which overrides the two step methods and nothing else.
"""

from __future__ import annotations

import math

import torch
from skorch import NeuralNet
from skorch.dataset import unpack_data

from .losses import masked_reconstruction_loss
from .masking import make_mask

__all__ = ["MaskedPretrainNet", "WarmupCosine"]


class WarmupCosine:
    """Linear warm-up then cosine decay to ``floor``, as a picklable ``lr_lambda``."""

    def __init__(self, total_steps: int, warmup_steps: int, floor: float = 0.01):
        self.total_steps = max(int(total_steps), 1)
        self.warmup_steps = max(int(warmup_steps), 0)
        self.floor = floor

    def __call__(self, step: int) -> float:
        if step < self.warmup_steps:
            return (step + 1) / self.warmup_steps
        span = max(self.total_steps - self.warmup_steps, 1)
        progress = min((step - self.warmup_steps) / span, 1.0)
        return self.floor + (1.0 - self.floor) * 0.5 * (1.0 + math.cos(math.pi * progress))


class MaskedPretrainNet(NeuralNet):
    """A skorch ``NeuralNet`` trained to reconstruct hidden values of its own input.

    Parameters (besides ``NeuralNet``'s)
    ------------------------------------
    masking, mask_ratio, mean_span
        The masking objective (see :mod:`sktspt.masking`).
    mask_seed : int
        Seeds the mask generators: training masks follow one stream; validation
        masks are redrawn from the same seed every epoch.
    loss : {"mse", "l1"}
        Error on the hidden values.
    """

    def __init__(
        self, *args, masking="span", mask_ratio=0.3, mean_span=3.0, mask_seed=0, loss="mse",
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        self.masking = masking
        self.mask_ratio = mask_ratio
        self.mean_span = mean_span
        self.mask_seed = mask_seed
        self.loss = loss

    def _generator(self, device, seed: int) -> torch.Generator:
        return torch.Generator(device=device).manual_seed(int(seed))

    def draw_mask(self, X: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """A fresh mask for NaN-coded ``X`` that hides observed values only."""
        return make_mask(
            self.masking, tuple(X.shape), self.mask_ratio, self.mean_span, generator, X.device,
            observed=~torch.isnan(X),
        )

    def _masked_step(self, batch, generator, training, **fit_params):
        Xi, _ = unpack_data(batch)
        Xi = Xi.to(self.device, non_blocking=True)
        hidden = self.draw_mask(Xi, generator)
        y_pred = self.infer({"X": Xi, "hidden": hidden}, **fit_params)
        loss = masked_reconstruction_loss(y_pred, Xi, hidden, self.loss)
        return loss, y_pred

    def train_step_single(self, batch, **fit_params):
        self._set_training(True)
        if getattr(self, "train_generator_", None) is None:
            self.train_generator_ = self._generator(self.device, self.mask_seed)
        loss, y_pred = self._masked_step(batch, self.train_generator_, True, **fit_params)
        loss.backward()
        return {"loss": loss, "y_pred": y_pred}

    def validation_step(self, batch, **fit_params):
        self._set_training(False)
        with torch.no_grad():
            loss, y_pred = self._masked_step(batch, self.valid_generator_, False, **fit_params)
        return {"loss": loss, "y_pred": y_pred}

    def run_single_epoch(self, iterator, training, prefix, step_fn, **fit_params):
        if not training:
            self.valid_generator_ = self._generator(self.device, self.mask_seed + 1)
        return super().run_single_epoch(iterator, training, prefix, step_fn, **fit_params)

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("train_generator_", None)
        state.pop("valid_generator_", None)
        return state
