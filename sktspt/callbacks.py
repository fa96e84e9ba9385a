"""skorch callbacks of the SPT estimators: a non-finite-loss guard and resumable checkpoints.

:class:`FiniteLoss` stops a diverged fit at once with advice instead of letting NaN
weights train on silently. :class:`EpochCheckpoint` is skorch's ``Checkpoint`` (params,
optimizer, criterion, history, every epoch) made safe to resume from:

- each epoch is written into a temporary folder that is renamed into place, so a
  process killed while writing leaves the previous epoch intact (skorch writes its
  files one after the other into one place);
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
    <phase>/final/          the same, written once the phase has finished
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import warnings

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from skorch.callbacks import Callback, Checkpoint, EarlyStopping
from skorch.callbacks.scoring import PassthroughScoring
from skorch.history import History

__all__ = ["FiniteLoss", "EpochCheckpoint", "open_run", "RESUME_CALLBACK"]

RESUME_CALLBACK = "resume_checkpoint"
RUN_FILE = "run.json"
RUN_FORMAT = 1
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
_EPOCH_DIR = re.compile(r"^epoch_(\d+)$")


def silent(*args, **kwargs) -> None:
    """A picklable sink that drops messages."""


class FiniteLoss(Callback):
    """Stop training with advice as soon as a batch loss is NaN or infinite.

    Once the loss is non-finite every later update is too (the weights become NaN), so
    going on only wastes time and ends in NaN predictions. The check reads the loss
    value skorch has already recorded, so it adds no device synchronisation.
    """

    def on_batch_end(self, net, batch=None, training=None, **kwargs) -> None:
        key = "train_loss" if training else "valid_loss"
        try:
            value = float(net.history[-1, "batches", -1, key])
        except KeyError:
            return
        if math.isfinite(value):
            return
        phase = "training" if training else "validation"
        raise FloatingPointError(
            f"The {phase} loss became {value} in epoch {len(net.history)}: training "
            f"diverged. Try a lower learning rate (lr={net.lr} now), keep normalize="
            "'global' or 'instance' so that inputs are standardised, and check X for "
            "extreme values."
        )


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
        super().__init__(monitor=None, dirname=dirname, sink=silent, load_best=False, **_FILES)

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
        """Write a complete checkpoint of ``net`` into ``folder`` (atomic rename)."""
        tmp = folder + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
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
        if os.path.isdir(folder):
            shutil.rmtree(folder)
        os.replace(tmp, folder)

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
        return _steps(_read_history(folder))

    def restore(self, net, folder: str) -> int:
        """Load a checkpoint into the initialised ``net``; returns the epochs it holds."""
        _read_history(folder)
        net.load_params(**{k: os.path.join(folder, v) for k, v in _FILES.items()})
        _set_rng_state(net, load_file(os.path.join(folder, _RNG)))
        with open(os.path.join(folder, _STOP_STATE)) as f:
            states = json.load(f)
        path = os.path.join(folder, _STOP_WEIGHTS)
        weights = load_file(path, device=str(net.device)) if os.path.exists(path) else {}
        self.restored_ = (states, weights)
        self._apply(net)
        # Step-seeded modules (SIGReg's directions) count steps outside their state_dict.
        for module in _modules(net):
            if isinstance(getattr(module, "n_steps", None), int):
                module.n_steps = _steps(net.history)
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


def _steps(history) -> int:
    return int(sum(row.get("train_batch_count", 0) for row in history))


def _read_history(folder: str) -> History:
    try:
        return History.from_file(os.path.join(folder, _FILES["f_history"]))
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


def open_run(dirname: str, fingerprint: dict, seed: int) -> int:
    """Claim ``dirname`` for one fit; returns the seed to use.

    The first fit writes ``run.json`` with the fingerprint of its parameters and data
    and its seed. A later fit with the same fingerprint resumes and reuses the stored
    seed (so ``random_state=None`` resumes too); one with another fingerprint raises,
    rather than silently continuing from someone else's weights.
    """
    fingerprint = json.loads(json.dumps(fingerprint))
    path = os.path.join(dirname, RUN_FILE)
    if os.path.exists(path):
        try:
            with open(path) as f:
                stored = json.load(f)
            old, stored_seed = stored["fingerprint"], int(stored["seed"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(
                f"{path!r} is unreadable ({exc}); delete checkpoint_dir to start over."
            ) from exc
        if old != fingerprint:
            keys = sorted(
                k for k in set(old) | set(fingerprint) if old.get(k) != fingerprint.get(k)
            )
            raise ValueError(
                f"checkpoint_dir={dirname!r} holds checkpoints of a different fit (differs "
                f"in: {', '.join(keys)}). Use a new checkpoint_dir for each fit, or delete "
                "this one to start over."
            )
        return stored_seed
    os.makedirs(dirname, exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"format": RUN_FORMAT, "fingerprint": fingerprint, "seed": int(seed)}, f)
    os.replace(tmp, path)
    return int(seed)
