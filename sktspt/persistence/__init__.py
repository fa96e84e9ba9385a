"""Saving and loading fitted estimators in a format that loading never executes.

``pickle`` and ``joblib`` work on every estimator, but unpickling runs code chosen by
whoever wrote the file. :func:`save` writes, and :func:`load` reads, one zip of
``metadata.json`` (parameters and fitted state, JSON values only; the class one of a fixed
list) and ``weights.safetensors``. :mod:`.format` is the container (members, limits,
atomic writes) and knows no estimator; :mod:`.saving` writes a fitted estimator;
:mod:`.fitted` reads its fitted state back, each value checked; :mod:`.loading` builds the
estimator and is the only module that names the estimator classes. See
``docs/persistence.md``.
"""

from .format import FORMAT_VERSION, MAX_HEADER_BYTES, MAX_METADATA_BYTES, atomic_write
from .saving import save

__all__ = ["FORMAT_VERSION", "MAX_HEADER_BYTES", "MAX_METADATA_BYTES", "atomic_write", "load",
           "save"]


def __getattr__(name: str):
    # Loading names the estimator classes, which import the estimators' layer: it loads on
    # first use, so that the estimators can import this package's saving part.
    if name == "load":
        from .loading import load

        return load
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
