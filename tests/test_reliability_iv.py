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
from conftest import make_panel, run_script

from sktspt import SPTClassifier, SPTPretrainer, SPTRegressor, load

TINY = dict(
    depth=1, d_model=8, architecture__n_heads=2, architecture__dim_feedforward=8, batch_size=8,
        random_state=0,
    device__threads=1,
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
               {"positional": "learned"}]
    for params in changes:
        clf.set_params(**params)
        np.testing.assert_array_equal(clf.predict_proba(X), before)


# --- checkpoints ---------------------------------------------------------------------------
def test_a_checkpoint_folder_without_its_fingerprint_is_refused(data, tmp_path):
    X, y = data
    SPTClassifier(callbacks__checkpoint_dir=tmp_path, **FAST).fit(X, y)
    os.remove(tmp_path / "run.json")
    clf = SPTClassifier(callbacks__checkpoint_dir=tmp_path, **FAST)
    with pytest.raises(ValueError, match="no run.json"):
        clf.fit(X, 1 - y)
    # and the refusal released the folder: a fit in a fresh folder of the same process
    # and one after deleting the checkpoints both run.
    for entry in os.listdir(tmp_path):
        if entry != ".lock":
            import shutil

            shutil.rmtree(tmp_path / entry)
    SPTClassifier(callbacks__checkpoint_dir=tmp_path, **FAST).fit(X, 1 - y)


def test_a_fit_refused_after_claiming_checkpoint_dir_releases_it(data, tmp_path):
    X, y = data
    clf = SPTClassifier(callbacks__checkpoint_dir=tmp_path, **FAST)
    with pytest.raises(ValueError, match="X_unlabeled has 1 channels"):
        clf.fit(X, y, X_unlabeled=X[:, :1])
    assert "_run_lock" not in vars(clf)
    # not "in use by another fit"
    SPTClassifier(callbacks__checkpoint_dir=tmp_path, **FAST).fit(X, y)


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
    huge = SPTClassifier(**FAST).fit(X, y, sample_weight=np.full(len(y), 1e308))
    ones = SPTClassifier(**FAST).fit(X, y, sample_weight=np.ones(len(y)))
    np.testing.assert_array_equal(huge.predict_proba(X), ones.predict_proba(X))


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


# --- model files ---------------------------------------------------------------------------
def craft(src, dst, meta=None, weights=None):
    """Copy a saved model with its metadata edited by ``meta(dict)``; with ``weights``
    ("random" or "zeros") the weights are new ones of the edited metadata's architecture,
    so that only the stated sizes can refuse the file."""
    import json
    import zipfile

    import torch
    from safetensors.torch import save as save_tensors

    from sktspt.persistence.loading import _build

    with zipfile.ZipFile(src) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    edited = json.loads(members["metadata.json"])
    if meta is not None:
        meta(edited)
    if weights is not None:
        _, net = _build(edited, "cpu", probe=True)
        make = torch.randn if weights == "random" else torch.zeros
        members["weights.safetensors"] = save_tensors(
            {k: make(v.shape).to(v.dtype) for k, v in net.module_.state_dict().items()})
    members["metadata.json"] = json.dumps(edited)
    with zipfile.ZipFile(dst, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, blob in members.items():
            zf.writestr(name, blob)
    return dst


@pytest.fixture(scope="module")
def model_file(fitted, tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "m.sktspt"
    fitted.save(path)
    return path


def test_a_stated_patch_size_is_bounded_before_prediction_allocates(model_file, tmp_path):
    def huge_patch(meta):
        fitted = meta["fitted"]
        fitted.update(patch_size_=10**7, n_timepoints_=10**7, max_tokens_=1,
                      equal_length_=False)
        fitted["encoder_kwargs"].update(patch_size=10**7, max_tokens=1)

    with pytest.raises(ValueError, match="patch_size_=10000000 is more than the 4096 steps"):
        # The weights are those of the stated architecture: only the size can refuse it.
        load(craft(model_file, tmp_path / "patch.sktspt", huge_patch, weights="random"))


@pytest.mark.parametrize("field, value, match", [
    ("n_heads", -2, "n_heads"), ("n_heads", 3, "not divisible by n_heads=3"),
    ("dropout", float("nan"), "dropout"), ("dropout", 1.5, "dropout"),
    ("depth", 0, "depth"), ("d_model", 2**20, "d_model.*more than"),
    ("tokenizer", "pickle", "tokenizer"), ("positional", None, "positional"),
])
def test_architecture_fields_of_a_file_are_validated_at_load(model_file, tmp_path, field,
                                                             value, match):
    def edit(meta):
        meta["fitted"]["encoder_kwargs"][field] = value

    with pytest.raises(ValueError, match=match):
        load(craft(model_file, tmp_path / "arch.sktspt", edit))


def guarded(code: str, timeout: float = 60, memory_mb: int = 3072) -> str:
    """Run ``code`` in a Python process of its own, capped in memory and time (so that a
    regression reads /dev/zero or blocks on a FIFO there, not in the test run); its output,
    or "TIMEOUT"."""
    import subprocess
    import sys

    import sktspt

    prelude = ("import resource\n"
               f"resource.setrlimit(resource.RLIMIT_AS, ({memory_mb} << 20, {memory_mb} << 20))\n")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(
        [os.path.dirname(os.path.dirname(sktspt.__file__)), os.environ.get("PYTHONPATH", "")])}
    try:
        done = subprocess.run([sys.executable, "-c", prelude + code], capture_output=True,
                              text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return "TIMEOUT"
    return done.stdout + done.stderr


REFUSALS = """
from sktspt import load
for call in {calls!r}:
    try:
        exec(call)
        print("DONE:", call)
    except ValueError as exc:
        print("REFUSED:", call, exc)
"""


def refusals(calls, timeout=60) -> list[str]:
    """Each of ``calls`` (Python statements) run in one guarded process, in order: the
    lines ``REFUSED: <call> <message>`` or ``DONE: <call>``."""
    out = guarded(REFUSALS.format(calls=list(calls)), timeout=timeout)
    lines = [line for line in out.splitlines() if line.startswith(("REFUSED:", "DONE:"))]
    assert len(lines) == len(calls), out
    return lines


def test_load_refuses_files_that_are_not_regular(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for line in refusals(['load("/dev/zero")', f"load({str(fifo)!r})"]):  # FIFO: no writer
        assert line.startswith("REFUSED:") and "not a regular file" in line, line


def test_save_refuses_to_replace_what_is_not_a_regular_file(model_file, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    # A FIFO named like a stale temporary file of the target is left alone, not opened.
    stale = tmp_path / ".m.sktspt.0123456789abcdef.tmp"
    os.mkfifo(stale)
    est = f"load({str(model_file)!r})"
    calls = [f"{est}.save({str(fifo)!r})", f"{est}.save({str(tmp_path / 'm.sktspt')!r})"]
    if os.access("/dev/null", os.W_OK):
        calls.append(f'{est}.save("/dev/null")')
    lines = refusals(calls)
    for line in lines[:1] + lines[2:]:
        assert line.startswith("REFUSED:") and "not a regular file" in line, line
    assert lines[1].startswith("DONE:"), lines[1]
    assert os.path.exists(fifo) and not os.path.isfile(fifo)
    assert os.path.exists(stale) and not os.path.isfile("/dev/null")
    load(tmp_path / "m.sktspt")


def test_weights_that_compress_like_a_zip_bomb_are_refused(model_file, tmp_path):
    def wide(meta):
        meta["fitted"]["encoder_kwargs"].update(d_model=512, dim_feedforward=8192)
        meta["params"].update(d_model=512, dim_feedforward=8192)

    # 17 million weights (68 MB) of zeros in a file of less than 100 KB.
    path = craft(model_file, tmp_path / "bomb.sktspt", wide, weights="zeros")
    assert os.path.getsize(path) < 2**17
    with pytest.raises(ValueError, match="implausible weights"):
        load(path)
    load(craft(model_file, tmp_path / "wide.sktspt", wide, weights="random"))  # real ones load


ARCH_FUZZ = r"""
import json, math, resource, sys, zipfile
cap = int(sys.argv[4]) * 2**20
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))  # a runaway allocation fails, not the host
import numpy as np
import torch
from safetensors.torch import save as save_tensors
from sktspt import load
from sktspt.persistence.loading import _build

src, X_path, out_path = sys.argv[1], sys.argv[2], sys.argv[3]
X = np.load(X_path)
with zipfile.ZipFile(src) as zf:
    members = {n: zf.read(n) for n in zf.namelist()}
meta = json.loads(members["metadata.json"])
VALUES = [0, -1, 3, 64, 10**4, 10**7, 2.5, "8", None]


def edited(field, value):
    m = json.loads(json.dumps(meta))
    f, kw = m["fitted"], m["fitted"]["encoder_kwargs"]
    f["equal_length_"] = False  # so that prediction pads short series to the stated sizes
    if field == "patch_size":
        f.update(patch_size_=value, n_timepoints_=value, max_tokens_=1)
        kw.update(patch_size=value, max_tokens=1)
    elif field == "max_tokens":
        f.update(patch_size_=1, n_timepoints_=value, max_tokens_=value)
        kw.update(patch_size=1, max_tokens=value)
    elif field == "n_channels":
        f["n_channels_"] = value
        kw["n_channels"] = value
    else:
        kw[field] = value
        m["params"][field] = value
    return m


def weights_for(m):
    # The weights the stated architecture has (random), when that is buildable and small;
    # otherwise the file's own.
    try:
        _, net = _build(m, "cpu", probe=True)
        state = net.module_.state_dict()
    except Exception:
        return members["weights.safetensors"]
    if sum(v.numel() for v in state.values()) > 2**22:
        return members["weights.safetensors"]
    return save_tensors({k: torch.randn(v.shape).to(v.dtype) for k, v in state.items()})


base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
outcome = {"refused": 0, "loaded": 0, "failures": []}
target = out_path + ".sktspt"
for field in ("patch_size", "max_tokens", "n_channels", "d_model", "depth",
              "dim_feedforward", "n_heads"):
    for value in VALUES:
        m = edited(field, value)
        with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("metadata.json", json.dumps(m))
            zf.writestr("weights.safetensors", weights_for(m))
        try:
            est = load(target)
        except ValueError:
            outcome["refused"] += 1
            continue
        except BaseException as exc:
            outcome["failures"].append(f"load {field}={value!r}: {type(exc).__name__}: {exc}")
            continue
        outcome["loaded"] += 1
        try:
            Xf = X if est.n_channels_ == X.shape[1] else np.repeat(X[:, :1], est.n_channels_, 1)
            assert len(est.predict(Xf)) == len(X)
        except BaseException as exc:
            outcome["failures"].append(f"predict {field}={value!r}: {type(exc).__name__}: "
                                       f"{str(exc)[:200]}")
outcome["peak_mb"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
with open(out_path, "w") as f:
    json.dump(outcome, f)
"""


def test_fuzzed_architecture_fields_are_refused_or_predict_within_a_memory_cap(
        model_file, data, tmp_path):
    X, _ = data
    np.save(tmp_path / "X.npy", X[:2, :, :8])  # short series: padded to the stated sizes
    outcome = run_script(tmp_path, ARCH_FUZZ, model_file, tmp_path / "X.npy", "4096")
    assert outcome["failures"] == [], outcome["failures"]
    assert outcome["refused"] > 20 and outcome["loaded"] > 5, outcome
    assert outcome["peak_mb"] < 1024, outcome


# --- the benchmark ------------------------------------------------------------------------------
BENCH = ["--datasets", "ItalyPowerDemand", "--models", "fake", "--seeds", "2", "--no-progress"]


@pytest.fixture
def bench(monkeypatch):
    from test_benchmark_robust import FAKES

    from sktspt.benchmark import MODELS, main

    monkeypatch.setitem(MODELS, "fake", FAKES["fake"])

    def run(*argv):
        """``main``'s return code, or the usage error's message (a SystemExit)."""
        import contextlib
        import io

        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            try:
                return main([*BENCH, *argv])
            except SystemExit:
                return err.getvalue()

    return run


def test_resume_refuses_rows_fitted_with_other_settings(bench, tmp_path):
    assert bench("--output", str(tmp_path), "--epochs", "2") == 0
    message = bench("--output", str(tmp_path), "--epochs", "50", "--resume")
    assert "fitted with epochs=2, not epochs=50" in message
    assert bench("--output", str(tmp_path), "--epochs", "2", "--resume") == 0


def test_resume_of_a_run_without_settings_checks_its_rows_epochs(bench, tmp_path):
    from sktspt.benchmark.cli import SETTINGS_FILE

    assert bench("--output", str(tmp_path)) == 0
    os.remove(tmp_path / SETTINGS_FILE)  # a run of a version before the file
    text = (tmp_path / "results.csv").read_text().splitlines()
    head = text[0].split(",")
    rows = [line.split(",") for line in text[1:]]
    for row in rows:
        row[head.index("epochs")] = "2"
    (tmp_path / "results.csv").write_text("\n".join([text[0], *map(",".join, rows)]) + "\n")
    assert "fitted with epochs=2, not 50" in bench("--output", str(tmp_path), "--epochs", "50",
                                                   "--resume")


def test_runs_without_resume_never_overwrite_an_earlier_runs_results(bench, tmp_path):
    from sktspt.benchmark.results import read_results

    for seeds in ("1", "2", "3"):
        assert bench("--output", str(tmp_path), "--seeds", seeds) == 0
    assert len(read_results(tmp_path / "results.previous.csv")) == 1
    assert len(read_results(tmp_path / "results.previous.2.csv")) == 2
    assert len(read_results(tmp_path / "results.csv")) == 3


@pytest.mark.parametrize("column, value", [("accuracy", "abc"), ("seed", "x"),
                                           ("seed", ""), ("fit_s", "1.2.3")])
def test_a_malformed_results_row_is_reported_with_its_line_number(bench, tmp_path, column,
                                                                  value):
    assert bench("--output", str(tmp_path)) == 0
    lines = (tmp_path / "results.csv").read_text().splitlines()
    head = lines[0].split(",")
    row = lines[2].split(",")
    row[head.index(column)] = value
    lines[2] = ",".join(row)
    (tmp_path / "results.csv").write_text("\n".join(lines) + "\n")
    message = bench("--output", str(tmp_path), "--resume")
    assert f"results.csv, line 3: {column} is" in message


def test_benchmark_options_that_cannot_work_are_usage_errors(bench, tmp_path):
    assert "--threads 100000 is more than" in bench("--output", str(tmp_path),
                                                    "--threads", "100000")
    assert "is not a folder" in bench("--output", "/dev/null")


def archive_copy(folder, edit_train=None, edit_test=None):
    """ItalyPowerDemand's .ts files (shipped with sktime) as problem ``Foo`` in ``folder``,
    each split's text edited by ``edit_*(str) -> str``."""
    import sktime.datasets

    src = os.path.join(os.path.dirname(sktime.datasets.__file__), "data", "ItalyPowerDemand")
    (folder / "Foo").mkdir()
    for split, edit in (("TRAIN", edit_train), ("TEST", edit_test)):
        with open(os.path.join(src, f"ItalyPowerDemand_{split}.ts")) as f:
            text = f.read()
        (folder / "Foo" / f"Foo_{split}.ts").write_text(edit(text) if edit else text)
    return folder


def benchmark_errors(bench, tmp_path, *argv) -> str:
    """The usage error of a benchmark run, or the errors of its failed rows."""
    from sktspt.benchmark.results import read_results

    outcome = bench(*argv, "--output", str(tmp_path / "out"))
    if isinstance(outcome, str):
        return outcome
    return "\n".join(read_results(tmp_path / "out" / "results.csv")["error"])


def test_a_malformed_ts_file_is_reported_by_name(bench, tmp_path):
    data = archive_copy(tmp_path, edit_train=lambda t: t.replace("@univariate true\n", ""))
    message = benchmark_errors(bench, tmp_path, "--datasets", "Foo", "--data-dir", str(data))
    assert "Foo_TRAIN.ts is not a readable .ts file" in message


def test_a_test_label_that_neither_header_nor_training_split_declares_is_refused(
        bench, tmp_path):
    def relabel(text):
        head, data = text.split("@data\n")
        lines = data.splitlines()
        lines[0] = lines[0].rsplit(":", 1)[0] + ":7"
        return head + "@data\n" + "\n".join(lines) + "\n"

    data = archive_copy(tmp_path, edit_test=relabel)
    message = benchmark_errors(bench, tmp_path, "--datasets", "Foo", "--data-dir", str(data))
    assert "the test split has label(s) ['7'] that neither" in message


# --- errors that name the problem ---------------------------------------------------------------
def test_device_meta_is_refused_when_fit_validates(data):
    X, y = data
    with pytest.raises(ValueError, match="device='meta' holds no data"):
        SPTClassifier(device="meta", **FAST).fit(X, y)


@pytest.mark.parametrize("label, match", [(None, r"no label \(None or NaN\) for 1 series"),
                                          (3, "mixes labels of types")])
def test_labels_that_cannot_be_classes_name_y(data, label, match):
    X, y = data
    labels = np.array(["a", "b"] * (len(y) // 2), dtype=object)
    labels[0] = label
    with pytest.raises(ValueError, match=match):
        SPTClassifier(**FAST).fit(X, labels)


def test_x_unlabeled_longer_than_learned_positions_is_named(data):
    X, y = data
    with pytest.raises(ValueError, match="^X_unlabeled has series of length 32"):
        SPTClassifier(positional="learned", **FAST).fit(
            X, y, X_unlabeled=np.concatenate([X, X], axis=2))
