"""Resuming an interrupted fit: skorch's ``Checkpoint`` of every epoch, written whole.

:class:`EpochCheckpoint` is skorch's ``Checkpoint`` with ``monitor=None`` (params,
optimizer, criterion and history, every epoch) plus ``state.pt``: the random streams
(torch's, the mask generator's) and what skorch's callbacks keep only in memory
(``EarlyStopping``'s misses, best epoch and best weights; ``PassthroughScoring``'s best
score), so a resumed fit continues exactly where the interrupted one was. Writing that
state back into skorch's callbacks is why ``pyproject.toml`` bounds skorch from above.

Each epoch is written into ``<phase>/.partial`` and renamed to ``<phase>/epoch_NNNNNN``
(skorch writes its files one after the other into one place), so a process killed while
writing leaves the previous epoch whole; ``<phase>/final`` marks a finished phase. Which
fit a folder belongs to is :mod:`sktspt.claim`'s.

The checkpoint is restored before ``partial_fit``, not by skorch's ``LoadInitState``: the
trainer needs the epochs left (and whether the phase finished) before training starts,
the optimizer state must be back before ``LRScheduler`` builds its schedule, and
``EarlyStopping`` resets itself in ``on_train_begin`` anyway.
"""

from __future__ import annotations

import os
import re
import shutil
import warnings

import torch
from skorch.callbacks import Checkpoint, EarlyStopping
from skorch.callbacks.scoring import PassthroughScoring
from skorch.history import History

from .callbacks import optimizer_steps

__all__ = ["EpochCheckpoint", "RESUME_CALLBACK", "latest_checkpoint", "stopped_early"]

RESUME_CALLBACK = "resume_checkpoint"
FINAL = "final"
_FILES = {"f_params": "params.pt", "f_optimizer": "optimizer.pt",
          "f_criterion": "criterion.pt", "f_history": "history.json"}
_STATE = "state.pt"
_PARTIAL = ".partial"
_EPOCH = re.compile(r"^epoch_\d{6}$")  # fixed width: sorted by name is sorted by epoch


def latest_checkpoint(dirname: str) -> tuple[str | None, bool]:
    """The newest complete checkpoint in a phase's folder (or None), and whether it is final."""
    names = os.listdir(dirname) if os.path.isdir(dirname) else []
    if FINAL in names:
        return os.path.join(dirname, FINAL), True
    epochs = sorted(n for n in names if _EPOCH.match(n))
    return (os.path.join(dirname, epochs[-1]) if epochs else None), False


def _stoppers(net):
    return [(n, cb) for n, cb in net.callbacks_ if isinstance(cb, EarlyStopping)]


def stopped_early(net) -> bool:
    """Whether an ``EarlyStopping`` callback of ``net`` has run out of patience."""
    return any(getattr(cb, "misses_", 0) >= cb.patience for _, cb in _stoppers(net))


def _state(net) -> dict:
    generator = getattr(net, "train_generator_", None)
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "mask": None if generator is None else generator.get_state(),
        "early_stopping": {
            name: {"misses_": int(cb.misses_), "dynamic_threshold_": float(cb.dynamic_threshold_),
                   "best_epoch_": int(cb.best_epoch_),
                   "best_model_weights_": cb.best_model_weights_}
            for name, cb in _stoppers(net) if hasattr(cb, "misses_")
        },
    }


def _set_rng_state(net, state: dict) -> None:
    torch.set_rng_state(state["torch"])
    exact = True
    if torch.cuda.is_available() and len(state["cuda"]) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(state["cuda"])
    elif state["cuda"] or torch.device(net.device).type == "cuda":
        exact = False
    if state["mask"] is not None:
        generator = torch.Generator(device=net.device)
        try:
            generator.set_state(state["mask"])
        except RuntimeError:  # a stream saved on another kind of device: a fresh one
            generator.manual_seed(int(net.stream_seed()) + len(net.history))
            exact = False
        net.train_generator_ = generator
    if not exact:
        warnings.warn(
            "Resuming on a different device than the checkpoint was written on: the random "
            "streams restart, so the resumed fit is not identical to an uninterrupted one.",
            UserWarning, stacklevel=4,
        )


class EpochCheckpoint(Checkpoint):
    """skorch's ``Checkpoint`` of every epoch, written whole, for resuming a fit.

    Parameters
    ----------
    dirname : str
        Folder of one training phase; it keeps the newest complete epoch, and ``final``
        once the phase has finished.
    """

    def __init__(self, dirname: str):
        super().__init__(monitor=None, dirname=dirname, **_FILES)

    def initialize(self) -> EpochCheckpoint:
        super().initialize()
        self.restored_ = None
        return self

    def save_model(self, net) -> None:
        self.write(net, f"epoch_{len(net.history):06d}")

    def finish(self, net) -> None:
        """Write the finished phase as ``final`` (dropping the epochs)."""
        self.write(net, FINAL)

    def write(self, net, name: str) -> None:
        """Write a checkpoint of ``net`` as ``dirname/name``, then drop the older epochs.

        A failure to write (a full disk, above all) leaves the previous checkpoint whole and
        raises an ``OSError`` that says so.
        """
        tmp, folder = os.path.join(self.dirname, _PARTIAL), os.path.join(self.dirname, name)
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            os.makedirs(tmp)
            net.save_params(**{k: os.path.join(tmp, v) for k, v in _FILES.items()})
            torch.save(_state(net), os.path.join(tmp, _STATE))
        except (OSError, RuntimeError) as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            previous, _ = latest_checkpoint(self.dirname)
            raise OSError(
                f"Could not write the checkpoint of epoch {len(net.history)} to {folder!r} "
                f"({type(exc).__name__}: {exc}); is the disk full? Training stopped; "
                + (f"the previous checkpoint {previous!r} is kept: free space and call fit "
                   "again to resume from it." if previous else "no earlier checkpoint exists.")
            ) from exc
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp, folder)
        for entry in os.listdir(self.dirname):
            if entry != name and _EPOCH.match(entry):
                shutil.rmtree(os.path.join(self.dirname, entry), ignore_errors=True)

    def latest(self) -> tuple[str | None, bool]:
        """The newest complete checkpoint folder (or None) and whether the phase finished."""
        return latest_checkpoint(self.dirname)

    def _history(self) -> History | list:
        folder, _ = self.latest()
        if folder is None:
            return []
        path = os.path.join(folder, _FILES["f_history"])
        return _load(path, lambda: History.from_file(path))

    def epochs_done(self) -> int:
        """Epochs recorded in the newest checkpoint (0 without one)."""
        return len(self._history())

    def steps_done(self) -> int:
        """Optimizer steps recorded in the newest checkpoint (0 without one)."""
        return optimizer_steps(self._history())

    def restore(self, net, folder: str) -> int:
        """Load a checkpoint into the initialised ``net``; returns the epochs it holds."""
        for key, name in _FILES.items():
            path = os.path.join(folder, name)
            _load(path, lambda key=key, path=path: net.load_params(**{key: path}))
        path = os.path.join(folder, _STATE)
        state = _load(path, lambda: torch.load(path, map_location="cpu", weights_only=True))
        _set_rng_state(net, state)
        self.restored_ = state["early_stopping"]
        self._apply(net)
        # Step-seeded modules (SIGReg's directions) count steps outside their state_dict.
        for attr in ("module_", "criterion_", "sigreg_"):
            root = getattr(net, attr, None)
            for module in root.modules() if isinstance(root, torch.nn.Module) else ():
                if isinstance(getattr(module, "n_steps", None), int):
                    module.n_steps = optimizer_steps(net.history)
        return len(net.history)

    def on_train_begin(self, net, **kwargs) -> None:
        # EarlyStopping resets itself when training begins: give it back its state.
        if getattr(self, "restored_", None) is not None:
            self._apply(net)
            self.restored_ = None

    def _apply(self, net) -> None:
        for name, cb in _stoppers(net):
            vars(cb).update(self.restored_.get(name, {}))
        # skorch's PassthroughScoring keeps its best score only in memory.
        for _, cb in net.callbacks_:
            if isinstance(cb, PassthroughScoring):
                marked = [i for i, row in enumerate(net.history) if row.get(f"{cb.name}_best")]
                if marked:
                    cb.best_score_ = net.history[marked[-1], cb.name]


def _load(path: str, load):
    """``load()``, or a ValueError naming the checkpoint file ``path`` that it could not read."""
    try:
        return load()
    except Exception as exc:
        raise ValueError(
            f"The checkpoint file {path!r} is missing or damaged ({type(exc).__name__}: {exc}); "
            "delete the checkpoint folder to start this fit over."
        ) from exc
