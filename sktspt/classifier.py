"""SPTClassifier: self-pretraining, then fine-tuning with labels."""

from __future__ import annotations

import inspect
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
from ._params import CLASSIFIER, check_value, declare_params
from ._params import show as _show
from .augment import resolve_mixup, roll_series
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


@declare_params(CLASSIFIER)
class SPTClassifier(ClassifierMixin, EmbeddingTransformerMixin, SPTBase):
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

    _NET_ROLE = "finetune"

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
        if self.warm_start and hasattr(self, "net_"):
            return self._continue(X, y, sample_weight)
        if self.pretrainer is not None:
            X = self._adopt_pretrainer(X)
        else:
            X, _ = self._fit_input(X)
        y_enc = self._fit_labels(y, len(X))
        weights = self._sample_weights(sample_weight, y_enc)
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
                self.pretrain_epochs_ = self._resolve_epochs(
                    self.pretrain_epochs, len(pre_X), seed, steps=self._auto_budget("pretrain"))
                pre_net = self._pretrain(pre_X, self.pretrain_epochs_, seed,
                                         self.pretrain_callbacks)
                encoder_state = pre_net.module_.encoder.state_dict()
                self.pretrain_history_ = pre_net.history
            self.max_epochs_ = self._resolve_epochs(self.max_epochs, len(Xp), seed, y_enc,
                                                    steps=self._auto_budget("finetune"))
            self.augment_ = self._choose_augment(Xp, y_enc, seed)
            net = self._build_net(
                "finetune", len(Xp), seed, self.max_epochs_, y_enc, phase="finetune",
                weighted=weights is not None,
            )
            self._start_finetuning(net, encoder_state, Xp)
            if self.max_epochs_ > 0:
                self._train(net, _weighted(Xp, weights), y_enc, self.max_epochs_, "fine-tuning")
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
        nothing from torch's streams, so without rolls the fit equals ``augment=False``'s.
        The screen alone, not a held-out comparison of two short fine-tunings: the
        comparison's third of the data was too small to tell the two apart and sometimes
        overruled a right screen (``docs/tuning.md``, rounds 37-38).
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

    def _set_classes(self, classes: np.ndarray) -> None:
        """``classes_`` (as fit stores them: distinct and sorted) of a restored classifier."""
        self._label_encoder = LabelEncoder()
        self._label_encoder.classes_ = self.classes_ = classes

    def _restored_epochs(self) -> int:
        epochs = getattr(self, "max_epochs_", self.max_epochs)
        return epochs if isinstance(epochs, int) else 0

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
        check_value("class_weight", class_weight)  # also on a warm start
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
        self._check_params()
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
        self, n: int, y_enc: np.ndarray | None, seed: int, epochs: int, phase: str | None,
        weighted: bool,
    ) -> AugmentedNetClassifier:
        """The fine-tuning net: the classification model, its loss and augmentation."""
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
            **self._net_kwargs(n, epochs, seed, y_enc, self.callbacks, phase),
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
        chose rolls) has learned that the start point carries no class; averaging its
        predictions over :data:`ROLL_TURNS` turns gained OSULeaf 3 points in
        training-split CV on top of the rolls (``docs/tuning.md``, round 25).
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
