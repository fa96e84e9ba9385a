"""SPTClassifier: self-pretraining, then fine-tuning with labels."""

from __future__ import annotations

import numpy as np
import torch
from sklearn.base import ClassifierMixin
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.validation import check_is_fitted

from ._base import INFERENCE_BATCH, with_threads
from ._params import CLASSIFIER, check_value, declare_params
from ._params import show as _show
from ._supervised import SupervisedSPT
from .augment import roll_series
from .data import check_finite_output, check_labels
from .invariance import alignment_gain
from .leap import check_exit_params, early_exit_infer
from .nn.ensemble import mean_member_proba
from .nn.heads import ClassificationModel
from .training import AugmentedNetClassifier

__all__ = ["SPTClassifier"]

#: Turns of each series averaged at prediction by a network trained with rolls.
ROLL_TURNS = 8


@declare_params(CLASSIFIER)
class SPTClassifier(ClassifierMixin, SupervisedSPT):
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

    # --- fit (the two phases: SupervisedSPT.fit) ---------------------------------------
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

        Returns
        -------
        SPTClassifier
            The fitted classifier.
        """
        return super().fit(X, y, X_unlabeled=X_unlabeled, sample_weight=sample_weight)

    def _stratify(self, y_enc: np.ndarray) -> np.ndarray:
        """Validation splits are stratified by class."""
        return y_enc

    def _choose_augment(self, Xp: np.ndarray, y_enc: np.ndarray, seed: int) -> bool | str:
        """``augment`` for fine-tuning; ``"auto"`` is decided on the training data.

        Rolls where aligning series circularly helps a 1-NN on the training series
        (:func:`~sktspt.invariance.alignment_gain` above 0), else none; the screen draws
        nothing from torch's streams, so without rolls the fit equals ``augment=False``'s.
        The screen alone, not a held-out comparison of two short fine-tunings: the
        comparison's third of the data was too small to tell the two apart and sometimes
        overruled a right screen (``docs/tuning.md``, rounds 37-38).
        """
        self.augment_evidence_ = None
        if self.augment != "auto":
            return self.augment
        gain = alignment_gain(Xp, y_enc, seed)
        self.augment_evidence_ = {"alignment_gain": gain}
        return "roll" if gain > 0 else False

    def _restore(self, spec, encoder_kwargs: dict, *, classes: np.ndarray, check: bool = True):
        """As :meth:`SPTBase._restore`, with ``classes_`` as fit stores them (distinct, sorted)."""
        self._label_encoder = LabelEncoder()
        self._label_encoder.classes_ = self.classes_ = classes
        return super()._restore(spec, encoder_kwargs, check=check)

    def _fit_targets(self, y, n: int) -> np.ndarray:
        """Labels as class indices into ``classes_`` (at least 2 classes)."""
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
        check_value("class_weight", class_weight)  # also on a warm start
        factor = None if class_weight is None else compute_class_weight(
            class_weight, classes=self.classes_, y=self.classes_[y_enc])[y_enc]
        return super()._sample_weights(sample_weight, y_enc, factor,
                                       "The sample weights (times class_weight)")

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
            **self._fine_tuning_kwargs(seed),
            module__n_classes=len(self.classes_),
            criterion=torch.nn.CrossEntropyLoss,
            criterion__label_smoothing=float(self.label_smoothing),
            # Per-series losses, weighted in AugmentedNetClassifier.random_step.
            **({"criterion__reduction": "none"} if weighted else {}),
            **trainer.net_kwargs(n, epochs, seed, y_enc, self.callbacks, phase),
            **{f"module__{k}": v for k, v in self.encoder_kwargs_.items()},
        )

    def _continue_targets(self, y, n: int) -> np.ndarray:
        """Labels of a warm start, as indices into the first fit's ``classes_``."""
        y = check_labels(y, n)
        unseen = np.setdiff1d(np.unique(y), self.classes_)
        if unseen.size:
            raise ValueError(f"y has classes not seen in the first fit: {unseen.tolist()}.")
        return self._label_encoder.transform(y).astype(np.int64)

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


def _turned(X: np.ndarray, fraction: float) -> np.ndarray:
    """Network input ``X`` with every series turned by ``fraction`` of its valid length."""
    if fraction == 0:
        return X
    turned = roll_series(torch.from_numpy(X), torch.full((len(X),), fraction, dtype=torch.float64))
    return turned.numpy()
