"""The benchmark survives what long runs meet: dead workers, failing jobs, kills, resumes.

The models here are fakes (a majority-class classifier, one that kills its own process,
one that raises) so that each test takes seconds; loky's workers import them from this
module by name.
"""

import faulthandler
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sktspt import benchmark
from sktspt.benchmark import MODELS, ModelSpec, main
from sktspt.benchmark.execution import run_benchmark
from sktspt.benchmark.results import ResultsFile, read_results
from sktspt.benchmark.run import Job

DATASET = "ItalyPowerDemand"


class Majority:
    """Predicts the training split's most frequent label (deterministic, instant)."""

    def __init__(self, seed=0, sleep=0.0):
        self.seed, self.sleep = seed, sleep

    def fit(self, X, y):
        time.sleep(self.sleep)
        labels, counts = np.unique(np.asarray(y), return_counts=True)
        self.label_ = labels[(np.argmax(counts) + self.seed) % len(labels)]
        return self

    def predict(self, X):
        return np.full(len(X), self.label_)


class KillsItsProcess(Majority):
    def fit(self, X, y):
        os.kill(os.getpid(), signal.SIGKILL)


def _raises(cfg):
    raise RuntimeError("boom")


def _majority(cfg):
    return Majority(cfg.seed)


def _slow_majority(cfg):
    return Majority(cfg.seed, sleep=0.4)


FAKES = {
    "fake": ModelSpec(_majority, neural=False),
    "slow": ModelSpec(_slow_majority, neural=False),
    "killer": ModelSpec(lambda cfg: KillsItsProcess(), neural=False),
    "raiser": ModelSpec(_raises, neural=False),
}


@pytest.fixture(autouse=True)
def fail_instead_of_hanging():
    """A hang is the bug these tests guard against: dump the stacks and fail after 120 s."""
    faulthandler.dump_traceback_later(120, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.fixture
def fakes(monkeypatch):
    for name, spec in FAKES.items():
        monkeypatch.setitem(MODELS, name, spec)
    return MODELS


def test_a_killed_worker_and_a_raising_job_become_error_rows_and_the_rest_is_kept(
        tmp_path, capsys):
    # Each new worker reads the data (a few seconds): one death keeps the test short; the
    # retries are the next test's.
    jobs = [Job(DATASET, "fake", s, None) for s in range(2)] + [Job(DATASET, "raiser", 0, None)]
    jobs += [Job(DATASET, "fake", s, None) for s in range(2, 4)]
    jobs += [Job(DATASET, "killer", 0, None)]
    csv = tmp_path / "results.csv"
    rows = run_benchmark(jobs, FAKES, 1, 1, {}, n_jobs=2, progress=False,
                         results_file=csv, max_attempts=1)
    assert list(zip(rows["model"], rows["seed"])) == [(j.model, j.seed) for j in jobs]
    errors = dict(zip(rows["model"], rows["error"]))
    assert errors["raiser"] == "RuntimeError: boom"
    assert errors["killer"].startswith("TerminatedWorkerError")
    assert "died once while it ran alone" in errors["killer"]
    assert "SIGKILL" in errors["killer"]
    fake = rows[rows["model"] == "fake"]
    assert (fake["error"] == "").all() and fake["accuracy"].between(0, 1).all()
    # Every row, the failures included, reached the file as it finished.
    on_disk = read_results(csv)
    assert sorted(zip(on_disk["model"], on_disk["seed"])) == sorted(
        (j.model, j.seed) for j in jobs)
    # Without a progress bar each finished fit is one log line.
    log = capsys.readouterr().err
    assert f"{DATASET} fake seed 3: accuracy" in log and " s\n" in log
    assert f"{DATASET} raiser seed 0: FAILED RuntimeError: boom" in log


def _no_data(job, spec, kwargs):
    """A job without data or model, so that fresh workers start at once."""
    if job.model == "killer":
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.3)  # still running when the killer's worker dies
    return dict(dataset=job.dataset, model=job.model, seed=job.seed, depth=None,
                accuracy=1.0, fit_s=0.0, error="")


def test_jobs_caught_in_a_broken_pool_run_again_and_a_repeat_killer_is_given_up():
    from sktspt.benchmark.execution import _Call, _run_loky

    call = _Call(FAKES, 1, 1, {}, n_parallel=2, threads=1)
    call.fn = _no_data
    jobs = [Job("X", "fake", s, None) for s in range(3)] + [Job("X", "killer", 0, None)]
    jobs += [Job("X", "fake", s, None) for s in range(3, 5)]
    rows = {(j.model, j.seed): row for j, row in _run_loky(call, jobs, 2, 3, 0.2)}
    assert sorted(rows) == sorted((j.model, j.seed) for j in jobs)
    killer = rows.pop(("killer", 0))["error"]
    assert killer.startswith("TerminatedWorkerError")
    assert "died 3 times while it ran alone" in killer
    assert all(row["error"] == "" for row in rows.values())  # the innocent ones finished


def test_the_command_reports_failed_jobs_in_the_table_and_exit_code(fakes, tmp_path):
    out = tmp_path / "res"
    argv = ["--datasets", DATASET, "--models", "fake,raiser", "--seeds", "2",
            "--output", str(out), "--no-progress"]
    assert main(argv) == 1
    results = read_results(out / "results.csv")
    assert len(results) == 4
    assert (results["error"] != "").sum() == 2
    assert "## Failed jobs" in (out / "results.md").read_text()


def test_results_file_appends_rows_and_reads_past_a_half_written_line(tmp_path):
    path = tmp_path / "results.csv"
    store = ResultsFile(path)
    row = dict(dataset="GunPoint", model="fake", seed=0, depth=None, accuracy=0.5, fit_s=1.0,
               error="")
    store.append(row)
    store.append({**row, "seed": 1, "accuracy": np.nan, "error": "ValueError: a\nb, c"})
    text = path.read_text()
    assert text.count("dataset,model") == 1 and text.count("\n") == 3
    with open(path, "a") as f:  # a kill in the middle of writing a row
        f.write("GunPoint,fake,2,,,,,0.7")
    frame = read_results(path)
    assert list(frame["seed"]) == [0, 1]
    assert frame["error"].tolist() == ["", "ValueError: a / b, c"]
    ResultsFile(path).append({**row, "seed": 3})  # reopening cuts the partial line
    assert list(read_results(path)["seed"]) == [0, 1, 3]
    assert ResultsFile(path).drop_failed() == 1
    assert list(read_results(path)["seed"]) == [0, 3]
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="not written by this version"):
        ResultsFile(other)


def _accuracy_section(out: Path) -> str:
    page = (out / "results.md").read_text()
    return page[page.index("## Accuracy"):page.index("## Per dataset")]


def test_kill_mid_run_then_resume_gives_the_table_of_an_uninterrupted_run(fakes, tmp_path):
    argv = ["--datasets", DATASET, "--models", "slow", "--seeds", "6", "--no-progress"]
    full, cut = tmp_path / "full", tmp_path / "cut"
    assert main([*argv, "--output", str(full)]) == 0

    script = tmp_path / "run.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from test_benchmark_robust import FAKES\n"
        "from sktspt.benchmark import MODELS, main\n"
        "MODELS.update(FAKES)\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    proc = subprocess.Popen([sys.executable, str(script), *argv, "--output", str(cut)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    csv = cut / "results.csv"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if csv.exists() and csv.read_text().count("\n") >= 3:  # header and two rows
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    kept = len(read_results(csv))
    assert 2 <= kept < 6, "the kill should land mid-run"
    with open(csv, "a") as f:
        f.write(f"{DATASET},slow,5,,,,none,0.")  # as if the kill cut a row in half

    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main([*argv, "--output", str(cut), "--resume"]) == 0
    assert f"--resume: skipped {kept} fits already in {csv}" in err.getvalue()
    assert f"{6 - kept} to run" in err.getvalue()
    assert _accuracy_section(cut) == _accuracy_section(full)
    columns = ["dataset", "model", "seed", "accuracy", "error"]
    resumed = read_results(csv).sort_values("seed")[columns].reset_index(drop=True)
    uninterrupted = read_results(full / "results.csv")[columns]
    pd.testing.assert_frame_equal(resumed, uninterrupted)


def test_resume_runs_failed_fits_again_and_a_fresh_run_keeps_the_old_file(fakes, tmp_path):
    out = tmp_path / "res"
    argv = ["--datasets", DATASET, "--seeds", "1", "--output", str(out), "--no-progress"]
    assert main([*argv, "--models", "fake,raiser"]) == 1
    MODELS["raiser"] = FAKES["fake"]  # the cause of the failure is fixed
    assert main([*argv, "--models", "fake,raiser", "--resume"]) == 0
    results = read_results(out / "results.csv")
    assert sorted(results["model"]) == ["fake", "raiser"] and (results["error"] == "").all()
    assert main([*argv, "--models", "fake"]) == 0  # without --resume: a new file
    assert len(read_results(out / "results.csv")) == 1
    assert len(read_results(out / "results.previous.csv")) == 2


def test_warm_up_fit_is_untimed_and_runs_once_per_dataset_and_process(monkeypatch):
    from sktspt.benchmark import run

    fits = []

    class Compiles(Majority):
        def fit(self, X, y):
            fits.append(len(y))
            time.sleep(0.5 if len(fits) == 1 else 0.0)  # the one-off compile
            return super().fit(X, y)

    spec = ModelSpec(lambda cfg: Compiles(cfg.seed), neural=False, warmup=True)
    monkeypatch.setattr(run, "_WARMED", set())
    rows = [run.run_job(Job(DATASET, "compiles", s, None), spec, 1, 1, {}, n_parallel=1)
            for s in range(2)]
    n_train = len(benchmark.load_dataset(DATASET)[1])
    assert fits[0] < n_train and fits[1:] == [n_train, n_train]
    assert all(r["error"] == "" and r["fit_s"] < 0.4 for r in rows)


def test_datasets_all_runs_every_problem_of_the_data_dir(tmp_path, capsys):
    from sktspt.benchmark.datasets import _sktime_data_dir
    from sktspt.benchmark.options import build_parser, resolve_options

    for name in ("Alpha", "Beta"):
        (tmp_path / name).mkdir()
        for split in ("TRAIN", "TEST"):
            source = _sktime_data_dir() / DATASET / f"{DATASET}_{split}.ts"
            (tmp_path / name / f"{name}_{split}.ts").write_bytes(source.read_bytes())
    (tmp_path / "notes").mkdir()  # not a problem: no .ts files
    parser = build_parser()
    opts = resolve_options(parser.parse_args(["--datasets", "all", "--data-dir",
                                              str(tmp_path)]), parser)
    assert opts.datasets == ["Alpha", "Beta"]
    X, y, *_ = benchmark.load_dataset("Beta", str(tmp_path))
    assert X.shape[0] == len(y) > 0
    for argv in (["--datasets", "all"], ["--datasets", "all", "GunPoint", "--data-dir",
                                         str(tmp_path)]):
        with pytest.raises(SystemExit):
            resolve_options(parser.parse_args(argv), parser)
        assert "--datasets all runs every problem in --data-dir" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        resolve_options(parser.parse_args(["--datasets", "all", "--data-dir",
                                           str(tmp_path / "notes")]), parser)
    assert "holds no UCR/UEA problem" in capsys.readouterr().err


def test_help_loads_neither_torch_nor_sktime_nor_pandas():
    code = ("import sys\n"
            "from sktspt.benchmark.options import build_parser\n"
            "text = build_parser().format_help()\n"
            "print(sorted(m for m in ('torch', 'sktime', 'pandas') if m in sys.modules))\n"
            "print('critical_difference.png' in text, '--resume' in text)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(Path(
                              benchmark.__file__).parents[2])})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["[]", "True True"]


def test_registry_lists_every_masking_objective():
    from sktspt.benchmark.models import _MASKINGS
    from sktspt.benchmark.options import _BACKENDS
    from sktspt.masking import MASKINGS

    assert _MASKINGS == MASKINGS
    assert _BACKENDS == benchmark.BACKENDS


def test_bad_run_arguments_are_value_errors(fakes):
    jobs = [Job(DATASET, "fake", 0, None)]
    with pytest.raises(ValueError, match="backend"):
        run_benchmark(jobs, FAKES, 1, 1, {}, backend="spark")
    with pytest.raises(ValueError, match="max_attempts"):
        run_benchmark(jobs, FAKES, 1, 1, {}, max_attempts=0)
    with pytest.raises(ValueError, match="not in the registry"):
        run_benchmark([Job(DATASET, "nope", 0, None)], FAKES, 1, 1, {})


def test_a_failed_dispatch_raises_in_the_caller_instead_of_hanging(monkeypatch):
    """Issue 63: joblib's unordered generator dispatched from loky's callback thread, where
    an exception is only logged and the caller then waits forever. Here every submit
    happens in the caller's thread, so the same failure raises there."""
    from joblib.externals import loky

    from sktspt.benchmark import execution as run

    real = loky.get_reusable_executor
    submits = []

    class Failing:
        def __init__(self, executor):
            self.executor = executor

        def submit(self, *args, **kwargs):
            submits.append(1)
            if len(submits) == 4:
                raise OSError("[Errno 24] Too many open files")
            return self.executor.submit(*args, **kwargs)

    monkeypatch.setattr(loky, "get_reusable_executor", lambda **kw: Failing(real(**kw)))
    call = run._Call(FAKES, 1, 1, {}, n_parallel=2, threads=1)
    call.fn = _no_data
    finished = []
    with pytest.raises(OSError, match="Too many open files"):
        for job, _ in run._run_loky(call, [Job("X", "fake", s, None) for s in range(6)],
                                    2, 3, 0.2):
            finished.append(job.seed)
    assert len(finished) >= 2  # the rows before the failure were handed over
