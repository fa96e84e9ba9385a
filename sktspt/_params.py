"""The parameters of the SPT estimators: their constraints and the checks between them.

Each estimator declares a constraint per parameter in ``_parameter_constraints``, merged
by subclasses as scikit-learn's estimators merge theirs; :func:`validate` runs them, then
the checks between parameters (:data:`RELATIONS`), at the start of ``fit``. A constraint
is a plain callable ``check(name, value)`` that raises, so a parameter checked by the code
that interprets it points at that function (``precision``:
:func:`sktspt.precision.check_precision`). Why not scikit-learn's private
``_param_validation``: ``docs/architecture.md``. The parameters' docs are
:mod:`sktspt._param_docs`', the hints for unknown keywords :mod:`sktspt._param_hints`'.
"""

from __future__ import annotations

import inspect
import math
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

__all__ = ["BASE_CONSTRAINTS", "Integer", "Number", "Options", "RELATIONS",
           "check_encoder_value", "validate"]

PRETRAIN_OBJECTIVES = ("masked", "lejepa", "masked+sigreg")
NORMALIZATIONS = ("auto", "global", "instance", None)
#: The parameters that shape the network, after the input (``encoder_kwargs_``).
ARCHITECTURE = (
    "d_model", "depth", "n_heads", "dim_feedforward", "dropout", "positional", "architecture",
    "tokenizer",
)


def init_parameters(cls: type) -> dict[str, inspect.Parameter]:
    """The parameters of ``cls.__init__`` after ``self`` (``**kwargs`` included)."""
    return dict(list(inspect.signature(cls.__init__).parameters.items())[1:])


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
    """An integer ``>= low`` (and ``<= high``); optionally also None or ``"auto"``."""

    low: int
    none: bool = False
    auto: bool = False
    what: str | None = None
    high: int | None = None

    def __call__(self, name: str, value) -> None:
        if _special(value, self.none, self.auto):
            return
        if not _is_int(value) or value < self.low or self.high is not None and value > self.high:
            raise ValueError(f"{name} must be {self._what()}, got {show(value)}.")

    def _what(self) -> str:
        if self.what:
            return self.what
        kind = "a positive integer" if self.low == 1 else "a non-negative integer"
        return (("None or " if self.none else "'auto' or " if self.auto else "") + kind
                + ("" if self.high is None else f" of at most {self.high}"))


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
    what = 'False, "shift", "roll" or "auto"'
    if value is True or value is np.True_ or isinstance(value, str) and value == "stretch":
        raise ValueError(f"{name}={value!r} (stretching) was removed in 0.5: it lost up to 35 "
                         "points where frequency is the class (docs/tuning-history.md). "
                         f"{name} must be {what}.")
    if isinstance(value, str):
        Options((*AUGMENTS, "auto"), what)(name, value)
    elif not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be {what}, got {show(value)}.")


#: Most threads ``device__threads`` may ask for (torch crashes on counts such as 10**6).
MAX_THREADS = 4096


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
    """None, the name of a shipped encoder, or an estimator (it has ``fit`` and
    ``get_params``); fitted, or shipped, is checked in fit."""
    if value is not None and not isinstance(value, str) and not (
        callable(getattr(value, "fit", None)) and callable(getattr(value, "get_params", None))
    ):
        raise TypeError(
            f"{name} must be None, the name of a shipped encoder (sktspt.pretrained."
            "available()), or a fitted SPTPretrainer (or SPTClassifier), possibly in "
            f"sklearn.frozen.FrozenEstimator, got {type(value).__name__}."
        )


def channels(name: str, value) -> None:
    """None or a non-empty list of distinct channel indices."""
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
    "tokenizer": Options(TOKENIZERS),
    "architecture": Options(ARCHITECTURES),
    "attention": Options(ATTENTIONS),
    "normalize": Options(NORMALIZATIONS, "'auto', 'global', 'instance' or None"),
    # the self-pretraining objective
    "masking": Options(MASKINGS),
    "pretrain_objective": Options(PRETRAIN_OBJECTIVES),
    # training length and optimisation
    "pretrain_epochs": EPOCHS,
    "lr": Number(lambda v: 0 < v < math.inf, "a positive number"),
    "batch_size": Integer(1),
    "augment": _augment,
    "validation_fraction": Number(lambda v: 0 <= v < 1, "a number in [0, 1)"),
    "callbacks": callbacks_or_none,
    # running
    "device": _device,
    "random_state": random_state,
    "verbose": verbosity,
    # routed settings (their defaults: each group's component, sktspt._routed)
    "architecture__n_heads": Integer(1),
    "architecture__dim_feedforward": Integer(1),
    "architecture__dropout": Number(lambda v: 0 <= v < 1, "a number in [0, 1)"),
    "architecture__positional": Options(POSITIONALS),
    "tokenizer__patch_size": Integer(1, auto=True, what="a positive integer or 'auto'"),
    "tokenizer__length": Integer(2, none=True, what="None or an integer >= 2"),
    "attention__levels": Integer(1, what="an integer >= 1"),
    "attention__pool": Integer(2, what="an integer >= 2"),
    "attention__topk": Integer(1, what="an integer >= 1"),
    "attention__recovery": Number(lambda v: 0 <= v <= 1, "a number in [0, 1]"),
    "masking__ratio": Number(lambda v: 0 < v < 1, "a number in (0, 1)"),
    "masking__ratio_spread": Number(lambda v: 0 <= v < 0.5, "a number in [0, 0.5)"),
    "masking__mean_span": Number(lambda v: 0 < v < math.inf, "None or a positive number",
                                 none=True),
    "masking__channels": channels,
    "pretrain_objective__sigreg_lambda": Number(lambda v: 0 <= v <= 1, "a number in [0, 1]"),
    "schedule__steps": Integer(1, auto=True),
    "schedule__warmup": Number(lambda v: 0 <= v < 1, '"auto" or a number in [0, 1)',
                               auto=True),
    "schedule__patience": Integer(1, none=True),
    "optimizer__weight_decay": Number(lambda v: 0 <= v < math.inf, "a non-negative number"),
    "device__threads": Integer(1, none=True, high=MAX_THREADS),
    "device__precision": lambda name, value: check_precision(value, name),
}


def check_encoder_value(field: str, value) -> None:
    """Check one argument of the encoder (``encoder_kwargs_``) as ``fit`` would check the
    parameter, or the ``architecture__`` setting, that gives it."""
    check = BASE_CONSTRAINTS.get(field) or BASE_CONSTRAINTS[f"architecture__{field}"]
    check(field, value)


# --- constraints between parameters -------------------------------------------------------
# Each takes the resolved settings (a plain dict: ``RoutedParams._settings``).
def lighthouse(s: dict) -> Lighthouse | None:
    """The Lighthouse settings of resolved, validated settings ``s`` (None for dense
    attention), refused where its tiles are too large or no layer would be sparse."""
    if s["attention"] == "dense":
        return None
    levels, pool, topk, recovery = (s[f"attention__{k}"] for k in ("levels", "pool", "topk",
                                                                   "recovery"))
    cfg = Lighthouse(levels=int(levels), pool=int(pool), topk=int(topk),
                     recovery=float(recovery))
    if cfg.tile_tokens > 2**24:
        raise ValueError(
            f"attention__pool={cfg.pool} and attention__levels={cfg.levels} make tiles of "
            f"{cfg.tile_tokens} tokens; lower one of them."
        )
    depth = s["depth"]
    if isinstance(depth, int | np.integer) and not isinstance(depth, bool) and depth < 3:
        raise ValueError(
            f"attention='lighthouse' needs depth >= 3, got depth={int(depth)}: the first and "
            "last layers always stay dense, so there would be no layer to make sparse."
        )
    return cfg


def _heads_divide_width(s: dict) -> None:
    heads = s["architecture__n_heads"]
    if s["d_model"] % heads:
        raise ValueError(
            f"d_model={s['d_model']} must be divisible by architecture__n_heads={heads}.")


#: Checks of combinations, run after every parameter passed its own constraint.
RELATIONS: tuple[Callable[[dict], None], ...] = (_heads_divide_width, lighthouse)


def validate(settings: dict, constraints: dict, names: Sequence[str] | None = None,
             owner: str = "estimator") -> None:
    """Check resolved ``settings`` (all, or ``names`` only) against ``constraints``.

    With all of them, :data:`RELATIONS` are checked too. Raises ``ValueError`` or
    ``TypeError`` naming the parameter. A parameter without a constraint is a bug of the
    class, reported as such.
    """
    for name in settings if names is None else names:
        if name not in constraints:
            raise RuntimeError(f"{owner} declares no constraint for {name!r}.")
        constraints[name](name, settings[name])
    if names is None:
        for relation in RELATIONS:
            relation(settings)
