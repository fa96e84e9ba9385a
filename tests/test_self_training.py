"""SPTClassifier(self_training=...): a second fine-tuning on confidently pseudo-labelled
unlabelled series."""

import numpy as np
import pytest
from conftest import make_panel
from sklearn.base import clone

from sktspt import SPTClassifier

TINY = dict(depth=1, d_model=16, architecture__n_heads=2, architecture__dim_feedforward=32,
            architecture__dropout=0.0, batch_size=16,
            pretrain_epochs=2, max_epochs=20, lr=3e-3, random_state=0)


@pytest.fixture(scope="module")
def few_labels():
    """12 labelled series of two classes that a tiny net separates, and 48 unlabelled ones."""
    X, y = make_panel(n=60, seed=3)
    return X[:12], y[:12], X[12:], y[12:]


def test_pseudo_labels_are_the_confident_predictions(few_labels):
    X, y, U, _ = few_labels
    clf = SPTClassifier(**TINY, self_training=0.7).fit(X, y, X_unlabeled=U)
    assert 0 < clf.n_pseudo_labeled_ < len(U)  # the threshold chose some
    # The second fine-tuning trained on the labelled and pseudo-labelled series together.
    assert len(clf.history_[0, "batches"]) == -(-(len(X) + clf.n_pseudo_labeled_) // 16)
    # What _pseudo_targets selects is exactly the threshold rule on predict_proba's output.
    keep, targets = clf._pseudo_targets(clf.net_, clf._prepare(U))
    proba = clf.predict_proba(U)
    assert np.array_equal(keep, np.flatnonzero(proba.max(1) >= 0.7))
    assert np.array_equal(clf.classes_[targets], clf.predict(U)[keep])


def test_the_count_survives_saving(few_labels, tmp_path):
    from sktspt.persistence import load

    X, y, U, _ = few_labels
    clf = SPTClassifier(**TINY, self_training=0.7).fit(X, y, X_unlabeled=U)
    clf.save(tmp_path / "m")
    loaded = load(tmp_path / "m")
    assert loaded.n_pseudo_labeled_ == clf.n_pseudo_labeled_ > 0
    assert np.array_equal(loaded.predict_proba(U), clf.predict_proba(U))


def test_without_qualifying_series_the_fit_is_the_plain_one(few_labels):
    """No series reaches the threshold (label smoothing caps the probabilities below
    0.999), or no X_unlabeled: the fit equals self_training=None's, bit for bit."""
    X, y, U, _ = few_labels
    plain = SPTClassifier(**TINY).fit(X, y, X_unlabeled=U)
    high = SPTClassifier(**TINY, self_training=0.999).fit(X, y, X_unlabeled=U)
    assert high.n_pseudo_labeled_ == 0 and plain.n_pseudo_labeled_ == 0
    assert np.array_equal(plain.predict_proba(U), high.predict_proba(U))
    alone = SPTClassifier(**TINY, self_training=0.7).fit(X, y)
    assert alone.n_pseudo_labeled_ == 0
    assert np.array_equal(SPTClassifier(**TINY).fit(X, y).predict_proba(U),
                          alone.predict_proba(U))


def test_self_training_is_seeded_and_works_from_scratch_and_with_weights(few_labels):
    X, y, U, _ = few_labels
    params = dict(TINY, self_training=0.7, pretrain_epochs=0)
    a = SPTClassifier(**params).fit(X, y, X_unlabeled=U)
    b = clone(a).fit(X, y, X_unlabeled=U)
    assert a.pretrain_history_ is None and a.n_pseudo_labeled_ > 0  # scratch self-trains
    assert np.array_equal(a.predict_proba(U), b.predict_proba(U))
    weighted = SPTClassifier(**TINY, self_training=0.7).fit(
        X, y, X_unlabeled=U, sample_weight=np.linspace(0.5, 2, len(y)))
    assert weighted.n_pseudo_labeled_ > 0 and np.isfinite(weighted.predict_proba(U)).all()


@pytest.mark.parametrize("value", [0, 1, 1.5, -0.2, "high"])
def test_bad_threshold_is_a_clear_error(few_labels, value):
    X, y, U, _ = few_labels
    with pytest.raises((ValueError, TypeError), match="self_training"):
        SPTClassifier(**TINY, self_training=value).fit(X, y, X_unlabeled=U)


def test_unlabeled_series_of_other_channels_are_refused_without_pretraining(few_labels):
    X, y, U, _ = few_labels
    with pytest.raises(ValueError, match="X_unlabeled has 1 channels"):
        SPTClassifier(**dict(TINY, pretrain_epochs=0), self_training=0.7).fit(
            X, y, X_unlabeled=U[:, :1])
