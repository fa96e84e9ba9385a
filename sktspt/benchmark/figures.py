"""The benchmark's figures: accuracy per dataset, the critical-difference diagram, pairwise
scatters and accuracy against the label fraction.

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

They take the result frame of :func:`sktspt.benchmark.run_benchmark`; the tables and the
page are :mod:`sktspt.benchmark.report`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from .report import (
    Figure,
    _label,
    _label_order,
    accuracy_matrix,
    summarize,
)

__all__ = [
    "default_pairs",
    "figure_files",
    "pairwise_scatter",
    "plot_accuracy",
    "plot_critical_difference",
    "plot_label_fractions",
    "plot_matrix_critical_difference",
    "plot_pairwise",
    "write_figures",
]


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
