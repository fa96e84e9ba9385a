"""``device__threads``: the torch thread count that fit, predict and transform run with.

A count given applies inside each call and torch's own count is restored after; None
chooses a count from the size of the model's training step, capped by torch's count;
values that are not positive integers are refused.
"""

import pytest
import torch
from conftest import NARROW_NET_NO_DROPOUT as TINY
from conftest import data_fixture, make_shifted_noise
from skorch.callbacks import Callback

from sktspt import SPTClassifier
from sktspt._concurrency import MACS_PER_THREAD, choose_threads, step_macs

data = data_fixture(make_shifted_noise)


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
                        pretrain__callbacks=[spy], **TINY)
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
                        pretrain__callbacks=[spy], **{**TINY, "device__threads": None})
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
