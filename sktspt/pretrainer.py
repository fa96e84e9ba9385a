"""SPTPretrainer: self-pretraining of a time-series transformer, as a transformer."""

from __future__ import annotations

import numpy as np
import torch
from sklearn.utils.validation import check_is_fitted

from ._base import EmbeddingTransformerMixin, SPTBase, with_threads
from .data import check_panel
from .training import LeJEPANet

__all__ = ["SPTPretrainer"]


class SPTPretrainer(EmbeddingTransformerMixin, SPTBase):
    """Self-pretrain a transformer encoder on unlabelled time series.

    ``fit`` hides part of each series (see ``masking``) and trains the encoder to
    reconstruct the hidden values; the loss counts only values that were hidden and
    observed. ``transform`` returns pooled embeddings. A fitted pretrainer can seed an
    :class:`~sktspt.SPTClassifier` through its ``pretrainer`` parameter.
    ``pretrain_objective`` offers two alternatives to plain reconstruction: LeJEPA on
    random views, and reconstruction regularised by SIGReg.

    Parameters
    ----------
    depth : int, default=3
        Number of transformer layers.
    d_model : int, default=64
        Width of the token representations.
    n_heads : int, default=4
        Attention heads; must divide ``d_model``.
    dim_feedforward : int, default=128
        Hidden width of each layer's feed-forward block.
    dropout : float, default=0.1
        Dropout in attention and feed-forward blocks.
    patch_size : int or "auto", default="auto"
        Time steps per token (all channels of a patch form one token). ``"auto"``
        keeps about 32 tokens per series, so long series stay cheap.
    tokenizer : {"conv", "patch"}, default="conv"
        ``"conv"``: parallel 1D convolutions (kernels 3, 9, 19, 39) then a strided
        convolution per patch; ``"patch"``: one linear map per patch
        (:mod:`sktspt.nn.tokenizers`). The convolutional stem won training-split CV by
        about 4 points, most on OSULeaf (``docs/tuning.md``).
    positional : {"sinusoidal", "learned", "rotary", "alibi", "none"}, default="sinusoidal"
        Positional encoding. ``rotary`` and ``alibi`` are relative (locality priors).
    architecture : {"transformer", "crate", "attention_only"}, default="transformer"
        Encoder layer (:mod:`sktspt.nn.whitebox`). ``"crate"``: white-box CRATE layers
        (attention with one shared q/k/v projection, then a sparse-coding ISTA step
        with a ``d_model x d_model`` dictionary); ``"attention_only"``: the same
        attention followed by a learned soft threshold, no dictionary and no MLP, about
        a third fewer weights than CRATE. Both ignore ``dim_feedforward``.
    normalize : {"auto", "global", "instance"} or None, default="auto"
        ``"global"``: per-channel statistics of the training data (part of the fitted
        state); ``"instance"``: each series standardised on its own; ``"auto"``:
        ``"instance"`` when the training series' scales span more than three orders of
        magnitude, else ``"global"`` (:func:`sktspt.data.resolve_normalization`).
    masking : {"random", "span", "block", "channel", "mixed"}, default="span"
        Masking objective, see :mod:`sktspt.masking`.
    mask_ratio : float, default=0.3
        Fraction of values hidden.
    mean_span : float or None, default=None
        Mean length of hidden runs for ``span`` and ``block``; None uses
        ``max(3, patch_size)``.
    pretrain_objective : {"masked", "lejepa", "masked+sigreg"}, default="masked"
        ``"masked"``: reconstruct hidden values. ``"lejepa"``: LeJEPA (Balestriero &
        LeCun 2025) on 2 global (60-100 % crops) and 2 local (20-50 %) random views per
        series, with a projector MLP: ``(1 - sigreg_lambda) * L_pred + sigreg_lambda *
        SIGReg`` (``masking`` settings unused; SIGReg wants batches of 32 or more).
        ``"masked+sigreg"``: reconstruction plus ``sigreg_lambda * SIGReg`` on the pooled
        embeddings, which keeps them spread out (see :mod:`sktspt.sigreg`).
    sigreg_lambda : float, default=0.05
        Weight of SIGReg in ``[0, 1]`` (unused with ``"masked"``).
    max_epochs : int or "auto", default="auto"
        Pretraining epochs; ``"auto"``: the epochs that give about ``auto_steps``
        optimizer steps (``max_epochs_`` after fit).
    auto_steps : int, default=1000
        Optimizer steps that ``"auto"`` epochs aim at.
    lr : float, default=1e-3
        Peak learning rate of AdamW (linear warm-up, cosine decay per batch).
    weight_decay : float, default=0.01
        AdamW weight decay.
    batch_size : int, default=16
        Series per batch.
    augment : bool, default=False
        Pretrain on randomly windowed, scaled and jittered variants of each batch
        (:class:`~sktspt.augment.Augmentation`).
    validation_fraction : float, default=0.0
        Part of the training data held out to pick the best epoch (by reconstruction
        loss on fixed masks). 0 trains on all of it and keeps the last epoch.
    patience : int or None, default=None
        Stop after this many epochs without improvement; None runs all epochs.
    callbacks : list or None, default=None
        Extra skorch callbacks (instances or ``(name, callback)`` tuples).
    device : str, default="cpu"
        Torch device; ``"auto"`` picks CUDA when available.
    random_state : int, RandomState or None, default=None
        Seeds weights, masks, shuffling and the validation split.
    verbose : int, default=0
        0: silent. 1: a progress bar ("pretraining") with the losses and the time left.
        2: skorch's table of every epoch, headed by the phase.
    checkpoint_dir : str, path or None, default=None
        Folder for resumable checkpoints (one per epoch). When set, a ``fit`` that
        was interrupted (Ctrl-C, a killed process) resumes from its last checkpoint when
        called again with the same data and parameters, losing at most the epoch in
        progress; a finished fit is reloaded, not retrained. Use one folder per fit: a
        folder written by a different fit raises ``ValueError``. None writes nothing.
    n_threads : int or None, default=None
        CPU threads torch uses inside ``fit``, ``transform`` and ``reconstruct``
        (``torch.set_num_threads``; the previous count is restored afterwards). None
        leaves torch's setting alone, which by default is one thread per core: on a
        machine busy with other work, ``n_threads=1`` is often many times faster.
    mask_channels : list of int or None, default=None
        The only channels masking may hide (indices into ``n_channels``); the others
        (covariates that are always known) stay visible as context and are never
        reconstructed. None masks all channels. Unused by ``"lejepa"``.
    pretrain_crops : float or None, default=None
        When set, pretraining sees each training series cut to a random window of
        between this fraction and all of its length, moved to the start (the rest is
        padding), so that the encoder also learns from series shorter than the training
        length; useful when shorter series are to be predicted (fit on series of unequal
        length, or NaN-padded, to predict other lengths). Unused by ``"lejepa"``, whose
        views are crops already.
    attention : {"dense", "lighthouse"}, default="dense"
        Attention in training. ``"lighthouse"``: Lighthouse hierarchical sparse attention
        (:mod:`sktspt.nn.lighthouse`) in every layer but the first and last (needs
        ``depth >= 3``), for the first ``1 - lighthouse_recovery`` of the
        optimizer steps, then dense attention on the same weights. Validation, prediction
        and ``transform`` are always dense, so the fitted model is an ordinary one. It
        pays only on long inputs (thousands of tokens, see ``docs/lighthouse.md``).
    lighthouse_levels : int, default=3
        Levels of the Lighthouse pyramid (level ``l`` pools ``lighthouse_pool**l``
        tokens); 1 is exactly dense attention.
    lighthouse_pool : int, default=4
        Pooling factor between levels.
    lighthouse_topk : int, default=8
        Windows refined per tile and level (half by query norm, half by key norm); the
        other windows stay in as coarse summaries.
    lighthouse_recovery : float, default=0.1
        Fraction in ``[0, 1]`` of the optimizer steps, at the end, trained with dense
        attention (the recovery phase).

    precision : {"auto", "float32", "bfloat16", "float16"}, default="auto"
        Numeric precision of training and prediction (:mod:`sktspt.precision`): autocast
        of the network to bfloat16 or float16 (float16 with loss scaling, CUDA only),
        losses and SIGReg in float32, weights always float32; on CUDA, TF32 matmuls
        unless ``"float32"``. ``"auto"``: bfloat16 on a CUDA GPU that supports it,
        float32 elsewhere (on CPU). Can be changed after fitting: prediction uses the
        current value, and falls back to float32 where the device cannot run it.

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
    n_channels_, n_timepoints_, patch_size_ : int
        Shape facts fixed at fit.

    Examples
    --------
    >>> import numpy as np
    >>> from sktspt import SPTPretrainer
    >>> X = np.random.default_rng(0).normal(size=(20, 2, 48))
    >>> pre = SPTPretrainer(depth=1, d_model=16, max_epochs=2, random_state=0).fit(X)
    >>> pre.transform(X).shape
    (20, 16)
    """

    def __init__(
        self,
        depth=3,
        d_model=64,
        n_heads=4,
        dim_feedforward=128,
        dropout=0.1,
        patch_size="auto",
        tokenizer="conv",
        positional="sinusoidal",
        architecture="transformer",
        normalize="auto",
        masking="span",
        mask_ratio=0.3,
        mean_span=None,
        pretrain_objective="masked",
        sigreg_lambda=0.05,
        max_epochs="auto",
        auto_steps=1000,
        lr=1e-3,
        weight_decay=0.01,
        batch_size=16,
        augment=False,
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
    ):
        self.depth = depth
        self.d_model = d_model
        self.n_heads = n_heads
        self.dim_feedforward = dim_feedforward
        self.dropout = dropout
        self.patch_size = patch_size
        self.tokenizer = tokenizer
        self.positional = positional
        self.architecture = architecture
        self.normalize = normalize
        self.masking = masking
        self.mask_ratio = mask_ratio
        self.mean_span = mean_span
        self.pretrain_objective = pretrain_objective
        self.sigreg_lambda = sigreg_lambda
        self.max_epochs = max_epochs
        self.auto_steps = auto_steps
        self.lr = lr
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
    def fit(self, X, y=None) -> SPTPretrainer:
        """Self-pretrain on ``X``; ``y`` is ignored."""
        X, _ = self._fit_input(X)
        seed = self._resume_seed(self._seed(), X)
        with self._seeded(seed):
            self.max_epochs_ = self._resolve_epochs(self.max_epochs, len(X), seed)
            self.net_ = self._pretrain(self._prepare(X), self.max_epochs_, seed, self.callbacks)
        self.encoder_ = self.net_.module_.encoder
        self.encoder_kwargs_ = self._encoder_kwargs()
        self.history_ = self.net_.history
        return self

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
        module = self.net_.module_
        module.eval()
        with torch.no_grad():
            h = None if hidden is None else torch.as_tensor(hidden, dtype=torch.bool)
            if h is not None:
                h = h[..., : Xp.shape[-1]]
                h = torch.nn.functional.pad(h, (0, Xp.shape[-1] - h.shape[-1]))
            xb = torch.from_numpy(Xp).to(self._device)
            out = module(xb, None if h is None else h.to(self._device))
        length = check_panel(X)[1].n_timepoints
        out = out[..., :length].cpu().numpy()
        # Time points after the panel's last observed value were dropped as padding.
        pad = length - out.shape[-1]
        return np.pad(out, ((0, 0), (0, 0), (0, pad)), constant_values=np.nan) if pad else out
