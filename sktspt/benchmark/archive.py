"""The archive page: a benchmark run over the UCR archive beside the field's published results.

The field compares time-series classifiers dataset by dataset on the archive's default
train/test splits. tsml-eval publishes, per method, one CSV of test accuracies
(``results/classification/Univariate/<method>_accuracy.csv``: a header row
``Resamples:,0,1,...``, then one row per dataset; column ``0`` is the default split,
"fold 0"). :func:`read_published` reads those files from a folder the user points at;
:func:`archive_page` puts them beside a run's ``results.csv`` (SPT, its from-scratch
control, our MiniRocket): per-dataset accuracies, means and mean ranks, win/draw/loss and
Wilcoxon signed-rank tests of SPT against each method, a critical-difference diagram, how
close our MiniRocket comes to the published one, and SPT's differences broken down by what
a user knows before fitting (length, training-set size, classes, problem type).

Command line::

    python -m sktspt.benchmark.archive --results results/archive/results.csv \\
        --published <tsml-eval>/results/classification/Univariate --data-dir <UCR 2018> \\
        --write-docs docs/results-archive.md
"""

from __future__ import annotations

import argparse
import datetime
import math
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from .causes import CAUSES

__all__ = ["CAUSES", "MEDICAL", "PROBLEM_TYPES", "PUBLISHED", "archive_page", "depth_section",
           "far_under", "main", "read_published"]

#: The published methods the page lists (tsml-eval's file names).
PUBLISHED = ("MiniROCKET", "MR-Hydra", "HC2", "InceptionTime", "H-InceptionTime", "LITETime",
             "ResNet", "QUANT")

#: Problem type of each of the 93 UCR 2018 datasets that ``ucr_archive.py`` unpacks, as the
#: archive's DataSummary lists them.
PROBLEM_TYPES = {
    **dict.fromkeys(["ACSF1", "Computers", "ElectricDevices", "HouseTwenty",
                     "LargeKitchenAppliances", "PLAID"], "Device"),
    **dict.fromkeys(["ECG200", "ECG5000", "ECGFiveDays", "NonInvasiveFetalECGThorax1",
                     "NonInvasiveFetalECGThorax2"], "ECG"),
    **dict.fromkeys(["EOGHorizontalSignal", "EOGVerticalSignal"], "EOG"),
    **dict.fromkeys(["InsectEPGRegularTrain", "InsectEPGSmallTrain"], "EPG"),
    **dict.fromkeys(["PigAirwayPressure", "PigArtPressure", "PigCVP"], "Hemodynamics"),
    "Fungi": "HRM",
    **dict.fromkeys(["Adiac", "ArrowHead", "BeetleFly", "BirdChicken", "Crop",
                     "DiatomSizeReduction", "DistalPhalanxOutlineAgeGroup",
                     "DistalPhalanxOutlineCorrect", "DistalPhalanxTW", "FaceAll", "FaceFour",
                     "FacesUCR", "FiftyWords", "Fish", "HandOutlines", "Herring",
                     "MedicalImages", "MiddlePhalanxOutlineAgeGroup",
                     "MiddlePhalanxOutlineCorrect", "MiddlePhalanxTW",
                     "MixedShapesRegularTrain", "MixedShapesSmallTrain", "OSULeaf",
                     "PhalangesOutlinesCorrect", "ProximalPhalanxOutlineAgeGroup",
                     "ProximalPhalanxOutlineCorrect"], "Image"),
    **dict.fromkeys(["CricketX", "CricketY", "CricketZ", "GunPoint", "GunPointAgeSpan",
                     "GunPointMaleVersusFemale", "GunPointOldVersusYoung", "Haptics",
                     "InlineSkate"], "Motion"),
    "PowerCons": "Power",
    **dict.fromkeys(["AllGestureWiimoteX", "AllGestureWiimoteY", "AllGestureWiimoteZ", "Car",
                     "ChlorineConcentration", "CinCECGTorso", "DodgerLoopDay",
                     "DodgerLoopGame", "DodgerLoopWeekend", "Earthquakes", "FordA", "FordB",
                     "FreezerRegularTrain", "FreezerSmallTrain", "GesturePebbleZ1",
                     "GesturePebbleZ2", "InsectWingbeatSound", "ItalyPowerDemand",
                     "Lightning2", "Lightning7", "MoteStrain", "Phoneme",
                     "PickupGestureWiimoteZ", "Plane"], "Sensor"),
    **dict.fromkeys(["BME", "CBF", "Mallat"], "Simulated"),
    **dict.fromkeys(["Beef", "Coffee", "EthanolLevel", "Ham", "Meat", "OliveOil"], "Spectro"),
    **dict.fromkeys(["Chinatown", "MelbournePedestrian"], "Traffic"),
    **dict.fromkeys(["GestureMidAirD1", "GestureMidAirD2", "GestureMidAirD3"], "Trajectory"),
}

#: Our models as the page names them: the run's model name -> the column.
OURS = {"default": "default", "spt-span": "SPT", "scratch": "scratch",
        "minirocket": "MiniRocket (ours)"}


def read_published(folder: str | Path, methods: Sequence[str] = PUBLISHED) -> pd.DataFrame:
    """The published default-split accuracies: datasets (rows) by methods (columns).

    Reads ``<folder>/<method>_accuracy.csv`` in tsml-eval's layout and keeps column ``0``
    (the default split). A dataset a method has no result for is NaN.

    Raises
    ------
    FileNotFoundError
        If a method's file is missing (the message names the folder tsml-eval keeps them in).
    ValueError
        If a file is not in tsml-eval's layout.
    """
    folder = Path(folder)
    columns = {}
    for method in methods:
        path = folder / f"{method}_accuracy.csv"
        if not path.is_file():
            raise FileNotFoundError(
                f"{path} is missing: point --published at tsml-eval's "
                "results/classification/Univariate folder (files <method>_accuracy.csv).")
        table = pd.read_csv(path, index_col=0)
        if "0" not in table.columns:
            raise ValueError(f"{path}: no column '0' (the default split) in its header "
                             f"{list(table.columns)[:4]}; expected tsml-eval's layout "
                             "'Resamples:,0,1,...'.")
        fold0 = pd.to_numeric(table["0"], errors="coerce")
        if fold0.notna().any() and not fold0.dropna().between(0, 1).all():
            raise ValueError(f"{path}: default-split accuracies outside [0, 1].")
        columns[method] = fold0
    return pd.DataFrame(columns)


def ours_matrix(results: pd.DataFrame) -> pd.DataFrame:
    """The run's accuracies (mean over seeds; the archive run has one): datasets by our
    models, failed fits as NaN."""
    ok = results[(results["error"].fillna("") == "") & results["model"].isin(list(OURS))]
    matrix = ok.groupby(["dataset", "model"])["accuracy"].mean().unstack("model")
    return matrix.reindex(columns=[m for m in OURS if m in matrix.columns]).rename(columns=OURS)


def _p(p: float) -> str:
    return "—" if np.isnan(p) else (f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}")


def wilcoxon_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value of paired accuracies (ties dropped, as the
    field's tables do); NaN where every pair ties or fewer than 2 pairs remain."""
    from scipy.stats import wilcoxon

    diff = np.asarray(a, float) - np.asarray(b, float)
    diff = diff[~np.isnan(diff)]
    if np.count_nonzero(np.abs(diff) > 1e-12) < 2:
        return float("nan")
    return float(wilcoxon(diff, zero_method="wilcox").pvalue)


def wdl(a, b, tol: float = 1e-9) -> tuple[int, int, int]:
    """Wins, draws and losses of ``a`` against ``b`` over the pairs where both exist."""
    diff = np.asarray(a, float) - np.asarray(b, float)
    diff = diff[~np.isnan(diff)]
    return int((diff > tol).sum()), int((np.abs(diff) <= tol).sum()), int((diff < -tol).sum())


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    from .report import md_table

    return md_table(header, rows)


def _acc(v) -> str:
    return "—" if pd.isna(v) else f"{v:.3f}"


def comparison_table(matrix: pd.DataFrame, reference: str = "SPT") -> str:
    """Mean, mean rank and, for each method against ``reference``, W/D/L and Wilcoxon p,
    over the datasets where every column has a result."""
    common = matrix.dropna()
    ranks = common.rank(axis=1, ascending=False).mean()
    rows = []
    for col in sorted(common.columns, key=lambda c: ranks[c]):
        w, d, lo = wdl(common[reference], common[col])
        rows.append([col, _acc(common[col].mean()), f"{ranks[col]:.2f}",
                     "—" if col == reference else f"{w} / {d} / {lo}",
                     "—" if col == reference else _p(wilcoxon_p(common[reference], common[col]))])
    return _table(["method", "mean accuracy", "mean rank",
                   f"{reference} wins / draws / losses", "Wilcoxon p"], rows)


def _bins(values: pd.Series, edges: Sequence[float], unit: str) -> pd.Series:
    labels = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        labels.append(f"{unit} ≥ {lo:g}" if math.isinf(hi) else
                      f"{unit} {lo:g}" if hi - lo == 1 else f"{unit} {lo:g}–{hi - 1:g}")
    return pd.cut(values, edges, right=False, labels=labels)


def breakdown(matrix: pd.DataFrame, facts: pd.DataFrame,
              pairs: Sequence[tuple[str, str]] = (("SPT", "scratch"),
                                                  ("SPT", "MiniRocket (ours)"))) -> str:
    """Each pair's difference (first − second, points), W/D/L and Wilcoxon p, by what a
    user knows before fitting: series length, training-set size, classes, problem type."""
    groups = {
        "series length": _bins(facts["length"], [0, 100, 300, 700, np.inf], "length"),
        "training series": _bins(facts["n_train"], [0, 100, 500, np.inf], "n_train"),
        "classes": _bins(facts["n_classes"], [2, 3, 10, np.inf], "classes"),
        "problem type": facts["type"],
    }
    rows = []
    for what, group in groups.items():
        order = (list(group.cat.categories) if isinstance(group.dtype, pd.CategoricalDtype)
                 else sorted(group.dropna().unique()))
        for name in order:
            names = group.index[group == name]
            part = matrix.reindex(names)
            used = [c for c in dict.fromkeys(c for pair in pairs for c in pair) if c in part]
            done = int(part[used].notna().all(axis=1).sum())
            cells = [what, str(name), f"{done} of {len(names)}"]
            for first, other in pairs:
                if other not in part or first not in part:
                    cells += ["—", "—", "—"]
                    continue
                pair = part[[first, other]].dropna()
                diff = 100 * (pair[first] - pair[other])
                w, d, lo = wdl(pair[first], pair[other])
                cells += ["—" if pair.empty else f"{diff.mean():+.1f}", f"{w} / {d} / {lo}",
                          _p(wilcoxon_p(pair[first], pair[other]))]
            rows.append(cells)
    header = ["by", "group", "datasets"]
    for first, other in pairs:
        header += [f"{first} − {other} (points)", "W / D / L", "p"]
    return _table(header, rows)


def far_under(matrix: pd.DataFrame, reference: str, other: str = "ResNet",
              points: float = 10.0) -> list[str]:
    """The datasets where ``reference`` is more than ``points`` under ``other``, with the
    cause :data:`CAUSES` states or "not yet diagnosed"."""
    if reference not in matrix or other not in matrix:
        return []
    pair = matrix[[reference, other]].dropna()
    gap = 100 * (pair[reference] - pair[other])
    far = gap[gap < -points].sort_values()
    if far.empty:
        return [f"No dataset is more than {points:g} points under {other}."]
    return [f"{len(far)} datasets are more than {points:g} points under {other}:", "",
            _table(["dataset", reference, other, "points", "cause"],
                   [[d, _acc(pair.loc[d, reference]), _acc(pair.loc[d, other]), f"{g:+.1f}",
                     CAUSES.get(d, "not yet diagnosed")] for d, g in far.items()])]


def minirocket_check(matrix: pd.DataFrame) -> list[str]:
    """How close our MiniRocket comes to the published one, and where they differ > 5 points."""
    if "MiniRocket (ours)" not in matrix or "MiniROCKET" not in matrix:
        return []
    pair = matrix[["MiniRocket (ours)", "MiniROCKET"]].dropna()
    if pair.empty:
        return []
    diff = 100 * (pair["MiniRocket (ours)"] - pair["MiniROCKET"])
    far = diff[diff.abs() > 5].sort_values()
    lines = [f"Our MiniRocket against the published MiniROCKET on the {len(pair)} datasets both "
             f"have: mean {pair['MiniRocket (ours)'].mean():.4f} against "
             f"{pair['MiniROCKET'].mean():.4f} ({diff.mean():+.2f} points; mean absolute "
             f"difference {diff.abs().mean():.2f}, largest {diff.abs().max():.1f})."]
    if len(far):
        lines.append("Datasets where they differ by more than 5 points: " + ", ".join(
            f"{d} {v:+.1f}" for d, v in far.items()) + " (one draw of MiniRocket's random "
            "biases against another: the published fold 0 is one seed of aeon's "
            "implementation, ours one seed of sktime's, on few test series).")
    else:
        lines.append("No dataset differs by more than 5 points.")
    return lines


def dataset_facts(names: Sequence[str], data_dir: str | None) -> pd.DataFrame:
    """Length, training-set size, classes and problem type of each dataset."""
    from .datasets import load_dataset

    rows = {}
    for name in names:
        info = load_dataset(name, data_dir)[-1]
        rows[name] = dict(length=info.max_length, n_train=info.n_train,
                          n_classes=info.n_classes, type=PROBLEM_TYPES.get(name, "other"))
    return pd.DataFrame.from_dict(rows, orient="index")


def _shaping(names: Sequence[str]) -> str:
    """Which of the page's datasets shaped the package's defaults."""
    from .datasets import DATASETS, HELDOUT, TEST_SEEN

    dev = [d for d in names if d in DATASETS]
    held = [d for d in names if d in HELDOUT and d not in TEST_SEEN]
    seen = [d for d in names if d in TEST_SEEN]
    rest = len(names) - len(dev) - len(held) - len(seen)
    return ("- Which sets shaped the defaults: " + (", ".join(dev) or "none")
            + " are development sets (defaults chosen on their training splits, "
            "`docs/tuning.md`); " + (", ".join(held) or "none") + " held out (never tuned "
            "on); " + (", ".join(seen) or "none") + " held out, but its test scores were "
            "read before the roll rule of `augment=\"auto\"` was written (round 32); the "
            f"other {rest} were not part of the package's tuning.")


def cost_lines(results: pd.DataFrame, wall_s: float | Sequence[float] | None) -> list[str]:
    ok = results[results["error"].fillna("") == ""]
    lines = []
    for model, label in OURS.items():
        part = ok[ok["model"] == model]
        if len(part):
            lines.append(f"{label}: {part['fit_s'].sum() / 3600:.2f} h of fits and "
                         f"{part['predict_s'].sum() / 3600:.2f} h of prediction over "
                         f"{len(part)} datasets (median fit {part['fit_s'].median():.1f} s).")
    wall_s = sum(wall_s) if isinstance(wall_s, Sequence) else wall_s
    total = (ok["fit_s"].sum() + ok["predict_s"].sum()) / 3600
    lines.append(f"All fits and predictions: {total:.2f} h of one core each"
                 + (f"; wall-clock {wall_s / 3600:.2f} h." if wall_s else "."))
    slow = ok.assign(s=ok["fit_s"] + ok["predict_s"]).groupby("dataset")["s"].sum()
    slow = slow.sort_values(ascending=False).head(5)
    lines.append("Where the time went (fit + predict, all models): " + ", ".join(
        f"{d} {s / 60:.0f} min" for d, s in slow.items()) + ".")
    return lines


def archive_page(results: pd.DataFrame, published: pd.DataFrame, facts: pd.DataFrame,
                 command: str, started: datetime.datetime, duration_s: float,
                 figure: str | None = None, wall_s: float | Sequence[float] | None = None,
                 depth_results: pd.DataFrame | None = None,
                 run_command: str | Sequence[str] | None = None) -> str:
    """The archive page's Markdown. The reference model is ``default`` (the classifier as
    shipped) where the run has it, else SPT."""
    from .report import provenance

    ours = ours_matrix(results)
    names = list(facts.index)
    matrix = ours.reindex(names).join(published.reindex(names))
    failed = results[results["error"].fillna("") != ""]
    done = ours.reindex(names).notna().all(axis=1)
    ref = "default" if "default" in ours else "SPT"
    runs = [run_command] if isinstance(run_command, str) else list(run_command or [])
    n_ours = len(ours.columns)
    head = [
        *provenance("The UCR archive: sktspt beside the field's published results", command,
                    started, duration_s, {"datasets": len(names),
                                          "seed": "0 (the default split, as fold 0)"}),
        "- Protocol: each dataset's default train/test split; "
        + ("`default` is `SPTClassifier()` exactly as shipped; " if ref == "default" else "")
        + "SPT with its defaults (`spt-span`), `scratch` the identical network from scratch "
        "at equal optimizer steps, our MiniRocket as sktime and aeon set it up (features, "
        "`StandardScaler(with_mean=False)`, `RidgeClassifierCV`); the published columns are "
        "tsml-eval's fold-0 accuracies (" + ", ".join(published.columns) + "), which cover "
        f"{int(published.reindex(names).notna().all(axis=1).sum())} of these datasets (not "
        "the unequal-length and missing-value sets).",
        *[f"- Run: `{r}`" for r in runs],
        _shaping(names),
        f"- Completed: {int(done.sum())} of {len(names)} datasets with all {n_ours} of our "
        "models" + (f"; {len(failed)} failed fits: " + ", ".join(
            f"{r.dataset}/{r.model}" for r in failed.itertuples()) if len(failed) else "")
        + ".",
        "",
    ]
    body = [f"## {'The default classifier' if ref == 'default' else 'SPT'} against each "
            "method", "",
            f"Over the {len(matrix.dropna())} datasets where every method has a result "
            "(mean rank: 1 is best; wins / draws / losses and the two-sided Wilcoxon "
            f"signed-rank test are {ref}'s against the row's method).", "",
            comparison_table(matrix, ref), ""]
    body += [f"Our {n_ours} models over every completed dataset:", "",
             comparison_table(ours.dropna(), ref), ""]
    if figure:
        body += [f"![Critical-difference diagram]({figure})", "",
                 "Average ranks over the datasets where every method has a result (Friedman "
                 "test, Nemenyi critical difference; methods joined by a bar do not differ "
                 "significantly at 0.05).", ""]
    if ref == "default":
        body += ["## Where the default wins and loses", "",
                 "The default's accuracy minus the published MiniROCKET's and InceptionTime's, "
                 "in points, by what a user knows before fitting.", "",
                 breakdown(matrix, facts, (("default", "MiniROCKET"),
                                           ("default", "InceptionTime"))), "",
                 *far_under(matrix, "default"), ""]
    body += ["## Our MiniRocket against the published one", "", *minirocket_check(matrix), ""]
    body += ["## Where SPT pays", "",
             "SPT's accuracy minus its from-scratch control's and minus our MiniRocket's, in "
             "points, by what a user knows before fitting; W / D / L and the Wilcoxon p are "
             "SPT's.", "", breakdown(ours.reindex(names), facts), ""]
    if depth_results is not None:
        body += depth_section(depth_results)
    body += ["## Cost", "", *[f"- {line}" for line in cost_lines(results, wall_s)], ""]
    rows = []
    for name in names:
        rows.append([name, PROBLEM_TYPES.get(name, "other"), str(facts.loc[name, "length"]),
                     str(facts.loc[name, "n_train"]),
                     *[_acc(matrix.loc[name, c]) if c in matrix else "—"
                       for c in [*ours.columns, *published.columns]]])
    body += ["## Per dataset", "", "Test accuracy on the default split.", "",
             _table(["dataset", "type", "length", "train", *ours.columns, *published.columns],
                    rows), ""]
    return "\n".join(head + body)


#: The archive's medical sets of the seed paper's claim (gains that grow with depth): its
#: ECG and EOG problems.
MEDICAL = tuple(sorted(n for n, t in PROBLEM_TYPES.items() if t in ("ECG", "EOG")))


def depth_section(depth_results: pd.DataFrame) -> list[str]:
    """SPT − scratch per dataset at each depth of a depth-study run (``--depth 3 6`` on
    :data:`MEDICAL`), with the mean and the Wilcoxon p per depth."""
    ok = depth_results[(depth_results["error"].fillna("") == "")
                       & depth_results["model"].isin(["spt-span", "scratch"])]
    table = ok.groupby(["dataset", "depth", "model"])["accuracy"].mean().unstack("model")
    if table.empty or not {"spt-span", "scratch"} <= set(table.columns):
        return []
    depths = sorted(int(d) for d in table.index.get_level_values("depth").unique())
    names = sorted(table.index.get_level_values("dataset").unique())
    rows, summary = [], []
    for name in names:
        cells = [name]
        for d in depths:
            key = (name, d)
            if key in table.index:
                spt, scr = table.loc[key, "spt-span"], table.loc[key, "scratch"]
                cells.append(f"{_acc(spt)} / {_acc(scr)} ({100 * (spt - scr):+.1f})")
            else:
                cells.append("—")
        rows.append(cells)
    for d in depths:
        part = table.xs(d, level="depth").dropna()
        diff = 100 * (part["spt-span"] - part["scratch"])
        w, dr, lo = wdl(part["spt-span"], part["scratch"])
        summary.append(f"- depth {d}: SPT − scratch {diff.mean():+.1f} points over "
                       f"{len(part)} datasets, {w} / {dr} / {lo}, Wilcoxon p "
                       f"{_p(wilcoxon_p(part['spt-span'], part['scratch']))}.")
    return ["## Depth on medical series", "",
            "The seed paper's claim, that SPT's gains grow with depth on medical series, "
            "checked on the archive's ECG and EOG sets: SPT / scratch (SPT − scratch, "
            "points) per depth.", "",
            _table(["dataset", *[f"depth {d}" for d in depths]], rows), "", *summary, ""]


def plot_cd(matrix: pd.DataFrame, path: Path) -> str:
    """The critical-difference diagram over the datasets where every column has a result."""
    from .figures import plot_matrix_critical_difference

    return plot_matrix_critical_difference(matrix.dropna(), path)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m sktspt.benchmark.archive",
        description="Write the archive page: a run's results.csv beside tsml-eval's "
                    "published default-split accuracies.")
    p.add_argument("--results", required=True, nargs="+",
                   help="the archive run's results.csv (several: their rows together)")
    p.add_argument("--published", required=True,
                   help="folder of tsml-eval's <method>_accuracy.csv files")
    p.add_argument("--data-dir", required=True, help="the archive folder the run read")
    p.add_argument("--write-docs", required=True, help="the page to write, e.g. "
                   "docs/results-archive.md (its figure beside it, stem + -cd.png)")
    p.add_argument("--wall-s", type=float, action="append", default=None,
                   help="the run's wall-clock seconds, if known (once per run)")
    p.add_argument("--run-command", action="append", default=None,
                   help="the benchmark command that wrote --results, for the page's record "
                        "(once per run)")
    p.add_argument("--depth-results", default=None,
                   help="results.csv of a depth study (--depth 3 6) of spt-span and scratch "
                        "on the ECG and EOG sets, for the page's section on depth")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    from .datasets import local_problems

    args = build_parser().parse_args(argv)
    started = datetime.datetime.now().astimezone()
    results = pd.concat([pd.read_csv(f, keep_default_na=False, na_values=[""])
                         for f in args.results], ignore_index=True)
    published = read_published(args.published)
    facts = dataset_facts(local_problems(args.data_dir), args.data_dir)
    page = Path(args.write_docs)
    figure = page.with_name(page.stem + "-cd.png")
    matrix = ours_matrix(results).reindex(facts.index).join(published.reindex(facts.index))
    why = plot_cd(matrix, figure)
    command = "python -m sktspt.benchmark.archive " + shlex.join(
        sys.argv[1:] if argv is None else list(argv))
    duration = (datetime.datetime.now().astimezone() - started).total_seconds()
    depth = (None if args.depth_results is None else
             pd.read_csv(args.depth_results, keep_default_na=False, na_values=[""]))
    text = archive_page(results, published, facts, command, started, duration,
                        figure=None if why else figure.name, wall_s=args.wall_s,
                        depth_results=depth, run_command=args.run_command)
    page.write_text(text)
    print(f"Wrote {page}" + ("" if why else f" and {figure}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
