"""A checkpoint folder (``ResumableCheckpoint``) holds the checkpoints of one fit.

A fit that differs (pretrainer, callbacks, RandomState seed, class weights, labels, data)
is refused naming what differs, and one that cannot be fingerprinted is refused on resume;
a first fit that failed before any checkpoint does not claim the folder; a loaded model
writes no checkpoints; a damaged checkpoint file is named; a full disk is reported with
the last epoch kept; and a second process cannot use the folder while a fit holds it.
"""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from conftest import FAST_FIT as FAST
from conftest import TINY_NET as TINY
from conftest import data_fixture
from skorch.callbacks import Callback, EpochScoring

from sktspt import ResumableCheckpoint, SPTClassifier, SPTPretrainer, load
from sktspt.claim import LOCK_FILE

data = data_fixture(n=24, t=24)


def folders(path):
    return sorted(os.listdir(path)) if os.path.isdir(path) else []


# --- a folder of another fit ----------------------------------------------------------------------
def test_checkpoint_of_a_fit_with_another_pretrainer_is_refused(data, tmp_path):
    from sklearn.frozen import FrozenEstimator

    X, y = data
    first, second = (SPTPretrainer(pretrain_epochs=1, **{**TINY, "random_state": s}).fit(X)
                     for s in (0, 1))
    params = dict(pretrain_epochs=0, max_epochs=1,
                  callbacks=[ResumableCheckpoint(tmp_path)], **TINY)
    SPTClassifier(pretrainer=FrozenEstimator(first), **params).fit(X, y)
    with pytest.raises(ValueError, match="different fit.*pretrainer"):
        SPTClassifier(pretrainer=FrozenEstimator(second), **params).fit(X, y)
    # The same pretrainer resumes (here: reloads the finished fit).
    SPTClassifier(pretrainer=FrozenEstimator(first), **params).fit(X, y)


def test_checkpoint_of_a_fit_with_other_callbacks_is_refused(data, tmp_path):
    X, y = data
    params = dict(pretrain_epochs=0, max_epochs=1, **TINY)
    ckpt = ResumableCheckpoint(tmp_path)
    SPTClassifier(callbacks=[EpochScoring("accuracy"), ckpt], **params).fit(X, y)
    SPTClassifier(callbacks=[EpochScoring("accuracy"), ckpt], **params).fit(X, y)
    with pytest.raises(ValueError, match="different fit.*callbacks"):
        SPTClassifier(callbacks=[EpochScoring("f1_macro"), ckpt], **params).fit(X, y)
    with pytest.raises(ValueError, match="different fit.*callbacks"):
        SPTClassifier(callbacks=[ckpt], **params).fit(X, y)


class Opaque(Callback):
    """A callback whose parameter cannot be fingerprinted (a lambda)."""

    def __init__(self, fn=None):
        self.fn = fn


def test_resume_is_refused_when_a_callback_cannot_be_fingerprinted(data, tmp_path):
    X, y = data
    params = dict(pretrain_epochs=0, max_epochs=1, **TINY)
    ckpt = ResumableCheckpoint(tmp_path)
    SPTClassifier(callbacks=[Opaque(lambda net: None), ckpt], **params).fit(X, y)
    with pytest.raises(ValueError, match=r"callbacks\[0\]\['fn'\] cannot be fingerprinted"):
        SPTClassifier(callbacks=[Opaque(lambda net: None), ckpt], **params).fit(X, y)


def test_checkpoint_of_a_fit_with_another_random_state_seed_is_refused(data, tmp_path):
    X, y = data
    params = dict(pretrain_epochs=0, max_epochs=1, callbacks=[ResumableCheckpoint(tmp_path)],
                  **{**TINY, "random_state": np.random.RandomState(0)})
    first = SPTClassifier(**params).fit(X, y)
    params["random_state"] = np.random.RandomState(1)
    with pytest.raises(ValueError, match="different fit.*random_state"):
        SPTClassifier(**params).fit(X, y)
    params["random_state"] = np.random.RandomState(0)  # the same seed again: resumes
    again = SPTClassifier(**params).fit(X, y)
    np.testing.assert_array_equal(again.predict_proba(X), first.predict_proba(X))


def test_a_failed_first_fit_does_not_claim_the_folder(data, tmp_path):
    X, y = data
    params = dict(pretrain_epochs=1, max_epochs=1,
                  callbacks=[ResumableCheckpoint(tmp_path)], **TINY)
    with pytest.raises(FloatingPointError):
        SPTClassifier(**{**params, "lr": 1e6}).fit(X, y)
    clf = SPTClassifier(**params).fit(X, y)  # no checkpoint was written: nothing to resume
    assert np.isfinite(clf.predict_proba(X)).all()
    assert folders(tmp_path / "finetune") == ["final"]


def test_a_loaded_model_does_not_write_into_its_checkpoint_dir(data, tmp_path):
    from sklearn.model_selection import cross_val_score

    X, y = data
    ckpt = tmp_path / "ckpt"
    SPTClassifier(callbacks=[ResumableCheckpoint(ckpt)], **FAST).fit(X, y).save(tmp_path / "m")
    before = sorted(str(p) for p in ckpt.rglob("*"))
    loaded = load(tmp_path / "m")
    assert loaded.callbacks is None
    scores = cross_val_score(loaded, X, y, cv=2, error_score="raise")
    assert np.isfinite(scores).all()
    assert sorted(str(p) for p in ckpt.rglob("*")) == before


def test_a_class_weight_mapping_is_fingerprinted_and_resumes(data, tmp_path):
    X, y = data
    params = dict(pretrain_epochs=0, max_epochs=1,
                  callbacks=[ResumableCheckpoint(tmp_path)], **TINY)
    first = SPTClassifier(class_weight={0: 1.0, 1: 2.0}, **params).fit(X, y)
    again = SPTClassifier(class_weight={1: 2.0, 0: 1.0}, **params).fit(X, y)  # reloaded
    np.testing.assert_array_equal(again.predict_proba(X), first.predict_proba(X))
    with pytest.raises(ValueError, match="different fit.*class_weight"):
        SPTClassifier(class_weight={0: 1.0, 1: 3.0}, **params).fit(X, y)


def test_a_reused_checkpoint_dir_with_flipped_labels_names_the_labels(data, tmp_path):
    X, y = data
    params = dict(pretrain_epochs=1, max_epochs=1,
                  callbacks=[ResumableCheckpoint(tmp_path)], **TINY)
    SPTClassifier(**params).fit(X, y)
    with pytest.raises(ValueError, match=r"differs in: labels\)"):
        SPTClassifier(**params).fit(X, 1 - y)
    with pytest.raises(ValueError, match=r"differs in: data\)"):
        SPTClassifier(**params).fit(X + 1.0, y)


def test_a_checkpoint_folder_of_sktspt_0_4_is_refused_naming_the_version(data, tmp_path):
    X, y = data
    (tmp_path / "finetune" / "epoch_000001").mkdir(parents=True)
    (tmp_path / "run.json").write_text('{"format": 2, "fingerprint": {}, "seed": 0}')
    with pytest.raises(ValueError, match="written by sktspt 0.4; resume it with sktspt 0.4"):
        SPTClassifier(callbacks=[ResumableCheckpoint(tmp_path)], **FAST).fit(X, y)


# --- damaged checkpoints, full disks, concurrent fits ---------------------------------------------
def interrupted_fit(X, y, path, monkeypatch, epoch=2):
    """A fine-tuning interrupted in ``epoch``: its folder holds epoch ``epoch - 1``."""
    from sktspt.training import AugmentedNetClassifier

    original = AugmentedNetClassifier.train_step

    def step(self, batch, **kwargs):
        if len(self.history) == epoch:
            raise KeyboardInterrupt
        return original(self, batch, **kwargs)

    params = dict(pretrain_epochs=0, max_epochs=3, callbacks=[ResumableCheckpoint(path)], **TINY)
    with monkeypatch.context() as m:
        m.setattr(AugmentedNetClassifier, "train_step", step)
        with pytest.raises(KeyboardInterrupt):
            SPTClassifier(**params).fit(X, y)
    return params, path / "finetune" / f"epoch_{epoch - 1:06d}"


@pytest.mark.parametrize(
    "name, damage",
    [
        ("params.pt", lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])),
        ("optimizer.pt", lambda p: p.write_bytes(b"")),
        ("state.pt", lambda p: p.unlink()),
    ],
    ids=["truncated", "empty", "missing"],
)
def test_damaged_checkpoint_file_is_named(data, tmp_path, monkeypatch, name, damage):
    X, y = data
    params, folder = interrupted_fit(X, y, tmp_path, monkeypatch)
    damage(folder / name)
    with pytest.raises(ValueError, match=f"checkpoint file '.*{name}' is missing or damaged"):
        SPTClassifier(**params).fit(X, y)


def test_full_disk_while_checkpointing_is_reported_and_keeps_the_last_epoch(
    data, tmp_path, monkeypatch
):
    X, y = data
    params = dict(pretrain_epochs=0, max_epochs=3,
                  callbacks=[ResumableCheckpoint(tmp_path)], **TINY)
    ref = SPTClassifier(**{**params, "callbacks": None}).fit(X, y)
    real_save = torch.save
    calls = []

    def full_disk(obj, f, *args, **kwargs):
        calls.append(f)
        if len(calls) > 4:  # epoch 1 (params, optimizer, criterion, state) fits on the disk
            raise RuntimeError("basic_ios::clear: iostream error")
        return real_save(obj, f, *args, **kwargs)

    monkeypatch.setattr(torch, "save", full_disk)
    with pytest.raises(OSError, match="epoch 2 .*disk full.*epoch_000001' is kept"):
        SPTClassifier(**params).fit(X, y)
    assert folders(tmp_path / "finetune") == ["epoch_000001"]
    monkeypatch.setattr(torch, "save", real_save)
    resumed = SPTClassifier(**params).fit(X, y)
    np.testing.assert_array_equal(resumed.predict_proba(X), ref.predict_proba(X))


def test_a_second_process_cannot_use_the_same_checkpoint_dir(data, tmp_path):
    X, y = data
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import fcntl, os, sys, time\n"
         f"fd = os.open({str(tmp_path / LOCK_FILE)!r}, os.O_RDWR | os.O_CREAT)\n"
         "fcntl.flock(fd, fcntl.LOCK_EX)\n"
         "os.write(fd, str(os.getpid()).encode())\n"
         "print('locked', flush=True)\n"
         "sys.stdin.read()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(RuntimeError, match="in use by another fit"):
            SPTClassifier(callbacks=[ResumableCheckpoint(tmp_path)], **FAST).fit(X, y)
        assert not (tmp_path / "run.json").exists()
    finally:
        holder.communicate("", timeout=30)
    SPTClassifier(callbacks=[ResumableCheckpoint(tmp_path)], **FAST).fit(X, y)  # free again
