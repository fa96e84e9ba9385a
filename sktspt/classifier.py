"""SPTClassifier: self-pretraining, then fine-tuning with labels."""

from __future__ import annotations

import inspect
import math
import re
import warnings

import numpy as np
import torch
from sklearn.base import ClassifierMixin
from sklearn.exceptions import NotFittedError
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.validation import _check_sample_weight, check_is_fitted

from ._base import (
    INFERENCE_BATCH,
    EmbeddingTransformerMixin,
    SPTBase,
    _architecture,
    with_threads,
)
from ._concurrency import settle_eval
from ._params import (
    EPOCHS,
    Integer,
    Number,
    Options,
    ParameterHints,
    boolean,
    callbacks_or_none,
    class_weight_or_none,
    document_parameters,
    estimator_or_none,
)
from ._params import show as _show
from .augment import MIXUP_KINDS, resolve_mixup, roll_series
from .data import check_finite_output, check_labels, check_panel
from .invariance import alignment_gain
from .leap import check_exit_params, early_exit_infer
from .nn.ensemble import mean_member_proba
from .nn.heads import ClassificationModel
from .nn.panel_fit import fit_to_panel
from .precision import autocast_dtype
from .training import AugmentedNetClassifier, layer_decay_groups

__all__ = ["SPTClassifier"]

#: Turns of each series averaged at prediction by a network trained with rolls.
ROLL_TURNS = 8
#: The layer index in an encoder's state-dict key (``layers.2.attn.qkv.weight``, or
#: ``1.layers.2...`` for an ensemble member's encoder).
_LAYER_KEY = re.compile(r"(?:^|\.)layers\.(\d+)\.")

#: Parameters that a fitted ``pretrainer`` fixes (its architecture and input handling).
_PRETRAINER_PARAMS = (
    "depth", "d_model", "n_heads", "dim_feedforward", "patch_size", "tokenizer", "differences",
    "positional", "architecture", "normalize",
)


def _pad_to(X: np.ndarray, length: int) -> np.ndarray:
    return np.pad(X, ((0, 0), (0, 0), (0, length - X.shape[2])), constant_values=np.nan)


@document_parameters()
class SPTClassifier(ParameterHints, ClassifierMixin, EmbeddingTransformerMixin, SPTBase):
    """Time-series transformer classifier with self-pretraining (SPT).

    ``fit(X, y)`` first trains the network to reconstruct masked values of the
    training series themselves (``pretrain_epochs``; labels unused), then fine-tunes
    all weights with a fresh classification head on the labels (``max_epochs``).
    ``pretrain_epochs=0`` trains the identical network from scratch: the control to
    compare with (at equal optimizer steps: ``auto_steps`` doubled, or ``max_epochs``
    set to the sum of both phases).

    Pretraining happens inside ``fit``, so in cross-validation each fold pretrains on
    its own training part only. By default all training data is used and the last
    epoch kept; with ``validation_fraction`` the best epoch is chosen on a split of the
    training data, never on test data.

    <parameters>

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
    mixup_ : float
        The mixup ``alpha`` fine-tuning used (what ``mixup="auto"`` resolved to).
    mixup_kind_ : str
        How fine-tuning mixed series, ``"blend"`` or ``"cutmix"`` (what
        ``mixup_kind="auto"`` resolved to).
    augment_ : bool or str
        The augmentation fine-tuning used (what ``augment="auto"`` chose: ``"roll"`` or
        False).
    augment_evidence_ : dict or None
        For ``augment="auto"``: the ``alignment_gain`` of the screen that decided
        (None otherwise).
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

    _parameter_constraints: dict = {
        **SPTBase._parameter_constraints,
        "max_epochs": EPOCHS,
        "pretrain_share": Number(lambda v: 0 < v < 1, "a number in (0, 1)"),
        "label_smoothing": Number(lambda v: 0 <= v <= 1, "a number in [0, 1]"),
        "layer_decay": Number(lambda v: 0 < v <= 1, "a number in (0, 1]"),
        "reinit_layers": Integer(0),
        "mixup": Number(lambda v: 0 <= v < math.inf, '"auto" or a non-negative number',
                        auto=True),
        "mixup_kind": Options(MIXUP_KINDS + ("auto",)),
        "pretrainer": estimator_or_none,
        "warm_start": boolean,
        "n_estimators": Integer(1),
        "class_weight": class_weight_or_none,
        "pretrain_callbacks": callbacks_or_none,
        "exit_loss_weight": Number(lambda v: 0 <= v < math.inf,
                                   "a non-negative number (0 turns the LEAP loss off)"),
        "early_exit": Number(lambda v: -1 <= v <= 1,
                             "None or a cosine threshold in [-1, 1] (0.95 in the LEAP paper)",
                             none=True),
        "min_exit_layer": Integer(1),
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
        max_epochs="auto",
        auto_steps=1000,
        pretrain_share=0.25,
        lr=1e-3,
        warmup="auto",
        weight_decay=0.01,
        batch_size=16,
        label_smoothing=0.1,
        layer_decay=1.0,
        reinit_layers=0,
        augment="auto",
        mixup="auto",
        mixup_kind="auto",
        validation_fraction=0.0,
        patience=None,
        pretrainer=None,
        warm_start=False,
        callbacks=None,
        device="cpu",
        random_state=None,
        verbose=0,
        checkpoint_dir=None,
        n_estimators=1,
        n_threads=None,
        class_weight=None,
        mask_channels=None,
        pretrain_crops=None,
        pretrain_callbacks=None,
        exit_loss_weight=0.0,
        early_exit=None,
        min_exit_layer=2,
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
        self.pretrain_share = pretrain_share
        self.lr = lr
        self.warmup = warmup
        self.weight_decay = weight_decay
        self.batch_size = batch_size
        self.label_smoothing = label_smoothing
        self.layer_decay = layer_decay
        self.reinit_layers = reinit_layers
        self.augment = augment
        self.mixup = mixup
        self.mixup_kind = mixup_kind
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
        self.n_threads = n_threads
        self.class_weight = class_weight
        self.mask_channels = mask_channels
        self.pretrain_crops = pretrain_crops
        self.pretrain_callbacks = pretrain_callbacks
        self.exit_loss_weight = exit_loss_weight
        self.early_exit = early_exit
        self.min_exit_layer = min_exit_layer
        self.attention = attention
        self.lighthouse_levels = lighthouse_levels
        self.lighthouse_pool = lighthouse_pool
        self.lighthouse_topk = lighthouse_topk
        self.lighthouse_recovery = lighthouse_recovery
        self.precision = precision

    # --- fit --------------------------------------------------------------------------
    @with_threads
    def fit(self, X, y, X_unlabeled=None, sample_weight=None) -> SPTClassifier:
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
        sample_weight : array-like of shape (n_instances,), optional
            Non-negative weights of the series in the fine-tuning loss (times
            ``class_weight``); each batch's loss is the weighted mean of its series'
            losses, with the weights scaled to mean 1 over the training set.
        """
        self._check_params()  # every parameter, also for a warm start or a given pretrainer
        if self.warm_start and hasattr(self, "net_"):
            return self._continue(X, y, sample_weight)
        if self.pretrainer is not None:
            X = self._adopt_pretrainer(X)
        else:
            X, _ = self._fit_input(X)
        y_enc = self._fit_labels(y, len(X))
        weights = self._sample_weights(sample_weight, y_enc)
        trainer = self._trainer()
        seed = self._resume_seed(self._seed(), X, y_enc, X_unlabeled, weights)
        Xp = self._prepare(X)
        self.mixup_, self.mixup_kind_ = resolve_mixup(self.mixup, Xp, self.mixup_kind)
        self.augment_ = False if self.augment == "auto" else self.augment  # until chosen
        self.augment_evidence_ = None
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
                self.pretrain_epochs_ = trainer.epochs(
                    self.pretrain_epochs, len(pre_X), seed, steps=self._auto_budget("pretrain"))
                pre_net = self._pretrain(trainer, pre_X, self.pretrain_epochs_, seed,
                                         self.pretrain_callbacks)
                encoder_state = pre_net.module_.encoder.state_dict()
                self.pretrain_history_ = pre_net.history
            self.max_epochs_ = trainer.epochs(self.max_epochs, len(Xp), seed, y_enc,
                                              steps=self._auto_budget("finetune"))
            self.augment_ = self._choose_augment(Xp, y_enc, seed)
            net = self._finetune_net(
                trainer, len(Xp), y_enc, seed, self.max_epochs_, "finetune",
                weighted=weights is not None,
            )
            self._start_finetuning(net, encoder_state, Xp)
            if self.max_epochs_ > 0:
                trainer.train(net, _weighted(Xp, weights), y_enc, self.max_epochs_, "fine-tuning")
        self.net_ = net
        settle_eval(net.module_)
        self.encoder_ = self.net_.module_.encoder
        self.history_ = self.net_.history
        return self

    def _auto_budget(self, phase: str) -> int:
        """The optimizer steps an ``"auto"`` phase aims at.

        Where both phases are ``"auto"`` and this fit pretrains, they split
        ``2 * auto_steps`` by ``pretrain_share``: equal total steps to the from-scratch
        control (``pretrain_epochs=0``, ``auto_steps`` doubled) whatever the split.
        """
        both = self.pretrain_epochs == "auto" and self.max_epochs == "auto"
        if not both or self.pretrainer is not None:
            return self.auto_steps
        share = self.pretrain_share if phase == "pretrain" else 1 - self.pretrain_share
        return max(1, round(2 * self.auto_steps * share))

    def _n_members(self) -> int:
        return int(self.n_estimators)

    def _choose_augment(self, Xp: np.ndarray, y_enc: np.ndarray, seed: int) -> bool | str:
        """``augment`` for fine-tuning; ``"auto"`` is decided on the training data.

        Rolls where aligning series circularly helps a 1-NN on the training series
        (:func:`~sktspt.invariance.alignment_gain` above 0), else none; the screen draws
        nothing from torch's streams, so without rolls the fit equals ``augment=False``'s
        (why a screen decides: ``docs/tuning.md``).
        """
        if self.augment != "auto":
            return self.augment
        gain = alignment_gain(Xp, y_enc, seed)
        self.augment_evidence_ = {"alignment_gain": gain}
        return "roll" if gain > 0 else False

    def _start_finetuning(self, net, encoder_state: dict | None, Xp: np.ndarray) -> None:
        """Initialise ``net`` from the pretrained encoder, or (from scratch) fit its input
        scales on ``Xp``."""
        net.initialize()
        if encoder_state is not None:
            self._load_pretrained(net.module_.encoder, encoder_state)
        else:
            fit_to_panel(net.module_, Xp)

    def _load_pretrained(self, encoder: torch.nn.Module, state: dict) -> None:
        """Load the pretrained ``state`` except the top ``reinit_layers`` layers.

        Those keep the fresh weights the net was initialised with (in every member's
        encoder, for an ensemble).
        """
        index = {k: int(m.group(1)) for k in state if (m := _LAYER_KEY.search(k))}
        depth = 1 + max(index.values(), default=-1)
        top = range(depth - int(self.reinit_layers), depth)
        fresh = {k: v.clone() for k, v in encoder.state_dict().items() if index.get(k) in top}
        encoder.load_state_dict({**state, **fresh})

    def _restore(self, spec, encoder_kwargs: dict, *, classes: np.ndarray, check: bool = True):
        """As :meth:`SPTBase._restore`, with ``classes_`` as fit stores them (distinct, sorted)."""
        self._label_encoder = LabelEncoder()
        self._label_encoder.classes_ = self.classes_ = classes
        return super()._restore(spec, encoder_kwargs, check=check)

    def _restored_net(self, trainer):
        # The epochs a warm start trains.
        epochs = getattr(self, "max_epochs_", self.max_epochs)
        epochs = epochs if isinstance(epochs, int) else 0
        return self._finetune_net(trainer, 0, None, 0, epochs, None, weighted=False)

    def _fit_labels(self, y, n: int) -> np.ndarray:
        y = check_labels(y, n)
        self._label_encoder = LabelEncoder().fit(y)
        self.classes_ = self._label_encoder.classes_
        if len(self.classes_) < 2:
            raise ValueError(
                "SPTClassifier needs at least 2 classes in y; got 1 class "
                f"({_show(self.classes_[0])})."
            )
        return self._label_encoder.transform(y).astype(np.int64)

    def _sample_weights(self, sample_weight, y_enc: np.ndarray) -> np.ndarray | None:
        """Per-series loss weights (``sample_weight`` times ``class_weight``), mean 1; or None."""
        class_weight = self.class_weight
        if class_weight is None and sample_weight is None:
            return None
        n = len(y_enc)
        w = _check_sample_weight(sample_weight, np.empty((n, 1)), dtype=np.float64,
                                 ensure_non_negative=True)
        w = np.array(w, dtype=np.float64)  # never modify the caller's array
        if class_weight is not None:
            y = self.classes_[y_enc]
            w *= compute_class_weight(class_weight, classes=self.classes_, y=y)[y_enc]
        if not np.isfinite(w).all() or w.sum() <= 0:
            raise ValueError(
                "The sample weights (times class_weight) must be finite with a positive sum."
            )
        return (w / w.mean()).astype(np.float32)

    def _adopt_pretrainer(self, X) -> np.ndarray:
        """Take shape state, normalisation and architecture from a fitted pretrainer."""
        pre = self.pretrainer
        try:
            check_is_fitted(pre, "encoder_")
        except NotFittedError as exc:
            raise NotFittedError(
                f"The pretrainer given to SPTClassifier ({type(pre).__name__}) is not fitted. "
                "If it was fitted before, clone() (inside cross_val_score, GridSearchCV, "
                "Pipeline or sktime) reset it: wrap it in sklearn.frozen.FrozenEstimator "
                "(pretrainer=FrozenEstimator(pretrainer)) so that it stays fitted."
            ) from exc
        self._warn_overridden(pre)
        self.input_spec_ = pre.input_spec_
        self._architecture = _architecture(pre.encoder_kwargs_)
        X, info = check_panel(X)
        if info.n_channels != self.n_channels_:
            raise ValueError(
                f"X has {info.n_channels} channels, but the pretrainer was fitted on "
                f"{self.n_channels_} channels."
            )
        if info.ndim == 2:
            self.n_features_in_ = info.n_timepoints
        return X

    def _warn_overridden(self, pre) -> None:
        """Warn when an architecture parameter set here differs from the pretrainer's."""
        from sklearn.frozen import FrozenEstimator

        inner = pre.estimator if isinstance(pre, FrozenEstimator) else pre
        theirs = inner.get_params(deep=False) if hasattr(inner, "get_params") else {}
        defaults = {
            k: p.default for k, p in inspect.signature(type(self).__init__).parameters.items()
        }
        clashes = [
            name for name in _PRETRAINER_PARAMS
            if name in theirs and getattr(self, name) != defaults.get(name)
            and getattr(self, name) != theirs[name]
        ]
        if clashes:
            mine = ", ".join(f"{k}={_show(getattr(self, k))}" for k in clashes)
            pre_values = ", ".join(f"{k}={_show(theirs[k])}" for k in clashes)
            warnings.warn(
                f"SPTClassifier({mine}) is ignored: the fitted pretrainer fixes the network "
                f"({pre_values}), and its values are used (see encoder_kwargs_). Leave these "
                "parameters at their defaults or set them to the pretrainer's values.",
                UserWarning,
                stacklevel=5,
            )

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
        self, trainer, n: int, y_enc: np.ndarray | None, seed: int, epochs: int,
        phase: str | None, weighted: bool,
    ) -> AugmentedNetClassifier:
        """The fine-tuning net, not initialised: the classification model, its loss and
        augmentation (arguments as for :meth:`SPTBase._pretrain_net`)."""
        ensemble = self._n_members() > 1
        return AugmentedNetClassifier(
            **self._module(ClassificationModel),
            predict_nonlinearity=mean_member_proba if ensemble else "auto",
            augmentation=self._augmentation(),
            augment_seed=seed + 2,  # pretraining's mask streams use seed and seed + 1
            exit_loss_weight=float(self.exit_loss_weight),
            mixup_alpha=self._mixup_alpha(),
            mixup_kind=self._mixup_kind(),
            module__n_classes=len(self.classes_),
            criterion=torch.nn.CrossEntropyLoss,
            criterion__label_smoothing=float(self.label_smoothing),
            # Per-series losses, weighted in AugmentedNetClassifier.random_step.
            **({"criterion__reduction": "none"} if weighted else {}),
            **trainer.net_kwargs(n, epochs, seed, y_enc, self.callbacks, phase),
            **self._layer_decay(),
            **{f"module__{k}": v for k, v in self.encoder_kwargs_.items()},
        )

    def _mixup_alpha(self) -> float:
        """``mixup`` as fit resolved it (``mixup_``), or as set where fit did not record it.

        A classifier pickled before ``mixup_`` existed has only the number in ``mixup``;
        :func:`sktspt.compress.fuse_layers` rebuilds such a one's net.
        """
        return float(getattr(self, "mixup_", self.mixup))

    def _mixup_kind(self) -> str:
        """``mixup_kind`` as fit resolved it (``mixup_kind_``), or as set (older pickles)."""
        return getattr(self, "mixup_kind_", getattr(self, "mixup_kind", "blend"))

    def _layer_decay(self) -> dict:
        """``optimizer__param_groups`` for ``layer_decay`` below 1, else nothing."""
        groups = layer_decay_groups(self.lr, float(self.layer_decay), int(self.depth))
        return {"optimizer__param_groups": groups} if groups else {}

    def _continue(self, X, y, sample_weight=None) -> SPTClassifier:
        """Warm start: more fine-tuning epochs on the current weights."""
        Xp = self._input(X)
        y = check_labels(y, len(Xp))
        unseen = np.setdiff1d(np.unique(y), self.classes_)
        if unseen.size:
            raise ValueError(f"y has classes not seen in the first fit: {unseen.tolist()}.")
        y_enc = self._label_encoder.transform(y).astype(np.int64)
        weights = self._sample_weights(sample_weight, y_enc)
        if weights is not None:
            self.net_.set_params(criterion__reduction="none")
        # The current precision (it may have changed since the net was built, or the model
        # may have been loaded on another device); raises where the device cannot train it.
        self.net_.precision = autocast_dtype(self.precision, self._device)
        with self._seeded(self._seed()):
            self.net_.partial_fit(_weighted(Xp, weights), y_enc)
        settle_eval(self.net_.module_)
        return self

    # --- predict ----------------------------------------------------------------------
    @with_threads
    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities ``(n_instances, n_classes)``, columns ordered as ``classes_``."""
        check_is_fitted(self, "net_")
        if self.early_exit is not None:
            proba = _probabilities(self._early_exit(X)[0])
        else:
            proba = self._turned_proba(self._input(X))
        return check_finite_output(proba / proba.sum(axis=1, keepdims=True), "predict_proba")

    def _turned_proba(self, Xp: np.ndarray) -> np.ndarray:
        """Probabilities of prepared ``Xp``, averaged over :meth:`_prediction_turns` turns."""
        module = self.net_.module_
        turns = self._prediction_turns()
        return np.mean([
            _probabilities(self._infer(module, module, _turned(Xp, k / turns)))
            for k in range(turns)
        ], axis=0)

    def _prediction_turns(self) -> int:
        """Evenly spaced circular turns of each series whose probabilities are averaged.

        A network trained on rolled series (``augment="roll"``, or ``"auto"`` where fit
        chose rolls) has learned that the start point carries no class, so its
        predictions are averaged over :data:`ROLL_TURNS` turns (``docs/tuning.md``).
        Every other network, and ``early_exit`` (which trades accuracy for speed), sees
        each series once, as given.
        """
        return ROLL_TURNS if self._augment() == "roll" else 1

    def predict(self, X) -> np.ndarray:
        """Predicted class labels."""
        check_is_fitted(self, "net_")
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    @with_threads
    def transform(self, X) -> np.ndarray:
        """Pooled embeddings ``(n_instances, d_model)`` from the fine-tuned encoder."""
        check_is_fitted(self, "net_")
        if self.early_exit is not None:
            return self._early_exit(X)[1].astype(np.float32)
        return self._embed(self.net_.module_, self._input(X))

    @with_threads
    def exit_layers(self, X) -> np.ndarray:
        """Layer (1-based) at which each series leaves the encoder under ``early_exit``.

        With ``early_exit=None`` every series runs all layers and this is the depth.
        ``predict``, ``predict_proba`` and ``transform`` use the same exits.
        """
        check_is_fitted(self, "net_")
        if self.early_exit is None:
            check_exit_params(self)
            return np.full(len(self._input(X)), len(self.encoder_.layers), dtype=np.int64)
        return self._early_exit(X)[2]

    def _early_exit(self, X):
        """Logits, pooled representations and exit layers with the LEAP exit rule."""
        check_exit_params(self)
        with self._autocast():
            return early_exit_infer(
                self, self.net_.module_, self._input(X), float(self.early_exit),
                int(self.min_exit_layer), INFERENCE_BATCH,
            )


def _probabilities(logits: np.ndarray) -> np.ndarray:
    """Softmax in float64, per row; an ensemble's logits ``(n, members, classes)`` average
    the members' probabilities."""
    proba = np.exp(logits - logits.max(axis=-1, keepdims=True))
    proba /= proba.sum(axis=-1, keepdims=True)
    return proba.mean(axis=1) if proba.ndim == 3 else proba


def _weighted(Xp: np.ndarray, weights: np.ndarray | None):
    """Training input for skorch: ``Xp``, or with per-series loss weights beside it."""
    return Xp if weights is None else {"X": Xp, "sample_weight": weights}


def _turned(X: np.ndarray, fraction: float) -> np.ndarray:
    """Network input ``X`` with every series turned by ``fraction`` of its valid length."""
    if fraction == 0:
        return X
    turned = roll_series(torch.from_numpy(X), torch.full((len(X),), fraction, dtype=torch.float64))
    return turned.numpy()
