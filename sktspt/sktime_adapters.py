"""sktime adapters: the SPT estimators as an sktime classifier, regressor and transformer.

sktime's ``ClassificationBenchmark``, ``evaluate``, pipelines and tuners accept only
sktime's own estimator types. These adapters are thin: they take exactly the parameters
of the core estimator, build it in ``_fit`` and delegate. The core estimators do not
inherit from sktime's base classes because sktime's ``fit`` calls ``reset()``, which wipes
non-parameter state, and because the core should not import sktime at import time (this
module is imported lazily by ``sktspt.__getattr__``).

An adapter's parameters are its estimator's, written nowhere here:
:func:`_takes_the_parameters_of` gives it an ``__init__`` whose ``__signature__`` is the
estimator's (less what cannot apply in sktime, the routed settings written out), which
scikit-learn and skbase read for ``get_params``, ``clone``, ``reset``, the repr and the
docstring. sktime's delegation mixins (``_DelegatedClassifier``) would save the two-line
``_fit``/``_predict``, not the parameter list.

sktime hands over a 3D array (equal length) or a list of ``(time, channel)`` data frames
(unequal length); the core codes both gaps and padding as NaN.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence

import numpy as np
import pandas as pd
from sktime.classification.base import BaseClassifier
from sktime.regression.base import BaseRegressor
from sktime.transformations.base import BaseTransformer

from ._param_docs import document_parameters
from ._param_hints import unknown_keyword_message
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

_TINY = dict(depth=1, architecture__n_heads=2, architecture__dim_feedforward=16,
             architecture__dropout=0.0, batch_size=8)


def _takes_the_parameters_of(estimator: type, less: Sequence[str] = ()):
    """Class decorator: the adapter's parameters and their docs are ``estimator``'s.

    The ``__init__`` has ``estimator.__init__``'s signature less ``less``, with the routed
    settings as keyword-only parameters (sktime allows no ``**kwargs``); it stores each
    argument and calls the sktime base class's ``__init__``. The docstring's
    ``<parameters>`` comes from the estimator's doc table.
    """
    signature = inspect.signature(estimator.__init__)
    if unknown := set(less) - set(signature.parameters):
        raise RuntimeError(f"{estimator.__name__} has no parameters {sorted(unknown)}.")
    routed = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default)
              for name, default in estimator._routed.items()]
    signature = signature.replace(parameters=[
        *(p for p in signature.parameters.values()
          if p.name not in less and p.kind is not p.VAR_KEYWORD), *routed])

    def decorate(cls: type) -> type:
        def __init__(self, *args, **kwargs) -> None:
            for name in kwargs:  # Python's TypeError, naming the closest parameter
                if name not in signature.parameters:
                    raise TypeError(unknown_keyword_message(cls, name))
            arguments = signature.bind(self, *args, **kwargs)
            arguments.apply_defaults()
            for name, value in arguments.arguments.items():
                if name != "self":
                    setattr(self, name, value)
            super(cls, self).__init__()

        __init__.__signature__ = signature
        __init__.__qualname__ = f"{cls.__qualname__}.__init__"
        cls.__init__ = __init__
        cls._estimator, cls._routes, cls._routed = estimator, estimator._routes, estimator._routed
        cls._removed = getattr(estimator, "_removed", {})  # its names removed in 0.5
        return document_parameters(estimator._parameter_docs)(cls)

    return decorate


class _Adapter:
    """What the adapters share: delegation to ``estimator_``, ``set_params`` of the routed
    settings, sktime's test parameters, and ``save(path)`` with the file where ``path`` says.

    skbase reads ``attention__levels`` as the setting ``levels`` of an estimator-valued
    parameter ``attention``; here it is a parameter of its own, set by name (and the object
    reset, as skbase's ``set_params`` does). sktime's own ``save("c.sktspt")`` wrote
    ``c.sktspt.zip`` and then failed opening ``c.zip``; here a path with an extension is the
    file written (sktime's zip), and one without gets ``.zip``, so that
    ``sktime.base.load("c")`` finds ``c.zip``; load it with ``sktime.base.load(Path(path))``.
    ``estimator_.save(path)`` writes sktspt's own format (no pickle), read by ``sktspt.load``.
    """

    #: The keyword arguments of :meth:`get_test_params`'s two tiny configurations.
    _test_params: tuple[dict, dict] = ({}, {})

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
            Keyword arguments for two tiny instances (different positions and masking).
        """
        return [{**params, **_TINY} for params in cls._test_params]

    def _fit(self, X, y=None):
        # The estimator of the class (_takes_the_parameters_of), with the same parameters.
        self.estimator_ = self._estimator(**self.get_params(deep=False)).fit(X, y)
        return self

    def _predict(self, X) -> np.ndarray:
        return self.estimator_.predict(X)

    def set_params(self, **params):
        routed = {key: params.pop(key) for key in list(params) if key in self._routed}
        for key, value in routed.items():
            setattr(self, key, value)
        if params:
            return super().set_params(**params)
        if routed:
            self.reset()
        return self

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


@_takes_the_parameters_of(SPTClassifier, less=("warm_start",))
class SPTClassifierSktime(_Adapter, BaseClassifier):
    """:class:`~sktspt.SPTClassifier` as an sktime classifier.

    Trains a transformer on the labels inside ``fit``, from scratch by default, or
    (``pretrain_epochs="auto"``) after self-pretraining it on the training series
    (masked reconstruction). Use it wherever sktime needs
    its own classifier type: ``ClassificationBenchmark``, ``evaluate``, sktime
    pipelines and tuners. Accepts any sktime Panel input, multivariate, of unequal
    length and with missing values (NaN).

    The parameters and their defaults are those of :class:`~sktspt.SPTClassifier`,
    taken from its signature, less ``warm_start``: sktime's ``fit`` resets the estimator,
    so there is nothing to continue. Routed settings are parameters of their own here
    (sktime allows no ``**kwargs``), under the same names.

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
    >>> clf = SPTClassifierSktime(depth=1, d_model=16, architecture__n_heads=2, pretrain_epochs=1,
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

    def _predict_proba(self, X) -> np.ndarray:
        # Both sort the labels, so the columns already follow sktime's ``classes_``.
        return self.estimator_.predict_proba(X)

    _test_params = (
        dict(d_model=16, pretrain_epochs=1, max_epochs=2, random_state=0),
        dict(d_model=8, architecture__positional="rotary", masking="random", pretrain_epochs=1,
             max_epochs=1, validation_fraction=0.0, random_state=1),
    )


@_takes_the_parameters_of(SPTRegressor, less=("warm_start",))
class SPTRegressorSktime(_Adapter, BaseRegressor):
    """:class:`~sktspt.SPTRegressor` as an sktime regressor.

    Self-pretrains a transformer on the training series (masked reconstruction), then
    fine-tunes it on the numeric targets, inside ``fit``. Use it wherever sktime needs
    its own regressor type: regression benchmarking, ``evaluate``, sktime pipelines and
    tuners. Accepts any sktime Panel input, multivariate, of unequal length and with
    missing values (NaN), and several targets at once (``y`` with several columns is
    fitted by one network, not one per column).

    The parameters and their defaults are those of :class:`~sktspt.SPTRegressor`,
    taken from its signature, less ``warm_start``: sktime's ``fit`` resets the estimator,
    so there is nothing to continue.

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
    >>> reg = SPTRegressorSktime(depth=1, d_model=16, architecture__n_heads=2, pretrain_epochs=1,
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

    _test_params = (
        dict(d_model=16, pretrain_epochs=1, max_epochs=2, validation_fraction=0.2,
             random_state=0),
        dict(d_model=8, architecture__positional="rotary", masking="random", loss="huber",
             pretrain_epochs=1, max_epochs=1, random_state=1),
    )


@_takes_the_parameters_of(SPTPretrainer)
class SPTTransformerSktime(_Adapter, BaseTransformer):
    """:class:`~sktspt.SPTPretrainer` as an sktime transformer: a panel in, embeddings out.

    ``fit`` self-pretrains a transformer encoder on the series (masked
    reconstruction, no labels); ``transform`` returns one row of ``d_model`` pooled
    embedding features per series, for any tabular learner downstream (for example in
    an sktime pipeline ``SPTTransformerSktime() * RidgeClassifierCV()``). Accepts
    multivariate series of unequal length with missing values (NaN); the output has
    neither.

    The parameters and their defaults are those of :class:`~sktspt.SPTPretrainer`,
    taken from its signature.

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
    >>> t = SPTTransformerSktime(depth=1, d_model=16, architecture__n_heads=2, pretrain_epochs=1,
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

    def _transform(self, X, y=None) -> pd.DataFrame:
        embeddings = self.estimator_.transform(X)
        return pd.DataFrame(embeddings, columns=self.estimator_.get_feature_names_out())

    _test_params = (
        dict(d_model=16, pretrain_epochs=1, random_state=0),
        dict(d_model=8, architecture__positional="alibi", masking="block", pretrain_epochs=1,
             validation_fraction=0.0, random_state=1),
    )
