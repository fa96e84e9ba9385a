"""Planning and running the benchmark's jobs: one fit and one test score per job.

Also the timing helpers that ``benchmarks/speed.py`` shares: :func:`timed` (wall and process
CPU seconds of a block) and :func:`torch_threads`.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .datasets import load_dataset
from .models import ModelSpec, RunConfig

__all__ = [
    "BACKENDS",
    "Job",
    "Skipped",
    "Timing",
    "cpu_count",
    "n_params",
    "plan_jobs",
    "run_benchmark",
    "run_job",
    "skipped_cells",
    "timed",
    "torch_threads",
]

BACKENDS = ("loky", "dask", "ray")
COLUMNS = ("dataset", "model", "seed", "depth", "pretrain_epochs", "epochs", "augment",
           "accuracy", "fit_s", "predict_s", "n_params", "error")
INT_COLUMNS = ("seed", "depth", "pretrain_epochs", "epochs", "n_params")


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
    return "none" if augment is False else ("stretch" if augment is True else str(augment))


def run_job(job: Job, spec: ModelSpec, pretrain_epochs: int | str, epochs: int | str,
            params: dict,
            n_parallel: int, threads: int | None = None) -> dict:
    """Fit one model on one training split and score it once on the test split.

    Runs in a worker: torch gets ``threads`` threads for the job, by default
    ``cores // n_parallel`` (restored afterwards), so parallel jobs do not oversubscribe
    the cores. A failure is returned as the row's ``error`` instead of stopping the
    other jobs.
    """
    row = dict(
        dataset=job.dataset, model=job.model, seed=job.seed, depth=job.depth,
        pretrain_epochs=pretrain_epochs if spec.neural and pretrain_epochs != "auto" else None,
        epochs=epochs if spec.neural and epochs != "auto" else None, augment=None,
        accuracy=np.nan, fit_s=np.nan, predict_s=np.nan, n_params=None, error="",
    )
    if threads is None:
        threads = max(1, cpu_count() // max(1, n_parallel))
    try:
        with torch_threads(threads), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            X_tr, y_tr, X_te, y_te, info = load_dataset(job.dataset, job.data_dir)
            cfg = RunConfig(seed=job.seed, pretrain_epochs=pretrain_epochs, epochs=epochs,
                            depth=job.depth, data=info, params=dict(params))
            estimator = spec.factory(cfg)
            if spec.neural:  # record the depth that ran, also when it is the default
                row["depth"] = getattr(estimator, "depth", job.depth)
            start = time.perf_counter()
            estimator.fit(X_tr, y_tr)
            row["fit_s"] = time.perf_counter() - start
            for column, fitted in (("pretrain_epochs", "pretrain_epochs_"),
                                   ("epochs", "max_epochs_")):  # "auto" resolved in fit
                if hasattr(estimator, fitted):
                    row[column] = getattr(estimator, fitted)
            row["augment"] = augment_label(estimator)
            start = time.perf_counter()
            y_pred = estimator.predict(X_te)
            row["predict_s"] = time.perf_counter() - start
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
    """The (dataset, model) pairs that :func:`plan_jobs` leaves out, with the reason."""
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
              data_dir: str | None = None) -> list[Job]:
    """All (dataset, model, seed, depth) jobs; non-neural models ignore the depth study.

    Loads every dataset once here, in the calling process, so a dataset that has to be
    downloaded is downloaded once, before the workers start.
    """
    skipped = {(s.dataset, s.model) for s in skipped_cells(datasets, models, registry, data_dir)}
    jobs = []
    for name in datasets:
        for model in models:
            if (name, model) in skipped:
                continue
            for depth in depths if registry[model].neural else [None]:
                jobs.extend(Job(name, model, seed, depth, data_dir) for seed in seeds)
    return jobs


# --- execution ----------------------------------------------------------------------------
@contextlib.contextmanager
def _backend(backend: str, scheduler: str | None, n_jobs: int) -> Iterator[int]:
    """Enter a joblib backend; yield the number of jobs that run at once."""
    import joblib

    if backend == "loky":
        yield joblib.effective_n_jobs(n_jobs)
        return
    if backend == "ray":
        import ray
        from ray.util.joblib import register_ray

        register_ray()
        with joblib.parallel_backend("ray", n_jobs=n_jobs):
            yield int(ray.cluster_resources().get("CPU", 1)) if n_jobs < 0 else n_jobs
        return
    from distributed import Client, LocalCluster

    cluster = None
    if scheduler is None:
        workers = joblib.effective_n_jobs(n_jobs)
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=None)
    client = Client(scheduler or cluster)
    try:
        slots = sum(w["nthreads"] for w in client.scheduler_info()["workers"].values())
        with joblib.parallel_backend("dask", n_jobs=n_jobs):
            yield max(1, slots if n_jobs < 0 else min(slots, n_jobs))
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def run_benchmark(jobs: Sequence[Job], registry: dict[str, ModelSpec], pretrain_epochs: int,
                  epochs: int, params: dict, n_jobs: int = 1, backend: str = "loky",
                  scheduler: str | None = None, progress: bool = True,
                  threads: int | None = None) -> pd.DataFrame:
    """Run the jobs through joblib on the chosen backend; one result row per job."""
    import joblib
    from tqdm.auto import tqdm

    rows = []
    with _backend(backend, scheduler, n_jobs) as n_parallel:
        run = joblib.delayed(run_job)
        tasks = (run(job, registry[job.model], pretrain_epochs, epochs, params, n_parallel,
                     threads) for job in jobs)
        # joblib's ray backend (a multiprocessing pool) returns no generators: with it the
        # results (and the progress bar) come all at once, at the end.
        returned = "list" if backend == "ray" else "generator_unordered"
        parallel = joblib.Parallel(n_jobs=n_jobs, return_as=returned)
        with tqdm(total=len(jobs), desc="benchmark", unit="fit", disable=not progress,
                  file=sys.stderr) as bar:
            for row in parallel(tasks):
                rows.append(row)
                bar.set_postfix_str(f"done {row['dataset']}/{row['model']}/s{row['seed']}",
                                    refresh=False)
                bar.update()
    order = {(j.dataset, j.model, j.seed, j.depth): i for i, j in enumerate(jobs)}

    def position(row: dict) -> int:
        key = (row["dataset"], row["model"], row["seed"])
        return order.get((*key, row["depth"]), order.get((*key, None), len(order)))

    rows.sort(key=position)
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    return frame.astype({c: "Int64" for c in INT_COLUMNS})
