"""The file container of a saved estimator, knowing nothing of the estimators: its members,
the caps on what is read, atomic replacement (:func:`atomic_write`, also used by
checkpoints), and the checks that run before anything of the model's size is allocated
(:func:`read_meta`, :func:`read_header`, :func:`check_against_header`).
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import re
import secrets
import stat
import time
import zipfile

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None
import numpy as np
import torch

from .._bounded import loads_bounded
from .._version import __version__
from ..data import InputSpec

#: The format name and version every file states.
FORMAT = "sktspt-estimator"
FORMAT_VERSION = 1
#: The two members of a file: parameters and fitted state (JSON), and the weights.
META = "metadata.json"
WEIGHTS = "weights.safetensors"
#: Fitted integers saved beside ``InputSpec.SHAPE`` (as ``<field>_``).
SHAPE_STATE = tuple(f + "_" for f in InputSpec.SHAPE) + ("n_features_in_",)
#: Epoch counts resolved in fit (``"auto"`` becomes a number); non-negative ints.
EPOCH_STATE = ("max_epochs_", "pretrain_epochs_")
#: numpy dtype kinds that ``classes_`` may have (no objects beyond str).
CLASS_KINDS = "biufUO"
#: The estimator classes a file may hold, with the module that defines each. Saving
#: checks a class against this table without importing any (:mod:`.loading` imports them).
ESTIMATORS = {
    "SPTClassifier": "sktspt.classifier",
    "SPTPretrainer": "sktspt.pretrainer",
    "SPTRegressor": "sktspt.regressor",
}
#: Largest ``metadata.json`` read (uncompressed), and largest safetensors header.
MAX_METADATA_BYTES = 64 * 2**20
MAX_HEADER_BYTES = 16 * 2**20
MAX_MEMBERS = 8
#: JSON values the safetensors header may hold: about 8,000 tensors (an entry holds 8).
MAX_HEADER_VALUES = 2**16
#: Bytes of the ``classes_`` array a file may state (labels times the dtype's item size).
MAX_CLASSES_BYTES = 16 * 2**20
#: The caps of a model's input (``max_tokens_``, ``patch_size_``, the values of a series)
#: and of its network are :mod:`sktspt._limits`'s, which ``fit`` checks too.
#: Most bytes of weights per compressed byte a file may state (plus :data:`WEIGHTS_SLACK`):
#: fitted float weights hardly compress, so a member that states more is a zip bomb.
MAX_WEIGHTS_RATIO = 8
WEIGHTS_SLACK = 2**20
#: Largest model file read: the metadata's cap and 4 GiB of weights (a billion float32
#: parameters, far above any model these estimators fit).
MAX_FILE_BYTES = MAX_METADATA_BYTES + 4 * 2**30
#: Nesting of a training history: epochs (list), an epoch (dict), its batches (list), a
#: batch (dict), and their values.
MAX_HISTORY_DEPTH = 4



def plain(value):
    """A numpy scalar as its Python value and a path as its string; anything else as is."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value


def lock_nb(fd: int) -> bool:
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


#: Without ``fcntl`` (Windows), a temporary file counts as stale after this many seconds.
_STALE_AFTER_S = 24 * 3600


def remove_stale_temporaries(folder: str, base: str) -> None:
    """Delete temporary files of ``base`` in ``folder`` left by killed saves.

    The temporary files of this module are ``.<base>.<random>.tmp``; a live writer holds
    an exclusive ``flock`` on its file, so a file that can be locked belongs to no one.
    """
    ours = re.compile(r"^\." + re.escape(base) + r"\.[0-9a-f]{16}\.tmp$")
    try:
        entries = os.listdir(folder)
    except OSError:
        return
    for entry in entries:
        path = os.path.join(folder, entry)
        # Only regular files are ours: a FIFO of that name would block the open, a device
        # must never be removed.
        with contextlib.suppress(OSError):
            if not ours.match(entry) or not stat.S_ISREG(os.lstat(path).st_mode):
                continue
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
                         | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
            try:
                if fcntl is None:  # pragma: no cover - Windows
                    stale = time.time() - os.fstat(fd).st_mtime > _STALE_AFTER_S
                else:
                    stale = lock_nb(fd) and os.stat(path).st_ino == os.fstat(fd).st_ino
                if stale and stat.S_ISREG(os.fstat(fd).st_mode):
                    os.remove(path)
            finally:
                os.close(fd)


def fsync_dir(folder: str) -> None:
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
    replaced and the link stays. A target that exists and is not a regular file (a
    device, a FIFO) is refused with a ValueError, never replaced. Temporary files of
    killed saves are removed first (regular files only).
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path!r} is a directory; give a file name to save to.")
    target = os.path.realpath(path) if os.path.islink(path) else path
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        raise ValueError(
            f"{path!r} exists and is not a regular file (a device, FIFO or socket); saving "
            "replaces a regular file only. Give the path of a file to write."
        )
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
        if lock_nb(fd) and os.path.exists(tmp) and os.stat(tmp).st_ino == os.fstat(fd).st_ino:
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
        fsync_dir(folder)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)


class Refused(ValueError):
    """A file refused with a message that is complete without the path."""


def read_meta(zf: zipfile.ZipFile, bad: str) -> dict:
    infos = zf.infolist()
    if len(infos) > MAX_MEMBERS:
        raise Refused(f"{bad}: it has {len(infos)} members.")
    counts = collections.Counter(i.filename for i in infos)
    repeated = sorted(n for n, k in counts.items() if k > 1)
    if repeated:
        raise Refused(f"{bad}: members {repeated} occur more than once.")
    missing = {META, WEIGHTS} - set(counts)
    if missing and {"_metadata", "_obj"} <= set(counts):
        raise Refused(
            f"{bad}: it is sktime's pickle zip, as written by the save() of an sktime "
            "estimator such as SPTClassifierSktime or SPTTransformerSktime. Load it with "
            "sktime.base.load(path), which unpickles and so runs code from the file (only "
            "for files you trust). For the safe format, save the fitted core estimator "
            "with adapter.estimator_.save(path) and load that with sktspt.load(path)."
        )
    if missing:
        raise Refused(f"{bad}: it lacks {', '.join(sorted(missing))}.")
    extra = sorted(set(counts) - {META, WEIGHTS})
    if extra:
        raise Refused(
            f"{bad}: it holds members {extra[:5]} besides {META} and {WEIGHTS} (an sktspt "
            "model file holds exactly those two)."
        )
    info = zf.getinfo(META)
    if info.file_size > MAX_METADATA_BYTES:
        raise Refused(
            f"{bad}: its {META} has {info.file_size} bytes, more than the "
            f"{MAX_METADATA_BYTES} an sktspt model needs."
        )
    with zf.open(info) as f:
        raw = f.read(MAX_METADATA_BYTES + 1)
    if len(raw) > MAX_METADATA_BYTES:
        raise Refused(f"{bad}: its {META} is larger than {MAX_METADATA_BYTES} bytes.")
    try:
        meta = loads_bounded(raw, f"its {META}", MAX_METADATA_BYTES)
    except ValueError as exc:
        if isinstance(exc, json.JSONDecodeError | UnicodeDecodeError):
            raise
        raise Refused(f"{bad}: {exc}.") from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise Refused(f"{bad}: its metadata does not describe an sktspt estimator.")
    return meta


#: The first sktspt version whose files this one reads; sktspt 0.4 reads earlier ones. (0.4
#: stamped its files "0.3.0", so the shipped encoder, saved by it, reads as 0.3.)
FIRST_READ = (0, 3)


def check_version(path: str, meta: dict) -> None:
    """Refuse a file of another format version, or one saved before :data:`FIRST_READ`."""
    version, written = meta.get("format_version"), meta.get("sktspt_version", "?")
    if version != FORMAT_VERSION:
        raise Refused(
            f"{path!r} has file format version {version!r} (written by sktspt {written}); "
            f"this sktspt {__version__} reads version {FORMAT_VERSION}. Load it with "
            "a matching sktspt version."
        )
    release = re.match(r"(\d+)\.(\d+)", written) if isinstance(written, str) else None
    if release is None or tuple(map(int, release.groups())) < FIRST_READ:
        raise Refused(
            f"{path!r} was saved by sktspt {written!s:.20}; this sktspt {__version__} "
            "reads files of sktspt 0.3 and later. Load it with sktspt 0.4, which reads it."
        )


def read_header(zf: zipfile.ZipFile) -> tuple[dict, int]:
    """The safetensors header of the weights and the member size it implies.

    The header's stated length is checked against the member's own size and
    :data:`MAX_HEADER_BYTES`, and its JSON against :data:`MAX_HEADER_VALUES`, before it
    is read or parsed; its ``__metadata__`` must be a mapping of strings (as safetensors
    writes it) and every entry a dtype, a shape and two offsets.
    """
    member = zf.getinfo(WEIGHTS).file_size
    with zf.open(WEIGHTS) as f:
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


def check_against_header(module: torch.nn.Module, header: dict) -> None:
    """The architecture (built on the ``meta`` device) against the file's weights."""
    expected = module.state_dict()
    missing = sorted(set(expected) - set(header))
    extra = sorted(set(header) - set(expected))
    if missing or extra:
        raise ArchitectureMismatch(
            f"missing weights {missing[:5]}, unexpected weights {extra[:5]}"
        )
    for name, tensor in expected.items():
        entry = header[name]
        shape, dtype = entry.get("shape"), entry.get("dtype")
        if shape != list(tensor.shape) or dtype != _ST_DTYPES.get(tensor.dtype):
            raise ArchitectureMismatch(
                f"{name!r} is {dtype}{shape} in the file but the metadata's architecture "
                f"needs {_ST_DTYPES.get(tensor.dtype)}{list(tensor.shape)}"
            )


class ArchitectureMismatch(ValueError):
    pass
