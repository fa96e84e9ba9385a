"""Reading a saved estimator back (:func:`load`): the one place that names the estimator
classes a file may hold.

The metadata are validated and the architecture they describe is built on torch's
``meta`` device and checked against the weights' header before anything of the model's
size is allocated; then the estimator is rebuilt from its parameters, its fitted state
restored through its ``_restore`` hook, and the weights copied in.
"""

from __future__ import annotations

import contextlib
import math
import os
import stat
import warnings
import zipfile

import numpy as np
import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_tensors
from skorch.history import History

from .._bounded import depth as _json_depth
from .._params import ARCHITECTURE, check_value
from ..augment import AUGMENTS, MIXUP_KINDS
from ..classifier import SPTClassifier
from ..data import InputSpec, Normalizer
from ..pretrainer import SPTPretrainer
from ..regressor import SPTRegressor
from .format import (
    CLASS_KINDS,
    EPOCH_STATE,
    MAX_ARCHITECTURE,
    MAX_CLASSES_BYTES,
    MAX_FILE_BYTES,
    MAX_HISTORY_DEPTH,
    MAX_PATCH_SIZE,
    MAX_SERIES_VALUES,
    MAX_TOKENS,
    MAX_WEIGHTS_RATIO,
    SHAPE_STATE,
    WEIGHTS,
    WEIGHTS_SLACK,
    ArchitectureMismatch,
    Refused,
    check_against_header,
    check_version,
    package_version,
    read_header,
    read_meta,
)

#: Nets of the estimators, as named in ``fitted["net"]``.
_NETS = {
    "SPTClassifier": ("AugmentedNetClassifier",),
    "SPTPretrainer": ("MaskedPretrainNet", "MaskedSigRegNet", "LeJEPANet"),
    "SPTRegressor": ("AugmentedNetRegressor",),
}


#: Parameters renamed since a saved format: ``{estimator: {old: new}}``. A file written
#: before the new one existed sets it (the pretrainer's epochs were ``max_epochs`` until 0.3.0).
_RENAMED = {"SPTPretrainer": {"max_epochs": "pretrain_epochs"}}


def _estimator_classes() -> dict:
    """The classes of :data:`~.format.ESTIMATORS`, by name."""
    return {cls.__name__: cls for cls in (SPTClassifier, SPTPretrainer, SPTRegressor)}


#: Parameters added after the first saved format, with the behaviour files without them had
#: (``tokenizer`` arrived with the convolutional stem, which became the default at once;
#: ``differences`` with the difference view; ``mixup`` was 0 until its ``"auto"``).
_BEFORE_PARAMETER = {"tokenizer": "patch", "differences": 0, "mixup": 0.0, "mixup_kind": "blend",
                     "mask_ratio_spread": 0.0}


def _usable_device(device):
    if device is None or device == "auto":
        return device
    try:
        kind = torch.device(device).type
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"Invalid device {device!r}: {exc}") from exc
    if kind == "meta":
        raise ValueError("device 'meta' holds no data; a model cannot be loaded onto it")
    available = {"cuda": torch.cuda.is_available, "mps": torch.backends.mps.is_available}
    if kind in available and not available[kind]():
        warnings.warn(
            f"The model was saved with device={device!r}, which is not available here; "
            "loading it on 'cpu' (pass device= to load to choose).",
            UserWarning,
            stacklevel=5,
        )
        return "cpu"
    return device


def _classes(state: dict) -> np.ndarray:
    name = state["dtype"]
    if not isinstance(name, str) or len(name) > 16:
        raise ValueError(f"classes_ dtype must be a short dtype string, got {name!r:.40}")
    dtype = np.dtype(name)
    if dtype.kind not in CLASS_KINDS:
        raise ValueError(f"unsupported classes_ dtype {dtype}")
    values = state["values"]
    if not isinstance(values, list) or not all(
        isinstance(v, bool | int | float | str) for v in values
    ):
        raise ValueError("classes_ must be a list of labels")
    # Sized before it is made: a dtype of "<U500000000" is 2 GB a label.
    if len(values) * dtype.itemsize > MAX_CLASSES_BYTES:
        raise ValueError(
            f"classes_ of {len(values)} labels of dtype {dtype} take "
            f"{len(values) * dtype.itemsize} bytes, more than the {MAX_CLASSES_BYTES} allowed"
        )
    if dtype.kind == "U" and any(len(str(v)) > dtype.itemsize // 4 for v in values):
        raise ValueError(f"classes_ dtype {dtype} is too narrow for its labels")
    classes = np.asarray(values, dtype=dtype)
    if classes.ndim != 1 or len(classes) < 2:
        raise ValueError(f"classes_ must list at least 2 labels, got {values!r}")
    if len(np.unique(classes)) != len(classes) or not np.array_equal(
        np.unique(classes), classes
    ):
        raise ValueError(
            "classes_ must be distinct and sorted, as fit stores them; got "
            f"{values[:10]!r}"
        )
    return classes


def _targets(state: dict) -> dict:
    """A regressor's ``target_mean`` and ``target_scale`` (finite; scales positive)."""
    mean, scale = state["mean"], state["scale"]
    if not (isinstance(mean, list) and isinstance(scale, list) and mean
            and len(mean) == len(scale)):
        raise ValueError("the target statistics must list one mean and one scale per output")
    numbers = [v for v in mean + scale if isinstance(v, int | float) and not isinstance(v, bool)]
    if len(numbers) != 2 * len(mean) or not np.isfinite(numbers).all():
        raise ValueError(f"the target statistics must be finite numbers: {state!r}")
    if not all(v > 0 for v in scale):
        raise ValueError(f"the target scales must be positive, got {scale!r}")
    return {"target_mean": np.asarray(mean, dtype=np.float64),
            "target_scale": np.asarray(scale, dtype=np.float64)}


def _numbers(values, n: int, name: str) -> np.ndarray:
    if not isinstance(values, list) or len(values) != n or not all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in values
    ):
        raise ValueError(f"the normaliser's {name} must list {n} numbers (one per channel)")
    array = np.asarray(values, dtype=np.float32)
    if not np.isfinite(array).all():
        raise ValueError(f"the normaliser's {name} is not finite: {values}")
    return array


def _normalizer(state: dict, n_channels: int) -> Normalizer:
    eps = state["eps"]
    if isinstance(eps, bool) or not isinstance(eps, int | float) or not 0 < eps < math.inf:
        raise ValueError(f"the normaliser's eps must be a positive number, got {eps!r}")
    # Files without "floor" were written when the floor was absolute.
    normalizer = Normalizer(state["mode"], eps=float(eps), floor=state.get("floor", "absolute"))
    if normalizer.mode == "global":
        normalizer.mean_ = _numbers(state["mean"], n_channels, "mean")
        normalizer.std_ = _numbers(state["std"], n_channels, "std")
        if not (normalizer.std_ > 0).all():
            raise ValueError(
                f"the normaliser's std must be positive, got {state['std']}"
            )
    return normalizer


def _mixup(fitted: dict, params: dict) -> float:
    """The fitted ``mixup_``; files written before ``mixup="auto"`` hold the number only
    (in ``params``, which :data:`_BEFORE_PARAMETER` completed)."""
    value = fitted.get("mixup_", params["mixup"])
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < math.inf:
        raise ValueError(f"mixup_ must be a non-negative number, got {value!r}")
    return float(value)


def _mixup_kind(fitted: dict, params: dict) -> str:
    """The fitted ``mixup_kind_``; files written before ``mixup_kind="auto"`` hold the
    kind in ``params`` only."""
    value = fitted.get("mixup_kind_", params["mixup_kind"])
    if value not in MIXUP_KINDS:
        raise ValueError(f"mixup_kind_ must be one of {MIXUP_KINDS}, got {value!r}")
    return value


def _augment_choice(fitted: dict, params: dict) -> bool | str:
    """The fitted ``augment_``; files written before ``augment="auto"`` hold ``augment``."""
    value = fitted.get("augment_", params.get("augment", False))
    if not (isinstance(value, bool) or value in AUGMENTS):
        raise ValueError(f"augment_ must be a bool or one of {AUGMENTS}, got {value!r}")
    return value


def _pseudo_labeled(fitted: dict) -> int:
    """The fitted ``n_pseudo_labeled_``: a non-negative int (0 in files written before
    ``self_training`` existed)."""
    value = fitted.get("n_pseudo_labeled_", 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"n_pseudo_labeled_ must be a non-negative integer, got {value!r}")
    return value


def _augment_evidence(fitted: dict) -> dict | None:
    """The fitted ``augment_evidence_``: None, or finite numbers under the known keys
    (``holdout_accuracy`` only in files written before ``augment="auto"`` became the screen
    alone)."""
    value = fitted.get("augment_evidence_")
    if value is None:
        return None

    def number(v) -> bool:
        return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)

    ok = (isinstance(value, dict) and set(value) <= {"alignment_gain", "holdout_accuracy"}
          and number(value.get("alignment_gain")))
    scores = value.get("holdout_accuracy", {}) if ok else None
    if not (ok and isinstance(scores, dict) and set(scores) <= {"none", "roll"}
            and all(number(v) for v in scores.values())):
        raise ValueError(f"augment_evidence_ is malformed: {value!r}")
    return value


def _input_spec(est, fitted: dict) -> tuple[InputSpec, dict]:
    """The input spec and ``encoder_kwargs`` of ``fitted``, checked; epochs set on ``est``."""
    shape = {}
    for name in SHAPE_STATE:
        if name in fitted:
            value = fitted[name]
            if not isinstance(value, bool | int):
                raise ValueError(f"{name} must be an int or bool, got {value!r}")
            if name != "equal_length_" and (isinstance(value, bool) or value < 1):
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
            shape[name] = value
    for name in EPOCH_STATE:
        if name in fitted:
            value = fitted[name]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
            setattr(est, name, value)
    if "n_features_in_" in shape:
        est.n_features_in_ = shape.pop("n_features_in_")
    spec = InputSpec(
        **{f: shape[f + "_"] for f in InputSpec.SHAPE},
        normalizer=_normalizer(fitted["normalizer"], shape["n_channels_"]),
    )
    if spec.max_tokens != math.ceil(spec.n_timepoints / spec.patch_size):
        raise ValueError("max_tokens_ disagrees with n_timepoints_ and patch_size_")
    if spec.max_tokens > MAX_TOKENS:
        raise ValueError(
            f"max_tokens_={spec.max_tokens} is more than the {MAX_TOKENS} tokens a saved "
            "model may have (prediction pads series to this length)"
        )
    if est.__dict__.get("n_features_in_", spec.n_timepoints) != spec.n_timepoints or (
            "n_features_in_" in est.__dict__ and spec.n_channels != 1):
        raise ValueError("n_features_in_ (of a model fitted on 2D input) must equal "
                         "n_timepoints_, with one channel")
    if spec.patch_size > min(spec.n_timepoints, MAX_PATCH_SIZE):
        raise ValueError(
            f"patch_size_={spec.patch_size} is more than the {MAX_PATCH_SIZE} steps a saved "
            f"model's token may have, or than its n_timepoints_={spec.n_timepoints} "
            "(prediction pads every series to a multiple of it)"
        )
    if spec.n_channels * spec.n_timepoints > MAX_SERIES_VALUES:
        raise ValueError(
            f"n_channels_ x n_timepoints_ = {spec.n_channels} x {spec.n_timepoints} is more "
            f"than the {MAX_SERIES_VALUES} values a saved model's series may have"
        )
    encoder_kwargs = fitted["encoder_kwargs"]
    if not isinstance(encoder_kwargs, dict):
        raise ValueError("encoder_kwargs must be a mapping")
    _check_architecture(encoder_kwargs)
    for key, value in spec.encoder_kwargs().items():
        if encoder_kwargs[key] != value:
            raise ValueError(f"encoder_kwargs_[{key!r}] disagrees with {key}_")
    return spec, encoder_kwargs


def _check_architecture(encoder_kwargs: dict) -> None:
    """The network fields of ``encoder_kwargs`` as ``fit`` would accept them (each value's
    constraint, ``n_heads`` dividing ``d_model``) and within :data:`MAX_ARCHITECTURE`;
    fields of files written before a field existed may be absent."""
    for name in ARCHITECTURE:
        if name not in encoder_kwargs:
            continue
        value = encoder_kwargs[name]
        try:
            check_value(name, value)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"encoder_kwargs_[{name!r}]: {exc}") from None
        if name in MAX_ARCHITECTURE and value > MAX_ARCHITECTURE[name]:
            raise ValueError(
                f"encoder_kwargs_[{name!r}]={value} is more than the "
                f"{MAX_ARCHITECTURE[name]} a saved model may have"
            )
    for name in ("d_model", "n_heads", "depth", "dim_feedforward"):
        if name not in encoder_kwargs:
            raise ValueError(f"encoder_kwargs lacks {name!r}")
    if encoder_kwargs["d_model"] % encoder_kwargs["n_heads"]:
        raise ValueError(
            f"encoder_kwargs_: d_model={encoder_kwargs['d_model']} is not divisible by "
            f"n_heads={encoder_kwargs['n_heads']}"
        )


def _history(value, name: str) -> list:
    """A training history: a list of epochs (dicts with string keys), nested at most
    :data:`MAX_HISTORY_DEPTH` deep (its length is bounded by the metadata's value count)."""
    if not isinstance(value, list) or not all(
            isinstance(e, dict) and all(isinstance(k, str) for k in e) for e in value):
        raise ValueError(f"{name} must be a list of epochs (mappings)")
    if _json_depth(value) > MAX_HISTORY_DEPTH:
        raise ValueError(f"{name} is nested more than {MAX_HISTORY_DEPTH} deep")
    return value


def _build(meta: dict, device, probe: bool = False):
    """The estimator with its fitted state and an initialised net, weights not yet loaded.

    With ``probe=True`` everything is built on torch's ``meta`` device, which allocates
    no memory, so that the architecture can be checked against the file's weights before
    anything of that size exists.
    """
    classes = _estimator_classes()
    name = meta.get("estimator")
    if name not in classes:
        raise ValueError(f"unknown estimator class {name!r}")
    cls = classes[name]
    if not isinstance(meta["params"], dict) or not isinstance(meta["fitted"], dict):
        raise ValueError("params and fitted must be mappings")
    params = dict(meta["params"])
    for old, new in _RENAMED.get(name, {}).items():
        if old in params and new not in params:
            params[new] = params.pop(old)
    unknown = set(params) - set(cls._get_param_names())
    if unknown:
        raise ValueError(
            f"parameters {sorted(unknown)} are unknown to this sktspt {package_version()} "
            f"(written by {meta.get('sktspt_version', '?')})"
        )
    # A file written before a parameter existed gets the value that reproduces how that
    # version behaved, not today's default.
    for key, before in _BEFORE_PARAMETER.items():
        if key in cls._get_param_names():
            params.setdefault(key, before)
    for key in ("pretrainer", "callbacks"):
        if params.get(key) not in (None, []):
            raise ValueError(f"{key} must be None in a saved model, got {params[key]!r}")
    if probe:
        params["device"] = "meta"
    else:
        params["device"] = (
            _usable_device(params.get("device", "cpu")) if device is None
            else _usable_device(device)
        )
    # A loaded model trains (warm start) and predicts; it never writes into the folder
    # of the fit that made it, which may belong to someone else by now.
    params["checkpoint_dir"] = None
    est = cls(**params)
    fitted = meta["fitted"]
    spec, encoder_kwargs = _input_spec(est, fitted)
    is_classifier = name == "SPTClassifier"
    supervised = name in ("SPTClassifier", "SPTRegressor")
    if supervised:
        est.mixup_ = _mixup(fitted, params)
        est.mixup_kind_ = _mixup_kind(fitted, params)
        est.n_pseudo_labeled_ = _pseudo_labeled(fitted)
    if is_classifier != ("classes" in fitted):
        raise ValueError(
            f"an {name} file must {'' if is_classifier else 'not '}hold classes"
            + (" (is it an SPTPretrainer relabelled?)" if is_classifier else "")
        )
    is_regressor = name == "SPTRegressor"
    if is_regressor != ("targets" in fitted):
        raise ValueError(f"an {name} file must {'' if is_regressor else 'not '}hold targets")
    if supervised:  # after the checks above, which name a relabelled pretrainer
        est.augment_ = _augment_choice(fitted, params)
    if is_classifier:
        est.augment_evidence_ = _augment_evidence(fitted)
    if fitted["net"] not in _NETS[name]:
        raise ValueError(f"an {name} does not train a {fitted['net']!r}")
    targets = (
        {"classes": _classes(fitted["classes"])} if is_classifier
        else _targets(fitted["targets"]) if is_regressor else {}
    )
    with torch.device("meta") if probe else contextlib.nullcontext():
        if probe:  # parameters validated on a real device; the probe then builds on meta
            est.device = "cpu"
            est._check_params()
            est.device = "meta"
        net = est._restore(spec, encoder_kwargs, check=not probe, **targets)
    if supervised:
        ph = fitted.get("pretrain_history")
        est.pretrain_history_ = None if ph is None else History(_history(ph, "pretrain_history"))
    if type(net).__name__ != fitted["net"]:
        raise ValueError(f"the file holds a {fitted['net']}, but these parameters build a "
                         f"{type(net).__name__}")
    net.history = History(_history(fitted["history"], "history"))
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

    Before anything of the model's size is allocated, the metadata are validated (sizes,
    normalisation statistics, classes) and the architecture they describe is checked
    against the shapes in the weights' header; members are read only up to fixed caps.

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
    SPTClassifier, SPTRegressor or SPTPretrainer
        The fitted estimator; ``predict`` / ``transform`` give what they gave before
        saving. Its ``checkpoint_dir`` is None: a loaded model never writes checkpoints
        into the folder of the fit that made it.

    Raises
    ------
    ValueError
        If the file is corrupted, crafted, not an sktspt model, or of another format
        version; every failure to read a file that could be opened is a ValueError.
    OSError
        If the file cannot be opened (missing, a directory, no permission).
    """
    path = os.fspath(path)
    with _open_regular(path) as f:
        try:
            return _load(f, path, device)
        except Refused as exc:
            raise ValueError(str(exc)) from exc
        except ArchitectureMismatch as exc:
            raise ValueError(
                f"{path!r}: the weights do not fit the architecture in its metadata: {exc}"
            ) from exc
        except Exception as exc:
            raise ValueError(
                f"{path!r} is not a readable sktspt model file (corrupted, crafted or "
                f"another format): {type(exc).__name__}: {exc}"
            ) from exc


def _open_regular(path: str):
    """``path`` opened for reading, refused (ValueError) unless it is a regular file no
    larger than :data:`~.format.MAX_FILE_BYTES`.

    Opened without blocking (a FIFO would wait for a writer) and checked on the open
    descriptor, so a device (``/dev/zero``), a FIFO or a socket is never read.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(
                f"{path!r} is not a regular file (a device, FIFO or socket); an sktspt model "
                "is read from a regular file only."
            )
        if info.st_size > MAX_FILE_BYTES:
            raise ValueError(
                f"{path!r} has {info.st_size} bytes, more than the {MAX_FILE_BYTES} an sktspt "
                "model file may have."
            )
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _load(f, path: str, device):
    bad = f"{path!r} is not a readable sktspt model file (corrupted, or another format)"
    with zipfile.ZipFile(f) as zf:
        meta = read_meta(zf, bad)
        check_version(path, meta)
        try:
            header, size = read_header(zf)
        except (ValueError, UnicodeDecodeError) as exc:
            raise Refused(f"{path!r} has corrupted weights: {exc}") from exc
        try:
            probe, probe_net = _build(meta, device, probe=True)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            why = f"missing entry {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
            raise Refused(f"{path!r} has invalid metadata: {why}") from exc
        check_against_header(probe_net.module_, header)
        info = zf.getinfo(WEIGHTS)
        if info.file_size > MAX_WEIGHTS_RATIO * info.compress_size + WEIGHTS_SLACK:
            raise Refused(
                f"{path!r} has implausible weights: {info.file_size} bytes stored in "
                f"{info.compress_size} compressed (fitted weights hardly compress; a zip bomb)"
            )
        if zf.getinfo(WEIGHTS).file_size != size:
            raise Refused(
                f"{path!r} has corrupted weights: the member has "
                f"{zf.getinfo(WEIGHTS).file_size} bytes, its header describes {size}"
            )
        del probe, probe_net
        try:
            est, net = _build(meta, device)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            why = f"missing entry {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
            raise Refused(f"{path!r} has invalid metadata: {why}") from exc
        raw = zf.read(WEIGHTS)
    try:
        weights = load_tensors(raw)
    except SafetensorError as exc:
        raise Refused(f"{path!r} has corrupted weights: {exc}") from exc
    try:
        net.module_.load_state_dict(weights, strict=True)
    except RuntimeError as exc:
        raise ArchitectureMismatch(str(exc)) from exc
    est.net_ = net
    est.encoder_ = net.module_.encoder
    est.history_ = net.history
    return est
