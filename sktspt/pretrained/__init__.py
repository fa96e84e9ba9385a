"""Encoders pretrained once on a corpus and shipped with the package, to fine-tune from.

Self-pretraining on a task's own few hundred series adds little (``docs/tuning.md``); the
literature's gains come where pretraining sees far more series than the task. An encoder
pretrained on a corpus ships here as a saved :class:`~sktspt.SPTPretrainer` beside its
model card (data, objective, steps, size, the data's licence, SHA-256, the command that
rebuilds it). :func:`pretrained` returns it fitted, in
:class:`sklearn.frozen.FrozenEstimator` (so it survives ``clone``), for the estimators'
``pretrainer`` parameter or for embeddings::

    from sktspt import SPTClassifier
    from sktspt.pretrained import pretrained

    clf = SPTClassifier(pretrainer=pretrained("archive")).fit(X, y)
    Z = pretrained("archive").transform(X)          # embeddings, nothing fitted

An encoder fixes the network and the input handling (one channel: a classifier started
from it takes univariate series). The encoders are built by
``benchmarks/pretrain_archive.py``.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
from pathlib import Path

__all__ = ["FINETUNE_STEPS", "available", "pretrained", "card"]

#: The folder the shipped encoders lie in (this package's own).
FOLDER = Path(__file__).resolve().parent

#: Optimizer steps of ``"auto"`` fine-tuning from a shipped encoder (by name): the smallest
#: budget within half a point of the best on ten problems' training splits
#: (``docs/pretrained.md``).
FINETUNE_STEPS = 1000

#: What an encoder's name may be: a name, never a path (letters, digits, ``_`` and ``-``).
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
#: Largest model card read (the shipped one has 3 kB).
MAX_CARD_BYTES = 2**20


def is_encoder_name(value) -> bool:
    """Whether ``value`` has the form of an encoder's name (:data:`NAME`)."""
    return isinstance(value, str) and NAME.fullmatch(value) is not None


def available() -> list[str]:
    """Names of the encoders shipped in this installation: ``<name>.sktspt`` files with their
    model card ``<name>.json``, both regular files inside this package's folder."""
    return sorted(p.stem for p in FOLDER.glob("*.sktspt")
                  if is_encoder_name(p.stem) and _inside(p) and _inside(p.with_suffix(".json")))


def _inside(path: Path) -> bool:
    """Whether ``path`` is a regular file that resolves inside :data:`FOLDER`."""
    try:
        return path.is_file() and path.resolve(strict=True).parent == FOLDER.resolve()
    except (OSError, RuntimeError):  # a symlink loop
        return False


def _shipped(name) -> Path:
    """The encoder file of ``name``, one of :func:`available`; else a ValueError."""
    if not is_encoder_name(name) or name not in available():
        raise ValueError(_unknown(name))
    return FOLDER / f"{name}.sktspt"


def card(name: str = "archive") -> dict:
    """The model card of a shipped encoder (``<name>.json``), a dict."""
    from .._bounded import read_json_bounded

    path = _shipped(name).with_suffix(".json")
    try:
        info = read_json_bounded(path, MAX_CARD_BYTES)
    except ValueError as exc:  # too large, not UTF-8, not JSON (an empty file, a BOM)
        raise ValueError(f"the model card {path} is unreadable ({exc}); reinstall the "
                         "package.") from None
    if not isinstance(info, dict):
        raise ValueError(f"the model card {path} holds a {type(info).__name__}, not a JSON "
                         "object; reinstall the package.")
    return info


def _unknown(name) -> str:
    have = available()
    text = str(name)
    path_hint = ("" if not (Path(text[:255]).suffix or os.sep in text) else
                 " To start from a saved file, pass the fitted pretrainer itself: "
                 "pretrainer=FrozenEstimator(sktspt.load(path)) (joblib.load for a pickle).")
    return (f"no pretrained encoder named {name!r:.80} in {FOLDER}; "
            + (f"available: {', '.join(have)}." if have else
               "none is shipped in this installation yet: build one with "
               "`python benchmarks/pretrain_archive.py --data-dir <UCR 2018 archive> "
               "--output sktspt/pretrained/archive.sktspt` from a clone.") + path_hint)


def sha256(path: str | os.PathLike) -> str:
    """The SHA-256 of a file, as its model card records it."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def pretrained(name: str = "archive", *, path: str | os.PathLike | None = None):
    """A shipped pretrained encoder, fitted, as ``FrozenEstimator(SPTPretrainer)``.

    Parameters
    ----------
    name : str, default="archive"
        Which shipped encoder (:func:`available`); a ValueError if none is, or if the
        file's SHA-256 differs from its model card's.
    path : path-like, optional
        Load this saved ``SPTPretrainer`` file instead.
    """
    from sklearn.frozen import FrozenEstimator

    from .. import load
    from ..pretrainer import SPTPretrainer

    if path is None:
        path = _shipped(name)
        encoder = load(_checked_bytes(path, card(name).get("sha256")))
    else:
        encoder = load(path)
    if not isinstance(encoder, SPTPretrainer):
        raise ValueError(f"{path} holds a {type(encoder).__name__}, not an SPTPretrainer.")
    return FrozenEstimator(encoder)


def _checked_bytes(path: Path, expected) -> io.BytesIO:
    """The bytes of ``path``, read once (the bytes checked are the bytes loaded), if their
    SHA-256 is ``expected``."""
    if not isinstance(expected, str) or re.fullmatch(r"[0-9a-f]{64}", expected) is None:
        raise ValueError(f"the model card of {path} has no valid sha256 (got {expected!r:.80}): "
                         "the encoder cannot be checked; reinstall the package.")
    raw = path.read_bytes()
    if hashlib.sha256(raw).hexdigest() != expected:
        raise ValueError(f"{path} does not match its model card's SHA-256 ({expected}): "
                         "the file is damaged or was replaced; reinstall the package.")
    data = io.BytesIO(raw)
    data.name = str(path)
    return data
