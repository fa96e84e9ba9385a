"""Writing a fitted estimator (:func:`save`): parameters and fitted state as JSON, weights
as safetensors; nothing written can run when the file is read back.
"""

from __future__ import annotations

import json
import math
import os
import zipfile

import numpy as np
import torch
from safetensors.torch import save as save_tensors
from sklearn.utils.validation import check_is_fitted

from .._version import __version__
from ..data import Normalizer
from ..training.callbacks import without_checkpoint
from .format import (
    CLASS_KINDS,
    EPOCH_STATE,
    ESTIMATORS,
    FORMAT,
    FORMAT_VERSION,
    META,
    SHAPE_STATE,
    WEIGHTS,
    atomic_write,
    plain,
)

_HINTS = {
    "pretrainer": " (the fitted weights already contain the pretrained encoder)",
    "callbacks": " (callbacks only act during fit)",
    "pretrain__callbacks": " (callbacks only act during fit)",
    "class_weight": " (class weights only act during fit)",
    "random_state": " (an int seed can be saved)",
}


def _a(noun: str) -> str:
    """``noun`` with its indefinite article: "an EarlyStopping", "a list"."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _json_value(name: str, value):
    """``value`` as plain JSON, or a ValueError that says what to do instead."""
    value = plain(value)
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"Cannot save parameter {name}={value!r}: not a finite number.")
        return value
    if isinstance(value, list):
        return [_json_value(name, v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _json_value(name, v) for k, v in value.items()}
    raise ValueError(
        f"Cannot save parameter {name}={value!r}: {_a(type(value).__name__)} is not a JSON "
        "value, and only None, bool, int, float, str and lists or dicts of them can be "
        f"saved without pickle. Set it to such a value, e.g. est.set_params({name}=None)"
        f"{_HINTS.get(name, '')}, before saving; or use pickle/joblib, for files you "
        "trust only."
    )


def _builtin(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _classes_state(classes: np.ndarray) -> dict:
    values = classes.tolist()
    if classes.dtype.kind not in CLASS_KINDS or not all(
        isinstance(v, bool | int | float | str) for v in values
    ):
        raise ValueError(
            f"Cannot save classes_ of dtype {classes.dtype} without pickle; encode the "
            "labels as integers or strings."
        )
    return {"values": values, "dtype": classes.dtype.str}


def _normalizer_state(normalizer: Normalizer) -> dict:
    state = {"mode": normalizer.mode, "eps": float(normalizer.eps), "floor": normalizer.floor}
    if normalizer.mode == "global":
        state["mean"] = np.asarray(normalizer.mean_, dtype=np.float32).tolist()
        state["std"] = np.asarray(normalizer.std_, dtype=np.float32).tolist()
    return state


def save(estimator, path: str | os.PathLike) -> None:
    """Save a fitted ``SPTClassifier``, ``SPTRegressor`` or ``SPTPretrainer`` to one file,
    without pickle.

    The file is a zip of ``metadata.json`` (parameters and fitted state) and
    ``weights.safetensors``; :func:`load` reads it back without executing anything from
    it, so it is safe to load files from others. ``pickle.dump`` / ``joblib.dump`` keep
    working too, but a pickle runs arbitrary code when loaded: never unpickle a file you
    do not trust.

    Parameters
    ----------
    estimator : SPTClassifier, SPTRegressor or SPTPretrainer
        A fitted estimator whose parameters are all JSON values (a ``pretrainer``,
        ``callbacks`` or ``RandomState`` parameter must be set to None or an int first).
    path : str or path-like
        File to write; replaced atomically if it exists.

    Raises
    ------
    TypeError
        For other estimator classes (subclasses included).
    ValueError
        For a parameter or ``classes_`` that cannot be stored as JSON.
    sklearn.exceptions.NotFittedError
        If the estimator is not fitted.
    """
    cls = type(estimator)
    name = cls.__name__
    if ESTIMATORS.get(name) != cls.__module__:
        raise TypeError(
            f"save handles {', '.join(sorted(ESTIMATORS))}, not {cls.__qualname__}; "
            "use pickle or joblib for other classes (and load only files you trust)."
        )
    check_is_fitted(estimator, "net_")
    # Every routed setting, defaults too: a file says how it was fitted whatever later
    # versions' defaults are (the loader leaves those at today's default out again).
    settings = estimator._settings()
    params = {**estimator.get_params(deep=False),
              **{k: settings[k] for k in type(estimator)._routed}}
    # A loaded model never writes into the checkpoint folder of the fit that made it.
    params["callbacks"] = without_checkpoint(params["callbacks"])
    params = {k: _json_value(k, v) for k, v in params.items()}
    fitted = {k: getattr(estimator, k) for k in SHAPE_STATE if hasattr(estimator, k)}
    fitted = {k: v if isinstance(v, bool) else int(v) for k, v in fitted.items()}
    fitted.update({k: int(getattr(estimator, k)) for k in EPOCH_STATE if k in vars(estimator)})
    if estimator.input_spec_.resample_length is not None:  # absent: lengths kept
        fitted["resample_length_"] = int(estimator.input_spec_.resample_length)
    if hasattr(estimator, "mixup_"):
        fitted["mixup_"] = float(estimator.mixup_)
    if hasattr(estimator, "mixup_kind_"):
        fitted["mixup_kind_"] = str(estimator.mixup_kind_)
    if hasattr(estimator, "augment_"):
        fitted["augment_"] = _json_value("augment_", estimator.augment_)
    if hasattr(estimator, "augment_evidence_"):
        fitted["augment_evidence_"] = _json_value("augment_evidence_",
                                                  estimator.augment_evidence_)
    fitted["encoder_kwargs"] = {
        k: _json_value(f"encoder_kwargs_[{k!r}]", v)
        for k, v in estimator.encoder_kwargs_.items()
    }
    fitted["normalizer"] = _normalizer_state(estimator.normalizer_)
    fitted["net"] = type(estimator.net_).__name__
    fitted["history"] = estimator.net_.history.to_list()
    if hasattr(estimator, "classes_"):
        fitted["classes"] = _classes_state(np.asarray(estimator.classes_))
    if hasattr(estimator, "target_mean_"):  # a regressor's target standardisation
        fitted["targets"] = {"mean": np.asarray(estimator.target_mean_).tolist(),
                             "scale": np.asarray(estimator.target_scale_).tolist()}
    if hasattr(estimator, "pretrain_history_"):
        pre = estimator.pretrain_history_
        fitted["pretrain_history"] = None if pre is None else pre.to_list()
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "sktspt_version": __version__,
        "torch_version": torch.__version__,
        "estimator": name,
        "params": params,
        "fitted": fitted,
    }
    weights = {
        k: v.detach().to("cpu", copy=True).contiguous()
        for k, v in estimator.net_.module_.state_dict().items()
    }
    blob = save_tensors(weights)

    def write(f):
        with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(META, json.dumps(meta, default=_builtin, indent=1))
            zf.writestr(WEIGHTS, blob)

    atomic_write(path, write)
