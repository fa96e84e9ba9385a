"""SupervisedSPT: self-pretraining, then fine-tuning on targets, for any supervised task.

The two-phase ``fit`` of :class:`~sktspt.SPTClassifier` and :class:`~sktspt.SPTRegressor`
lives here once: pretraining on the training series (or taking a fitted ``pretrainer``),
then fine-tuning the whole network with a task head, with sample weights, mixup and warm
start. A task gives its targets (``_fit_targets``, ``_continue_targets``), its net, head
and loss (``_task_net``), its validation strata (``_stratify``), what ``augment="auto"``
means for it (``_choose_augment``) and its outputs (``predict``, ``predict_proba``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import _check_sample_weight, check_is_fitted

from ._base import (
    EmbeddingTransformerMixin,
    SPTBase,
    _architecture,
    estimator_call,
)
from ._concurrency import settle_eval
from ._params import EPOCHS, Number, Options, boolean, callbacks_or_none, estimator_or_none
from ._routed import PHASE_STEPS
from ._start import warn_overridden, warn_unused_pretraining
from .augment import MIXUP_KINDS, Mixup, resolve_mixup
from .data import channel_count, check_panel
from .loaders import net_input, stack_panels
from .nn.panel_fit import fit_to_panel
from .precision import autocast_dtype
from .training import FineTuningNet, net_state, restore_net_state
from .training.loop import TwoPhaseSchedule

__all__ = ["Pretraining", "SupervisedSPT"]


@dataclass(frozen=True, kw_only=True)
class Pretraining:
    """The pretraining net's own skorch ``NeuralNet`` arguments: the supervised estimators'
    ``pretrain__`` settings.

    Parameters
    ----------
    callbacks : list or None
        Extra skorch callbacks of the pretraining net (``callbacks`` act on fine-tuning only).
    """

    callbacks: list | None = None


class SupervisedSPT(EmbeddingTransformerMixin, SPTBase):
    """Self-pretraining, then fine-tuning on targets (the hooks: :mod:`sktspt._supervised`).

    ``fit`` draws its random numbers in one fixed order (seed, pretraining, fine-tuning),
    whatever the task.
    """

    #: With ``schedule__steps="auto"`` a fit trains at least this many epochs of its
    #: labelled series (0: no floor; a task sets its own) ...
    _auto_min_epochs: int = 0
    #: ... unless they take more optimizer steps than this; then as many whole epochs as fit.
    _auto_max_steps: int = 16000

    #: The constraints of the parameters every supervised task takes; tasks merge in theirs.
    _parameter_constraints: dict = {
        **SPTBase._parameter_constraints,
        "max_epochs": EPOCHS,
        "mixup": Number(lambda v: 0 <= v < math.inf, '"auto" or a non-negative number',
                        auto=True),
        "pretrainer": estimator_or_none,
        "warm_start": boolean,
        "schedule__pretrain_share": Number(lambda v: 0 < v < 1, "a number in (0, 1)"),
        "mixup__kind": Options(MIXUP_KINDS + ("auto",)),
        "pretrain__callbacks": callbacks_or_none,
    }
    #: The component of each routed group every supervised task takes.
    _routes = {**SPTBase._routes, "schedule": TwoPhaseSchedule, "mixup": Mixup,
               "pretrain": Pretraining}

    # --- hooks of the task ------------------------------------------------------------
    def _fit_targets(self, y, n: int) -> np.ndarray:
        """Validate ``y`` for ``n`` series, learn what fit keeps about it, and encode it."""
        raise NotImplementedError

    def _continue_targets(self, y, n: int) -> np.ndarray:
        """Encode ``y`` of a warm start with what the first fit learned."""
        raise NotImplementedError

    def _stratify(self, y_enc: np.ndarray) -> np.ndarray | None:
        """The encoded targets a validation split is stratified on; None for a plain split."""
        return None

    def _choose_augment(self, Xp: np.ndarray, y_enc: np.ndarray, seed: int) -> bool | str:
        """``augment`` for fine-tuning; ``"auto"`` is no augmentation unless a task decides."""
        return False if self.augment == "auto" else self.augment

    def _task_net(self) -> tuple[type[FineTuningNet], dict]:
        """The task's fine-tuning net class and its head and loss (skorch arguments)."""
        raise NotImplementedError

    # --- fit --------------------------------------------------------------------------
    @estimator_call
    def fit(self, X, y, X_unlabeled=None, sample_weight=None):
        """Self-pretrain on ``X`` (and ``X_unlabeled``), then fine-tune on ``(X, y)`` (the
        tasks' ``fit`` documents the arguments)."""
        s = self._settings()
        if self.warm_start and hasattr(self, "net_"):
            return self._continue(X, y, sample_weight)
        pre = self._fitted_pretrainer()
        if pre is not None:
            X = self._adopt_pretrainer(X, pre)
        else:
            X, _ = self._fit_input(X)
        y_enc = self._fit_targets(y, len(X))
        weights = self._sample_weights(sample_weight, y_enc)
        trainer = self._trainer()
        seed = self._resume_seed(self._seed(), X, y_enc, X_unlabeled, weights)
        Xp = self._prepare(X)
        U = None if X_unlabeled is None else self._prepare_unlabeled(X_unlabeled)
        warn_unused_pretraining(self, unlabeled=U is not None)
        self.mixup_, self.mixup_kind_ = resolve_mixup(self.mixup, Xp, s["mixup__kind"])
        self.augment_ = False if self.augment == "auto" else self.augment  # until chosen
        per_epoch = trainer.batches(len(Xp), seed, self._stratify(y_enc))  # labelled series
        with self._seeded(seed):
            encoder_state = None
            self.pretrain_history_ = None
            self.pretrain_epochs_ = 0
            if pre is not None:
                encoder_state = pre.encoder_.state_dict()
            elif self.pretrain_epochs != 0:
                pre_X = Xp if U is None else stack_panels(Xp, U)
                self.pretrain_epochs_ = trainer.epochs(
                    self.pretrain_epochs, len(pre_X), seed,
                    steps=self._auto_budget("pretrain", per_epoch))
                pre_net = self._pretrain(trainer, pre_X, self.pretrain_epochs_, seed,
                                         s["pretrain__callbacks"])
                encoder_state = pre_net.module_.encoder.state_dict()
                self.pretrain_history_ = pre_net.history
            self.max_epochs_ = trainer.epochs(self.max_epochs, len(Xp), seed,
                                              self._stratify(y_enc),
                                              steps=self._auto_budget("finetune", per_epoch))
            self.augment_ = self._choose_augment(Xp, y_enc, seed)
            net = self._finetune_net(
                trainer, len(Xp), y_enc, seed, self.max_epochs_, "finetune",
                weighted=weights is not None,
            )
            self._start_finetuning(net, encoder_state, Xp)
            if self.max_epochs_ > 0:
                trainer.train(net, net_input(Xp, weights), y_enc, self.max_epochs_,
                              "fine-tuning")
        return self._fitted(net)

    def _auto_budget(self, phase: str, per_epoch: int = 0) -> int:
        """The optimizer steps an ``"auto"`` phase aims at.

        Both phases ``"auto"`` in a fit that pretrains split ``2 * schedule__steps`` by
        ``schedule__pretrain_share``: the steps of the from-scratch control, which (with
        ``schedule__steps="auto"``) takes both phases' steps in fine-tuning. From a shipped
        encoder: :data:`sktspt.pretrained.FINETUNE_STEPS` unless ``schedule__steps`` is
        given. ``schedule__steps="auto"`` also covers at least ``_auto_min_epochs`` epochs
        of ``per_epoch`` steps, at most ``_auto_max_steps``.
        """
        s = self._settings()
        steps, share = s["schedule__steps"], s["schedule__pretrain_share"]
        if isinstance(self.pretrainer, str) and steps == "auto":
            from .pretrained import FINETUNE_STEPS  # a shipped encoder's start is good

            return FINETUNE_STEPS
        if steps == "auto":
            scratch = self.pretrainer is None and self.pretrain_epochs == 0
            floor = 0  # the steps of the epoch floor, capped, in whole epochs
            if self._auto_min_epochs and per_epoch:
                floor = min(self._auto_min_epochs, self._auto_max_steps // per_epoch) * per_epoch
            steps = max((2 if scratch else 1) * PHASE_STEPS, floor // (1 if scratch else 2))
        both = self.pretrain_epochs == "auto" and self.max_epochs == "auto"
        if not both or self.pretrainer is not None:
            return steps
        share = share if phase == "pretrain" else 1 - share
        return max(1, round(2 * steps * share))

    def _planned_steps(self, n: int, n_unlabeled: int = 0, y=None) -> int:
        """The optimizer steps a fit on ``n`` labelled and ``n_unlabeled`` unlabelled series
        takes (pretraining on both, then fine-tuning): what a control needs for equal steps."""
        self._check_params()
        trainer, seed = self._trainer(), self._seed()
        y_enc = None if y is None else self._stratify(np.unique(y, return_inverse=True)[1])
        steps, per_epoch = 0, trainer.batches(n, seed, y_enc)
        if self.pretrainer is None and self.pretrain_epochs != 0:
            n_pre = n + n_unlabeled
            epochs = trainer.epochs(self.pretrain_epochs, n_pre, seed,
                                    steps=self._auto_budget("pretrain", per_epoch))
            steps += epochs * trainer.batches(n_pre, seed)
        epochs = trainer.epochs(self.max_epochs, n, seed, y_enc,
                                steps=self._auto_budget("finetune", per_epoch))
        return steps + epochs * trainer.batches(n, seed, y_enc)

    def _start_finetuning(self, net, encoder_state: dict | None, Xp: np.ndarray) -> None:
        """Initialise ``net`` from the pretrained encoder, or (from scratch) fit its input
        scales on ``Xp``."""
        net.initialize()
        if encoder_state is not None:
            net.module_.encoder.load_state_dict(encoder_state)
        else:
            fit_to_panel(net.module_, Xp)

    def _restored_net(self, trainer):
        # The epochs a warm start trains.
        epochs = self.__dict__.get("max_epochs_", self.max_epochs)
        epochs = epochs if isinstance(epochs, int) else 0
        return self._finetune_net(trainer, 0, None, 0, epochs, None, weighted=False)

    def _sample_weights(
        self, sample_weight, y_enc: np.ndarray, factor: np.ndarray | None = None,
        what: str = "The sample weights",
    ) -> np.ndarray | None:
        """Per-series loss weights (``sample_weight`` times ``factor``), mean 1; or None.

        ``factor`` is a task's own per-series multiplier (the classifier's class weights);
        ``what`` names the weights in the error for a sum that is not positive.
        """
        if sample_weight is None and factor is None:
            return None
        n = len(y_enc)
        w = _check_sample_weight(sample_weight, np.empty((n, 1)), dtype=np.float64,
                                 ensure_non_negative=True)
        w = np.array(w, dtype=np.float64)  # never modify the caller's array
        if factor is not None:
            w *= factor
        if not np.isfinite(w).all() or w.max() <= 0:
            raise ValueError(f"{what} must be finite with a positive sum.")
        with np.errstate(over="ignore"):
            mean = w.mean()
        if not np.isfinite(mean):  # the sum overflows float64 (weights near 1e308)
            w /= w.max()
            mean = w.mean()
        w = w / mean
        if not np.isfinite(w).all() or w.max() <= 0:  # a mean that underflows
            raise ValueError(f"{what} span too many orders of magnitude to be scaled to "
                             "mean 1 in float64.")
        return w.astype(np.float32)

    def _fitted_pretrainer(self):
        """``pretrainer`` as a fitted estimator: a shipped encoder loaded by its name."""
        if not isinstance(self.pretrainer, str):
            return self.pretrainer
        from .pretrained import pretrained  # the shipped files, read through sktspt.load

        return pretrained(self.pretrainer)

    def _adopt_pretrainer(self, X, pre) -> np.ndarray:
        """Take shape state, normalisation and architecture from a fitted pretrainer."""
        try:
            check_is_fitted(pre, "encoder_")
        except NotFittedError as exc:
            raise NotFittedError(
                f"The pretrainer given to {type(self).__name__} ({type(pre).__name__}) is not "
                "fitted. If it was fitted before, clone() (inside cross_val_score, "
                "GridSearchCV, Pipeline or sktime) reset it: wrap it in "
                "sklearn.frozen.FrozenEstimator (pretrainer=FrozenEstimator(pretrainer)) so "
                "that it stays fitted."
            ) from exc
        warn_overridden(self, pre)
        self.input_spec_ = pre.input_spec_
        self._architecture = _architecture(pre.encoder_kwargs_)
        X, info = check_panel(X)
        if info.n_channels != self.n_channels_:
            shipped = (f" The shipped encoder {self.pretrainer!r} was pretrained on univariate "
                       "series: fit one model per channel, or pretrain an SPTPretrainer on "
                       "these series." if isinstance(self.pretrainer, str) else "")
            raise ValueError(
                f"X has {channel_count(info.n_channels)}, but the pretrainer was fitted on "
                f"{channel_count(self.n_channels_)}.{shipped}"
            )
        # X must be input the pretrainer's network takes (its length, for an equal-length
        # pretrainer; within its learned positions), or predict would refuse the very
        # training data.
        self.input_spec_.network_input(
            X, f"the pretrainer ({type(pre).__name__})",
            learned_positions=self._architecture.get("positional") == "learned")
        if info.ndim == 2:
            self.n_features_in_ = info.n_timepoints
        return X

    def _prepare_unlabeled(self, X_unlabeled) -> np.ndarray:
        """``X_unlabeled`` validated against the training data, normalised and padded."""
        U, info = check_panel(X_unlabeled, name="X_unlabeled")
        if info.n_channels != self.n_channels_:
            raise ValueError(
                f"X_unlabeled has {channel_count(info.n_channels)}, but X has {self.n_channels_}."
            )
        tokens = math.ceil(info.n_timepoints / self.patch_size_)
        if (self.input_spec_.resample_length is None and tokens > self.max_tokens_
                and self._architecture.get("positional") == "learned"):
            raise ValueError(
                f"X_unlabeled has series of length {info.n_timepoints} ({tokens} tokens), but "
                f"positional='learned' learns positions for X's longest series "
                f"({self.n_timepoints_} steps, {self.max_tokens_} tokens). Cut X_unlabeled's "
                "series to that length, or use positional='sinusoidal', 'rotary' or 'alibi'."
            )
        return self._prepare(U)

    def _finetune_net(
        self, trainer, n: int, y_enc: np.ndarray | None, seed: int, epochs: int,
        phase: str | None, weighted: bool,
    ) -> FineTuningNet:
        """The fine-tuning net, not initialised: the task's head and loss (:meth:`_task_net`),
        augmentation and its stream, mixup, and the training loop's settings (arguments as
        for :meth:`SPTBase._pretrain_net`; ``weighted``: per-series losses, weighted in
        :meth:`FineTuningNet.random_step`, for sample weights)."""
        net_cls, task = self._task_net()
        stratify = None if y_enc is None else self._stratify(y_enc)
        return net_cls(
            **task,
            augmentation=self._augmentation(),
            augment_seed=seed + 2,  # pretraining's mask streams use seed and seed + 1
            mixup_alpha=float(self.mixup_),
            mixup_kind=self.mixup_kind_,
            **({"criterion__reduction": "none"} if weighted else {}),
            **trainer.net_kwargs(n, epochs, seed, stratify, self.callbacks, phase),
            **{f"module__{k}": v for k, v in self.encoder_kwargs_.items()},
        )

    def _continue(self, X, y, sample_weight=None):
        """Warm start: more fine-tuning epochs on the current weights."""
        Xp = self._input(X)
        y_enc = self._continue_targets(y, len(Xp))
        weights = self._sample_weights(sample_weight, y_enc)
        saved = net_state(self.net_)
        try:
            return self._continue_training(Xp, y_enc, weights)
        except BaseException:
            restore_net_state(self.net_, saved)
            raise

    def _continue_training(self, Xp, y_enc, weights):
        if weights is not None:
            # Per-series losses, set on the criterion itself: skorch's set_params would build
            # a fresh optimizer, losing the state (and the schedule's start) a warm start keeps.
            self.net_.criterion_.reduction = "none"
        # The current precision (it may have changed since the net was built, or the model
        # may have been loaded on another device); raises where the device cannot train it.
        self.net_.precision = autocast_dtype(self._settings()["device__precision"], self._device)
        with self._seeded(self._seed()):
            self.net_.partial_fit(net_input(Xp, weights), y_enc)
        settle_eval(self.net_.module_)
        return self

