"""SPTRegressor: self-pretraining, then fine-tuning on numeric targets."""

from __future__ import annotations

import numpy as np
import torch
from sklearn.base import RegressorMixin
from sklearn.utils.validation import check_array, check_is_fitted

from ._base import estimator_call
from ._param_docs import REGRESSOR_DOCS, document_parameters
from ._params import REGRESSION_LOSSES, Options, show
from ._supervised import SupervisedSPT
from .data import check_finite_output
from .nn.heads import RegressionModel
from .training import AugmentedNetRegressor

__all__ = ["SPTRegressor"]

#: The fine-tuning criterion of each ``loss`` (on standardised targets).
_CRITERIA = {"squared_error": torch.nn.MSELoss, "huber": torch.nn.HuberLoss}


def check_targets(y, n_instances: int, owner: str = "SPTRegressor") -> np.ndarray:
    """Regression targets as float64 ``(n, k)``: numeric, finite, one row per series.

    Raises ``ValueError`` naming the problem: no ``y``, values that are not numbers, NaN
    or infinite values, or a number of rows other than ``n_instances``.
    """
    if y is None:
        raise ValueError(
            f"This {owner} estimator requires y to be passed, but the target y is None."
        )
    values = np.asarray(y)
    if values.dtype.kind == "c":
        raise ValueError(f"{owner} needs real-valued targets y; got complex numbers.")
    strings = values.dtype.kind in "US" or (
        values.dtype.kind == "O" and any(isinstance(v, str | bytes) for v in values.ravel())
    )
    if strings:
        example = values.ravel()[0]
        raise ValueError(
            f"{owner} needs numeric targets y, but y holds strings (dtype {values.dtype}, "
            f"e.g. {example!r}). If they are class labels, use SPTClassifier; if they are "
            "numbers written as text, convert them first: y.astype(float)."
        )
    if values.dtype.kind not in "biuf":
        try:
            values = values.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"{owner} needs numeric targets y, but y holds values that are not numbers "
                f"(dtype {values.dtype}): {exc}. For class labels use SPTClassifier."
            ) from exc
    if values.ndim not in (1, 2):
        raise ValueError(
            f"y must be of shape (n_instances,) or (n_instances, n_outputs); got shape "
            f"{values.shape}."
        )
    values = check_array(values, ensure_2d=False, dtype=np.float64, input_name="y",
                         ensure_min_samples=1)
    if values.shape[0] != n_instances:
        raise ValueError(
            f"X and y have inconsistent numbers of instances: X has {n_instances}, "
            f"y has {values.shape[0]}."
        )
    return values.reshape(n_instances, -1)


@document_parameters(REGRESSOR_DOCS)
class SPTRegressor(RegressorMixin, SupervisedSPT):
    """Time-series transformer regressor with self-pretraining (SPT).

    ``fit(X, y)`` first trains the network to reconstruct masked values of the
    training series themselves (``pretrain_epochs``; targets unused), then fine-tunes
    all weights with a fresh linear head on the targets (``max_epochs``): time-series
    extrinsic regression, one or several numbers per series. ``pretrain_epochs=0``
    trains the identical network from scratch, the control to compare with.

    Targets are standardised inside ``fit`` (each output to mean 0 and standard
    deviation 1 over the training series: ``target_mean_``, ``target_scale_``), so
    the loss and the learning rate mean the same for a target in grams or in tonnes;
    ``predict`` returns values in the target's own units. ``score`` is R²
    (``RegressorMixin``). The pretraining, budgets, precision, resuming and
    saving are those of :class:`~sktspt.SPTClassifier`.

    <parameters>

    Attributes
    ----------
    n_outputs_ : int
        Number of outputs (columns of ``y``; 1 for ``y`` of shape ``(n,)``).
    target_mean_ : ndarray of shape (n_outputs,)
        Mean of each output over the training series.
    target_scale_ : ndarray of shape (n_outputs,)
        Standard deviation of each output over the training series.
    net_ : sktspt.training.AugmentedNetRegressor
        The fine-tuned skorch net (it predicts standardised targets).
    encoder_ : TransformerEncoder
        The fine-tuned encoder.
    history_ : skorch.History
        Fine-tuning history (losses on the standardised targets).
    pretrain_history_ : skorch.History or None
        Self-pretraining history (None without pretraining in ``fit``).
    encoder_kwargs_ : dict
        Architecture of ``encoder_``.
    mixup_ : float
        The mixup ``alpha`` fine-tuning used (what ``mixup="auto"`` resolved to).
    mixup_kind_ : str
        How fine-tuning mixed series, ``"blend"`` or ``"cutmix"``.
    augment_ : bool or str
        The augmentation fine-tuning used (``"auto"`` is none).
    normalizer_ : Normalizer
        Normalisation statistics of the series, fitted on the training data.

    Examples
    --------
    >>> import numpy as np
    >>> from sktspt import SPTRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(30, 1, 24))
    >>> y = 100.0 + 10.0 * X[:, 0, :4].mean(axis=1)
    >>> reg = SPTRegressor(depth=1, d_model=16, pretrain_epochs=1, max_epochs=2,
    ...                    random_state=0).fit(X, y)
    >>> reg.predict(X[:3]).shape
    (3,)
    """

    _parameter_constraints: dict = {
        **SupervisedSPT._parameter_constraints,
        "loss": Options(REGRESSION_LOSSES),
    }

    def __init__(
        self, *, depth=3, d_model=64, tokenizer="rocket", architecture="transformer",
        attention="dense", normalize="auto", masking="span", pretrain_objective="masked",
        pretrain_epochs="auto", max_epochs="auto", lr=1e-3, batch_size=16,
        loss="squared_error", augment="auto", mixup="auto", pretrainer=None,
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
        self.loss = loss
        self.augment = augment
        self.mixup = mixup
        self.pretrainer = pretrainer
        self.validation_fraction = validation_fraction
        self.callbacks = callbacks
        self.random_state = random_state
        self.device = device
        self.verbose = verbose
        self.warm_start = warm_start
        self._set_routed(kwargs)

    # --- fit (the two phases: SupervisedSPT.fit) ---------------------------------------
    def fit(self, X, y, X_unlabeled=None, sample_weight=None) -> SPTRegressor:
        """Self-pretrain on ``X`` (and ``X_unlabeled``), then fine-tune on ``(X, y)``.

        Parameters
        ----------
        X : array-like of shape (n_instances, n_channels, n_timepoints) or (n, t)
            Training series; also a list of series of unequal length or an sktime panel.
            NaN marks missing values.
        y : array-like of shape (n_instances,) or (n_instances, n_outputs)
            Numeric targets, finite; no output may be constant.
        X_unlabeled : array-like, optional
            Extra series used for pretraining only.
        sample_weight : array-like of shape (n_instances,), optional
            Non-negative weights of the series in the fine-tuning loss; each batch's loss
            is the weighted mean of its series' losses, with the weights scaled to mean 1
            over the training set.

        Returns
        -------
        SPTRegressor
            The fitted regressor.
        """
        return super().fit(X, y, X_unlabeled=X_unlabeled, sample_weight=sample_weight)

    def _fit_targets(self, y, n: int) -> np.ndarray:
        """Standardised targets ``(n, n_outputs_)`` (float32); fixes ``target_mean_`` and
        ``target_scale_``."""
        values = check_targets(y, n)
        if n < 2:
            raise ValueError(
                f"SPTRegressor needs at least 2 training series, got {n} sample."
            )
        constant = np.flatnonzero(np.ptp(values, axis=0) == 0)
        if constant.size:
            which = "y" if values.shape[1] == 1 else f"y[:, {constant.tolist()}]"
            raise ValueError(
                f"{which} is constant ({show(values[0, constant[0]])} for every series): a target "
                "with no variance cannot be learned or standardised."
            )
        with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
            mean, scale = values.mean(axis=0), values.std(axis=0)
            standardised = (values - mean) / scale
            usable = (np.isfinite(mean) & np.isfinite(scale) & (scale > 0)
                      & np.isfinite(standardised.astype(np.float32)).all(axis=0))
        if not usable.all():
            bad = int(np.flatnonzero(~usable)[0])
            which = "y" if values.shape[1] == 1 else f"y[:, {bad}]"
            column = values[:, bad]
            spread = np.ptp(column)
            size = ("too large" if not (np.isfinite(scale[bad]) and np.isfinite(mean[bad])
                                        and np.isfinite(spread)) else "too small")
            raise ValueError(
                f"{which} cannot be standardised in float64: its values (from "
                f"{show(column.min())} to {show(column.max())}) spread over a range "
                f"{size} to represent (standard deviation {show(scale[bad])}). Rescale y "
                "(e.g. to other units) so that its spread is a representable number."
            )
        self.n_outputs_ = values.shape[1]
        self.target_mean_ = mean
        self.target_scale_ = scale
        return self._standardise(values)

    def _continue_targets(self, y, n: int) -> np.ndarray:
        """Targets of a warm start, standardised with the first fit's statistics."""
        values = check_targets(y, n)
        if values.shape[1] != self.n_outputs_:
            raise ValueError(
                f"y has {values.shape[1]} output(s), but the first fit had {self.n_outputs_}."
            )
        return self._standardise(values)

    def _standardise(self, values: np.ndarray) -> np.ndarray:
        return ((values - self.target_mean_) / self.target_scale_).astype(np.float32)

    def _restore(self, spec, encoder_kwargs: dict, *, target_mean, target_scale,
                 check: bool = True):
        """As :meth:`SPTBase._restore`, with the target statistics fit stores."""
        self.target_mean_ = np.asarray(target_mean, dtype=np.float64).reshape(-1)
        self.target_scale_ = np.asarray(target_scale, dtype=np.float64).reshape(-1)
        self.n_outputs_ = len(self.target_mean_)
        return super()._restore(spec, encoder_kwargs, check=check)

    def _task_net(self):
        """A linear head of ``n_outputs_`` values and ``loss`` on standardised targets."""
        return AugmentedNetRegressor, dict(
            module=RegressionModel, module__n_outputs=self.n_outputs_,
            criterion=_CRITERIA[self.loss],
        )

    # --- predict ----------------------------------------------------------------------
    @estimator_call
    def predict(self, X) -> np.ndarray:
        """Predicted targets in their own units: ``(n_instances,)`` for one output, else
        ``(n_instances, n_outputs_)``."""
        check_is_fitted(self, "net_")
        module = self.net_.module_
        out = self._infer(module, module, self._input(X))
        values = check_finite_output(out * self.target_scale_ + self.target_mean_, "predict")
        return values[:, 0] if self.n_outputs_ == 1 else values

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags
