"""SPTPretrainer: self-pretraining of a time-series transformer, as a transformer."""

from __future__ import annotations

import warnings

import numpy as np
import torch
from sklearn.utils.validation import check_is_fitted

from ._base import EmbeddingTransformerMixin, SPTBase, all_or_nothing, with_threads
from ._concurrency import settle_eval
from ._param_docs import PRETRAINER_DOCS, document_parameters
from ._param_hints import ParameterHints
from ._params import DEPRECATED, EPOCHS, Deprecated
from .data import check_panel
from .training import LeJEPANet

__all__ = ["SPTPretrainer"]


@document_parameters(PRETRAINER_DOCS)
class SPTPretrainer(ParameterHints, EmbeddingTransformerMixin, SPTBase):
    """Self-pretrain a transformer encoder on unlabelled time series.

    ``fit`` hides part of each series (see ``masking``) and trains the encoder to
    reconstruct the hidden values; the loss counts only values that were hidden and
    observed. ``transform`` returns pooled embeddings. A fitted pretrainer can seed an
    :class:`~sktspt.SPTClassifier` through its ``pretrainer`` parameter.
    ``pretrain_objective`` offers two alternatives to plain reconstruction: LeJEPA on
    random views, and reconstruction regularised by SIGReg.

    <parameters>

    Attributes
    ----------
    net_ : MaskedPretrainNet
        The fitted skorch net.
    encoder_ : TransformerEncoder
        The pretrained encoder.
    history_ : skorch.History
        Per-epoch training (and validation) reconstruction loss.
    encoder_kwargs_ : dict
        Architecture of ``encoder_`` (after ``"auto"`` choices were made).
    normalizer_ : Normalizer
        Normalisation statistics fitted on the training data.
    pretrain_epochs_ : int
        The pretraining epochs (what ``pretrain_epochs="auto"`` resolved to).
    max_epochs_ : int
        Deprecated alias of ``pretrain_epochs_``.
    n_channels_, n_timepoints_, patch_size_ : int
        Shape facts fixed at fit.

    Examples
    --------
    >>> import numpy as np
    >>> from sktspt import SPTPretrainer
    >>> X = np.random.default_rng(0).normal(size=(20, 2, 48))
    >>> pre = SPTPretrainer(depth=1, d_model=16, pretrain_epochs=2, random_state=0).fit(X)
    >>> pre.transform(X).shape
    (20, 16)
    """

    _parameter_constraints: dict = {
        **SPTBase._parameter_constraints,
        "max_epochs": Deprecated(EPOCHS),  # renamed pretrain_epochs in 0.3.0
    }

    def __init__(
        self,
        depth=3,
        d_model=64,
        n_heads=4,
        dim_feedforward=128,
        *,
        dropout=0.1,
        patch_size="auto",
        tokenizer="rocket",
        differences=0,
        positional="sinusoidal",
        architecture="transformer",
        normalize="auto",
        masking="span",
        mask_ratio=0.7,
        mask_ratio_spread=0.25,
        mean_span=None,
        pretrain_objective="masked",
        sigreg_lambda=0.05,
        pretrain_epochs="auto",
        max_epochs="deprecated",
        auto_steps=1000,
        lr=1e-3,
        warmup="auto",
        weight_decay=0.01,
        batch_size=16,
        augment="auto",
        validation_fraction=0.0,
        patience=None,
        callbacks=None,
        device="cpu",
        random_state=None,
        verbose=0,
        checkpoint_dir=None,
        n_threads=None,
        mask_channels=None,
        pretrain_crops=None,
        attention="dense",
        lighthouse_levels=3,
        lighthouse_pool=4,
        lighthouse_topk=8,
        lighthouse_recovery=0.1,
        precision="auto",
    ) -> None:
        self.depth = depth
        self.d_model = d_model
        self.n_heads = n_heads
        self.dim_feedforward = dim_feedforward
        self.dropout = dropout
        self.patch_size = patch_size
        self.tokenizer = tokenizer
        self.differences = differences
        self.positional = positional
        self.architecture = architecture
        self.normalize = normalize
        self.masking = masking
        self.mask_ratio = mask_ratio
        self.mask_ratio_spread = mask_ratio_spread
        self.mean_span = mean_span
        self.pretrain_objective = pretrain_objective
        self.sigreg_lambda = sigreg_lambda
        self.pretrain_epochs = pretrain_epochs
        self.max_epochs = max_epochs
        self.auto_steps = auto_steps
        self.lr = lr
        self.warmup = warmup
        self.weight_decay = weight_decay
        self.batch_size = batch_size
        self.augment = augment
        self.validation_fraction = validation_fraction
        self.patience = patience
        self.callbacks = callbacks
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self.checkpoint_dir = checkpoint_dir
        self.n_threads = n_threads
        self.mask_channels = mask_channels
        self.pretrain_crops = pretrain_crops
        self.attention = attention
        self.lighthouse_levels = lighthouse_levels
        self.lighthouse_pool = lighthouse_pool
        self.lighthouse_topk = lighthouse_topk
        self.lighthouse_recovery = lighthouse_recovery
        self.precision = precision

    @with_threads
    @all_or_nothing
    def fit(self, X, y=None) -> SPTPretrainer:
        """Self-pretrain on ``X``; ``y`` is ignored."""
        X, _ = self._fit_input(X)
        epochs = self._pretrain_epochs()
        trainer = self._trainer()
        seed = self._resume_seed(self._seed(), X)
        with self._seeded(seed):
            self.pretrain_epochs_ = trainer.epochs(epochs, len(X), seed)
            self.net_ = self._pretrain(
                trainer, self._prepare(X), self.pretrain_epochs_, seed, self.callbacks)
        settle_eval(self.net_.module_)
        self.encoder_ = self.net_.module_.encoder
        self.history_ = self.net_.history
        return self

    def _restored_net(self, trainer):
        return self._pretrain_net(trainer, 0, 0, 0, None, None)

    def _pretrain_epochs(self):
        """``pretrain_epochs``, or the deprecated ``max_epochs`` where that was set."""
        if isinstance(self.max_epochs, str) and self.max_epochs == DEPRECATED:
            return self.pretrain_epochs
        if not (isinstance(self.pretrain_epochs, str) and self.pretrain_epochs == "auto"):
            raise ValueError(
                f"max_epochs={self.max_epochs!r} and pretrain_epochs="
                f"{self.pretrain_epochs!r} both set the pretraining epochs; set "
                "pretrain_epochs only (max_epochs is deprecated)."
            )
        warnings.warn(
            "SPTPretrainer's max_epochs was renamed pretrain_epochs in sktspt 0.3.0, as in "
            "SPTClassifier; max_epochs is removed in 0.4.0. Use "
            f"pretrain_epochs={self.max_epochs!r}.",
            FutureWarning,
            stacklevel=6,  # the caller of fit, through with_threads and all_or_nothing
        )
        return self.max_epochs

    @property
    def max_epochs_(self) -> int:
        """Deprecated alias of ``pretrain_epochs_`` (the pretraining epochs)."""
        return self.pretrain_epochs_

    @max_epochs_.setter
    def max_epochs_(self, value: int) -> None:  # files and pickles of sktspt 0.2.0 and before
        self.pretrain_epochs_ = value

    def __setstate__(self, state: dict) -> None:
        # Pickles of sktspt 0.2.0 and before call the pretraining epochs max_epochs.
        if "pretrain_epochs" not in state:
            state["pretrain_epochs"] = state.pop("max_epochs", "auto")
            state["max_epochs"] = DEPRECATED
            if "max_epochs_" in state:
                state["pretrain_epochs_"] = state.pop("max_epochs_")
        super().__setstate__(state)

    @with_threads
    def transform(self, X) -> np.ndarray:
        """Pooled embeddings ``(n_instances, d_model)`` of ``X``."""
        check_is_fitted(self, "net_")
        return self._embed(self.net_.module_, self._input(X))

    @with_threads
    def reconstruct(self, X, hidden=None) -> np.ndarray:
        """Reconstruction of ``X`` (in normalised units) with ``hidden`` values removed."""
        check_is_fitted(self, "net_")
        if isinstance(self.net_, LeJEPANet):
            raise ValueError(
                "reconstruct needs a reconstruction objective; this pretrainer was fitted "
                "with pretrain_objective='lejepa'."
            )
        Xp = self._input(X)
        module = settle_eval(self.net_.module_)
        with torch.no_grad():
            h = None if hidden is None else torch.as_tensor(hidden, dtype=torch.bool)
            if h is not None:
                h = h[..., : Xp.shape[-1]]
                h = torch.nn.functional.pad(h, (0, Xp.shape[-1] - h.shape[-1]))
            xb = torch.from_numpy(Xp).to(self._device)
            out = module(xb, None if h is None else h.to(self._device))
        length = check_panel(X)[1].n_timepoints
        out = out[:, : self.n_channels_, :length].cpu().numpy()  # the values, not slopes
        # Time points after the panel's last observed value were dropped as padding.
        pad = length - out.shape[-1]
        return np.pad(out, ((0, 0), (0, 0), (0, pad)), constant_values=np.nan) if pad else out
