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

from ._params import CLASSIFIER, PRETRAINER, REGRESSOR, declare_params
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


@declare_params(CLASSIFIER, sktime=True)
class SPTClassifierSktime(BaseClassifier):
    """:class:`~sktspt.SPTClassifier` as an sktime classifier.

    Self-pretrains a transformer on the training series (masked reconstruction),
    then fine-tunes it with the labels, inside ``fit``. Use it wherever sktime needs
    its own classifier type: ``ClassificationBenchmark``, ``evaluate``, sktime
    pipelines and tuners. Accepts any sktime Panel input, multivariate, of unequal
    length and with missing values (NaN).

    The parameters and their defaults are those of :class:`~sktspt.SPTClassifier`
    (declared once, in ``sktspt._params``), less ``warm_start``: sktime's ``fit`` resets
    the estimator, so there is nothing to continue.

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


@declare_params(REGRESSOR, sktime=True)
class SPTRegressorSktime(BaseRegressor):
    """:class:`~sktspt.SPTRegressor` as an sktime regressor.

    Self-pretrains a transformer on the training series (masked reconstruction), then
    fine-tunes it on the numeric targets, inside ``fit``. Use it wherever sktime needs
    its own regressor type: regression benchmarking, ``evaluate``, sktime pipelines and
    tuners. Accepts any sktime Panel input, multivariate, of unequal length and with
    missing values (NaN), and several targets at once (``y`` with several columns is
    fitted by one network, not one per column).

    The parameters and their defaults are those of :class:`~sktspt.SPTRegressor`
    (declared once, in ``sktspt._params``), less ``warm_start``: sktime's ``fit`` resets
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


@declare_params(PRETRAINER, sktime=True)
class SPTTransformerSktime(BaseTransformer):
    """:class:`~sktspt.SPTPretrainer` as an sktime transformer: a panel in, embeddings out.

    ``fit`` self-pretrains a transformer encoder on the series (masked
    reconstruction, no labels); ``transform`` returns one row of ``d_model`` pooled
    embedding features per series, for any tabular learner downstream (for example in
    an sktime pipeline ``SPTTransformerSktime() * RidgeClassifierCV()``). Accepts
    multivariate series of unequal length with missing values (NaN); the output has
    neither.

    The parameters and their defaults are those of :class:`~sktspt.SPTPretrainer`
    (declared once, in ``sktspt._params``).

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
    >>> t = SPTTransformerSktime(depth=1, d_model=16, n_heads=2, max_epochs=1, random_state=0)
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
            dict(d_model=16, max_epochs=1, random_state=0, **_TINY),
            dict(
                d_model=8, positional="alibi", masking="block", max_epochs=1,
                validation_fraction=0.0, random_state=1, **_TINY,
            ),
        ]
