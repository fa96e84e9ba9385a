"""Running the benchmark's jobs: inline, on loky's processes, or on a dask or ray cluster.

Jobs are dispatched from the calling thread through the backend's futures and waited for
with a timeout; each finished fit's row is handed back at once, so the caller appends it to
``results.csv`` (:class:`~sktspt.benchmark.results.ResultsFile`) before the next finishes.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections import Counter, deque
from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd

from .models import ModelSpec
from .results import ResultsFile, rows_of_jobs
from .run import BACKENDS, INT_COLUMNS, Job, _new_row, columns_of, run_job

__all__ = ["run_benchmark"]


class _Call:
    """``run_job`` with the run's settings bound: what each backend sends to a worker is
    ``fn(job, spec, kwargs)`` (:func:`_job`, which calls :func:`run_job`)."""

    def __init__(self, registry, pretrain_epochs, epochs, params, n_parallel, threads):
        self.fn = _job
        self.registry = registry
        self.kwargs = dict(pretrain_epochs=pretrain_epochs, epochs=epochs, params=params,
                           n_parallel=n_parallel, threads=threads)

    def spec(self, job: Job) -> ModelSpec:
        return self.registry[job.model]

    def error_row(self, job: Job, message: str) -> dict:
        return _new_row(job, self.spec(job), self.kwargs["pretrain_epochs"],
                        self.kwargs["epochs"], error=message)


def _job(job: Job, spec: ModelSpec, kwargs: dict) -> dict:
    """What a worker runs (module level, so every backend can send it by reference)."""
    return run_job(job, spec, **kwargs)


def _describe(exc: BaseException) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    codes = re.search(r"exit codes of the workers are (\{[^}]*\})", str(exc))
    return (f"{type(exc).__name__}: {first}"
            + (f" (exit codes {codes.group(1)})" if codes else ""))


def _run_inline(call: _Call, jobs: Sequence[Job]) -> Iterator[tuple[Job, dict]]:
    for job in jobs:
        yield job, call.fn(job, call.spec(job), call.kwargs)


def _run_loky(call: _Call, jobs: Sequence[Job], n_parallel: int, max_attempts: int,
              poll_s: float) -> Iterator[tuple[Job, dict]]:
    """Run the jobs on loky's reusable process pool, submitting from this thread.

    At most ``n_parallel`` jobs are in flight, so the jobs a broken pool takes down are
    known. A worker that dies (killed, out of memory, a crash in native code) breaks the
    pool: loky fails every in-flight future with ``TerminatedWorkerError`` (a
    ``BrokenProcessPool``) and the next :func:`get_reusable_executor` starts a fresh
    pool. The jobs caught in it are run again one at a time, so that a job that kills its
    worker is told apart from the jobs that merely shared the pool with it; a job whose
    worker dies ``max_attempts`` times while it runs alone becomes an error row naming
    the cause. Waits use a timeout, and a pool whose manager thread has died with jobs in
    flight (their results could never arrive) raises instead of waiting forever.
    """
    from concurrent.futures import FIRST_COMPLETED, wait

    from joblib.externals.loky import get_reusable_executor
    from joblib.externals.loky.process_executor import BrokenProcessPool

    pending, alone = deque(jobs), deque()
    running: dict = {}  # future -> (job, ran alone)
    deaths: Counter = Counter()
    try:
        while pending or alone or running:
            executor = get_reusable_executor(max_workers=n_parallel)

            if alone:
                batch, by_itself = ([alone.popleft()] if not running else []), True
            else:
                batch, by_itself = [], False
                while pending and len(running) + len(batch) < n_parallel:
                    batch.append(pending.popleft())
            for job in batch:
                future = executor.submit(call.fn, job, call.spec(job), call.kwargs)
                running[future] = (job, by_itself)
            done, _ = wait(list(running), timeout=poll_s, return_when=FIRST_COMPLETED)
            if not done:
                manager = getattr(executor, "_executor_manager_thread", None)
                if manager is not None and not manager.is_alive():
                    raise RuntimeError(
                        "loky's executor manager thread died with "
                        f"{len(running)} job(s) in flight; their results cannot arrive. "
                        "The finished rows are in results.csv: rerun with --resume."
                    )
                continue
            for future in done:
                job, was_alone = running.pop(future)
                try:
                    row = future.result()
                except BrokenProcessPool as exc:
                    if not was_alone:
                        alone.append(job)  # caught in a pool another job may have broken
                        continue
                    deaths[job] += 1
                    if deaths[job] < max_attempts:
                        alone.append(job)
                        continue
                    times = "once" if deaths[job] == 1 else f"{deaths[job]} times"
                    row = call.error_row(
                        job, f"{_describe(exc)}; the worker running this job died {times} "
                        "while it ran alone")
                except BaseException as exc:  # noqa: BLE001 - e.g. a result that cannot unpickle
                    row = call.error_row(job, _describe(exc))
                yield job, row
    finally:
        for future in running:
            future.cancel()


def _wait_dask(client, futures: list, poll_s: float):
    """The futures done within ``poll_s`` (at least one); between polls, raise if the
    client has lost its scheduler rather than wait for results that cannot come."""
    import asyncio

    from distributed import wait

    while True:
        try:
            return wait(futures, timeout=poll_s, return_when="FIRST_COMPLETED").done
        except (TimeoutError, asyncio.TimeoutError):  # distinct before Python 3.11
            if client.status not in ("running", "connecting"):
                raise RuntimeError(f"the dask client lost its scheduler ({client.status}); "
                                   "the finished rows are in results.csv: rerun with "
                                   "--resume.") from None


def _run_dask(call: _Call, jobs: Sequence[Job], client, poll_s: float
              ) -> Iterator[tuple[Job, dict]]:
    """Submit every job to the dask cluster; rows in the order they finish.

    dask reruns a task whose worker died and, after its ``allowed-failures`` (3 by default),
    fails it with ``KilledWorker``, which becomes the job's error row.
    """
    futures = {client.submit(call.fn, job, call.spec(job), call.kwargs, pure=False): job
               for job in jobs}
    while futures:
        for future in _wait_dask(client, list(futures), poll_s):
            job = futures.pop(future)
            try:
                row = future.result()
            except Exception as exc:  # noqa: BLE001 - KilledWorker, unpickling errors
                row = call.error_row(job, _describe(exc))
            future.release()
            yield job, row


def _run_ray(call: _Call, jobs: Sequence[Job], n_parallel: int, max_attempts: int,
             poll_s: float) -> Iterator[tuple[Job, dict]]:
    """Ray tasks, at most ``n_parallel`` in flight; ray retries a task whose worker died
    ``max_attempts - 1`` times, then fails it (``WorkerCrashedError``: an error row)."""
    import ray

    remote = ray.remote(num_cpus=1, max_retries=max_attempts - 1)(call.fn)
    pending, running = deque(jobs), {}
    while pending or running:
        while pending and len(running) < n_parallel:
            job = pending.popleft()
            running[remote.remote(job, call.spec(job), call.kwargs)] = job
        ready, _ = ray.wait(list(running), num_returns=1, timeout=poll_s)
        for ref in ready:
            job = running.pop(ref)
            try:
                row = ray.get(ref)
            except Exception as exc:  # noqa: BLE001 - WorkerCrashedError, RayTaskError
                row = call.error_row(job, _describe(exc))
            yield job, row


@contextlib.contextmanager
def _dask_client(scheduler: str | None, n_jobs: int) -> Iterator[tuple[object, int]]:
    """A client of the given scheduler, or of a local process cluster; yields it and the
    number of fits that run at once."""
    from distributed import Client, LocalCluster

    cluster = None
    if scheduler is None:
        cluster = LocalCluster(n_workers=_effective_n_jobs(n_jobs), threads_per_worker=1,
                               processes=True, dashboard_address=None)
    client = Client(scheduler or cluster)
    try:
        slots = sum(w["nthreads"] for w in client.scheduler_info()["workers"].values())
        yield client, max(1, slots if n_jobs < 0 else min(slots, n_jobs))
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


@contextlib.contextmanager
def _ray_session(n_jobs: int) -> Iterator[int]:
    """Connect to ray (``RAY_ADDRESS`` or a local instance) unless already connected;
    yield the number of fits that run at once."""
    import ray

    started = not ray.is_initialized()
    if started:
        ray.init(log_to_driver=False, include_dashboard=False)
    try:
        yield int(ray.cluster_resources().get("CPU", 1)) if n_jobs < 0 else n_jobs
    finally:
        if started:
            ray.shutdown()


def _effective_n_jobs(n_jobs: int) -> int:
    import joblib

    return joblib.effective_n_jobs(n_jobs)


def _progress_line(done: int, total: int, row: dict) -> str:
    depth = "" if pd.isna(row.get("depth")) else f" depth {row['depth']}"
    fraction = row.get("label_fraction")
    labels = "" if fraction is None or pd.isna(fraction) else f" labels {fraction:g}"
    where = (f"[{done}/{total}] {row['dataset']} {row['model']} seed {row['seed']}{depth}"
             f"{labels}")
    if row["error"]:
        return f"{where}: FAILED {row['error']}"
    if not pd.isna(row.get("rmse", np.nan)):
        return f"{where}: RMSE {row['rmse']:.4g}, R2 {row['r2']:.3f}, fit {row['fit_s']:.1f} s"
    return f"{where}: accuracy {row['accuracy']:.3f}, fit {row['fit_s']:.1f} s"


def run_benchmark(jobs: Sequence[Job], registry: dict[str, ModelSpec],
                  pretrain_epochs: int | str, epochs: int | str, params: dict,
                  n_jobs: int = 1, backend: str = "loky", scheduler: str | None = None,
                  progress: bool = True, threads: int | None = None,
                  results_file: str | os.PathLike | ResultsFile | None = None,
                  max_attempts: int = 3, poll_s: float = 1.0) -> pd.DataFrame:
    """Run the jobs on the chosen backend; one result row per job, in plan order.

    Jobs are dispatched from this thread through the backend's futures (loky's reusable
    process pool, dask's ``Client.submit``, ray tasks) and waited for with a timeout, so a
    run either finishes or raises; it never waits on a result that cannot come. With
    ``n_jobs=1`` and loky the jobs run here, one after another. Each finished fit's row is
    appended to ``results_file`` at once (see :class:`ResultsFile`). A job whose worker
    dies is run again, alone, up to ``max_attempts`` times, then recorded as an error row
    naming the cause; a job that raises is an error row too, and the others go on.

    Parameters
    ----------
    progress : bool
        A progress bar on stderr; when False, one log line per finished fit instead
        (dataset, model, seed, accuracy, or RMSE and R², and fit seconds).
    results_file : path-like or ResultsFile, optional
        Where to append each row as it finishes.
    max_attempts : int, default=3
        Runs of a job whose worker dies before it becomes an error row.
    poll_s : float, default=1.0
        How long one wait for a finished job lasts before the backend's health is checked.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}.")
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
        raise ValueError(f"max_attempts must be an integer >= 1, got {max_attempts!r}.")
    if n_jobs == 0:
        raise ValueError("n_jobs must not be 0 (use 1, 2, ... or -1).")
    unknown = sorted({j.model for j in jobs} - set(registry))
    if unknown:
        raise ValueError(f"jobs name model(s) not in the registry: {', '.join(unknown)}.")
    tasks = {registry[j.model].task for j in jobs}
    if len(tasks) > 1:
        raise ValueError("jobs mix classification and regression models; run each task "
                         "separately (their results files have different columns).")
    columns = columns_of(tasks.pop() if tasks else "classification")
    writer = (results_file if isinstance(results_file, ResultsFile) or results_file is None
              else ResultsFile(results_file, columns))
    rows: list[dict] = []

    def consume(stream: Iterator[tuple[Job, dict]]) -> None:
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(jobs), desc="benchmark", unit="fit", file=sys.stderr)
        try:
            for _, row in stream:
                if writer is not None:
                    writer.append(row)
                rows.append(row)
                if bar is not None:
                    bar.set_postfix_str(f"done {row['dataset']}/{row['model']}/s{row['seed']}",
                                        refresh=False)
                    bar.update()
                else:
                    print(_progress_line(len(rows), len(jobs), row), file=sys.stderr,
                          flush=True)
        finally:
            if bar is not None:
                bar.close()

    if backend == "dask":
        with _dask_client(scheduler, n_jobs) as (client, n_parallel):
            call = _Call(registry, pretrain_epochs, epochs, params, n_parallel, threads)
            consume(_run_dask(call, jobs, client, poll_s))
    elif backend == "ray":
        with _ray_session(n_jobs) as n_parallel:
            call = _Call(registry, pretrain_epochs, epochs, params, n_parallel, threads)
            consume(_run_ray(call, jobs, n_parallel, max_attempts, poll_s))
    else:
        n_parallel = min(_effective_n_jobs(n_jobs), max(1, len(jobs)))
        call = _Call(registry, pretrain_epochs, epochs, params, n_parallel, threads)
        consume(_run_inline(call, jobs) if n_parallel == 1 else
                _run_loky(call, jobs, n_parallel, max_attempts, poll_s))
    frame = pd.DataFrame(rows, columns=list(columns)).astype({c: "Int64" for c in INT_COLUMNS})
    return rows_of_jobs(jobs, frame)[0]
