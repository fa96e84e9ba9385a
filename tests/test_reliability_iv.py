"""Reliability IV (issue 75): failed fits that leave the estimator as it was, parameters set
after fit, checkpoints and benchmark runs that cannot be mixed up, model files that cannot
exhaust memory or hang, locks released on every path, and errors that name the problem.

Each test pins one break found by an attack on the package; each failed on the code before
the fix.
"""

import os
import pickle
import warnings

import numpy as np
import pytest
from conftest import make_panel

from sktspt import SPTClassifier, SPTPretrainer, SPTRegressor, load

TINY = dict(
    depth=1, d_model=8, n_heads=2, dim_feedforward=8, batch_size=8, random_state=0,
    n_threads=1,
)
FAST = dict(pretrain_epochs=1, max_epochs=1, **TINY)


@pytest.fixture(scope="module")
def data():
    return make_panel(n=12, t=16)


@pytest.fixture(scope="module")
def fitted(data):
    X, y = data
    return SPTClassifier(**FAST).fit(X, y)


def fitted_state(est) -> bytes:
    """The estimator's whole state (parameters, fitted attributes, weights) as bytes."""
    return pickle.dumps(est)


# --- a failed fit leaves the estimator as it was ------------------------------------------
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
    with pytest.raises(ValueError, match="X_unlabeled has 1 channels"):
        clf.fit(X[:, :, :12], y, X_unlabeled=X[:, :1])
    clf.save(tmp_path / "m.sktspt")
    np.testing.assert_array_equal(load(tmp_path / "m.sktspt").predict_proba(X), before)


def test_a_failed_first_fit_leaves_the_estimator_unfitted(data):
    X, y = data
    clf = SPTClassifier(**FAST)
    params = clf.get_params()
    with pytest.raises(ValueError):
        clf.fit(X, y, sample_weight=-np.ones(len(y)))
    assert sorted(vars(clf)) == sorted(params)


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
def test_parameters_set_after_fit_do_not_change_predictions(fitted, data):
    X, _ = data
    clf = pickle.loads(pickle.dumps(fitted))
    before = clf.predict_proba(X)
    for params in ({"augment": "roll"}, {"augment": "auto"}, {"positional": "learned"}):
        clf.set_params(**params)
        np.testing.assert_array_equal(clf.predict_proba(X), before)


# --- checkpoints ---------------------------------------------------------------------------
def test_a_checkpoint_folder_without_its_fingerprint_is_refused(data, tmp_path):
    X, y = data
    SPTClassifier(checkpoint_dir=tmp_path, **FAST).fit(X, y)
    os.remove(tmp_path / "run.json")
    clf = SPTClassifier(checkpoint_dir=tmp_path, **FAST)
    with pytest.raises(ValueError, match="no run.json"):
        clf.fit(X, 1 - y)
    # and the refusal released the folder: a fit in a fresh folder of the same process
    # and one after deleting the checkpoints both run.
    for entry in os.listdir(tmp_path):
        if entry != ".lock":
            import shutil

            shutil.rmtree(tmp_path / entry)
    SPTClassifier(checkpoint_dir=tmp_path, **FAST).fit(X, 1 - y)


def test_a_fit_refused_after_claiming_checkpoint_dir_releases_it(data, tmp_path):
    X, y = data
    clf = SPTClassifier(checkpoint_dir=tmp_path, **FAST)
    with pytest.raises(ValueError, match="X_unlabeled has 1 channels"):
        clf.fit(X, y, X_unlabeled=X[:, :1])
    assert "_run_lock" not in vars(clf)
    SPTClassifier(checkpoint_dir=tmp_path, **FAST).fit(X, y)  # not "in use by another fit"


# --- pretrainer -----------------------------------------------------------------------------
def test_a_pretrainer_refuses_series_of_another_length(data):
    X, y = data
    pre = SPTPretrainer(pretrain_epochs=1, **TINY).fit(X)
    with pytest.raises(ValueError, match="series of length 12, but the pretrainer"):
        SPTClassifier(pretrainer=pre, **FAST).fit(X[:, :, :12], y)


# --- sample weights and X_unlabeled ---------------------------------------------------------
def test_huge_sample_weights_are_scaled_not_zeroed(data):
    X, y = data
    clf = SPTClassifier(**FAST)
    clf.fit(X, y)  # for _sample_weights' classes_
    w = clf._sample_weights(np.full(len(y), 1e308), clf._label_encoder.transform(y))
    np.testing.assert_array_equal(w, np.ones(len(y), dtype=np.float32))
    w = clf._sample_weights(np.r_[np.full(len(y) - 1, 1e308), 0.0],
                            clf._label_encoder.transform(y))
    assert np.isfinite(w).all() and w.max() > 0 and np.isclose(w.mean(), 1)


@pytest.mark.parametrize("how", ["pretrain_epochs=0", "pretrainer"])
def test_x_unlabeled_that_no_phase_uses_is_reported(data, how):
    X, y = data
    if how == "pretrainer":
        params = dict(pretrainer=SPTPretrainer(pretrain_epochs=1, **TINY).fit(X))
    else:
        params = dict(pretrain_epochs=0)
    clf = SPTClassifier(**{**FAST, **params})
    with pytest.warns(UserWarning, match="X_unlabeled is not used"):
        clf.fit(X, y, X_unlabeled=X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SPTClassifier(**FAST).fit(X, y, X_unlabeled=X)  # pretraining uses it: no warning


# --- regression targets -----------------------------------------------------------------------
@pytest.mark.parametrize("factor, size", [(1e200, "too large"), (1e-300, "too small"),
                                          (1e307, "too large")])
def test_targets_without_a_representable_spread_are_refused_naming_y(data, factor, size):
    X, _ = data
    y = np.linspace(-1, 1, len(X)) * factor
    reg = SPTRegressor(**FAST)
    with pytest.raises(ValueError, match=f"^y cannot be standardised.* {size} to represent"):
        reg.fit(X, y)
    assert not hasattr(reg, "target_scale_")
