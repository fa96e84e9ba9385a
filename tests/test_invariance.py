"""``augment="auto"``: the 1-NN screen that chooses between rolls and none."""

import numpy as np
import pytest
from skorch.callbacks import Callback

from sktspt import SPTClassifier, SPTPretrainer, load
from sktspt.augment import Augmentation
from sktspt.invariance import alignment_gain, loo_accuracy, shift_distances, znorm


def _tiny(**kw):
    base = dict(depth=1, d_model=16, architecture__n_heads=2, architecture__dim_feedforward=16,
                pretrain_epochs=2,
                max_epochs=4, random_state=0, augment="auto")
    return {**base, **kw}


def _shapes(turned: bool, n_per_class=12, t=64, seed=0):
    """Two classes: a peak, or a peak beside a trough; at random turns, or at fixed places."""
    rng = np.random.default_rng(seed)
    steps = np.arange(t)
    bump = np.exp(-0.5 * ((steps - t // 2) / 2.0) ** 2)
    shapes = [bump, bump - np.roll(bump, 6)]
    y = np.repeat([0, 1], n_per_class)
    turns = rng.integers(t, size=len(y)) if turned else np.where(y == 0, 0, t // 3)
    X = np.stack([np.roll(shapes[k], s) for k, s in zip(y, turns)])[:, None]
    return (X + 0.05 * rng.normal(size=X.shape)).astype(np.float32), y


def test_a_turned_copy_is_at_distance_zero_only_under_the_shifted_distance():
    rng = np.random.default_rng(0)
    X = znorm(rng.normal(size=(6, 2, 40)))
    X[3] = np.roll(X[0], 11, axis=-1)  # both channels turned alike
    plain, shifted = shift_distances(X)
    assert shifted[0, 3] < 1e-8 and plain[0, 3] > 10.0
    assert (shifted <= plain + 1e-8).all()
    np.testing.assert_allclose(np.diag(shifted), 0.0, atol=1e-8)
    np.testing.assert_allclose(shifted, shifted.T, atol=1e-8)


def test_leave_one_out_tells_turned_classes_apart_only_with_the_shift():
    X, y = _shapes(turned=True, n_per_class=10, seed=1)
    plain, shifted = shift_distances(znorm(X.astype(np.float64)))
    assert loo_accuracy(shifted, y) == 1.0
    assert loo_accuracy(plain, y) < 1.0


def test_the_screen_is_positive_for_turned_classes_only():
    X, y = _shapes(turned=True)
    assert alignment_gain(X, y) > 0.2
    X, y = _shapes(turned=False)
    assert alignment_gain(X, y) <= 0.0


def test_the_screen_reads_each_series_within_its_valid_length():
    """Padding (NaN after a series' end) is not part of the series the screen turns."""
    X, y = _shapes(turned=True, t=48)
    padded = np.full((len(X), 1, 64), np.nan, dtype=np.float32)
    padded[:, :, :48] = X
    assert alignment_gain(padded, y) == pytest.approx(alignment_gain(X, y))
    padded[0, 0, 10] = np.nan  # a missing value inside a series is interpolated
    assert np.isfinite(alignment_gain(padded, y))


def test_a_negative_screen_fits_exactly_as_without_rolls():
    X, y = _shapes(turned=False)
    auto = SPTClassifier(**_tiny()).fit(X, y)
    plain = SPTClassifier(**_tiny(augment=False)).fit(X, y)
    assert auto.augment_ is False and set(auto.augment_evidence_) == {"alignment_gain"}
    np.testing.assert_array_equal(auto.predict_proba(X), plain.predict_proba(X))
    assert auto._prediction_turns() == 1


@pytest.mark.parametrize("gain, rolls", [(0.01, True), (0.0, False), (-0.2, False)])
def test_the_screen_alone_decides(monkeypatch, gain, rolls):
    """Rolls exactly where the screen's gain is above 0, whatever the data."""
    import sktspt.classifier as classifier

    X, y = _shapes(turned=False)
    monkeypatch.setattr(classifier, "alignment_gain", lambda *a: gain)
    auto = SPTClassifier(**_tiny(max_epochs=1)).fit(X, y)
    assert auto.augment_ == ("roll" if rolls else False)
    assert auto.augment_evidence_ == {"alignment_gain": gain}
    assert auto._prediction_turns() == (8 if rolls else 1)


def test_chosen_rolls_train_fine_tuning_only_and_predict_from_turns(tmp_path):
    X, y = _shapes(turned=True)
    auto = SPTClassifier(**_tiny()).fit(X, y)
    assert auto.augment_ == "roll" and auto.augment_evidence_["alignment_gain"] > 0
    assert auto.net_.augmentation == Augmentation.roll_only()
    assert auto._prediction_turns() == 8
    # pretraining did not roll: its encoder is the one augment=False pretrains
    plain = SPTClassifier(**_tiny(augment=False, max_epochs=0)).fit(X, y)
    auto0 = SPTClassifier(**_tiny(max_epochs=0)).fit(X, y)
    np.testing.assert_array_equal(auto0.transform(X), plain.transform(X))
    auto.save(tmp_path / "m.sktspt")
    loaded = load(tmp_path / "m.sktspt")
    assert loaded.augment_ == "roll" and loaded._prediction_turns() == 8
    np.testing.assert_allclose(loaded.predict_proba(X), auto.predict_proba(X), atol=1e-6)


def test_choosing_fine_tunes_once():
    """No trial fits: the users' callbacks see one fine-tuning, the fit's own."""
    class Count(Callback):
        def initialize(self):
            self.fits = 0
            return self

        def on_train_begin(self, net, **kw):
            self.fits += 1

    X, y = _shapes(turned=True)
    auto = SPTClassifier(**_tiny(callbacks=[("count", Count())])).fit(X, y)
    assert auto.augment_ == "roll"
    assert dict(auto.net_.callbacks_)["count"].fits == 1


def _pairs(n_classes=12, t=64, seed=0):
    """``n_classes`` classes of 2 series: a peak and a trough ``3 + 2k`` steps apart,
    each series at a random turn (PigCVP's shape: many classes, two series each)."""
    rng = np.random.default_rng(seed)
    bump = np.exp(-0.5 * ((np.arange(t) - t // 2) / 2.0) ** 2)
    y = np.repeat(np.arange(n_classes), 2)
    X = np.stack([np.roll(bump - np.roll(bump, 3 + 2 * k), s)
                  for k, s in zip(y, rng.integers(t, size=len(y)))])[:, None]
    return (X + 0.05 * rng.normal(size=X.shape)).astype(np.float32), y


def test_many_classes_of_two_series_roll_where_the_screen_passes():
    X, y = _pairs()
    auto = SPTClassifier(**_tiny()).fit(X, y)
    assert auto.augment_evidence_["alignment_gain"] > 0  # turned copies: the screen passes
    assert auto.augment_ == "roll"


def test_classes_of_one_series_keep_the_series_unrolled():
    X, y = _pairs()
    X, y = X[::2], y[::2]  # one series a class: no neighbour of its class to align with
    auto = SPTClassifier(**_tiny()).fit(X, y)
    assert auto.augment_ is False and auto.augment_evidence_["alignment_gain"] <= 0


def test_the_pretrainer_does_not_augment_under_auto():
    X, _ = _shapes(turned=True)
    kw = dict(depth=1, d_model=16, architecture__n_heads=2, architecture__dim_feedforward=16,
              pretrain_epochs=2,
              random_state=0)
    pre = SPTPretrainer(augment="auto", **kw).fit(X)
    assert pre._augmentation() is None
    np.testing.assert_array_equal(pre.transform(X), SPTPretrainer(**kw).fit(X).transform(X))


def test_other_augment_values_leave_no_evidence():
    X, y = _shapes(turned=False)
    clf = SPTClassifier(**_tiny(augment="roll")).fit(X, y)
    assert clf.augment_ == "roll" and clf.augment_evidence_ is None
