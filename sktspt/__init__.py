"""sktspt: self-pretraining (SPT) of transformers for time-series classification and regression."""

from ._version import __version__

__all__ = [
    "ResumableCheckpoint",
    "SPTClassifier",
    "SPTClassifierSktime",
    "SPTPretrainer",
    "SPTRegressor",
    "SPTRegressorSktime",
    "SPTTransformerSktime",
    "__version__",
    "load",
]

# Everything but the version loads on first use, so that ``import sktspt`` (and
# ``python -m sktspt.benchmark --help``) does not import torch and sktime.
_LAZY = {
    "SPTClassifier": "classifier",
    "SPTPretrainer": "pretrainer",
    "SPTRegressor": "regressor",
    "load": "persistence",
    "ResumableCheckpoint": "training.callbacks",
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
