"""The "Parameters" section of the estimators' docstrings, written once.

Each top-level parameter's numpydoc type and description lives here
(:data:`PARAMETER_DOCS`, with :data:`REGRESSOR_DOCS` and :data:`PRETRAINER_DOCS` for what
differs); the default comes from the signature of ``__init__``. A routed setting's type
and description are those of its component's docstring, its default that of the
component's signature (:mod:`sktspt._routed`). :func:`document_parameters` fills a class
docstring's ``<parameters>`` mark from them beside the explicit ``__init__`` (as skorch
does), and keeps the merged table on the class (``_parameter_docs``) for classes that
take their parameters from another's signature (the sktime adapters).
"""

from __future__ import annotations

import inspect
import re
import textwrap
from collections.abc import Mapping

from ._params import init_parameters as _init_parameters

__all__ = ["PARAMETER_DOCS", "PRETRAINER_DOCS", "REGRESSOR_DOCS", "document_parameters",
           "parameters_section"]


#: The numpydoc type and description of each parameter (the default comes from the
#: signature of ``__init__``). Say what a parameter does and its range; the findings
#: behind a default belong in ``docs/tuning.md``.
PARAMETER_DOCS: dict[str, tuple[str, str]] = {
    # network and input handling
    "depth": ("int", "Number of transformer layers."),
    "d_model": ("int", "Width of the token representations."),
    "tokenizer": ('{"rocket", "conv", "patch"}', """
``"rocket"``: MiniRocket's 84 fixed kernels at up to 8 dilations, thresholds
drawn from the training panel, each token the share of its patch's steps past
each threshold, through a trained LayerNorm and linear map; ``"conv"``:
parallel 1D convolutions (kernels 3, 9, 19, 39) then a strided convolution per
patch, all trained; ``"patch"``: one linear map per patch
(:mod:`sktspt.nn.tokenizers`; how they compare: ``docs/tuning.md``)."""),
    "architecture": ('{"transformer", "crate", "attention_only"}', """
Encoder layer (:mod:`sktspt.nn.whitebox`). ``"crate"``: white-box CRATE layers
(attention with one shared q/k/v projection, then a sparse-coding ISTA step
with a ``d_model x d_model`` dictionary); ``"attention_only"``: the same
attention followed by a learned soft threshold, no dictionary and no MLP, about
a third fewer weights than CRATE. Both ignore ``architecture__dim_feedforward``."""),
    "normalize": ('{"auto", "global", "instance"} or None', """
``"global"``: per-channel statistics of the training data (part of the fitted
state); ``"instance"``: each series standardised on its own; ``"auto"``:
``"instance"`` when the training series' scales span more than three orders of
magnitude, else ``"global"`` (:func:`sktspt.normalization.resolve_normalization`)."""),
    # the self-pretraining objective
    "masking": ('{"random", "span", "block", "channel", "mixed"}',
                "Masking objective, see :mod:`sktspt.masking`."),
    "pretrain_objective": ('{"masked", "lejepa", "masked+sigreg"}', """
``"masked"``: reconstruct hidden values. ``"lejepa"``: LeJEPA (Balestriero &
LeCun 2025) on 2 global (60-100 % crops) and 2 local (20-50 %) random views per
series, with a projector MLP: ``(1 - lambda) * L_pred + lambda * SIGReg``, lambda
being ``pretrain_objective__sigreg_lambda`` (``masking`` settings unused; SIGReg
wants batches of 32 or more). ``"masked+sigreg"``: reconstruction plus
``lambda * SIGReg`` on the pooled
embeddings, which keeps them spread out (see :mod:`sktspt.objectives`)."""),
    # training length and optimisation
    "pretrain_epochs": ('int or "auto"', """
Self-pretraining epochs, ``>= 0``; 0 trains from scratch, fine-tuning then taking both
phases' optimizer steps (``schedule__steps="auto"``). ``"auto"``: the epochs that give
about ``schedule__steps`` optimizer steps (``pretrain_epochs_`` after fit), and
pretraining sees ``X_unlabeled`` too. The classifier's default is 0 because on the UCR
archive self-pretraining on the task's own series lost to this from-scratch fit
(``docs/results-archive.md``); the regressor's is ``"auto"``."""),
    "max_epochs": ('int or "auto"', """
Fine-tuning epochs, ``>= 0``; ``"auto"`` as for ``pretrain_epochs`` (``max_epochs_``).
A classifier's ``"auto"`` phases count an epoch of fewer than 10 batches as 10, so on a
small training set (under 160 series at batch 16) each runs at most a tenth of its step
budget in epochs (50 pretraining and 150 fine-tuning, or 200 from scratch), fewer steps
than the budget; a fit from scratch keeps the same epochs in all as a pretraining one."""),
    "lr": ("float", "Peak learning rate of AdamW (linear warm-up, cosine decay per batch)."),
    "batch_size": ("int", "Series per batch."),
    "loss": ('{"squared_error", "huber"}', """
Fine-tuning loss on the standardised targets: ``"squared_error"`` (MSE), or ``"huber"``
(squared within one standard deviation of the target, linear beyond: robust to outlying
targets)."""),
    "augment": ('{False, "shift", "roll", "auto"}', """
Train on random variants of each batch (:class:`~sktspt.augment.Augmentation`):
``"shift"`` moves each series by up to 10 % of its length, then scales and jitters it;
``"roll"`` turns each series circularly, for series whose start point is arbitrary, and
the classifier then averages its predictions over 8 turns of each series. ``"auto"``: rolls
where aligning the training series circularly helps a 1-NN on them
(:func:`~sktspt.invariance.alignment_gain`; ``augment_``), else none. Only fine-tuning
augments (``docs/tuning.md``)."""),
    "mixup": ('float or "auto"', """
Mixup in fine-tuning, ``>= 0``: each training series is mixed with another of its
batch, weight ``max(lam, 1 - lam)`` with ``lam ~ Beta(mixup, mixup)``, and so are the
targets (:func:`~sktspt.augment.mixup`); 0 turns it off. ``"auto"``: 0.4 where the
kind of mix suits the training series, else 0 (``mixup_``;
:func:`~sktspt.augment.resolve_mixup`)."""),
    "validation_fraction": ("float", """
Part of the training data held out, in ``[0, 1)`` (stratified by class when a classifier
fine-tunes, else a random split), to pick the best epoch in each phase (pretraining by
reconstruction loss on fixed masks); 0 trains on all of it and keeps the last epoch."""),
    "pretrainer": ("str, SPTPretrainer or None", """
Start fine-tuning from this encoder instead of pretraining in ``fit``: the name of
an encoder shipped with the package (``"archive"``, pretrained on the UCR archive;
:func:`sktspt.pretrained.available`), or a fitted pretrainer (wrap it in
``sklearn.frozen.FrozenEstimator`` so that it survives ``clone``; pretraining
outside cross-validation sees every fold). Its encoder, normalisation and input
handling are used."""),
    "warm_start": ("bool", """
When True and already fitted, ``fit`` continues fine-tuning the current weights
for ``max_epochs`` more epochs, without pretraining again. (Not in the sktime
adapter: sktime's ``fit`` resets the estimator, so there is nothing to continue.)"""),
    "callbacks": ("list or None", """
Extra skorch callbacks for fine-tuning (instances or ``(name, callback)`` tuples). A
:class:`~sktspt.ResumableCheckpoint` among them makes the whole fit resumable, both
phases (0.4's ``callbacks__checkpoint_dir`` and 0.5's ``checkpoint_dir`` raise
``TypeError`` naming it)."""),
    "device": ("str", 'Torch device; ``"auto"`` picks CUDA when available.'),
    "random_state": ("int, RandomState or None", """
Seeds weights, masks, shuffling and validation splits."""),
    "verbose": ("int or bool", """
0 (False): silent. 1 (True): a progress bar per phase ("pretraining", "fine-tuning")
with the losses and the time left. 2: skorch's table of every epoch, headed by the
phase."""),
    "class_weight": ('None, "balanced" or dict', """
Weights of the classes in the fine-tuning loss, for imbalanced data: a dict
``{label: weight}`` (missing labels weigh 1), or ``"balanced"`` for
``n_samples / (n_classes * count)``. They multiply ``fit``'s ``sample_weight``.
Pretraining, which sees no labels, is not weighted."""),
    # LEAP early exit
    "early_exit": ("float or None", """
LEAP early exit at prediction: each series leaves the encoder at the first layer
``>= early_exit__min_layer`` whose pooled representation has cosine ``>= early_exit``
(in ``[-1, 1]``) with the previous layer's, and the (shared) head is applied there;
series that exited stop costing compute. 0.95 is the LEAP paper's threshold; None runs
every layer. Can be set after fitting (``set_params``; on a fitted sktime adapter, on
its ``estimator_``); see :meth:`~sktspt.SPTClassifier.exit_layers`."""),
    # Lighthouse sparse attention
    "attention": ('{"dense", "lighthouse"}', """
Attention in training. ``"lighthouse"``: Lighthouse hierarchical sparse attention
(:mod:`sktspt.nn.lighthouse`) in every layer but the first and last (needs
``depth >= 3``), for the first ``1 - attention__recovery`` of each phase's
optimizer steps, then dense attention on the same weights. Validation, prediction
and ``transform`` are always dense, so the fitted model is an ordinary one. It
pays only on long inputs (thousands of tokens, see ``docs/lighthouse.md``)."""),
}

#: Where the regressor's parameters mean something else than the classifier's.
REGRESSOR_DOCS: dict[str, tuple[str, str]] = {
    "augment": ('{False, "shift", "roll", "auto"}', """
Train on random variants of each batch, as for :class:`~sktspt.SPTClassifier`
(``"shift"``, ``"roll"``); prediction sees the series as given.
``"auto"`` is no augmentation (``augment_`` False): the classifier's screen needs
classes."""),
}

#: Where the pretrainer's parameters mean something else than the classifier's.
PRETRAINER_DOCS: dict[str, tuple[str, str]] = {
    "pretrain_epochs": ('int or "auto"', """
Self-pretraining epochs, ``>= 0``. ``"auto"``: the epochs that give about
``schedule__steps`` optimizer steps (``pretrain_epochs_`` after fit)."""),
    "callbacks": ("list or None", """
Extra skorch callbacks (instances or ``(name, callback)`` tuples); with a
:class:`~sktspt.ResumableCheckpoint` among them, an interrupted fit resumes."""),
}

_MARK = re.compile(r"^([ \t]*)<parameters>[ \t]*$", re.MULTILINE)
_ENTRY = re.compile(r"^(\w+) : (.+?)(?:, default=.*)?\n((?:(?: {4}.*)?\n)*)", re.MULTILINE)
_HEADING = re.compile(r"^\S.*\n-{3,}$", re.MULTILINE)


def component_docs(component) -> dict[str, tuple[str, str]]:
    """The numpydoc "Parameters" entries of ``component`` (and of the package's classes it
    derives from): ``{name: (type, text)}``."""
    docs = {}
    for owner in reversed(getattr(component, "__mro__", (component,))):
        if owner.__module__.startswith("sktspt"):
            section = inspect.cleandoc(owner.__doc__ or "").partition("Parameters\n-")[2]
            section = _HEADING.split(section.partition("\n")[2] + "\n")[0]
            docs.update({name: (kind, textwrap.dedent(text).strip("\n"))
                         for name, kind, text in _ENTRY.findall(section)})
    return docs


def _entry(name: str, kind: str, default, text: str) -> list[str]:
    shown = f'"{default}"' if isinstance(default, str) else repr(default)
    return [f"{name} : {kind}, default={shown}",
            *(f"    {line}" if line else "" for line in text.strip("\n").splitlines())]


def parameters_section(cls: type, docs: Mapping[str, tuple[str, str]]) -> str:
    """The numpydoc "Parameters" section of ``cls``: its ``__init__``'s names and defaults,
    each with its type and text from ``docs``, then the routed settings it takes (``**kwargs``:
    ``<group>__<name>``), group by group, each as its component documents it."""
    lines = ["Parameters", "----------"]
    routed = getattr(cls, "_routed", {})
    for name, param in _init_parameters(cls).items():
        if param.kind is param.VAR_KEYWORD or name in routed:
            continue
        if name not in docs:
            raise RuntimeError(f"{cls.__name__}: no documentation for {name!r}.")
        kind, text = docs[name]
        lines += _entry(name, kind, param.default, text)
    routes = getattr(cls, "_routes", {})
    if routes:
        lines += ["**kwargs", "    Routed settings ``<group>__<name>``: as in skorch, each group's "
                  "settings are its component's keyword arguments ("
                  + "; ".join(f"``{g}__``: ``{c.__qualname__}``" for g, c in routes.items())
                  + ")."]
    for group, component in routes.items():
        texts = component_docs(component)
        for name in (n for n in routed if n.startswith(group + "__")):
            own = name[len(group) + 2:]
            if own not in texts:
                raise RuntimeError(f"{component.__qualname__} does not document {own!r}.")
            kind, text = texts[own]
            lines += _entry(name, kind, routed[name], text)
    return "\n".join(lines)


def document_parameters(docs: Mapping[str, tuple[str, str]] | None = None):
    """Class decorator: the "Parameters" section in place of the docstring's ``<parameters>``.

    Types and texts come from :data:`PARAMETER_DOCS` (``docs`` taking precedence) and the
    components' docstrings; a parameter without a text is an error at import. The class
    keeps the merged table as ``_parameter_docs`` (the sktime adapters document from it).
    """
    table = {**PARAMETER_DOCS, **(docs or {})}

    def decorate(cls: type) -> type:
        section = parameters_section(cls, table)
        cls.__doc__ = _MARK.sub(lambda m: textwrap.indent(section, m.group(1)),
                                cls.__doc__ or "", count=1)
        cls._parameter_docs = table
        return cls

    return decorate
