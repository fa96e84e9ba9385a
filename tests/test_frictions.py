"""Frictions a new user met: threads, class imbalance, silent overrides, unclear errors."""

import warnings
import zipfile

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.exceptions import NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import cross_val_score
from skorch.callbacks import Callback, EarlyStopping

import sktspt
from sktspt import SPTClassifier, SPTPretrainer
from sktspt._concurrency import MACS_PER_THREAD, choose_threads, step_macs

TINY = dict(depth=1, d_model=8, architecture__n_heads=2, architecture__dim_feedforward=8,
            architecture__dropout=0.0, random_state=0,
            batch_size=8)


@pytest.fixture(scope="module")
def data():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(24, 2, 12))
    y = np.arange(24) % 2
    X[y == 1, 0] += 1.0
    return X, y


# --- n_threads ------------------------------------------------------------------------------
class ThreadSpy(Callback):
    def __init__(self):
        self.seen = []

    def on_epoch_end(self, net, **kwargs):
        self.seen.append(torch.get_num_threads())


def test_n_threads_applies_inside_fit_and_predict_and_is_restored(data, monkeypatch):
    X, y = data
    before = torch.get_num_threads()
    spy = ThreadSpy()
    clf = SPTClassifier(pretrain_epochs=1, max_epochs=1, device__threads=1, callbacks=[spy],
                        callbacks__pretrain=[spy], **TINY)
    try:
        torch.set_num_threads(3)
        clf.fit(X, y)
        assert spy.seen == [1, 1]
        assert torch.get_num_threads() == 3
        calls = []
        real = clf._infer
        monkeypatch.setattr(clf, "_infer", lambda *a: calls.append(torch.get_num_threads())
                            or real(*a))
        clf.predict(X)
        clf.transform(X)
        assert calls == [1, 1] and torch.get_num_threads() == 3
        clf.set_params(device__threads=None)
        clf.predict(X)
        assert calls[-1] == clf._thread_count() == 1  # None: the package's choice
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(before)


def test_choose_threads_grows_with_the_model_and_stops_at_the_ceiling():
    default = step_macs(tokens=32, d_model=64, depth=3, dim_feedforward=128, batch_size=16)
    assert choose_threads(default, ceiling=2) == 1
    assert choose_threads(default, ceiling=64) == 1
    large = step_macs(tokens=512, d_model=256, depth=6, dim_feedforward=512, batch_size=16)
    assert large > 8 * default
    assert choose_threads(large, ceiling=2) == 2
    assert choose_threads(large, ceiling=8) == 8
    assert choose_threads(large, ceiling=1) == 1
    assert choose_threads(large, ceiling=10**4) == 1 + large // MACS_PER_THREAD
    counts = [choose_threads(step_macs(t, 128, 6, 256, 16), 64) for t in (32, 128, 512, 2048)]
    assert counts == sorted(counts) and counts[0] == 1 < counts[-1]
    assert choose_threads(MACS_PER_THREAD - 1, 4) == 1
    assert choose_threads(MACS_PER_THREAD, 4) == 2
    with pytest.raises(ValueError, match="ceiling must be a positive integer"):
        choose_threads(default, ceiling=0)


def test_default_thread_count_runs_fit_and_is_restored(data):
    X, y = data
    before = torch.get_num_threads()
    spy = ThreadSpy()
    clf = SPTClassifier(pretrain_epochs=1, max_epochs=1, callbacks=[spy],
                        callbacks__pretrain=[spy], **{**TINY, "device__threads": None})
    try:
        torch.set_num_threads(2)
        clf.fit(X, y)
        chosen = choose_threads(step_macs(clf.max_tokens_, 8, 1, 8, 8), ceiling=2)
        assert chosen == clf._thread_count() == 1
        assert spy.seen == [chosen, chosen]
        assert torch.get_num_threads() == 2
        # A model whose step is large (here by its batch size) gets more threads, up to
        # torch's own count.
        big = clf.set_params(batch_size=2**20)
        assert step_macs(clf.max_tokens_, 8, 1, 8, 2**20) > MACS_PER_THREAD
        big.fit(X, y)
        assert big._thread_count() == 2 and spy.seen[-2:] == [2, 2]
        assert torch.get_num_threads() == 2
        torch.set_num_threads(1)  # the ceiling
        big.fit(X, y)
        assert spy.seen[-2:] == [1, 1] and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "2", 10**6])
def test_n_threads_is_validated(data, value):
    X, y = data
    with pytest.raises(ValueError, match="device__threads must be None or a positive integer"):
        SPTClassifier(device__threads=value, **TINY).fit(X, y)


# --- class_weight and sample_weight -------------------------------------------------------------
def test_class_weight_and_sample_weight_shift_the_predictions(data):
    X, y = data
    params = dict(pretrain_epochs=0, max_epochs=20, lr=1e-2, validation_fraction=0.0, **TINY)
    plain = SPTClassifier(**params).fit(X, y).predict_proba(X)[:, 1].mean()
    favour_0 = SPTClassifier(class_weight={0: 1.0, 1: 0.01}, **params).fit(X, y)
    assert favour_0.predict_proba(X)[:, 1].mean() < plain - 0.1
    w = np.where(y == 1, 1.0, 0.01)
    favour_1 = SPTClassifier(**params).fit(X, y, sample_weight=w)
    assert favour_1.predict_proba(X)[:, 1].mean() > plain + 0.1


def test_unit_weights_train_like_no_weights(data):
    X, y = data
    params = dict(pretrain_epochs=1, max_epochs=2, **TINY)
    plain = SPTClassifier(**params).fit(X, y).predict_proba(X)
    ones = SPTClassifier(**params).fit(X, y, sample_weight=np.full(len(y), 3.0))
    np.testing.assert_allclose(ones.predict_proba(X), plain, atol=1e-5)


def test_balanced_class_weight_is_sklearns(data):
    X, y = data
    y = np.r_[np.zeros(18, int), np.ones(6, int)]
    clf = SPTClassifier(class_weight="balanced", **TINY)
    clf._fit_targets(y, len(y))
    w = clf._sample_weights(None, y)
    assert w[y == 1][0] / w[y == 0][0] == pytest.approx(3.0)
    assert w.mean() == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("class_weight", "sample_weight", "error", "match"),
    [("auto", None, ValueError, "class_weight must be None, 'balanced' or a dict"),
     ([1, 2], None, TypeError, "class_weight must be None"),
     ({5: 1.0}, None, ValueError, "not in class_weight|not found"),
     (None, -np.ones(24), ValueError, "[Nn]egative"),
     (None, np.ones(5), ValueError, "shape|samples"),
     (None, np.zeros(24), ValueError, "positive sum|zero")],
)
def test_weights_are_validated(data, class_weight, sample_weight, error, match):
    X, y = data
    with pytest.raises(error, match=match):
        SPTClassifier(class_weight=class_weight, **TINY).fit(X, y, sample_weight=sample_weight)


def test_sktime_adapter_announces_and_passes_class_weight():
    from sktime.datasets import load_unit_test

    from sktspt import SPTClassifierSktime

    assert SPTClassifierSktime.get_class_tag("capability:class_weight") is True
    X, y = load_unit_test(split="train", return_X_y=True)
    clf = SPTClassifierSktime(class_weight="balanced", pretrain_epochs=0, max_epochs=1, **TINY)
    assert clf.fit(X, y).estimator_.class_weight == "balanced"


# --- a fitted pretrainer ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def pretrainer(data):
    return SPTPretrainer(pretrain_epochs=1, **TINY).fit(data[0])


def test_pretrainer_overriding_explicit_architecture_warns(data, pretrainer):
    X, y = data
    params = dict(pretrain_epochs=0, max_epochs=1, random_state=0)
    with pytest.warns(UserWarning, match=r"SPTClassifier\(depth=4, d_model=32\) is ignored.*"
                      r"depth=1, d_model=8"):
        clf = SPTClassifier(d_model=32, depth=4, pretrainer=pretrainer, **params).fit(X, y)
    assert clf.encoder_kwargs_["d_model"] == 8
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # defaults, or the pretrainer's own values: no warning
        SPTClassifier(pretrainer=FrozenEstimator(pretrainer), **params).fit(X, y)
        SPTClassifier(d_model=8, depth=1, pretrainer=pretrainer, **params).fit(X, y)


def test_unwrapped_pretrainer_in_cross_validation_says_to_wrap_it(data, pretrainer):
    X, y = data
    clf = SPTClassifier(pretrainer=pretrainer, max_epochs=1, **TINY)
    with pytest.raises(NotFittedError, match=r"wrap it in sklearn\.frozen\.FrozenEstimator"):
        cross_val_score(clf, X, y, cv=2, error_score="raise")


# --- devices, tags, input, messages ----------------------------------------------------------
@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
@pytest.mark.parametrize("device", ["cuda", "cuda:0", "gpu"])
def test_unavailable_or_unknown_device_is_a_clear_value_error(data, device):
    X, y = data
    with pytest.raises(ValueError, match=rf"device='{device}' is not"):
        SPTClassifier(device=device, **TINY).fit(X, y)


def test_sklearn_tags_say_3d_arrays_and_nan_are_accepted():
    for est in (SPTClassifier(), SPTPretrainer()):
        tags = est.__sklearn_tags__()
        assert tags.input_tags.three_d_array and tags.input_tags.allow_nan


def test_long_format_frame_is_refused_as_ambiguous(data):
    _, y = data
    long = pd.DataFrame({"id": np.repeat(np.arange(24), 10), "t": np.tile(np.arange(10), 24),
                         "value": np.random.RandomState(0).normal(size=240)})
    with pytest.raises(ValueError, match=r"long format.*set_index"):
        SPTClassifier(**TINY).fit(long, np.repeat(y, 10))
    unnamed = long.set_axis([0, 1, 2], axis=1)
    with pytest.raises(ValueError, match=r"look like the instance and time index"):
        SPTPretrainer(**TINY).fit(unnamed)
    # Indexed by instance and time, the same frame is a panel of 24 series of length 10.
    pre = SPTPretrainer(pretrain_epochs=1, **TINY).fit(long.set_index(["id", "t"]))
    assert (pre.n_channels_, pre.n_timepoints_) == (1, 10)
    # A wide table (one series per row) is still read as before.
    wide = pd.DataFrame(np.random.RandomState(1).normal(size=(24, 10)))
    assert SPTPretrainer(pretrain_epochs=1, **TINY).fit(wide).n_timepoints_ == 10


@pytest.mark.parametrize(
    ("params", "shown"),
    [(dict(mask_ratio=np.float64(1.0)), "got 1.0."), (dict(lr=np.float32(-1.0)), "got -1.0."),
     (dict(depth=np.int64(0)), "got 0."), (dict(patch_size=np.int64(0)), "got 0.")],
)
def test_messages_show_numpy_scalars_as_plain_numbers(data, params, shown):
    X, y = data
    with pytest.raises((ValueError, TypeError)) as info:
        SPTClassifier(**{**TINY, **params}).fit(X, y)
    assert shown in str(info.value) and "np." not in str(info.value)


def test_save_message_uses_the_right_article(data, tmp_path):
    X, y = data
    clf = SPTClassifier(pretrain_epochs=0, max_epochs=1, callbacks=[EarlyStopping()],
                        validation_fraction=0.2, **TINY)
    with pytest.raises(ValueError, match="an EarlyStopping is not a JSON"):
        clf.fit(X, y).save(tmp_path / "m.sktspt")


def test_loading_an_sktime_zip_points_to_the_right_loader(tmp_path):
    from sktime.datasets import load_unit_test

    from sktspt import SPTClassifierSktime

    X, y = load_unit_test(split="train", return_X_y=True)
    clf = SPTClassifierSktime(pretrain_epochs=0, max_epochs=1, **TINY).fit(X, y)
    clf.save(tmp_path / "model")
    assert zipfile.is_zipfile(tmp_path / "model.zip")
    with pytest.raises(ValueError, match=r"sktime's pickle zip.*sktime\.base\.load.*"
                       r"estimator_\.save"):
        sktspt.load(tmp_path / "model.zip")
    clf.estimator_.save(tmp_path / "core.sktspt")  # the safe route it names works
    loaded = sktspt.load(tmp_path / "core.sktspt")
    np.testing.assert_array_equal(loaded.predict(X), clf.predict(X))
