"""Every parameter of the SPT estimators, declared once.

:data:`PARAMS` lists each parameter with its default, its constraint and its numpydoc
entry. From it, :func:`declare_params` gives :class:`~sktspt.SPTClassifier`,
:class:`~sktspt.SPTPretrainer` and the sktime adapters their ``__init__`` (which only
stores the arguments, as scikit-learn requires) and the "Parameters" section of their
docstring; :func:`validate` checks the constraints at the start of ``fit``.

Why a small table of our own rather than scikit-learn's ``_parameter_constraints``:

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
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch

from .augment import AUGMENTS, MIXUP_KINDS
from .masking import MASKINGS
from .nn.positional import POSITIONALS
from .nn.tokenizers import TOKENIZERS
from .nn.whitebox import ARCHITECTURES
from .precision import check_precision

__all__ = ["Param", "PARAMS", "params_of", "declare_params", "validate", "check_value"]

PRETRAIN_OBJECTIVES = ("masked", "lejepa", "masked+sigreg")
NORMALIZATIONS = ("auto", "global", "instance", None)
#: The roles a parameter can belong to: the two estimators.
CLASSIFIER, PRETRAINER = "classifier", "pretrainer"
BOTH = (CLASSIFIER, PRETRAINER)
#: The parameters that shape the network, after the input (``encoder_kwargs_``).
ARCHITECTURE = (
    "d_model", "depth", "n_heads", "dim_feedforward", "dropout", "positional", "architecture",
    "tokenizer", "differences",
)
#: Parameters that stay positional; the others are keyword-only.
N_POSITIONAL = 4


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


def _boolean(name: str, value) -> None:
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be True or False, got {show(value)}.")


def _augment(name: str, value) -> None:
    if isinstance(value, str):
        Options((*AUGMENTS, "auto"),
                'True, False, "stretch", "shift", "roll" or "auto"')(name, value)
    elif not isinstance(value, bool | np.bool_):
        raise TypeError(
            f'{name} must be True, False, "stretch", "shift", "roll" or "auto", '
            f"got {show(value)}.")


def _path_or_none(name: str, value) -> None:
    if value is not None and not isinstance(value, str | os.PathLike):
        raise TypeError(f"{name} must be None or a path, got {type(value).__name__}.")


def _callbacks_or_none(name: str, value) -> None:
    if value is not None and not isinstance(value, list | tuple):
        raise TypeError(
            f"{name} must be None or a list of skorch callbacks, got {type(value).__name__}."
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


def _class_weight(name: str, value) -> None:
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
    if kind == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"{name}={value!r} is not available: this torch build has no usable CUDA device "
            "(torch.cuda.is_available() is False). Use device='cpu', or 'auto' to take CUDA "
            "only where it exists."
        )


def _precision(name: str, value) -> None:
    check_precision(value)


# --- the table ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Param:
    """One constructor parameter.

    Parameters
    ----------
    name : str
        Argument and attribute name.
    default : object
        Default value (never mutable).
    type : str
        The numpydoc type, e.g. ``"int or 'auto'"``.
    doc : str
        The numpydoc description; ``docs`` overrides it for one role.
    check : callable or None
        ``check(name, value)`` raises ``ValueError``/``TypeError`` for a bad value; None
        where the value is checked by the code that uses it (see ``checked_by``).
    roles : tuple of str
        The estimators that take it (:data:`CLASSIFIER`, :data:`PRETRAINER`).
    sktime : bool
        Whether the sktime adapter of the estimator takes it too.
    """

    name: str
    default: Any
    type: str
    doc: str
    check: Callable[[str, Any], None] | None = None
    roles: tuple = BOTH
    sktime: bool = True
    docs: dict = field(default_factory=dict)

    def entry(self, role: str) -> str:
        """The numpydoc entry (unindented) of this parameter for ``role``."""
        default = f'"{self.default}"' if isinstance(self.default, str) else repr(self.default)
        text = self.docs.get(role, self.doc).strip("\n")
        return f"{self.name} : {self.type}, default={default}\n" + "\n".join(
            f"    {line}" if line else "" for line in text.splitlines()
        )


_LIGHTHOUSE = "checked by sktspt.nn.lighthouse.check_attention_params"

PARAMS: tuple[Param, ...] = (
    # --- network and input handling
    Param("depth", 3, "int", "Number of transformer layers.", Integer(1)),
    Param("d_model", 64, "int", "Width of the token representations.", Integer(1)),
    Param("n_heads", 4, "int", "Attention heads; must divide ``d_model``.", Integer(1)),
    Param("dim_feedforward", 128, "int", "Hidden width of each layer's feed-forward block.",
          Integer(1)),
    Param("dropout", 0.1, "float", "Dropout in attention and feed-forward blocks.",
          Number(lambda v: 0 <= v < 1, "a number in [0, 1)")),
    Param("patch_size", "auto", 'int or "auto"', """
Time steps per token (all channels of a patch form one token). ``"auto"``
keeps about 32 tokens per series, so long series stay cheap: 32 for the
median series of an unequal-length panel (at most 256 for its longest).""",
          Integer(1, auto=True, what="a positive integer or 'auto'")),
    Param("tokenizer", "rocket", '{"rocket", "conv", "patch"}', """
``"rocket"``: MiniRocket's 84 fixed kernels at up to 8 dilations, thresholds
drawn from the training panel, each token the share of its patch's steps past
each threshold, through a trained LayerNorm and linear map; ``"conv"``:
parallel 1D convolutions (kernels 3, 9, 19, 39) then a strided convolution per
patch, all trained; ``"patch"``: one linear map per patch
(:mod:`sktspt.nn.tokenizers`). The fixed kernels won training-split CV over the
trained stem by about 5 points a fold on two CV seeds (``docs/tuning.md``,
round 35), which had won over linear patches by about 4.""", Options(TOKENIZERS)),
    Param("differences", 0, "int", """
Orders of differences the tokenizer reads beside each channel: 1 adds the
first differences (slopes), 2 also their differences
(:mod:`sktspt.nn.differences`), as MultiRocket and HIVE-COTE 2 read slopes
beside the series. Pretraining reconstructs hidden values and hidden slopes; a
hidden value stays hidden in every difference. 0 reads the series alone
(``docs/tuning.md``, round 16).""", Integer(0)),
    Param("positional", "sinusoidal", '{"sinusoidal", "learned", "rotary", "alibi", "none"}', """
Positional encoding. ``rotary`` and ``alibi`` are relative (locality priors).""",
          Options(POSITIONALS)),
    Param("architecture", "transformer", '{"transformer", "crate", "attention_only"}', """
Encoder layer (:mod:`sktspt.nn.whitebox`). ``"crate"``: white-box CRATE layers
(attention with one shared q/k/v projection, then a sparse-coding ISTA step
with a ``d_model x d_model`` dictionary); ``"attention_only"``: the same
attention followed by a learned soft threshold, no dictionary and no MLP, about
a third fewer weights than CRATE. Both ignore ``dim_feedforward``.""",
          Options(ARCHITECTURES)),
    Param("normalize", "auto", '{"auto", "global", "instance"} or None', """
``"global"``: per-channel statistics of the training data (part of the fitted
state); ``"instance"``: each series standardised on its own; ``"auto"``:
``"instance"`` when the training series' scales span more than three orders of
magnitude, else ``"global"`` (:func:`sktspt.data.resolve_normalization`).""",
          Options(NORMALIZATIONS, "'auto', 'global', 'instance' or None")),
    # --- the self-pretraining objective
    Param("masking", "span", '{"random", "span", "block", "channel", "mixed"}',
          "Masking objective, see :mod:`sktspt.masking`.", Options(MASKINGS)),
    Param("mask_ratio", 0.7, "float", "Fraction of values hidden, in ``(0, 1)``.",
          Number(lambda v: 0 < v < 1, "a number in (0, 1)")),
    Param("mask_ratio_spread", 0.25, "float", """
Each series' hidden fraction is drawn uniformly from ``mask_ratio ± mask_ratio_spread``
(kept within ``[0.05, 0.95]``), for every objective, so pretraining also sees series
that are mostly visible, as fine-tuning does. 0: every series hides ``mask_ratio``.
0.25 (0.45-0.95 around 0.7) gained 2.8 points a fold over 0 in training-split CV
(``docs/tuning.md``, round 21).""",
          Number(lambda v: 0 <= v < 0.5, "a number in [0, 0.5)")),
    Param("mean_span", None, "float or None", """
Mean length of hidden runs for ``span`` and ``block``; None uses
``max(3, patch_size)``.""", Number(lambda v: 0 < v < math.inf, "None or a positive number",
                                   none=True)),
    Param("pretrain_objective", "masked", '{"masked", "lejepa", "masked+sigreg"}', """
``"masked"``: reconstruct hidden values. ``"lejepa"``: LeJEPA (Balestriero &
LeCun 2025) on 2 global (60-100 % crops) and 2 local (20-50 %) random views per
series, with a projector MLP: ``(1 - sigreg_lambda) * L_pred + sigreg_lambda *
SIGReg`` (``masking`` settings unused; SIGReg wants batches of 32 or more).
``"masked+sigreg"``: reconstruction plus ``sigreg_lambda * SIGReg`` on the pooled
embeddings, which keeps them spread out (see :mod:`sktspt.objectives`).""",
          Options(PRETRAIN_OBJECTIVES)),
    Param("sigreg_lambda", 0.05, "float",
          "Weight of SIGReg in ``[0, 1]`` (unused with ``\"masked\"``).",
          Number(lambda v: 0 <= v <= 1, "a number in [0, 1]")),
    # --- training length and optimisation
    Param("pretrain_epochs", "auto", 'int or "auto"', """
Self-pretraining epochs; 0 trains from scratch. ``"auto"``: the epochs that give
about ``auto_steps`` optimizer steps (``pretrain_epochs_`` after fit).""",
          Integer(0, auto=True), roles=(CLASSIFIER,)),
    Param("max_epochs", "auto", 'int or "auto"', "", Integer(0, auto=True), docs={
        CLASSIFIER: """
Fine-tuning epochs; ``"auto"`` as for ``pretrain_epochs`` (``max_epochs_``).""",
        PRETRAINER: """
Pretraining epochs; ``"auto"``: the epochs that give about ``auto_steps``
optimizer steps (``max_epochs_`` after fit)."""}),
    Param("auto_steps", 1000, "int", """
Optimizer steps per phase that ``"auto"`` epochs aim at: small datasets get
enough updates, large ones are not over-trained (``docs/tuning.md``). Where both
phases are ``"auto"``, their ``2 * auto_steps`` steps are split by
``pretrain_share``.""", Integer(1)),
    Param("pretrain_share", 0.25, "float", """
Share of the ``2 * auto_steps`` optimizer steps that pretraining takes when
``pretrain_epochs`` and ``max_epochs`` are both ``"auto"``; fine-tuning takes the
rest, so the from-scratch control at equal steps is unchanged: 500 + 1500 steps by
default. A quarter gained 3 points a fold over half in training-split CV
(``docs/tuning.md``, round 29). Unused where either phase has a fixed epoch count or
a fitted ``pretrainer`` is given.""",
          Number(lambda v: 0 < v < 1, "a number in (0, 1)"), roles=(CLASSIFIER,)),
    Param("lr", 1e-3, "float",
          "Peak learning rate of AdamW (linear warm-up, cosine decay per batch).",
          Number(lambda v: 0 < v < math.inf, "a positive number")),
    Param("warmup", "auto", 'float or "auto"', """
Linear learning-rate warm-up at the start of each phase, as a fraction of the phase's
optimizer steps in ``[0, 1)``; the cosine decay follows. ``"auto"``: a tenth of the
steps, at most 100 (``docs/tuning.md``, round 13).""",
          Number(lambda v: 0 <= v < 1, '"auto" or a number in [0, 1)', auto=True)),
    Param("weight_decay", 0.01, "float", "AdamW weight decay.",
          Number(lambda v: 0 <= v < math.inf, "a non-negative number")),
    Param("batch_size", 16, "int", "Series per batch.", Integer(1)),
    Param("label_smoothing", 0.1, "float", "Label smoothing of the cross-entropy loss.",
          Number(lambda v: 0 <= v <= 1, "a number in [0, 1]"), roles=(CLASSIFIER,)),
    Param("layer_decay", 1.0, "float", """
Layer-wise learning-rate decay in fine-tuning, in ``(0, 1]``: with ``depth`` L, layer
i (0 at the bottom) trains at ``lr * layer_decay ** (L - i)``, the tokenizer and
positions at ``lr * layer_decay ** (L + 1)``, the final norm and the head at ``lr``.
Below 1 the lower layers keep more of what pretraining taught them (BEiT, MAE).
1 trains every weight at ``lr``: 0.75 cost 3 points in training-split CV at the
default step budget (``docs/tuning.md``, round 8).""",
          Number(lambda v: 0 < v <= 1, "a number in (0, 1]"), roles=(CLASSIFIER,)),
    Param("reinit_layers", 0, "int", """
Top encoder layers (at most ``depth``) that start fine-tuning from fresh random
weights instead of pretrained ones. The top layers of a pretrained encoder are the
ones specialised to reconstruction; re-initialising them helps few-sample BERT
fine-tuning (Zhang et al. 2021). 0 keeps every pretrained layer
(``docs/tuning.md``, round 15). No effect without pretraining.""",
          Integer(0), roles=(CLASSIFIER,)),
    Param("augment", "auto", 'bool or {"stretch", "shift", "roll", "auto"}', """
Train on random variants of each batch (:class:`~sktspt.augment.Augmentation`):
``True`` or ``"stretch"`` crops a window of 80-100 % and stretches it back, ``"shift"``
moves each series by up to 10 % of its length without stretching; both then scale and
jitter. ``"roll"`` turns each series circularly by a uniform share of its length and
does nothing else, for series whose start point is arbitrary (closed outlines, cyclic
signals); the classifier's ``predict_proba`` then averages 8 evenly spaced turns of
each series (OSULeaf +7.5 and +4 points in training-split CV, ACSF1 -13: round 25).
Otherwise prediction sees the series as given; LeJEPA pretraining keeps its own views.
``"auto"`` (the default; the classifier): rolls in fine-tuning only where the training
data say the start point is arbitrary: where aligning series circularly lifts a
leave-one-out 1-NN on them (:func:`~sktspt.invariance.alignment_gain` above 0;
``augment_``, ``augment_evidence_``). The screen alone decides: the held-out
comparison of two short fine-tunings that also had to pass until round 38 cost
0.6 ± 0.35 points a fold over 30 training-split CV folds (it overruled the screen on
6, rightly on 1) and fine-tuned three times (``docs/tuning.md``, rounds 26, 28, 37).
Elsewhere the fit is ``augment=False``'s, bit for bit. Pretraining does not roll; the
pretrainer, which has no labels to choose with, does not augment. No choice stretches:
stretching helped some datasets in training-split CV and cost ACSF1 25-35 points, whose
classes live in the series' rate (``docs/tuning.md``).""", _augment),
    Param("mixup", "auto", 'float or "auto"', """
Mixup in fine-tuning: each training series is mixed with another of its batch, weight
``max(lam, 1 - lam)`` with ``lam ~ Beta(mixup, mixup)``, and so are the targets
(:func:`~sktspt.augment.mixup`). A regulariser for a few dozen labelled series that a
transformer otherwise fits perfectly; 0 turns it off. ``"auto"``: 0.4 where the kind of
mix suits the training series, else 0 (``mixup_``): a blend where they are smooth
(median lag-1 autocorrelation at least 0.9), where a blend of two series still looks
like a series of the task, and a window (CutMix) anywhere
(:func:`~sktspt.augment.resolve_mixup`, ``docs/tuning.md``, rounds 18 and 20).""",
          Number(lambda v: 0 <= v < math.inf, '"auto" or a non-negative number', auto=True),
          roles=(CLASSIFIER,)),
    Param("mixup_kind", "auto", '{"auto", "blend", "cutmix"}', """
How mixup combines a series with its partner: ``"blend"`` mixes their values;
``"cutmix"`` replaces a window of ``1 - lam`` of the series by the partner's values
there and weighs the targets by the share kept (:func:`~sktspt.augment.mixup`), which
keeps each series' local shape where a blend of two oscillations cancels. ``"auto"``:
a blend where the training series are smooth (as for ``mixup="auto"``), else the
window (``mixup_kind_``). Only used where ``mixup`` (or ``mixup_``) is above 0.""",
          Options(MIXUP_KINDS + ("auto",)), roles=(CLASSIFIER,)),
    Param("validation_fraction", 0.0, "float", """
Part of the training data held out (stratified by class when fine-tuning) to pick
the best epoch in each phase (pretraining by reconstruction loss on fixed masks);
0 trains on all of it and keeps the last epoch (on a few dozen series the held-out
part costs more than the choice gains).""",
          Number(lambda v: 0 <= v < 1, "a number in [0, 1)")),
    Param("patience", None, "int or None", """
Early-stopping patience in epochs; None runs all epochs and restores the best.""",
          Integer(1, none=True)),
    Param("pretrainer", None, "SPTPretrainer or None", """
A fitted pretrainer (wrap it in ``sklearn.frozen.FrozenEstimator`` so that it
survives ``clone``) whose encoder, normalisation and patching are used instead
of pretraining in ``fit``. Pretraining outside cross-validation sees every fold.""",
          roles=(CLASSIFIER,)),
    Param("warm_start", False, "bool", """
When True and already fitted, ``fit`` continues fine-tuning the current weights
for ``max_epochs`` more epochs, without pretraining again. (Not in the sktime
adapter: sktime's ``fit`` resets the estimator, so there is nothing to continue.)""",
          roles=(CLASSIFIER,), sktime=False),
    Param("callbacks", None, "list or None", "", docs={
        CLASSIFIER: "Extra skorch callbacks for fine-tuning.",
        PRETRAINER: "Extra skorch callbacks (instances or ``(name, callback)`` tuples)."}),
    Param("device", "cpu", "str", """
Torch device; ``"auto"`` picks CUDA when available.""", _device),
    Param("random_state", None, "int, RandomState or None", """
Seeds weights, masks, shuffling and validation splits."""),
    Param("verbose", 0, "int", """
0: silent. 1: a progress bar per phase ("pretraining", "fine-tuning") with the
losses and the time left. 2: skorch's table of every epoch, headed by the phase."""),
    Param("checkpoint_dir", None, "str, path or None", """
Folder for resumable checkpoints (one per epoch, in each phase). When set, a
``fit`` that was interrupted (Ctrl-C, a killed process) resumes from its last
checkpoint when called again with the same data and parameters, losing at most the
epoch in progress; a finished fit is reloaded, not retrained. Use one folder per
fit: a folder written by a different fit raises ``ValueError`` (so leave it None
under sktime's ``evaluate`` and benchmarks, which fit clones repeatedly). None
writes nothing.""", _path_or_none),
    Param("n_estimators", 1, "int", """
Networks trained together as one ensemble (:class:`~sktspt.nn.ensemble.Ensemble`):
each starts from its own random weights and draws its own masks, all share the
batches and one optimizer, and ``predict_proba`` averages their probabilities.
``transform`` then concatenates the members' embeddings, and ``encoder_`` is a
``ModuleList`` of the members' encoders. Standard transformer members run stacked (one
batched product per layer for all of them) and share the rocket tokenizer's thresholds,
so ``n`` members cost less than ``n`` fits; each member's gradient is clipped on its
own, as the single network's would be.""", Integer(1), roles=(CLASSIFIER,)),
    Param("n_threads", None, "int or None", """
CPU threads torch uses inside ``fit`` and the methods that predict or transform
(``torch.set_num_threads``; the previous count is restored afterwards). None
leaves torch's setting alone, which by default is one thread per core: on a
machine busy with other work, ``n_threads=1`` is often many times faster.""",
          Integer(1, none=True)),
    Param("class_weight", None, 'None, "balanced" or dict', """
Weights of the classes in the fine-tuning loss, for imbalanced data: a dict
``{label: weight}`` (missing labels weigh 1), or ``"balanced"`` for
``n_samples / (n_classes * count)``. They multiply ``fit``'s ``sample_weight``.
Pretraining, which sees no labels, is not weighted.""", _class_weight, roles=(CLASSIFIER,)),
    Param("mask_channels", None, "list of int or None", """
The only channels masking may hide (indices into ``n_channels``); the others
(covariates that are always known) stay visible as context and are never
reconstructed. None masks all channels. Unused by ``"lejepa"``.""", _channels),
    Param("pretrain_crops", None, "float or None", """
When set, pretraining sees each training series cut to a random window of
between this fraction and all of its length, moved to the start (the rest is
padding), so that the encoder also learns from series shorter than the training
length; useful when shorter series are to be predicted (fit on series of unequal
length, or NaN-padded, to predict other lengths). Unused by ``"lejepa"``, whose
views are crops already.""", Number(
        lambda v: 0 < v < 1, "None or the shortest crop as a fraction of each series, in (0, 1)",
        none=True)),
    Param("pretrain_callbacks", None, "list or None", """
Extra skorch callbacks for pretraining (``callbacks`` act on fine-tuning only).""",
          _callbacks_or_none, roles=(CLASSIFIER,)),
    # --- LEAP early exit
    Param("exit_loss_weight", 0.0, "float", """
Weight of the LEAP exit-aware loss added in fine-tuning (:mod:`sktspt.leap`):
it pulls each intermediate layer's pooled representation towards the final one,
so that ``early_exit`` can stop early without losing accuracy. 0 turns it off.""",
          Number(lambda v: 0 <= v < math.inf,
                 "a non-negative number (0 turns the LEAP loss off)"), roles=(CLASSIFIER,)),
    Param("early_exit", None, "float or None", """
LEAP early exit at prediction: each series leaves the encoder at the first layer
``>= min_exit_layer`` whose pooled representation has cosine ``>= early_exit``
with the previous layer's, and the (shared) head is applied there; series that
exited stop costing compute. 0.95 is the LEAP paper's threshold; None runs every
layer. Can be set after fitting (``set_params``; on a fitted sktime adapter, on its
``estimator_``); see :meth:`~sktspt.SPTClassifier.exit_layers`.""",
          Number(lambda v: -1 <= v <= 1,
                 "None or a cosine threshold in [-1, 1] (0.95 in the LEAP paper)", none=True),
          roles=(CLASSIFIER,)),
    Param("min_exit_layer", 2, "int",
          "First layer (1-based) at which ``early_exit`` may stop a series.", Integer(1),
          roles=(CLASSIFIER,)),
    # --- Lighthouse sparse attention (checked together, with depth, in RELATIONS)
    Param("attention", "dense", '{"dense", "lighthouse"}', """
Attention in training. ``"lighthouse"``: Lighthouse hierarchical sparse attention
(:mod:`sktspt.nn.lighthouse`) in every layer but the first and last (needs
``depth >= 3``), for the first ``1 - lighthouse_recovery`` of each phase's
optimizer steps, then dense attention on the same weights. Validation, prediction
and ``transform`` are always dense, so the fitted model is an ordinary one. It
pays only on long inputs (thousands of tokens, see ``docs/lighthouse.md``)."""),
    Param("lighthouse_levels", 3, "int", """
Levels of the Lighthouse pyramid (level ``l`` pools ``lighthouse_pool**l``
tokens); 1 is exactly dense attention."""),
    Param("lighthouse_pool", 4, "int", "Pooling factor between levels."),
    Param("lighthouse_topk", 8, "int", """
Windows refined per tile and level (half by query norm, half by key norm); the
other windows stay in as coarse summaries."""),
    Param("lighthouse_recovery", 0.1, "float", """
Fraction in ``[0, 1]`` of each phase's last optimizer steps trained with dense
attention (the recovery phase)."""),
    Param("precision", "auto", '{"auto", "float32", "bfloat16", "float16"}', """
Numeric precision of training and prediction (:mod:`sktspt.precision`): autocast
of the network to bfloat16 or float16 (float16 with loss scaling, CUDA only),
losses and SIGReg in float32, weights always float32; on CUDA, TF32 matmuls
unless ``"float32"``. ``"auto"``: bfloat16 on a CUDA GPU that supports it,
float32 elsewhere (on CPU). Can be changed after fitting: prediction uses the
current value, and falls back to float32 where the device cannot run it.""", _precision),
)

# --- SPTRegressor (issue 61) ----------------------------------------------------------------
#: The regressor's role: the classifier's parameters less the class-specific ones (class
#: weights, label smoothing, LEAP), plus ``loss`` after ``label_smoothing``'s place.
REGRESSOR = "regressor"
REGRESSION_LOSSES = ("squared_error", "huber")
_CLASS_ONLY = ("class_weight", "label_smoothing", "exit_loss_weight", "early_exit",
               "min_exit_layer")
_REGRESSOR_DOCS = {
    "augment": """
Train on random variants of each batch, as for :class:`~sktspt.SPTClassifier`
(``True``/``"stretch"``, ``"shift"``, ``"roll"``); prediction sees the series as given.
``"auto"`` is no augmentation (``augment_`` False): the classifier's screen needs
classes.""",
    "validation_fraction": """
Part of the training data held out (a random split) to pick the best epoch in each
phase (pretraining by reconstruction loss on fixed masks); 0 trains on all of it and
keeps the last epoch.""",
    "n_estimators": """
Networks trained together as one ensemble (:class:`~sktspt.nn.ensemble.Ensemble`), each
from its own random weights and masks, sharing batches and one optimizer; ``predict``
averages their values and ``transform`` concatenates their embeddings.""",
}
_LOSS = Param("loss", "squared_error", '{"squared_error", "huber"}', """
Fine-tuning loss on the standardised targets: ``"squared_error"`` (MSE), or
``"huber"`` (squared within one standard deviation of the target, linear beyond: robust
to outlying targets).""", Options(REGRESSION_LOSSES), roles=(REGRESSOR,))


def _as_regressor(p: Param) -> Param:
    if CLASSIFIER not in p.roles or p.name in _CLASS_ONLY:
        return p
    docs = dict(p.docs)
    if p.name in _REGRESSOR_DOCS or CLASSIFIER in p.docs:
        docs[REGRESSOR] = _REGRESSOR_DOCS.get(p.name, p.docs.get(CLASSIFIER))
    return replace(p, roles=(*p.roles, REGRESSOR), docs=docs)


PARAMS = tuple(q for p in PARAMS for q in (
    (_as_regressor(p), _LOSS) if p.name == "label_smoothing" else (_as_regressor(p),)))


def document_params(role: str) -> Callable[[type], type]:
    """Class decorator for an estimator with a written-out ``__init__``: the docstring's
    ``<parameters>`` line becomes the "Parameters" section of ``role`` (as in
    :func:`declare_params`), and ``_param_role`` is set."""

    def decorate(cls: type) -> type:
        cls._param_role = role
        if cls.__doc__:
            cls.__doc__ = _MARK.sub(
                lambda m: parameters_section(params_of(role), role, m.group(1)), cls.__doc__,
                count=1,
            )
        return cls

    return decorate


_BY_NAME = {p.name: p for p in PARAMS}


def params_of(role: str, sktime: bool = False) -> tuple[Param, ...]:
    """The parameters of one estimator (or of its sktime adapter), in declaration order."""
    return tuple(p for p in PARAMS if role in p.roles and (p.sktime or not sktime))


def check_value(name: str, value) -> None:
    """Check one parameter value against its constraint in :data:`PARAMS`."""
    check = _BY_NAME[name].check
    if check is not None:
        check(name, value)


# --- constraints between parameters -------------------------------------------------------
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


def _lighthouse(est) -> None:
    from .nn.lighthouse import check_attention_params

    check_attention_params(est)


#: Checks of combinations, run after every parameter passed its own constraint.
RELATIONS: tuple[Callable[[Any], None], ...] = (
    _heads_divide_width, _ensembles_pretrain_masked, leap_needs_one_network, _lighthouse,
    _reinit_within_depth,
)


def validate(est, names: Sequence[str] | None = None) -> None:
    """Check the parameters of ``est`` (all, or ``names`` only) against :data:`PARAMS`.

    With all parameters, :data:`RELATIONS` are checked too. Raises ``ValueError`` or
    ``TypeError`` naming the parameter.
    """
    own = est.get_params(deep=False)
    for name in own if names is None else names:
        if name in _BY_NAME:
            check_value(name, own[name])
    if names is None:
        for relation in RELATIONS:
            relation(est)


# --- __init__ and docstrings from the table -----------------------------------------------
_MARK = re.compile(r"^([ \t]*)<parameters>[ \t]*$", re.MULTILINE)


def parameters_section(params: Sequence[Param], role: str, indent: str = "") -> str:
    """The numpydoc "Parameters" section for ``params`` as ``role`` documents them."""
    lines = ["Parameters", "----------"]
    for p in params:
        lines += p.entry(role).splitlines()
    return "\n".join(f"{indent}{line}" if line else "" for line in lines)


def _make_init(cls: type, params: Sequence[Param], call_super: bool) -> Callable[..., None]:
    """An ``__init__`` that stores each parameter as given, with a real signature.

    The source is generated (as :mod:`dataclasses` does), so that the signature that
    scikit-learn's ``get_params`` and sktime read is an ordinary one: the first
    :data:`N_POSITIONAL` parameters positional, the others keyword-only.
    """
    args = [f"{p.name}=__defaults[{p.name!r}]" for p in params]
    if len(args) > N_POSITIONAL:
        args.insert(N_POSITIONAL, "*")
    body = [f"self.{p.name} = {p.name}" for p in params]
    if call_super:
        body.append("super(__cls, self).__init__()")
    source = f"def __init__(self, {', '.join(args)}):\n" + "".join(
        f"    {line}\n" for line in body
    )
    namespace = {"__defaults": {p.name: p.default for p in params}, "__cls": cls}
    exec(source, namespace)  # noqa: S102 - source built from the names in PARAMS only
    init = namespace["__init__"]
    init.__module__ = cls.__module__
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = f"Store the parameters as given; see :class:`{cls.__name__}`."
    return init


def declare_params(role: str, sktime: bool = False) -> Callable[[type], type]:
    """Class decorator: ``__init__`` and the docstring's parameters from :data:`PARAMS`.

    The class docstring holds a line ``<parameters>`` where the "Parameters" section
    goes. Sktime adapters (``sktime=True``) also call their base class's ``__init__``.
    """

    def decorate(cls: type) -> type:
        params = params_of(role, sktime)
        cls.__init__ = _make_init(cls, params, call_super=sktime)
        cls._param_role = role
        if cls.__doc__:
            cls.__doc__ = _MARK.sub(
                lambda m: parameters_section(params, role, m.group(1)), cls.__doc__, count=1
            )
        return cls

    return decorate
