"""Estimators used from several threads at once.

Fits in threads equal the same fits run one after the other (also with a different
``device__threads`` each) and leave the caller's torch random state and thread count as
they were; ``predict_proba`` and ``transform`` from many threads on one fitted or loaded
model equal serial calls bit for bit, since the module stays in evaluation mode.
"""

from concurrent.futures import ThreadPoolExecutor

import joblib
import numpy as np
import pytest
import torch
from conftest import FAST_FIT as FAST
from conftest import TINY_NET as TINY
from conftest import data_fixture

from sktspt import SPTClassifier, SPTPretrainer, load

data = data_fixture(n=24, t=24)


def in_threads(call, n_threads=8, calls_each=3):
    """``call()`` from ``n_threads`` threads at once, ``calls_each`` times each."""
    with ThreadPoolExecutor(n_threads) as pool:
        return list(pool.map(lambda _: call(), range(n_threads * calls_each)))


# --- fits in threads -----------------------------------------------------------------------------
def test_fits_in_threads_equal_serial_fits_and_leave_the_caller_rng_alone(data):
    X, y = data
    models = [SPTClassifier(**{**FAST, "random_state": seed}) for seed in (0, 1)]
    serial = [m.fit(X, y).predict_proba(X) for m in models]
    torch.manual_seed(123)
    state = torch.get_rng_state()
    for _ in range(2):
        threaded = joblib.Parallel(n_jobs=2, backend="threading")(
            joblib.delayed(lambda s: SPTClassifier(**{**FAST, "random_state": s}).fit(X, y)
                           .predict_proba(X))(seed)
            for seed in (0, 1)
        )
        for a, b in zip(serial, threaded, strict=True):
            np.testing.assert_array_equal(a, b)
    assert torch.equal(torch.get_rng_state(), state)


def test_fits_with_mixed_n_threads_in_threads_equal_serial_fits(data):
    X, y = data
    before = torch.get_num_threads()
    settings = [(None, 0), (1, 1), (2, 2), (None, 3), (2, 0), (1, 3)]

    def fit(n_threads, seed):
        clf = SPTClassifier(**{**FAST, "random_state": seed, "device__threads": n_threads})
        return clf.fit(X, y).predict_proba(X)

    try:
        torch.set_num_threads(2)
        serial = [fit(n, s) for n, s in settings]
        assert torch.get_num_threads() == 2
        for _ in range(2):
            threaded = joblib.Parallel(n_jobs=len(settings), backend="threading")(
                joblib.delayed(fit)(n, s) for n, s in settings
            )
            for a, b in zip(serial, threaded, strict=True):
                np.testing.assert_array_equal(a, b)
            assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


# --- prediction from many threads ----------------------------------------------------------------
@pytest.mark.parametrize("source", ["fitted", "loaded"])
def test_predict_proba_from_many_threads_equals_serial(data, tmp_path, source):
    X, y = data
    # Heavy dropout, and no validation split, so the last training step leaves the module
    # in training mode: a prediction that ran with dropout on would differ by a lot.
    clf = SPTClassifier(**{**FAST, "architecture__dropout": 0.5,
                           "validation_fraction": 0.0}).fit(X, y)
    if source == "loaded":
        clf.save(tmp_path / "m.sktspt")
        clf = load(tmp_path / "m.sktspt")
    Xt = np.concatenate([X] * 6)  # several passes a call, so that calls overlap
    serial = clf.predict_proba(Xt)
    np.testing.assert_array_equal(serial, clf.predict_proba(Xt))
    for proba in in_threads(lambda: clf.predict_proba(Xt)):
        np.testing.assert_array_equal(proba, serial)
    assert not any(m.training for m in clf.net_.module_.modules())


def test_transform_from_many_threads_equals_serial(data, tmp_path):
    X, _ = data
    pre = SPTPretrainer(pretrain_epochs=2, **{**TINY, "architecture__dropout": 0.5}).fit(X)
    pre.save(tmp_path / "p.sktspt")
    pre = load(tmp_path / "p.sktspt")
    Xt = np.concatenate([X] * 6)
    serial = pre.transform(Xt)
    for emb in in_threads(lambda: pre.transform(Xt)):
        np.testing.assert_array_equal(emb, serial)


def test_a_fitted_or_loaded_module_is_in_evaluation_mode_and_training_still_trains(
        data, tmp_path):
    X, y = data
    clf = SPTClassifier(**{**FAST, "validation_fraction": 0.0}).fit(X, y)
    assert not any(m.training for m in clf.net_.module_.modules())
    clf.save(tmp_path / "m.sktspt")
    loaded = load(tmp_path / "m.sktspt")
    assert not any(m.training for m in loaded.net_.module_.modules())
    # A warm start trains in training mode (dropout on) and ends in evaluation mode.
    seen = []
    module = loaded.net_.module_
    hook = module.register_forward_pre_hook(lambda m, _: seen.append(m.training))
    try:
        loaded.set_params(warm_start=True, max_epochs=1).fit(X, y)
    finally:
        hook.remove()
    assert True in seen
    assert not any(m.training for m in loaded.net_.module_.modules())
