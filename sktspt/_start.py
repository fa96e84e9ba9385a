"""Starting a supervised fit from a fitted pretrainer: what the pretrainer fixes, and the
warning when a parameter set on the estimator is therefore ignored."""

from __future__ import annotations

import warnings

from ._params import show

__all__ = ["PRETRAINER_SETTINGS", "warn_overridden"]

#: Parameters and settings that a fitted ``pretrainer`` fixes (its architecture and input
#: handling).
PRETRAINER_SETTINGS = (
    "depth", "d_model", "architecture__n_heads", "architecture__dim_feedforward",
    "tokenizer__patch_size", "tokenizer__length", "tokenizer", "differences",
    "architecture__positional",
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
            stacklevel=8,  # fit's caller, through the fit wrappers
        )
