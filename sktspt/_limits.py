"""The largest input a model may be fitted for, named once: ``fit`` refuses what ``load``
refuses (:mod:`sktspt.persistence` reads files with the same caps), with the same limit
named, so that every fit that saves also loads.
"""

from __future__ import annotations

__all__ = ["MAX_ARCHITECTURE", "MAX_PATCH_SIZE", "MAX_SERIES_VALUES", "MAX_TOKENS",
           "check_architecture_limits", "check_input_limits", "check_series_values"]

#: Tokens of a training-length series (``max_tokens_``). Prediction pads shorter series of
#: an unequal-length model to this length in passes of fixed shape, so this bounds what
#: predicting one short series allocates (about 3 GB at 4096 tokens; a file stating 65536
#: made it 22 GB).
MAX_TOKENS = 2**12
#: Steps of one token (``patch_size_``), never more than ``n_timepoints_``: prediction pads
#: every series to a multiple of it, so a stated 10**7 made one short series allocate
#: 56 GB. ``patch_size="auto"`` stops here (it reaches it for series longer than 131,072
#: steps).
MAX_PATCH_SIZE = 2**12
#: Values of one training-length series (``n_channels_ * n_timepoints_``, the length
#: after ``tokenizer__length``).
MAX_SERIES_VALUES = 2**20
#: The largest network sizes (weights larger than this are never fitted by these
#: estimators): width, feed-forward width, depth, attention heads.
MAX_ARCHITECTURE = {"d_model": 2**13, "dim_feedforward": 2**16, "depth": 2**8, "n_heads": 2**13}


def check_series_values(n_channels: int, n_timepoints: int,
                        what: str = "n_channels_ x n_timepoints_") -> None:
    """A ValueError if a series of ``n_channels`` x ``n_timepoints`` values exceeds
    :data:`MAX_SERIES_VALUES`."""
    if n_channels * n_timepoints > MAX_SERIES_VALUES:
        raise ValueError(
            f"{what} = {n_channels} x {n_timepoints} is more than the {MAX_SERIES_VALUES} "
            "values a model's series may have (fit and load refuse more)"
        )


def check_input_limits(n_channels: int, n_timepoints: int, patch_size: int,
                       max_tokens: int) -> None:
    """A ValueError naming the limit if an input spec exceeds what a model may have."""
    if max_tokens > MAX_TOKENS:
        raise ValueError(
            f"max_tokens_={max_tokens} is more than the {MAX_TOKENS} tokens a model may have "
            "(prediction pads series to this length; fit and load refuse more)"
        )
    if patch_size > min(n_timepoints, MAX_PATCH_SIZE):
        raise ValueError(
            f"patch_size_={patch_size} is more than the {MAX_PATCH_SIZE} steps a model's "
            f"token may have, or than its n_timepoints_={n_timepoints} (prediction pads "
            "every series to a multiple of it; fit and load refuse more)"
        )
    check_series_values(n_channels, n_timepoints)


def check_architecture_limits(architecture: dict, names: dict | None = None) -> None:
    """A ValueError if a field of ``architecture`` (the encoder's arguments) exceeds
    :data:`MAX_ARCHITECTURE`; ``names`` maps a field to the name the message gives it."""
    for field, most in MAX_ARCHITECTURE.items():
        value = architecture.get(field)
        if isinstance(value, int) and value > most:
            name = field if names is None else names.get(field, field)
            raise ValueError(f"{name}={value} is more than the {most} a model may have "
                             "(fit and load refuse more)")
