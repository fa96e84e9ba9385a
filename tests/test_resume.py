"""Interrupted fits resume from their last checkpoint; warm start continues training.

Interruptions are real: a callback raises KeyboardInterrupt in the middle of an epoch
(what Ctrl-C does), or a fitting subprocess is killed with SIGKILL. A resumed fit must
continue from the saved epoch and, on CPU, end bitwise identical to an uninterrupted one.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import torch
from conftest import make_panel
from skorch import NeuralNet, NeuralNetClassifier
from skorch.callbacks import Callback

from sktspt import ResumableCheckpoint, SPTClassifier, SPTPretrainer
from sktspt.training import AugmentedNetClassifier, MaskedPretrainNet, SeededStepNet

TINY = dict(
    depth=1, d_model=16, architecture__n_heads=2, architecture__dim_feedforward=16,
        architecture__dropout=0.1, batch_size=8,
    random_state=0,
)


class InterruptIn(Callback):
    """Raise KeyboardInterrupt once, after the first training batch of ``epoch``."""

    def __init__(self, epoch):
        self.epoch = epoch

    def on_batch_end(self, net, training=None, **kwargs):
        if training and len(net.history) == self.epoch and not getattr(self, "fired_", False):
            self.fired_ = True
            raise KeyboardInterrupt


def interrupt_in(monkeypatch, net_cls, epoch):
    """Ctrl-C once, in the first training batch of ``epoch`` of a ``net_cls`` fit.

    Patched in rather than passed as a callback: callbacks are part of a fit's
    fingerprint, and the resumed fit must be the same fit.
    """
    original = net_cls.train_step
    fired = []

    def step(self, batch, **kwargs):
        if len(self.history) == epoch and not fired:
            fired.append(epoch)
            raise KeyboardInterrupt
        return original(self, batch, **kwargs)

    monkeypatch.setattr(net_cls, "train_step", step)


@pytest.fixture
def data():
    return make_panel(n=24, t=24)


def epochs_requested(monkeypatch, net_cls):
    """Record the ``epochs`` each ``partial_fit`` of ``net_cls`` is asked to train."""
    calls = []
    original = net_cls.partial_fit

    def spy(self, X, y=None, **kwargs):
        calls.append(kwargs.get("epochs"))
        return original(self, X, y, **kwargs)

    monkeypatch.setattr(net_cls, "partial_fit", spy)
    return calls


def folders(path):
    return sorted(os.listdir(path)) if os.path.isdir(path) else []


def test_interrupted_finetuning_resumes_where_it_stopped(data, tmp_path, monkeypatch):
    X, y = data
    params = dict(pretrain_epochs=3, max_epochs=6, **TINY)
    ref = SPTClassifier(**params).fit(X, y)

    interrupt_in(monkeypatch, AugmentedNetClassifier, 4)
    clf = SPTClassifier(callbacks=[ResumableCheckpoint(tmp_path)], **params)
    with pytest.raises(KeyboardInterrupt, match="fine-tuning, in epoch 4 of 6.*epoch 3"):
        clf.fit(X, y)
    assert not hasattr(clf, "net_")
    assert folders(tmp_path / "pretrain") == ["final"]
    assert folders(tmp_path / "finetune") == ["epoch_000003"]

    pretrain_calls = epochs_requested(monkeypatch, MaskedPretrainNet)
    finetune_calls = epochs_requested(monkeypatch, NeuralNetClassifier)
    resumed = SPTClassifier(callbacks=[ResumableCheckpoint(tmp_path)], **params).fit(X, y)
    assert pretrain_calls == []  # the finished pretraining is loaded, not rerun
    assert finetune_calls == [3]  # epochs 4-6 only: nothing but the interrupted epoch lost
    assert len(resumed.history_) == 6
    assert resumed.history_[:, "train_loss"] == ref.history_[:, "train_loss"]
    assert resumed.pretrain_history_[:, "train_loss"] == ref.pretrain_history_[:, "train_loss"]
    np.testing.assert_array_equal(resumed.predict_proba(X), ref.predict_proba(X))
    assert folders(tmp_path / "finetune") == ["final"]


@pytest.mark.parametrize("objective", ["masked", "masked+sigreg", "lejepa"])
def test_interrupted_pretraining_resumes_where_it_stopped(data, tmp_path, monkeypatch, objective):
    X, _ = data
    params = dict(pretrain_epochs=5, masking="mixed", pretrain_objective=objective, **TINY)
    ref = SPTPretrainer(**params).fit(X)

    interrupt_in(monkeypatch, SeededStepNet, 3)
    pre = SPTPretrainer(callbacks=[ResumableCheckpoint(tmp_path)], **params)
    with pytest.raises(KeyboardInterrupt, match="pretraining, in epoch 3 of 5.*epoch 2"):
        pre.fit(X)
    assert folders(tmp_path / "pretrain") == ["epoch_000002"]

    calls = epochs_requested(monkeypatch, NeuralNet)  # the base of every pretraining net
    resumed = SPTPretrainer(callbacks=[ResumableCheckpoint(tmp_path)], **params).fit(X)
    assert calls == [3]
    assert len(resumed.history_) == 5
    # The mask/view streams and SIGReg's step counter are restored: the same losses.
    assert resumed.history_[:, "train_loss"] == ref.history_[:, "train_loss"]
    np.testing.assert_array_equal(resumed.transform(X), ref.transform(X))


def test_classifier_interrupted_in_pretraining_does_not_fine_tune(data, tmp_path, monkeypatch):
    X, y = data
    params = dict(pretrain_epochs=4, max_epochs=2, **TINY)
    ref = SPTClassifier(**params).fit(X, y)

    original = MaskedPretrainNet.train_step

    def ctrl_c_in_epoch_3(self, batch, **kwargs):
        if len(self.history) == 3:
            raise KeyboardInterrupt
        return original(self, batch, **kwargs)

    monkeypatch.setattr(MaskedPretrainNet, "train_step", ctrl_c_in_epoch_3)
    clf = SPTClassifier(callbacks=[ResumableCheckpoint(tmp_path)], **params)
    with pytest.raises(KeyboardInterrupt, match="pretraining, in epoch 3 of 4"):
        clf.fit(X, y)
    assert not (tmp_path / "finetune").exists()
    assert folders(tmp_path / "pretrain") == ["epoch_000002"]

    monkeypatch.setattr(MaskedPretrainNet, "train_step", original)
    calls = epochs_requested(monkeypatch, MaskedPretrainNet)
    resumed = SPTClassifier(callbacks=[ResumableCheckpoint(tmp_path)], **params).fit(X, y)
    assert calls == [2]
    assert len(resumed.pretrain_history_) == 4
    np.testing.assert_array_equal(resumed.predict_proba(X), ref.predict_proba(X))


@pytest.mark.parametrize("patience", [None, 3])
def test_best_epoch_state_survives_resume(data, tmp_path, monkeypatch, patience):
    """The best weights seen before an interruption are still restored at the end."""
    X, y = data
    params = dict(pretrain_epochs=0, max_epochs=10, lr=0.01, schedule__patience=patience,
                  validation_fraction=0.2, tokenizer="patch", **TINY)
    ref = SPTClassifier(**params).fit(X, y)
    ref_stop = dict(ref.net_.callbacks_)["best_epoch"]
    interrupt_epoch = 4
    # Meaningful only if the best epoch lies before the interruption.
    assert ref_stop.best_epoch_ < interrupt_epoch - 1

    interrupt_in(monkeypatch, AugmentedNetClassifier, interrupt_epoch)
    clf = SPTClassifier(callbacks=[ResumableCheckpoint(tmp_path)], **params)
    with pytest.raises(KeyboardInterrupt):
        clf.fit(X, y)
    resumed = SPTClassifier(callbacks=[ResumableCheckpoint(tmp_path)], **params).fit(X, y)
    stop = dict(resumed.net_.callbacks_)["best_epoch"]
    assert stop.best_epoch_ == ref_stop.best_epoch_
    assert len(resumed.history_) == len(ref.history_)  # early stopping at the same epoch
    assert resumed.history_[:, "valid_loss_best"] == ref.history_[:, "valid_loss_best"]
    np.testing.assert_array_equal(resumed.predict_proba(X), ref.predict_proba(X))


def test_interrupt_without_checkpoint_dir_is_surfaced(data):
    X, y = data
    clf = SPTClassifier(pretrain_epochs=1, max_epochs=4, callbacks=[InterruptIn(2)], **TINY)
    with pytest.raises(KeyboardInterrupt, match=r"Pass callbacks=\[ResumableCheckpoint"):
        clf.fit(X, y)
    assert not hasattr(clf, "net_")


def test_early_stopping_is_not_an_interruption(data, tmp_path):
    X, y = data
    # Without mixup the validation loss of this small set soon stops falling.
    clf = SPTClassifier(pretrain_epochs=0, max_epochs=10, lr=0.01, schedule__patience=3,
                        mixup=0.0, validation_fraction=0.2,
                        callbacks=[ResumableCheckpoint(tmp_path)], **TINY).fit(X, y)
    assert len(clf.history_) < 10
    assert folders(tmp_path / "finetune") == ["final"]


def test_finished_fit_is_reloaded_not_retrained(data, tmp_path, monkeypatch):
    X, y = data
    params = dict(pretrain_epochs=2, max_epochs=2,
                  callbacks=[ResumableCheckpoint(tmp_path)], **TINY)
    first = SPTClassifier(**params).fit(X, y)
    calls = epochs_requested(monkeypatch, MaskedPretrainNet)
    calls += epochs_requested(monkeypatch, NeuralNetClassifier)
    again = SPTClassifier(**params).fit(X, y)
    assert calls == []
    np.testing.assert_array_equal(again.predict_proba(X), first.predict_proba(X))
    assert again.history_[:, "train_loss"] == first.history_[:, "train_loss"]


def test_resume_reuses_the_seed_of_the_first_run(data, tmp_path, monkeypatch):
    """random_state=None draws a seed; the resumed fit must use the same one."""
    X, y = data
    params = {**TINY, "random_state": None, "pretrain_epochs": 0, "max_epochs": 4}
    interrupt_in(monkeypatch, AugmentedNetClassifier, 3)
    clf = SPTClassifier(callbacks=[ResumableCheckpoint(tmp_path)], **params)
    with pytest.raises(KeyboardInterrupt):
        clf.fit(X, y)
    resumed = SPTClassifier(callbacks=[ResumableCheckpoint(tmp_path)], **params).fit(X, y)
    seed = json.loads((tmp_path / "run.json").read_text())["seed"]
    monkeypatch.setattr(SPTClassifier, "_seed", lambda self: seed)
    ref = SPTClassifier(**params).fit(X, y)
    np.testing.assert_array_equal(resumed.predict_proba(X), ref.predict_proba(X))


@pytest.mark.parametrize(
    "change", [{"lr": 0.01}, {"max_epochs": 3}, "data", "labels"], ids=str
)
def test_checkpoint_of_another_fit_is_refused(data, tmp_path, change):
    X, y = data
    params = dict(pretrain_epochs=1, max_epochs=2,
                  callbacks=[ResumableCheckpoint(tmp_path)], **TINY)
    SPTClassifier(**params).fit(X, y)
    if change == "data":
        X = X + 1.0
    elif change == "labels":
        y = y[::-1].copy()
    else:
        params.update(change)
    with pytest.raises(ValueError, match="different fit"):
        SPTClassifier(**params).fit(X, y)


def test_checkpoint_dir_must_be_a_path_and_one(data, tmp_path):
    X, y = data
    with pytest.raises(TypeError, match="ResumableCheckpoint's dirname must be a path, got int"):
        SPTClassifier(callbacks=[ResumableCheckpoint(3)], **TINY).fit(X, y)
    two = [ResumableCheckpoint(tmp_path), ("other", ResumableCheckpoint(tmp_path / "b"))]
    with pytest.raises(ValueError, match="more than one ResumableCheckpoint"):
        SPTClassifier(callbacks=two, **TINY).fit(X, y)
    with pytest.raises(ValueError, match="goes in callbacks, not pretrain__callbacks"):
        SPTClassifier(pretrain__callbacks=two[:1], **TINY).fit(X, y)
    assert not os.listdir(tmp_path)


def test_unreadable_checkpoint_gives_clear_error(data, tmp_path, monkeypatch):
    X, _ = data
    params = dict(pretrain_epochs=4, callbacks=[ResumableCheckpoint(tmp_path)], **TINY)
    interrupt_in(monkeypatch, SeededStepNet, 3)
    with pytest.raises(KeyboardInterrupt):
        SPTPretrainer(**params).fit(X)
    (tmp_path / "pretrain" / "epoch_000002" / "history.json").write_text("{not json")
    with pytest.raises(ValueError, match="history.json' is missing or damaged"):
        SPTPretrainer(**params).fit(X)


CHILD = textwrap.dedent(
    """
    import sys
    import time
    import numpy as np
    import torch
    torch.set_num_threads(1)
    from sktspt import ResumableCheckpoint, SPTClassifier
    from sktspt.training.resume import EpochCheckpoint

    # Leaves the parent time to kill mid-run, however loaded (not a callback: callbacks
    # are part of the fit's fingerprint, and the parent resumes without it).
    write = EpochCheckpoint.on_epoch_end

    def slow(self, net, **kwargs):
        write(self, net, **kwargs)
        time.sleep(0.05)

    EpochCheckpoint.on_epoch_end = slow

    X, y = np.load(sys.argv[1]), np.load(sys.argv[2])
    params = dict(depth=1, d_model=16, architecture__n_heads=2, architecture__dim_feedforward=16,
                  architecture__dropout=0.1,
                  batch_size=8, random_state=0, pretrain_epochs=3, max_epochs=30)
    SPTClassifier(callbacks=[ResumableCheckpoint(sys.argv[3])], **params).fit(X, y)
    """
)


def test_killed_process_resumes_from_its_last_checkpoint(data, tmp_path, monkeypatch):
    """SIGKILL a fit during fine-tuning; fitting again resumes from the newest epoch."""
    X, y = data
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    ckpt = tmp_path / "ckpt"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "X.npy"), str(tmp_path / "y.npy"),
         str(ckpt)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 180
        while not any(f.startswith("epoch_") and not f.endswith(".tmp")
                      for f in folders(ckpt / "finetune")):
            assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
            assert time.monotonic() < deadline, "no checkpoint written in time"
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert folders(ckpt / "pretrain") == ["final"]
    saved = [f for f in folders(ckpt / "finetune") if not f.endswith(".tmp")]
    assert len(saved) == 1 and saved[0].startswith("epoch_")  # killed before finishing
    k = int(saved[0].split("_")[1])
    assert 1 <= k < 30

    params = dict(pretrain_epochs=3, max_epochs=30, **TINY)
    pretrain_calls = epochs_requested(monkeypatch, MaskedPretrainNet)
    finetune_calls = epochs_requested(monkeypatch, NeuralNetClassifier)
    resumed = SPTClassifier(callbacks=[ResumableCheckpoint(ckpt)], **params).fit(X, y)
    assert pretrain_calls == []
    assert finetune_calls == [30 - k]
    assert len(resumed.history_) == 30
    monkeypatch.undo()
    ref = SPTClassifier(**params).fit(X, y)
    assert resumed.history_[:, "train_loss"] == ref.history_[:, "train_loss"]
    np.testing.assert_array_equal(resumed.predict_proba(X), ref.predict_proba(X))


def test_warm_start_continues_fine_tuning(data):
    """A second fit with warm_start=True trains on from the current weights."""
    X, y = data

    class StartWeights(Callback):
        def on_train_begin(self, net, **kwargs):
            self.start_ = {k: v.clone() for k, v in net.module_.state_dict().items()}

    probe = StartWeights()
    clf = SPTClassifier(pretrain_epochs=2, max_epochs=3, warm_start=True, callbacks=[probe],
                        **TINY).fit(X, y)
    pretrain_history = clf.pretrain_history_
    end_of_first = {k: v.clone() for k, v in clf.net_.module_.state_dict().items()}
    net = clf.net_
    clf.fit(X, y)
    assert clf.net_ is net
    assert len(clf.history_) == 6
    assert clf.pretrain_history_ is pretrain_history  # no second pretraining
    for k, v in end_of_first.items():
        torch.testing.assert_close(probe.start_[k], v, rtol=0, atol=0)
    assert any(not torch.equal(v, clf.net_.module_.state_dict()[k])
               for k, v in end_of_first.items())

    cold = SPTClassifier(pretrain_epochs=2, max_epochs=3, callbacks=[probe], **TINY).fit(X, y)
    initial = probe.start_
    end_of_cold = {k: v.clone() for k, v in cold.net_.module_.state_dict().items()}
    cold.fit(X, y)
    assert len(cold.history_) == 3  # without warm start a refit starts over
    for k, v in initial.items():
        torch.testing.assert_close(probe.start_[k], v, rtol=0, atol=0)
    assert any(not torch.equal(probe.start_[k], v) for k, v in end_of_cold.items())
