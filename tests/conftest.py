"""One torch thread keeps the suite fast on 2 cores (oversubscription costs ~10x)."""

import importlib.util
import json
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

torch.set_num_threads(1)


ROOT = Path(__file__).resolve().parents[1]

#: The fast subset, ``python -m pytest -m "not slow"``, leaves these out: whole files that
#: start processes, run scripts or check every estimator convention, and single tests of
#: several seconds each (measured with ``--durations``). ``tests/test_entry_points.py``
#: keeps every public entry point in the fast subset; CI runs the whole suite.
SLOW_FILES = frozenset({
    "test_sklearn_checks.py", "test_docs.py", "test_speed.py",
    "test_benchmark_robust.py", "test_benchmark_labels.py", "test_benchmark_regression.py",
    "test_distributed.py", "test_resume.py", "test_reproducibility.py",
    "test_load_memory_caps.py", "test_cost_script.py", "test_compress_script.py",
    "test_ridge_probe_script.py", "test_rotation_probe_script.py",
    "test_sweep_script.py", "test_tune_script.py", "test_extremes_probe.py",
    "test_recipes.py",
})
SLOW_TESTS = frozenset({
    "test_estimators.py::test_defaults_hold_at_the_archive_extremes",
    "test_estimators.py::test_pretrainer_loss_falls_well_below_first_epoch",
    "test_estimators.py::test_beats_chance_on_gunpoint",
    "test_unequal_length.py::test_plaid_subset_from_nested_pandas",
    "test_unequal_length.py::test_japanese_vowels_from_nested_pandas",
    "test_bad_input.py::test_any_labels_fail_cleanly_or_work",
    "test_bad_input.py::test_predict_on_more_series_than_a_batch_matches_chunks",
    "test_bad_input.py::test_any_constant_level_stays_finite",
    "test_params.py::test_every_parameter_is_validated_at_fit",
    "test_sktime.py::test_sktime_check_estimator",
    "test_sktime.py::test_core_import_does_not_load_sktime_base_classes",
    "test_benchmark.py::test_tiny_run_writes_csv_md_png_and_docs",
    "test_benchmark.py::test_module_runs_as_a_script_with_process_workers",
    "test_precision.py::test_bfloat16_accuracy_within_seed_noise_of_float32",
    "test_precision.py::test_bfloat16_really_autocasts",
    "test_rocket_tokenizer.py::"
    "test_classifier_fits_draws_thresholds_from_its_data_and_is_reproducible",
    "test_thread_safety.py::test_predict_proba_from_many_threads_equals_serial",
    "test_thread_safety.py::test_transform_from_many_threads_equals_serial",
    "test_thread_safety.py::"
    "test_a_fitted_or_loaded_module_is_in_evaluation_mode_and_training_still_trains",
    "test_thread_safety.py::test_fits_with_mixed_n_threads_in_threads_equal_serial_fits",
    "test_checkpoint_folders.py::"
    "test_a_reused_checkpoint_dir_with_flipped_labels_names_the_labels",
})


def pytest_collection_modifyitems(config, items):
    slow = pytest.mark.slow
    for item in items:
        name = f"{item.path.name}::{item.originalname}"
        if item.path.name in SLOW_FILES or name in SLOW_TESTS:
            item.add_marker(slow)


def load_benchmark(name: str):
    """Import ``benchmarks/<name>.py`` (a script folder, not a package) as a module.

    One-off probes live in ``benchmarks/probes/``: pass ``"probes/<name>"``.
    """
    spec = importlib.util.spec_from_file_location(f"sktspt_bench_{name.replace('/', '_')}",
                                                  ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def make_panel(n=40, c=2, t=48, seed=0, n_classes=2):
    """Synthetic classes: a sine whose frequency depends on the class, plus noise."""
    g = np.random.default_rng(seed)
    y = np.arange(n) % n_classes
    tt = np.linspace(0, 1, t)
    freq = 2 + 3 * y[:, None, None]
    phase = g.uniform(0, 2 * np.pi, size=(n, c, 1))
    X = np.sin(2 * np.pi * freq * tt[None, None, :] + phase) + 0.1 * g.normal(size=(n, c, t))
    return X.astype(np.float32), y


@pytest.fixture
def panel():
    return make_panel()


def make_shifted_noise(n=24, c=2, t=12, seed=0):
    """Two classes of Gaussian noise, the second shifted up by 1 in its first channel."""
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, c, t))
    y = np.arange(n) % 2
    X[y == 1, 0] += 1.0
    return X, y


# --- tiny networks and the module fixtures that fit them --------------------------------------
# The fixtures are made by factories that a test file assigns (``data = data_fixture(...)``)
# rather than defined here, since the files fit different data with different settings, and
# a ``data`` or ``fitted`` defined here would reach every test file.

#: A one-layer network, ``d_model`` 16, dropout 0.1: small enough for quick fits.
TINY_NET = dict(
    depth=1, d_model=16, architecture__n_heads=2, architecture__dim_feedforward=16,
    architecture__dropout=0.1, batch_size=8, random_state=0,
)
#: ``TINY_NET`` pretrained for one epoch and fine-tuned for two.
FAST_FIT = dict(pretrain_epochs=1, max_epochs=2, **TINY_NET)
#: Narrower (``d_model`` 8) with the default dropout, on one torch thread.
NARROW_NET_ONE_THREAD = dict(
    depth=1, d_model=8, architecture__n_heads=2, architecture__dim_feedforward=8, batch_size=8,
    random_state=0, device__threads=1,
)
#: ``NARROW_NET_ONE_THREAD`` pretrained for one epoch and fine-tuned for one.
ONE_EPOCH_FIT = dict(pretrain_epochs=1, max_epochs=1, **NARROW_NET_ONE_THREAD)
#: Narrower (``d_model`` 8) without dropout; the thread count is the estimator's default.
NARROW_NET_NO_DROPOUT = dict(
    depth=1, d_model=8, architecture__n_heads=2, architecture__dim_feedforward=8,
    architecture__dropout=0.0, random_state=0, batch_size=8,
)


def data_fixture(make=make_panel, **kwargs):
    """A module-scoped fixture of ``make(**kwargs)``, made once in each test file that
    names it: ``data = data_fixture(n=24, t=24)``."""

    @pytest.fixture(scope="module")
    def data():
        return make(**kwargs)

    return data


def fitted_fixture(settings):
    """A module-scoped fixture of an ``SPTClassifier(**settings)`` fitted to the test
    file's ``data``, once in each test file that names it: ``fitted = fitted_fixture(FAST_FIT)``."""

    @pytest.fixture(scope="module")
    def fitted(data):
        from sktspt import SPTClassifier

        X, y = data
        return SPTClassifier(**settings).fit(X, y)

    return fitted


def model_file_fixture():
    """A module-scoped fixture of the test file's ``fitted`` saved to a temporary file, once in
    each test file that names it: ``model_file = model_file_fixture()``."""

    @pytest.fixture(scope="module")
    def model_file(fitted, tmp_path_factory):
        path = tmp_path_factory.mktemp("model") / "m.sktspt"
        fitted.save(path)
        return path

    return model_file


def craft(src, dst, meta=None, weights=None, extra=()):
    """Copy a saved model with its metadata edited by ``meta(dict)`` (or given as bytes),
    its weights by ``weights(bytes)``, and ``extra`` members added."""
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
    return dst


class Majority:
    """A benchmark model that predicts the most frequent training label (instant fits)."""

    def __init__(self, seed=0):
        self.seed = seed

    def fit(self, X, y):
        labels, counts = np.unique(np.asarray(y), return_counts=True)
        self.label_ = labels[np.argmax(counts)]
        return self

    def predict(self, X):
        return np.full(len(X), self.label_)


#: Script text for the fuzzing scripts run by :func:`run_script`: ``try_file(target, meta,
#: weights, label, use, outcome)`` writes a model file of ``meta`` and ``weights``, loads it
#: and calls ``use(estimator)``, counting a ``ValueError`` at load as refused and any other
#: error, at load or in ``use``, as a failure.
TRY_FILE = r"""
import json, zipfile
from sktspt import load


def try_file(target, meta, weights, label, use, outcome):
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("metadata.json", json.dumps(meta))
        zf.writestr("weights.safetensors", weights)
    try:
        est = load(target)
    except ValueError:
        outcome["refused"] += 1
        return
    except BaseException as exc:
        outcome["failures"].append(f"load {label}: {type(exc).__name__}: {str(exc)[:200]}")
        return
    outcome["loaded"] += 1
    try:
        use(est)
    except BaseException as exc:
        outcome["failures"].append(f"predict {label}: {type(exc).__name__}: {str(exc)[:200]}")
"""


def run_script(tmp_path: Path, code: str, *args: str) -> dict:
    """Run ``code`` as a script in a process of its own (so that its peak memory is its own),
    with this checkout's ``sktspt`` and one thread; it writes JSON to the path passed as its
    third argument after ``*args[:2]``, which is returned."""
    import json
    import os
    import subprocess

    import sktspt

    script, out = tmp_path / "script.py", tmp_path / "outcome.json"
    script.write_text(code)
    argv = [sys.executable, str(script), *map(str, args[:2]), str(out), *map(str, args[2:])]
    path = os.pathsep.join([os.path.dirname(os.path.dirname(sktspt.__file__)),
                            os.environ.get("PYTHONPATH", "")])
    subprocess.run(argv, check=True, timeout=600,
                   env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": path})
    return json.loads(out.read_text())
