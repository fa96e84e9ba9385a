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

Two kinds of old names are still accepted for one release, each with a ``FutureWarning``:
the flat names a setting replaces (``mask_ratio`` is ``masking__ratio``: :data:`RENAMED`,
translated, so ``get_params`` shows the new name), and the options the project's evidence
rejected (:data:`DEPRECATED_OPTIONS`), which still work until 0.5.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._param_hints import unknown_keyword_message
from ._params import (
    BASE_CONSTRAINTS,
    Integer,
    Number,
    Options,
    boolean,
    callbacks_or_none,
    channels,
    n_threads,
    path_or_none,
    precision,
)
from ._params import (
    init_parameters as _init_parameters,
)
from .augment import MIXUP_KINDS
from .nn.positional import POSITIONALS

__all__ = ["DEPRECATED_OPTIONS", "ENCODER_FIELDS", "GROUPS", "PHASE_STEPS", "RENAMED", "ROUTED",
           "RoutedParams", "Setting", "check_encoder_value", "phase_steps"]


#: Optimizer steps of one ``"auto"`` phase where ``schedule__steps`` is ``"auto"``.
PHASE_STEPS = 1000


def phase_steps(steps) -> int:
    """``schedule__steps`` as the steps of one phase: :data:`PHASE_STEPS` for ``"auto"``."""
    return PHASE_STEPS if steps == "auto" else int(steps)


@dataclass(frozen=True)
class Setting:
    """A routed setting (or deprecated option): default, constraint, numpydoc type and text,
    and the flat name it replaces."""

    default: Any
    check: Callable[[str, Any], None]
    kind: str
    doc: str
    old: str | None = None


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
    "callbacks": "skorch callbacks of pretraining, and checkpoints",
}

_S = Setting
#: Every routed setting, by full name: the single source of their defaults.
ROUTED: dict[str, Setting] = {
    "architecture__n_heads": _S(4, Integer(1), "int", "Attention heads; must divide ``d_model``.",
                                "n_heads"),
    "architecture__dim_feedforward": _S(128, Integer(1), "int", """
Hidden width of each layer's feed-forward block.""", "dim_feedforward"),
    "architecture__dropout": _S(0.1, Number(lambda v: 0 <= v < 1, "a number in [0, 1)"), "float",
                                "Dropout in attention and feed-forward blocks, in ``[0, 1)``.",
                                "dropout"),
    "architecture__positional": _S("sinusoidal", Options(POSITIONALS),
                                   '{"sinusoidal", "learned", "rotary", "alibi", "none"}', """
Positional encoding. ``rotary`` and ``alibi`` are relative (locality priors).""", "positional"),
    "tokenizer__patch_size": _S("auto", Integer(1, auto=True, what="a positive integer or 'auto'"),
                                'int or "auto"', """
Time steps per token (all channels of a patch form one token). ``"auto"``
keeps about 32 tokens per series, so long series stay cheap: 32 for the
median series of an unequal-length panel (at most 256 for its longest).""", "patch_size"),
    "tokenizer__length": _S(None, Integer(2, none=True, what="None or an integer >= 2"),
                            "int or None", """
Resample every series (its observed part, in fit and after) to this many steps
before tokenizing, so series of any length make the same tokens: what an encoder
pretrained on a corpus of varied lengths needs. None keeps each series' length.""", None),
    "attention__levels": _S(3, Integer(1, what="an integer >= 1"), "int", """
Levels of the Lighthouse pyramid, ``>= 1`` (level ``l`` pools ``attention__pool**l``
tokens); 1 is exactly dense attention.""", "lighthouse_levels"),
    "attention__pool": _S(4, Integer(2, what="an integer >= 2"), "int",
                          "Pooling factor between levels, ``>= 2``.", "lighthouse_pool"),
    "attention__topk": _S(8, Integer(1, what="an integer >= 1"), "int", """
Windows refined per tile and level, ``>= 1`` (half by query norm, half by key norm);
the other windows stay in as coarse summaries.""", "lighthouse_topk"),
    "attention__recovery": _S(0.1, Number(lambda v: 0 <= v <= 1, "a number in [0, 1]"), "float", """
Fraction in ``[0, 1]`` of each phase's last optimizer steps trained with dense
attention (the recovery phase).""", "lighthouse_recovery"),
    "masking__ratio": _S(0.7, Number(lambda v: 0 < v < 1, "a number in (0, 1)"), "float",
                         "Fraction of values hidden, in ``(0, 1)``.", "mask_ratio"),
    "masking__ratio_spread": _S(0.25, Number(lambda v: 0 <= v < 0.5, "a number in [0, 0.5)"),
                                "float", """
Each series' hidden fraction is drawn uniformly from ``masking__ratio ±
masking__ratio_spread`` (kept within ``[0.05, 0.95]``), for every objective, so
pretraining also sees series that are mostly visible, as fine-tuning does. In
``[0, 0.5)``; 0: every series hides ``masking__ratio``.""", "mask_ratio_spread"),
    "masking__mean_span": _S(None, Number(lambda v: 0 < v < math.inf, "None or a positive number",
                                          none=True), "float or None", """
Mean length of hidden runs for ``span`` and ``block``, positive; None uses
``max(3, patch size)``.""", "mean_span"),
    "masking__channels": _S(None, channels, "list of int or None", """
The only channels masking may hide (indices into ``n_channels``); the others
(covariates that are always known) stay visible as context and are never
reconstructed. None masks all channels. Unused by ``"lejepa"``.""", "mask_channels"),
    "pretrain_objective__sigreg_lambda": _S(0.05, Number(lambda v: 0 <= v <= 1,
                                                         "a number in [0, 1]"), "float",
                                            "Weight of SIGReg in ``[0, 1]`` (unused with "
                                            "``\"masked\"``).", "sigreg_lambda"),
    "schedule__steps": _S("auto", Integer(1, auto=True), 'int or "auto"', """
Optimizer steps per phase that ``"auto"`` epochs aim at, positive: small datasets get
enough updates, large ones are not over-trained. Where both phases are ``"auto"``,
their ``2 * schedule__steps`` steps are split by ``schedule__pretrain_share``.
``"auto"``: :data:`PHASE_STEPS` (1000) per phase, and both phases' 2000 for a fit that
does not pretrain, so a fit from scratch takes the steps of a pretraining one.""",
                          "auto_steps"),
    "schedule__pretrain_share": _S(0.25, Number(lambda v: 0 < v < 1, "a number in (0, 1)"),
                                   "float", """
Share of the ``2 * schedule__steps`` optimizer steps that pretraining takes when
``pretrain_epochs`` and ``max_epochs`` are both ``"auto"``, in ``(0, 1)``; fine-tuning
takes the rest, so the from-scratch control at equal steps is unchanged: 500 + 1500
steps by default. Unused where either phase has a fixed epoch count or a fitted
``pretrainer`` is given (how the split was chosen: ``docs/tuning.md``).""", "pretrain_share"),
    "schedule__warmup": _S("auto", Number(lambda v: 0 <= v < 1, '"auto" or a number in [0, 1)',
                                          auto=True), 'float or "auto"', """
Linear learning-rate warm-up at the start of each phase, as a fraction of the phase's
optimizer steps in ``[0, 1)``; the cosine decay follows. ``"auto"``: a tenth of the
steps, at most 100.""", "warmup"),
    "schedule__patience": _S(None, Integer(1, none=True), "int or None", """
Early-stopping patience in epochs, positive: a phase stops once its validation loss has
not improved for this many epochs, and the best epoch is restored. Only used where
``validation_fraction`` holds data out; None runs all epochs and restores the best.""",
                             "patience"),
    "optimizer__weight_decay": _S(0.01, Number(lambda v: 0 <= v < math.inf,
                                               "a non-negative number"), "float",
                                  "AdamW weight decay, ``>= 0``.", "weight_decay"),
    "criterion__label_smoothing": _S(0.1, Number(lambda v: 0 <= v <= 1, "a number in [0, 1]"),
                                     "float", "Label smoothing of the cross-entropy loss, in "
                                     "``[0, 1]``.", "label_smoothing"),
    "mixup__kind": _S("auto", Options(MIXUP_KINDS + ("auto",)), '{"auto", "blend", "cutmix"}', """
How mixup combines a series with its partner: ``"blend"`` mixes their values;
``"cutmix"`` replaces a window of ``1 - lam`` of the series by the partner's values
there and weighs the targets by the share kept (:func:`~sktspt.augment.mixup`), which
keeps each series' local shape where a blend of two oscillations cancels. ``"auto"``:
a blend where the training series are smooth (as for ``mixup="auto"``), else the
window (``mixup_kind_``). Only used where ``mixup`` (or ``mixup_``) is above 0.""",
                     "mixup_kind"),
    "early_exit__loss_weight": _S(0.0, Number(lambda v: 0 <= v < math.inf,
                                              "a non-negative number (0 turns the LEAP loss off)"),
                                  "float", """
Weight of the LEAP exit-aware loss added in fine-tuning, ``>= 0`` (:mod:`sktspt.leap`):
it pulls each intermediate layer's pooled representation towards the final one,
so that ``early_exit`` can stop early without losing accuracy. 0 turns it off.""",
                                  "exit_loss_weight"),
    "early_exit__min_layer": _S(2, Integer(1), "int", """
First layer (1-based) at which ``early_exit`` may stop a series.""", "min_exit_layer"),
    "device__threads": _S(None, n_threads, "int or None", """
CPU threads torch uses inside ``fit`` and the methods that predict or transform;
torch's previous count is restored afterwards, and calls in other threads never see
it. None lets the package choose by the model's size: one thread, plus one for every
2**30 multiply-adds of a training step, at most torch's own count. The default model
gets one thread, the fastest on small or busy machines (``docs/performance.md``). The
choice depends on the model's size and the machine's cores, never on its load; CPU
results differ in the last bits between thread counts, so it is part of what makes a
seeded fit bitwise reproducible. An int (at most 4096) overrides it.""", "n_threads"),
    "device__precision": _S("auto", precision, '{"auto", "float32", "bfloat16", "float16"}', """
Numeric precision of training and prediction (:mod:`sktspt.precision`): autocast
of the network to bfloat16 or float16 (float16 with loss scaling, CUDA only),
losses and SIGReg in float32, weights always float32; on CUDA, TF32 matmuls
unless ``"float32"``. ``"auto"``: bfloat16 on a CUDA GPU that supports it,
float32 elsewhere (on CPU). Can be changed after fitting: prediction uses the
current value, and falls back to float32 where the device cannot run it.""", "precision"),
    "callbacks__pretrain": _S(None, callbacks_or_none, "list or None", """
Extra skorch callbacks for pretraining (``callbacks`` act on fine-tuning only).""",
                              "pretrain_callbacks"),
    "callbacks__checkpoint_dir": _S(None, path_or_none, "str, path or None", """
Folder for resumable checkpoints (one per epoch, in each phase), as skorch's
``Checkpoint(dirname=...)``. When set, a ``fit`` that was interrupted (Ctrl-C, a
killed process) resumes from its last checkpoint when called again with the same data
and parameters, losing at most the epoch in progress; a finished fit is reloaded, not
retrained. Use one folder per fit: a folder written by a different fit raises
``ValueError`` (so leave it None under sktime's ``evaluate`` and benchmarks, which fit
clones repeatedly). None writes nothing.""", "checkpoint_dir"),
}

#: Options the project's evidence rejected: accepted with a ``FutureWarning`` in 0.4,
#: removed in 0.5 (``docs/tuning.md`` has the evidence).
DEPRECATED_OPTIONS: dict[str, Setting] = {
    "layer_decay": _S(1.0, Number(lambda v: 0 < v <= 1, "a number in (0, 1]"), "float",
                      "Layer-wise learning-rate decay in fine-tuning, in ``(0, 1]``."),
    "reinit_layers": _S(0, Integer(0), "int",
                        "Top encoder layers that start fine-tuning from fresh weights."),
    "differences": _S(0, Integer(0), "int",
                      "Orders of differences the tokenizer reads beside each channel."),
    "pretrain_crops": _S(None, Number(lambda v: 0 < v < 1, "None or the shortest crop as a "
                                      "fraction of each series, in (0, 1)", none=True),
                         "float or None", "Pretraining on random crops of each series."),
    "n_estimators": _S(1, Integer(1), "int", "Networks trained together as one ensemble."),
    "self_training": _S(None, Number(lambda v: 0 < v < 1, "None or a probability in (0, 1)",
                                     none=True), "float or None",
                        "Self-training threshold on ``X_unlabeled``."),
    "cache_features": _S(False, boolean, "bool",
                         "Compute the rocket tokenizer's features once per fine-tuning phase."),
}
del _S

#: Every old flat name and the routed setting it became.
RENAMED: dict[str, str] = {s.old: name for name, s in ROUTED.items() if s.old}

#: The release that removes the old names and the deprecated options.
REMOVED_IN = "0.5"


def _table(name: str) -> Setting:
    return ROUTED[name] if name in ROUTED else DEPRECATED_OPTIONS[name]


class RoutedParams:
    """Mixin: routed ``<group>__<name>`` settings beside the explicit parameters.

    A class lists the routed settings it takes (``_routed``) and the deprecated options it
    still accepts (``_deprecated``); its ``__init__`` stores its explicit parameters and
    calls :meth:`_set_routed` with the rest of its keywords. The settings given are kept
    in one private mapping (``_routed_values``), not as attributes, so that the instance's
    public attributes are exactly its explicit parameters (scikit-learn's convention);
    ``est.attention__levels`` still reads a setting (given, or its default).

    As scikit-learn asks, neither ``__init__`` nor ``set_params`` raises: a keyword that
    is no parameter or setting (a typo) is kept, returned by ``get_params`` so that
    ``clone`` keeps it too, and ``fit`` refuses it with a ``TypeError`` that names the
    closest valid name (:meth:`_check_routed`), as LightGBM's estimators do with theirs.
    """

    _routed: tuple[str, ...] = ()
    _deprecated: tuple[str, ...] = ()
    #: Old names of explicit parameters, ``{old: new}``, accepted until :data:`REMOVED_IN`.
    _renamed: dict[str, str] = {}

    @classmethod
    def _extra_names(cls) -> tuple[str, ...]:
        """The keywords stored beside the explicit parameters."""
        return cls._routed + cls._deprecated

    @classmethod
    def _valid_names(cls) -> list[str]:
        """The names a user should write: explicit parameters and routed settings."""
        explicit = [n for n, p in _init_parameters(cls).items() if p.kind is not p.VAR_KEYWORD]
        return explicit + list(cls._routed)

    @classmethod
    def _translate(cls, name: str, stacklevel: int) -> str:
        """``name`` as stored: an old flat name becomes its routed setting (with a
        ``FutureWarning``), a deprecated option warns, anything else is kept as given."""
        if name in cls._routed:
            return name
        new = RENAMED.get(name)
        if new in cls._routed:
            warnings.warn(f"{cls.__name__}({name}=...) is now spelled {new}=...; the old "
                          f"name is deprecated and will be removed in {REMOVED_IN}.",
                          FutureWarning, stacklevel=stacklevel + 1)
            return new
        if name in cls._deprecated:
            warnings.warn(f"{cls.__name__}'s {name} is deprecated and will be removed in "
                          f"{REMOVED_IN}: the project's evidence did not support it "
                          "(docs/tuning.md).", FutureWarning, stacklevel=stacklevel + 1)
        return name

    @property
    def _values(self) -> dict:
        """The routed settings given (created on first use: copies skip ``__init__``)."""
        return self.__dict__.setdefault("_routed_values", {})

    def _set_routed(self, kwargs: dict) -> None:
        """Store ``kwargs`` (routed settings, old names, deprecated options, typos)."""
        values = self.__dict__["_routed_values"] = {}
        for old, new in self._renamed.items():  # an explicit parameter's old name
            if old in kwargs:
                value = kwargs.pop(old)
                if getattr(self, new) != "auto":
                    values[f"{old}+{new}"] = value  # refused in fit, naming both
                    continue
                warnings.warn(f"{type(self).__name__}'s {old} was renamed {new}; {old} is "
                              f"removed in {REMOVED_IN}. Use {new}={value!r}.",
                              FutureWarning, stacklevel=3)
                setattr(self, new, value)
        for name, value in kwargs.items():
            new = self._translate(name, stacklevel=4)  # the caller of __init__
            if new != name and new in kwargs:
                values[f"{name}+{new}"] = value  # refused in fit, naming both
                continue
            values[new] = value

    def _check_routed(self) -> None:
        """Refuse, naming the closest valid name, what is no parameter or setting."""
        for name in self._values:
            if name in self._extra_names():
                continue
            old, plus, new = name.partition("+")
            if plus:
                raise TypeError(f"{type(self).__name__} got both {old} and {new}; {old} is the "
                                f"old name of {new}: set {new} only.")
            raise TypeError(unknown_keyword_message(type(self), name))

    def __getattr__(self, name: str):
        # Only reached where normal lookup fails: routed settings read as attributes.
        if not name.startswith("_") and name in type(self)._extra_names():
            return self._values.get(name, _table(name).default)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def get_params(self, deep=True):
        """The explicit parameters, plus the routed settings that were given (as skorch)."""
        params = super().get_params(deep=deep)
        params.update(self._values)
        return params

    def set_params(self, **params):
        """Set parameters; ``<group>__<name>`` settings, old names and anything that is no
        explicit parameter are stored here (and checked in ``fit``)."""
        explicit = set(self._get_param_names())
        for key in list(params):
            if key not in explicit and not _nested(self, key):
                value = params.pop(key)
                self._values[self._translate(key, stacklevel=2)] = value
        return super().set_params(**params) if params else self

    @classmethod
    def _constraints(cls) -> dict:
        """The constraint of every name in :meth:`_settings`."""
        return {**cls._parameter_constraints,
                **{name: _table(name).check for name in cls._extra_names()}}

    def _settings(self) -> dict:
        """Every parameter and setting as this estimator uses it: the explicit parameters
        as set, each routed setting and deprecated option as given or its default."""
        settings = {n: getattr(self, n) for n, p in _init_parameters(type(self)).items()
                    if p.kind is not p.VAR_KEYWORD}
        values = self._values
        for name in self._extra_names():
            settings[name] = values.get(name, _table(name).default)
        return settings

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in cls.__dict__.get("_routed", ()):
            old = ROUTED[name].old
            if old and old not in cls.__dict__:
                setattr(cls, old, _old_name(old, name))


def _nested(est, key: str) -> bool:
    """Whether ``key`` addresses a parameter of an estimator-valued parameter."""
    value = est.__dict__.get(key.partition("__")[0])
    return callable(getattr(value, "set_params", None))


def _old_name(old: str, new: str) -> property:
    """The old flat name as a deprecated alias of its routed setting."""

    def get(self):
        warnings.warn(f"{old} is now {new}.", FutureWarning, stacklevel=2)
        return self._values.get(new, ROUTED[new].default)

    def set(self, value):
        warnings.warn(f"{old} is now {new}.", FutureWarning, stacklevel=2)
        self._values[new] = value

    return property(get, set, doc=f"Deprecated: ``{new}``.")


#: Where each field of the encoder's architecture (``encoder_kwargs_``, named as the
#: network's arguments) comes from among the parameters and settings.
ENCODER_FIELDS: dict[str, str] = {
    "d_model": "d_model", "depth": "depth", "n_heads": "architecture__n_heads",
    "dim_feedforward": "architecture__dim_feedforward", "dropout": "architecture__dropout",
    "positional": "architecture__positional", "architecture": "architecture",
    "tokenizer": "tokenizer", "differences": "differences",
}


def check_encoder_value(field: str, value) -> None:
    """Check one field of ``encoder_kwargs_`` as ``fit`` would check its parameter."""
    source = ENCODER_FIELDS[field]
    check = BASE_CONSTRAINTS[source] if source in BASE_CONSTRAINTS else _table(source).check
    check(field, value)
