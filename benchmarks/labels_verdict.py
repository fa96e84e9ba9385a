"""Issue 85's verdict: self-pretraining on the archive's large sets at few labels.

Reads the rows of ``python -m sktspt.benchmark ... --label-fraction 0.01 0.05 0.1`` (the
command is in ``docs/results-labels-archive.md``) and prints, per label fraction, each
comparison the issue asks for over the datasets: mean accuracy difference (points), W/D/L and
the two-sided Wilcoxon signed-rank p, with each dataset's accuracy the mean over the label
draws (seeds) every arm has finished. Also the moonshot (SPT at 10 % labels against the 0.5
default classifier at 100 %, from ``docs/results-archive-05.csv``) and the median cost per fit.

    python benchmarks/labels_verdict.py docs/results-labels-archive.csv
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from sktspt.benchmark.archive import _p, wdl, wilcoxon_p
from sktspt.benchmark.report import md_table

ARMS = ["spt-span", "scratch", "minirocket", "minirocket-selftrain", "spt-archive"]
PAIRS = [("spt-span", "scratch"), ("spt-span", "best MiniRocket"),
         ("spt-span", "minirocket"), ("spt-span", "minirocket-selftrain"),
         ("spt-archive", "scratch"), ("spt-archive", "spt-span")]


def complete_draws(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of the (dataset, fraction, seed) cells every arm has finished."""
    rows = rows[rows["error"].isna() & rows["model"].isin(ARMS)]
    n = rows.groupby(["dataset", "label_fraction", "seed"])["model"].transform("nunique")
    return rows[n == len(ARMS)]


def verdict(rows: pd.DataFrame, full: pd.Series | None = None) -> str:
    rows = complete_draws(rows)
    means = rows.pivot_table(index=["label_fraction", "dataset"], columns="model",
                             values="accuracy", aggfunc="mean")
    draws = rows.groupby(["label_fraction", "dataset"])["seed"].nunique()
    out = []
    for fraction, table in means.groupby(level=0):
        table = table.droplevel(0)
        mr = table[["minirocket", "minirocket-selftrain"]].mean().idxmax()
        table["best MiniRocket"] = table[mr]
        n = draws[fraction]
        span = f"{n.min()}" if n.min() == n.max() else f"{n.min()}-{n.max()}"
        header = [f"{fraction:.0%} labels ({len(table)} sets, {span} label draws each; "
                  f"best MiniRocket = {mr})",
                  "mean A", "mean B", "A − B (points)", "W/D/L", "Wilcoxon p"]
        body = []
        for a, b in PAIRS:
            w, d, l_ = wdl(table[a], table[b], tol=5e-4)
            body.append([f"{a} − {b}", f"{table[a].mean():.3f}", f"{table[b].mean():.3f}",
                         f"{100 * (table[a] - table[b]).mean():+.1f}", f"{w}/{d}/{l_}",
                         _p(wilcoxon_p(table[a], table[b]))])
        if full is not None and np.isclose(fraction, 0.1):
            common = table.index.intersection(full.index)
            s, f = table.loc[common, "spt-span"], full[common]
            w, d, l_ = wdl(s, f, tol=5e-4)
            body.append(["spt-span at 10 % − default at 100 %", f"{s.mean():.3f}",
                         f"{f.mean():.3f}", f"{100 * (s - f).mean():+.1f}", f"{w}/{d}/{l_}",
                         _p(wilcoxon_p(s, f))])
        out.append(md_table(header, body))
    cost = rows.groupby("model")["fit_s"].agg(["median", "sum"])
    out.append(md_table(["arm", "median fit (s)", "total fit time (min)"],
                        [[m, f"{cost.loc[m, 'median']:.1f}", f"{cost.loc[m, 'sum'] / 60:.0f}"]
                         for m in ARMS]))
    return "\n\n".join(out)


def per_dataset(rows: pd.DataFrame) -> str:
    """Each dataset's accuracy per arm and fraction, the mean over its finished label draws."""
    rows = complete_draws(rows)
    means = rows.pivot_table(index=["dataset", "label_fraction"], columns="model",
                             values="accuracy", aggfunc="mean")
    draws = rows.groupby(["dataset", "label_fraction"])["seed"].nunique()
    return md_table(["dataset, labels", "draws", *ARMS],
                    [[f"{d}, {f:.0%}", str(draws[d, f]), *(f"{means.loc[(d, f), m]:.3f}"
                                                         for m in ARMS)]
                     for d, f in means.index])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("csv")
    parser.add_argument("--full", default="docs/results-archive-05.csv",
                        help="the default classifier at 100 %% labels (its 'default' rows)")
    args = parser.parse_args(argv)
    full = pd.read_csv(args.full)
    full = full[full["model"] == "default"].groupby("dataset")["accuracy"].mean()
    rows = pd.read_csv(args.csv)
    print(verdict(rows, full), per_dataset(rows), sep="\n\n")


if __name__ == "__main__":
    main()
