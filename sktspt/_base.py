"""Shared parameters and machinery of the SPT estimators."""

from __future__ import annotations

import math
import warnings
from contextlib import contextmanager

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted
from skorch.callbacks import EarlyStopping, GradientNormClipping, LRScheduler
from skorch.dataset import ValidSplit

from .data import Normalizer, PanelInfo, check_panel
from .masking import MASKINGS
from .nn.positional import POSITIONALS
from .training import MaskedPretrainNet, WarmupCosine

TARGET_TOKENS = 32


def _silent(*args, **kwargs) -> None:
    """A picklable sink that drops messages."""


def resolve_device(device: str) -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


class SPTBase(BaseEstimator):
    """Parameters, validation, data preparation and the pretraining loop.

    Subclasses add the fine-tuning (classifier) or embedding (pretrainer) side. All
    arguments of ``__init__`` are stored as given and interpreted in ``fit``.
    """

    # --- validation ------------------------------------------------------------------
    def _check_params(self) -> None:
        if self.masking not in MASKINGS:
            raise ValueError(f"masking must be one of {MASKINGS}, got {self.masking!r}.")
        if self.positional not in POSITIONALS:
            raise ValueError(
                f"positional must be one of {POSITIONALS}, got {self.positional!r}."
            )
        if not 0.0 < float(self.mask_ratio) < 1.0:
            raise ValueError(f"mask_ratio must be in (0, 1), got {self.mask_ratio!r}.")
        for name in ("depth", "d_model", "n_heads", "dim_feedforward", "batch_size"):
            value = getattr(self, name)
            if not isinstance(value, int | np.integer) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}.")
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model={self.d_model} must be divisible by n_heads={self.n_heads}."
            )
        if not 0.0 <= float(self.validation_fraction) < 1.0:
            raise ValueError(
                f"validation_fraction must be in [0, 1), got {self.validation_fraction!r}."
            )

    def _resolve_patch_size(self, n_timepoints: int) -> int:
        p = self.patch_size
        if p == "auto":
            return max(1, math.ceil(n_timepoints / TARGET_TOKENS))
        if not isinstance(p, int | np.integer) or p < 1:
            raise ValueError(f"patch_size must be a positive integer or 'auto', got {p!r}.")
        if p > n_timepoints:
            raise ValueError(
                f"Series of length {n_timepoints} are shorter than one patch "
                f"(patch_size={p}); lower patch_size."
            )
        return int(p)

    def _fit_input(self, X) -> tuple[np.ndarray, PanelInfo]:
        """Validate training data and fix its shape-related state."""
        self._check_params()
        X, info = check_panel(X)
        self.n_channels_ = info.n_channels
        self.n_timepoints_ = info.n_timepoints
        self.equal_length_ = info.equal_length
        if info.ndim == 2:
            self.n_features_in_ = info.n_timepoints
        elif hasattr(self, "n_features_in_"):
            del self.n_features_in_
        self.patch_size_ = self._resolve_patch_size(info.n_timepoints)
        self.max_tokens_ = math.ceil(info.n_timepoints / self.patch_size_)
        self.normalizer_ = Normalizer(self.normalize).fit(X)
        return X, info

    def _input(self, X) -> np.ndarray:
        """Validate data seen after fit, normalise and pad it for the network."""
        check_is_fitted(self, "normalizer_")
        X, info = check_panel(X)
        name = type(self).__name__
        if info.n_channels != self.n_channels_:
            raise ValueError(
                f"X has {info.n_channels} channels, but {name} was fitted on "
                f"{self.n_channels_} channels."
            )
        if self.equal_length_ and info.n_timepoints != self.n_timepoints_:
            if info.ndim == 2:
                raise ValueError(
                    f"X has {info.n_timepoints} features, but {name} is expecting "
                    f"{self.n_timepoints_} features as input."
                )
            raise ValueError(
                f"X has series of length {info.n_timepoints}, but {name} was fitted on "
                f"series of length {self.n_timepoints_}. Fit on series of unequal length "
                "(or NaN-padded) for a model that accepts other lengths."
            )
        # Padding after the last observed value changes nothing the network sees (padding
        # tokens are never attended to or pooled), so drop it rather than let it count
        # against the learned positions.
        observed_steps = ~np.isnan(X).all(axis=(0, 1))
        X = X[:, :, : len(observed_steps) - int(np.argmax(observed_steps[::-1]))]
        n_tokens = math.ceil(X.shape[2] / self.patch_size_)
        if self.positional == "learned" and n_tokens > self.max_tokens_:
            raise ValueError(
                f"X has series of length {X.shape[2]} ({n_tokens} tokens) but learned "
                f"positions cover at most {self.max_tokens_} tokens."
            )
        return self._prepare(X)

    def _prepare(self, X: np.ndarray) -> np.ndarray:
        """Normalise and NaN-pad the time axis to a multiple of the patch size."""
        X = self.normalizer_.transform(X).astype(np.float32, copy=False)
        pad = (-X.shape[2]) % self.patch_size_
        if pad:
            X = np.pad(X, ((0, 0), (0, 0), (0, pad)), constant_values=np.nan)
        return X

    def _encoder_kwargs(self) -> dict:
        return dict(
            n_channels=self.n_channels_,
            patch_size=self.patch_size_,
            max_tokens=self.max_tokens_,
            d_model=self.d_model,
            depth=self.depth,
            n_heads=self.n_heads,
            dim_feedforward=self.dim_feedforward,
            dropout=self.dropout,
            positional=self.positional,
        )

    # --- randomness and device ----------------------------------------------------------
    def _seed(self) -> int:
        return int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))

    @contextmanager
    def _seeded(self, seed: int):
        """Seed torch for this fit without touching the caller's global RNG state."""
        devices = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(seed)
            yield

    @property
    def _device(self) -> str:
        return resolve_device(self.device)

    # --- shared training pieces ----------------------------------------------------------
    def _train_split(self, n: int, seed: int, y=None):
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

    def _callbacks(self, n_train: int, epochs: int, has_valid: bool, user=()) -> list:
        steps = epochs * max(1, math.ceil(n_train / self.batch_size))
        schedule = WarmupCosine(steps, warmup_steps=min(steps // 10, 100))
        callbacks = [
            ("lr_schedule", LRScheduler(
                policy=torch.optim.lr_scheduler.LambdaLR, lr_lambda=schedule, step_every="batch"
            )),
            ("grad_clip", GradientNormClipping(gradient_clip_value=1.0)),
        ]
        if has_valid:
            patience = epochs if self.patience is None else self.patience
            callbacks.append(("best_epoch", EarlyStopping(
                monitor="valid_loss", patience=patience, threshold=0.0, load_best=True,
                sink=print if self.verbose else _silent,
            )))
        return callbacks + list(user or ())

    def _pretrain(self, X: np.ndarray, epochs: int, seed: int, callbacks=None) -> MaskedPretrainNet:
        """Self-pretraining: fit a reconstruction net on prepared (normalised) X."""
        masking = self.masking
        if masking == "channel" and self.n_channels_ < 2:
            warnings.warn(
                "masking='channel' needs at least 2 channels; using 'span' for "
                "univariate input.",
                UserWarning,
                stacklevel=3,
            )
            masking = "span"
        split = self._train_split(len(X), seed)
        n_train = len(X) - (int(math.ceil(len(X) * self.validation_fraction)) if split else 0)
        from .nn.heads import ReconstructionModel

        net = MaskedPretrainNet(
            module=ReconstructionModel,
            criterion=torch.nn.MSELoss,
            optimizer=torch.optim.AdamW,
            optimizer__weight_decay=self.weight_decay,
            lr=self.lr,
            max_epochs=epochs,
            batch_size=self.batch_size,
            train_split=split,
            iterator_train__shuffle=True,
            callbacks=self._callbacks(n_train, epochs, split is not None, callbacks),
            device=self._device,
            verbose=self.verbose,
            masking=masking,
            mask_ratio=float(self.mask_ratio),
            mean_span=self._mean_span(),
            mask_seed=seed,
            **{f"module__{k}": v for k, v in self._encoder_kwargs().items()},
        )
        if epochs > 0:
            net.fit(X, None)
        else:
            net.initialize()
        return net

    def _mean_span(self) -> float:
        if self.mean_span is None:
            return float(max(3, self.patch_size_))
        return float(self.mean_span)

    def _embed(self, module: torch.nn.Module, X: np.ndarray) -> np.ndarray:
        """Pooled embeddings of prepared X, computed in batches in eval mode."""
        was_training = module.training
        module.eval()
        out = []
        with torch.no_grad():
            for start in range(0, len(X), max(self.batch_size, 256)):
                xb = torch.from_numpy(X[start : start + max(self.batch_size, 256)])
                out.append(module.embed(xb.to(self._device)).float().cpu().numpy())
        module.train(was_training)
        return np.concatenate(out).astype(np.float32, copy=False)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags


class EmbeddingTransformerMixin(ClassNamePrefixFeaturesOutMixin, TransformerMixin):
    """``transform`` gives float32 embeddings named ``<class>0 .. <class>{d_model-1}``."""

    @property
    def _n_features_out(self) -> int:
        return self.encoder_kwargs_["d_model"]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float32"]
        return tags
