"""SPTClassifier: self-pretraining, then fine-tuning with labels."""

from __future__ import annotations

import numpy as np
import torch
from sklearn.base import ClassifierMixin
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.validation import check_is_fitted

from ._base import EmbeddingTransformerMixin, SPTBase
from .data import check_labels, check_panel
from .nn.ensemble import mean_member_proba
from .nn.heads import ClassificationModel
from .training import AugmentedNetClassifier

__all__ = ["SPTClassifier"]

_SHAPE_STATE = (
    "n_channels_", "n_timepoints_", "equal_length_", "patch_size_", "max_tokens_", "normalizer_",
)


def _pad_to(X: np.ndarray, length: int) -> np.ndarray:
    return np.pad(X, ((0, 0), (0, 0), (0, length - X.shape[2])), constant_values=np.nan)


class SPTClassifier(ClassifierMixin, EmbeddingTransformerMixin, SPTBase):
    """Time-series transformer classifier with self-pretraining (SPT).

    ``fit(X, y)`` first trains the network to reconstruct masked values of the
    training series themselves (``pretrain_epochs``; labels unused), then fine-tunes
    all weights with a fresh classification head on the labels (``max_epochs``).
    ``pretrain_epochs=0`` trains the identical network from scratch: the control to
    compare with (at equal total epochs, set ``max_epochs`` to the sum).

    Pretraining happens inside ``fit``, so in cross-validation each fold pretrains on
    its own training part only. The best fine-tuning epoch is chosen on a validation
    split of the training data (``validation_fraction``), never on test data.

    Parameters
    ----------
    depth, d_model, n_heads, dim_feedforward, dropout, patch_size, positional, normalize
        Network and input handling, as in :class:`~sktspt.SPTPretrainer`.
    architecture : {"transformer", "crate", "attention_only"}, default="transformer"
        Encoder layer, as in :class:`~sktspt.SPTPretrainer`.
    masking, mask_ratio, mean_span
        The self-pretraining objective, as in :class:`~sktspt.SPTPretrainer`.
    pretrain_objective : {"masked", "lejepa", "masked+sigreg"}, default="masked"
        What pretraining optimises, as in :class:`~sktspt.SPTPretrainer`.
    sigreg_lambda : float, default=0.05
        Weight of SIGReg for ``"lejepa"`` and ``"masked+sigreg"``, in ``[0, 1]``.
    pretrain_epochs : int, default=100
        Self-pretraining epochs; 0 trains from scratch.
    max_epochs : int, default=100
        Fine-tuning epochs.
    lr, weight_decay, batch_size
        AdamW settings (warm-up then cosine decay per batch) for both phases.
    label_smoothing : float, default=0.1
        Label smoothing of the cross-entropy loss.
    augment : bool, default=False
        Train both phases on randomly windowed, scaled and jittered variants of each
        batch (:class:`~sktspt.augment.Augmentation`); prediction sees the series as given.
        LeJEPA pretraining keeps its own views. Off by default: it helped some datasets in
        training-split CV and cost ACSF1 25-35 points (``docs/tuning.md``).
    validation_fraction : float, default=0.2
        Part of the training data held out (stratified) to pick the best epoch in each
        phase; 0 keeps the last epoch.
    patience : int or None, default=None
        Early-stopping patience in epochs; None runs all epochs and restores the best.
    pretrainer : SPTPretrainer or None, default=None
        A fitted pretrainer (wrap it in ``sklearn.frozen.FrozenEstimator`` so that it
        survives ``clone``) whose encoder, normalisation and patching are used instead
        of pretraining in ``fit``. Pretraining outside cross-validation sees every fold.
    warm_start : bool, default=False
        When True and already fitted, ``fit`` continues fine-tuning the current weights
        for ``max_epochs`` more epochs, without pretraining again.
    callbacks : list or None, default=None
        Extra skorch callbacks for fine-tuning.
    device : str, default="cpu"
        Torch device; ``"auto"`` picks CUDA when available.
    random_state : int, RandomState or None, default=None
        Seeds weights, masks, shuffling and validation splits.
    verbose : int, default=0
        skorch's epoch log when > 0.
    checkpoint_dir : str, path or None, default=None
        Folder for resumable checkpoints (one per epoch, in each phase). When set, a ``fit`` that
        was interrupted (Ctrl-C, a killed process) resumes from its last checkpoint when
        called again with the same data and parameters, losing at most the epoch in
        progress; a finished fit is reloaded, not retrained. Use one folder per fit: a
        folder written by a different fit raises ``ValueError``. None writes nothing.
    n_estimators : int, default=1
        Networks trained together as one ensemble (:class:`~sktspt.nn.ensemble.Ensemble`):
        each starts from its own random weights and draws its own masks, all share the
        batches and one optimizer, and ``predict_proba`` averages their probabilities.
        ``transform`` then concatenates the members' embeddings, and ``encoder_`` is a
        ``ModuleList`` of the members' encoders.

    Attributes
    ----------
    classes_ : ndarray
        Class labels (any type).
    net_ : sktspt.training.AugmentedNetClassifier
        The fine-tuned skorch net.
    encoder_ : TransformerEncoder
        The fine-tuned encoder.
    history_ : skorch.History
        Fine-tuning history.
    pretrain_history_ : skorch.History or None
        Self-pretraining history (None without pretraining in ``fit``).
    encoder_kwargs_ : dict
        Architecture of ``encoder_``.
    normalizer_ : Normalizer
        Normalisation statistics fitted on the training data.

    Examples
    --------
    >>> from sktime.datasets import load_gunpoint
    >>> from sktspt import SPTClassifier
    >>> X, y = load_gunpoint(split="train", return_X_y=True, return_type="numpy3D")
    >>> clf = SPTClassifier(depth=1, d_model=16, pretrain_epochs=2, max_epochs=2,
    ...                     random_state=0).fit(X, y)
    >>> clf.predict(X[:3]).shape
    (3,)
    """

    def __init__(
        self,
        depth=3,
        d_model=64,
        n_heads=4,
        dim_feedforward=128,
        dropout=0.1,
        patch_size="auto",
        tokenizer="patch",
        positional="sinusoidal",
        architecture="transformer",
        normalize="auto",
        masking="span",
        mask_ratio=0.3,
        mean_span=None,
        pretrain_objective="masked",
        sigreg_lambda=0.05,
        pretrain_epochs=100,
        max_epochs=100,
        auto_steps=2000,
        lr=1e-3,
        weight_decay=0.01,
        batch_size=16,
        label_smoothing=0.1,
        augment=False,
        validation_fraction=0.2,
        patience=None,
        pretrainer=None,
        warm_start=False,
        callbacks=None,
        device="cpu",
        random_state=None,
        verbose=0,
        checkpoint_dir=None,
        n_estimators=1,
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
        self.pretrain_epochs = pretrain_epochs
        self.max_epochs = max_epochs
        self.auto_steps = auto_steps
        self.lr = lr
        self.weight_decay = weight_decay
        self.batch_size = batch_size
        self.label_smoothing = label_smoothing
        self.augment = augment
        self.validation_fraction = validation_fraction
        self.patience = patience
        self.pretrainer = pretrainer
        self.warm_start = warm_start
        self.callbacks = callbacks
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self.checkpoint_dir = checkpoint_dir
        self.n_estimators = n_estimators

    # --- fit --------------------------------------------------------------------------
    def fit(self, X, y, X_unlabeled=None) -> SPTClassifier:
        """Self-pretrain on ``X`` (and ``X_unlabeled``), then fine-tune on ``(X, y)``.

        Parameters
        ----------
        X : array-like of shape (n_instances, n_channels, n_timepoints) or (n, t)
            Training series; also a list of series of unequal length or an sktime panel.
            NaN marks missing values.
        y : array-like of shape (n_instances,)
            Class labels.
        X_unlabeled : array-like, optional
            Extra series used for pretraining only.
        """
        if self.warm_start and hasattr(self, "net_"):
            return self._continue(X, y)
        if self.pretrainer is not None:
            X = self._adopt_pretrainer(X)
        else:
            X, _ = self._fit_input(X)
            self.encoder_kwargs_ = self._encoder_kwargs()
        y_enc = self._fit_labels(y, len(X))
        seed = self._resume_seed(self._seed(), X, y_enc, X_unlabeled)
        Xp = self._prepare(X)
        with self._seeded(seed):
            encoder_state = None
            self.pretrain_history_ = None
            self.pretrain_epochs_ = 0
            if self.pretrainer is not None:
                encoder_state = self.pretrainer.encoder_.state_dict()
                if self._n_members() > 1:  # every member starts from the pretrained encoder
                    encoder_state = torch.nn.ModuleList(
                        [self.pretrainer.encoder_] * self._n_members()
                    ).state_dict()
            elif self.pretrain_epochs != 0:
                pre_X = Xp if X_unlabeled is None else self._with_unlabeled(Xp, X_unlabeled)
                self.pretrain_epochs_ = self._resolve_epochs(self.pretrain_epochs, len(pre_X), seed)
                pre_net = self._pretrain(pre_X, self.pretrain_epochs_, seed)
                encoder_state = pre_net.module_.encoder.state_dict()
                self.pretrain_history_ = pre_net.history
            self.max_epochs_ = self._resolve_epochs(self.max_epochs, len(Xp), seed, y_enc)
            net = self._finetune_net(len(Xp), y_enc, seed, self.max_epochs_)
            net.initialize()
            if encoder_state is not None:
                net.module_.encoder.load_state_dict(encoder_state)
            if self.max_epochs_ > 0:
                self._train(net, Xp, y_enc, self.max_epochs_, "fine-tuning")
        self.net_ = net
        self.encoder_ = self.net_.module_.encoder
        self.history_ = self.net_.history
        return self

    def _n_members(self) -> int:
        return int(self.n_estimators)

    def _check_params(self) -> None:
        super()._check_params()
        n = self.n_estimators
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
            raise ValueError(f"n_estimators must be a positive integer, got {n!r}.")
        if n > 1 and self.pretrain_objective != "masked":
            raise ValueError(
                "n_estimators > 1 trains members with masked reconstruction only; got "
                f"pretrain_objective={self.pretrain_objective!r}."
            )

    def _fit_labels(self, y, n: int) -> np.ndarray:
        y = check_labels(y, n)
        self._label_encoder = LabelEncoder().fit(y)
        self.classes_ = self._label_encoder.classes_
        if len(self.classes_) < 2:
            raise ValueError(
                f"SPTClassifier needs at least 2 classes in y; got 1 class ({self.classes_[0]!r})."
            )
        return self._label_encoder.transform(y).astype(np.int64)

    def _adopt_pretrainer(self, X) -> np.ndarray:
        """Take shape state, normalisation and architecture from a fitted pretrainer."""
        pre = self.pretrainer
        check_is_fitted(pre, "encoder_")
        self._check_params()
        for name in _SHAPE_STATE:
            setattr(self, name, getattr(pre, name))
        self.encoder_kwargs_ = dict(pre.encoder_kwargs_)
        X, info = check_panel(X)
        if info.n_channels != self.n_channels_:
            raise ValueError(
                f"X has {info.n_channels} channels, but the pretrainer was fitted on "
                f"{self.n_channels_} channels."
            )
        if info.ndim == 2:
            self.n_features_in_ = info.n_timepoints
        return X

    def _with_unlabeled(self, Xp: np.ndarray, X_unlabeled) -> np.ndarray:
        U, info = check_panel(X_unlabeled, name="X_unlabeled")
        if info.n_channels != self.n_channels_:
            raise ValueError(
                f"X_unlabeled has {info.n_channels} channels, but X has {self.n_channels_}."
            )
        U = self._prepare(U)
        t = max(Xp.shape[2], U.shape[2])
        return np.concatenate([_pad_to(Xp, t), _pad_to(U, t)])

    def _finetune_net(
        self, n: int, y_enc: np.ndarray, seed: int, epochs: int = 0,
        phase: str | None = "finetune",
    ) -> AugmentedNetClassifier:
        ensemble = self._n_members() > 1
        return AugmentedNetClassifier(
            **self._module(ClassificationModel),
            predict_nonlinearity=mean_member_proba if ensemble else "auto",
            augmentation=self._augmentation(),
            augment_seed=seed + 2,  # pretraining's mask streams use seed and seed + 1
            module__n_classes=len(self.classes_),
            criterion=torch.nn.CrossEntropyLoss,
            criterion__label_smoothing=float(self.label_smoothing),
            **self._net_kwargs(n, epochs, seed, y_enc, self.callbacks, phase),
            **{f"module__{k}": v for k, v in self.encoder_kwargs_.items()},
        )

    def _continue(self, X, y) -> SPTClassifier:
        """Warm start: more fine-tuning epochs on the current weights."""
        Xp = self._input(X)
        y = check_labels(y, len(Xp))
        unseen = np.setdiff1d(np.unique(y), self.classes_)
        if unseen.size:
            raise ValueError(f"y has classes not seen in the first fit: {unseen.tolist()}.")
        with self._seeded(self._seed()):
            self.net_.partial_fit(Xp, self._label_encoder.transform(y).astype(np.int64))
        return self

    # --- predict ----------------------------------------------------------------------
    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities ``(n_instances, n_classes)``, columns ordered as ``classes_``."""
        check_is_fitted(self, "net_")
        module = self.net_.module_
        logits = self._infer(module, module, self._input(X))
        # Softmax in float64, per row; an ensemble's logits (n, members, classes) average
        # the members' probabilities.
        proba = np.exp(logits - logits.max(axis=-1, keepdims=True))
        proba /= proba.sum(axis=-1, keepdims=True)
        if proba.ndim == 3:
            proba = proba.mean(axis=1)
        return proba / proba.sum(axis=1, keepdims=True)

    def predict(self, X) -> np.ndarray:
        """Predicted class labels."""
        check_is_fitted(self, "net_")
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def transform(self, X) -> np.ndarray:
        """Pooled embeddings ``(n_instances, d_model)`` from the fine-tuned encoder."""
        check_is_fitted(self, "net_")
        return self._embed(self.net_.module_, self._input(X))
