"""The benchmark's model registry: ``name -> ModelSpec(factory)``.

:data:`MODELS` is a plain dict; a new model type is one more entry, e.g.::

    from sktime.classification.interval_based import TimeSeriesForestClassifier
    from sktspt.benchmark import MODELS, ModelSpec

    MODELS["tsf"] = ModelSpec(lambda cfg: TimeSeriesForestClassifier(random_state=cfg.seed),
                              neural=False)

A factory receives a :class:`RunConfig` (seed, epochs, depth, the dataset's shape facts and
the user's ``--model-params``) and returns an unfitted estimator with ``fit`` and
``predict``. Add entries in a script, then call :func:`sktspt.benchmark.main` from it with
``--models tsf ...``; loky, dask and ray send the factory to their workers with
cloudpickle, so a lambda defined in the script works with parallel workers too.

The regression task (``--task regression``) has its own registry,
:data:`REGRESSION_MODELS` (``spt``, ``scratch``, ``minirocket``), whose specs say
``task="regression"`` so that their rows record RMSE and R²; :func:`registry` gives a
task's registry and default models.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from .datasets import DatasetInfo
from .minirocket import MiniRocketClassifier, MiniRocketRidge

__all__ = [
    "DEFAULT_MODELS",
    "DEFAULT_REGRESSION_MODELS",
    "MODELS",
    "REGRESSION_MODELS",
    "MiniRocketRidge",
    "ModelSpec",
    "RunConfig",
    "registry",
]


@dataclass(frozen=True)
class RunConfig:
    """Everything a model factory receives for one job."""

    seed: int
    pretrain_epochs: int | str
    epochs: int | str
    depth: int | None
    data: DatasetInfo
    params: dict = field(default_factory=dict)
    #: The series the model is fitted on (with ``--label-fraction``: the labelled ones;
    #: None: the whole training split) and the unlabelled rest of the split.
    n_labelled: int | None = None
    n_unlabelled: int = 0


@dataclass(frozen=True)
class ModelSpec:
    """A benchmark model: a factory building an unfitted estimator for one job.

    Parameters
    ----------
    factory : callable
        ``factory(cfg: RunConfig) -> estimator`` with ``fit(X, y)`` and ``predict(X)``.
    neural : bool, default=True
        Whether ``--depth``, ``--epochs`` and ``--model-params`` apply. A non-neural model
        runs once per seed whatever the depth study.
    multivariate_only : bool, default=False
        Skip the model on univariate datasets (channel masking has nothing to hide there).
    warmup : bool, default=False
        Fit once, untimed, on a few series before the first timed fit of each dataset in
        each worker process: for a model whose first call compiles code (MiniRocket's numba
        kernels), so that the fit time is the fit's.
    univariate_only : bool, default=False
        Skip the model on multivariate datasets (``spt-transfer``: its pretraining corpus
        is univariate, and a pretrainer fixes the channel count).
    task : {"classification", "regression"}, default="classification"
        What the estimator predicts, so what its row records: accuracy for class labels,
        RMSE and R² for numbers.
    unlabelled : bool, default=True
        Whether ``fit`` gets the unlabelled series of a ``--label-fraction`` run (where it
        takes ``X_unlabeled``); the from-scratch control does not use them.
    """

    factory: Callable[[RunConfig], object]
    neural: bool = True
    multivariate_only: bool = False
    warmup: bool = False
    univariate_only: bool = False
    task: str = "classification"
    unlabelled: bool = True

    def skip_reason(self, data: DatasetInfo) -> str | None:
        """Why this model does not run on a dataset, or ``None`` when it does."""
        if self.multivariate_only and data.n_channels < 2:
            return "needs a multivariate dataset (channel masking has no channel to hide)"
        if self.univariate_only and data.n_channels > 1:
            return ("needs a univariate dataset (its pretrainer was fitted on univariate "
                    "series)")
        return None


def _classifier():
    from ..classifier import SPTClassifier

    return SPTClassifier


def _regressor():
    from ..regressor import SPTRegressor

    return SPTRegressor


def _spt(cfg: RunConfig, estimator=_classifier, **overrides):
    """The estimator (``estimator()`` is its class, imported only when a job is built) with
    its own defaults except seed, epochs, depth and user params."""
    kwargs = dict(cfg.params)
    kwargs.update(random_state=cfg.seed, pretrain_epochs=cfg.pretrain_epochs,
                  max_epochs=cfg.epochs)
    if cfg.depth is not None:
        kwargs["depth"] = cfg.depth
    kwargs.update(overrides)
    return estimator()(**kwargs)


def _scratch(cfg: RunConfig, estimator=_classifier, **overrides):
    """The identical network without pretraining, at equal optimizer steps.

    With ``"auto"`` epochs (a step budget per phase) scratch gets both phases' steps;
    with epoch counts, both phases' epochs. With unlabelled series (``--label-fraction``)
    SPT pretrains on more series than it fine-tunes on, so scratch gets the epochs that
    match the SPT twin's planned steps (``_planned_steps``) on the labelled series.
    """
    if cfg.n_unlabelled and cfg.n_labelled:
        twin = _spt(cfg, estimator, **overrides)
        steps = twin._planned_steps(cfg.n_labelled, cfg.n_unlabelled)
        per_epoch = twin._trainer().batches(cfg.n_labelled, 0)
        return _spt(cfg, estimator, pretrain_epochs=0, max_epochs=-(-steps // per_epoch),
                    **overrides)
    if cfg.pretrain_epochs == "auto" or cfg.epochs == "auto":
        steps = cfg.params.get("schedule__steps", "auto")  # "auto": both phases', by itself
        steps = steps if steps == "auto" else 2 * steps
        return _spt(cfg, estimator, pretrain_epochs=0, max_epochs="auto", schedule__steps=steps,
                    **overrides)
    return _spt(cfg, estimator, pretrain_epochs=0,
                max_epochs=cfg.pretrain_epochs + cfg.epochs, **overrides)


def _pad_length(cfg: RunConfig) -> int | None:
    return None if cfg.data.equal_length else cfg.data.max_length


def _minirocket(cfg: RunConfig):
    """MiniRocket as sktime and aeon set it up (:mod:`sktspt.benchmark.minirocket`):
    features, ``StandardScaler(with_mean=False)``, ``RidgeClassifierCV``."""
    return MiniRocketClassifier(cfg.seed, _pad_length(cfg))


def _minirocket_selftrain(cfg: RunConfig):
    """The semi-supervised peer of ``--label-fraction``: MiniRocket on every training
    series, self-trained logistic regression
    (:class:`~sktspt.benchmark.labels.SelfTrainingMiniRocket`)."""
    from .labels import SelfTrainingMiniRocket

    return SelfTrainingMiniRocket(seed=cfg.seed, pad_length=_pad_length(cfg))


def _probe(cfg: RunConfig):
    """A linear probe of self-pretrained embeddings
    (:class:`~sktspt.benchmark.labels.PretrainedProbe`): an ``SPTPretrainer`` with the SPT
    model's settings where the two share them, on every training series. Its step budget is
    the pretrainer's own (``schedule__steps`` pretraining steps) unless ``--model-params``
    sets ``schedule__steps``."""
    from ..pretrainer import SPTPretrainer
    from .labels import PretrainedProbe

    shared = {*SPTPretrainer().get_params(deep=False), *SPTPretrainer._routed}
    budget = ("pretrain_epochs", "max_epochs") + (() if "schedule__steps" in cfg.params
                                                   else ("schedule__steps",))
    settings = {k: v for k, v in _spt(cfg).get_params(deep=False).items()
                if k in shared and k not in budget}
    return PretrainedProbe(SPTPretrainer(**settings))


def _transfer(cfg: RunConfig, **overrides):
    """SPT fine-tuned from a pretrainer fitted on the shipped univariate sets' training
    splits (:mod:`sktspt.benchmark.transfer`), shared by every job of a seed."""
    from .transfer import transfer_pretrainer

    spt = _spt(cfg, **overrides)
    settings = spt.get_params(deep=False)
    if "normalize" not in cfg.params:  # the corpus mixes scales: the pretrainer's own choice
        del settings["normalize"]
    return spt.set_params(pretrainer=transfer_pretrainer(cfg.seed, settings))


#: The environment variable naming a folder of half-archive encoders for ``spt-archive``
#: (``half-A.sktspt`` and ``half-B.sktspt`` with their cards, from
#: ``benchmarks/pretrain_archive.py --half``).
ENCODERS_ENV = "SKTSPT_ENCODERS"

#: The models whose pretrained encoder comes from :data:`ENCODERS_ENV` where it is set.
ENCODER_MODELS = ("spt-archive", "scratch-archive", "archive-probe")


def half_encoder(dataset: str, folder) -> str:
    """The encoder in ``folder`` whose model card does not list ``dataset``: for judging a
    pretrained start on series its encoder never saw."""
    import json
    from pathlib import Path

    unseen = []
    for card in sorted(Path(folder).glob("*.json")):
        seen = json.loads(card.read_text()).get("data", {}).get("datasets", [])
        if dataset not in seen and card.with_suffix(".sktspt").is_file():
            unseen.append(card.with_suffix(".sktspt"))
    if not unseen:
        raise ValueError(f"every encoder in {folder} saw {dataset}'s training split (or the "
                         "folder holds none): spt-archive needs one that did not.")
    return str(unseen[0])


def _archive(cfg: RunConfig, **overrides):
    """SPT fine-tuned from a pretrained encoder (:mod:`sktspt.pretrained`): the shipped
    ``"archive"`` one, or with :data:`ENCODERS_ENV` set, the half-archive encoder that never
    saw this dataset."""
    if not os.environ.get(ENCODERS_ENV):  # by name: its fine-tuning budget comes with it
        return _spt(cfg, **overrides).set_params(pretrainer="archive")
    spt = _spt(cfg, **{"schedule__steps": _archive_steps(cfg), **overrides})
    return spt.set_params(pretrainer=_archive_encoder(cfg))


def _archive_encoder(cfg: RunConfig):
    """The pretrained encoder of ``cfg``'s dataset, fitted and frozen: with
    :data:`ENCODERS_ENV` set, the half-archive one that never saw it, else the shipped one."""
    from ..pretrained import pretrained

    folder = os.environ.get(ENCODERS_ENV)
    return pretrained(path=half_encoder(cfg.data.name, folder) if folder else None)


def _archive_steps(cfg: RunConfig) -> int:
    """The fine-tuning steps of a pretrained start: the shipped budget
    (:data:`sktspt.pretrained.FINETUNE_STEPS`) unless ``--model-params`` sets one."""
    from ..pretrained import FINETUNE_STEPS

    return cfg.params.get("schedule__steps", FINETUNE_STEPS)


def _scratch_archive(cfg: RunConfig):
    """The network of ``spt-archive`` from scratch at its fine-tuning steps, its input
    handled as the encoder handles it (per-series standardisation, series resampled)."""
    encoder = _archive_encoder(cfg)
    handling = {k: v for k, v in encoder.estimator.get_params().items()
                if k in ("normalize", "tokenizer", "tokenizer__length")}
    return _spt(cfg, pretrain_epochs=0, max_epochs="auto",
                **{**handling, "schedule__steps": _archive_steps(cfg)})


def _archive_probe(cfg: RunConfig):
    """The pretrained encoder's embeddings alone (nothing fine-tuned), standardised, then
    the ridge of ``minirocket`` (:class:`~sktspt.benchmark.labels.PretrainedProbe`)."""
    from .labels import PretrainedProbe

    return PretrainedProbe(_archive_encoder(cfg))


def _twt(cfg: RunConfig):
    """SPT fitted, then its redundant layers fused (``sktspt.compress``, default tolerance)."""
    from ..compress import FusedClassifier

    return FusedClassifier(_spt(cfg), finetune_steps=300, random_state=cfg.seed)


def _default(cfg: RunConfig):
    """``SPTClassifier()`` exactly as shipped: only the seed, ``--depth`` and
    ``--model-params`` are passed (not ``--epochs`` or ``--pretrain-epochs``)."""
    kwargs = dict(cfg.params, random_state=cfg.seed)
    if cfg.depth is not None:
        kwargs["depth"] = cfg.depth
    return _classifier()(**kwargs)


#: ``sktspt.masking.MASKINGS``, spelled out so that the command line (and its ``--help``)
#: does not import torch; a test checks that the two agree.
_MASKINGS = ("random", "span", "block", "channel", "mixed")


def _masking_models() -> dict[str, ModelSpec]:
    return {
        f"spt-{m}": ModelSpec(partial(_spt, masking=m), multivariate_only=m == "channel")
        for m in _MASKINGS
    }


MODELS: dict[str, ModelSpec] = {
    **_masking_models(),
    "default": ModelSpec(_default),
    "scratch": ModelSpec(_scratch, unlabelled=False),
    "scratch-rotary": ModelSpec(partial(_scratch, architecture__positional="rotary"),
                                unlabelled=False),
    "scratch-alibi": ModelSpec(partial(_scratch, architecture__positional="alibi"),
                               unlabelled=False),
    "spt-crate": ModelSpec(partial(_spt, architecture="crate")),
    "spt-attention_only": ModelSpec(partial(_spt, architecture="attention_only")),
    "spt-sigreg": ModelSpec(partial(_spt, pretrain_objective="masked+sigreg")),
    "lejepa": ModelSpec(partial(_spt, pretrain_objective="lejepa")),
    "lejepa-crate": ModelSpec(partial(_spt, pretrain_objective="lejepa", architecture="crate")),
    "lejepa-attention_only": ModelSpec(
        partial(_spt, pretrain_objective="lejepa", architecture="attention_only")
    ),
    "scratch-crate": ModelSpec(partial(_scratch, architecture="crate"), unlabelled=False),
    "scratch-attention_only": ModelSpec(partial(_scratch, architecture="attention_only"),
                                        unlabelled=False),
    "minirocket": ModelSpec(_minirocket, neural=False, warmup=True),
    # Cheaper prediction (issue 15): LEAP early exit with and without the exit loss, and
    # TWT layer fusion after fit (docs/compression.md).
    "spt-leap": ModelSpec(partial(_spt, early_exit__loss_weight=1.0, early_exit=0.95)),
    "spt-exit": ModelSpec(partial(_spt, early_exit=0.95)),
    "spt-twt": ModelSpec(_twt),
    # Long series (issue 14): Lighthouse sparse attention in training, then dense recovery;
    # prediction is dense (docs/lighthouse.md). Needs depth >= 3; pays from ~1k tokens.
    "spt-lighthouse": ModelSpec(partial(_spt, attention="lighthouse")),
    # Few labels and transfer (issue 64; docs/benchmark.md, "Few labels"): the
    # semi-supervised MiniRocket peer, and SPT from a pretrainer of the univariate corpus.
    "minirocket-selftrain": ModelSpec(_minirocket_selftrain, neural=False, warmup=True),
    "spt-transfer": ModelSpec(_transfer, univariate_only=True),
    # A pretrained start (issue 72): the encoder shipped with the package, or the half of
    # the archive that did not see the dataset ($SKTSPT_ENCODERS).
    "spt-archive": ModelSpec(_archive, univariate_only=True, unlabelled=False),
    "scratch-archive": ModelSpec(_scratch_archive, univariate_only=True, unlabelled=False),
    "archive-probe": ModelSpec(_archive_probe, univariate_only=True, unlabelled=False),
    "spt-probe": ModelSpec(_probe),
}

#: What runs when ``--models`` is not given: the main job's four, SPT with the default
#: span masking, its from-scratch control at equal optimizer steps (plain and with rotary
#: positions) and MiniRocket. The other maskings, ALiBi, the white-box and LeJEPA variants
#: are opt-in (``--models spt-random scratch-alibi lejepa ...``).
DEFAULT_MODELS: tuple[str, ...] = ("spt-span", "scratch", "scratch-rotary", "minirocket")


# --- regression ---------------------------------------------------------------------------
def _minirocket_regressor(cfg: RunConfig):
    return MiniRocketRidge(cfg.seed, _pad_length(cfg))


#: The regression benchmark's registry (``--task regression``): the default SPTRegressor,
#: its from-scratch control at equal optimizer steps, and MiniRocket features with RidgeCV.
REGRESSION_MODELS: dict[str, ModelSpec] = {
    "spt": ModelSpec(partial(_spt, estimator=_regressor), task="regression"),
    "scratch": ModelSpec(partial(_scratch, estimator=_regressor), task="regression",
                         unlabelled=False),
    "minirocket": ModelSpec(_minirocket_regressor, neural=False, warmup=True,
                            task="regression"),
}
DEFAULT_REGRESSION_MODELS: tuple[str, ...] = tuple(REGRESSION_MODELS)


def registry(task: str) -> tuple[dict[str, ModelSpec], tuple[str, ...]]:
    """The model registry of a task and its default models."""
    if task == "regression":
        return REGRESSION_MODELS, DEFAULT_REGRESSION_MODELS
    if task == "classification":
        return MODELS, DEFAULT_MODELS
    raise ValueError(f"task must be 'classification' or 'regression', got {task!r}.")
