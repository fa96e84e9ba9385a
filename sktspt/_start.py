"""How a supervised fit starts: what a fitted pretrainer fixes, and the warnings when a
parameter set on the estimator is therefore ignored, or set for a pretraining that this fit
does not run."""

from __future__ import annotations

import warnings

from ._params import show

__all__ = ["PRETRAINER_SETTINGS", "PRETRAINING_SETTINGS", "warn_overridden",
           "warn_unused_pretraining"]

#: Parameters and settings that a fitted ``pretrainer`` fixes (its architecture and input
#: handling).
PRETRAINER_SETTINGS = (
    "depth", "d_model", "architecture__n_heads", "architecture__dim_feedforward",
    "tokenizer__patch_size", "tokenizer__length", "tokenizer", "architecture__positional",
    "architecture", "normalize",
)


def warn_overridden(est, pre) -> None:
    """Warn when an architecture parameter set here differs from the pretrainer's."""
    from sklearn.frozen import FrozenEstimator

    inner = pre.estimator if isinstance(pre, FrozenEstimator) else pre
    theirs = inner._settings() if hasattr(inner, "_settings") else {}
    mine, defaults = est._settings(), type(est)()._settings()
    clashes = [
        name for name in PRETRAINER_SETTINGS
        if name in theirs and mine[name] != defaults.get(name) and mine[name] != theirs[name]
    ]
    if clashes:
        mine = ", ".join(f"{k}={show(mine[k])}" for k in clashes)
        pre_values = ", ".join(f"{k}={show(theirs[k])}" for k in clashes)
        warnings.warn(
            f"{type(est).__name__}({mine}) is ignored: the fitted pretrainer fixes the "
            f"network ({pre_values}), and its values are used (see encoder_kwargs_). "
            "Leave these parameters at their defaults or set them to the pretrainer's "
            "values.",
            UserWarning,
            stacklevel=6,  # fit's caller, through the fit context
        )


#: Parameters and settings that only self-pretraining inside ``fit`` reads.
PRETRAINING_SETTINGS = (
    "masking", "masking__ratio", "masking__ratio_spread", "masking__mean_span",
    "masking__channels", "pretrain_objective", "pretrain_objective__sigreg_lambda",
    "schedule__pretrain_share", "pretrain__callbacks",
)


def warn_unused_pretraining(est, unlabeled: bool = False) -> None:
    """Warn when what only self-pretraining reads is given to a fit that does not
    self-pretrain (``pretrain_epochs=0``, the classifier's default, or a ``pretrainer``),
    so that it is not silently ignored: ``X_unlabeled`` (``unlabeled``: given) and
    pretraining settings away from their defaults."""
    if est.pretrain_epochs != 0 and est.pretrainer is None:
        return
    name = type(est).__name__
    why = "it takes a fitted pretrainer" if est.pretrainer is not None else "pretrain_epochs=0"
    if unlabeled:
        warnings.warn(
            f"X_unlabeled is not used: {name} pretrains on it, and this fit does not "
            f"pretrain ({why}). Leave X_unlabeled out, or pretrain (pretrain_epochs > 0 or "
            "'auto'; an SPTPretrainer fitted on it).",
            UserWarning, stacklevel=5,  # fit's caller, through the fit context
        )
    mine, defaults = est._settings(), type(est)()._settings()
    unused = [k for k in PRETRAINING_SETTINGS if k in mine and mine[k] != defaults.get(k)]
    if unused:
        warnings.warn(
            f"{name}(" + ", ".join(f"{k}={show(mine[k])}" for k in unused)
            + f") is unused: this fit does not self-pretrain ({why}). Set "
            "pretrain_epochs='auto' (or a count) to pretrain on the training series.",
            UserWarning, stacklevel=5,  # fit's caller, through the fit context
        )
