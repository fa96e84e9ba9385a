"""Claiming a checkpoint folder for one fit: its fingerprint and seed in ``run.json``.

Only the fit that wrote a folder's checkpoints may resume them; any other would continue
another fit's weights on its own data. :func:`fit_fingerprint` describes what shapes a
fit's result, :func:`open_run` checks it against the folder's ``run.json``, and
:class:`RunLock` keeps a second fit out of the folder meanwhile. The checkpoints are
:mod:`sktspt.training.resume`'s.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import os

import numpy as np
import torch

from .data import InputSpec
from .persistence.format import atomic_write, lock_nb, plain
from .training.callbacks import without_checkpoint
from .training.loop import PHASE_LABELS
from .training.resume import latest_checkpoint

__all__ = ["RunLock", "fit_fingerprint", "open_run"]

RUN_FILE = "run.json"
RUN_FORMAT = 3  # 2: sktspt 0.4
LOCK_FILE = ".lock"
#: What the arrays a fit passes to :func:`fit_fingerprint` are, in their order.
ARRAY_NAMES = ("data", "labels", "unlabeled data", "sample weights")
_UNVERIFIABLE = "<cannot be fingerprinted>"


def _digest(values) -> str:
    """A SHA-256 of the dtypes, shapes and bytes of numpy arrays or tensors (None too)."""
    h = hashlib.sha256()
    for v in values:
        if v is None:
            h.update(b"none")
        elif isinstance(v, torch.Tensor):
            v = v.detach().cpu().contiguous()
            h.update(f"{v.dtype}{tuple(v.shape)}".encode())
            h.update(v.reshape(-1).view(torch.uint8).numpy().tobytes())
        else:
            v = np.ascontiguousarray(v)
            h.update(f"{v.dtype.str}{v.shape}".encode())
            h.update(v.tobytes())
    return h.hexdigest()


def _qualified(obj) -> str | None:
    name = f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', '?')}"
    return None if "<" in name or "?" in name else name


def describe(value, name: str, unverifiable: list):
    """A JSON description of ``value`` that changes when it would change a fit.

    Parts that cannot be described reliably (objects without parameters, lambdas, local
    classes) become a marker, and their names are appended to ``unverifiable``.
    """
    value = plain(value)
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, list | tuple):
        return [describe(v, f"{name}[{i}]", unverifiable) for i, v in enumerate(value)]
    if isinstance(value, dict):  # in any order, with keys of any type (class_weight)
        return {"dict": sorted([repr(plain(k)), describe(v, f"{name}[{k!r}]", unverifiable)]
                               for k, v in value.items())}
    if isinstance(value, np.ndarray):
        return {"array": _digest([value])}
    inner = getattr(value, "estimator", None)
    if type(value).__name__ == "FrozenEstimator" and inner is not None:
        return {"frozen": describe(inner, name, unverifiable)}
    cls = _qualified(type(value))
    if hasattr(value, "encoder_") and hasattr(value, "normalizer_") and cls is not None:
        # A fitted SPT estimator as a pretrainer hands on its encoder's weights, its
        # normalisation and its shape state.
        weights, normalizer = value.encoder_.state_dict(), value.normalizer_
        return {
            "class": cls, "encoder": _digest(weights[k] for k in sorted(weights)),
            "encoder_kwargs": describe(dict(value.encoder_kwargs_), name, unverifiable),
            "normalizer": describe({**normalizer.state(), "eps": float(normalizer.eps),
                                    "floor": getattr(normalizer, "floor", "absolute")},
                                   name, unverifiable),
            "shape": [getattr(value, k + "_", None) for k in InputSpec.SHAPE],
        }
    if isinstance(value, type) or inspect.isroutine(value):
        if (qualified := _qualified(value)) is not None:
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

    Each array (:data:`ARRAY_NAMES`) and every parameter and routed setting given enters,
    but ``verbose``, ``device``, ``warm_start`` and the :class:`~sktspt.ResumableCheckpoint`;
    a ``RandomState`` by the seed drawn from it.
    """
    unverifiable: list[str] = []
    fingerprint = {"estimator": type(estimator).__name__,
                   **{k: _digest([a]) for k, a in zip(ARRAY_NAMES, arrays, strict=False)}}
    for key, value in estimator.get_params(deep=False).items():
        if key in ("verbose", "device", "warm_start"):
            continue
        if key == "callbacks":
            value = without_checkpoint(value)
        if key == "random_state" and isinstance(value, np.random.RandomState):
            fingerprint[key] = {"RandomState seed": int(seed)}
        else:
            fingerprint[key] = describe(value, key, unverifiable)
    return json.loads(json.dumps(fingerprint)), unverifiable


class RunLock:
    """An exclusive ``flock`` on ``<dirname>/.lock`` while a fit uses the folder (none on
    Windows or file systems without ``flock``: :func:`~sktspt.persistence.format.lock_nb`)."""

    def __init__(self, dirname: str):
        os.makedirs(dirname, exist_ok=True)
        self._fd = os.open(os.path.join(dirname, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o666)
        if not lock_nb(self._fd):
            self.release()
            raise RuntimeError(
                f"The checkpoint folder {dirname!r} is in use by another fit. Wait for that "
                "fit to end, or give this one its own checkpoint folder."
            )

    def release(self) -> None:
        fd, self._fd = getattr(self, "_fd", None), None
        if fd is not None:
            os.close(fd)  # closing drops the flock

    __del__ = release


def open_run(dirname: str, fingerprint: dict, seed: int, unverifiable=()) -> int:
    """Claim ``dirname`` for one fit, holding its :class:`RunLock`; returns the seed to use.

    Without checkpoints in the folder (a new folder, or a first fit that failed before its
    first epoch ended) this fit takes it: ``run.json`` records its fingerprint and seed.
    With checkpoints, a fit with the same fingerprint resumes with the stored seed (so
    ``random_state=None`` resumes too); any other fit, one with parts that cannot be
    fingerprinted (``unverifiable``), and a folder without ``run.json`` are refused.
    """
    path = os.path.join(dirname, RUN_FILE)
    phases = (os.path.join(dirname, p) for p in PHASE_LABELS)
    if not any(latest_checkpoint(p)[0] for p in phases):
        os.makedirs(dirname, exist_ok=True)
        record = {"format": RUN_FORMAT, "fingerprint": fingerprint, "seed": int(seed)}
        atomic_write(path, lambda f: f.write(json.dumps(record).encode()))
        return int(seed)
    start_over = "Use a new checkpoint folder, or delete this one to start over."
    try:
        with open(path, "rb") as f:
            stored = json.load(f)
        old, fmt = stored["fingerprint"], stored.get("format")
    except FileNotFoundError:
        raise ValueError(
            f"The checkpoint folder {dirname!r} holds checkpoints but no {RUN_FILE} (the "
            "fingerprint of the fit that wrote them), so whether they belong to this fit "
            f"cannot be checked. {start_over}"
        ) from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path!r} is unreadable ({exc}). {start_over}") from exc
    if fmt != RUN_FORMAT:
        raise ValueError(f"The checkpoint folder {dirname!r} was written by sktspt 0.4; "
                         f"resume it with sktspt 0.4. {start_over}")
    if old != fingerprint:
        keys = sorted(k for k in {*old, *fingerprint} if old.get(k) != fingerprint.get(k))
        raise ValueError(
            f"The checkpoint folder {dirname!r} holds checkpoints of a different fit (differs "
            f"in: {', '.join(keys)}). Use a new checkpoint folder for each fit, or delete this "
            "one to start over."
        )
    if unverifiable:
        raise ValueError(
            f"The checkpoint folder {dirname!r} holds checkpoints, but whether they belong to "
            f"this fit cannot be checked: {', '.join(unverifiable)} cannot be fingerprinted "
            f"(give callbacks plain parameters, or use classes defined at module level). "
            f"{start_over}"
        )
    return int(stored["seed"])
