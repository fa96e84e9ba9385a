"""The parameters of the SPT estimators: their constraints and the checks between them.

Each estimator writes out its ``__init__`` (which only stores the arguments, as
scikit-learn requires) and declares a constraint per parameter in
``_parameter_constraints``, merged by subclasses as scikit-learn's estimators merge
theirs::

    class SPTClassifier(..., SPTBase):
        _parameter_constraints = {**SPTBase._parameter_constraints, "mixup": ..., ...}

This module holds the constraint callables, the constraints of the parameters both
estimators share (:data:`BASE_CONSTRAINTS`), the checks between parameters
(:data:`RELATIONS`) and :func:`validate`, which runs them at the start of ``fit``. Each
parameter's numpydoc entry, from which the "Parameters" section of each class docstring is
written, is :mod:`sktspt._param_docs`'; the closest valid parameter of an unknown keyword
is :mod:`sktspt._param_hints`'.

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

import math
import os
from collections.abc import Callable, Sequence
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
    "RELATIONS",
    "check_attention_params",
    "check_value",
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
