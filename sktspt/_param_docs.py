"""The "Parameters" section of the estimators' docstrings, written once.

Each parameter's numpydoc type and description lives here (:data:`PARAMETER_DOCS`, with
:data:`REGRESSOR_DOCS` and :data:`PRETRAINER_DOCS` for what differs); the default comes
from the signature of ``__init__``. :func:`document_parameters` fills a class docstring's
``<parameters>`` mark from them beside the explicit ``__init__`` (as skorch does), and
keeps the merged table on the class (``_parameter_docs``) for classes that take their
parameters from another's signature (the sktime adapters).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping

__all__ = ["PARAMETER_DOCS", "PRETRAINER_DOCS", "REGRESSOR_DOCS", "document_parameters",
           "parameters_section"]


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
magnitude, else ``"global"`` (:func:`sktspt.normalization.resolve_normalization`)."""),
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


