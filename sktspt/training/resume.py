"""Resuming an interrupted fit: the epoch checkpoints (claiming a folder: :mod:`sktspt.claim`).

:class:`EpochCheckpoint` is skorch's ``Checkpoint`` (params, optimizer, criterion,
history, every epoch) made safe to resume from. It reads and writes skorch internals
(``EarlyStopping``'s counters and best weights, the history's batch records), so
``pyproject.toml`` bounds skorch from above. :func:`~sktspt.claim.fit_fingerprint`
describes everything that shapes a fit, :func:`~sktspt.claim.open_run` claims a checkpoint
folder for the fit with that fingerprint, and :class:`~sktspt.claim.RunLock` keeps two
processes from using one folder at once.

- each epoch is written into a temporary folder with a unique name, its files fsynced
  and listed with their SHA-256 in ``checksums.json``, and the folder renamed into
  place, so a process killed while writing leaves the previous epoch intact (skorch
  writes its files one after the other into one place) and a damaged file is named
  when resuming;
- the random state (torch, CUDA, the mask generator) and the in-memory state of
  ``EarlyStopping`` callbacks (misses, best epoch, best weights) travel with it, so a
  resumed fit continues exactly where the interrupted one was;
- the checkpoint is loaded *before* training starts, not by skorch's ``LoadInitState``
  callback: skorch runs its default callbacks' ``on_train_begin`` before user callbacks,
  so the learning-rate scheduler and score bookkeeping would not see the restored
  history.

Layout of one training phase's folder::

    <phase>/epoch_000007/   params.pt optimizer.pt criterion.pt history.json
                            rng.safetensors early_stopping.json early_stopping.safetensors
                            checksums.json
    <phase>/final/          the same, written once the phase has finished

The folder of a fit holds ``run.json`` (fingerprint and seed, see :func:`open_run`) and
``.lock``, on which a running fit holds an exclusive ``flock``.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import tempfile
import warnings

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from skorch.callbacks import Checkpoint, EarlyStopping
from skorch.callbacks.scoring import PassthroughScoring
from skorch.history import History
from skorch.utils import noop

from .._bounded import read_json_bounded
from ..persistence.format import MAX_METADATA_BYTES, fsync_dir
from .callbacks import optimizer_steps

#: Largest ``checksums.json`` read: a few hundred bytes a checkpoint file.
_MAX_CHECKSUMS_BYTES = 2**20

__all__ = [
    "EpochCheckpoint", "RESUME_CALLBACK",
]

RESUME_CALLBACK = "resume_checkpoint"
RUN_FILE = "run.json"
RUN_FORMAT = 2
FINAL = "final"
_FILES = {
    "f_params": "params.pt",
    "f_optimizer": "optimizer.pt",
    "f_criterion": "criterion.pt",
    "f_history": "history.json",
}
_RNG = "rng.safetensors"
_STOP_STATE = "early_stopping.json"
_STOP_WEIGHTS = "early_stopping.safetensors"
_CHECKSUMS = "checksums.json"
LOCK_FILE = ".lock"
_EPOCH_DIR = re.compile(r"^epoch_(\d+)$")


def _rng_state(net) -> dict[str, torch.Tensor]:
    state = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        for i, s in enumerate(torch.cuda.get_rng_state_all()):
            state[f"cuda{i}"] = s
    generator = getattr(net, "train_generator_", None)
    if generator is not None:
        state["mask"] = generator.get_state()
    return state


def _set_rng_state(net, state: dict[str, torch.Tensor]) -> None:
    torch.set_rng_state(state["torch"])
    cuda = [state[f"cuda{i}"] for i in range(sum(k.startswith("cuda") for k in state))]
    exact = True
    if cuda and torch.cuda.is_available() and len(cuda) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(cuda)
    elif cuda or (torch.cuda.is_available() and str(net.device).startswith("cuda")):
        exact = False
    if "mask" in state:
        generator = torch.Generator(device=net.device)
        try:
            generator.set_state(state["mask"])
        except RuntimeError:
            # A mask stream saved on another kind of device: continue on a fresh one.
            seed = net.stream_seed()
            generator.manual_seed(int(seed) + len(net.history))
            exact = False
        net.train_generator_ = generator
    if not exact:
        warnings.warn(
            "Resuming on a different device than the checkpoint was written on: the "
            "random streams restart, so the resumed fit is not identical to an "
            "uninterrupted one.",
            UserWarning,
            stacklevel=4,
        )


def _modules(net):
    for attr in ("module_", "criterion_", "sigreg_"):
        value = getattr(net, attr, None)
        if isinstance(value, torch.nn.Module):
            yield from value.modules()


def _stoppers(net):
    return [(n, cb) for n, cb in net.callbacks_ if isinstance(cb, EarlyStopping)]


def stopped_early(net) -> bool:
    """Whether an ``EarlyStopping`` callback of ``net`` has run out of patience."""
    return any(getattr(cb, "misses_", 0) >= cb.patience for _, cb in _stoppers(net))


class EpochCheckpoint(Checkpoint):
    """skorch's ``Checkpoint`` of every epoch, written atomically, for resuming a fit.

    Parameters
    ----------
    dirname : str
        Folder of one training phase. Only the newest complete epoch is kept; the
        folder ``final`` marks a finished phase.
    """

    def __init__(self, dirname: str):
        super().__init__(monitor=None, dirname=dirname, sink=noop, load_best=False, **_FILES)

    def initialize(self) -> EpochCheckpoint:
        super().initialize()
        self.restored_ = None
        return self

    # --- writing ----------------------------------------------------------------------
    def save_model(self, net) -> None:
        folder = os.path.join(self.dirname, f"epoch_{len(net.history):06d}")
        self.write(net, folder)
        self._prune(keep=folder)

    def finish(self, net) -> None:
        """Write the finished phase as ``final`` and drop the per-epoch folders."""
        self.write(net, os.path.join(self.dirname, FINAL))
        self._prune(keep=os.path.join(self.dirname, FINAL))

    def write(self, net, folder: str) -> None:
        """Write a complete checkpoint of ``net`` into ``folder`` (atomic rename).

        A failure to write (a full disk, above all) leaves the previous checkpoint as it
        was and raises an ``OSError`` that says so.
        """
        os.makedirs(self.dirname, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(folder)}.", suffix=".tmp",
                               dir=self.dirname)
        try:
            self._write_files(net, tmp)
            _seal(tmp)
            if os.path.isdir(folder):
                shutil.rmtree(folder)
            os.replace(tmp, folder)
            fsync_dir(self.dirname)
        except (OSError, RuntimeError) as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            previous, _ = self.latest()
            kept = (f"the previous checkpoint {previous!r} is intact" if previous
                    else "no earlier checkpoint exists")
            code = getattr(exc, "errno", None)
            full = code in (errno.ENOSPC, errno.EDQUOT) or any(
                s in str(exc) for s in ("basic_ios", "write failed", "No space")
            )
            why = "the disk is probably full" if full else "writing failed"
            raise OSError(
                code or (errno.ENOSPC if full else errno.EIO),
                f"Could not write the checkpoint of epoch {len(net.history)} to "
                f"{folder!r}: {why} ({type(exc).__name__}: {exc}). Training stopped; "
                f"{kept}. Free space and call fit again to resume from it.",
            ) from exc
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    def _write_files(self, net, tmp: str) -> None:
        net.save_params(**{k: os.path.join(tmp, v) for k, v in _FILES.items()})
        save_file(_rng_state(net), os.path.join(tmp, _RNG))
        states, weights = {}, {}
        for name, cb in _stoppers(net):
            if not hasattr(cb, "misses_"):
                continue
            states[name] = {
                "misses": int(cb.misses_),
                "threshold": float(cb.dynamic_threshold_),
                "best_epoch": int(cb.best_epoch_),
            }
            for key, value in (cb.best_model_weights_ or {}).items():
                weights[f"{name}/{key}"] = value.detach().contiguous()
        with open(os.path.join(tmp, _STOP_STATE), "w") as f:
            json.dump(states, f)
        if weights:
            save_file(weights, os.path.join(tmp, _STOP_WEIGHTS))

    def _prune(self, keep: str) -> None:
        for entry in os.listdir(self.dirname):
            path = os.path.join(self.dirname, entry)
            if path != keep and (_EPOCH_DIR.match(entry) or entry.endswith(".tmp")):
                shutil.rmtree(path, ignore_errors=True)

    # --- reading ----------------------------------------------------------------------
    def latest(self) -> tuple[str | None, bool]:
        """The newest complete checkpoint folder (or None) and whether the phase finished."""
        if not os.path.isdir(self.dirname):
            return None, False
        final = os.path.join(self.dirname, FINAL)
        if os.path.isdir(final):
            return final, True
        epochs = sorted(
            (int(m.group(1)), e)
            for e in os.listdir(self.dirname)
            if (m := _EPOCH_DIR.match(e)) and os.path.isdir(os.path.join(self.dirname, e))
        )
        if not epochs:
            return None, False
        return os.path.join(self.dirname, epochs[-1][1]), False

    def epochs_done(self) -> int:
        """Epochs recorded in the newest checkpoint (0 without one)."""
        folder, _ = self.latest()
        return 0 if folder is None else len(_read_history(folder))

    def steps_done(self) -> int:
        """Optimizer steps recorded in the newest checkpoint (0 without one)."""
        folder, _ = self.latest()
        if folder is None:
            return 0
        return optimizer_steps(_read_history(folder))

    def restore(self, net, folder: str) -> int:
        """Load a checkpoint into the initialised ``net``; returns the epochs it holds."""
        _read_history(folder)  # verifies every checksum first
        try:
            net.load_params(**{k: os.path.join(folder, v) for k, v in _FILES.items()})
            _set_rng_state(net, load_file(os.path.join(folder, _RNG)))
            states = read_json_bounded(os.path.join(folder, _STOP_STATE), MAX_METADATA_BYTES)
            path = os.path.join(folder, _STOP_WEIGHTS)
            weights = load_file(path, device=str(net.device)) if os.path.exists(path) else {}
        except Exception as exc:
            raise ValueError(
                f"The checkpoint in {folder!r} cannot be restored ({type(exc).__name__}: "
                f"{exc}); delete {os.path.dirname(self.dirname)!r} to start this fit over."
            ) from exc
        self.restored_ = (states, weights)
        self._apply(net)
        # Step-seeded modules (SIGReg's directions) count steps outside their state_dict.
        for module in _modules(net):
            if isinstance(getattr(module, "n_steps", None), int):
                module.n_steps = optimizer_steps(net.history)
        return len(net.history)

    def on_train_begin(self, net, **kwargs) -> None:
        # EarlyStopping resets itself when training begins: give it back its state.
        if getattr(self, "restored_", None) is not None:
            self._apply(net)
            self.restored_ = None

    def _apply(self, net) -> None:
        states, weights = self.restored_
        for name, cb in _stoppers(net):
            if name not in states:
                continue
            s = states[name]
            cb.misses_ = s["misses"]
            cb.dynamic_threshold_ = s["threshold"]
            cb.best_epoch_ = s["best_epoch"]
            prefix = name + "/"
            best = {k[len(prefix):]: v for k, v in weights.items() if k.startswith(prefix)}
            cb.best_model_weights_ = best or None
        # skorch's PassthroughScoring keeps its best score only in memory.
        for _, cb in net.callbacks_:
            if not isinstance(cb, PassthroughScoring):
                continue
            marked = [i for i, row in enumerate(net.history) if row.get(f"{cb.name}_best")]
            if marked:
                cb.best_score_ = net.history[marked[-1], cb.name]


def _hash_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _seal(folder: str) -> None:
    """fsync every file of ``folder`` and list their SHA-256 in ``checksums.json``."""
    sums = {}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        with open(path, "rb+") as f:
            os.fsync(f.fileno())
        sums[name] = _hash_file(path)
    path = os.path.join(folder, _CHECKSUMS)
    with open(path, "w") as f:
        json.dump({"sha256": sums}, f)
        f.flush()
        os.fsync(f.fileno())
    fsync_dir(folder)


def verify(folder: str) -> None:
    """Raise a ValueError naming the first file of a checkpoint that is missing or damaged."""
    start_over = "delete the checkpoint folder to start this fit over."
    path = os.path.join(folder, _CHECKSUMS)
    try:
        sums = read_json_bounded(path, _MAX_CHECKSUMS_BYTES)["sha256"]
        if not isinstance(sums, dict) or not set(_FILES.values()) <= set(sums):
            raise ValueError("it does not list every checkpoint file")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(
            f"The checkpoint file {path!r} is missing or damaged ({exc}); {start_over}"
        ) from exc
    for name, digest in sums.items():
        file = os.path.join(folder, os.path.basename(str(name)))
        try:
            actual = _hash_file(file)
        except OSError as exc:
            raise ValueError(
                f"The checkpoint file {file!r} is unreadable ({exc}); {start_over}"
            ) from exc
        if actual != digest:
            raise ValueError(
                f"The checkpoint file {file!r} is damaged: its SHA-256 does not match the "
                f"one recorded when it was written (truncated, or bits flipped); {start_over}"
            )


def _read_history(folder: str) -> History:
    verify(folder)
    try:
        return History(read_json_bounded(os.path.join(folder, _FILES["f_history"]),
                                         MAX_METADATA_BYTES))
    except (OSError, ValueError) as exc:
        raise ValueError(
            f"The checkpoint in {folder!r} is unreadable ({exc}); delete the folder to "
            "start this fit over."
        ) from exc


def fingerprint_arrays(*arrays) -> str:
    """A SHA-256 of the shapes, dtypes and bytes of the given arrays (None skipped)."""
    h = hashlib.sha256()
    for a in arrays:
        if a is None:
            h.update(b"none")
            continue
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()
