"""SPTClassifier: self-pretraining, then fine-tuning with labels."""

from __future__ import annotations

import math

import numpy as np
import torch
from sklearn.base import ClassifierMixin
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.validation import check_is_fitted

from ._base import estimator_call
from ._param_docs import document_parameters
from ._params import Integer, Number, class_weight_or_none
from ._params import show as _show
from ._supervised import SupervisedSPT
from .augment import roll_series
from .data import check_finite_output, check_labels
from .inference import INFERENCE_BATCH
from .invariance import alignment_gain
from .leap import EarlyExit, check_exit_params, early_exit_infer
from .nn.heads import ClassificationModel
from .training import AugmentedNetClassifier
from .unlabeled import labeled_rows, split_unlabeled

__all__ = ["SPTClassifier"]


class CrossEntropyLoss(torch.nn.CrossEntropyLoss):
    """torch's cross-entropy, with this package's label smoothing: the classifier's
    ``criterion__`` settings, routed by skorch (``criterion__label_smoothing``).

    Parameters
    ----------
    label_smoothing : float
        Label smoothing of the cross-entropy loss, in ``[0, 1]``.
    """

    def __init__(self, *args, label_smoothing=0.1, **kwargs):
        super().__init__(*args, label_smoothing=label_smoothing, **kwargs)


#: Turns of each series averaged at prediction by a network trained with rolls.
ROLL_TURNS = 8
#: Most values (series x channels x steps, all turns together) that one prediction call
#: stacks (128 MB in float64), so that long many-channel panels stay bounded in memory.
TURN_BLOCK_VALUES = 2**24


@document_parameters()
class SPTClassifier(ClassifierMixin, SupervisedSPT):
    """Time-series transformer classifier, with optional self-pretraining (SPT).

    With ``pretrain_epochs="auto"`` (or a count), ``fit(X, y)`` first trains the network
    to reconstruct masked values of the training series themselves (labels unused), then
    fine-tunes all weights with a fresh classification head on the labels
    (``max_epochs``). The default, ``pretrain_epochs=0``, trains the identical network
    from scratch at the same optimizer steps: on the UCR archive self-pretraining on a
    task's own series did not pay (``docs/results-archive.md``). Either is the other's
    control. A ``pretrainer`` (an encoder pretrained elsewhere, such as the shipped
    ``"archive"`` one) starts fine-tuning from its weights.

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

    #: An ``"auto"`` phase counts an epoch of fewer batches as this many: on small sets the
    #: extra epochs of the whole budget cost time without accuracy (``docs/tuning-history.md``,
    #: round 42; the ``max_epochs`` doc says what it means).
    _auto_min_batches = 10
    #: An ``"auto"`` budget trains at least 50 epochs (at most 16,000 steps): +1.6 points on
    #: the archive's 16 large training splits (``docs/results-budget.md``).
    _auto_min_epochs = 50

    _parameter_constraints: dict = {
        **SupervisedSPT._parameter_constraints,
        "class_weight": class_weight_or_none,
        "early_exit": Number(lambda v: -1 <= v <= 1,
                             "None or a cosine threshold in [-1, 1] (0.95 in the LEAP paper)",
                             none=True),
        "criterion__label_smoothing": Number(lambda v: 0 <= v <= 1, "a number in [0, 1]"),
        "early_exit__loss_weight": Number(lambda v: 0 <= v < math.inf,
                                          "a non-negative number (0 turns the LEAP loss off)"),
        "early_exit__min_layer": Integer(1),
    }
    _routes = {**SupervisedSPT._routes, "criterion": CrossEntropyLoss, "early_exit": EarlyExit}

    def __init__(
        self, *, depth=3, d_model=64, tokenizer="rocket", architecture="transformer",
        attention="dense", normalize="auto", masking="span", pretrain_objective="masked",
        pretrain_epochs=0, max_epochs="auto", lr=1e-3, batch_size=16, augment="auto",
        mixup="auto", class_weight=None, early_exit=None, pretrainer=None,
        validation_fraction=0.0, callbacks=None, random_state=None, device="cpu", verbose=0,
        warm_start=False, **kwargs,
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
        self.max_epochs = max_epochs
        self.lr = lr
        self.batch_size = batch_size
        self.augment = augment
        self.mixup = mixup
        self.class_weight = class_weight
        self.early_exit = early_exit
        self.pretrainer = pretrainer
        self.validation_fraction = validation_fraction
        self.callbacks = callbacks
        self.random_state = random_state
        self.device = device
        self.verbose = verbose
        self.warm_start = warm_start
        self._set_routed(kwargs)

    # --- fit (the two phases: SupervisedSPT.fit) ---------------------------------------
    def fit(self, X, y, X_unlabeled=None, sample_weight=None) -> SPTClassifier:
        """Self-pretrain on ``X`` (and ``X_unlabeled``), then fine-tune on ``(X, y)``.

        Parameters
        ----------
        X : array-like of shape (n_instances, n_channels, n_timepoints) or (n, t)
            Training series; also a list of series of unequal length or an sktime panel.
            NaN marks missing values.
        y : array-like of shape (n_instances,)
            Class labels. In a numeric ``y``, -1 marks a series without a label, as in
            scikit-learn's semi-supervised estimators, whatever the other labels are:
            those series are taken out of ``X`` and used as ``X_unlabeled`` (with a
            warning naming the classes left; if -1 is a class, pass the labels as
            strings). ``score`` leaves them out (:mod:`sktspt.unlabeled`).
        X_unlabeled : array-like, optional
            Series without labels, used for pretraining only.
        sample_weight : array-like of shape (n_instances,), optional
            Non-negative weights of the series in the fine-tuning loss (times
            ``class_weight``); each batch's loss is the weighted mean of its series'
            losses, with the weights scaled to mean 1 over the training set.

        Returns
        -------
        SPTClassifier
            The fitted classifier.
        """
        X, y, X_unlabeled, sample_weight = split_unlabeled(X, y, X_unlabeled, sample_weight)
        return super().fit(X, y, X_unlabeled=X_unlabeled, sample_weight=sample_weight)

    def _stratify(self, y_enc: np.ndarray) -> np.ndarray:
        """Validation splits are stratified by class."""
        return y_enc

    def _choose_augment(self, Xp: np.ndarray, y_enc: np.ndarray, seed: int) -> bool | str:
        """``augment`` for fine-tuning; ``"auto"`` is decided on the training data.

        Rolls where aligning series circularly helps a 1-NN on the training series
        (:func:`~sktspt.invariance.alignment_gain` above 0), else none; the screen draws
        nothing from torch's streams, so without rolls the fit equals ``augment=False``'s
        (why a screen decides: ``docs/tuning.md``).
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
        factor = None if class_weight is None else compute_class_weight(
            class_weight, classes=self.classes_, y=self.classes_[y_enc])[y_enc]
        return super()._sample_weights(sample_weight, y_enc, factor,
                                       "The sample weights (times class_weight)")

    def _task_net(self):
        """A class per series: cross-entropy, with label smoothing and the LEAP exit loss."""
        s = self._settings()
        return AugmentedNetClassifier, dict(
            module=ClassificationModel, module__n_classes=len(self.classes_),
            criterion=CrossEntropyLoss,
            criterion__label_smoothing=float(s["criterion__label_smoothing"]),
            exit_loss_weight=float(s["early_exit__loss_weight"]),
        )

    def _continue_targets(self, y, n: int) -> np.ndarray:
        """Labels of a warm start, as indices into the first fit's ``classes_``."""
        y = check_labels(y, n)
        unseen = np.setdiff1d(np.unique(y), self.classes_)
        if unseen.size:
            raise ValueError(f"y has classes not seen in the first fit: {unseen.tolist()}.")
        return self._label_encoder.transform(y).astype(np.int64)

    # --- predict ----------------------------------------------------------------------
    @estimator_call
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
        if turns == 1:
            return _probabilities(self._infer(module, module, Xp))
        # Every turn of a block of series goes in one call: a pass holds a fixed number of
        # rows whatever they are (``sktspt.inference``), so a few series fill one pass
        # instead of one per turn, and each row's output is the same as alone.
        n = len(Xp)
        block = max(1, min(n, TURN_BLOCK_VALUES // max(1, turns * Xp[0].size)))
        proba = []
        for start in range(0, n, block):
            part = Xp[start:start + block]
            stacked = np.concatenate([_turned(part, k / turns) for k in range(turns)])
            p = _probabilities(self._infer(module, module, stacked))
            proba.append(p.reshape(turns, len(part), *p.shape[1:]).mean(axis=0))
        return np.concatenate(proba)

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

    def score(self, X, y, sample_weight=None) -> float:
        """Accuracy on the series of ``X`` whose numeric label is not -1: unlabelled series
        are left out, as ``fit`` leaves them out of the labels, so ``cross_val_score`` and
        ``GridSearchCV`` score labelled series only (other scorers:
        :func:`sktspt.unlabeled.labeled_scorer`)."""
        X, y, sample_weight, unlabeled = labeled_rows(X, y, sample_weight)
        if unlabeled is not None and unlabeled.all():
            raise ValueError("y holds no label to score: every series is marked -1 "
                             "(unlabelled).")
        return super().score(X, y, sample_weight=sample_weight)

    @estimator_call
    def transform(self, X) -> np.ndarray:
        """Pooled embeddings ``(n_instances, d_model)`` from the fine-tuned encoder."""
        check_is_fitted(self, "net_")
        if self.early_exit is not None:
            return self._early_exit(X)[1].astype(np.float32)
        return self._embed(self.net_.module_, self._input(X))

    @estimator_call
    def exit_layers(self, X) -> np.ndarray:
        """Layer (1-based) at which each series leaves the encoder under ``early_exit``.

        With ``early_exit=None`` every series runs all layers and this is the depth.
        ``predict``, ``predict_proba`` and ``transform`` use the same exits.
        """
        check_is_fitted(self, "net_")
        if self.early_exit is None:
            self._check_exit()
            return np.full(len(self._input(X)), len(self.encoder_.layers), dtype=np.int64)
        return self._early_exit(X)[2]

    def _check_exit(self) -> dict:
        """Check LEAP's settings again (they can be set after fit); the resolved settings."""
        s = self._settings()
        check_exit_params(s, self._parameter_constraints)
        return s

    def _early_exit(self, X):
        """Logits, pooled representations and exit layers with the LEAP exit rule."""
        s = self._check_exit()
        with self._autocast():
            return early_exit_infer(
                self.net_.module_, self._input(X), float(s["early_exit"]),
                int(s["early_exit__min_layer"]), INFERENCE_BATCH, patch_size=self.patch_size_,
                max_tokens=self.max_tokens_, device=self._device,
            )


def _probabilities(logits: np.ndarray) -> np.ndarray:
    """Softmax in float64, per row."""
    proba = np.exp(logits - logits.max(axis=-1, keepdims=True))
    proba /= proba.sum(axis=-1, keepdims=True)
    return proba


def _turned(X: np.ndarray, fraction: float) -> np.ndarray:
    """Network input ``X`` with every series turned by ``fraction`` of its valid length."""
    if fraction == 0:
        return X
    turned = roll_series(torch.from_numpy(X), torch.full((len(X),), fraction, dtype=torch.float64))
    return turned.numpy()
