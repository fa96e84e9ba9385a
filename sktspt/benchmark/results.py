"""The results file of a benchmark run: one row per fit, appended as each fit finishes.

:class:`ResultsFile` appends a finished fit's row to ``results.csv`` at once (written and
synced line by line), so a run that dies keeps its rows; :func:`read_results` reads a file
back, checking every row, and :func:`rows_of_jobs` matches its rows to planned jobs, which
is how ``--resume`` skips the fits already there.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from .run import (
    _COLUMNS_BEFORE_FRACTIONS,
    COLUMNS,
    INT_COLUMNS,
    REGRESSION_COLUMNS,
    Job,
)

__all__ = ["ResultsFile", "read_results", "rows_of_jobs"]


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
