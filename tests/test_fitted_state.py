"""A fit changes the estimator only when it succeeds.

A failed fit (an input refused, or an exception during training, also in a warm start)
leaves the previous fit as it was and usable, or an unfitted estimator unfitted, and
releases its checkpoint folder; a checkpoint folder without its ``run.json`` is refused;
and parameters set after fit do not change predictions until the next fit.
"""

import os
import pickle

import numpy as np
import pytest
from conftest import ONE_EPOCH_FIT as FAST
from conftest import data_fixture

from sktspt import ResumableCheckpoint, SPTClassifier, load

data = data_fixture(n=12, t=16)


def fitted_state(est) -> bytes:
    """The estimator's whole state (parameters, fitted attributes, weights) as bytes."""
    return pickle.dumps(est)


# --- a failed fit leaves the estimator as it was --------------------------------------------------
def test_a_failed_refit_leaves_the_previous_fit_usable(data):
    X, y = data
    clf = SPTClassifier(**FAST).fit(X, y)
    before = clf.predict_proba(X)
    classes = clf.classes_.copy()
    state = fitted_state(clf)
    with pytest.raises(ValueError, match="(?i)negative"):
        clf.fit(X, np.where(y == 0, "a", "b"), sample_weight=-np.ones(len(y)))
    assert fitted_state(clf) == state
    np.testing.assert_array_equal(clf.classes_, classes)
    np.testing.assert_array_equal(clf.predict_proba(X), before)


def test_a_refit_refused_on_x_unlabeled_channels_still_saves_and_loads(data, tmp_path):
    X, y = data
    clf = SPTClassifier(**FAST).fit(X, y)
    before = clf.predict_proba(X)
    with pytest.raises(ValueError, match="X_unlabeled has 1 channel, but"):
        clf.fit(X[:, :, :12], y, X_unlabeled=X[:, :1])
    clf.save(tmp_path / "m.sktspt")
    np.testing.assert_array_equal(load(tmp_path / "m.sktspt").predict_proba(X), before)


def test_a_failed_first_fit_leaves_the_estimator_unfitted(data):
    X, y = data
    clf = SPTClassifier(**FAST)
    params, before = clf.get_params(), sorted(vars(clf))
    with pytest.raises(ValueError):
        clf.fit(X, y, sample_weight=-np.ones(len(y)))
    assert sorted(vars(clf)) == before and clf.get_params() == params


def test_an_exception_during_training_leaves_the_previous_fit(data):
    from skorch.callbacks import Callback

    class Boom(Callback):
        def on_epoch_end(self, net, **kwargs):
            raise RuntimeError("boom")

    X, y = data
    clf = SPTClassifier(**FAST).fit(X, y)
    before, state = clf.predict_proba(X), fitted_state(clf)
    with pytest.raises(RuntimeError, match="boom"):
        clf.set_params(callbacks=[Boom()]).fit(X, y)
    clf.set_params(callbacks=None)
    assert fitted_state(clf) == state
    np.testing.assert_array_equal(clf.predict_proba(X), before)
    # A warm start that fails in training leaves the weights and history as they were.
    net, step = clf.net_, type(clf.net_).train_step

    def step_then_boom(*args, **kwargs):
        step(net, *args, **kwargs)  # the weights change, then training fails
        raise RuntimeError("boom")

    net.__dict__["train_step"] = step_then_boom
    with pytest.raises(RuntimeError, match="boom"):
        clf.set_params(warm_start=True).fit(X, y, sample_weight=np.ones(len(y)))
    del net.__dict__["train_step"]
    clf.set_params(warm_start=False)
    assert net.criterion_.reduction == "mean"
    assert len(clf.history_) == len(pickle.loads(state).history_)
    np.testing.assert_array_equal(clf.predict_proba(X), before)


# --- parameters set after fit -------------------------------------------------------------
@pytest.mark.parametrize("augment", ["roll", False])
def test_parameters_set_after_fit_do_not_change_predictions(data, augment):
    X, y = data
    clf = SPTClassifier(augment=augment, **FAST).fit(X, y)
    before = clf.predict_proba(X)
    changes = [{"augment": "roll" if not augment else False}, {"augment": "auto"},
               {"architecture__positional": "learned"}]
    for params in changes:
        clf.set_params(**params)
        np.testing.assert_array_equal(clf.predict_proba(X), before)


# --- checkpoints ---------------------------------------------------------------------------
def test_a_checkpoint_folder_without_its_fingerprint_is_refused(data, tmp_path):
    X, y = data
    SPTClassifier(callbacks=[ResumableCheckpoint(tmp_path)], **FAST).fit(X, y)
    os.remove(tmp_path / "run.json")
    clf = SPTClassifier(callbacks=[ResumableCheckpoint(tmp_path)], **FAST)
    with pytest.raises(ValueError, match="no run.json"):
        clf.fit(X, 1 - y)
    # and the refusal released the folder: a fit in a fresh folder of the same process
    # and one after deleting the checkpoints both run.
    for entry in os.listdir(tmp_path):
        if entry != ".lock":
            import shutil

            shutil.rmtree(tmp_path / entry)
    SPTClassifier(callbacks=[ResumableCheckpoint(tmp_path)], **FAST).fit(X, 1 - y)


def test_a_fit_refused_after_claiming_checkpoint_dir_releases_it(data, tmp_path):
    X, y = data
    clf = SPTClassifier(callbacks=[ResumableCheckpoint(tmp_path)], **FAST)
    with pytest.raises(ValueError, match="X_unlabeled has 1 channel, but"):
        clf.fit(X, y, X_unlabeled=X[:, :1])
    assert "_run_lock" not in vars(clf)
    # not "in use by another fit"
    SPTClassifier(callbacks=[ResumableCheckpoint(tmp_path)], **FAST).fit(X, y)
