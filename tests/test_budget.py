"""Epoch counts resolved from an optimizer-step budget (``"auto"``)."""

import pytest
from conftest import make_panel

from sktspt import SPTClassifier, SPTPretrainer
from sktspt.training import resolve_warmup

TINY = dict(depth=1, d_model=16, architecture__n_heads=2, architecture__dim_feedforward=16,
            random_state=0)


def test_auto_epochs_give_the_step_budget():
    X, y = make_panel(n=40)  # 40 series in batches of 16: 3 steps an epoch
    clf = SPTClassifier(pretrain_epochs="auto", max_epochs="auto", schedule__steps=30,
                        schedule__pretrain_share=0.5, validation_fraction=0.0, **TINY).fit(X, y)
    # both phases count an epoch of 3 batches as 10 (SPTClassifier._auto_min_batches)
    assert (clf.pretrain_epochs_, clf.max_epochs_) == (3, 3)
    assert len(clf.pretrain_history_) == 3 and len(clf.history_) == 3
    # the default share: a quarter of the 60 steps pretrain (15), the rest (45) fine-tune,
    # at 10 steps an epoch at least
    spt = dict(pretrain_epochs="auto", schedule__steps=30, validation_fraction=0.0, **TINY)
    clf = SPTClassifier(**spt).fit(X, y)
    assert (clf.pretrain_epochs_, clf.max_epochs_) == (2, 5)
    # ... at 10 batches an epoch (batch 4) the budget's steps hold exactly
    clf = SPTClassifier(**{**spt, "batch_size": 4}).fit(X, y)
    assert (clf.pretrain_epochs_, clf.max_epochs_) == (2, 5)
    assert len(clf.history_[-1, "batches"]) == 10


def test_auto_epochs_count_only_the_training_part():
    X, y = make_panel(n=40)  # 20 % held out: 32 series, 2 steps an epoch (4 at batch 8)
    clf = SPTClassifier(pretrain_epochs=0, max_epochs="auto", schedule__steps=30,
                        validation_fraction=0.2, **TINY).fit(X, y)
    assert clf.max_epochs_ == 3 and clf.pretrain_epochs_ == 0  # 30 steps / (at least) 10
    clf = SPTClassifier(pretrain_epochs=0, max_epochs="auto", schedule__steps=120, batch_size=8,
                        validation_fraction=0.2, **TINY).fit(X, y)
    assert clf.max_epochs_ == 12  # 4 of 40 series would be 10 an epoch: 120 / 10
    pre = SPTPretrainer(pretrain_epochs="auto", schedule__steps=9, validation_fraction=0.0,
                        **TINY).fit(X)
    assert pre.pretrain_epochs_ == pre.max_epochs_ == 3


def test_pretrain_share_splits_the_two_auto_phases():
    X, y = make_panel(n=40)  # 3 steps an epoch; 2 * 30 steps in all, 12 of them pretraining
    clf = SPTClassifier(pretrain_epochs="auto", schedule__steps=30, schedule__pretrain_share=0.2,
                        validation_fraction=0.0, **TINY).fit(X, y)
    assert (clf.pretrain_epochs_, clf.max_epochs_) == (2, 5)  # 12 and 48 steps, 10 an epoch
    # a fixed epoch count in either phase leaves the other at auto_steps, share unused
    clf = SPTClassifier(pretrain_epochs=2, schedule__steps=30, schedule__pretrain_share=0.2,
                        validation_fraction=0.0, **TINY).fit(X, y)
    assert (clf.pretrain_epochs_, clf.max_epochs_) == (2, 3)


def test_small_sets_fine_tune_fewer_steps_large_ones_the_budget():
    """A classifier's "auto" fine-tuning counts an epoch of fewer than 10 batches as 10;
    at 10 batches or more an epoch (160 series at batch 16) the step budget holds, and a
    regressor and pretraining keep the step budget whatever the size."""
    from sktspt.training import Trainer

    trainer = Trainer(auto_steps=1500, batch_size=16, validation_fraction=0.0)
    short = Trainer(auto_steps=1500, batch_size=16, validation_fraction=0.0, auto_min_batches=10)
    assert short.epochs("auto", 36, 0) == 150  # 3 batches: 150, not 500
    assert trainer.epochs("auto", 36, 0) == 500
    assert short.epochs("auto", 200, 0) == 116  # 13 batches: unchanged
    assert trainer.epochs("auto", 200, 0) == 116
    assert short.epochs(7, 36, 0) == 7  # fixed counts are kept
    # the default split (500 + 1500 steps) and its from-scratch control (2000) stay equal
    spt = sum(short.epochs("auto", 36, 0, steps=k) for k in (500, 1500))
    assert spt == short.epochs("auto", 36, 0, steps=2000) == 200
    from sktspt import SPTRegressor

    X, _ = make_panel(n=40)
    reg = SPTRegressor(schedule__steps=30, validation_fraction=0.0, **TINY).fit(X, X[:, 0,
                                                                                :3].sum(1))
    assert (reg.pretrain_epochs_, reg.max_epochs_) == (5, 15)


def test_fixed_epochs_are_kept():
    X, y = make_panel(n=40)
    clf = SPTClassifier(pretrain_epochs=2, max_epochs=3, schedule__steps=1000, **TINY).fit(X, y)
    assert (clf.pretrain_epochs_, clf.max_epochs_) == (2, 3)


def _batch_lrs(history) -> list[float]:
    return [batch["event_lr"] for epoch in history for batch in epoch["batches"]]


@pytest.mark.parametrize("warmup, rising", [("auto", 3), (0.0, 1), (0.5, 15)])
def test_warmup_is_the_rising_part_of_each_phase(warmup, rising):
    X, y = make_panel(n=40)  # 3 steps an epoch: 30 per phase, "auto" warms up for 3
    clf = SPTClassifier(pretrain_epochs=10, max_epochs=10, schedule__warmup=warmup, lr=1e-3,
                        **TINY).fit(X, y)
    for lrs in (_batch_lrs(clf.pretrain_history_), _batch_lrs(clf.history_)):
        assert len(lrs) == 30
        peak = lrs.index(max(lrs))
        assert peak == rising - 1 and max(lrs) == pytest.approx(1e-3)
        assert all(a < b for a, b in zip(lrs[:peak], lrs[1:peak + 1]))
        assert all(a >= b for a, b in zip(lrs[peak:], lrs[peak + 1:]))


@pytest.mark.parametrize("params, match", [
    ({"schedule__warmup": 1.0}, 'schedule__warmup must be "auto" or a number in \\[0, 1\\)'),
    ({"schedule__warmup": "long"}, 'schedule__warmup must be "auto" or a number in \\[0, 1\\)'),
    ({"schedule__steps": 0}, "schedule__steps must be 'auto' or a positive integer"),
    ({"schedule__steps": 1.5}, "schedule__steps must be 'auto' or a positive integer"),
    ({"max_epochs": "many"}, "max_epochs must be 'auto' or a non-negative integer"),
    ({"pretrain_epochs": -1}, "pretrain_epochs must be 'auto' or a non-negative integer"),
    ({"schedule__pretrain_share": 1.0}, "schedule__pretrain_share must be a number in \\(0, 1\\)"),
    ({"schedule__pretrain_share": 0}, "schedule__pretrain_share must be a number in \\(0, 1\\)"),
    ({"schedule__pretrain_share": "half"},
     "schedule__pretrain_share must be a number in \\(0, 1\\)"),
])
def test_bad_budgets_are_refused(params, match):
    X, y = make_panel(n=20)
    with pytest.raises(ValueError, match=match):
        SPTClassifier(**{**TINY, **params}).fit(X, y)


def test_auto_warmup_is_a_tenth_of_the_steps_at_most_100():
    assert resolve_warmup("auto", 30) == 3
    assert resolve_warmup("auto", 2000) == 100  # the scratch control's two phases in one
    assert resolve_warmup(0.3, 2000) == 600 and resolve_warmup(0.0, 1000) == 0


def test_the_auto_budget_grows_with_a_large_training_set_and_only_there():
    """At least 50 epochs, at most 16,000 steps; sets under ~640 series keep 2,000 steps."""
    import numpy as np

    from sktspt import SPTClassifier

    clf = SPTClassifier(random_state=0)
    small = np.arange(500) % 2
    assert clf._planned_steps(len(small), y=small) < 2100
    large = np.arange(2000) % 2
    per_epoch = clf._trainer().batches(len(large), clf._seed(), large)
    assert clf._planned_steps(len(large), y=large) == 50 * per_epoch > 2 * 2000
    huge = np.arange(20000) % 2
    assert 14000 < clf._planned_steps(len(huge), y=huge) <= 16000
    # an explicit budget is the user's: no floor
    assert SPTClassifier(schedule__steps=1000)._planned_steps(len(large), y=large) < 1100
    # self-pretraining takes about the same total steps as the from-scratch default
    spt = SPTClassifier(random_state=0, pretrain_epochs="auto")
    assert abs(spt._planned_steps(len(large), y=large) - 50 * per_epoch) < 0.05 * 50 * per_epoch
