"""sktspt: self-pretraining (SPT) of transformers for time-series classification and regression."""

from ._version import __version__
from .classifier import SPTClassifier
from .persistence import load
from .pretrainer import SPTPretrainer
from .regressor import SPTRegressor

__all__ = [
    "SPTClassifier",
    "SPTClassifierSktime",
    "SPTPretrainer",
    "SPTRegressor",
    "SPTRegressorSktime",
    "SPTTransformerSktime",
    "__version__",
    "load",
]

# The sktime adapters import sktime's base classes, so they load on first use only.
_LAZY = {
    "SPTClassifierSktime": "sktime_adapters",
    "SPTRegressorSktime": "sktime_adapters",
    "SPTTransformerSktime": "sktime_adapters",
}


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
