"""Saving and loading fitted estimators in a format that loading never executes.

``pickle`` and ``joblib`` work on every estimator, but unpickling runs code chosen by
whoever wrote the file: load pickles you made yourself only. :func:`save` writes, and
:func:`load` reads, a single zip file holding nothing that can run:

``metadata.json``
    Format name and version, package versions, the estimator class (one of a fixed
    list; nothing is imported by name), its ``get_params()`` (JSON values only), the
    fitted state (shape facts, ``encoder_kwargs_``, normalisation statistics,
    ``classes_`` with their dtype or a regressor's target mean and scale, training
    histories) and the skorch net class.
``weights.safetensors``
    The state dict of ``net_.module_`` (encoder and head) in safetensors format.

Loading builds the estimator from its parameters, restores its fitted state (an
:class:`~sktspt.data.InputSpec`, the architecture, the classes) and its skorch net with
the estimator's one restoring hook (``_restore``, which builds the net as ``fit`` does),
and copies the weights in, so ``predict``, ``predict_proba`` and ``transform`` give
the same numbers as before saving. Weights are read onto the CPU and moved to the
estimator's device; a model trained on a GPU loads on a machine without one (see
``device`` in :func:`load`). The optimizer state is not saved: ``warm_start`` after
loading continues training with a fresh optimizer. See ``docs/persistence.md``.
"""

from __future__ import annotations

import collections
import contextlib
import json
import math
import os
import re
import secrets
import stat
import time
import warnings
import zipfile

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

import numpy as np
import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors
from sklearn.utils.validation import check_is_fitted
from skorch.history import History

from ._bounded import depth as _json_depth
from ._bounded import loads_bounded
from ._version import __version__
from .augment import AUGMENTS, MIXUP_KINDS
from .data import InputSpec, Normalizer

__all__ = ["save", "load", "FORMAT_VERSION"]

FORMAT = "sktspt-estimator"
FORMAT_VERSION = 1
_META = "metadata.json"
_WEIGHTS = "weights.safetensors"
#: Fitted integers saved beside ``InputSpec.SHAPE`` (as ``<field>_``).
_SHAPE_STATE = tuple(f + "_" for f in InputSpec.SHAPE) + ("n_features_in_",)
#: Epoch counts resolved in fit (``"auto"`` becomes a number); non-negative ints.
_EPOCH_STATE = ("max_epochs_", "pretrain_epochs_")
_CLASS_KINDS = "biufUO"
#: Largest ``metadata.json`` read (uncompressed), and largest safetensors header.
MAX_METADATA_BYTES = 64 * 2**20
MAX_HEADER_BYTES = 16 * 2**20
_MAX_MEMBERS = 8
#: JSON values the safetensors header may hold: about 8,000 tensors (an entry holds 8).
MAX_HEADER_VALUES = 2**16
#: Bytes of the ``classes_`` array a file may state (labels times the dtype's item size).
MAX_CLASSES_BYTES = 16 * 2**20
#: Tokens of a training-length series (``max_tokens_``) a file may state. Prediction pads
#: shorter series of an unequal-length model to this length, so a file stating 10**6 would
#: make a prediction of a few short series allocate gigabytes.
MAX_TOKENS = 2**16
#: Nesting of a training history: epochs (list), an epoch (dict), its batches (list), a
#: batch (dict), and their values.
MAX_HISTORY_DEPTH = 4
#: Nets of the two estimators, as named in ``fitted["net"]``.
_NETS = {
    "SPTClassifier": ("AugmentedNetClassifier",),
    "SPTPretrainer": ("MaskedPretrainNet", "MaskedSigRegNet", "LeJEPANet"),
    "SPTRegressor": ("AugmentedNetRegressor",),
}
#: Parameters renamed since a saved format: ``{estimator: {old: new}}``. A file written
#: before the new one existed sets it (the pretrainer's epochs were ``max_epochs`` until 0.3.0).
_RENAMED = {"SPTPretrainer": {"max_epochs": "pretrain_epochs"}}
_HINTS = {
    "pretrainer": " (the fitted weights already contain the pretrained encoder)",
    "callbacks": " (callbacks only act during fit)",
    "pretrain_callbacks": " (callbacks only act during fit)",
    "class_weight": " (class weights only act during fit)",
    "random_state": " (an int seed can be saved)",
}


def _estimator_classes() -> dict:
    from .classifier import SPTClassifier
    from .pretrainer import SPTPretrainer
    from .regressor import SPTRegressor

    return {"SPTClassifier": SPTClassifier, "SPTPretrainer": SPTPretrainer,
            "SPTRegressor": SPTRegressor}


#: Parameters added after the first saved format, with the behaviour files without them had
#: (``tokenizer`` arrived with the convolutional stem, which became the default at once;
#: ``differences`` with the difference view; ``mixup`` was 0 until its ``"auto"``).
_BEFORE_PARAMETER = {"tokenizer": "patch", "differences": 0, "mixup": 0.0, "mixup_kind": "blend",
                     "mask_ratio_spread": 0.0}


def _version() -> str:
    return __version__


# --- saving ------------------------------------------------------------------------------
def _a(noun: str) -> str:
    """``noun`` with its indefinite article: "an EarlyStopping", "a list"."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def plain(value):
    """A numpy scalar as its Python value and a path as its string; anything else as is."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value


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
    if classes.dtype.kind not in _CLASS_KINDS or not all(
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
    fitted.update({k: int(getattr(estimator, k)) for k in _EPOCH_STATE if k in vars(estimator)})
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
    blob = save_tensors(weights)

    def write(f):
        with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(_META, json.dumps(meta, default=_builtin, indent=1))
            zf.writestr(_WEIGHTS, blob)

    atomic_write(path, write)


def _lock_nb(fd: int) -> bool:
    """Take an exclusive, non-blocking ``flock`` on ``fd``; False if someone holds it."""
    if fcntl is None:  # pragma: no cover - Windows
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:  # a file system without flock: nothing to coordinate with
        return True
    return True


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. PermissionError: the process exists
        return True
    return True


#: Without ``fcntl`` (Windows), a temporary file counts as stale after this many seconds.
_STALE_AFTER_S = 24 * 3600


def remove_stale_temporaries(folder: str, base: str) -> None:
    """Delete temporary files of ``base`` in ``folder`` left by killed saves.

    The temporary files of this module are ``.<base>.<random>.tmp``; a live writer holds
    an exclusive ``flock`` on its file, so a file that can be locked belongs to no one.
    Files named ``<base>.<pid>.tmp`` (sktspt before it) go when their process is gone.
    """
    ours = re.compile(r"^\." + re.escape(base) + r"\.[0-9a-f]{16}\.tmp$")
    legacy = re.compile(r"^" + re.escape(base) + r"\.(\d+)\.tmp$")
    try:
        entries = os.listdir(folder)
    except OSError:
        return
    for entry in entries:
        path = os.path.join(folder, entry)
        with contextlib.suppress(OSError):
            if ours.match(entry):
                fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
                try:
                    if fcntl is None:  # pragma: no cover - Windows
                        stale = time.time() - os.fstat(fd).st_mtime > _STALE_AFTER_S
                    else:
                        stale = _lock_nb(fd) and os.stat(path).st_ino == os.fstat(fd).st_ino
                    if stale and stat.S_ISREG(os.fstat(fd).st_mode):
                        os.remove(path)
                finally:
                    os.close(fd)
            elif (m := legacy.match(entry)) and not _pid_alive(int(m.group(1))):
                if stat.S_ISREG(os.lstat(path).st_mode):
                    os.remove(path)


def _fsync_dir(folder: str) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write(path: str | os.PathLike, write) -> None:
    """Replace ``path`` atomically with what ``write(fileobj)`` writes.

    The data go to a temporary file with a unique name in the target's folder (so
    concurrent writers, threads included, never share one), which is fsynced and then
    renamed over the target with ``os.replace``: readers see the old file or the new
    one, never a mixture. An existing target keeps its permission bits; a new one gets
    the usual ``0o666 & ~umask``. A symbolic link is followed: the file it points to is
    replaced and the link stays. Temporary files of killed saves are removed first.
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path!r} is a directory; give a file name to save to.")
    target = os.path.realpath(path) if os.path.islink(path) else path
    folder = os.path.dirname(os.path.abspath(target))
    base = os.path.basename(target)
    remove_stale_temporaries(folder, base)
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    while True:
        tmp = os.path.join(folder, f".{base}.{secrets.token_hex(8)}.tmp")
        try:
            fd = os.open(tmp, flags, 0o666)
        except FileExistsError:
            continue
        # Lock, then check that no cleaner removed the file before the lock was taken.
        if _lock_nb(fd) and os.path.exists(tmp) and os.stat(tmp).st_ino == os.fstat(fd).st_ino:
            break
        os.close(fd)
    try:
        with os.fdopen(fd, "w+b") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
            try:
                mode = stat.S_IMODE(os.stat(target).st_mode)
            except FileNotFoundError:
                mode = None
            if mode is not None:
                os.chmod(f.fileno(), mode)
            os.replace(tmp, target)  # while still locked: no cleaner takes it meanwhile
        _fsync_dir(folder)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)


# --- loading -----------------------------------------------------------------------------
class _Refused(ValueError):
    """A file refused with a message that is complete without the path."""


def _read_meta(zf: zipfile.ZipFile, bad: str) -> dict:
    infos = zf.infolist()
    if len(infos) > _MAX_MEMBERS:
        raise _Refused(f"{bad}: it has {len(infos)} members.")
    counts = collections.Counter(i.filename for i in infos)
    repeated = sorted(n for n, k in counts.items() if k > 1)
    if repeated:
        raise _Refused(f"{bad}: members {repeated} occur more than once.")
    missing = {_META, _WEIGHTS} - set(counts)
    if missing and {"_metadata", "_obj"} <= set(counts):
        raise _Refused(
            f"{bad}: it is sktime's pickle zip, as written by the save() of an sktime "
            "estimator such as SPTClassifierSktime or SPTTransformerSktime. Load it with "
            "sktime.base.load(path), which unpickles and so runs code from the file (only "
            "for files you trust). For the safe format, save the fitted core estimator "
            "with adapter.estimator_.save(path) and load that with sktspt.load(path)."
        )
    if missing:
        raise _Refused(f"{bad}: it lacks {', '.join(sorted(missing))}.")
    extra = sorted(set(counts) - {_META, _WEIGHTS})
    if extra:
        raise _Refused(
            f"{bad}: it holds members {extra[:5]} besides {_META} and {_WEIGHTS} (an sktspt "
            "model file holds exactly those two)."
        )
    info = zf.getinfo(_META)
    if info.file_size > MAX_METADATA_BYTES:
        raise _Refused(
            f"{bad}: its {_META} has {info.file_size} bytes, more than the "
            f"{MAX_METADATA_BYTES} an sktspt model needs."
        )
    with zf.open(info) as f:
        raw = f.read(MAX_METADATA_BYTES + 1)
    if len(raw) > MAX_METADATA_BYTES:
        raise _Refused(f"{bad}: its {_META} is larger than {MAX_METADATA_BYTES} bytes.")
    try:
        meta = loads_bounded(raw, f"its {_META}", MAX_METADATA_BYTES)
    except ValueError as exc:
        if isinstance(exc, json.JSONDecodeError | UnicodeDecodeError):
            raise
        raise _Refused(f"{bad}: {exc}.") from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise _Refused(f"{bad}: its metadata does not describe an sktspt estimator.")
    return meta


def _check_version(path: str, meta: dict) -> None:
    version = meta.get("format_version")
    if version != FORMAT_VERSION:
        raise _Refused(
            f"{path!r} has file format version {version!r} (written by sktspt "
            f"{meta.get('sktspt_version', '?')}); this sktspt {_version()} reads version "
            f"{FORMAT_VERSION}. Load it with a matching sktspt version."
        )


def _read_header(zf: zipfile.ZipFile) -> tuple[dict, int]:
    """The safetensors header of the weights and the member size it implies.

    The header's stated length is checked against the member's own size and
    :data:`MAX_HEADER_BYTES`, and its JSON against :data:`MAX_HEADER_VALUES`, before it
    is read or parsed; its ``__metadata__`` must be a mapping of strings (as safetensors
    writes it) and every entry a dtype, a shape and two offsets.
    """
    member = zf.getinfo(_WEIGHTS).file_size
    with zf.open(_WEIGHTS) as f:
        prefix = f.read(8)
        if len(prefix) < 8:
            raise ValueError("the weights are shorter than a safetensors header")
        n = int.from_bytes(prefix, "little")
        if n > MAX_HEADER_BYTES:
            raise ValueError(f"a safetensors header of {n} bytes is implausible")
        if n > member - 8:
            raise ValueError(f"a safetensors header of {n} bytes does not fit in the "
                             f"{member} bytes of the weights")
        header = loads_bounded(f.read(n), "the safetensors header", MAX_HEADER_BYTES,
                               MAX_HEADER_VALUES)
    if not isinstance(header, dict):
        raise ValueError("the safetensors header is not a JSON object")
    extra = header.pop("__metadata__", None)
    if extra is not None and not (isinstance(extra, dict) and all(
            isinstance(v, str) for v in extra.values())):
        raise ValueError("the safetensors header's __metadata__ is not a mapping of strings")
    end = 0
    for name, entry in header.items():
        offsets = entry.get("data_offsets") if isinstance(entry, dict) else None
        shape = entry.get("shape") if isinstance(entry, dict) else None
        if not (isinstance(offsets, list) and len(offsets) == 2
                and all(isinstance(o, int) and o >= 0 for o in offsets)
                and isinstance(shape, list) and all(isinstance(d, int) for d in shape)
                and isinstance(entry.get("dtype"), str)):
            raise ValueError(f"the safetensors header entry {name!r} is malformed")
        end = max(end, offsets[1])
    return header, 8 + n + end


_ST_DTYPES = {
    torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
    torch.uint8: "U8", torch.bool: "BOOL",
}


def _check_against_header(module: torch.nn.Module, header: dict) -> None:
    """The architecture (built on the ``meta`` device) against the file's weights."""
    expected = module.state_dict()
    missing = sorted(set(expected) - set(header))
    extra = sorted(set(header) - set(expected))
    if missing or extra:
        raise _ArchitectureMismatch(
            f"missing weights {missing[:5]}, unexpected weights {extra[:5]}"
        )
    for name, tensor in expected.items():
        entry = header[name]
        shape, dtype = entry.get("shape"), entry.get("dtype")
        if shape != list(tensor.shape) or dtype != _ST_DTYPES.get(tensor.dtype):
            raise _ArchitectureMismatch(
                f"{name!r} is {dtype}{shape} in the file but the metadata's architecture "
                f"needs {_ST_DTYPES.get(tensor.dtype)}{list(tensor.shape)}"
            )


class _ArchitectureMismatch(ValueError):
    pass


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
    if dtype.kind not in _CLASS_KINDS:
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
    for name in _SHAPE_STATE:
        if name in fitted:
            value = fitted[name]
            if not isinstance(value, bool | int):
                raise ValueError(f"{name} must be an int or bool, got {value!r}")
            if name != "equal_length_" and (isinstance(value, bool) or value < 1):
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
            shape[name] = value
    for name in _EPOCH_STATE:
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
    encoder_kwargs = fitted["encoder_kwargs"]
    if not isinstance(encoder_kwargs, dict):
        raise ValueError("encoder_kwargs must be a mapping")
    for key, value in spec.encoder_kwargs().items():
        if encoder_kwargs[key] != value:
            raise ValueError(f"encoder_kwargs_[{key!r}] disagrees with {key}_")
    return spec, encoder_kwargs


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
            f"parameters {sorted(unknown)} are unknown to this sktspt {_version()} "
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
        net = est._restore(spec, encoder_kwargs, **targets)
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
    with open(path, "rb") as f:
        try:
            return _load(f, path, device)
        except _Refused as exc:
            raise ValueError(str(exc)) from exc
        except _ArchitectureMismatch as exc:
            raise ValueError(
                f"{path!r}: the weights do not fit the architecture in its metadata: {exc}"
            ) from exc
        except Exception as exc:
            raise ValueError(
                f"{path!r} is not a readable sktspt model file (corrupted, crafted or "
                f"another format): {type(exc).__name__}: {exc}"
            ) from exc


def _load(f, path: str, device):
    bad = f"{path!r} is not a readable sktspt model file (corrupted, or another format)"
    with zipfile.ZipFile(f) as zf:
        meta = _read_meta(zf, bad)
        _check_version(path, meta)
        try:
            header, size = _read_header(zf)
        except (ValueError, UnicodeDecodeError) as exc:
            raise _Refused(f"{path!r} has corrupted weights: {exc}") from exc
        try:
            probe, probe_net = _build(meta, device, probe=True)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            why = f"missing entry {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
            raise _Refused(f"{path!r} has invalid metadata: {why}") from exc
        _check_against_header(probe_net.module_, header)
        if zf.getinfo(_WEIGHTS).file_size != size:
            raise _Refused(
                f"{path!r} has corrupted weights: the member has "
                f"{zf.getinfo(_WEIGHTS).file_size} bytes, its header describes {size}"
            )
        del probe, probe_net
        try:
            est, net = _build(meta, device)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            why = f"missing entry {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
            raise _Refused(f"{path!r} has invalid metadata: {why}") from exc
        raw = zf.read(_WEIGHTS)
    try:
        weights = load_tensors(raw)
    except SafetensorError as exc:
        raise _Refused(f"{path!r} has corrupted weights: {exc}") from exc
    try:
        net.module_.load_state_dict(weights, strict=True)
    except RuntimeError as exc:
        raise _ArchitectureMismatch(str(exc)) from exc
    est.net_ = net
    est.encoder_ = net.module_.encoder
    est.history_ = net.history
    return est
