"""Names removed in 0.5, and the closest valid parameter of an unknown keyword."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from ._params import init_parameters as _init_parameters

__all__ = ["ALIASES", "CHECKPOINT", "REJECTED", "REMOVED", "REMOVED_IN", "removed_message",
           "suggest_parameter", "unknown_keyword_message"]

#: The release that removed the names of :data:`REMOVED`.
REMOVED_IN = "0.5"

#: The options the project's evidence rejected, removed in 0.5 (why:
#: ``docs/tuning-history.md``), each with the value that left it off: what files and pickles
#: of earlier versions hold where it was unused.
REJECTED = {"layer_decay": 1.0, "reinit_layers": 0, "differences": 0, "pretrain_crops": None,
            "n_estimators": 1, "self_training": None, "cache_features": False}

#: What replaces the checkpoint folder parameters (0.4's ``callbacks__checkpoint_dir``).
CHECKPOINT = "callbacks=[sktspt.ResumableCheckpoint(dirname)]"

#: The names removed in 0.5, each with what replaces it: the flat names that became routed
#: settings in 0.4 (files of 0.3 and 0.4 saved under them load, translated), and, replaced
#: by None, the rejected options (:data:`REJECTED`).
REMOVED: dict[str, str | None] = {
    **{k: f"architecture__{k}" for k in ("n_heads", "dim_feedforward", "dropout", "positional")},
    **{f"lighthouse_{k}": f"attention__{k}" for k in ("levels", "pool", "topk", "recovery")},
    **{f"mask_{k}": f"masking__{k}" for k in ("ratio", "ratio_spread", "channels")},
    **{k: f"schedule__{k}" for k in ("pretrain_share", "warmup", "patience")},
    "patch_size": "tokenizer__patch_size", "mean_span": "masking__mean_span",
    "sigreg_lambda": "pretrain_objective__sigreg_lambda", "auto_steps": "schedule__steps",
    "weight_decay": "optimizer__weight_decay", "label_smoothing": "criterion__label_smoothing",
    "mixup_kind": "mixup__kind", "exit_loss_weight": "early_exit__loss_weight",
    "min_exit_layer": "early_exit__min_layer", "n_threads": "device__threads",
    "precision": "device__precision", "pretrain_callbacks": "pretrain__callbacks",
    # callbacks__<name>__<param> is skorch's route to a callback's parameter; 0.4's two
    # callbacks__ settings that were no such route: a callback, and the pretraining net's
    # own argument.
    "callbacks__checkpoint_dir": CHECKPOINT, "checkpoint_dir": CHECKPOINT,
    "callbacks__pretrain": "pretrain__callbacks",
    **dict.fromkeys(REJECTED),
}


def removed_message(cls: type, name: str) -> str | None:
    """Why ``cls(name=...)`` is refused, where ``name`` was removed in 0.5; else None.

    A class adds its own old names as ``_removed`` (``{old: new}``: the pretrainer's
    ``max_epochs``, ``pretrain_epochs`` since 0.3).
    """
    removed = {**REMOVED, **getattr(cls, "_removed", {})}
    if name not in removed:
        return None
    new = removed[name]
    if new is None:
        return (f"{cls.__name__}'s {name} was removed in {REMOVED_IN}: the project's evidence "
                "did not support it (docs/tuning-history.md).")
    use = new if "=" in new else f"{new}=..."
    return f"{cls.__name__}({name}=...) was removed in {REMOVED_IN}; use {use} instead."


#: Names used for the same thing elsewhere (scikit-learn, PyTorch, Hugging Face), each with
#: the parameters it may mean here; the first one that a class takes wins. Other names get
#: the closest spelling.
ALIASES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("n_jobs", "num_threads", "threads"), ("device__threads",)),
    **dict.fromkeys(("n_layers", "num_layers", "layers"), ("depth",)),
    **dict.fromkeys(("epochs", "n_epochs", "num_epochs", "max_iter"),
                    ("max_epochs", "pretrain_epochs")),
    **dict.fromkeys(("learning_rate", "learning_rate_init"), ("lr",)),
    **dict.fromkeys(("seed", "random_seed"), ("random_state",)),
    **dict.fromkeys(("nhead", "n_head", "num_heads", "heads"), ("architecture__n_heads",)),
    **dict.fromkeys(("hidden_size", "hidden_dim", "embed_dim"), ("d_model",)),
    **dict.fromkeys(("patch_len", "patch_length"), ("tokenizer__patch_size",)),
    **dict.fromkeys(("gpu", "cuda"), ("device",)),
    **dict.fromkeys(("early_stopping", "n_iter_no_change"), ("schedule__patience",)),
    **dict.fromkeys(("checkpoint", "dirname"), ("callbacks",)),
}


def suggest_parameter(name: str, valid: Sequence[str]) -> str | None:
    """The parameter in ``valid`` that ``name`` most likely meant, or None: a synonym from
    :data:`ALIASES` first, then the closest spelling (:func:`difflib.get_close_matches`)."""
    for candidate in ALIASES.get(name.lower(), ()):
        if candidate in valid:
            return candidate
    close = difflib.get_close_matches(name.lower(), list(valid), n=1, cutoff=0.6)
    return close[0] if close else None


def unknown_keyword_message(cls: type, name: str) -> str:
    """Python's message for an unknown keyword of ``cls()``, with the closest parameter or
    routed setting (``attention__level`` -> ``attention__levels``), or, for a name removed in
    0.5, what replaced it."""
    if removed := removed_message(cls, name):
        return removed
    valid = [n for n, p in _init_parameters(cls).items() if p.kind is not p.VAR_KEYWORD]
    hint = suggest_parameter(name, [*valid, *getattr(cls, "_routed", ())])
    return (f"{cls.__name__}.__init__() got an unexpected keyword argument {name!r}"
            + (f"; did you mean {hint!r}?" if hint else "."))
