"""The benchmark's options: the argument parser and what the parsed arguments resolve to.

Only the light modules (dataset names, the model registry) load here, so ``--help``
answers at once; :mod:`sktspt.benchmark.cli` runs what :func:`resolve_options` returns.
"""

from __future__ import annotations

import argparse
import ast
import os
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .datasets import (
    DATASETS,
    TSER_DATASETS,
    check_dataset_names,
    dataset_task,
    local_problems,
)
from .models import DEFAULT_MODELS, registry
from .zips import PASSWORD_ENV

__all__ = ["DEFAULT_OUTPUT", "FULL_SEEDS", "Options", "QUICK", "QUICK_OUTPUT",
           "QUICK_REGRESSION", "build_parser", "resolve_options"]

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
    allowed = {*estimator().get_params(), *estimator._routed} - _CONTROLLED
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


class _Formatter(argparse.HelpFormatter):
    """Help of one line an option: ``NAME...`` for a list, no wrapped usage line."""

    def _format_args(self, action, default_metavar):
        if action.nargs == "+":
            return f"{self._metavar_formatter(action, default_metavar)(1)[0]}..."
        return super()._format_args(action, default_metavar)


class _Parser(argparse.ArgumentParser):
    """A usage error is one line and a pointer to ``--help``, not the usage block first."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The benchmark's options: the common ones first, the rest in groups; every help is one
    line, and ``docs/benchmark.md`` gives the details."""
    parser = _Parser(
        prog="sktspt-benchmark",
        formatter_class=lambda prog: _Formatter(prog, max_help_position=26),
        usage="%(prog)s [--datasets NAME...] [--models NAME...] [options]",
        description="SPT against its from-scratch control and MiniRocket on UCR/UEA datasets. "
        "Writes results.csv (a row per fit, as it finishes), results.md, accuracy.png, "
        "pairwise.png and critical_difference.png to --output.",
        epilog="Details of every option: docs/benchmark.md.",
    )
    add = parser.add_argument
    add("--datasets", nargs="+", metavar="NAME",
        help="archive names or 'all' (default: 8 in sktime)")
    add("--models", nargs="+", metavar="NAME",
        help=f"default: {' '.join(DEFAULT_MODELS)}")
    seeds = parser.add_mutually_exclusive_group()
    seeds.add_argument("--seeds", nargs="+", metavar="N",
                       help=f"a count (default {FULL_SEEDS}: 0 1 2) or two+ seeds")
    seeds.add_argument("--seed-list", nargs="+", metavar="SEED",
                       help="the seeds: --seed-list 5 runs seed 5 alone")
    add("--data-dir", type=Path, metavar="DIR",
        help="an archive as downloaded: its zip or folder")
    add("--zip-password", metavar="PW",
        help="of an encrypted zip (default: UCR's 'someone')")
    add("--n-jobs", type=int, default=1, metavar="N",
        help="parallel fits (-1: all cores; default 1)")
    add("--output", type=Path, metavar="DIR",
        help=f"default {DEFAULT_OUTPUT}/ ({QUICK_OUTPUT}/ with --quick)")
    add("--resume", action="store_true",
        help="skip the fits already in --output")
    add("--quick", action="store_true",
        help="a half-minute smoke test, not a benchmark")

    fits = parser.add_argument_group("fits")
    fits.add_argument("--task", choices=("auto", "classification", "regression"),
                      default="auto", metavar="TASK",
                      help="classification, regression, auto (default)")
    fits.add_argument("--pretrain-epochs", type=_epochs, metavar="N",
                      help="pretraining of the spt-* models (default auto)")
    fits.add_argument("--epochs", type=_epochs, metavar="N",
                      help="fine-tuning epochs (default auto)")
    fits.add_argument("--depth", nargs="+", metavar="D",
                      help="encoder depth(s): a depth study (default 3)")
    fits.add_argument("--label-fraction", nargs="+", metavar="F",
                      help="few-labels study: shares of labels kept")
    fits.add_argument("--model-params", nargs="+", default=[], metavar="K=V",
                      help="extra estimator parameters, e.g. d_model=32")
    fits.add_argument("--threads", type=int, metavar="N",
                      help="torch threads per fit (default 1)")

    where = parser.add_argument_group("where fits run, what is written")
    where.add_argument("--backend", choices=_BACKENDS, default="loky", metavar="NAME",
                       help="loky (default: local processes), dask, ray")
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="dask scheduler address (default: a local cluster)")
    where.add_argument("--write-docs", type=Path, metavar="PATH",
                       help="also write the page and figures to PATH")
    where.add_argument("--no-progress", action="store_true",
                       help="a log line per fit instead of a progress bar")
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
        if data_dir is not None and not (Path(data_dir).is_dir()
                                         or zipfile.is_zipfile(data_dir)):
            raise argparse.ArgumentTypeError(
                f"--data-dir {data_dir} is neither a folder nor a zip file (an archive as "
                "downloaded, e.g. UCRArchive_2018.zip, or its unpacked folder).")
        if getattr(args, "zip_password", None):  # read where a problem is extracted
            os.environ[PASSWORD_ENV] = args.zip_password
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
            pretrain = quick.get("pretrain_epochs", "auto")  # the SPT models self-pretrain
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
