"""sktspt: self-pretraining (SPT) of transformers for time-series classification."""

from .classifier import SPTClassifier
from .pretrainer import SPTPretrainer

__version__ = "0.1.0"

__all__ = ["SPTClassifier", "SPTPretrainer", "__version__"]
