"""Saving and loading fitted estimators in a format that loading never executes.

``pickle`` and ``joblib`` work on every estimator, but unpickling runs code chosen by
whoever wrote the file: load pickles you made yourself only. :func:`save` writes, and
:func:`load` reads, a single zip file holding nothing that can run:

``metadata.json``
    Format name and version, package versions, the estimator class (one of a fixed
    list; nothing is imported by name), its ``get_params()`` (JSON values only), the
    fitted state (shape facts, ``encoder_kwargs_``, normalisation statistics,
    ``classes_`` with their dtype or the regressor's target statistics, training
    histories) and the skorch net class.
``weights.safetensors``
    The state dict of ``net_.module_`` (encoder and head) in safetensors format.

Four parts, each with one job: :mod:`.format` is the file container (members, limits,
atomic writes, the checks before anything large is allocated) and knows no estimator;
:mod:`.saving` writes a fitted estimator; :mod:`.fitted` reads a file's fitted state back,
each value checked; :mod:`.loading` builds the estimator from it and is the only module
that names the estimator classes. See ``docs/persistence.md``.
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
