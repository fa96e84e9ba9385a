"""Saving and loading fitted estimators in a format that loading never executes.

``pickle`` and ``joblib`` work on every estimator, but unpickling runs code chosen by
whoever wrote the file: load pickles you made yourself only. :func:`save` writes, and
:func:`load` reads, a single zip file holding nothing that can run:

``metadata.json``
    Format name and version, package versions, the estimator class (one of a fixed
    list; nothing is imported by name), its ``get_params()`` (JSON values only), the
    fitted state (shape facts, ``encoder_kwargs_``, normalisation statistics,
    ``classes_`` with their dtype, training histories) and the skorch net class.
``weights.safetensors``
    The state dict of ``net_.module_`` (encoder and head) in safetensors format.

Loading builds the estimator from its parameters, rebuilds and initialises its skorch
net, and copies the weights in, so ``predict``, ``predict_proba`` and ``transform`` give
the same numbers as before saving. Weights are read onto the CPU and moved to the
estimator's device; a model trained on a GPU loads on a machine without one (see
``device`` in :func:`load`). The optimizer state is not saved: ``warm_start`` after
loading continues training with a fresh optimizer. See ``docs/persistence.md``.
"""

from __future__ import annotations

import json
import math
import os
import warnings
import zipfile
import zlib

import numpy as np
import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.validation import check_is_fitted
from skorch.history import History

from .data import Normalizer

__all__ = ["save", "load", "FORMAT_VERSION"]

FORMAT = "sktspt-estimator"
FORMAT_VERSION = 1
_META = "metadata.json"
_WEIGHTS = "weights.safetensors"
_SHAPE_STATE = (
    "n_channels_", "n_timepoints_", "equal_length_", "patch_size_", "max_tokens_",
    "n_features_in_",
)
_CLASS_KINDS = "biufUO"
_HINTS = {
    "pretrainer": " (the fitted weights already contain the pretrained encoder)",
    "callbacks": " (callbacks only act during fit)",
    "random_state": " (an int seed can be saved)",
}


def _estimator_classes() -> dict:
    from .classifier import SPTClassifier
    from .pretrainer import SPTPretrainer

    return {"SPTClassifier": SPTClassifier, "SPTPretrainer": SPTPretrainer}


def _version() -> str:
    from . import __version__

    return __version__


# --- saving ------------------------------------------------------------------------------
def _json_value(name: str, value):
    """``value`` as plain JSON, or a ValueError that says what to do instead."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
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
        f"Cannot save parameter {name}={value!r}: a {type(value).__name__} is not a JSON "
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
    if classes.dtype.kind not in _CLASS_KINDS or not all(
        isinstance(v, bool | int | float | str) for v in values
    ):
        raise ValueError(
            f"Cannot save classes_ of dtype {classes.dtype} without pickle; encode the "
            "labels as integers or strings."
        )
    return {"values": values, "dtype": classes.dtype.str}


def _normalizer_state(normalizer: Normalizer) -> dict:
    state = {"mode": normalizer.mode, "eps": float(normalizer.eps)}
    if normalizer.mode == "global":
        state["mean"] = np.asarray(normalizer.mean_, dtype=np.float32).tolist()
        state["std"] = np.asarray(normalizer.std_, dtype=np.float32).tolist()
    return state


def save(estimator, path: str | os.PathLike) -> None:
    """Save a fitted ``SPTClassifier`` or ``SPTPretrainer`` to one file, without pickle.

    The file is a zip of ``metadata.json`` (parameters and fitted state) and
    ``weights.safetensors``; :func:`load` reads it back without executing anything from
    it, so it is safe to load files from others. ``pickle.dump`` / ``joblib.dump`` keep
    working too, but a pickle runs arbitrary code when loaded: never unpickle a file you
    do not trust.

    Parameters
    ----------
    estimator : SPTClassifier or SPTPretrainer
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
    classes = _estimator_classes()
    name = type(estimator).__name__
    if classes.get(name) is not type(estimator):
        raise TypeError(
            f"save handles {', '.join(sorted(classes))}, not {type(estimator).__qualname__}; "
            "use pickle or joblib for other classes (and load only files you trust)."
        )
    check_is_fitted(estimator, "net_")
    params = {k: _json_value(k, v) for k, v in estimator.get_params(deep=False).items()}
    fitted = {k: getattr(estimator, k) for k in _SHAPE_STATE if hasattr(estimator, k)}
    fitted = {k: v if isinstance(v, bool) else int(v) for k, v in fitted.items()}
    fitted["encoder_kwargs"] = {
        k: _json_value(f"encoder_kwargs_[{k!r}]", v)
        for k, v in estimator.encoder_kwargs_.items()
    }
    fitted["normalizer"] = _normalizer_state(estimator.normalizer_)
    fitted["net"] = type(estimator.net_).__name__
    fitted["history"] = estimator.net_.history.to_list()
    if hasattr(estimator, "classes_"):
        fitted["classes"] = _classes_state(np.asarray(estimator.classes_))
    if hasattr(estimator, "pretrain_history_"):
        pre = estimator.pretrain_history_
        fitted["pretrain_history"] = None if pre is None else pre.to_list()
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "sktspt_version": _version(),
        "torch_version": torch.__version__,
        "estimator": name,
        "params": params,
        "fitted": fitted,
    }
    weights = {
        k: v.detach().to("cpu", copy=True).contiguous()
        for k, v in estimator.net_.module_.state_dict().items()
    }
    path = os.fspath(path)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(_META, json.dumps(meta, default=_builtin, indent=1))
            zf.writestr(_WEIGHTS, save_tensors(weights))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


# --- loading -----------------------------------------------------------------------------
def _read(path: str) -> tuple[dict, bytes]:
    bad = f"{path!r} is not a readable sktspt model file (corrupted, or another format)"
    try:
        with zipfile.ZipFile(path) as zf:
            missing = {_META, _WEIGHTS} - set(zf.namelist())
            if missing:
                raise ValueError(f"{bad}: it lacks {', '.join(sorted(missing))}.")
            meta = json.loads(zf.read(_META).decode("utf-8"))
            weights = zf.read(_WEIGHTS)
    except (zipfile.BadZipFile, zlib.error, EOFError, UnicodeDecodeError,
            json.JSONDecodeError, NotImplementedError) as exc:
        raise ValueError(f"{bad}: {exc}") from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ValueError(f"{bad}: its metadata does not describe an sktspt estimator.")
    version = meta.get("format_version")
    if version != FORMAT_VERSION:
        raise ValueError(
            f"{path!r} has file format version {version!r} (written by sktspt "
            f"{meta.get('sktspt_version', '?')}); this sktspt {_version()} reads version "
            f"{FORMAT_VERSION}. Load it with a matching sktspt version."
        )
    return meta, weights


def _usable_device(device):
    if device is None or device == "auto":
        return device
    try:
        kind = torch.device(device).type
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"Invalid device {device!r}: {exc}") from exc
    available = {"cuda": torch.cuda.is_available, "mps": torch.backends.mps.is_available}
    if kind in available and not available[kind]():
        warnings.warn(
            f"The model was saved with device={device!r}, which is not available here; "
            "loading it on 'cpu' (pass device= to load to choose).",
            UserWarning,
            stacklevel=3,
        )
        return "cpu"
    return device


def _classes(state: dict) -> np.ndarray:
    dtype = np.dtype(state["dtype"])
    if dtype.kind not in _CLASS_KINDS:
        raise ValueError(f"unsupported classes_ dtype {dtype}")
    return np.asarray(state["values"], dtype=dtype)


def _normalizer(state: dict) -> Normalizer:
    normalizer = Normalizer(state["mode"], eps=float(state["eps"]))
    if normalizer.mode == "global":
        normalizer.mean_ = np.asarray(state["mean"], dtype=np.float32)
        normalizer.std_ = np.asarray(state["std"], dtype=np.float32)
    return normalizer


def _build(meta: dict, device):
    """The estimator with its fitted state and an initialised net, weights not yet loaded."""
    classes = _estimator_classes()
    if meta.get("estimator") not in classes:
        raise ValueError(f"unknown estimator class {meta.get('estimator')!r}")
    cls = classes[meta["estimator"]]
    params = dict(meta["params"])
    unknown = set(params) - set(cls._get_param_names())
    if unknown:
        raise ValueError(
            f"parameters {sorted(unknown)} are unknown to this sktspt {_version()} "
            f"(written by {meta.get('sktspt_version', '?')})"
        )
    params["device"] = _usable_device(params.get("device", "cpu")) if device is None else device
    est = cls(**params)
    est._check_params()
    fitted = meta["fitted"]
    for name in _SHAPE_STATE:
        if name in fitted:
            value = fitted[name]
            if not isinstance(value, bool | int):
                raise ValueError(f"{name} must be an int or bool, got {value!r}")
            setattr(est, name, value)
    est.encoder_kwargs_ = dict(fitted["encoder_kwargs"])
    for key in ("n_channels", "patch_size", "max_tokens"):
        if est.encoder_kwargs_[key] != getattr(est, key + "_"):
            raise ValueError(f"encoder_kwargs_[{key!r}] disagrees with {key}_")
    est.normalizer_ = _normalizer(fitted["normalizer"])
    with est._seeded(0), warnings.catch_warnings():
        # Building the net must neither consume the caller's random numbers nor repeat
        # warnings already given at fit time.
        warnings.simplefilter("ignore", UserWarning)
        if "classes" in fitted:
            est.classes_ = _classes(fitted["classes"])
            est._label_encoder = LabelEncoder()
            est._label_encoder.classes_ = est.classes_
            net = est._finetune_net(0, np.zeros(0, dtype=np.int64), 0, phase=None)
            net.initialize()
            ph = fitted.get("pretrain_history")
            est.pretrain_history_ = None if ph is None else History(ph)
        else:
            empty = np.zeros((0, est.n_channels_, est.n_timepoints_), dtype=np.float32)
            net = est._pretrain(empty, 0, 0, None, phase=None)
    if type(net).__name__ != fitted["net"]:
        raise ValueError(f"the file holds a {fitted['net']}, but these parameters build a "
                         f"{type(net).__name__}")
    net.history = History(fitted["history"])
    # The optimizer state is not saved. Mark the fresh one as scheduled, as the saved one
    # was, so that a warm-start fit can continue the learning-rate schedule.
    for group in net.optimizer_.param_groups:
        group.setdefault("initial_lr", group["lr"])
    return est, net


def load(path: str | os.PathLike, device: str | None = None):
    """Load an estimator written by :func:`save` (or ``est.save``).

    Only JSON and safetensors are read and the class comes from a fixed list, so
    loading a file executes nothing from it. (By contrast ``pickle.load`` /
    ``joblib.load`` run code from the file: use them on files you trust only.)

    Parameters
    ----------
    path : str or path-like
        File written by :func:`save`.
    device : str or None, default=None
        Device to put the model on, e.g. ``"cpu"`` for a model trained on a GPU; it
        replaces the saved ``device`` parameter. None keeps the saved device when it is
        available here and falls back to ``"cpu"`` with a warning when it is not.

    Returns
    -------
    SPTClassifier or SPTPretrainer
        The fitted estimator; ``predict`` / ``transform`` give what they gave before
        saving.

    Raises
    ------
    ValueError
        If the file is corrupted, not an sktspt model, or of another format version.
    """
    path = os.fspath(path)
    meta, raw = _read(path)
    try:
        est, net = _build(meta, device)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        why = f"missing entry {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
        raise ValueError(f"{path!r} has invalid metadata: {why}") from exc
    try:
        weights = load_tensors(raw)
    except SafetensorError as exc:
        raise ValueError(f"{path!r} has corrupted weights: {exc}") from exc
    try:
        net.module_.load_state_dict(weights, strict=True)
    except RuntimeError as exc:
        raise ValueError(
            f"{path!r}: the weights do not fit the architecture in its metadata: {exc}"
        ) from exc
    est.net_ = net
    est.encoder_ = net.module_.encoder
    est.history_ = net.history
    return est
