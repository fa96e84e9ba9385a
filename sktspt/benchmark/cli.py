"""The benchmark's command line: ``python -m sktspt.benchmark`` or ``sktspt-benchmark``.

Only the light modules (dataset names, the model registry) load before the arguments are
parsed, so ``--help`` answers at once; torch, sktime and pandas load when a run starts.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import sys
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path

from .datasets import DatasetNotFoundError
from .models import registry
from .options import (
    DEFAULT_OUTPUT,
    QUICK_OUTPUT,
    SMOKE_NOTE,
    Options,
    build_parser,
    resolve_options,
)

__all__ = ["compile_first", "interrupted_message", "main", "output_folder"]

def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def banner(jobs, opts: Options, skipped, backend: str, n_jobs: int) -> str:
    """What will run: the fit count, how it is made up, and what is skipped and why."""
    models = registry(opts.task)[0]
    neural = [m for m in opts.models if models[m].neural]
    other = [m for m in opts.models if not models[m].neural]
    shape = (f"{_plural(len(opts.datasets), 'dataset')} x {_plural(len(opts.models), 'model')}"
             f" x {_plural(len(opts.seeds), 'seed')}")
    if opts.label_fractions != [None]:
        shape += f" x {_plural(len(opts.label_fractions), 'label fraction')}"
    if len(opts.depths) > 1 and neural:
        shape += f" x {_plural(len(opts.depths), 'depth')}"
        if other:
            shape += f" for neural models ({', '.join(other)}: once per seed)"
    per_model = {m: len(opts.seeds) * len(opts.label_fractions)
                 * (len(opts.depths) if models[m].neural else 1) for m in opts.models}
    n_skipped = sum(per_model[s.model] for s in skipped)
    lines = [f"{_plural(len(jobs), 'fit')}: {shape}"
             + (f", less {_plural(n_skipped, 'skipped fit')}" if skipped else "")
             + f"; backend {backend}, n_jobs {n_jobs}"]
    lines += [f"  skipped: {s.model} on {s.dataset}: it {s.reason}" for s in skipped]
    return "\n".join(lines)


#: Beside ``results.csv``: the settings its rows were fitted with (``--resume`` checks them).
SETTINGS_FILE = "results.settings.json"


def _free_name(path: Path) -> Path:
    """``path``, or ``<stem>.2<suffix>``, ``.3`` ... : the first name that does not exist."""
    candidate, n = path, 1
    while candidate.exists() or candidate.is_symlink():
        n += 1
        candidate = path.with_name(f"{path.stem}.{n}{path.suffix}")
    return candidate


#: The settings a row's epoch columns do not record, at the values a run had before
#: :data:`SETTINGS_FILE` recorded them (``data_dir`` and ``threads`` came later).
UNRECORDED = {"model_params": {}, "data_dir": None, "threads": 1}


def _check_settings(out: Path, settings: dict, results) -> None:
    """Refuse to resume rows fitted with other settings than ``settings``.

    The settings a run was started with are in :data:`SETTINGS_FILE`; a run written before
    that file existed is checked by its rows' epoch columns (where a number was asked for),
    and resumes only with the other settings at their defaults (:data:`UNRECORDED`).
    """
    path = out / SETTINGS_FILE
    if path.exists():
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path} is unreadable ({exc}); move it away or run without "
                             "--resume.") from None
        if not isinstance(stored, dict):
            raise ValueError(f"{path} holds a JSON {type(stored).__name__}, not a run's "
                             "settings; move it away or run without --resume.")
        stored = {**UNRECORDED, **stored}
        differ = sorted(k for k in set(stored) | set(settings)
                        if stored.get(k) != settings.get(k))
        if not differ:
            return
        was = ", ".join(f"{k}={stored.get(k)!r}" for k in differ)
        now = ", ".join(f"{k}={settings.get(k)!r}" for k in differ)
        raise ValueError(
            f"--resume: the rows in {out / 'results.csv'} were fitted with {was}, not {now}. "
            "Resume with the settings of that run, or run without --resume (the earlier "
            "results are kept beside the new ones) or with another --output."
        )
    unchecked = sorted(k for k, v in UNRECORDED.items() if settings.get(k, v) != v)
    if unchecked:
        raise ValueError(
            f"--resume: {out} has results.csv but no {SETTINGS_FILE}, so whether its rows "
            f"were fitted with {', '.join(f'{k}={settings[k]!r}' for k in unchecked)} cannot "
            "be checked. Run without --resume (the earlier results are kept beside the new "
            "ones) or with another --output."
        )
    for column, key in (("epochs", "epochs"), ("pretrain_epochs", "pretrain_epochs")):
        asked = settings.get(key)
        if asked == "auto" or column not in results:
            continue
        done = results[column].dropna()
        other = sorted({int(v) for v in done if int(v) != asked})
        if other:
            raise ValueError(
                f"--resume: rows in {out / 'results.csv'} were fitted with {column}="
                f"{other[0]}, not {asked}. Resume with the settings of that run, or run "
                "without --resume or with another --output."
            )


def _open_results(out: Path, jobs, resume: bool, task: str = "classification",
                  settings: dict | None = None):
    """The results file of this run and the jobs still to run; says what it skipped.

    Without ``resume`` an earlier ``results.csv`` (and its settings) is moved to the first
    free ``results.previous[.N].csv``, never over an earlier one. With ``resume`` the rows
    must have been fitted with ``settings`` (:func:`_check_settings`).
    """
    from .results import ResultsFile, rows_of_jobs
    from .run import columns_of

    path = out / "results.csv"
    columns = columns_of(task)
    settings = {} if settings is None else json.loads(json.dumps(settings, default=repr))
    if not resume:
        if path.exists():
            previous = _free_name(path.with_name("results.previous.csv"))
            os.replace(path, previous)
            if (out / SETTINGS_FILE).exists():
                os.replace(out / SETTINGS_FILE,
                           previous.with_name(previous.stem + ".settings.json"))
            print(f"moved the earlier {path} to {previous} (--resume continues a run instead)",
                  file=sys.stderr)
        store = ResultsFile(path, columns)
        (out / SETTINGS_FILE).write_text(json.dumps(settings, indent=1), encoding="utf-8")
        return store, list(jobs)
    if not path.exists():
        print(f"--resume: no {path} yet; running every fit", file=sys.stderr)
        store = ResultsFile(path, columns)
        (out / SETTINGS_FILE).write_text(json.dumps(settings, indent=1), encoding="utf-8")
        return store, list(jobs)
    store = ResultsFile(path, columns)  # cuts a half-written last line
    _check_settings(out, settings, store.read())
    if not (out / SETTINGS_FILE).exists():  # a run from before the file: record them now
        (out / SETTINGS_FILE).write_text(json.dumps(settings, indent=1), encoding="utf-8")
    failed = store.drop_failed()
    done, todo = rows_of_jobs(jobs, store.read(), failed=False)
    print(f"--resume: skipped {_plural(len(done), 'fit')} already in {path}"
          + (f"; {_plural(failed, 'failed fit')} removed from it, to run again" if failed else "")
          + f"; {len(todo)} to run", file=sys.stderr)
    return store, todo


def output_folder(args: argparse.Namespace) -> Path:
    """``--output``, or the default folder: ``results/``, ``results/quick/`` for ``--quick``."""
    if args.output is not None:
        return Path(args.output)
    return Path(QUICK_OUTPUT if args.quick else DEFAULT_OUTPUT)


def _smoke_test_page(page, **kwargs) -> str:
    """``--quick``'s page: the note that it is a smoke test under the title."""
    title, _, rest = page(**kwargs).partition("\n")
    return f"{title}\n\n{SMOKE_NOTE}{rest}"


def same_subset_note(datasets, fractions, seeds, data_dir: str | None) -> str:
    """A line for the few-labels page naming the datasets whose rows repeat: where two label
    fractions keep the same labelled series for every seed (the floor of one series per
    class), their fits are the same and so are their rows. Empty where none repeat."""
    import numpy as np

    from .datasets import load_dataset
    from .labels import labelled_subset

    fractions = sorted(f for f in fractions if f is not None)
    repeats = []
    for name in datasets:
        y = load_dataset(name, data_dir)[1]
        for low, high in zip(fractions, fractions[1:]):
            if all(np.array_equal(labelled_subset(y, low, s), labelled_subset(y, high, s))
                   for s in seeds):
                repeats.append(f"{name} at {low:.0%} and {high:.0%}")
    if not repeats:
        return ""
    return ("- Identical rows: " + "; ".join(repeats) + ". At both fractions each class keeps "
            "the same labelled series (at least one series per class, and the smaller "
            "fraction's subset is part of the larger's), so the fits and their accuracies "
            "are the same.\n")


def _with_note(page, note: str, **kwargs) -> str:
    """The page with ``note`` after its list of settings (the first blank line after it)."""
    text = page(**kwargs)
    at = text.index("\n\n## ") + 1 if "\n\n## " in text else len(text)
    return text[:at] + note + text[at:]


def interrupted_message(argv: Sequence[str], results: Path, n_rows: int) -> str:
    """What Ctrl-C prints: where the finished fits are and the command that continues."""
    again = shlex.join(["python", "-m", "sktspt.benchmark", *argv,
                        *([] if "--resume" in argv else ["--resume"])])
    return (f"\ninterrupted: {_plural(n_rows, 'finished fit')} {'is' if n_rows == 1 else 'are'} "
            f"in {results}. To continue where this run stopped, run\n  {again}")


def compile_first(todo, models, data_dir: str | None) -> None:
    """Compile MiniRocket's numba code before the progress bar starts, as its own step.

    Its first call compiles for a minute or more on a busy machine; inside the run, the bar
    sat still through it and then showed a fit of half a second. sktime's kernels cache
    their machine code on disk (``cache=True``), so the workers' warm-up fits load it.
    Nothing to do where no job's model has ``warmup``. A compile that fails is left to the
    fits, which report it.
    """
    warm = [j for j in todo if models[j.model].warmup]
    if not warm:
        return
    import numpy as np

    from .datasets import load_dataset
    from .minirocket import MiniRocketFeatures

    multivariate = sorted({load_dataset(name, data_dir)[-1].n_channels > 1
                           for name in dict.fromkeys(j.dataset for j in warm)})
    print("compiling MiniRocket's numba code before the first fit (numba caches it on disk; "
          "a minute or more the first time)...", end=" ", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    try:
        for multi in multivariate:
            X = np.random.default_rng(0).normal(size=(4, 2 if multi else 1, 32))
            features = MiniRocketFeatures()
            features.fit_transform(X.astype(np.float32))
            features.transform(X.astype(np.float32))
    except Exception as exc:  # noqa: BLE001 - the fits report a real problem
        print(f"failed ({type(exc).__name__}); the fits compile it instead", file=sys.stderr)
        return
    print(f"done in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)


def _encoder_setting(models) -> dict:
    """The half-archive encoders' folder (``$SKTSPT_ENCODERS``) where a model of the run
    reads it, so that the page says which encoders its pretrained starts came from."""
    from .models import ENCODER_MODELS, ENCODERS_ENV

    folder = os.environ.get(ENCODERS_ENV)
    return {f"${ENCODERS_ENV}": folder} if folder and set(ENCODER_MODELS) & set(models) else {}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark from the command line; 0 when every job succeeded, else 1
    (130 when interrupted with Ctrl-C: the finished fits are kept for ``--resume``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _main(argv)
    except KeyboardInterrupt:  # before or after the fits: nothing to resume or lose
        print("\ninterrupted.", file=sys.stderr)
        return 130


def _main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    opts = resolve_options(args, parser)
    if opts.task == "regression":
        from .report_regression import markdown_page, markdown_tables, write_figures
    else:
        from .figures import write_figures
        from .report import markdown_page, markdown_tables
    from .execution import run_benchmark
    from .results import rows_of_jobs
    from .run import plan_jobs, skipped_cells

    models = registry(opts.task)[0]

    command = shlex.join(["python", "-m", "sktspt.benchmark", *argv])
    started = datetime.datetime.now().astimezone()
    t0 = time.perf_counter()

    try:  # loads (or downloads) what is needed before any worker starts
        skipped = skipped_cells(opts.datasets, opts.models, models, opts.data_dir)
        jobs = plan_jobs(opts.datasets, opts.models, opts.seeds, opts.depths, models,
                         opts.data_dir, label_fractions=opts.label_fractions)
    except (DatasetNotFoundError, ValueError) as exc:  # missing, or a file unreadable
        parser.error(str(exc))
    if not jobs:
        parser.error("no jobs to run: the chosen models do not apply to the chosen datasets.")
    print(banner(jobs, opts, skipped, args.backend, args.n_jobs), file=sys.stderr)
    out = output_folder(args)
    if out.exists() and not out.is_dir():
        parser.error(f"--output {out} exists and is not a folder; give a folder to write "
                     "results.csv, results.md and the figures into.")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        parser.error(f"--output {out} cannot be made a folder: {exc}")
    try:
        store, todo = _open_results(out, jobs, args.resume, opts.task, settings={
            "task": opts.task, "pretrain_epochs": opts.pretrain_epochs,
            "epochs": opts.epochs, "model_params": opts.params, "threads": opts.threads,
            "data_dir": None if opts.data_dir is None else str(Path(opts.data_dir).resolve())})
    except ValueError as exc:
        parser.error(str(exc))
    if todo:
        try:
            compile_first(todo, models, opts.data_dir)
            run_benchmark(todo, models, opts.pretrain_epochs, opts.epochs, opts.params,
                          n_jobs=args.n_jobs, backend=args.backend, scheduler=args.scheduler,
                          progress=not args.no_progress, threads=opts.threads,
                          results_file=store)
        except KeyboardInterrupt:
            print(interrupted_message(argv, store.path, len(store.read())), file=sys.stderr)
            return 130
    duration = time.perf_counter() - t0

    # The tables and figures come from results.csv: this run's rows and any it resumed.
    every_row = store.read()
    results, missing = rows_of_jobs(jobs, every_row)
    if missing:  # a row could not be written: say so rather than show a partial table
        print(f"{_plural(len(missing), 'fit')} of the plan have no row in {store.path}.",
              file=sys.stderr)
    if len(every_row) > len(results):
        print(f"{len(every_row) - len(results)} row(s) of {store.path} are not part of this "
              "run's plan and are left out of the tables.", file=sys.stderr)
    settings = {
        "seeds": ",".join(map(str, opts.seeds)),
        "pretrain epochs": opts.pretrain_epochs,
        "fine-tuning epochs": opts.epochs,
        "depth": ",".join("default" if d is None else str(d) for d in opts.depths),
        "model params": opts.params or "none",
        **({"label fractions": ",".join(f"{f:g}" for f in opts.label_fractions)}
           if opts.label_fractions != [None] else {}),
        "backend": f"{args.backend} (n_jobs {args.n_jobs})",
        "torch threads per fit": opts.threads,
        **_encoder_setting(opts.models),
    }
    page = partial(markdown_page, results, command, started, duration, settings,
                   skipped=skipped)
    if args.quick:
        page = partial(_smoke_test_page, page)
    if opts.label_fractions != [None]:
        note = same_subset_note(opts.datasets, opts.label_fractions, opts.seeds, opts.data_dir)
        if note:
            page = partial(_with_note, page, note)
    figures = write_figures(results, out)
    (out / "results.md").write_text(page(figures=figures))
    if args.write_docs is not None:
        docs = Path(args.write_docs)
        docs_figures = write_figures(results, docs.parent, stem=docs.stem)
        docs.write_text(page(figures=docs_figures))

    print(markdown_tables(results, skipped))
    written = [store.path, out / "results.md", *(out / f.file for f in figures)]
    print(f"Wrote {', '.join(map(str, written))} in {duration:.0f} s.")
    failed = results[results["error"] != ""]
    if len(failed) or missing:
        print(f"{len(failed)} of {len(results)} jobs failed; see the table above.",
              file=sys.stderr)
        return 1
    return 0
