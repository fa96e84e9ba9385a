"""SPTPretrainer: self-pretraining of a time-series transformer, as a transformer."""

from __future__ import annotations

import numpy as np
import torch
from sklearn.utils.validation import check_is_fitted

from ._base import EmbeddingTransformerMixin, SPTBase, estimator_call
from ._concurrency import settle_eval
from ._param_docs import PRETRAINER_DOCS, document_parameters
from .data import check_panel
from .training import LeJEPANet

__all__ = ["SPTPretrainer"]


@document_parameters(PRETRAINER_DOCS)
class SPTPretrainer(EmbeddingTransformerMixin, SPTBase):
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
        Deprecated alias of ``pretrain_epochs_`` (read-only).
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

    #: Renamed in 0.3.0, removed in 0.5 (:func:`sktspt._param_hints.removed_message`).
    _removed = {"max_epochs": "pretrain_epochs"}

    def __init__(
        self, *, depth=3, d_model=64, tokenizer="rocket", architecture="transformer",
        attention="dense", normalize="auto", masking="span", pretrain_objective="masked",
        pretrain_epochs="auto", lr=1e-3, batch_size=16, augment="auto",
        validation_fraction=0.0, callbacks=None, random_state=None, device="cpu", verbose=0,
        **kwargs,
    ) -> None:
        self.depth = depth
        self.d_model = d_model
        self.tokenizer = tokenizer
        self.architecture = architecture
        self.attention = attention
        self.normalize = normalize
        self.masking = masking
        self.pretrain_objective = pretrain_objective
        self.pretrain_epochs = pretrain_epochs
        self.lr = lr
        self.batch_size = batch_size
        self.augment = augment
        self.validation_fraction = validation_fraction
        self.callbacks = callbacks
        self.random_state = random_state
        self.device = device
        self.verbose = verbose
        self._set_routed(kwargs)

    @estimator_call
    def fit(self, X, y=None) -> SPTPretrainer:
        """Self-pretrain on ``X``; ``y`` is ignored."""
        X, _ = self._fit_input(X)
        epochs = self.pretrain_epochs
        trainer = self._trainer()
        seed = self._resume_seed(self._seed(), X)
        with self._seeded(seed):
            self.pretrain_epochs_ = trainer.epochs(epochs, len(X), seed)
            net = self._pretrain(trainer, self._prepare(X), self.pretrain_epochs_, seed,
                                 self.callbacks)
        return self._fitted(net)

    def _restored_net(self, trainer):
        return self._pretrain_net(trainer, 0, 0, 0, None, None)

    @property
    def max_epochs_(self) -> int:
        """Deprecated alias of ``pretrain_epochs_`` (the pretraining epochs)."""
        return self.pretrain_epochs_

    transform = EmbeddingTransformerMixin.transform  # documented here, not inherited

    @estimator_call
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
