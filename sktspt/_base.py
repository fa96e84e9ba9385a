"""Shared parameters and machinery of the SPT estimators."""

from __future__ import annotations

import os
import threading
import warnings
from contextlib import contextmanager
from functools import wraps
from types import MappingProxyType

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted
from skorch.net import NeuralNet

from ._concurrency import THREADS, Device, choose_threads, settle_eval, step_macs
from ._limits import check_architecture_limits
from ._param_hints import REMOVED, REMOVED_IN
from ._params import ARCHITECTURE, BASE_CONSTRAINTS, lighthouse, resolve_device, validate
from ._routed import RoutedParams, params_for, phase_steps
from .augment import Augmentation
from .claim import RunLock, fit_fingerprint, open_run
from .data import InputSpec, PanelInfo, check_panel, warn_if_transposed
from .inference import infer
from .masking import Masking, resolve_masking
from .nn.encoder import TransformerEncoder
from .nn.heads import LeJEPAModel, ReconstructionModel
from .nn.lighthouse import Lighthouse
from .nn.panel_fit import fit_to_panel
from .objectives import LeJEPALoss
from .persistence.saving import save as save_estimator
from .precision import autocast, autocast_dtype, matmul_precision
from .training import LeJEPANet, MaskedPretrainNet, MaskedSigRegNet, Trainer
from .training.callbacks import checkpoint_folder
from .training.loop import AdamW, Schedule

#: Serialises the sections of fits that seed torch's global generator (see ``_seeded``).
SEEDED_LOCK = threading.RLock()


def estimator_call(method):
    """Run a public method of an estimator in its one context; for ``fit``, all or nothing.

    Torch's thread count is held for the call (:data:`sktspt._concurrency.THREADS`):
    ``device__threads``, or for None the package's choice for the fitted model's size
    (:meth:`SPTBase._thread_count`; ``fit``'s seeded section holds it once the data are
    read). On CUDA, TF32 matmuls are allowed unless ``device__precision="float32"``.
    ``fit`` validates every parameter and setting once, into the read-only mapping that the
    whole fit reads (:meth:`SPTBase._settings`); on any exception every attribute is put
    back as it was, and the checkpoint folder's lock is released on every exit path.
    """
    fit = method.__name__ == "fit"

    @wraps(method)
    def wrapper(self, *args, **kwargs):
        s = self._settings()
        BASE_CONSTRAINTS["device__threads"]("device__threads", s["device__threads"])
        threads = None if fit and s["device__threads"] is None else self._thread_count()
        saved = dict(self.__dict__) if fit else None
        try:
            with THREADS.hold(threads), matmul_precision(s["device__precision"],
                                                         resolve_device(s["device"])):
                if fit:
                    self._check_params()
                    self.__dict__["_fit_settings"] = MappingProxyType(self._settings())
                return method(self, *args, **kwargs)
        except BaseException:
            if fit:
                self._release_run()
                self.__dict__.clear()
                self.__dict__.update(saved)
            raise
        finally:
            if fit:
                self._release_run()
                self.__dict__.pop("_fit_settings", None)

    return wrapper


def _architecture(encoder_kwargs: dict) -> dict:
    """The network part of ``encoder_kwargs``."""
    return {k: encoder_kwargs[k] for k in ARCHITECTURE}


class SPTBase(RoutedParams, BaseEstimator):
    """Parameters, validation, data preparation and the pretraining loop.

    Subclasses add the fine-tuning (classifier) or embedding (pretrainer) side. All
    arguments of ``__init__`` are stored as given and interpreted in ``fit``.
    """

    #: The component of each routed group every estimator takes (skorch's prefixes: the
    #: group's settings are the component's keyword-only arguments); subclasses add theirs.
    _routes = {"architecture": TransformerEncoder, "tokenizer": InputSpec.learn,
               "attention": Lighthouse, "masking": Masking, "pretrain_objective": LeJEPALoss,
               "schedule": Schedule, "optimizer": AdamW, "device": Device}

    #: The constraint of each parameter and routed setting both estimators take; subclasses
    #: merge in theirs.
    _parameter_constraints: dict = BASE_CONSTRAINTS

    #: Batches an epoch of an ``"auto"`` phase counts as at least (1: the step budget
    #: alone); a task whose small training sets need fewer steps sets more. Every phase
    #: counts alike, so the from-scratch control keeps SPT's epochs (and steps) in all.
    _auto_min_batches: int = 1

    # --- validation ------------------------------------------------------------------
    def _check_params(self) -> None:
        """Check every parameter and setting against its constraint, then their relations."""
        self._check_routed()
        s = self._settings()
        validate(s, self._parameter_constraints, owner=type(self).__name__)
        checkpoint_folder(s["callbacks"])
        if checkpoint_folder(s.get("pretrain__callbacks")) is not None:
            raise ValueError("A ResumableCheckpoint goes in callbacks, not pretrain__callbacks: "
                             "it checkpoints both phases of the fit.")

    def _mask_channels(self) -> tuple[int, ...] | None:
        """``masking__channels`` checked against the fitted number of channels."""
        channels = self._settings()["masking__channels"]
        if channels is None:
            return None
        channels = tuple(int(c) for c in channels)
        bad = [c for c in channels if not 0 <= c < self.n_channels_]
        if bad:
            raise ValueError(
                f"masking__channels={list(channels)} names channel(s) {bad}, but X has "
                f"{self.n_channels_} channel(s), numbered 0 to {self.n_channels_ - 1}."
            )
        return tuple(sorted(channels))

    def _fit_input(self, X) -> tuple[np.ndarray, PanelInfo]:
        """Validate training data and fix what fit learns about it (``input_spec_``)."""
        X, info = check_panel(X)
        warn_if_transposed(info)
        if info.ndim == 2:
            self.n_features_in_ = info.n_timepoints
        elif hasattr(self, "n_features_in_"):
            del self.n_features_in_
        s = self._settings()
        self.input_spec_ = InputSpec.learn(X, info, s["normalize"], **params_for(s, "tokenizer"))
        # The encoder's arguments: its size, and the architecture__ settings routed to it.
        self._architecture = {"d_model": s["d_model"], "depth": s["depth"],
                              **params_for(s, "architecture"),
                              "architecture": s["architecture"], "tokenizer": s["tokenizer"]}
        check_architecture_limits(self._architecture, {
            f: f if f in s else f"architecture__{f}" for f in self._architecture})
        self._mask_channels()
        return X, info

    # --- fitted state ---------------------------------------------------------------------
    # What fit learned about the input lives in ``input_spec_`` (an InputSpec) and the
    # network's shape in ``_architecture``; the familiar attributes read them.
    n_channels_ = property(lambda self: self.input_spec_.n_channels, doc="Channels of X.")
    n_timepoints_ = property(lambda self: self.input_spec_.n_timepoints,
                             doc="Length of the training series.")
    equal_length_ = property(lambda self: self.input_spec_.equal_length,
                             doc="Whether the training series had equal length.")
    patch_size_ = property(lambda self: self.input_spec_.patch_size, doc="Steps per token.")
    max_tokens_ = property(lambda self: self.input_spec_.max_tokens,
                           doc="Tokens of a training-length series.")
    normalizer_ = property(lambda self: self.input_spec_.normalizer,
                           doc="Normalisation fitted on the training data.")

    @property
    def encoder_kwargs_(self) -> dict:
        """Architecture of ``encoder_``: the input spec's sizes and the network parameters."""
        return {**self.input_spec_.encoder_kwargs(), **self._architecture}

    def __setstate__(self, state: dict) -> None:
        # Pickles of sktspt 0.4 and earlier may hold what 0.5 removed: flat names, rejected
        # options, 0.4's callbacks__ settings, or the fitted state from before InputSpec.
        removed = {**REMOVED, **getattr(self, "_removed", {})}
        old = sorted({*state, *state.get("_routed_values", ())} & set(removed))
        if old or "input_spec_" not in state and "normalizer_" in state:
            raise TypeError(
                f"This pickle was made by sktspt 0.4 or earlier (it holds "
                f"{', '.join(old) or 'the fitted state from before InputSpec'}, which sktspt "
                f"{REMOVED_IN} removed). Unpickle it with sktspt 0.4, which reads it.")
        super().__setstate__(state)

    def _restore(self, spec: InputSpec, encoder_kwargs: dict, *, check: bool = True) -> NeuralNet:
        """Set a fitted state made elsewhere and build its net, initialised, weights not loaded.

        The one way a fitted estimator is made without ``fit``: :mod:`sktspt.persistence`
        (from a saved file) and :mod:`sktspt.compress` (a shallower copy) call it, then load
        the weights into ``net.module_``. ``check`` validates the parameters first. Building
        neither draws from the caller's random numbers nor repeats warnings of the fit.
        """
        if check:
            self._check_params()
        self.input_spec_ = spec
        self._architecture = _architecture(encoder_kwargs)
        with self._seeded(0, threads=False), warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            net = self._restored_net(self._trainer())
            net.initialize()
        settle_eval(net.module_)
        return net

    def _restored_net(self, trainer: Trainer) -> NeuralNet:
        """The net of ``net_`` (not initialised) for weights to be loaded into."""
        raise NotImplementedError

    def _input(self, X) -> np.ndarray:
        """Validate data seen after fit, normalise and pad it for the network."""
        check_is_fitted(self, "normalizer_")
        # The fitted network's positions, not the parameter (which may be set since fit).
        return self.input_spec_.network_input(
            X, type(self).__name__, learned_positions=self._architecture["positional"] == "learned")

    def _prepare(self, X: np.ndarray) -> np.ndarray:
        """Normalise and NaN-pad the time axis to a multiple of the patch size."""
        return self.input_spec_.prepare(X)

    # --- randomness and device ----------------------------------------------------------
    def _seed(self) -> int:
        return int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))

    @contextmanager
    def _seeded(self, seed: int, threads: bool = True):
        """Seed torch for this fit without touching the caller's global RNG state.

        Weight initialisation, dropout and batch order draw from torch's global generator,
        which threads share: seeded sections run one at a time (``SEEDED_LOCK``), so that
        fits in threads equal serial ones. With ``threads`` the section holds the fit's
        torch thread count (:meth:`_thread_count`). Leaving it releases the checkpoint folder.
        """
        try:
            cuda = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
            with THREADS.hold(self._thread_count() if threads else None), SEEDED_LOCK, \
                    torch.random.fork_rng(devices=cuda):
                torch.manual_seed(seed)
                yield
        finally:
            self._release_run()

    def _thread_count(self) -> int | None:
        """Torch threads for this estimator's calls: ``device__threads``, or for None the
        package's choice for the multiply-adds of a training step at the fitted length
        (:func:`sktspt._concurrency.choose_threads`); None while that length is unknown."""
        s = self._settings()
        if s["device__threads"] is not None:
            return int(s["device__threads"])
        spec = self.__dict__.get("input_spec_")
        if spec is None:
            return None
        arch = {"d_model": s["d_model"], "depth": s["depth"],
                "dim_feedforward": s["architecture__dim_feedforward"]}
        arch.update({k: v for k, v in self.__dict__.get("_architecture", {}).items()
                     if k in arch})
        try:
            macs = step_macs(spec.max_tokens, arch["d_model"], arch["depth"],
                             arch["dim_feedforward"], s["batch_size"])
        except (TypeError, ValueError):  # parameters set to invalid values since the fit
            macs = 0
        return choose_threads(macs, THREADS.ceiling())

    def _release_run(self) -> None:
        lock = self.__dict__.pop("_run_lock", None)
        if lock is not None:
            lock.release()

    @property
    def _device(self) -> str:
        return resolve_device(self.device)

    # --- training ---------------------------------------------------------------------------
    def _trainer(self) -> Trainer:
        """The training loop's settings, read once from the parameters (and ``input_spec_``)."""
        s = self._settings()
        return Trainer(
            lr=s["lr"], weight_decay=s["optimizer__weight_decay"], batch_size=s["batch_size"],
            warmup=s["schedule__warmup"], auto_steps=phase_steps(s["schedule__steps"]),
            auto_min_batches=self._auto_min_batches,
            validation_fraction=s["validation_fraction"], patience=s["schedule__patience"],
            verbose=s["verbose"], device=resolve_device(s["device"]),
            precision=s["device__precision"], checkpoint_dir=checkpoint_folder(s["callbacks"]),
            lighthouse=lighthouse(s),
            input_spec=self.__dict__.get("input_spec_"), owner=type(self).__name__,
        )

    def _resume_seed(self, seed: int, *arrays) -> int:
        """With a :class:`~sktspt.ResumableCheckpoint` in ``callbacks``: claim its folder for
        this fit (an exclusive lock until the seeded section ends) and return the seed to use.
        The fingerprint of everything that shapes the result (parameters, pretrainer weights,
        callbacks, data) makes a checkpoint resumable only by the fit that wrote it.
        """
        self._release_run()
        directory = checkpoint_folder(self._settings()["callbacks"])
        if directory is None:
            return seed
        arrays = [a if a is None or isinstance(a, np.ndarray) else check_panel(a)[0]
                  for a in arrays]
        fingerprint, unverifiable = fit_fingerprint(self, seed, arrays)
        lock = RunLock(os.fspath(directory))
        try:
            seed = open_run(os.fspath(directory), fingerprint, seed, unverifiable)
        except BaseException:
            lock.release()
            raise
        self._run_lock = lock
        return seed

    def _fitted(self, net: NeuralNet):
        """Keep ``net`` as the fitted net (in eval mode), its encoder and history."""
        self.net_ = net
        settle_eval(net.module_)
        self.encoder_, self.history_ = net.module_.encoder, net.history
        return self

    def save(self, path) -> None:
        """Save the fitted estimator to one file that loading never executes.

        See :func:`sktspt.persistence.save`; reload with :func:`sktspt.load`.
        """
        save_estimator(self, path)

    def _pretrain(
        self, trainer: Trainer, X: np.ndarray, epochs: int, seed: int, callbacks=None,
        phase: str | None = "pretrain",
    ) -> MaskedPretrainNet:
        """Self-pretraining on prepared (normalised) X, with ``pretrain_objective``."""
        net = self._pretrain_net(trainer, len(X), seed, epochs, callbacks, phase)
        net.initialize()
        fit_to_panel(net.module_, X)
        if epochs > 0:
            trainer.train(net, X, None, epochs, "pretraining")
        return net

    def _pretrain_net(
        self, trainer: Trainer, n: int, seed: int, epochs: int, callbacks, phase: str | None
    ) -> MaskedPretrainNet:
        """The pretraining net of ``pretrain_objective``, not initialised.

        ``"masked"``: reconstruction of hidden values; ``"masked+sigreg"``: the same plus
        ``pretrain_objective__sigreg_lambda * SIGReg`` on pooled embeddings; ``"lejepa"``:
        LeJEPA on random views. Every net has ``module_.encoder`` and ``module_.embed``.
        ``n`` series (0 for a net built to load weights into), ``epochs`` and ``seed`` set
        the schedule, split and random streams; ``phase`` names the checkpoint folder.
        """
        s = self._settings()
        objective = s["pretrain_objective"]
        sigreg_lambda = float(s["pretrain_objective__sigreg_lambda"])
        masking = s["masking"] if objective == "lejepa" else resolve_masking(
            s["masking"], self.n_channels_)
        if objective == "lejepa":
            net_cls, objective_kwargs = LeJEPANet, dict(
                module=LeJEPAModel, sigreg_lambda=sigreg_lambda, view_seed=seed
            )
        else:
            net_cls = MaskedSigRegNet if objective == "masked+sigreg" else MaskedPretrainNet
            objective_kwargs = dict(
                module=ReconstructionModel, criterion=torch.nn.MSELoss, masking=masking,
                mask_ratio=float(s["masking__ratio"]), mean_span=self._mean_span(),
                mask_seed=seed, ratio_spread=float(s["masking__ratio_spread"]),
                mask_channels=self._mask_channels(), augmentation=self._augmentation(),
            )
            if objective == "masked+sigreg":
                objective_kwargs["sigreg_lambda"] = sigreg_lambda
        return net_cls(
            **trainer.net_kwargs(n, epochs, seed, None, callbacks, phase),
            **objective_kwargs,
            **{f"module__{k}": v for k, v in self.encoder_kwargs_.items()},
        )

    def _augment(self) -> bool | str:
        """``augment`` as training and prediction use it: what fit resolved (``augment_``:
        for ``"auto"``, nothing before the classifier has chosen, so pretraining never
        augments), so that ``augment`` set after fit changes nothing until the next fit;
        ``augment`` itself for an estimator without ``augment_`` (a pretrainer)."""
        if "augment_" in self.__dict__:
            return self.augment_
        return False if self.augment == "auto" else self.augment

    def _augmentation(self) -> Augmentation | None:
        """The training-batch augmentation of both phases; override to change the recipe."""
        augment = self._augment()
        if augment == "shift":
            return Augmentation.shift_only()
        if augment == "roll":
            return Augmentation.roll_only()
        return None

    def _mean_span(self) -> float:
        mean_span = self._settings()["masking__mean_span"]
        return float(max(3, self.patch_size_) if mean_span is None else mean_span)

    def _embed(self, module: torch.nn.Module, X: np.ndarray) -> np.ndarray:
        """Pooled embeddings of prepared X (float32), invariant to batch composition."""
        return self._infer(module.embed, module, X).astype(np.float32, copy=False)

    def _autocast(self):
        """Autocast for prediction: ``device__precision`` here (float32 where it cannot run)."""
        device = self._device
        dtype = autocast_dtype(self._settings()["device__precision"], device, training=False)
        return autocast(device, dtype)

    def _infer(self, forward, module: torch.nn.Module, X: np.ndarray) -> np.ndarray:
        """``forward`` on prepared X in passes of fixed shape (:func:`sktspt.inference.infer`)."""
        return infer(forward, module, X, patch_size=self.patch_size_,
                     max_tokens=self.max_tokens_, device=self._device, autocast=self._autocast())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.three_d_array = True
        return tags


class EmbeddingTransformerMixin(ClassNamePrefixFeaturesOutMixin, TransformerMixin):
    """``transform`` gives float32 embeddings named ``<class>0 .. <class>{d_model-1}``."""

    @estimator_call
    def transform(self, X) -> np.ndarray:
        """Pooled embeddings ``(n_instances, d_model)`` of ``X`` from the fitted encoder."""
        check_is_fitted(self, "net_")
        return self._embed(self.net_.module_, self._input(X))

    @property
    def _n_features_out(self) -> int:
        return self.encoder_kwargs_["d_model"]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float32"]
        return tags
