"""Reliability II (issue 18): no lost files, no silent wrong answers, clear errors.

Each test pins one defect found by an attack on the package: concurrent and killed saves,
threaded fits, extreme values, tiny scales, reused or damaged checkpoint folders, and
crafted model files.
"""

import json
import os
import stat
import subprocess
import sys
import threading
import zipfile

import joblib
import numpy as np
import pytest
import torch
from conftest import make_panel
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from skorch.callbacks import Callback, EpochScoring

import sktspt.persistence.format as persistence_format
import sktspt.persistence.loading as persistence_loading
from sktspt import SPTClassifier, SPTPretrainer, load
from sktspt.data import Normalizer
from sktspt.training.resume import LOCK_FILE, EpochCheckpoint

TINY = dict(
    depth=1, d_model=16, architecture__n_heads=2, architecture__dim_feedforward=16,
        architecture__dropout=0.1, batch_size=8,
    random_state=0,
)
FAST = dict(pretrain_epochs=1, max_epochs=2, **TINY)


@pytest.fixture(scope="module")
def data():
    return make_panel(n=24, t=24)


@pytest.fixture(scope="module")
def fitted(data):
    X, y = data
    return SPTClassifier(**FAST).fit(X, y)


@pytest.fixture(scope="module")
def fitted_by_mode(data):
    X, y = data
    return {m: SPTClassifier(normalize=m, **FAST).fit(X, y) for m in ("global", "instance")}


def folders(path):
    return sorted(os.listdir(path)) if os.path.isdir(path) else []


# --- data loss: saving ---------------------------------------------------------------------
def test_threads_saving_to_one_path_leave_a_good_file(fitted, data, tmp_path):
    X, _ = data
    path = tmp_path / "m.sktspt"
    for _ in range(10):
        errors = []

        def save(errors=errors):
            try:
                fitted.save(path)
            except Exception as exc:  # noqa: BLE001 - collected and reported below
                errors.append(exc)

        threads = [threading.Thread(target=save) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        np.testing.assert_array_equal(load(path).predict_proba(X), fitted.predict_proba(X))
    assert folders(tmp_path) == ["m.sktspt"]


def test_a_save_in_progress_keeps_its_own_temporary_file(fitted, data, tmp_path):
    """A slow save overtaken by a fast one to the same path: both complete intact."""
    X, _ = data
    path = tmp_path / "m"
    written, overtaken = threading.Event(), threading.Event()
    errors = []

    def slow_write(f):
        f.write(b"slow half ")
        written.set()
        overtaken.wait(10)
        f.write(b"and the rest")

    def slow():
        try:
            persistence_format.atomic_write(path, slow_write)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    thread = threading.Thread(target=slow)
    thread.start()
    assert written.wait(10)
    fitted.save(path)  # the fast save, while the slow one is half written
    np.testing.assert_array_equal(load(path).predict(X), fitted.predict(X))
    overtaken.set()
    thread.join()
    assert errors == []
    assert path.read_bytes() == b"slow half and the rest"
    assert folders(tmp_path) == ["m"]


def test_temporary_files_of_killed_saves_are_removed(fitted, tmp_path):
    import fcntl

    stale = tmp_path / ".m.sktspt.0123456789abcdef.tmp"  # a killed save of this version
    legacy = tmp_path / "m.sktspt.999999999.tmp"  # of earlier versions (no such process)
    live = tmp_path / ".m.sktspt.fedcba9876543210.tmp"  # a save still running
    other = tmp_path / ".other.0123456789abcdef.tmp"  # another file's
    for p in (stale, legacy, live, other):
        p.write_bytes(b"partial")
    with open(live, "rb") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        fitted.save(tmp_path / "m.sktspt")
        assert folders(tmp_path) == sorted([live.name, other.name, "m.sktspt"])


def test_save_keeps_the_mode_of_the_file_it_replaces(fitted, tmp_path):
    path = tmp_path / "m"
    path.write_bytes(b"old")
    os.chmod(path, 0o640)
    fitted.save(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    umask = os.umask(0o022)
    os.umask(umask)
    fitted.save(tmp_path / "new")
    assert stat.S_IMODE(os.stat(tmp_path / "new").st_mode) == 0o666 & ~umask


def test_save_through_a_symlink_replaces_its_target_and_keeps_the_link(fitted, data, tmp_path):
    X, _ = data
    target = tmp_path / "models" / "v1.sktspt"
    target.parent.mkdir()
    target.write_bytes(b"old")
    link = tmp_path / "current.sktspt"
    link.symlink_to(target)
    fitted.save(link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    np.testing.assert_array_equal(load(target).predict(X), fitted.predict(X))
    assert folders(target.parent) == ["v1.sktspt"]


def test_checkpoint_writers_do_not_share_a_temporary_folder(data, tmp_path):
    """A checkpoint overtaken while half written (by a second writer) still completes."""
    X, _ = data
    pre = SPTPretrainer(pretrain_epochs=1, **TINY).fit(X)
    checkpoint = EpochCheckpoint(str(tmp_path)).initialize()
    folder = str(tmp_path / "epoch_000001")
    written, overtaken = threading.Event(), threading.Event()
    original = type(pre.net_).save_params
    slow_thread = []

    def save_params(self, **kwargs):
        original(self, **kwargs)
        if threading.current_thread() in slow_thread:
            written.set()
            overtaken.wait(10)

    errors = []

    def slow():
        try:
            checkpoint.write(pre.net_, folder)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    type(pre.net_).save_params = save_params
    try:
        thread = threading.Thread(target=slow)
        slow_thread.append(thread)
        thread.start()
        assert written.wait(10)
        checkpoint.write(pre.net_, folder)
        overtaken.set()
        thread.join()
    finally:
        type(pre.net_).save_params = original
    assert errors == []
    assert folders(tmp_path) == ["epoch_000001"]
    assert checkpoint.epochs_done() == 1  # verifies the checksums too


# --- silent wrong answers: threads ---------------------------------------------------------
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


# --- silent wrong answers: extreme values ---------------------------------------------------
@pytest.mark.parametrize("mode", ["global", "instance"])
def test_a_huge_test_value_gives_finite_probabilities(fitted_by_mode, data, mode):
    X, _ = data
    clf = fitted_by_mode[mode]
    Xt = X[:4].copy()
    Xt[0, 0, 5] = 1e20
    Xt[1, :, :] *= 1e30
    proba = clf.predict_proba(Xt)
    assert np.isfinite(proba).all()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(proba[2:], clf.predict_proba(X[2:4]))


def test_non_finite_output_is_an_error_not_a_label(data):
    X, y = data
    # Linear patches pass 1e20 on to the logits (the conv stem's LayerNorm would absorb it).
    clf = SPTClassifier(normalize=None, tokenizer="patch", **FAST).fit(X, y)
    Xt = X[:3].copy()
    Xt[0, 0, 5] = 1e20
    with pytest.raises(ValueError, match=r"not finite for 1 of 3 series \(rows \[0\]\)"):
        clf.predict(Xt)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    mode=st.sampled_from(["global", "instance"]),
    exponent=st.integers(-40, 38),
    sign=st.sampled_from([-1.0, 1.0]),
    rows=st.lists(st.integers(0, 5), min_size=1, max_size=6),
    frac=st.floats(0.01, 1.0),
)
def test_finite_inputs_of_any_magnitude_give_finite_outputs(
    fitted_by_mode, data, mode, exponent, sign, rows, frac
):
    X, _ = data
    clf = fitted_by_mode[mode]
    Xt = X[:6].astype(np.float64)
    g = np.random.default_rng(exponent + 100)
    hit = np.zeros(Xt.shape, dtype=bool)
    hit[rows] = g.random(Xt[rows].shape) < frac
    Xt[hit] = sign * min(10.0**exponent, 3.4e38) * g.random(hit.sum())
    proba = clf.predict_proba(Xt.astype(np.float32))
    assert np.isfinite(proba).all()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.isfinite(clf.transform(Xt.astype(np.float32))).all()


# --- silent wrong answers: scale ------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(
    mode=st.sampled_from(["global", "instance"]),
    exponent=st.integers(-12, 12),
    constant_channel=st.booleans(),
    seed=st.integers(0, 3),
)
def test_normalisation_is_invariant_to_units(mode, exponent, constant_channel, seed):
    X, _ = make_panel(n=8, c=2, t=16, seed=seed)
    if constant_channel:
        X[:, 1] = 0.25
    X[0, 0, 3:6] = np.nan
    scaled = (X.astype(np.float64) * 10.0**exponent).astype(np.float32)
    ref = Normalizer(mode).fit(X).transform(X)
    out = Normalizer(mode).fit(scaled).transform(scaled)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    assert np.nanstd(out[:, 0]) > 0.5  # the signal is kept, not flattened by the floor


@pytest.mark.parametrize("normalize", ["global", "instance"])
def test_predictions_do_not_depend_on_the_data_units(data, normalize):
    X, y = data
    params = dict(normalize=normalize, pretrain_epochs=0, max_epochs=3, **TINY)
    ref = SPTClassifier(**params).fit(X, y).predict_proba(X)
    for scale in (1e-12, 1e12):
        Xs = (X.astype(np.float64) * scale).astype(np.float32)
        proba = SPTClassifier(**params).fit(Xs, y).predict_proba(Xs)
        np.testing.assert_allclose(proba, ref, atol=1e-3)


# --- silent wrong answers: reused checkpoint folders ----------------------------------------
def test_checkpoint_of_a_fit_with_another_pretrainer_is_refused(data, tmp_path):
    from sklearn.frozen import FrozenEstimator

    X, y = data
    first, second = (SPTPretrainer(pretrain_epochs=1, **{**TINY, "random_state": s}).fit(X)
                     for s in (0, 1))
    params = dict(pretrain_epochs=0, max_epochs=1, callbacks__checkpoint_dir=tmp_path, **TINY)
    SPTClassifier(pretrainer=FrozenEstimator(first), **params).fit(X, y)
    with pytest.raises(ValueError, match="different fit.*pretrainer"):
        SPTClassifier(pretrainer=FrozenEstimator(second), **params).fit(X, y)
    # The same pretrainer resumes (here: reloads the finished fit).
    SPTClassifier(pretrainer=FrozenEstimator(first), **params).fit(X, y)


def test_checkpoint_of_a_fit_with_other_callbacks_is_refused(data, tmp_path):
    X, y = data
    params = dict(pretrain_epochs=0, max_epochs=1, callbacks__checkpoint_dir=tmp_path, **TINY)
    SPTClassifier(callbacks=[EpochScoring("accuracy")], **params).fit(X, y)
    SPTClassifier(callbacks=[EpochScoring("accuracy")], **params).fit(X, y)
    with pytest.raises(ValueError, match="different fit.*callbacks"):
        SPTClassifier(callbacks=[EpochScoring("f1_macro")], **params).fit(X, y)
    with pytest.raises(ValueError, match="different fit.*callbacks"):
        SPTClassifier(**params).fit(X, y)


class Opaque(Callback):
    """A callback whose parameter cannot be fingerprinted (a lambda)."""

    def __init__(self, fn=None):
        self.fn = fn


def test_resume_is_refused_when_a_callback_cannot_be_fingerprinted(data, tmp_path):
    X, y = data
    params = dict(pretrain_epochs=0, max_epochs=1, callbacks__checkpoint_dir=tmp_path, **TINY)
    SPTClassifier(callbacks=[Opaque(lambda net: None)], **params).fit(X, y)
    with pytest.raises(ValueError, match=r"callbacks\[0\]\['fn'\] cannot be fingerprinted"):
        SPTClassifier(callbacks=[Opaque(lambda net: None)], **params).fit(X, y)


def test_checkpoint_of_a_fit_with_another_random_state_seed_is_refused(data, tmp_path):
    X, y = data
    params = dict(pretrain_epochs=0, max_epochs=1, callbacks__checkpoint_dir=tmp_path,
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
    params = dict(pretrain_epochs=1, max_epochs=1, callbacks__checkpoint_dir=tmp_path, **TINY)
    with pytest.raises(FloatingPointError):
        SPTClassifier(**{**params, "lr": 1e6}).fit(X, y)
    clf = SPTClassifier(**params).fit(X, y)  # no checkpoint was written: nothing to resume
    assert np.isfinite(clf.predict_proba(X)).all()
    assert folders(tmp_path / "finetune") == ["final"]


def test_a_loaded_model_does_not_write_into_its_checkpoint_dir(data, tmp_path):
    from sklearn.model_selection import cross_val_score

    X, y = data
    ckpt = tmp_path / "ckpt"
    SPTClassifier(callbacks__checkpoint_dir=ckpt, **FAST).fit(X, y).save(tmp_path / "m")
    before = sorted(str(p) for p in ckpt.rglob("*"))
    loaded = load(tmp_path / "m")
    assert loaded.callbacks__checkpoint_dir is None
    scores = cross_val_score(loaded, X, y, cv=2, error_score="raise")
    assert np.isfinite(scores).all()
    assert sorted(str(p) for p in ckpt.rglob("*")) == before


# --- unclear errors: damaged checkpoints, full disks, concurrent fits -----------------------
def interrupted_fit(X, y, path, monkeypatch, epoch=2):
    """A fine-tuning interrupted in ``epoch``: its folder holds epoch ``epoch - 1``."""
    from sktspt.training import AugmentedNetClassifier

    original = AugmentedNetClassifier.train_step

    def step(self, batch, **kwargs):
        if len(self.history) == epoch:
            raise KeyboardInterrupt
        return original(self, batch, **kwargs)

    params = dict(pretrain_epochs=0, max_epochs=3, callbacks__checkpoint_dir=path, **TINY)
    with monkeypatch.context() as m:
        m.setattr(AugmentedNetClassifier, "train_step", step)
        with pytest.raises(KeyboardInterrupt):
            SPTClassifier(**params).fit(X, y)
    return params, path / "finetune" / f"epoch_{epoch - 1:06d}"


def flip_exponent_bit(path):
    blob = bytearray(path.read_bytes())
    blob[-10] ^= 0x40
    path.write_bytes(bytes(blob))


@pytest.mark.parametrize(
    "name, damage",
    [
        ("params.pt", lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])),
        ("optimizer.pt", lambda p: p.write_bytes(b"")),
        ("params.pt", flip_exponent_bit),
        ("rng.safetensors", lambda p: p.unlink()),
    ],
    ids=["truncated", "empty", "bit flip", "missing"],
)
def test_damaged_checkpoint_file_is_named(data, tmp_path, monkeypatch, name, damage):
    X, y = data
    params, folder = interrupted_fit(X, y, tmp_path, monkeypatch)
    damage(folder / name)
    with pytest.raises(ValueError, match=f"checkpoint file '.*{name}' is (damaged|unreadable)"):
        SPTClassifier(**params).fit(X, y)


def test_full_disk_while_checkpointing_is_reported_and_keeps_the_last_epoch(
    data, tmp_path, monkeypatch
):
    X, y = data
    params = dict(pretrain_epochs=0, max_epochs=3, callbacks__checkpoint_dir=tmp_path, **TINY)
    ref = SPTClassifier(**{**params, "callbacks__checkpoint_dir": None}).fit(X, y)
    real_save = torch.save
    calls = []

    def full_disk(obj, f, *args, **kwargs):
        calls.append(f)
        if len(calls) > 3:  # epoch 1 (params, optimizer, criterion) fits on the disk
            raise RuntimeError("basic_ios::clear: iostream error")
        return real_save(obj, f, *args, **kwargs)

    monkeypatch.setattr(torch, "save", full_disk)
    with pytest.raises(OSError, match="epoch 2 .*disk is probably full.*epoch_000001' is intact"):
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
        with pytest.raises(RuntimeError, match=f"in use by another fit \\(process {holder.pid}\\)"):
            SPTClassifier(callbacks__checkpoint_dir=tmp_path, **FAST).fit(X, y)
        assert not (tmp_path / "run.json").exists()
    finally:
        holder.communicate("", timeout=30)
    SPTClassifier(callbacks__checkpoint_dir=tmp_path, **FAST).fit(X, y)  # free again


# --- crafted model files --------------------------------------------------------------------
def craft(src, dst, meta=None, weights=None, extra=()):
    """Copy a saved model with its metadata edited by ``meta(dict)`` (or replaced by bytes)."""
    with zipfile.ZipFile(src) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    if meta is not None:
        edited = json.loads(members["metadata.json"])
        out = meta(edited)
        members["metadata.json"] = out if isinstance(out, bytes) else json.dumps(edited)
    if weights is not None:
        members["weights.safetensors"] = weights(members["weights.safetensors"])
    with zipfile.ZipFile(dst, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, blob in [*members.items(), *extra]:
            zf.writestr(name, blob)


def set_in(*keys, value):
    def edit(meta):
        node = meta
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value

    return edit


@pytest.fixture(scope="module")
def saved(fitted, tmp_path_factory):
    path = tmp_path_factory.mktemp("saved") / "m.sktspt"
    fitted.save(path)
    return path


@pytest.fixture(scope="module")
def saved_pretrainer(data, tmp_path_factory):
    X, _ = data
    path = tmp_path_factory.mktemp("saved") / "pre.sktspt"
    SPTPretrainer(pretrain_epochs=1, **TINY).fit(X).save(path)
    return path


CRAFTED = {
    "std 0": (set_in("fitted", "normalizer", "std", value=[0.0, 1.0]), "std must be positive"),
    "std negative": (set_in("fitted", "normalizer", "std", value=[-1.0, 1.0]),
                     "std must be positive"),
    "std NaN": (set_in("fitted", "normalizer", "std", value=[float("nan"), 1.0]),
                "std is not finite"),
    "std of too few channels": (set_in("fitted", "normalizer", "std", value=[1.0]),
                                "one per channel"),
    "duplicate classes": (set_in("fitted", "classes", "values", value=[0, 0]),
                          "distinct and sorted"),
    "unsorted classes": (set_in("fitted", "classes", "values", value=[1, 0]),
                         "distinct and sorted"),
    "huge feed-forward": (set_in("fitted", "encoder_kwargs", "dim_feedforward", value=2**40),
                          "dim_feedforward.*more than the 65536"),
    "huge learned positions": (
        lambda m: [set_in("params", "positional", value="learned")(m),
                   set_in("fitted", "n_timepoints_", value=2**31)(m),
                   set_in("fitted", "max_tokens_", value=2**31 // m["fitted"]["patch_size_"])(m),
                   set_in("fitted", "encoder_kwargs", "max_tokens",
                          value=2**31 // m["fitted"]["patch_size_"])(m),
                   set_in("fitted", "encoder_kwargs", "positional", value="learned")(m)],
        "more than the 4096 tokens"),
    "device meta": (set_in("params", "device", value="meta"), "meta"),
    "device xla": (set_in("params", "device", value="xla"), "not a readable|invalid metadata"),
    "deep nesting": (lambda m: b"[" * 200_000 + b"]" * 200_000, "not a readable"),
    "callbacks set": (set_in("params", "callbacks", value=["x"]), "callbacks must be None"),
    "unknown augment_": (set_in("fitted", "augment_", value="warp"), "augment_ must be"),
    "augment_ auto": (set_in("fitted", "augment_", value="auto"), "augment_ must be"),
    "malformed evidence": (set_in("fitted", "augment_evidence_", value={"alignment_gain": "x"}),
                           "augment_evidence_ is malformed"),
    "evidence not finite": (
        set_in("fitted", "augment_evidence_",
               value={"alignment_gain": 0.1, "holdout_accuracy": {"roll": float("nan")}}),
        "augment_evidence_ is malformed|invalid metadata|not a readable"),
}


@pytest.mark.parametrize("kind", list(CRAFTED))
def test_crafted_model_files_are_refused(saved, tmp_path, kind):
    edit, message = CRAFTED[kind]
    craft(saved, tmp_path / "bad", meta=edit)
    with pytest.raises(ValueError, match=message):
        load(tmp_path / "bad")


def test_duplicate_metadata_member_is_refused(saved, tmp_path):
    evil = json.loads(zipfile.ZipFile(saved).read("metadata.json"))
    evil["fitted"]["classes"]["values"] = ["a", "b"]
    with pytest.warns(UserWarning, match="Duplicate name"):
        craft(saved, tmp_path / "bad", extra=[("metadata.json", json.dumps(evil))])
    with pytest.raises(ValueError, match="occur more than once"):
        load(tmp_path / "bad")


def test_pretrainer_relabelled_as_classifier_is_refused(saved_pretrainer, tmp_path):
    craft(saved_pretrainer, tmp_path / "bad",
          meta=set_in("estimator", value="SPTClassifier"))
    with pytest.raises(ValueError, match="must hold classes"):
        load(tmp_path / "bad")


def test_oversized_metadata_is_refused_unread(saved, tmp_path):
    def pad(meta):
        text = json.dumps(meta)
        return (text + " " * (persistence_format.MAX_METADATA_BYTES + 1 - len(text))).encode()

    craft(saved, tmp_path / "bad", meta=pad)
    with pytest.raises(ValueError, match="more than the"):
        load(tmp_path / "bad")


def test_architecture_is_checked_before_anything_is_allocated(saved, tmp_path, monkeypatch):
    craft(saved, tmp_path / "bad",
          meta=set_in("fitted", "encoder_kwargs", "dim_feedforward", value=2**16))
    builds = []
    original = persistence_loading._build

    def spy(meta, device, probe=False):
        builds.append(probe)
        return original(meta, device, probe=probe)

    monkeypatch.setattr(persistence_loading, "_build", spy)
    with pytest.raises(ValueError, match="do not fit the architecture.*needs F32\\[65536"):
        load(tmp_path / "bad")
    assert builds == [True]  # only the meta-device probe, which allocates nothing


def test_a_class_weight_mapping_is_fingerprinted_and_resumes(data, tmp_path):
    X, y = data
    params = dict(pretrain_epochs=0, max_epochs=1, callbacks__checkpoint_dir=tmp_path, **TINY)
    first = SPTClassifier(class_weight={0: 1.0, 1: 2.0}, **params).fit(X, y)
    again = SPTClassifier(class_weight={1: 2.0, 0: 1.0}, **params).fit(X, y)  # reloaded
    np.testing.assert_array_equal(again.predict_proba(X), first.predict_proba(X))
    with pytest.raises(ValueError, match="different fit.*class_weight"):
        SPTClassifier(class_weight={0: 1.0, 1: 3.0}, **params).fit(X, y)


def test_weights_longer_than_their_header_describes_are_refused(saved, tmp_path):
    craft(saved, tmp_path / "bad", weights=lambda w: w + b"\0" * 4096)
    with pytest.raises(ValueError, match="corrupted weights.*header describes"):
        load(tmp_path / "bad")
