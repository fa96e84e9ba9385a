"""Routed settings: each seed system's settings grouped under its choice, as skorch routes
``module__`` and ``optimizer__``.

An estimator's ``__init__`` takes its top-level parameters by name and the settings of
each group as ``<group>__<name>`` keywords (``attention="lighthouse",
attention__levels=3``). :data:`ROUTED` is the one table of those settings: each one's
default, constraint and documentation. :class:`RoutedParams` stores the settings given as
attributes under their full name, returns them from ``get_params`` and takes them in
``set_params`` (so ``clone``, pickling and ``GridSearchCV`` over ``attention__levels``
work), and :meth:`RoutedParams._settings` resolves every parameter and setting into one
plain dict, defaults from the table, which is what the internals read.

The old flat names (``mask_ratio`` for ``masking__ratio``) and the options the project's
evidence rejected were removed in 0.5: passing one raises ``TypeError`` saying so
(:data:`sktspt._param_hints.REMOVED`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._param_hints import removed_message, unknown_keyword_message
from ._params import (
    BASE_CONSTRAINTS,
    Integer,
    Number,
    Options,
    callbacks_or_none,
    channels,
    n_threads,
    precision,
)
from ._params import (
    init_parameters as _init_parameters,
)
from .augment import MIXUP_KINDS
from .nn.positional import POSITIONALS

__all__ = ["GROUPS", "PHASE_STEPS", "ROUTED", "RoutedParams", "Setting",
           "check_encoder_value", "params_for", "phase_steps"]


#: Optimizer steps of one ``"auto"`` phase where ``schedule__steps`` is ``"auto"``.
PHASE_STEPS = 1000


def phase_steps(steps) -> int:
    """``schedule__steps`` as the steps of one phase: :data:`PHASE_STEPS` for ``"auto"``."""
    return PHASE_STEPS if steps == "auto" else int(steps)


@dataclass(frozen=True)
class Setting:
    """A routed setting: default, constraint, numpydoc type and text."""

    default: Any
    check: Callable[[str, Any], None]
    kind: str
    doc: str


#: What each group's settings tune (the group's name is a top-level parameter, except
#: ``schedule``, ``optimizer`` and ``criterion``, which name skorch's parts).
GROUPS: dict[str, str] = {
    "architecture": "the encoder's layers",
    "tokenizer": "how series become tokens",
    "attention": "Lighthouse sparse attention (``attention=\"lighthouse\"``)",
    "masking": "what pretraining hides",
    "pretrain_objective": "the SIGReg term of ``\"lejepa\"`` and ``\"masked+sigreg\"``",
    "schedule": "training length, early stopping and the learning-rate schedule",
    "optimizer": "AdamW (skorch's ``optimizer__`` convention)",
    "criterion": "the fine-tuning loss",
    "mixup": "how mixup mixes",
    "early_exit": "LEAP's exit-aware loss and exit rule",
    "device": "threads and numeric precision",
    "pretrain": "the pretraining net: its own skorch ``NeuralNet`` arguments",
}

_S = Setting
#: Every routed setting, by full name: the single source of their defaults.
ROUTED: dict[str, Setting] = {
    "architecture__n_heads": _S(4, Integer(1), "int", "Attention heads; must divide ``d_model``."),
    "architecture__dim_feedforward": _S(128, Integer(1), "int", """
Hidden width of each layer's feed-forward block."""),
    "architecture__dropout": _S(0.1, Number(lambda v: 0 <= v < 1, "a number in [0, 1)"), "float",
                                "Dropout in attention and feed-forward blocks, in ``[0, 1)``."),
    "architecture__positional": _S("sinusoidal", Options(POSITIONALS),
                                   '{"sinusoidal", "learned", "rotary", "alibi", "none"}', """
Positional encoding. ``rotary`` and ``alibi`` are relative (locality priors)."""),
    "tokenizer__patch_size": _S("auto", Integer(1, auto=True, what="a positive integer or 'auto'"),
                                'int or "auto"', """
Time steps per token (all channels of a patch form one token). ``"auto"``
keeps about 32 tokens per series, so long series stay cheap: 32 for the
median series of an unequal-length panel (at most 256 for its longest)."""),
    "tokenizer__length": _S(None, Integer(2, none=True, what="None or an integer >= 2"),
                            "int or None", """
Resample every series (its observed part, in fit and after) to this many steps
before tokenizing, so series of any length make the same tokens: what an encoder
pretrained on a corpus of varied lengths needs. None keeps each series' length."""),
    "attention__levels": _S(3, Integer(1, what="an integer >= 1"), "int", """
Levels of the Lighthouse pyramid, ``>= 1`` (level ``l`` pools ``attention__pool**l``
tokens); 1 is exactly dense attention."""),
    "attention__pool": _S(4, Integer(2, what="an integer >= 2"), "int",
                          "Pooling factor between levels, ``>= 2``."),
    "attention__topk": _S(8, Integer(1, what="an integer >= 1"), "int", """
Windows refined per tile and level, ``>= 1`` (half by query norm, half by key norm);
the other windows stay in as coarse summaries."""),
    "attention__recovery": _S(0.1, Number(lambda v: 0 <= v <= 1, "a number in [0, 1]"), "float", """
Fraction in ``[0, 1]`` of each phase's last optimizer steps trained with dense
attention (the recovery phase)."""),
    "masking__ratio": _S(0.7, Number(lambda v: 0 < v < 1, "a number in (0, 1)"), "float",
                         "Fraction of values hidden, in ``(0, 1)``."),
    "masking__ratio_spread": _S(0.25, Number(lambda v: 0 <= v < 0.5, "a number in [0, 0.5)"),
                                "float", """
Each series' hidden fraction is drawn uniformly from ``masking__ratio ±
masking__ratio_spread`` (kept within ``[0.05, 0.95]``), for every objective, so
pretraining also sees series that are mostly visible, as fine-tuning does. In
``[0, 0.5)``; 0: every series hides ``masking__ratio``."""),
    "masking__mean_span": _S(None, Number(lambda v: 0 < v < math.inf, "None or a positive number",
                                          none=True), "float or None", """
Mean length of hidden runs for ``span`` and ``block``, positive; None uses
``max(3, patch size)``."""),
    "masking__channels": _S(None, channels, "list of int or None", """
The only channels masking may hide (indices into ``n_channels``); the others
(covariates that are always known) stay visible as context and are never
reconstructed. None masks all channels. Unused by ``"lejepa"``."""),
    "pretrain_objective__sigreg_lambda": _S(0.05, Number(lambda v: 0 <= v <= 1,
                                                         "a number in [0, 1]"), "float",
                                            "Weight of SIGReg in ``[0, 1]`` (unused with "
                                            "``\"masked\"``)."),
    "schedule__steps": _S("auto", Integer(1, auto=True), 'int or "auto"', """
Optimizer steps per phase that ``"auto"`` epochs aim at, positive: small datasets get
enough updates, large ones are not over-trained. Where both phases are ``"auto"``,
their ``2 * schedule__steps`` steps are split by ``schedule__pretrain_share``.
``"auto"``: :data:`PHASE_STEPS` (1000) per phase, and both phases' 2000 for a fit that
does not pretrain, so a fit from scratch takes the steps of a pretraining one."""),
    "schedule__pretrain_share": _S(0.25, Number(lambda v: 0 < v < 1, "a number in (0, 1)"),
                                   "float", """
Share of the ``2 * schedule__steps`` optimizer steps that pretraining takes when
``pretrain_epochs`` and ``max_epochs`` are both ``"auto"``, in ``(0, 1)``; fine-tuning
takes the rest, so the from-scratch control at equal steps is unchanged: 500 + 1500
steps by default. Unused where either phase has a fixed epoch count or a fitted
``pretrainer`` is given (how the split was chosen: ``docs/tuning.md``)."""),
    "schedule__warmup": _S("auto", Number(lambda v: 0 <= v < 1, '"auto" or a number in [0, 1)',
                                          auto=True), 'float or "auto"', """
Linear learning-rate warm-up at the start of each phase, as a fraction of the phase's
optimizer steps in ``[0, 1)``; the cosine decay follows. ``"auto"``: a tenth of the
steps, at most 100."""),
    "schedule__patience": _S(None, Integer(1, none=True), "int or None", """
Early-stopping patience in epochs, positive: a phase stops once its validation loss has
not improved for this many epochs, and the best epoch is restored. Only used where
``validation_fraction`` holds data out; None runs all epochs and restores the best."""),
    "optimizer__weight_decay": _S(0.01, Number(lambda v: 0 <= v < math.inf,
                                               "a non-negative number"), "float",
                                  "AdamW weight decay, ``>= 0``."),
    "criterion__label_smoothing": _S(0.1, Number(lambda v: 0 <= v <= 1, "a number in [0, 1]"),
                                     "float", "Label smoothing of the cross-entropy loss, in "
                                     "``[0, 1]``."),
    "mixup__kind": _S("auto", Options(MIXUP_KINDS + ("auto",)), '{"auto", "blend", "cutmix"}', """
How mixup combines a series with its partner: ``"blend"`` mixes their values;
``"cutmix"`` replaces a window of ``1 - lam`` of the series by the partner's values
there and weighs the targets by the share kept (:func:`~sktspt.augment.mixup`), which
keeps each series' local shape where a blend of two oscillations cancels. ``"auto"``:
a blend where the training series are smooth (as for ``mixup="auto"``), else the
window (``mixup_kind_``). Only used where ``mixup`` (or ``mixup_``) is above 0."""),
    "early_exit__loss_weight": _S(0.0, Number(lambda v: 0 <= v < math.inf,
                                              "a non-negative number (0 turns the LEAP loss off)"),
                                  "float", """
Weight of the LEAP exit-aware loss added in fine-tuning, ``>= 0`` (:mod:`sktspt.leap`):
it pulls each intermediate layer's pooled representation towards the final one,
so that ``early_exit`` can stop early without losing accuracy. 0 turns it off."""),
    "early_exit__min_layer": _S(2, Integer(1), "int", """
First layer (1-based) at which ``early_exit`` may stop a series."""),
    "device__threads": _S(None, n_threads, "int or None", """
CPU threads torch uses inside ``fit`` and the methods that predict or transform;
torch's previous count is restored afterwards, and calls in other threads never see
it. None lets the package choose by the model's size: one thread, plus one for every
2**30 multiply-adds of a training step, at most torch's own count. The default model
gets one thread, the fastest on small or busy machines (``docs/performance.md``). The
choice depends on the model's size and the machine's cores, never on its load; CPU
results differ in the last bits between thread counts, so it is part of what makes a
seeded fit bitwise reproducible. An int (at most 4096) overrides it."""),
    "device__precision": _S("auto", precision, '{"auto", "float32", "bfloat16", "float16"}', """
Numeric precision of training and prediction (:mod:`sktspt.precision`): autocast
of the network to bfloat16 or float16 (float16 with loss scaling, CUDA only),
losses and SIGReg in float32, weights always float32; on CUDA, TF32 matmuls
unless ``"float32"``. ``"auto"``: bfloat16 on a CUDA GPU that supports it,
float32 elsewhere (on CPU). Can be changed after fitting: prediction uses the
current value, and falls back to float32 where the device cannot run it."""),
    "pretrain__callbacks": _S(None, callbacks_or_none, "list or None", """
Extra skorch callbacks of the pretraining net (``callbacks`` act on fine-tuning only)."""),
}

del _S


class RoutedParams:
    """Mixin: routed ``<group>__<name>`` settings beside the explicit parameters.

    A class lists the routed settings it takes (``_routed``); its ``__init__`` stores its
    explicit parameters and calls :meth:`_set_routed` with the rest of its keywords. The
    settings given are kept in one private mapping (``_routed_values``), not as
    attributes, so that the instance's public attributes are exactly its explicit
    parameters (scikit-learn's convention); ``est.attention__levels`` still reads a
    setting (given, or its default).

    As scikit-learn asks, neither ``__init__`` nor ``set_params`` checks a value: a
    keyword that is no parameter or setting (a typo) is kept, returned by ``get_params``
    so that ``clone`` keeps it too, and ``fit`` refuses it with a ``TypeError`` that names
    the closest valid name (:meth:`_check_routed`), as LightGBM's estimators do with
    theirs. A name removed in 0.5 can never become valid: it raises ``TypeError`` at once,
    saying what replaced it.
    """

    _routed: tuple[str, ...] = ()

    @classmethod
    def _valid_names(cls) -> list[str]:
        """The names a user should write: explicit parameters and routed settings."""
        explicit = [n for n, p in _init_parameters(cls).items() if p.kind is not p.VAR_KEYWORD]
        return explicit + list(cls._routed)

    @classmethod
    def _refuse_removed(cls, names) -> None:
        """``TypeError`` for a name removed in 0.5 (an old flat name or a rejected option)."""
        for name in names:
            if name not in cls._routed and (message := removed_message(cls, name)):
                raise TypeError(message)

    @property
    def _values(self) -> dict:
        """The routed settings given (created on first use: copies skip ``__init__``)."""
        return self.__dict__.setdefault("_routed_values", {})

    def _set_routed(self, kwargs: dict) -> None:
        """Store ``kwargs`` (routed settings, and typos for ``fit`` to refuse)."""
        self._refuse_removed(kwargs)
        self.__dict__["_routed_values"] = dict(kwargs)

    def _check_routed(self) -> None:
        """Refuse, naming the closest valid name, what is no parameter or setting."""
        for name in self._values:
            if name not in self._routed:
                raise TypeError(unknown_keyword_message(type(self), name))

    def __getattr__(self, name: str):
        # Only reached where normal lookup fails: routed settings read as attributes.
        if not name.startswith("_") and name in type(self)._routed:
            return self._values.get(name, ROUTED[name].default)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def get_params(self, deep=True):
        """The explicit parameters, plus the routed settings that were given (as skorch)."""
        params = super().get_params(deep=deep)
        params.update(self._values)
        return params

    def set_params(self, **params):
        """Set parameters; ``<group>__<name>`` settings and anything that is no explicit
        parameter are stored here (and checked in ``fit``)."""
        explicit = set(self._get_param_names())
        extra = {key: params.pop(key) for key in list(params)
                 if key not in explicit and not _nested(self, key)}
        self._refuse_removed(extra)
        self._values.update(extra)
        return super().set_params(**params) if params else self

    @classmethod
    def _constraints(cls) -> dict:
        """The constraint of every name in :meth:`_settings`."""
        return {**cls._parameter_constraints, **{name: ROUTED[name].check for name in cls._routed}}

    def _settings(self) -> dict:
        """Every parameter and setting as this estimator uses it: the explicit parameters
        as set, each routed setting as given or its default. Inside ``fit``, the read-only
        mapping that fit resolved and validated at its start
        (:func:`sktspt._base.estimator_call`)."""
        if (frozen := self.__dict__.get("_fit_settings")) is not None:
            return frozen
        settings = {n: getattr(self, n) for n, p in _init_parameters(type(self)).items()
                    if p.kind is not p.VAR_KEYWORD}
        values = self._values
        for name in self._routed:
            settings[name] = values.get(name, ROUTED[name].default)
        return settings


def _nested(est, key: str) -> bool:
    """Whether ``key`` addresses a parameter of an estimator-valued parameter."""
    value = est.__dict__.get(key.partition("__")[0])
    return callable(getattr(value, "set_params", None))


def params_for(settings, prefix: str) -> dict:
    """The settings routed to component ``prefix``, without the prefix: skorch's
    ``get_params_for`` (``architecture__n_heads`` is the encoder's own ``n_heads``)."""
    start = prefix + "__"
    return {k[len(start):]: v for k, v in settings.items() if k.startswith(start)}


def check_encoder_value(field: str, value) -> None:
    """Check one argument of the encoder (``encoder_kwargs_``) as ``fit`` would check the
    parameter, or the ``architecture__`` setting, that gives it."""
    check = BASE_CONSTRAINTS.get(field) or ROUTED[f"architecture__{field}"].check
    check(field, value)
