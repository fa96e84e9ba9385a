"""Claiming a checkpoint folder for one fit: its fingerprint, the folder's lock, ``run.json``.

A fit with a ``ResumableCheckpoint`` takes the folder's lock (:class:`RunLock`) and
compares the fingerprint of everything that shapes its result (:func:`fit_fingerprint`)
with the one the folder's ``run.json`` recorded (:func:`open_run`): only the fit that wrote
a checkpoint ever resumes it. The checkpoints themselves are :mod:`sktspt.training.resume`'s.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import math
import os
import warnings

import numpy as np
import torch

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

from ._bounded import read_json_bounded
from .data import InputSpec
from .persistence.format import MAX_METADATA_BYTES, atomic_write, plain
from .training.callbacks import without_checkpoint
from .training.resume import _EPOCH_DIR, FINAL, LOCK_FILE, RUN_FILE, RUN_FORMAT, fingerprint_arrays

__all__ = ["RunLock", "differing_parts", "fit_fingerprint", "has_checkpoints", "open_run"]

#: What the arrays a fit passes to :func:`fit_fingerprint` are, in their order.
ARRAY_NAMES = ("data", "labels", "unlabeled data", "sample weights")
#: Fingerprint key of the arrays' own digests (absent from run.json of sktspt before it).
_PARTS = "data parts"
_UNVERIFIABLE = "<cannot be fingerprinted>"


def _tensor_digest(state: dict) -> str:
    h = hashlib.sha256()
    for key in sorted(state):
        t = state[key].detach().to("cpu").contiguous()
        h.update(f"{key}{t.dtype}{tuple(t.shape)}".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def _qualified(obj) -> str | None:
    name = f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', '?')}"
    return None if "<" in name or "?" in name else name


def describe(value, name: str, unverifiable: list):
    """A JSON description of ``value`` that changes when it would change a fit.

    Parts that cannot be described reliably (objects without parameters, lambdas, local
    classes) are replaced by a marker and their names appended to ``unverifiable``.
    """
    value = plain(value)
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, list | tuple):
        return [describe(v, f"{name}[{i}]", unverifiable) for i, v in enumerate(value)]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: describe(v, f"{name}[{k!r}]", unverifiable) for k, v in value.items()}
    if isinstance(value, dict):  # e.g. class_weight={0: 1.0, 1: 2.0}
        items = [[describe(k, f"{name} key", unverifiable),
                  describe(v, f"{name}[{k!r}]", unverifiable)] for k, v in value.items()]
        return {"dict": sorted(items, key=repr)}
    if isinstance(value, np.ndarray):
        return {"array": fingerprint_arrays(value)}
    if isinstance(value, np.random.RandomState):
        return {"RandomState": fingerprint_arrays(*value.get_state()[1:3])}
    inner = getattr(value, "estimator", None)
    if type(value).__name__ == "FrozenEstimator" and inner is not None:
        return {"frozen": describe(inner, name, unverifiable)}
    cls = _qualified(type(value))
    if hasattr(value, "encoder_") and hasattr(value, "normalizer_") and cls is not None:
        # A fitted SPT estimator used as a pretrainer: what it hands on is its encoder's
        # weights, its normalisation and its shape state.
        normalizer = value.normalizer_
        return {
            "class": cls,
            "encoder": _tensor_digest(value.encoder_.state_dict()),
            "encoder_kwargs": describe(dict(value.encoder_kwargs_), name, unverifiable),
            "normalizer": describe(
                {**normalizer.state(), "eps": float(normalizer.eps),
                 "floor": getattr(normalizer, "floor", "absolute")}, name, unverifiable),
            "shape": [getattr(value, k + "_", None) for k in InputSpec.SHAPE],
        }
    if isinstance(value, type) or inspect.isroutine(value):
        qualified = _qualified(value)
        if qualified is not None:
            return {"callable": qualified}
    elif cls is not None and callable(getattr(value, "get_params", None)):
        # A skorch callback or scikit-learn object: its class and parameters.
        try:
            params = value.get_params(deep=False)
        except Exception:  # noqa: BLE001 - anything that cannot report its parameters
            params = None
        if isinstance(params, dict):
            return {"class": cls, "params": describe(params, name, unverifiable)}
    unverifiable.append(name)
    return _UNVERIFIABLE


def fit_fingerprint(estimator, seed: int, arrays) -> tuple[dict, list[str]]:
    """The fingerprint of one fit of ``estimator`` on ``arrays``, and its unverifiable parts.

    Every parameter and routed setting given enters except ``verbose``, ``device`` and
    ``warm_start``: a pretrainer by its encoder weights, normalisation and shape state;
    callbacks, but for the :class:`~sktspt.ResumableCheckpoint`, by class and parameters; a
    ``RandomState`` by the seed drawn from it.
    """
    skip = ("verbose", "device", "warm_start")
    unverifiable: list[str] = []
    fingerprint = {"estimator": type(estimator).__name__, "data": fingerprint_arrays(*arrays)}
    # Each array on its own as well, so that a refusal names the one that differs.
    fingerprint[_PARTS] = {name: fingerprint_arrays(a)
                           for name, a in zip(ARRAY_NAMES, arrays, strict=False)}
    for key, value in estimator.get_params(deep=False).items():
        if key in skip:
            continue
        if key == "callbacks":
            value = without_checkpoint(value)
        if key == "random_state" and isinstance(value, np.random.RandomState):
            fingerprint[key] = {"RandomState seed": int(seed)}
        else:
            fingerprint[key] = describe(value, key, unverifiable)
    return json.loads(json.dumps(fingerprint)), unverifiable


def has_checkpoints(dirname: str) -> bool:
    """Whether any phase folder of ``dirname`` holds a complete checkpoint."""
    try:
        phases = [os.path.join(dirname, p) for p in os.listdir(dirname)]
    except OSError:
        return False
    for phase in phases:
        if not os.path.isdir(phase):
            continue
        for entry in os.listdir(phase):
            if (entry == FINAL or _EPOCH_DIR.match(entry)) and os.path.isdir(
                os.path.join(phase, entry)
            ):
                return True
    return False


class RunLock:
    """An exclusive ``flock`` on ``<dirname>/.lock``, held while a fit uses the folder."""

    def __init__(self, dirname: str):
        os.makedirs(dirname, exist_ok=True)
        self.path = os.path.join(dirname, LOCK_FILE)
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0),
                           0o666)
        if fcntl is None:  # pragma: no cover - Windows: no lock
            return
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._refuse(dirname)
        except OSError as exc:  # e.g. ENOLCK: a file system without flock
            warnings.warn(
                f"The checkpoint folder {dirname!r} cannot be locked ({exc}); make sure "
                "no other fit uses it at the same time.",
                UserWarning,
                stacklevel=4,
            )
            return
        with contextlib.suppress(OSError):  # who holds it, for the message of others
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, str(os.getpid()).encode(), 0)

    def _refuse(self, dirname: str):
        try:
            holder = os.pread(self._fd, 64, 0).decode(errors="replace").strip()
        except OSError:
            holder = ""
        self.release()
        who = f" (process {holder})" if holder else ""
        raise RuntimeError(
            f"The checkpoint folder {dirname!r} is in use by another fit{who}. Two fits "
            "cannot share a checkpoint folder: wait for that fit to end, or give this "
            "one its own checkpoint folder."
        ) from None

    def release(self) -> None:
        fd, self._fd = getattr(self, "_fd", None), None
        if fd is not None:
            os.close(fd)  # closing drops the flock

    def __del__(self):
        self.release()


def differing_parts(old: dict, new: dict) -> list[str]:
    """The keys in which two fit fingerprints differ, the data named by their arrays
    (``labels`` rather than ``data`` when only the labels changed)."""
    keys = {k for k in set(old) | set(new) if old.get(k) != new.get(k)}
    parts_old, parts_new = old.get(_PARTS), new.get(_PARTS)
    if isinstance(parts_old, dict) and isinstance(parts_new, dict):
        keys -= {"data", _PARTS}
        keys |= {k for k in set(parts_old) | set(parts_new)
                 if parts_old.get(k) != parts_new.get(k)}
    return sorted(keys)


def open_run(dirname: str, fingerprint: dict, seed: int, unverifiable=()) -> int:
    """Claim ``dirname`` for one fit; returns the seed to use.

    Call it while holding the folder's :class:`RunLock`. The first fit writes
    ``run.json`` with the fingerprint of its parameters and data and its seed. A later fit
    with the same fingerprint resumes and reuses the stored seed (so ``random_state=None``
    resumes too); one with another fingerprint raises, rather than silently continuing
    from someone else's weights. Without any checkpoint in the folder (a first fit that
    failed before its first epoch ended) there is nothing to resume: the new fit takes
    the folder over. Checkpoints without ``run.json`` are refused (nothing says whose they
    are). With checkpoints and parts of the fit that cannot be fingerprinted
    (``unverifiable``), resuming is refused, as it cannot be checked.
    """
    fingerprint = json.loads(json.dumps(fingerprint))
    path = os.path.join(dirname, RUN_FILE)
    if not os.path.isfile(path) and has_checkpoints(dirname):
        # Without the fingerprint nothing says whose checkpoints these are: resuming them
        # could continue another fit's network with this fit's data.
        raise ValueError(
            f"The checkpoint folder {dirname!r} holds checkpoints but no {RUN_FILE} (the "
            "fingerprint of the fit that wrote them), so whether they belong to this fit "
            "cannot be checked. Use a new checkpoint folder, or delete this one to "
            "start over."
        )
    if has_checkpoints(dirname):
        try:
            stored = read_json_bounded(path, MAX_METADATA_BYTES)
            old, stored_seed = stored["fingerprint"], int(stored["seed"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(
                f"{path!r} is unreadable ({exc}); delete the checkpoint folder to start "
                "over."
            ) from exc
        if _PARTS not in old:  # written before the arrays had digests of their own
            fingerprint.pop(_PARTS, None)
        if old != fingerprint:
            keys = differing_parts(old, fingerprint)
            raise ValueError(
                f"The checkpoint folder {dirname!r} holds checkpoints of a different fit "
                f"(differs in: {', '.join(keys)}). Use a new checkpoint folder for each "
                "fit, or delete this one to start over."
            )
        if unverifiable:
            raise ValueError(
                f"The checkpoint folder {dirname!r} holds checkpoints, but whether they "
                f"belong to this fit cannot be checked: {', '.join(unverifiable)} cannot be "
                "fingerprinted (give callbacks plain parameters, or use classes defined at "
                "module level). Use a new checkpoint folder, or delete this one to "
                "start over."
            )
        return stored_seed
    os.makedirs(dirname, exist_ok=True)
    record = {"format": RUN_FORMAT, "fingerprint": fingerprint, "seed": int(seed)}
    atomic_write(path, lambda f: f.write(json.dumps(record).encode()))
    return int(seed)
