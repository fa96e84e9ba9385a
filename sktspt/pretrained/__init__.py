"""Encoders pretrained once on a corpus and shipped with the package, to fine-tune from.

Self-pretraining on a task's own few hundred series adds little (``docs/tuning.md``); the
literature's gains come where pretraining sees far more series than the task. An encoder
pretrained on a corpus ships here as a saved :class:`~sktspt.SPTPretrainer` (the package's
file format: ``metadata.json`` and ``weights.safetensors`` in one zip, nothing that runs at
load) beside its model card (``<name>.md``: data, objective, steps, size, the data's
licence, the file's SHA-256 and the command that rebuilds it).

:func:`pretrained` returns it fitted and wrapped in
:class:`sklearn.frozen.FrozenEstimator`, so it survives ``clone`` inside
``cross_val_score``, ``GridSearchCV`` and pipelines, ready for the estimators'
``pretrainer`` parameter; its ``transform`` gives embeddings without any fitting::

    from sktspt import SPTClassifier
    from sktspt.pretrained import pretrained

    clf = SPTClassifier(pretrainer=pretrained("archive")).fit(X, y)
    Z = pretrained("archive").transform(X)          # embeddings, nothing fitted

An encoder fixes the network and the input handling (patch size, per-series
standardisation, one channel): a classifier started from it takes univariate series; for
several channels, the error says so. The encoders are built by
``benchmarks/pretrain_archive.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

__all__ = ["FINETUNE_STEPS", "available", "pretrained", "card"]

#: The folder the shipped encoders lie in (this package's own).
FOLDER = Path(__file__).resolve().parent

#: Optimizer steps that ``"auto"`` fine-tuning from a shipped encoder aims at (by name,
#: ``pretrainer="archive"``), unless ``schedule__steps`` is given: the smallest budget
#: within half a point of the best on ten problems' training splits
#: (``benchmarks/archive_budget.py``, ``docs/pretrained.md``), half the default fit's.
FINETUNE_STEPS = 1000


def available() -> list[str]:
    """Names of the encoders shipped in this installation (``<name>.sktspt`` files with
    their model card ``<name>.json``)."""
    return sorted(p.stem for p in FOLDER.glob("*.sktspt") if p.with_suffix(".json").is_file())


def card(name: str = "archive") -> dict:
    """The model card of a shipped encoder (``<name>.json``): data, objective, steps, size,
    licence of the data, SHA-256 and the command that built it."""
    path = FOLDER / f"{name}.json"
    if not path.is_file():
        raise ValueError(_unknown(name))
    return json.loads(path.read_text())


def _unknown(name: str) -> str:
    have = available()
    path_hint = ("" if not (Path(name).suffix or os.sep in name) else
                 " To start from a saved file, pass the fitted pretrainer itself: "
                 "pretrainer=FrozenEstimator(sktspt.load(path)) (joblib.load for a pickle).")
    return (f"no pretrained encoder named {name!r} in {FOLDER}; "
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
        Which shipped encoder (:func:`available`).
    path : path-like, optional
        Load this saved ``SPTPretrainer`` file instead (e.g. an encoder of half the
        archive, for an evaluation on the other half).

    Raises
    ------
    ValueError
        If no encoder of that name is shipped, or the file's SHA-256 differs from its
        model card's (a damaged or replaced file).
    """
    from sklearn.frozen import FrozenEstimator

    from .. import load
    from ..pretrainer import SPTPretrainer

    if path is None:
        path = FOLDER / f"{name}.sktspt"
        if not path.is_file():
            raise ValueError(_unknown(name))
        expected = card(name).get("sha256")
        if expected is not None and sha256(path) != expected:
            raise ValueError(f"{path} does not match its model card's SHA-256 ({expected}): "
                             "the file is damaged or was replaced; reinstall the package.")
    encoder = load(path)
    if not isinstance(encoder, SPTPretrainer):
        raise ValueError(f"{path} holds a {type(encoder).__name__}, not an SPTPretrainer.")
    return FrozenEstimator(encoder)
