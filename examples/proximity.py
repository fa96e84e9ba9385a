"""Does self-pretraining teach attention proximity? Four states of one encoder.

On a dataset shipped with sktime (GunPoint by default), the same architecture and seed
are inspected in four states, on the held-out test series:

- ``init``: the initial weights (an ``SPTPretrainer`` with ``pretrain_epochs=0``);
- ``scratch``: an ``SPTClassifier`` trained on the labels only (``pretrain_epochs=0``);
- ``after SPT``: an ``SPTPretrainer`` after masked-reconstruction self-pretraining;
- ``after SPT+FT``: an ``SPTClassifier`` fine-tuned from exactly that pretrainer.

For each, the attention mass within ±w tokens (against uniform attention) and the
Spearman correlation of attention with -|i - j| are printed per layer (mean over
heads), and the attention-vs-distance profiles are saved as a PNG.

Run (a minute or two on one CPU core with the defaults)::

    python examples/proximity.py --out proximity_out
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd
import torch
from sklearn.frozen import FrozenEstimator
from sktime import datasets

from sktspt import SPTClassifier, SPTPretrainer
from sktspt.inspection import attention_maps, plot_proximity, proximity_summary

DATASETS = {
    "gunpoint": datasets.load_gunpoint,
    "arrow_head": datasets.load_arrow_head,
    "osuleaf": datasets.load_osuleaf,
    "italy_power_demand": datasets.load_italy_power_demand,
    "basic_motions": datasets.load_basic_motions,
}


def main(argv=None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", choices=sorted(DATASETS), default="gunpoint")
    parser.add_argument("--out", type=Path, default=Path("proximity_out"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pretrain-epochs", type=int, default=100)
    parser.add_argument("--epochs", type=int, default=100, help="label-training epochs")
    parser.add_argument("--w", type=int, default=2, help="neighbourhood half-width, tokens")
    parser.add_argument("--positional", default="sinusoidal")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)

    load = DATASETS[args.dataset]
    X_train, y_train = load(split="train", return_type="numpy3D")
    X_test, y_test = load(split="test", return_type="numpy3D")
    # default architecture (depth 3, d_model 64, 4 heads); only the epochs are set here
    common = dict(architecture__positional=args.positional, random_state=args.seed)

    t0 = time.perf_counter()
    init = SPTPretrainer(**common, pretrain_epochs=0).fit(X_train)
    scratch = SPTClassifier(**common, pretrain_epochs=0, max_epochs=args.epochs)
    scratch.fit(X_train, y_train)
    spt = SPTPretrainer(**common, pretrain_epochs=args.pretrain_epochs).fit(X_train)
    # `spt` holds exactly the encoder SPTClassifier(pretrain_epochs=E) would pretrain
    # internally (same seed); fine-tuning from it keeps the "after SPT" state at hand.
    finetuned = SPTClassifier(**common, pretrainer=FrozenEstimator(spt), max_epochs=args.epochs)
    finetuned.fit(X_train, y_train)
    seconds = time.perf_counter() - t0

    states = {
        "init": init,
        "scratch": scratch,
        "after SPT": spt,
        "after SPT+FT": finetuned,
    }
    maps = {name: attention_maps(est, X_test) for name, est in states.items()}
    summary = pd.concat(
        [proximity_summary(m, w=args.w).assign(state=name) for name, m in maps.items()],
        ignore_index=True,
    )
    per_layer = (
        summary.groupby(["state", "layer"], sort=False)[
            ["mass_within_w", "uniform_mass_within_w", "spearman", "mean_distance"]
        ]
        .mean()
        .round(3)
    )

    k = maps["init"][0].shape[-1]
    print(
        f"{args.dataset}: {len(X_train)} train / {len(X_test)} test series of length "
        f"{X_train.shape[-1]}, {init.patch_size_} steps per token -> {k} tokens; "
        f"seed {args.seed}, {args.pretrain_epochs} SPT + {args.epochs} label epochs, "
        f"positional={args.positional}; training took {seconds:.0f} s"
    )
    print(f"test accuracy: scratch {scratch.score(X_test, y_test):.3f}, "
          f"SPT+FT {finetuned.score(X_test, y_test):.3f}")
    print(f"attention on the test series, per layer (mean over heads), w = {args.w}:")
    with pd.option_context("display.width", 120, "display.max_columns", None):
        print(per_layer)

    summary.to_csv(args.out / f"proximity_{args.dataset}.csv", index=False)
    png = args.out / f"proximity_{args.dataset}.png"
    plot_proximity(
        maps,
        title=f"{args.dataset}: mean attention vs token distance (seed {args.seed})",
        path=png,
    )
    print(f"wrote {png} and {png.with_suffix('.csv')}")
    return summary


if __name__ == "__main__":
    main()
