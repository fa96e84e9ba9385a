"""Reporting of the regression benchmark (``--task regression``): tables, page, figures.

The classification report (:mod:`sktspt.benchmark.report`) ranks accuracies, which share
one scale across datasets. A regression target has its own units, so here

- the RMSE table gives each dataset's RMSE in its target's units, and compares models
  across datasets by their **mean rank** (1 is the lowest RMSE), not by a mean RMSE;
- R² is scale-free, so its table has a mean row;
- :func:`plot_rmse` draws one panel per dataset (each on its own RMSE axis);
- :func:`plot_critical_difference_rmse` is the critical-difference diagram of RMSE ranks
  (sktime's, with ``is_errors=True``: lower is better);
- :func:`plot_pairwise_r2` puts SPT's R² against MiniRocket's and scratch's, one point per
  dataset.

The tables and figures take the frame of a regression run's ``results.csv`` (columns
``dataset, model, seed, depth, rmse, r2, fit_s, predict_s, n_params, error``).
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from .figures import _pyplot, figure_files, pairwise_scatter
from .models import REGRESSION_MODELS
from .report import (
    Figure,
    _label,
    _label_order,
    _skipped_note,
    md_table,
    provenance,
)
from .run import Skipped

__all__ = [
    "markdown_page",
    "markdown_tables",
    "plot_critical_difference_rmse",
    "plot_pairwise_r2",
    "plot_rmse",
    "score_matrix",
    "summarize",
    "write_figures",
]


def summarize(results: pd.DataFrame) -> pd.DataFrame:
    """Mean and std (over seeds) of RMSE and R², mean and slowest fit and mean predict
    seconds, per dataset and model (and depth in a depth study); failed fits left out."""
    ok = results[results["error"] == ""].copy()
    study = ok["depth"].nunique() > 1
    ok["label"] = [_label(m, d, study) for m, d in zip(ok["model"], ok["depth"])]
    grouped = ok.groupby(["dataset", "model", "depth", "label"], sort=False, dropna=False)
    summary = grouped.agg(
        rmse=("rmse", "mean"), rmse_std=("rmse", "std"), r2=("r2", "mean"),
        r2_std=("r2", "std"), seeds=("seed", "count"), fit_s=("fit_s", "mean"),
        fit_max_s=("fit_s", "max"), predict_s=("predict_s", "mean"),
        n_params=("n_params", "first"),
    ).reset_index()
    summary[["rmse_std", "r2_std"]] = summary[["rmse_std", "r2_std"]].fillna(0.0)
    return summary


def score_matrix(results: pd.DataFrame, score: str = "rmse") -> pd.DataFrame:
    """Mean ``score`` (``"rmse"`` or ``"r2"``) over seeds: datasets (rows, in run order) by
    model labels (columns); NaN where a model did not run or failed."""
    summary = summarize(results)
    matrix = summary.pivot(index="dataset", columns="label", values=score)
    return matrix.reindex(index=list(dict.fromkeys(summary["dataset"])),
                          columns=_label_order(summary, REGRESSION_MODELS))


def _fmt(mean: float, std: float, seeds: int) -> str:
    """An RMSE in its target's units: four significant digits, the std two."""
    return f"{mean:.4g}" if seeds < 2 else f"{mean:.4g} ± {std:.2g}"


def _fmt_r2(mean: float, std: float, seeds: int) -> str:
    return f"{mean:.3f}" if seeds < 2 else f"{mean:.3f} ± {std:.3f}"


def markdown_tables(results: pd.DataFrame, skipped: Sequence[Skipped] = ()) -> str:
    """RMSE and R² matrices (datasets × models), the detailed table and any failures.

    The RMSE matrix ends with each model's mean rank over the datasets (only over models
    that ran on every dataset: a mean of RMSEs in different units would mean nothing); the
    R² matrix with its mean.
    """
    summary = summarize(results)
    labels = _label_order(summary, REGRESSION_MODELS)
    datasets = list(dict.fromkeys(summary["dataset"]))
    summary = summary.assign(
        _d=summary["dataset"].map(datasets.index), _m=summary["label"].map(labels.index)
    ).sort_values(["_d", "_m"])
    rmse = {(r.dataset, r.label): _fmt(r.rmse, r.rmse_std, r.seeds)
            for r in summary.itertuples()}
    r2 = {(r.dataset, r.label): _fmt_r2(r.r2, r.r2_std, r.seeds) for r in summary.itertuples()}
    rmse_rows = [[d] + [rmse.get((d, m), "—") for m in labels] for d in datasets]
    r2_rows = [[d] + [r2.get((d, m), "—") for m in labels] for d in datasets]
    notes = _skipped_note([s for s in skipped if s.dataset in datasets])
    if len(datasets) > 1:
        matrix = score_matrix(results, "rmse")
        complete = matrix.columns[matrix.notna().all()]
        ranks = matrix[complete].rank(axis=1).mean()
        rmse_rows.append(["**mean rank**"] + [
            f"{ranks[m]:.2f}" if m in ranks else "—" for m in labels])
        r2_means = score_matrix(results, "r2")[complete].mean()
        r2_rows.append(["**mean**"] + [
            f"{r2_means[m]:.3f}" if m in r2_means else "—" for m in labels])
        if len(complete) < len(labels):
            notes.append("- Mean rank and mean R² are given only for models that ran on "
                         "every dataset.")
    detail = [
        [r.dataset, r.label, _fmt(r.rmse, r.rmse_std, r.seeds),
         _fmt_r2(r.r2, r.r2_std, r.seeds),
         r.seeds, f"{r.fit_s:.1f}", f"{r.fit_max_s:.1f}", f"{r.predict_s:.2f}",
         "—" if pd.isna(r.n_params) else f"{int(r.n_params):,}"]
        for r in summary.itertuples()
    ]
    parts = [
        "## Test RMSE (mean ± std over seeds; in each target's units, lower is better)", "",
        md_table(["dataset", *labels], rmse_rows), "",
        "## Test R² (mean ± std over seeds; 1 is perfect, 0 is predicting the mean)", "",
        md_table(["dataset", *labels], r2_rows), "",
        *([*notes, ""] if notes else []),
        "## Per dataset and model", "",
        md_table(["dataset", "model", "RMSE", "R²", "seeds", "fit s", "slowest fit s",
                  "predict s", "params"], detail),
    ]
    failed = results[results["error"] != ""]
    if len(failed):
        parts += ["", "## Failed jobs", "",
                  md_table(["dataset", "model", "seed", "depth", "error"],
                           [[r.dataset, r.model, r.seed, r.depth, r.error.replace("|", "/")]
                            for r in failed.itertuples()])]
    return "\n".join(parts) + "\n"


def markdown_page(results: pd.DataFrame, command: str, started: datetime.datetime,
                  duration_s: float, settings: dict, figures: Sequence[Figure] = (),
                  skipped: Sequence[Skipped] = ()) -> str:
    """The regression results page: provenance, protocol, tables and the figures."""
    head = [
        *provenance("Regression benchmark results", command, started, duration_s, settings),
        "- Protocol: each dataset's default train/test split (time-series extrinsic "
        "regression, TSER); each seed is the model's `random_state`; any model selection "
        "happens inside `fit` on the training split; the test split is scored once per "
        "fitted model, by its RMSE (in the target's units) and R². `spt` is the default "
        "`SPTRegressor`; `scratch` the identical network without pretraining at equal "
        "optimizer steps (both phases' steps, or both phases' epochs when epochs are "
        "given); `minirocket` MiniRocket features, standardised, then `RidgeCV` (sktime's "
        "`RocketRegressor` recipe).",
        "",
        "",
    ]
    tail = []
    if figures:
        tail += ["", "## Figures", ""]
        for fig in figures:
            tail += [f"![{fig.alt}]({fig.file})", "", fig.caption, ""]
    return "\n".join(head) + markdown_tables(results, skipped) + "\n".join(tail)


# --- figures ------------------------------------------------------------------------------
def plot_rmse(results: pd.DataFrame, path: Path) -> None:
    """Test RMSE per model, one panel per dataset (each in its target's units), with the
    std over seeds as error bars (cut at 0)."""
    plt = _pyplot()
    summary = summarize(results)
    labels = _label_order(summary, REGRESSION_MODELS)
    datasets = list(dict.fromkeys(summary["dataset"]))
    show_std = bool((summary["seeds"] > 1).any())
    colors = plt.get_cmap("tab10")
    cols = min(3, len(datasets))
    rows = -(-len(datasets) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 0.9 + 0.35 * len(labels) * rows
                                                  + 0.6 * rows),
                             squeeze=False, layout="constrained")
    y = np.arange(len(labels))
    for ax, name in zip(axes.flat, datasets):
        part = summary[summary["dataset"] == name].set_index("label").reindex(labels)
        rmse, std = part["rmse"].to_numpy(float), part["rmse_std"].to_numpy(float)
        for i in range(len(labels)):
            if np.isnan(rmse[i]):
                continue
            ax.errorbar(rmse[i], y[i],
                        xerr=[[min(std[i], rmse[i])], [std[i]]] if show_std else None,
                        fmt="o", color=colors(i % colors.N), capsize=2, markersize=5)
        ax.set_yticks(y, labels)
        ax.set_ylim(len(labels) - 0.5, -0.5)
        ax.set_title(name, fontsize="medium")
        ax.set_xlabel("test RMSE")
        ax.grid(axis="x", color="0.9")
    for ax in list(axes.flat)[len(datasets):]:
        ax.set_visible(False)
    fig.suptitle("Test RMSE per dataset and model (lower is better"
                 + ("; mean ± std over seeds)" if show_std else ")"))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_critical_difference_rmse(results: pd.DataFrame, path: Path,
                                  alpha: float = 0.05) -> str:
    """Critical-difference diagram of the models' average RMSE ranks over the datasets
    (sktime's, ``is_errors=True``: rank 1 is the lowest RMSE; Friedman, then Nemenyi).

    Returns
    -------
    str
        Empty if the figure was written, else why not (fewer than 2 datasets or 3 models
        that ran on all of them).
    """
    matrix = score_matrix(results, "rmse").dropna(axis=1)
    if len(matrix) < 2 or matrix.shape[1] < 3:
        return (f"a critical-difference diagram needs at least 2 datasets and 3 models that "
                f"ran on all of them; this run has {len(matrix)} and {matrix.shape[1]}")
    from sktime.benchmarking.critical_difference import (
        plot_critical_difference as sktime_cd,
    )

    plt = _pyplot()
    order = matrix.rank(axis=1).mean().sort_values().index  # best first, as sktime expects
    matrix = matrix[order]
    textspace = 0.5 + 0.13 * max(len(str(c)) for c in matrix.columns)
    fig, _ = sktime_cd(matrix.to_numpy(), list(matrix.columns), is_errors=True, alpha=alpha,
                       width=2 * textspace + 5, textspace=textspace, return_fig=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return ""


def plot_pairwise_r2(results: pd.DataFrame, path: Path,
                     pairs: Sequence[tuple[str, str]] | None = None) -> str:
    """Scatter of one model's test R² (y) against another's (x), one point per dataset;
    above the diagonal the first model is better. R² is scale-free, so datasets with
    targets in different units share the axes. ``pairs`` defaults to SPT against
    MiniRocket and scratch.

    Returns
    -------
    str
        Empty if the figure was written, else why not (fewer than 2 datasets, or no pair).
    """
    return pairwise_scatter(score_matrix(results, "r2"), path, pairs, "R²",
                            "Test R² per dataset (mean over seeds)")


def write_figures(results: pd.DataFrame, folder: Path, stem: str = "") -> list[Figure]:
    """Write every figure the results allow into ``folder``; return them for the page.

    File names are ``rmse.png``, ``critical_difference.png`` and ``pairwise.png``, or
    ``<stem>.png``, ``<stem>-cd.png`` and ``<stem>-pairwise.png`` with a ``stem``.
    """
    folder = Path(folder)
    names = figure_files(results, folder, stem, "rmse.png")
    if not names:
        return []
    plot_rmse(results, folder / names[0])
    figures = [Figure(names[0], "test RMSE per dataset and model",
                      "Test RMSE per dataset (one panel each, in the target's units) and "
                      "model; lower is better.")]
    if not plot_critical_difference_rmse(results, folder / names[1]):
        figures.append(Figure(
            names[1], "critical-difference diagram of RMSE ranks",
            "Average RMSE rank over the datasets (1 is the lowest RMSE); models joined by a "
            "bar do not differ significantly (Friedman test, then Nemenyi at alpha 0.05; "
            "sktime's `plot_critical_difference`). With few datasets few differences are "
            "significant.",
        ))
    if not plot_pairwise_r2(results, folder / names[2]):
        figures.append(Figure(
            names[2], "pairwise R² scatter",
            "One point per dataset: the SPT model's test R² (y) against another model's "
            "(x); above the dashed diagonal SPT is better.",
        ))
    return figures
