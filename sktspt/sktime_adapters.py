"""sktime adapters: the SPT estimators as an sktime classifier, regressor and transformer.

sktime's ``ClassificationBenchmark``, ``evaluate``, pipelines and tuners accept only
sktime's own estimator types; a scikit-learn estimator raises ``TypeError`` there or
scores NaN. These adapters are thin on purpose: they take exactly the parameters of
the core estimator, build it in ``_fit`` and delegate. The core estimators do not
inherit from sktime's base classes because sktime's ``fit`` calls ``reset()``, which
wipes non-parameter state, and because the core should not import sktime at import
time. This module is imported lazily by ``sktspt.__getattr__``.

Unequal lengths and missing values need no conversion here: sktime hands over a 3D
array (equal length) or a list of ``(time, channel)`` data frames (unequal length),
and the core codes both gaps and padding as NaN.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sktime.classification.base import BaseClassifier
from sktime.regression.base import BaseRegressor
from sktime.transformations.base import BaseTransformer

from ._params import PRETRAINER_DOCS, REGRESSOR_DOCS, ParameterHints, document_parameters
from .classifier import SPTClassifier
from .pretrainer import SPTPretrainer
from .regressor import SPTRegressor

__all__ = ["SPTClassifierSktime", "SPTRegressorSktime", "SPTTransformerSktime"]

_SHARED_TAGS = {
    # packaging
    "authors": ["sktspt developers"],
    "maintainers": ["sktspt developers"],
    "python_dependencies": ["torch", "skorch"],
    # capabilities: NaN codes both gaps and the padding of shorter series
    "capability:multivariate": True,
    "capability:unequal_length": True,
    "capability:missing_values": True,
    "capability:random_state": True,
    "property:randomness": "derandomized",
    # inner data: a list of (time, channel) frames, or 3D numpy when given as such.
    # sktime's classifiers convert other mtypes to the first entry, and only a list can
    # hold series of unequal length.
    "X_inner_mtype": ["df-list", "numpy3D"],
}

_TINY = dict(depth=1, n_heads=2, dim_feedforward=16, dropout=0.0, batch_size=8)


class _SavedWhereAsked:
    """sktime's ``save(path)`` with the file where ``path`` says.

    sktime's own ``save`` makes ``path`` a folder, zips it to ``<path>.zip`` and then opens
    ``<stem>.zip``: ``save("c.sktspt")`` wrote ``c.sktspt.zip`` and failed with
    ``FileNotFoundError: c.zip``. Here a path with an extension is the file written
    (any extension; the file is sktime's zip), and a path without one gets ``.zip``
    appended, as in sktime, so that ``sktime.base.load("c")`` finds ``c.zip``. Load the file
    with ``sktime.base.load(Path(path))`` (a ``Path``: a ``str`` makes sktime append
    ``.zip``). The fitted core estimator, ``estimator_``, saves to sktspt's own format
    (no pickle) with ``estimator_.save(path)``, loaded by ``sktspt.load``.
    """

    def save(self, path=None, serialization_format="pickle"):
        if path is None:
            return super().save(None, serialization_format)
        import os
        import tempfile
        from pathlib import Path
        from zipfile import ZipFile

        if not isinstance(path, str | Path):
            raise TypeError(f"path must be a str or a Path, got {type(path).__name__}.")
        target = Path(path)
        if not target.suffix:
            target = target.with_name(target.name + ".zip")
        folder = target.parent if str(target.parent) else Path(".")
        if not folder.is_dir():
            raise FileNotFoundError(f"Cannot save to {str(target)!r}: no folder {str(folder)!r}.")
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            super().save(Path(tmp) / "estimator", serialization_format).close()
            os.replace(Path(tmp) / "estimator.zip", target)
        return ZipFile(target)


@document_parameters()
class SPTClassifierSktime(_SavedWhereAsked, ParameterHints, BaseClassifier):
    """:class:`~sktspt.SPTClassifier` as an sktime classifier.

    Self-pretrains a transformer on the training series (masked reconstruction),
    then fine-tunes it with the labels, inside ``fit``. Use it wherever sktime needs
    its own classifier type: ``ClassificationBenchmark``, ``evaluate``, sktime
    pipelines and tuners. Accepts any sktime Panel input, multivariate, of unequal
    length and with missing values (NaN).

    The parameters and their defaults are those of :class:`~sktspt.SPTClassifier`
    (a test keeps the two signatures equal), less ``warm_start``: sktime's ``fit``
    resets the estimator, so there is nothing to continue; and less ``self_training``,
    which needs series without labels that sktime's ``fit`` has no place for.

    <parameters>

    Attributes
    ----------
    estimator_ : SPTClassifier
        The fitted core classifier that ``predict`` and ``predict_proba`` delegate to.
    classes_ : ndarray
        Class labels, as sktime sets them.

    Examples
    --------
    >>> from sktime.datasets import load_unit_test
    >>> from sktspt import SPTClassifierSktime
    >>> X, y = load_unit_test(split="train", return_X_y=True)
    >>> clf = SPTClassifierSktime(depth=1, d_model=16, n_heads=2, pretrain_epochs=1,
    ...                           max_epochs=2, random_state=0)
    >>> clf.fit(X, y).predict(X).shape
    (20,)
    """

    _tags = {
        **_SHARED_TAGS,
        "capability:predict_proba": True,
        "capability:class_weight": True,
        "y_inner_mtype": "numpy1D",
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
        cache_features=False,
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
        self.cache_features = cache_features
        super().__init__()

    def _fit(self, X, y) -> SPTClassifierSktime:
        self.estimator_ = SPTClassifier(**self.get_params(deep=False)).fit(X, y)
        return self

    def _predict(self, X) -> np.ndarray:
        return self.estimator_.predict(X)

    def _predict_proba(self, X) -> np.ndarray:
        # Both sort the labels, so the columns already follow sktime's ``classes_``.
        return self.estimator_.predict_proba(X)

    @classmethod
    def get_test_params(cls, parameter_set: str = "default") -> list[dict]:
        """Two tiny, fast configurations for sktime's estimator checks.

        Parameters
        ----------
        parameter_set : str, default="default"
            Unused; sktime passes it to every estimator.

        Returns
        -------
        list of dict
            Keyword arguments for two instances: one with pretraining and a held-out
            validation split, one with other positions and masking and no split.
        """
        return [
            dict(d_model=16, pretrain_epochs=1, max_epochs=2, random_state=0, **_TINY),
            dict(
                d_model=8, positional="rotary", masking="random", pretrain_epochs=1,
                max_epochs=1, validation_fraction=0.0, random_state=1, **_TINY,
            ),
        ]


@document_parameters(REGRESSOR_DOCS)
class SPTRegressorSktime(_SavedWhereAsked, ParameterHints, BaseRegressor):
    """:class:`~sktspt.SPTRegressor` as an sktime regressor.

    Self-pretrains a transformer on the training series (masked reconstruction), then
    fine-tunes it on the numeric targets, inside ``fit``. Use it wherever sktime needs
    its own regressor type: regression benchmarking, ``evaluate``, sktime pipelines and
    tuners. Accepts any sktime Panel input, multivariate, of unequal length and with
    missing values (NaN), and several targets at once (``y`` with several columns is
    fitted by one network, not one per column).

    The parameters and their defaults are those of :class:`~sktspt.SPTRegressor`
    (a test keeps the two signatures equal), less ``warm_start``: sktime's ``fit`` resets
    the estimator, so there is nothing to continue.

    <parameters>

    Attributes
    ----------
    estimator_ : SPTRegressor
        The fitted core regressor that ``predict`` delegates to.

    Examples
    --------
    >>> import numpy as np
    >>> from sktspt import SPTRegressorSktime
    >>> X = np.random.default_rng(0).normal(size=(20, 1, 24))
    >>> y = X[:, 0, :4].mean(axis=1)
    >>> reg = SPTRegressorSktime(depth=1, d_model=16, n_heads=2, pretrain_epochs=1,
    ...                          max_epochs=2, random_state=0)
    >>> reg.fit(X, y).predict(X).shape
    (20,)
    """

    _tags = {
        **_SHARED_TAGS,
        # y arrives as (n, n_outputs); a single output is predicted as (n,), which sktime
        # returns in y's own format.
        "capability:multioutput": True,
        "y_inner_mtype": "numpy2D",
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
        lr=0.001,
        warmup="auto",
        weight_decay=0.01,
        batch_size=16,
        loss="squared_error",
        layer_decay=1.0,
        reinit_layers=0,
        augment="auto",
        mixup="auto",
        mixup_kind="auto",
        validation_fraction=0.0,
        patience=None,
        pretrainer=None,
        callbacks=None,
        device="cpu",
        random_state=None,
        verbose=0,
        checkpoint_dir=None,
        n_estimators=1,
        n_threads=None,
        mask_channels=None,
        pretrain_crops=None,
        pretrain_callbacks=None,
        attention="dense",
        lighthouse_levels=3,
        lighthouse_pool=4,
        lighthouse_topk=8,
        lighthouse_recovery=0.1,
        precision="auto",
        cache_features=False,
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
        self.loss = loss
        self.layer_decay = layer_decay
        self.reinit_layers = reinit_layers
        self.augment = augment
        self.mixup = mixup
        self.mixup_kind = mixup_kind
        self.validation_fraction = validation_fraction
        self.patience = patience
        self.pretrainer = pretrainer
        self.callbacks = callbacks
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self.checkpoint_dir = checkpoint_dir
        self.n_estimators = n_estimators
        self.n_threads = n_threads
        self.mask_channels = mask_channels
        self.pretrain_crops = pretrain_crops
        self.pretrain_callbacks = pretrain_callbacks
        self.attention = attention
        self.lighthouse_levels = lighthouse_levels
        self.lighthouse_pool = lighthouse_pool
        self.lighthouse_topk = lighthouse_topk
        self.lighthouse_recovery = lighthouse_recovery
        self.precision = precision
        self.cache_features = cache_features
        super().__init__()

    def _fit(self, X, y) -> SPTRegressorSktime:
        self.estimator_ = SPTRegressor(**self.get_params(deep=False)).fit(X, y)
        return self

    def _predict(self, X) -> np.ndarray:
        return self.estimator_.predict(X)

    @classmethod
    def get_test_params(cls, parameter_set: str = "default") -> list[dict]:
        """Two tiny, fast configurations for sktime's estimator checks.

        Parameters
        ----------
        parameter_set : str, default="default"
            Unused; sktime passes it to every estimator.

        Returns
        -------
        list of dict
            Keyword arguments for two instances: one with pretraining and a held-out
            validation split and the squared error, one with other positions and masking,
            no split and the Huber loss.
        """
        return [
            dict(d_model=16, pretrain_epochs=1, max_epochs=2, validation_fraction=0.2,
                 random_state=0, **_TINY),
            dict(
                d_model=8, positional="rotary", masking="random", loss="huber",
                pretrain_epochs=1, max_epochs=1, random_state=1, **_TINY,
            ),
        ]


@document_parameters(PRETRAINER_DOCS)
class SPTTransformerSktime(_SavedWhereAsked, ParameterHints, BaseTransformer):
    """:class:`~sktspt.SPTPretrainer` as an sktime transformer: a panel in, embeddings out.

    ``fit`` self-pretrains a transformer encoder on the series (masked
    reconstruction, no labels); ``transform`` returns one row of ``d_model`` pooled
    embedding features per series, for any tabular learner downstream (for example in
    an sktime pipeline ``SPTTransformerSktime() * RidgeClassifierCV()``). Accepts
    multivariate series of unequal length with missing values (NaN); the output has
    neither.

    The parameters and their defaults are those of :class:`~sktspt.SPTPretrainer`
    (a test keeps the two signatures equal).

    <parameters>

    Attributes
    ----------
    estimator_ : SPTPretrainer
        The fitted core pretrainer that ``transform`` delegates to.

    Examples
    --------
    >>> from sktime.datasets import load_unit_test
    >>> from sktspt import SPTTransformerSktime
    >>> X, _ = load_unit_test(split="train", return_X_y=True)
    >>> t = SPTTransformerSktime(depth=1, d_model=16, n_heads=2, pretrain_epochs=1,
    ...                          random_state=0)
    >>> t.fit_transform(X).shape
    (20, 16)
    """

    _tags = {
        **_SHARED_TAGS,
        "scitype:transform-input": "Series",
        "scitype:transform-output": "Primitives",
        # fit learns from the whole panel, so it is not a per-instance transform
        "scitype:instancewise": False,
        "y_inner_mtype": "None",
        "fit_is_empty": False,
        "requires_y": False,
        # a fixed-size, finite embedding per series
        "capability:unequal_length:removes": True,
        "capability:missing_values:removes": True,
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
        super().__init__()

    def _fit(self, X, y=None) -> SPTTransformerSktime:
        self.estimator_ = SPTPretrainer(**self.get_params(deep=False)).fit(X)
        return self

    def _transform(self, X, y=None) -> pd.DataFrame:
        embeddings = self.estimator_.transform(X)
        return pd.DataFrame(embeddings, columns=self.estimator_.get_feature_names_out())

    @classmethod
    def get_test_params(cls, parameter_set: str = "default") -> list[dict]:
        """Two tiny, fast configurations for sktime's estimator checks.

        Parameters
        ----------
        parameter_set : str, default="default"
            Unused; sktime passes it to every estimator.

        Returns
        -------
        list of dict
            Keyword arguments for two instances with different positions and masking.
        """
        return [
            dict(d_model=16, pretrain_epochs=1, random_state=0, **_TINY),
            dict(
                d_model=8, positional="alibi", masking="block", pretrain_epochs=1,
                validation_fraction=0.0, random_state=1, **_TINY,
            ),
        ]
