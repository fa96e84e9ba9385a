"""Training-batch augmentation: the transform itself and its use in both phases."""

import numpy as np
import pytest
import torch
from conftest import make_panel
from sklearn.base import clone

from sktspt import SPTClassifier, SPTPretrainer
from sktspt.augment import (
    AUTO_MIXUP_ALPHA,
    Augmentation,
    lag1_autocorrelation,
    mixup,
    resolve_mixup,
    roll_series,
    shift_series,
)
from sktspt.training import AugmentedNetClassifier


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_identity_when_every_effect_is_off():
    X = torch.randn(4, 2, 30, generator=_gen(1))
    out = Augmentation(scale_std=0.0, jitter_std=0.0)(X, _gen(0))
    assert torch.equal(out, X)


def test_seeded_shape_preserving_and_different_per_series():
    X = torch.randn(6, 3, 40, generator=_gen(1))
    aug = Augmentation(roll=True)
    out = aug(X, _gen(0))
    assert out.shape == X.shape
    assert torch.equal(out, aug(X, _gen(0)))
    assert not torch.equal(out, aug(X, _gen(1)))
    assert not torch.allclose(out, X)


def test_padding_and_gaps_stay_missing():
    X = torch.randn(3, 2, 40, generator=_gen(1))
    X[0, :, 25:] = float("nan")  # a shorter series, padded
    X[1, 0, 10] = float("nan")  # one missing value
    out = Augmentation()(X, _gen(0))  # scale and jitter: positions stay put
    assert torch.equal(torch.isnan(out), torch.isnan(X))
    out = Augmentation.roll_only()(X, _gen(0))  # rolls stay within each valid length
    assert torch.isnan(out[0, :, 25:]).all() and not torch.isnan(out[0, :, :25]).any()
    assert not torch.isnan(out[2]).any()


def test_shift_moves_values_without_stretching_and_keeps_padding():
    X = torch.arange(1.0, 11.0).expand(3, 2, 10).clone()
    X[2, :, 8:] = float("nan")  # valid length 8
    out = shift_series(X, torch.tensor([0.2, -0.3, 0.25]))
    nan = float("nan")
    torch.testing.assert_close(out[0, 0], torch.tensor([nan, nan, 1, 2, 3, 4, 5, 6, 7, 8]),
                               equal_nan=True)
    torch.testing.assert_close(out[1, 1], torch.tensor([4, 5, 6, 7, 8, 9, 10, nan, nan, nan]),
                               equal_nan=True)
    # 0.25 of 8 valid steps is 2; the padding tail stays padding
    torch.testing.assert_close(out[2, 0], torch.tensor([nan, nan, 1, 2, 3, 4, 5, 6, nan, nan]),
                               equal_nan=True)
    # step-to-step differences (the series' rate) survive where both ends are observed
    diffs = torch.diff(Augmentation(shift=0.1, scale_std=0.0,
                                    jitter_std=0.0)(torch.arange(50.0).expand(40, 1, 50).clone(),
                                                    _gen(0)))
    assert torch.allclose(diffs[~torch.isnan(diffs)], torch.tensor(1.0))
    assert not torch.isnan(diffs).all(dim=-1).any()


def test_roll_turns_each_series_within_its_valid_length():
    X = torch.arange(1.0, 11.0).expand(3, 2, 10).clone()
    X[2, :, 8:] = float("nan")  # valid length 8
    out = roll_series(X, torch.tensor([0.2, 0.0, 0.25]))
    torch.testing.assert_close(out[0, 1], torch.tensor([9., 10, 1, 2, 3, 4, 5, 6, 7, 8]))
    torch.testing.assert_close(out[1], X[1])
    nan = float("nan")  # 0.25 of 8 valid steps is 2; the padding tail stays padding
    torch.testing.assert_close(out[2, 0], torch.tensor([7., 8, 1, 2, 3, 4, 5, 6, nan, nan]),
                               equal_nan=True)
    # nothing is lost or invented: every series keeps its values, each channel the same turn
    rolled = Augmentation.roll_only()(torch.randn(50, 2, 17, generator=_gen(3)), _gen(0))
    source = torch.randn(50, 2, 17, generator=_gen(3))
    torch.testing.assert_close(rolled.sort(dim=-1).values, source.sort(dim=-1).values)
    turns = [next(k for k in range(17) if torch.equal(torch.roll(source[i], k, -1), rolled[i]))
             for i in range(50)]
    assert len(set(turns)) > 8  # uniform over the length, not a fixed turn


def test_rolled_networks_predict_from_evenly_spaced_turns():
    """``augment="roll"`` averages 8 turns, so a turn of 1/8 of the series changes nothing."""
    X, y = make_panel(n=30, c=2, t=32, seed=0)
    rolled = SPTClassifier(**_tiny(augment="roll")).fit(X, y)
    plain = SPTClassifier(**_tiny(augment=False)).fit(X, y)
    turn = np.roll(X, 4, axis=-1)
    np.testing.assert_allclose(rolled.predict_proba(turn), rolled.predict_proba(X), atol=1e-9)
    assert not np.allclose(plain.predict_proba(turn), plain.predict_proba(X), atol=1e-4)
    assert rolled._prediction_turns() == 8 and plain._prediction_turns() == 1
    once = clone(rolled).fit(X, y)
    once._prediction_turns = lambda: 1  # each series as given: the average is of these
    turns = [once.predict_proba(np.roll(X, 4 * k, axis=-1)) for k in range(8)]
    np.testing.assert_allclose(rolled.predict_proba(X), np.mean(turns, axis=0), atol=1e-9)
    assert not np.allclose(turns[0], rolled.predict_proba(X), atol=1e-4)


def test_turns_stacked_in_blocks_give_the_same_probabilities(monkeypatch):
    """Prediction stacks every turn of a block of series in one call: whatever the block,
    each series' probabilities are bit for bit those of the turns predicted one by one."""
    from sktspt import classifier

    X, y = make_panel(n=30, c=2, t=32, seed=1)
    rolled = SPTClassifier(**_tiny(augment="roll")).fit(X, y)
    whole = rolled.predict_proba(X)
    monkeypatch.setattr(classifier, "TURN_BLOCK_VALUES", 7 * 8 * X[0].size)  # blocks of 7
    np.testing.assert_array_equal(rolled.predict_proba(X), whole)
    np.testing.assert_array_equal(rolled.predict_proba(X[11:12]), whole[11:12])
    Xp, module = rolled._input(X), rolled.net_.module_
    by_turn = [classifier._probabilities(rolled._infer(module, module,
                                                       classifier._turned(Xp, k / 8)))
               for k in range(8)]
    np.testing.assert_array_equal(rolled._turned_proba(Xp), np.mean(by_turn, axis=0))


def test_turns_stay_inside_each_series_of_an_unequal_length_panel():
    X, y = make_panel(n=30, c=1, t=40, seed=4)
    X[::2, :, 30:] = np.nan  # every other series 30 steps long
    rolled = SPTClassifier(**_tiny(augment="roll")).fit(X, y)
    proba = rolled.predict_proba(X)  # the padding is kept: the odd series are 40 long
    assert np.isfinite(proba).all() and np.allclose(proba.sum(axis=1), 1.0)
    # each short series turns within its 30 steps, as it does alone without padding
    np.testing.assert_allclose(proba[::2], rolled.predict_proba(X[::2, :, :30]), atol=1e-6)
    np.testing.assert_allclose(rolled.predict_proba(np.roll(X[::2, :, :30], 15, axis=-1)),
                               rolled.predict_proba(X[::2, :, :30]), atol=1e-6)


@pytest.mark.parametrize("kwargs", [
    {"scale_std": -0.1}, {"jitter_std": -1.0}, {"shift": 1.0}, {"shift": -0.1},
])
def test_bad_settings_are_rejected(kwargs):
    with pytest.raises(ValueError):
        Augmentation(**kwargs)


def _tiny(**kw):
    base = dict(depth=1, d_model=16, architecture__n_heads=2, architecture__dim_feedforward=16,
                pretrain_epochs=3,
                max_epochs=3, random_state=0)
    return {**base, **kw}


def test_classifier_augments_training_only_and_stays_reproducible():
    X, y = make_panel(n=40, c=2, t=32, seed=0)
    off = SPTClassifier(**_tiny(augment=False)).fit(X, y)
    on = SPTClassifier(**_tiny(augment="shift")).fit(X, y)
    again = clone(on).fit(X, y)
    assert isinstance(on.net_, AugmentedNetClassifier)
    assert on.net_.augmentation is not None and off.net_.augmentation is None
    np.testing.assert_array_equal(on.predict_proba(X), again.predict_proba(X))
    assert not np.allclose(on.predict_proba(X), off.predict_proba(X))
    # prediction is deterministic: augmentation never touches it
    np.testing.assert_array_equal(on.predict_proba(X), on.predict_proba(X))


def test_validation_loss_is_unaffected_by_augmentation():
    """With no weight update (lr tiny), the validation loss of epoch 1 is the same."""
    X, y = make_panel(n=40, c=1, t=32, seed=1)
    kw = _tiny(pretrain_epochs=0, max_epochs=1, lr=1e-12, validation_fraction=0.2)
    a = SPTClassifier(augment="shift", **kw).fit(X, y)
    b = SPTClassifier(augment=False, **kw).fit(X, y)
    assert a.history_[-1, "valid_loss"] == pytest.approx(b.history_[-1, "valid_loss"], rel=1e-5)
    assert a.history_[-1, "train_loss"] != pytest.approx(b.history_[-1, "train_loss"], rel=1e-6)


def test_pretraining_sees_augmented_batches():
    X, _ = make_panel(n=40, c=1, t=32, seed=2)
    kw = dict(depth=1, d_model=16, architecture__n_heads=2, architecture__dim_feedforward=16,
              pretrain_epochs=1, lr=1e-12,
              validation_fraction=0.2, random_state=0)
    on = SPTPretrainer(augment="shift", **kw).fit(X)
    off = SPTPretrainer(augment=False, **kw).fit(X)
    assert on.net_.augmentation is not None and off.net_.augmentation is None
    assert on.history_[0, "train_loss"] != pytest.approx(off.history_[0, "train_loss"], rel=1e-6)
    assert on.history_[0, "valid_loss"] == pytest.approx(off.history_[0, "valid_loss"], rel=1e-6)


def test_augment_chooses_the_recipe():
    X, y = make_panel(n=20, c=1, t=32, seed=0)
    shift = SPTClassifier(**_tiny(augment="shift")).fit(X, y)
    assert shift.net_.augmentation == Augmentation.shift_only()
    assert shift.net_.augmentation.shift > 0
    roll = SPTClassifier(**_tiny(augment="roll")).fit(X, y)
    assert roll.net_.augmentation == Augmentation.roll_only()


@pytest.mark.parametrize("value, kind", [("yes", ValueError), (1, TypeError),
                                         (None, TypeError), (True, ValueError),
                                         ("stretch", ValueError)])
def test_augment_must_be_a_bool_or_a_recipe(value, kind):
    X, y = make_panel(n=20, c=1, t=32, seed=0)
    with pytest.raises(kind, match="augment"):
        SPTClassifier(augment=value).fit(X, y)


# --- mixup (fine-tuning only; not label-preserving, so the targets mix too) ----------------
def test_mixup_mixes_pairs_with_the_larger_weight_on_each_series_itself():
    X = torch.randn(8, 2, 20, generator=_gen(1))
    mixed, partner, lam = mixup(X, 0.4, _gen(0))
    assert sorted(partner.tolist()) == list(range(8))
    assert ((lam >= 0.5) & (lam <= 1.0)).all() and lam.std() > 0
    expected = lam[:, None, None] * X + (1 - lam[:, None, None]) * X[partner]
    torch.testing.assert_close(mixed, expected)
    again, partner2, _ = mixup(X, 0.4, _gen(0))
    assert torch.equal(mixed, again) and torch.equal(partner, partner2)
    assert not torch.equal(mixed, mixup(X, 0.4, _gen(1))[0])


def test_mixup_keeps_own_values_where_the_partner_is_missing():
    X = torch.randn(6, 1, 30, generator=_gen(2))
    X[::2, :, 20:] = float("nan")  # every other series is shorter
    mixed, partner, _ = mixup(X, 1.0, _gen(3))
    assert torch.equal(torch.isnan(mixed), torch.isnan(X))  # own length and padding kept
    partner_missing = torch.isnan(X[partner]) & ~torch.isnan(X)
    assert partner_missing.any()
    assert torch.equal(mixed[partner_missing], X[partner_missing])


def test_mixed_targets_are_distributions_weighted_like_the_series():
    y = torch.tensor([0, 1, 2, 1])
    partner, lam = torch.tensor([1, 0, 3, 2]), torch.tensor([0.75, 0.5, 1.0, 0.9])
    weight = torch.tensor([1.0, 3.0, 1.0, 1.0])
    soft, mixed_weight = AugmentedNetClassifier._mixed_targets(y, weight, partner, lam, 3)
    torch.testing.assert_close(soft.sum(1), torch.ones(4))
    torch.testing.assert_close(soft[0], torch.tensor([0.75, 0.25, 0.0]))
    torch.testing.assert_close(soft[2], torch.tensor([0.0, 0.0, 1.0]))
    torch.testing.assert_close(mixed_weight, torch.tensor([1.5, 2.0, 1.0, 1.0]))


def test_classifier_mixes_training_batches_only_and_stays_reproducible():
    X, y = make_panel(n=40, c=1, t=32, seed=1)
    kw = _tiny(pretrain_epochs=0, max_epochs=1, lr=1e-12, validation_fraction=0.2)
    a = SPTClassifier(mixup=0.4, **kw).fit(X, y)
    b = SPTClassifier(mixup=0.0, **kw).fit(X, y)
    assert a.net_.mixup_alpha == 0.4 and b.net_.mixup_alpha == 0.0
    assert a.history_[-1, "valid_loss"] == pytest.approx(b.history_[-1, "valid_loss"], rel=1e-5)
    assert a.history_[-1, "train_loss"] != pytest.approx(b.history_[-1, "train_loss"], rel=1e-6)
    fitted = SPTClassifier(**_tiny(mixup=0.4)).fit(X, y)
    np.testing.assert_array_equal(fitted.predict_proba(X), clone(fitted).fit(X, y).predict_proba(X))


def test_mixup_trains_weighted_fits():
    X, y = make_panel(n=30, c=2, t=32, seed=4)
    weights = np.linspace(0.5, 2.0, len(y))
    clf = SPTClassifier(**_tiny(mixup=0.2)).fit(X, y, sample_weight=weights)
    proba = clf.predict_proba(X)
    assert proba.shape == (30, len(np.unique(y))) and np.allclose(proba.sum(1), 1.0)
    assert np.isfinite(clf.history_[:, "train_loss"]).all()


@pytest.mark.parametrize("value", [-0.1, float("inf"), True, "on"])
def test_mixup_must_be_auto_or_a_non_negative_number(value):
    X, y = make_panel(n=20, c=1, t=32, seed=0)
    with pytest.raises(ValueError, match='mixup must be "auto" or a non-negative number'):
        SPTClassifier(**_tiny(mixup=value)).fit(X, y)


# --- mixup_kind="cutmix": a window from the partner -------------------------------------
def test_cutmix_pastes_one_window_of_the_partner_and_weighs_by_the_share_kept():
    X = torch.randn(8, 2, 40, generator=_gen(5))
    mixed, partner, kept = mixup(X, 0.4, _gen(0), kind="cutmix")
    _, partner_blend, lam = mixup(X, 0.4, _gen(0))
    assert torch.equal(partner, partner_blend)  # the same draws as a blend, then the window
    pasted = mixed != X
    for i in range(8):
        steps = pasted[i].any(dim=0).nonzero().flatten()
        if len(steps):  # one contiguous run, all channels, the partner's values there
            assert steps[-1] - steps[0] + 1 == len(steps) and pasted[i][:, steps].all()
            torch.testing.assert_close(mixed[i][:, steps], X[partner[i]][:, steps])
        share = 1 - pasted[i].sum().item() / X[i].numel()
        if partner[i] != i:
            assert kept[i].item() == pytest.approx(share)
            assert abs(kept[i].item() - lam[i].item()) <= 1 / 40 + 1e-6  # rounded to steps
    assert ((kept >= 0.5 - 1 / 40) & (kept <= 1.0)).all() and pasted.any()


def test_cutmix_stays_inside_each_series_and_skips_missing_partner_values():
    X = torch.randn(6, 1, 30, generator=_gen(2))
    X[::2, :, 12:] = float("nan")  # every other series is shorter
    for seed in range(5):
        mixed, partner, kept = mixup(X, 1.0, _gen(seed), kind="cutmix")
        assert torch.equal(torch.isnan(mixed), torch.isnan(X))  # own length and padding kept
        partner_missing = torch.isnan(X[partner]) & ~torch.isnan(X)
        assert torch.equal(mixed[partner_missing], X[partner_missing])
        observed = (~torch.isnan(X)).sum(dim=(1, 2))
        changed = ((mixed != X) & ~torch.isnan(X)).sum(dim=(1, 2))
        same = partner == torch.arange(6)
        torch.testing.assert_close(kept[~same], 1 - changed[~same] / observed[~same])


def test_classifier_trains_with_the_chosen_mixup_kind():
    X, y = make_panel(n=40, c=1, t=32, seed=1)
    kw = _tiny(pretrain_epochs=0, max_epochs=2, mixup=0.4)
    blend = SPTClassifier(mixup__kind="blend", **kw).fit(X, y)
    cut = SPTClassifier(mixup__kind="cutmix", **kw).fit(X, y)
    assert cut.net_.mixup_kind == "cutmix" and blend.net_.mixup_kind == "blend"
    assert cut.history_[-1, "train_loss"] != pytest.approx(blend.history_[-1, "train_loss"])
    np.testing.assert_array_equal(cut.predict_proba(X), clone(cut).fit(X, y).predict_proba(X))
    off = dict(kw, mixup=0.0)  # without mixup the kind changes nothing
    np.testing.assert_array_equal(
        SPTClassifier(mixup__kind="cutmix", **off).fit(X, y).predict_proba(X),
        SPTClassifier(mixup__kind="blend", **off).fit(X, y).predict_proba(X),
    )


@pytest.mark.parametrize("value", ["window", None, 1])
def test_mixup_kind_must_be_auto_blend_or_cutmix(value):
    X, y = make_panel(n=20, c=1, t=32, seed=0)
    with pytest.raises(ValueError, match="mixup__kind must be one of"):
        SPTClassifier(**_tiny(mixup__kind=value)).fit(X, y)
    with pytest.raises(ValueError, match="mixup_kind must be one of"):
        mixup(torch.zeros(2, 1, 4), 0.4, _gen(0), kind=value)


# --- mixup="auto": mix smooth series only ------------------------------------------------
def _smooth_and_rough(n=24, t=60, seed=0):
    """Slow sines (lag-1 autocorrelation near 1) and white noise (near 0), two classes each."""
    g = np.random.default_rng(seed)
    tt = np.linspace(0, 1, t)
    freq = 1 + (np.arange(n) % 2)[:, None, None]
    smooth = np.sin(2 * np.pi * freq * tt + g.uniform(0, 6, (n, 1, 1)))
    rough = g.normal(size=(n, 1, t)) + 0.5 * (np.arange(n) % 2)[:, None, None]
    return smooth.astype(np.float32), rough.astype(np.float32), np.arange(n) % 2


def test_lag1_autocorrelation_tells_smooth_from_rough_and_alternating():
    smooth, rough, _ = _smooth_and_rough()
    assert lag1_autocorrelation(smooth) > 0.95
    assert abs(lag1_autocorrelation(rough)) < 0.2
    zigzag = np.tile([1.0, -1.0], 20)[None, None, :] + np.linspace(0, 0.1, 40)
    assert lag1_autocorrelation(zigzag) < -0.9


def test_lag1_autocorrelation_ignores_padding_missing_steps_and_constant_series():
    smooth, _, _ = _smooth_and_rough(n=6)
    padded = np.concatenate([smooth, np.full((6, 1, 20), np.nan)], axis=2)
    assert lag1_autocorrelation(padded) == pytest.approx(lag1_autocorrelation(smooth))
    constant = np.concatenate([smooth, np.ones((6, 1, 60))])  # no variance: left out
    assert lag1_autocorrelation(constant) == pytest.approx(lag1_autocorrelation(smooth))
    holes = smooth.copy()
    holes[:, :, ::7] = np.nan  # pairs across a hole are not neighbours: skipped
    assert lag1_autocorrelation(holes) > 0.95
    assert lag1_autocorrelation(np.ones((3, 2, 10))) == 0.0
    assert lag1_autocorrelation(np.full((3, 1, 10), np.nan)) == 0.0


def test_lag1_autocorrelation_in_blocks_equals_at_once(monkeypatch):
    import sktspt.augment

    smooth, rough, _ = _smooth_and_rough(n=9)
    X = np.concatenate([smooth, rough, smooth[:, :, ::-1]], axis=1)
    whole = lag1_autocorrelation(X)
    monkeypatch.setattr(sktspt.augment, "_BLOCK_VALUES", 2 * 3 * 60)  # two series a block
    assert lag1_autocorrelation(X) == whole


def test_lag1_autocorrelation_does_not_shrink_on_short_series():
    """24 steps of a sine score like 240 (the textbook estimator gives .90 against .98)."""
    g = np.random.default_rng(0)
    steps = np.arange(240)
    X = np.sin(2 * np.pi * steps / 40 + g.uniform(0, 6, (50, 1, 1)))
    X = X + 0.05 * g.normal(size=X.shape)
    assert lag1_autocorrelation(X[..., :24]) == pytest.approx(lag1_autocorrelation(X), abs=0.01)
    assert lag1_autocorrelation(X[..., :24]) > 0.97


def test_resolve_mixup_blends_smooth_series_and_cuts_rough_ones():
    smooth, rough, _ = _smooth_and_rough()
    assert resolve_mixup("auto", smooth, "auto") == (AUTO_MIXUP_ALPHA, "blend")
    assert resolve_mixup("auto", rough, "auto") == (AUTO_MIXUP_ALPHA, "cutmix")
    assert resolve_mixup("auto", rough) == resolve_mixup("auto", rough, "auto")  # as fit's
    # A blend of two rough series is no series of the task: "auto" does not blend them.
    assert resolve_mixup("auto", smooth, "blend") == (AUTO_MIXUP_ALPHA, "blend")
    assert resolve_mixup("auto", rough, "blend") == (0.0, "blend")
    assert resolve_mixup("auto", smooth, "cutmix") == (AUTO_MIXUP_ALPHA, "cutmix")
    assert resolve_mixup(0.2, rough, "auto") == (0.2, "cutmix")
    assert resolve_mixup(0.2, rough, "blend") == (0.2, "blend")
    alpha, kind = resolve_mixup(1, smooth, "auto")
    assert isinstance(alpha, float) and (alpha, kind) == (1.0, "blend")
    with pytest.raises(ValueError, match="mixup_kind must be one of"):
        resolve_mixup("auto", smooth, "window")


def test_resolve_mixup_measures_the_series_only_where_an_auto_needs_it(monkeypatch):
    import sktspt.augment

    def fail(X):
        raise AssertionError("lag1_autocorrelation computed")

    monkeypatch.setattr(sktspt.augment, "lag1_autocorrelation", fail)
    smooth, _, _ = _smooth_and_rough()
    assert resolve_mixup(0.3, smooth, "blend") == (0.3, "blend")
    assert resolve_mixup("auto", smooth, "cutmix") == (AUTO_MIXUP_ALPHA, "cutmix")


def test_classifier_resolves_auto_mixup_per_training_set_and_keeps_numbers():
    smooth, rough, y = _smooth_and_rough()
    kw = _tiny(pretrain_epochs=0, max_epochs=1)
    on = SPTClassifier(**kw).fit(smooth, y)
    assert on.mixup == "auto" and on.mixup_ == AUTO_MIXUP_ALPHA
    assert on.mixup__kind == "auto" and on.mixup_kind_ == "blend"
    assert (on.net_.mixup_alpha, on.net_.mixup_kind) == (AUTO_MIXUP_ALPHA, "blend")
    cut = SPTClassifier(**kw).fit(rough, y)
    assert (cut.mixup_, cut.mixup_kind_) == (AUTO_MIXUP_ALPHA, "cutmix")
    assert (cut.net_.mixup_alpha, cut.net_.mixup_kind) == (AUTO_MIXUP_ALPHA, "cutmix")
    off = SPTClassifier(mixup__kind="blend", **kw).fit(rough, y)
    assert off.mixup_ == 0.0 and off.net_.mixup_alpha == 0.0
    fixed = SPTClassifier(mixup=0.7, mixup__kind="blend", **kw).fit(rough, y)
    assert fixed.mixup_ == 0.7 and fixed.net_.mixup_alpha == 0.7
