"""Reading a saved estimator back (:func:`load`): the one place that names the estimator
classes a file may hold. The architecture is built on torch's ``meta`` device and checked
against the weights' header before anything of the model's size is allocated; then the
estimator is rebuilt (its ``_restore`` hook) and the weights copied in.
"""

from __future__ import annotations

import contextlib
import os
import stat
import warnings
import zipfile

import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_tensors
from skorch.history import History

from .._param_hints import CHECKPOINT, REJECTED, REMOVED, REMOVED_IN
from .._version import __version__
from ..classifier import SPTClassifier
from ..pretrained import is_encoder_name
from ..pretrainer import SPTPretrainer
from ..regressor import SPTRegressor
from .fitted import (
    read_augment,
    read_classes,
    read_history,
    read_input_spec,
    read_mixup,
    read_targets,
)
from .format import (
    MAX_FILE_BYTES,
    MAX_WEIGHTS_RATIO,
    WEIGHTS,
    WEIGHTS_SLACK,
    ArchitectureMismatch,
    Refused,
    check_against_header,
    check_version,
    read_header,
    read_meta,
)

#: Nets of the estimators, as named in ``fitted["net"]``.
_NETS = {
    "SPTClassifier": ("AugmentedNetClassifier",),
    "SPTPretrainer": ("MaskedPretrainNet", "MaskedSigRegNet", "LeJEPANet"),
    "SPTRegressor": ("AugmentedNetRegressor",),
}


#: The estimator classes of :data:`~.format.ESTIMATORS`, by name.
_CLASSES = {cls.__name__: cls for cls in (SPTClassifier, SPTPretrainer, SPTRegressor)}
#: The default of every routed setting of any estimator (their components' signatures).
_DEFAULTS = {**SPTPretrainer._routed, **SPTRegressor._routed, **SPTClassifier._routed}


def translate_params(cls, params: dict) -> dict:
    """A file's stored parameters in today's spelling: the flat names of files of 0.3 and
    0.4 as their routed settings (:data:`sktspt._param_hints.REMOVED`); dropped, the
    checkpoint folder, a ``"deprecated"`` placeholder, a rejected option at the value that
    left it off and another estimator's routed setting at its default. A model fitted with
    a rejected option (or ``augment=True``, stretching) is refused, naming the version that
    loads it."""
    out = {}
    renamed = {**REMOVED, **getattr(cls, "_removed", {})}
    for key, value in params.items():
        new = renamed.get(key, key)
        if (new == CHECKPOINT or isinstance(value, str) and value == "deprecated"
                or key in REJECTED and value == REJECTED[key]
                or new in _DEFAULTS and new not in cls._routed and value == _DEFAULTS[new]):
            continue
        if key in REJECTED or key == "augment" and (value is True or value == "stretch"):
            raise ValueError(
                f"the model was fitted with {key}={value!r}, which sktspt {REMOVED_IN} removed "
                "(the project's evidence did not support it: docs/tuning-history.md); load "
                f"it with sktspt 0.4 or earlier, which read it")
        out.setdefault(new, value)
    return out


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


def _build(meta: dict, device, probe: bool = False):
    """The estimator with its fitted state and an initialised net, weights not yet loaded.

    With ``probe=True`` everything is built on torch's ``meta`` device, which allocates
    no memory, so that the architecture can be checked against the file's weights before
    anything of that size exists.
    """
    name = meta.get("estimator")
    if name not in _CLASSES:
        raise ValueError(f"unknown estimator class {name!r}")
    cls = _CLASSES[name]
    if not isinstance(meta["params"], dict) or not isinstance(meta["fitted"], dict):
        raise ValueError("params and fitted must be mappings")
    params = translate_params(cls, meta["params"])
    names = {*cls._get_param_names(), *cls._routed}
    unknown = set(params) - names
    if unknown:
        raise ValueError(
            f"parameters {sorted(unknown)} are unknown to this sktspt {__version__} "
            f"(written by {meta.get('sktspt_version', '?')})"
        )
    # A setting at today's default counts as not given, as in the estimator that was saved.
    params = {k: v for k, v in params.items() if not (
        k in cls._routed and type(v) is type(cls._routed[k]) and v == cls._routed[k])}
    if params.get("callbacks") not in (None, []):
        raise ValueError(f"callbacks must be None in a saved model, got {params['callbacks']!r}")
    # A shipped encoder's name may stay: the weights already hold what it started from.
    # A name, never a path: a refit (clone(m).fit) would read that file.
    if params.get("pretrainer") is not None and not is_encoder_name(params["pretrainer"]):
        raise ValueError("pretrainer must be None or a shipped encoder's name (letters, "
                         f"digits, _ and -) in a saved model, got {params['pretrainer']!r:.80}")
    if probe:
        params["device"] = "meta"
    else:
        params["device"] = (
            _usable_device(params.get("device", "cpu")) if device is None
            else _usable_device(device)
        )
    est = cls(**params)
    fitted = meta["fitted"]
    spec, encoder_kwargs = read_input_spec(est, fitted)
    is_classifier, is_regressor = name == "SPTClassifier", name == "SPTRegressor"
    supervised = is_classifier or is_regressor
    for key, own in (("classes", is_classifier), ("targets", is_regressor)):
        if own != (key in fitted):  # a file relabelled as another estimator's
            raise ValueError(f"an {name} file must {'' if own else 'not '}hold {key}")
    if supervised:  # after the checks above, which name a relabelled file
        est.mixup_, est.mixup_kind_ = read_mixup(fitted)
        est.augment_, evidence = read_augment(fitted)
        if is_classifier:
            est.augment_evidence_ = evidence
    if fitted["net"] not in _NETS[name]:
        raise ValueError(f"an {name} does not train a {fitted['net']!r}")
    targets = (
        {"classes": read_classes(fitted["classes"])} if is_classifier
        else read_targets(fitted["targets"]) if is_regressor else {}
    )
    with torch.device("meta") if probe else contextlib.nullcontext():
        if probe:  # parameters validated on a real device; the probe then builds on meta
            est.device = "cpu"
            est._check_params()
            est.device = "meta"
        net = est._restore(spec, encoder_kwargs, check=not probe, **targets)
    if supervised:
        ph = fitted.get("pretrain_history")
        est.pretrain_history_ = (None if ph is None
                                 else History(read_history(ph, "pretrain_history")))
    if type(net).__name__ != fitted["net"]:
        raise ValueError(f"the file holds a {fitted['net']}, but these parameters build a "
                         f"{type(net).__name__}")
    net.history = History(read_history(fitted["history"], "history"))
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
    path : str, path-like or binary file object
        File written by :func:`save` (or its bytes, opened).
    device : str or None, default=None
        Device to put the model on, e.g. ``"cpu"`` for a model trained on a GPU; it
        replaces the saved ``device`` parameter. None keeps the saved device when it is
        available here and falls back to ``"cpu"`` with a warning when it is not.

    Returns
    -------
    SPTClassifier, SPTRegressor or SPTPretrainer
        The fitted estimator; ``predict`` / ``transform`` give what they gave before
        saving. Its ``callbacks`` hold no :class:`~sktspt.ResumableCheckpoint`: a loaded
        model never writes checkpoints into the folder of the fit that made it.

    Raises
    ------
    ValueError
        If the file is corrupted, crafted, not an sktspt model, or of another format
        version; every failure to read a file that could be opened is a ValueError.
    OSError
        If the file cannot be opened (missing, a directory, no permission).
    """
    if hasattr(path, "read"):  # an open binary file (a shipped encoder's checked bytes)
        return _load_named(path, str(getattr(path, "name", "<file>")), device)
    path = os.fspath(path)
    with _open_regular(path) as f:
        return _load_named(f, path, device)


def _load_named(f, path: str, device):
    """:func:`_load`, every failure to read a ValueError naming ``path``."""
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
        check_against_header(_checked_build(path, meta, device, probe=True)[1].module_, header)
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
        est, net = _checked_build(path, meta, device)
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


def _checked_build(path: str, meta: dict, device, probe: bool = False):
    """:func:`_build`, a failure on the metadata :class:`~.format.Refused` naming ``path``."""
    try:
        return _build(meta, device, probe)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        why = f"missing entry {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
        raise Refused(f"{path!r} has invalid metadata: {why}") from exc
