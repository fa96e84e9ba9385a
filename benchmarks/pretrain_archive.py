"""Build a pretrained encoder on the UCR archive's training splits, with its model card.

An :class:`~sktspt.SPTPretrainer` (masked reconstruction, the package's objective) is
fitted, labels unused, on the union of the *training* splits of the archive folder's
problems (no test split is read): all of them, or one half (``--half A`` / ``--half B``:
the problems in name order, alternately), so that an encoder can be judged on the half it
never saw. Every series is standardised on its own (``normalize="instance"``: the corpus
mixes scales) and resampled to 256 steps (``tokenizer__length``; the UCR 2018 folder's
lengths run from 15 to 2,709), so any length makes the same 32 tokens.

Writes the saved pretrainer (``--output``, e.g. ``sktspt/pretrained/archive.sktspt``) and,
beside it, its model card ``<stem>.json`` and ``<stem>.md`` (data, objective, steps, size,
the data's licence, duration, SHA-256 and this command) and a log ``<stem>.log``.

    python benchmarks/pretrain_archive.py --data-dir ~/ucr2018 \\
        --output sktspt/pretrained/archive.sktspt
    python benchmarks/pretrain_archive.py --data-dir ~/ucr2018 --half A \\
        --output results/encoders/half-A.sktspt
"""

from __future__ import annotations

import argparse
import datetime
import json
import shlex
import sys
import time
from pathlib import Path

#: The encoder's settings that differ from SPTPretrainer's defaults, and why.
SETTINGS = {
    "normalize": "instance",  # the corpus mixes raw and z-normalised series
    "augment": False,  # no rolls: the corpus is varied enough, and rolls cost a pass each
    # Every series resampled to 256 steps, 8 per token (32 tokens, as "auto" patches give
    # a task's series): the tokens do not depend on a patch size fitted to one dataset, and
    # the rocket tokenizer's thresholds are the corpus's, not one dataset's.
    "tokenizer__length": 256,
    "batch_size": 32,
}

LICENCE = ("UCR Time Series Classification Archive (2018): free for research use; cite Dau "
           "et al., 'The UCR Time Series Archive', IEEE/CAA J. Autom. Sinica 6(6), 2019.")


def corpus_names(data_dir: str, half: str) -> list[str]:
    """The problems of the folder, or of one half: in name order, alternately A and B."""
    from sktspt.benchmark.datasets import local_problems

    names = sorted(local_problems(data_dir))
    return names if half == "all" else names[{"A": 0, "B": 1}[half]::2]


def build(data_dir: str, half: str, output: Path, steps: int, seed: int, params: dict,
          command: str) -> dict:
    """Fit the encoder, save it and write its card; return the card."""
    from sktspt import SPTPretrainer
    from sktspt.benchmark.transfer import corpus_series
    from sktspt.pretrained import sha256

    names = corpus_names(data_dir, half)
    series = corpus_series(names, data_dir)
    settings = {**SETTINGS, "schedule__steps": steps, "random_state": seed, **params}
    log = output.with_suffix(".log")
    output.parent.mkdir(parents=True, exist_ok=True)
    started = datetime.datetime.now().astimezone()
    start = time.perf_counter()
    encoder = SPTPretrainer(**settings).fit(series)
    seconds = time.perf_counter() - start
    encoder.save(output)
    lengths = sorted(s.shape[-1] for s in series)
    history = [(e["epoch"], e["train_loss"]) for e in encoder.history_]
    card = {
        "name": output.stem,
        "data": {"folder layout": "UCR 2018 (.tsv)", "splits": "training only",
                 "half": half, "datasets": names, "series": len(series),
                 "lengths": [lengths[0], lengths[len(lengths) // 2], lengths[-1]]},
        "objective": f"masked reconstruction ({encoder.masking} masking, mask ratio "
                     f"{encoder.masking__ratio} ± {encoder.masking__ratio_spread})",
        "settings": {k: v for k, v in encoder.get_params(deep=False).items()
                     if k in settings},
        "architecture": dict(encoder.encoder_kwargs_),
        "steps": {"epochs": encoder.pretrain_epochs_, "auto_steps": steps},
        "parameters": int(sum(p.numel() for p in encoder.encoder_.parameters())),
        "file_bytes": output.stat().st_size,
        "sha256": sha256(output),
        "licence of the data": LICENCE,
        "built": started.isoformat(timespec="seconds"),
        "duration_s": round(seconds, 1),
        "command": command,
        "final_loss": history[-1][1] if history else None,
    }
    output.with_suffix(".json").write_text(json.dumps(card, indent=1) + "\n")
    output.with_suffix(".md").write_text(model_card(card))
    log.write_text("epoch\ttrain_loss\n" + "".join(f"{e}\t{v:.6f}\n" for e, v in history))
    return card


def model_card(card: dict) -> str:
    data = card["data"]
    return "\n".join([
        f"# Model card: `{card['name']}`", "",
        "An `SPTPretrainer` encoder to fine-tune from "
        f"(`sktspt.pretrained.pretrained({card['name']!r})`).", "",
        f"- Data: the training splits of {len(data['datasets'])} UCR 2018 problems "
        f"({data['half']}), {data['series']} series, lengths {data['lengths'][0]} to "
        f"{data['lengths'][2]} (median {data['lengths'][1]}); no test split was read.",
        f"- Objective: {card['objective']}.",
        f"- Steps: {card['steps']['epochs']} epochs (budget {card['steps']['auto_steps']} "
        "optimizer steps).",
        f"- Size: {card['parameters']:,} parameters, {card['file_bytes']:,} bytes; "
        f"architecture {card['architecture']}.",
        f"- Licence of the data: {card['licence of the data']}",
        f"- SHA-256: `{card['sha256']}`",
        f"- Built {card['built']} in {card['duration_s']:.0f} s by `{card['command']}`.", "",
        "Datasets: " + ", ".join(data["datasets"]) + ".", "",
    ])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", required=True, help="the UCR 2018 archive folder (.tsv)")
    p.add_argument("--half", choices=("all", "A", "B"), default="all")
    p.add_argument("--output", required=True, type=Path)
    p.add_argument("--steps", type=int, default=20000, help="optimizer steps (auto_steps)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=None, help="torch threads (n_threads)")
    p.add_argument("--params", nargs="*", default=[], metavar="KEY=VALUE",
                   help="other SPTPretrainer parameters, e.g. d_model=64 (JSON values)")
    args = p.parse_args(argv)
    params = {}
    for pair in args.params:
        key, _, value = pair.partition("=")
        try:
            params[key] = json.loads(value)
        except json.JSONDecodeError:
            params[key] = value
    if args.threads is not None:
        params["device__threads"] = args.threads
    command = "python benchmarks/pretrain_archive.py " + shlex.join(
        sys.argv[1:] if argv is None else list(argv))
    card = build(args.data_dir, args.half, args.output, args.steps, args.seed, params, command)
    print(f"Wrote {args.output} ({card['file_bytes']:,} bytes, sha256 {card['sha256'][:12]}…) "
          f"in {card['duration_s']:.0f} s from {card['data']['series']} series")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
