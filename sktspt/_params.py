"""The parameters of the SPT estimators: their constraints, their docs, unknown names.

Each estimator writes out its ``__init__`` (which only stores the arguments, as
scikit-learn requires) and declares a constraint per parameter in
``_parameter_constraints``, merged by subclasses as scikit-learn's estimators merge
theirs::

    class SPTClassifier(..., SPTBase):
        _parameter_constraints = {**SPTBase._parameter_constraints, "mixup": ..., ...}

This module holds the constraint callables, the constraints of the parameters both
estimators share (:data:`BASE_CONSTRAINTS`), the checks between parameters
(:data:`RELATIONS`) and :func:`validate`, which runs them at the start of ``fit``. It
also holds the text of each parameter's numpydoc entry (:data:`PARAMETER_DOCS`), from
which :func:`document_parameters` writes the "Parameters" section of each class
docstring beside the explicit ``__init__`` (as skorch does), and :class:`ParameterHints`,
which names the closest valid parameter when a keyword is unknown.

Why small constraint callables of our own rather than scikit-learn's
``_parameter_constraints`` machinery:

- scikit-learn's machinery (``sklearn.utils._param_validation``: ``Interval``,
  ``StrOptions``, ``validate_parameter_constraints``, ``_fit_context``) is private. It
  carries no deprecation policy and has changed between releases; imbalanced-learn
  vendors a copy of it for that reason. A package that supports a range of scikit-learn
  versions should not build its validation on it.
- Its messages are generic ("The 'lr' parameter of SPTClassifier must be a float in the
  range (0, inf). Got 'fast' instead.") and its error class is ``InvalidParameterError``.
  Ours say what the value is for (``mean_span must be None or a positive number``,
  ``normalize must be 'auto', 'global', 'instance' or None``), are pinned by the tests
  and documented, and stay plain ``ValueError`` / ``TypeError``.
- Several checks are not about one value: ``d_model`` divisible by ``n_heads``,
  Lighthouse attention needing ``depth >= 3``, LEAP needing one network, ensembles
  needing masked pretraining, a CUDA ``device`` needing a usable GPU. They run after the
  per-parameter constraints (:data:`RELATIONS`), in the same place.
- ``bool`` is never a number here (``depth=True`` is a mistake, not 1), which
  scikit-learn's ``Interval(Integral, ...)`` does not reject.

The constraints are plain callables ``check(name, value)`` that raise, so a parameter
checked by the code that interprets it (``precision`` by
:func:`sktspt.precision.check_precision`) points at that function instead of copying it.
"""

from __future__ import annotations

import difflib
import inspect
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .augment import AUGMENTS
from .masking import MASKINGS
from .nn.lighthouse import ATTENTIONS, Lighthouse
from .nn.positional import POSITIONALS
from .nn.tokenizers import TOKENIZERS
from .nn.whitebox import ARCHITECTURES
from .precision import check_precision

__all__ = [
    "BASE_CONSTRAINTS",
    "DEPRECATED",
    "Deprecated",
    "Integer",
    "Number",
    "Options",
    "ParameterHints",
    "PARAMETER_DOCS",
    "RELATIONS",
    "check_attention_params",
    "check_value",
    "document_parameters",
    "suggest_parameter",
    "validate",
]

PRETRAIN_OBJECTIVES = ("masked", "lejepa", "masked+sigreg")
NORMALIZATIONS = ("auto", "global", "instance", None)
#: The parameters that shape the network, after the input (``encoder_kwargs_``).
ARCHITECTURE = (
    "d_model", "depth", "n_heads", "dim_feedforward", "dropout", "positional", "architecture",
    "tokenizer", "differences",
)
#: The default of a deprecated parameter: "not set" (scikit-learn's convention).
DEPRECATED = "deprecated"


def show(value) -> str:
    """``repr`` for messages, with numpy scalars as plain numbers (1.0, not np.float64(1.0))."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def resolve_device(device: str | None) -> str | None:
    """``"auto"`` as ``"cuda"`` where a GPU is usable, else ``"cpu"``; others unchanged."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


# --- constraints ------------------------------------------------------------------------
def _is_int(value) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def _is_number(value) -> bool:
    return isinstance(value, int | float | np.number) and not isinstance(value, bool | np.bool_)


@dataclass(frozen=True)
class Options:
    """One of ``values`` (strings or None)."""

    values: tuple
    what: str | None = None

    def __call__(self, name: str, value) -> None:
        if not (isinstance(value, str | type(None)) and value in self.values):
            what = self.what or f"one of {self.values}"
            raise ValueError(f"{name} must be {what}, got {value!r}.")


def _special(value, none: bool, auto: bool) -> bool:
    """Whether ``value`` is None or ``"auto"`` and the constraint takes it."""
    return value is None and none or isinstance(value, str) and value == "auto" and auto


@dataclass(frozen=True)
class Integer:
    """An integer ``>= low``; optionally also None or ``"auto"``."""

    low: int
    none: bool = False
    auto: bool = False
    what: str | None = None

    def __call__(self, name: str, value) -> None:
        if _special(value, self.none, self.auto):
            return
        if not _is_int(value) or value < self.low:
            raise ValueError(f"{name} must be {self._what()}, got {show(value)}.")

    def _what(self) -> str:
        if self.what:
            return self.what
        kind = "a positive integer" if self.low == 1 else "a non-negative integer"
        return ("None or " if self.none else "'auto' or " if self.auto else "") + kind


@dataclass(frozen=True)
class Number:
    """A number (not a bool) with ``valid(value)``; optionally also None or ``"auto"``."""

    valid: Callable[[float], bool]
    what: str
    none: bool = False
    auto: bool = False

    def __call__(self, name: str, value) -> None:
        if _special(value, self.none, self.auto):
            return
        if not _is_number(value) or not self.valid(value):
            raise ValueError(f"{name} must be {self.what}, got {show(value)}.")


@dataclass(frozen=True)
class Deprecated:
    """A deprecated parameter: unset (:data:`DEPRECATED`), or what ``check`` accepts."""

    check: Callable[[str, Any], None]

    def __call__(self, name: str, value) -> None:
        if not (isinstance(value, str) and value == DEPRECATED):
            self.check(name, value)


def boolean(name: str, value) -> None:
    """True or False (numpy's bool too)."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be True or False, got {show(value)}.")


def verbosity(name: str, value) -> None:
    """A non-negative integer; False and True are 0 and 1, as in scikit-learn."""
    if isinstance(value, bool | np.bool_):
        return
    if not _is_int(value):
        raise TypeError(f"{name} must be a non-negative integer, got {show(value)}.")
    if value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {show(value)}.")


def random_state(name: str, value) -> None:
    """None, a seed in ``[0, 2**32 - 1]`` or a ``numpy.random.RandomState``."""
    if value is None or isinstance(value, np.random.RandomState):
        return
    what = "None, an integer in [0, 2**32 - 1] or a numpy RandomState"
    if not _is_int(value):
        raise TypeError(f"{name} must be {what}, got {show(value)}.")
    if not 0 <= value < 2**32:
        raise ValueError(f"{name} must be {what}, got {show(value)}.")


def _augment(name: str, value) -> None:
    if isinstance(value, str):
        Options((*AUGMENTS, "auto"),
                'True, False, "stretch", "shift", "roll" or "auto"')(name, value)
    elif not isinstance(value, bool | np.bool_):
        raise TypeError(
            f'{name} must be True, False, "stretch", "shift", "roll" or "auto", '
            f"got {show(value)}.")


#: Most threads ``n_threads`` may ask for (torch crashes on absurd counts such as 10**6).
MAX_THREADS = 4096


def _n_threads(name: str, value) -> None:
    Integer(1, none=True)(name, value)
    if value is not None and value > MAX_THREADS:
        raise ValueError(f"{name} must be None or a positive integer of at most "
                         f"{MAX_THREADS}, got {show(value)}.")


def _path_or_none(name: str, value) -> None:
    if value is not None and not isinstance(value, str | os.PathLike):
        raise TypeError(f"{name} must be None or a path, got {type(value).__name__}.")


def _is_callback(value) -> bool:
    """A skorch callback (instance or class: skorch makes the instance), by its interface."""
    return callable(getattr(value, "initialize", None))


def callbacks_or_none(name: str, value) -> None:
    """None, or a list of skorch callbacks (instances, classes or ``(name, callback)``)."""
    what = "None or a list of skorch callbacks (instances or (name, callback) tuples)"
    if value is None:
        return
    if not isinstance(value, list | tuple):
        raise TypeError(f"{name} must be {what}, got {type(value).__name__}.")
    for item in value:
        named = isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)
        if not _is_callback(item[1] if named else item):
            raise TypeError(f"{name} must be {what}; it holds {item!r}.")


def estimator_or_none(name: str, value) -> None:
    """None, or an estimator (it has ``fit`` and ``get_params``); fitted is checked in fit."""
    if value is not None and not (
        callable(getattr(value, "fit", None)) and callable(getattr(value, "get_params", None))
    ):
        raise TypeError(
            f"{name} must be None or a fitted SPTPretrainer (or SPTClassifier), possibly in "
            f"sklearn.frozen.FrozenEstimator, got {type(value).__name__}."
        )


def _channels(name: str, value) -> None:
    if value is None:
        return
    ok = isinstance(value, list | tuple | np.ndarray) and len(value) > 0 and all(
        _is_int(c) for c in np.asarray(value, dtype=object).ravel()
    ) and np.ndim(value) == 1
    if not ok:
        raise ValueError(
            f"{name} must be None or a non-empty list of channel indices (integers), got "
            f"{show(value)}."
        )
    if len(set(np.asarray(value).tolist())) != len(value):
        raise ValueError(f"{name} has repeated channels: {show(value)}.")


def class_weight_or_none(name: str, value) -> None:
    """None, ``"balanced"`` or a dict ``{label: weight}``."""
    if value is not None and not isinstance(value, str | dict):
        raise TypeError(
            f"{name} must be None, 'balanced' or a dict {{label: weight}}, got "
            f"{type(value).__name__}."
        )
    if isinstance(value, str) and value != "balanced":
        raise ValueError(f"{name} must be None, 'balanced' or a dict, got {value!r}.")


def _device(name: str, value) -> None:
    if value is None:
        return
    try:
        kind = torch.device(resolve_device(value)).type
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"{name}={value!r} is not a torch device: {exc}") from exc
    if kind == "meta":
        raise ValueError(
            f"{name}={value!r} holds no data (torch's 'meta' device only tracks shapes), so a "
            "model can neither train nor predict on it. Use 'cpu', 'cuda' or 'auto'."
        )
    if kind == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"{name}={value!r} is not available: this torch build has no usable CUDA device "
            "(torch.cuda.is_available() is False). Use device='cpu', or 'auto' to take CUDA "
            "only where it exists."
        )


def _precision(name: str, value) -> None:
    check_precision(value)


#: The regressor's fine-tuning losses.
REGRESSION_LOSSES = ("squared_error", "huber")
#: Epochs of a phase: a count, or ``"auto"`` for a budget of optimizer steps.
EPOCHS = Integer(0, auto=True)

#: The constraints of the parameters both estimators take (``SPTBase``'s); each
#: estimator adds its own (``_parameter_constraints``).
BASE_CONSTRAINTS: dict[str, Callable[[str, Any], None]] = {
    # network and input handling
    "depth": Integer(1),
    "d_model": Integer(1),
    "n_heads": Integer(1),
    "dim_feedforward": Integer(1),
    "dropout": Number(lambda v: 0 <= v < 1, "a number in [0, 1)"),
    "patch_size": Integer(1, auto=True, what="a positive integer or 'auto'"),
    "tokenizer": Options(TOKENIZERS),
    "differences": Integer(0),
    "positional": Options(POSITIONALS),
    "architecture": Options(ARCHITECTURES),
    "normalize": Options(NORMALIZATIONS, "'auto', 'global', 'instance' or None"),
    # the self-pretraining objective
    "masking": Options(MASKINGS),
    "mask_ratio": Number(lambda v: 0 < v < 1, "a number in (0, 1)"),
    "mask_ratio_spread": Number(lambda v: 0 <= v < 0.5, "a number in [0, 0.5)"),
    "mean_span": Number(lambda v: 0 < v < math.inf, "None or a positive number", none=True),
    "pretrain_objective": Options(PRETRAIN_OBJECTIVES),
    "sigreg_lambda": Number(lambda v: 0 <= v <= 1, "a number in [0, 1]"),
    "mask_channels": _channels,
    "pretrain_crops": Number(
        lambda v: 0 < v < 1, "None or the shortest crop as a fraction of each series, in (0, 1)",
        none=True),
    # training length and optimisation
    "pretrain_epochs": EPOCHS,
    "auto_steps": Integer(1),
    "lr": Number(lambda v: 0 < v < math.inf, "a positive number"),
    "warmup": Number(lambda v: 0 <= v < 1, '"auto" or a number in [0, 1)', auto=True),
    "weight_decay": Number(lambda v: 0 <= v < math.inf, "a non-negative number"),
    "batch_size": Integer(1),
    "augment": _augment,
    "validation_fraction": Number(lambda v: 0 <= v < 1, "a number in [0, 1)"),
    "patience": Integer(1, none=True),
    "callbacks": callbacks_or_none,
    # running
    "device": _device,
    "random_state": random_state,
    "verbose": verbosity,
    "checkpoint_dir": _path_or_none,
    "n_threads": _n_threads,
    "precision": _precision,
    # Lighthouse sparse attention (with depth, also in RELATIONS)
    "attention": Options(ATTENTIONS),
    "lighthouse_levels": Integer(1, what="an integer >= 1"),
    "lighthouse_pool": Integer(2, what="an integer >= 2"),
    "lighthouse_topk": Integer(1, what="an integer >= 1"),
    "lighthouse_recovery": Number(lambda v: 0 <= v <= 1, "a number in [0, 1]"),
}


def check_value(name: str, value) -> None:
    """Check one value of a parameter both estimators take (:data:`BASE_CONSTRAINTS`)."""
    BASE_CONSTRAINTS[name](name, value)


# --- constraints between parameters -------------------------------------------------------
def _as_int(value, name: str, low: int) -> int:
    Integer(low, what=f"an integer >= {low}")(name, value)
    return int(value)


def check_attention_params(est) -> Lighthouse | None:
    """Validate ``attention`` and the ``lighthouse_*`` parameters of an estimator.

    Returns the :class:`~sktspt.nn.lighthouse.Lighthouse` settings, or None for dense
    attention.
    """
    attention = getattr(est, "attention", "dense")
    BASE_CONSTRAINTS["attention"]("attention", attention)
    cfg = Lighthouse(
        levels=_as_int(getattr(est, "lighthouse_levels", 3), "lighthouse_levels", 1),
        pool=_as_int(getattr(est, "lighthouse_pool", 4), "lighthouse_pool", 2),
        topk=_as_int(getattr(est, "lighthouse_topk", 8), "lighthouse_topk", 1),
    )
    recovery = getattr(est, "lighthouse_recovery", 0.1)
    BASE_CONSTRAINTS["lighthouse_recovery"]("lighthouse_recovery", recovery)
    if attention == "dense":
        return None
    if cfg.tile_tokens > 2**24:
        raise ValueError(
            f"lighthouse_pool={cfg.pool} and lighthouse_levels={cfg.levels} make tiles of "
            f"{cfg.tile_tokens} tokens; lower one of them."
        )
    depth = getattr(est, "depth", None)
    if isinstance(depth, int | np.integer) and not isinstance(depth, bool) and depth < 3:
        raise ValueError(
            f"attention='lighthouse' needs depth >= 3, got depth={int(depth)}: the first and "
            "last layers always stay dense, so there would be no layer to make sparse."
        )
    return cfg


def _heads_divide_width(est) -> None:
    if est.d_model % est.n_heads:
        raise ValueError(f"d_model={est.d_model} must be divisible by n_heads={est.n_heads}.")


def _ensembles_pretrain_masked(est) -> None:
    if getattr(est, "n_estimators", 1) > 1 and est.pretrain_objective != "masked":
        raise ValueError(
            "n_estimators > 1 trains members with masked reconstruction only; got "
            f"pretrain_objective={est.pretrain_objective!r}."
        )


def leap_needs_one_network(est) -> None:
    """LEAP's loss and early exit act on a single network, not on an ensemble."""
    members = int(getattr(est, "n_estimators", 1))
    if members > 1 and (
        getattr(est, "early_exit", None) is not None or float(getattr(est, "exit_loss_weight", 0))
        > 0
    ):
        raise ValueError(
            "early_exit and exit_loss_weight act on a single network; got "
            f"n_estimators={members}. Use n_estimators=1 with LEAP."
        )


def _reinit_within_depth(est) -> None:
    """``reinit_layers`` within the depth of the network (a fitted pretrainer's, if given)."""
    layers = getattr(est, "reinit_layers", 0)
    pretrainer = getattr(est, "pretrainer", None)
    depth = est.depth if pretrainer is None else getattr(pretrainer, "depth", est.depth)
    if layers > depth:
        raise ValueError(
            f"reinit_layers={layers} exceeds depth={depth}: at most every layer can "
            "be re-initialised."
        )


#: Checks of combinations, run after every parameter passed its own constraint.
RELATIONS: tuple[Callable[[Any], None], ...] = (
    _heads_divide_width, _ensembles_pretrain_masked, leap_needs_one_network,
    check_attention_params, _reinit_within_depth,
)


def validate(est, names: Sequence[str] | None = None) -> None:
    """Check the parameters of ``est`` (all, or ``names`` only) against its class's
    ``_parameter_constraints``.

    With all parameters, :data:`RELATIONS` are checked too. Raises ``ValueError`` or
    ``TypeError`` naming the parameter. A parameter without a constraint is a bug of the
    class, reported as such.
    """
    constraints = type(est)._parameter_constraints
    own = est.get_params(deep=False)
    for name in own if names is None else names:
        if name not in constraints:
            raise RuntimeError(f"{type(est).__name__} declares no constraint for {name!r}.")
        constraints[name](name, own[name])
    if names is None:
        for relation in RELATIONS:
            relation(est)


# --- the "Parameters" section of the class docstrings ---------------------------------------
#: The numpydoc type and description of each parameter (the default comes from the
#: signature of ``__init__``). Say what a parameter does and its range; the findings
#: behind a default belong in ``docs/tuning.md``.
PARAMETER_DOCS: dict[str, tuple[str, str]] = {
    # network and input handling
    "depth": ("int", "Number of transformer layers."),
    "d_model": ("int", "Width of the token representations."),
    "n_heads": ("int", "Attention heads; must divide ``d_model``."),
    "dim_feedforward": ("int", "Hidden width of each layer's feed-forward block."),
    "dropout": ("float", "Dropout in attention and feed-forward blocks, in ``[0, 1)``."),
    "patch_size": ('int or "auto"', """
Time steps per token (all channels of a patch form one token). ``"auto"``
keeps about 32 tokens per series, so long series stay cheap: 32 for the
median series of an unequal-length panel (at most 256 for its longest)."""),
    "tokenizer": ('{"rocket", "conv", "patch"}', """
``"rocket"``: MiniRocket's 84 fixed kernels at up to 8 dilations, thresholds
drawn from the training panel, each token the share of its patch's steps past
each threshold, through a trained LayerNorm and linear map; ``"conv"``:
parallel 1D convolutions (kernels 3, 9, 19, 39) then a strided convolution per
patch, all trained; ``"patch"``: one linear map per patch
(:mod:`sktspt.nn.tokenizers`; how they compare: ``docs/tuning.md``)."""),
    "differences": ("int", """
Orders of differences the tokenizer reads beside each channel, ``>= 0``: 1 adds the
first differences (slopes), 2 also their differences
(:mod:`sktspt.nn.differences`). Pretraining reconstructs hidden values and hidden
slopes; a hidden value stays hidden in every difference. 0 reads the series alone."""),
    "positional": ('{"sinusoidal", "learned", "rotary", "alibi", "none"}', """
Positional encoding. ``rotary`` and ``alibi`` are relative (locality priors)."""),
    "architecture": ('{"transformer", "crate", "attention_only"}', """
Encoder layer (:mod:`sktspt.nn.whitebox`). ``"crate"``: white-box CRATE layers
(attention with one shared q/k/v projection, then a sparse-coding ISTA step
with a ``d_model x d_model`` dictionary); ``"attention_only"``: the same
attention followed by a learned soft threshold, no dictionary and no MLP, about
a third fewer weights than CRATE. Both ignore ``dim_feedforward``."""),
    "normalize": ('{"auto", "global", "instance"} or None', """
``"global"``: per-channel statistics of the training data (part of the fitted
state); ``"instance"``: each series standardised on its own; ``"auto"``:
``"instance"`` when the training series' scales span more than three orders of
magnitude, else ``"global"`` (:func:`sktspt.data.resolve_normalization`)."""),
    # the self-pretraining objective
    "masking": ('{"random", "span", "block", "channel", "mixed"}',
                "Masking objective, see :mod:`sktspt.masking`."),
    "mask_ratio": ("float", "Fraction of values hidden, in ``(0, 1)``."),
    "mask_ratio_spread": ("float", """
Each series' hidden fraction is drawn uniformly from ``mask_ratio ± mask_ratio_spread``
(kept within ``[0.05, 0.95]``), for every objective, so pretraining also sees series
that are mostly visible, as fine-tuning does. In ``[0, 0.5)``; 0: every series hides
``mask_ratio``."""),
    "mean_span": ("float or None", """
Mean length of hidden runs for ``span`` and ``block``, positive; None uses
``max(3, patch_size)``."""),
    "pretrain_objective": ('{"masked", "lejepa", "masked+sigreg"}', """
``"masked"``: reconstruct hidden values. ``"lejepa"``: LeJEPA (Balestriero &
LeCun 2025) on 2 global (60-100 % crops) and 2 local (20-50 %) random views per
series, with a projector MLP: ``(1 - sigreg_lambda) * L_pred + sigreg_lambda *
SIGReg`` (``masking`` settings unused; SIGReg wants batches of 32 or more).
``"masked+sigreg"``: reconstruction plus ``sigreg_lambda * SIGReg`` on the pooled
embeddings, which keeps them spread out (see :mod:`sktspt.objectives`)."""),
    "sigreg_lambda": ("float", "Weight of SIGReg in ``[0, 1]`` (unused with ``\"masked\"``)."),
    # training length and optimisation
    "pretrain_epochs": ('int or "auto"', """
Self-pretraining epochs, ``>= 0``; 0 trains from scratch. ``"auto"``: the epochs that
give about ``auto_steps`` optimizer steps (``pretrain_epochs_`` after fit)."""),
    "max_epochs": ('int or "auto"', """
Fine-tuning epochs, ``>= 0``; ``"auto"`` as for ``pretrain_epochs`` (``max_epochs_``).
A classifier's ``"auto"`` phases count an epoch of fewer than 10 batches as 10, so on a
small training set (under 160 series at batch 16) each runs at most a tenth of its step
budget in epochs (50 pretraining and 150 fine-tuning by default), fewer steps than the
budget; the from-scratch control (``auto_steps`` doubled) keeps the same epochs in all."""),
    "auto_steps": ("int", """
Optimizer steps per phase that ``"auto"`` epochs aim at, positive: small datasets get
enough updates, large ones are not over-trained. Where both phases are ``"auto"``,
their ``2 * auto_steps`` steps are split by ``pretrain_share``."""),
    "pretrain_share": ("float", """
Share of the ``2 * auto_steps`` optimizer steps that pretraining takes when
``pretrain_epochs`` and ``max_epochs`` are both ``"auto"``, in ``(0, 1)``; fine-tuning
takes the rest, so the from-scratch control at equal steps is unchanged: 500 + 1500
steps by default. Unused where either phase has a fixed epoch count or a fitted
``pretrainer`` is given (how the split was chosen: ``docs/tuning.md``)."""),
    "lr": ("float", "Peak learning rate of AdamW (linear warm-up, cosine decay per batch)."),
    "warmup": ('float or "auto"', """
Linear learning-rate warm-up at the start of each phase, as a fraction of the phase's
optimizer steps in ``[0, 1)``; the cosine decay follows. ``"auto"``: a tenth of the
steps, at most 100."""),
    "weight_decay": ("float", "AdamW weight decay, ``>= 0``."),
    "batch_size": ("int", "Series per batch."),
    "label_smoothing": ("float", "Label smoothing of the cross-entropy loss, in ``[0, 1]``."),
    "loss": ('{"squared_error", "huber"}', """
Fine-tuning loss on the standardised targets: ``"squared_error"`` (MSE), or ``"huber"``
(squared within one standard deviation of the target, linear beyond: robust to outlying
targets)."""),
    "layer_decay": ("float", """
Layer-wise learning-rate decay in fine-tuning, in ``(0, 1]``: with ``depth`` L, layer
i (0 at the bottom) trains at ``lr * layer_decay ** (L - i)``, the tokenizer and
positions at ``lr * layer_decay ** (L + 1)``, the final norm and the head at ``lr``.
Below 1 the lower layers keep more of what pretraining taught them (BEiT, MAE);
1 trains every weight at ``lr``."""),
    "reinit_layers": ("int", """
Top encoder layers (``0`` to ``depth``) that start fine-tuning from fresh random
weights instead of pretrained ones, as in few-sample BERT fine-tuning (Zhang et al.
2021). 0 keeps every pretrained layer. No effect without pretraining."""),
    "augment": ('bool or {"stretch", "shift", "roll", "auto"}', """
Train on random variants of each batch (:class:`~sktspt.augment.Augmentation`):
``True`` or ``"stretch"`` crops a window of 80-100 % and stretches it back, ``"shift"``
moves each series by up to 10 % of its length; both then scale and jitter. ``"roll"``
turns each series circularly, for series whose start point is arbitrary, and the
classifier then averages its predictions over 8 turns of each series. ``"auto"``: rolls
where aligning the training series circularly helps a 1-NN on them
(:func:`~sktspt.invariance.alignment_gain`; ``augment_``), else none. Only fine-tuning
augments (``docs/tuning.md``)."""),
    "mixup": ('float or "auto"', """
Mixup in fine-tuning, ``>= 0``: each training series is mixed with another of its
batch, weight ``max(lam, 1 - lam)`` with ``lam ~ Beta(mixup, mixup)``, and so are the
targets (:func:`~sktspt.augment.mixup`); 0 turns it off. ``"auto"``: 0.4 where the
kind of mix suits the training series, else 0 (``mixup_``;
:func:`~sktspt.augment.resolve_mixup`)."""),
    "mixup_kind": ('{"auto", "blend", "cutmix"}', """
How mixup combines a series with its partner: ``"blend"`` mixes their values;
``"cutmix"`` replaces a window of ``1 - lam`` of the series by the partner's values
there and weighs the targets by the share kept (:func:`~sktspt.augment.mixup`), which
keeps each series' local shape where a blend of two oscillations cancels. ``"auto"``:
a blend where the training series are smooth (as for ``mixup="auto"``), else the
window (``mixup_kind_``). Only used where ``mixup`` (or ``mixup_``) is above 0."""),
    "validation_fraction": ("float", """
Part of the training data held out, in ``[0, 1)`` (stratified by class when
fine-tuning), to pick the best epoch in each phase (pretraining by reconstruction loss
on fixed masks); 0 trains on all of it and keeps the last epoch."""),
    "patience": ("int or None", """
Early-stopping patience in epochs, positive; None runs all epochs and restores the
best."""),
    "pretrainer": ("SPTPretrainer or None", """
A fitted pretrainer (wrap it in ``sklearn.frozen.FrozenEstimator`` so that it
survives ``clone``) whose encoder, normalisation and patching are used instead
of pretraining in ``fit``. Pretraining outside cross-validation sees every fold."""),
    "warm_start": ("bool", """
When True and already fitted, ``fit`` continues fine-tuning the current weights
for ``max_epochs`` more epochs, without pretraining again. (Not in the sktime
adapter: sktime's ``fit`` resets the estimator, so there is nothing to continue.)"""),
    "callbacks": ("list or None", "Extra skorch callbacks for fine-tuning."),
    "device": ("str", 'Torch device; ``"auto"`` picks CUDA when available.'),
    "random_state": ("int, RandomState or None", """
Seeds weights, masks, shuffling and validation splits."""),
    "verbose": ("int or bool", """
0 (False): silent. 1 (True): a progress bar per phase ("pretraining", "fine-tuning")
with the losses and the time left. 2: skorch's table of every epoch, headed by the
phase."""),
    "checkpoint_dir": ("str, path or None", """
Folder for resumable checkpoints (one per epoch, in each phase). When set, a
``fit`` that was interrupted (Ctrl-C, a killed process) resumes from its last
checkpoint when called again with the same data and parameters, losing at most the
epoch in progress; a finished fit is reloaded, not retrained. Use one folder per
fit: a folder written by a different fit raises ``ValueError`` (so leave it None
under sktime's ``evaluate`` and benchmarks, which fit clones repeatedly). None
writes nothing."""),
    "n_estimators": ("int", """
Networks trained together as one ensemble (:class:`~sktspt.nn.ensemble.Ensemble`):
each starts from its own random weights and draws its own masks, all share the
batches and one optimizer, and ``predict_proba`` averages their probabilities.
``transform`` then concatenates the members' embeddings, and ``encoder_`` is a
``ModuleList`` of the members' encoders. Standard transformer members run stacked (one
batched product per layer for all of them) and share the rocket tokenizer's thresholds,
so ``n`` members cost less than ``n`` fits; each member's gradient is clipped on its
own, as the single network's would be."""),
    "n_threads": ("int or None", """
CPU threads torch uses inside ``fit`` and the methods that predict or transform;
torch's previous count is restored afterwards, and calls in other threads never see
it. None lets the package choose by the model's size: one thread, plus one for every
2**30 multiply-adds of a training step, at most torch's own count. The default model
gets one thread, the fastest on small or busy machines (``docs/performance.md``). The
choice depends on the model's size and the machine's cores, never on its load; CPU
results differ in the last bits between thread counts, so it is part of what makes a
seeded fit bitwise reproducible. An int (at most 4096) overrides it."""),
    "class_weight": ('None, "balanced" or dict', """
Weights of the classes in the fine-tuning loss, for imbalanced data: a dict
``{label: weight}`` (missing labels weigh 1), or ``"balanced"`` for
``n_samples / (n_classes * count)``. They multiply ``fit``'s ``sample_weight``.
Pretraining, which sees no labels, is not weighted."""),
    "self_training": ("float or None", """
Self-training on ``X_unlabeled``, for a classifier with few labels: after fine-tuning,
each unlabelled series whose predicted class has probability ``>= self_training`` (in
``(0, 1)``) takes that class as its label, and fine-tuning runs once more, from the
same start and with the same step budget, on the labelled and pseudo-labelled series
together (about 1.75 times a default fit's time). None, or no ``X_unlabeled``, fine-tunes
once; so does a fit where no series reaches the threshold."""),
    "cache_features": ("bool", """
Compute the rocket tokenizer's features of the training series once per fine-tuning
phase instead of at every step (nothing trained lies below them): a fit spends a fifth
to a half of its time there on long series. Rolls and mixup then act on the tokens'
features, an approximation of the features of the rolled or mixed series
(:func:`~sktspt.augment.token_panel`), and a poorer one than views of the series
(``docs/tuning.md``), so it is off by default; without rolls and mixup the fit is the
same. Not used by other augmentations, ensembles or other tokenizers."""),
    "mask_channels": ("list of int or None", """
The only channels masking may hide (indices into ``n_channels``); the others
(covariates that are always known) stay visible as context and are never
reconstructed. None masks all channels. Unused by ``"lejepa"``."""),
    "pretrain_crops": ("float or None", """
When set, in ``(0, 1)``: pretraining sees each training series cut to a random window
of between this fraction and all of its length, moved to the start (the rest is
padding), so that the encoder also learns from series shorter than the training
length; useful when shorter series are to be predicted (fit on series of unequal
length, or NaN-padded, to predict other lengths). Unused by ``"lejepa"``, whose
views are crops already."""),
    "pretrain_callbacks": ("list or None", """
Extra skorch callbacks for pretraining (``callbacks`` act on fine-tuning only)."""),
    # LEAP early exit
    "exit_loss_weight": ("float", """
Weight of the LEAP exit-aware loss added in fine-tuning, ``>= 0`` (:mod:`sktspt.leap`):
it pulls each intermediate layer's pooled representation towards the final one,
so that ``early_exit`` can stop early without losing accuracy. 0 turns it off."""),
    "early_exit": ("float or None", """
LEAP early exit at prediction: each series leaves the encoder at the first layer
``>= min_exit_layer`` whose pooled representation has cosine ``>= early_exit``
(in ``[-1, 1]``) with the previous layer's, and the (shared) head is applied there;
series that exited stop costing compute. 0.95 is the LEAP paper's threshold; None runs
every layer. Can be set after fitting (``set_params``; on a fitted sktime adapter, on
its ``estimator_``); see :meth:`~sktspt.SPTClassifier.exit_layers`."""),
    "min_exit_layer": ("int", "First layer (1-based) at which ``early_exit`` may stop a series."),
    # Lighthouse sparse attention
    "attention": ('{"dense", "lighthouse"}', """
Attention in training. ``"lighthouse"``: Lighthouse hierarchical sparse attention
(:mod:`sktspt.nn.lighthouse`) in every layer but the first and last (needs
``depth >= 3``), for the first ``1 - lighthouse_recovery`` of each phase's
optimizer steps, then dense attention on the same weights. Validation, prediction
and ``transform`` are always dense, so the fitted model is an ordinary one. It
pays only on long inputs (thousands of tokens, see ``docs/lighthouse.md``)."""),
    "lighthouse_levels": ("int", """
Levels of the Lighthouse pyramid, ``>= 1`` (level ``l`` pools ``lighthouse_pool**l``
tokens); 1 is exactly dense attention."""),
    "lighthouse_pool": ("int", "Pooling factor between levels, ``>= 2``."),
    "lighthouse_topk": ("int", """
Windows refined per tile and level, ``>= 1`` (half by query norm, half by key norm);
the other windows stay in as coarse summaries."""),
    "lighthouse_recovery": ("float", """
Fraction in ``[0, 1]`` of each phase's last optimizer steps trained with dense
attention (the recovery phase)."""),
    "precision": ('{"auto", "float32", "bfloat16", "float16"}', """
Numeric precision of training and prediction (:mod:`sktspt.precision`): autocast
of the network to bfloat16 or float16 (float16 with loss scaling, CUDA only),
losses and SIGReg in float32, weights always float32; on CUDA, TF32 matmuls
unless ``"float32"``. ``"auto"``: bfloat16 on a CUDA GPU that supports it,
float32 elsewhere (on CPU). Can be changed after fitting: prediction uses the
current value, and falls back to float32 where the device cannot run it."""),
}

#: Where the regressor's parameters mean something else than the classifier's.
REGRESSOR_DOCS: dict[str, tuple[str, str]] = {
    "augment": ('bool or {"stretch", "shift", "roll", "auto"}', """
Train on random variants of each batch, as for :class:`~sktspt.SPTClassifier`
(``True``/``"stretch"``, ``"shift"``, ``"roll"``); prediction sees the series as given.
``"auto"`` is no augmentation (``augment_`` False): the classifier's screen needs
classes."""),
    "validation_fraction": ("float", """
Part of the training data held out (a random split) to pick the best epoch in each
phase (pretraining by reconstruction loss on fixed masks), in ``[0, 1)``; 0 trains on
all of it and keeps the last epoch."""),
    "n_estimators": ("int", """
Networks trained together as one ensemble (:class:`~sktspt.nn.ensemble.Ensemble`), each
from its own random weights and masks, sharing batches and one optimizer; ``predict``
averages their values and ``transform`` concatenates their embeddings."""),
}

#: Where the pretrainer's parameters mean something else than the classifier's.
PRETRAINER_DOCS: dict[str, tuple[str, str]] = {
    "pretrain_epochs": ('int or "auto"', """
Self-pretraining epochs, ``>= 0``. ``"auto"``: the epochs that give about
``auto_steps`` optimizer steps (``pretrain_epochs_`` after fit)."""),
    "max_epochs": ('int or "auto"', """
.. deprecated:: 0.3.0
    The pretraining epochs are ``pretrain_epochs``, as in
    :class:`~sktspt.SPTClassifier`; ``max_epochs`` is used, with a ``FutureWarning``,
    until it is removed in 0.4.0."""),
    "callbacks": ("list or None", """
Extra skorch callbacks (instances or ``(name, callback)`` tuples)."""),
}

_MARK = re.compile(r"^([ \t]*)<parameters>[ \t]*$", re.MULTILINE)


def _init_parameters(cls: type) -> dict[str, inspect.Parameter]:
    """The parameters of ``cls.__init__`` after ``self``."""
    return dict(list(inspect.signature(cls.__init__).parameters.items())[1:])


def parameters_section(cls: type, docs: Mapping[str, tuple[str, str]], indent: str = "") -> str:
    """The numpydoc "Parameters" section of ``cls``: its ``__init__``'s names and defaults,
    each with its type and text from ``docs``."""
    lines = ["Parameters", "----------"]
    for name, param in _init_parameters(cls).items():
        kind, text = docs[name]
        default = param.default
        shown = f'"{default}"' if isinstance(default, str) else repr(default)
        lines.append(f"{name} : {kind}, default={shown}")
        lines += [f"    {line}" if line else "" for line in text.strip("\n").splitlines()]
    return "\n".join(f"{indent}{line}" if line else "" for line in lines)


def document_parameters(docs: Mapping[str, tuple[str, str]] | None = None):
    """Class decorator: the "Parameters" section in place of the docstring's ``<parameters>``.

    Names and defaults come from the class's ``__init__``; types and texts from
    :data:`PARAMETER_DOCS`, with ``docs`` taking precedence. A parameter without a text
    is an error at import. The class keeps the merged table as ``_parameter_docs``, from
    which the sktime adapters document the same parameters.
    """
    table = {**PARAMETER_DOCS, **(docs or {})}

    def decorate(cls: type) -> type:
        missing = [name for name in _init_parameters(cls) if name not in table]
        if missing:
            raise RuntimeError(f"{cls.__name__}: no documentation for {missing}.")
        if cls.__doc__:
            cls.__doc__ = _MARK.sub(
                lambda m: parameters_section(cls, table, m.group(1)), cls.__doc__, count=1
            )
        cls._parameter_docs = table
        return cls

    return decorate


# --- an unknown keyword names the closest valid parameter ---------------------------------
#: Names used for the same thing elsewhere (scikit-learn, PyTorch, Hugging Face), each
#: with the parameters it may mean here, the first one that a class takes wins.
ALIASES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("n_jobs", "num_threads", "threads", "n_cpus", "num_workers"),
                    ("n_threads",)),
    **dict.fromkeys(("n_layers", "num_layers", "layers", "n_encoder_layers",
                     "num_encoder_layers", "num_hidden_layers"), ("depth",)),
    **dict.fromkeys(("epochs", "n_epochs", "num_epochs", "max_iter", "n_iter"),
                    ("max_epochs", "pretrain_epochs")),
    **dict.fromkeys(("finetune_epochs", "fine_tune_epochs", "finetuning_epochs"),
                    ("max_epochs",)),
    **dict.fromkeys(("pretraining_epochs", "n_pretrain_epochs", "pre_epochs"),
                    ("pretrain_epochs",)),
    **dict.fromkeys(("learning_rate", "learning_rate_init", "lr_rate", "lrate", "base_lr",
                     "max_lr", "peak_lr", "eta", "step_size"), ("lr",)),
    **dict.fromkeys(("seed", "random_seed", "rng"), ("random_state",)),
    **dict.fromkeys(("nhead", "n_head", "num_heads", "num_attention_heads", "heads"),
                    ("n_heads",)),
    **dict.fromkeys(("embed_dim", "hidden_size", "hidden_dim", "d_hidden", "width",
                     "embedding_dim", "dim"), ("d_model",)),
    **dict.fromkeys(("d_ff", "ff_dim", "ffn_dim", "dim_ff", "intermediate_size"),
                    ("dim_feedforward",)),
    **dict.fromkeys(("patch_len", "patch_length", "stride"), ("patch_size",)),
    **dict.fromkeys(("gpu", "cuda", "use_gpu"), ("device",)),
    **dict.fromkeys(("early_stopping", "early_stopping_patience", "n_iter_no_change"),
                    ("patience",)),
    **dict.fromkeys(("n_members", "ensemble_size", "n_models"), ("n_estimators",)),
    **dict.fromkeys(("mask_rate", "masking_ratio", "mask_prob"), ("mask_ratio",)),
    **dict.fromkeys(("validation_split", "val_fraction", "val_size", "validation_size"),
                    ("validation_fraction",)),
    **dict.fromkeys(("dropout_rate", "drop_rate"), ("dropout",)),
    **dict.fromkeys(("l2", "wd"), ("weight_decay",)),
    **dict.fromkeys(("positional_encoding", "pos_encoding"), ("positional",)),
    **dict.fromkeys(("normalization", "normalise", "scale", "scaling"), ("normalize",)),
    **dict.fromkeys(("dtype", "amp", "mixed_precision"), ("precision",)),
    **dict.fromkeys(("checkpoint", "checkpoint_path", "output_dir"), ("checkpoint_dir",)),
}


def suggest_parameter(name: str, valid: Sequence[str]) -> str | None:
    """The parameter in ``valid`` that ``name`` most likely meant, or None.

    A synonym from :data:`ALIASES` first, then the closest spelling
    (:func:`difflib.get_close_matches`).
    """
    for candidate in ALIASES.get(name.lower(), ()):
        if candidate in valid:
            return candidate
    close = difflib.get_close_matches(name.lower(), list(valid), n=1, cutoff=0.6)
    return close[0] if close else None


def unknown_keyword_message(cls: type, name: str) -> str:
    """Python's message for an unknown keyword of ``cls()``, with the closest parameter."""
    params = _init_parameters(cls)
    valid = [n for n, p in params.items() if not (
        isinstance(p.default, str) and p.default == DEPRECATED)]
    message = f"{cls.__name__}.__init__() got an unexpected keyword argument {name!r}"
    hint = suggest_parameter(name, valid)
    return message + (f"; did you mean {hint!r}?" if hint else ".")


class ParameterHints:
    """Mixin: ``Cls(unknown=...)`` raises ``TypeError`` naming the closest valid parameter.

    The check runs in ``__new__``, which Python calls with the constructor's arguments
    before ``__init__``, so that ``__init__`` stays a plain function whose signature
    scikit-learn (``get_params``, ``clone``) and sktime read. Copies and pickles call
    ``__new__`` without arguments, which passes.
    """

    def __new__(cls, *args, **kwargs):
        if kwargs:
            params = _init_parameters(cls)
            if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
                for name in kwargs:
                    if name not in params:
                        raise TypeError(unknown_keyword_message(cls, name))
        return super().__new__(cls)
