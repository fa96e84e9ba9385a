"""The skorch nets of every phase and their learning-rate schedule.

skorch runs every training loop in this package. Self-pretraining needs only one
thing skorch does not have: fresh random draws per training batch (masks, or views for
LeJEPA) and fixed ones for validation, so validation loss is comparable across epochs.
:class:`SeededStepNet` adds exactly that to ``NeuralNet``; :class:`MaskedPretrainNet`,
:class:`MaskedSigRegNet` and :class:`LeJEPANet` each define one ``random_step``, and so
does :class:`FineTuningNet`, the fine-tuning step of :class:`AugmentedNetClassifier` and
:class:`AugmentedNetRegressor`, whose draws augment and mix batches.
"""

from __future__ import annotations

import math

import torch
from skorch import NeuralNet, NeuralNetClassifier, NeuralNetRegressor
from skorch.dataset import unpack_data

from ..augment import mixup
from ..leap import record_layers
from ..masking import make_mask
from ..nn.encoder import masked_mean
from ..objectives import LeJEPALoss, SIGReg, exit_loss, masked_reconstruction_loss
from ..precision import autocast, to_float32
from ..views import make_views

__all__ = [
    "AugmentedNetClassifier", "AugmentedNetRegressor", "FineTuningNet", "MaskedPretrainNet",
    "MaskedSigRegNet", "LeJEPANet", "SeededStepNet", "WarmupCosine", "resolve_warmup",
]


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


def resolve_warmup(warmup: float | str, steps: int) -> int:
    """Warm-up steps of a phase of ``steps``: ``"auto"`` a tenth, at most 100; else a fraction."""
    if warmup == "auto":
        return min(steps // 10, 100)
    return math.floor(float(warmup) * steps + 1e-9)


class SeededStepNet(NeuralNet):
    """A ``NeuralNet`` whose every step draws random numbers from its own streams.

    Training steps draw from one generator seeded by :meth:`stream_seed`; validation
    steps from a second one that is reset every epoch, so validation loss is measured
    on the same draws each epoch and is comparable across epochs. Subclasses implement
    :meth:`random_step`. Generators are dropped when pickling (torch cannot pickle them).
    """

    def __init__(self, *args, precision="float32", **kwargs):
        super().__init__(*args, **kwargs)
        self.precision = precision

    def stream_seed(self) -> int:
        raise NotImplementedError

    def autocast(self):
        """Autocast to ``precision`` (``"float32"``, ``"bfloat16"`` or ``"float16"``)."""
        return autocast(self.device, getattr(self, "precision", "float32"))

    def infer(self, x, **fit_params):
        """The module's forward pass under :meth:`autocast`, with float32 outputs.

        Losses are then computed in float32 whatever the precision of the matmuls.
        """
        with self.autocast():
            return to_float32(super().infer(x, **fit_params))

    def _grad_scaler(self):
        """A ``GradScaler`` for float16 training (created once), else None."""
        if getattr(self, "precision", "float32") != "float16":
            return None
        if getattr(self, "grad_scaler_", None) is None:
            self.grad_scaler_ = torch.amp.GradScaler(torch.device(self.device).type)
        return self.grad_scaler_

    def on_grad_computed(self, net, named_parameters=None, **kwargs):
        """With float16: unscale the gradients before the callbacks see them (gradient
        clipping then clips their true values), and skip a step whose gradients
        overflowed: with every gradient None, AdamW leaves weights and state untouched."""
        scaler = self._grad_scaler()
        if scaler is None:
            return
        optimizers = [getattr(self, name + "_") for name in self._optimizers]
        for optimizer in optimizers:
            scaler.unscale_(optimizer)
        scale = scaler.get_scale()
        scaler.update()  # lowers the scale where the gradients overflowed
        if scaler.get_scale() < scale:
            for optimizer in optimizers:
                optimizer.zero_grad(set_to_none=True)

    def random_step(self, batch, generator: torch.Generator, training: bool, **fit_params):
        """Return ``(loss, y_pred)`` for one batch."""
        raise NotImplementedError

    def _generator(self, device, seed: int) -> torch.Generator:
        return torch.Generator(device=device).manual_seed(int(seed))

    def train_step_single(self, batch, **fit_params):
        self._set_training(True)
        if getattr(self, "train_generator_", None) is None:
            self.train_generator_ = self._generator(self.device, self.stream_seed())
        loss, y_pred = self.random_step(batch, self.train_generator_, True, **fit_params)
        scaler = self._grad_scaler()
        (loss if scaler is None else scaler.scale(loss)).backward()
        return {"loss": loss, "y_pred": y_pred}

    def validation_step(self, batch, **fit_params):
        self._set_training(False)
        with torch.no_grad():
            loss, y_pred = self.random_step(batch, self.valid_generator_, False, **fit_params)
        return {"loss": loss, "y_pred": y_pred}

    def on_epoch_begin(self, net, **kwargs):
        """Each epoch's validation draws restart from the same seed."""
        super().on_epoch_begin(net, **kwargs)
        self.valid_generator_ = self._generator(self.device, self.stream_seed() + 1)

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("train_generator_", None)
        state.pop("valid_generator_", None)
        state.pop("grad_scaler_", None)
        return state


class MaskedPretrainNet(SeededStepNet):
    """A skorch ``NeuralNet`` trained to reconstruct hidden values of its own input.

    Parameters (besides ``NeuralNet``'s)
    ------------------------------------
    masking, mask_ratio, mean_span, ratio_spread
        The masking objective (see :mod:`sktspt.masking`); the first three have no default
        here, so the estimators' signatures are their only source.
    mask_seed : int
        Seeds the mask generators: training masks follow one stream; validation
        masks are redrawn from the same seed every epoch.
    augmentation : callable or None
        ``augmentation(X, generator)`` applied to training batches before masking
        (see :mod:`sktspt.augment`), so pretraining sees more variants of few series.
    mask_channels : tuple of int or None
        The only channels masking may hide (None: all); see :mod:`sktspt.masking`.
    """

    def __init__(
        self, *args, masking, mask_ratio, mean_span, mask_seed=0, augmentation=None,
        mask_channels=None, ratio_spread=0.0, **kwargs,
    ):
        super().__init__(*args, **kwargs)
        self.augmentation = augmentation
        self.mask_channels = mask_channels
        self.masking = masking
        self.mask_ratio = mask_ratio
        self.ratio_spread = ratio_spread
        self.mean_span = mean_span
        self.mask_seed = mask_seed

    def stream_seed(self) -> int:
        return self.mask_seed

    def draw_mask(self, X: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """A fresh mask for NaN-coded ``X`` that hides observed values only."""
        return make_mask(
            self.masking, tuple(X.shape), self.mask_ratio, self.mean_span, generator, X.device,
            observed=~torch.isnan(X), channels=self.mask_channels,
            ratio_spread=self.ratio_spread,
        )

    def random_step(self, batch, generator, training, **fit_params):
        Xi, _ = unpack_data(batch)
        Xi = Xi.to(self.device, non_blocking=True)
        if training and self.augmentation is not None:
            Xi = self.augmentation(Xi, generator)
        hidden = self.draw_mask(Xi, generator)
        y_pred = self.infer({"X": Xi, "hidden": hidden}, **fit_params)
        target, scored = self.module_.targets(Xi, hidden)
        loss = masked_reconstruction_loss(y_pred, target, scored)
        return loss, y_pred


class MaskedSigRegNet(MaskedPretrainNet):
    """Masked reconstruction plus ``sigreg_lambda * SIGReg`` on the pooled embedding.

    Reconstruction shapes the tokens; SIGReg (:class:`~sktspt.objectives.SIGReg`) keeps
    the pooled embeddings of each batch spread like an isotropic Gaussian, the
    geometry a linear head on top profits from. The embedding is the one of the
    masked forward pass, so the regulariser costs no extra encoder pass.

    Parameters (besides :class:`MaskedPretrainNet`'s)
    ------------------------------------------------
    sigreg_lambda : float
        Weight of SIGReg added to the reconstruction loss.
    sigreg_slices : int
        Random directions per step.
    """

    def __init__(self, *args, sigreg_lambda=0.05, sigreg_slices=256, **kwargs):
        super().__init__(*args, **kwargs)
        self.sigreg_lambda = sigreg_lambda
        self.sigreg_slices = sigreg_slices

    def initialize_criterion(self):
        super().initialize_criterion()
        self.sigreg_ = SIGReg(n_slices=self.sigreg_slices, seed=self.mask_seed).to(self.device)
        return self

    def random_step(self, batch, generator, training, **fit_params):
        encoded = []
        hook = self.module_.encoder.register_forward_hook(
            lambda module, args, output: encoded.append(output)
        )
        try:
            loss, y_pred = super().random_step(batch, generator, training, **fit_params)
        finally:
            hook.remove()
        self.sigreg_.train(training)
        tokens, keep = encoded[-1]
        reg = self.sigreg_(masked_mean(tokens.float(), keep))  # float32 whatever the precision
        return loss + float(self.sigreg_lambda) * reg, y_pred


class LeJEPANet(SeededStepNet):
    """A skorch ``NeuralNet`` trained with the LeJEPA objective on random views.

    Each batch of series becomes ``n_global + n_local`` views
    (:func:`~sktspt.views.make_views`), all encoded in one pass; the module
    (:class:`~sktspt.nn.heads.LeJEPAModel`) returns pooled embeddings and their
    projections, and the criterion (:class:`~sktspt.objectives.LeJEPALoss`) computes
    ``(1 - sigreg_lambda) * L_pred + sigreg_lambda * SIGReg`` on the projections.
    Training views follow one random stream; validation views are redrawn from the
    same seed every epoch, so validation loss is comparable across epochs.

    Parameters (besides ``NeuralNet``'s)
    ------------------------------------
    sigreg_lambda : float
        Weight of SIGReg, in ``[0, 1]``.
    n_global, n_local : int
        Global (60-100 % crops) and local (20-50 % crops) views per series.
    view_seed : int
        Seeds the view generators and SIGReg's directions.
    global_crop, local_crop, scale_std, jitter_std
        View augmentations, see :func:`~sktspt.views.make_views`.
    """

    def __init__(
        self, *args, criterion=LeJEPALoss, sigreg_lambda=0.05, n_global=2, n_local=2,
        view_seed=0, global_crop=(0.6, 1.0), local_crop=(0.2, 0.5), scale_std=0.1,
        jitter_std=0.05, **kwargs,
    ):
        super().__init__(*args, criterion=criterion, **kwargs)
        self.sigreg_lambda = sigreg_lambda
        self.n_global = n_global
        self.n_local = n_local
        self.view_seed = view_seed
        self.global_crop = global_crop
        self.local_crop = local_crop
        self.scale_std = scale_std
        self.jitter_std = jitter_std

    def initialize_criterion(self):
        kwargs = dict(sigreg_lambda=self.sigreg_lambda, n_global=self.n_global,
                      seed=self.view_seed)
        kwargs.update(self.get_params_for("criterion"))
        self.criterion_ = self.initialized_instance(self.criterion, kwargs)
        return self

    def stream_seed(self) -> int:
        return self.view_seed

    def get_loss(self, y_pred, y_true=None, X=None, training=False):
        """The criterion on projections ``(views, n, proj_dim)``; there is no target."""
        return self.criterion_(y_pred)

    def random_step(self, batch, generator, training, **fit_params):
        Xi, _ = unpack_data(batch)
        Xi = Xi.to(self.device, non_blocking=True)
        views = make_views(
            Xi, self.n_global, self.n_local, generator, self.global_crop, self.local_crop,
            self.scale_std, self.jitter_std,
        )
        v, n = views.shape[:2]
        _, proj = self.infer(views.reshape(v * n, *views.shape[2:]), **fit_params)
        proj = proj.reshape(v, n, -1)
        return self.get_loss(proj, None, X=Xi, training=training), proj


class FineTuningNet(SeededStepNet):
    """The fine-tuning step that the classifier's and the regressor's nets share.

    ``augmentation(X, generator)`` (see :mod:`sktspt.augment`) draws from a stream
    seeded by ``augment_seed``; validation and prediction batches are left as they are.

    Sample weights: fit on ``X={"X": series, "sample_weight": weights}`` with
    ``criterion__reduction="none"``; the loss of a batch is then the mean of the
    per-series losses (averaged over a series' outputs first) times their weights.

    ``exit_loss_weight > 0`` adds that times the LEAP exit loss
    (:func:`sktspt.objectives.exit_loss`) on the pooled output of every encoder layer.

    ``mixup_alpha > 0`` trains on mixed pairs of series (:func:`sktspt.augment.mixup`,
    after the augmentation, combined as ``mixup_kind`` says) against targets mixed with
    the same weights, as the subclass's :meth:`_mixed_targets` mixes them.
    """

    def __init__(self, *args, augmentation=None, augment_seed=0, exit_loss_weight=0.0,
                 mixup_alpha=0.0, mixup_kind="blend", **kwargs):
        super().__init__(*args, **kwargs)
        self.augmentation = augmentation
        self.augment_seed = augment_seed
        self.exit_loss_weight = exit_loss_weight
        self.mixup_alpha = mixup_alpha
        self.mixup_kind = mixup_kind

    def stream_seed(self) -> int:
        return self.augment_seed

    def _mixup_alpha(self) -> float:
        return float(getattr(self, "mixup_alpha", 0.0) or 0.0)

    def views(self, Xi: torch.Tensor, generator: torch.Generator):
        """A training batch's augmentation, then mixup: ``(Xi, mixing)``, where ``mixing``
        is ``(partner, lam)`` for :meth:`_mixed_targets`, or None without mixup."""
        if self.augmentation is not None:
            Xi = self.augmentation(Xi, generator)
        alpha = self._mixup_alpha()
        if alpha <= 0:
            return Xi, None
        Xi, *mixing = mixup(Xi, alpha, generator, getattr(self, "mixup_kind", "blend"))
        return Xi, mixing

    def random_step(self, batch, generator, training, **fit_params):
        Xi, yi = unpack_data(batch)
        weight = None
        if isinstance(Xi, dict):  # {"X": series, "sample_weight": weights}
            Xi, weight = Xi["X"], Xi.get("sample_weight")
        mixing = None
        if training:
            Xi, mixing = self.views(Xi.to(self.device, non_blocking=True), generator)
        exit_weight = float(getattr(self, "exit_loss_weight", 0.0) or 0.0)
        if exit_weight > 0:
            # The pooled states are computed as the block ends: under autocast too.
            with self.autocast(), record_layers(self.module_.encoder) as pooled:
                y_pred = self.infer(Xi, **fit_params)
        else:
            y_pred = self.infer(Xi, **fit_params)
        if mixing is not None:
            yi, weight = self._mixed_targets(yi, weight, *mixing, y_pred.shape[-1])
        loss = self.get_loss(y_pred, yi, X=Xi, training=training)
        if loss.ndim:  # per-series losses (criterion__reduction="none")
            if loss.ndim > 1:  # one per output of a series: their mean is the series' loss
                loss = loss.flatten(1).mean(dim=1)
            if weight is not None:
                weight = weight.to(loss.device, loss.dtype)
                loss = loss * weight.repeat_interleave(loss.numel() // weight.numel())
            loss = loss.mean()
        if exit_weight > 0:
            loss = loss + exit_weight * exit_loss(pooled)
        return loss, y_pred

    @staticmethod
    def _mix(y, weight, partner, lam):
        """Targets ``(n, k)`` (and series weights) mixed linearly as their series were."""
        lam = lam[:, None]
        mixed = lam * y + (1.0 - lam) * y[partner]
        if weight is not None:
            weight = weight.to(lam.device, lam.dtype)
            weight = lam[:, 0] * weight + (1.0 - lam[:, 0]) * weight[partner]
        return mixed, weight

    @staticmethod
    def _mixed_targets(y, weight, partner, lam, n_outputs: int):
        """The targets (and series weights) of a mixed batch; see the subclasses."""
        raise NotImplementedError


class AugmentedNetClassifier(FineTuningNet, NeuralNetClassifier):
    """A ``NeuralNetClassifier`` with the fine-tuning step of :class:`FineTuningNet`.

    Mixed series train against class-probability targets mixed with the same weights.
    With no augmentation, mixup or exit loss it trains exactly like
    ``NeuralNetClassifier``.
    """

    @staticmethod
    def _mixed_targets(y, weight, partner, lam, n_classes: int):
        """Class-probability targets (and series weights) mixed as their series were."""
        y = y.to(lam.device)
        onehot = torch.nn.functional.one_hot(y.long(), n_classes).to(lam.dtype)
        return FineTuningNet._mix(onehot, weight, partner, lam)


class AugmentedNetRegressor(FineTuningNet, NeuralNetRegressor):
    """A ``NeuralNetRegressor`` with the fine-tuning step of :class:`FineTuningNet`.

    Targets are float ``(n, k)``; mixed series train against targets mixed linearly
    with the same weights (``lam * y_i + (1 - lam) * y_partner``).
    """

    @staticmethod
    def _mixed_targets(y, weight, partner, lam, n_outputs: int):
        """Targets (and series weights) mixed linearly as their series were."""
        return FineTuningNet._mix(y.to(lam.device, lam.dtype), weight, partner, lam)
