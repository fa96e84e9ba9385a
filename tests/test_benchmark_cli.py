"""Issue 74's benchmark CLI footguns: a clean Ctrl-C naming ``--resume``, MiniRocket's numba
compile as its own step, explicit seed lists, and ``--quick`` in its own folder with a page
that says it is a smoke test. Fast: a fake instant model, no training."""

import pytest
from conftest import Majority

from sktspt.benchmark import MODELS, ModelSpec, execution, main
from sktspt.benchmark import cli as cli_module
from sktspt.benchmark import run as run_module
from sktspt.benchmark.cli import output_folder
from sktspt.benchmark.options import build_parser, resolve_options

DATASET = "ItalyPowerDemand"


def _majority(cfg):
    return Majority(cfg.seed)


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setitem(MODELS, "fake", ModelSpec(_majority, neural=False))


def _options(argv):
    parser = build_parser()
    return resolve_options(parser.parse_args(argv), parser)


def test_seed_list_names_seeds_and_seeds_stays_a_count():
    base = ["--datasets", DATASET, "--models", "scratch"]
    assert _options([*base, "--seed-list", "5"]).seeds == [5]
    assert _options([*base, "--seed-list", "0", "1", "2"]).seeds == [0, 1, 2]
    assert _options([*base, "--seed-list", "3,7"]).seeds == [3, 7]
    assert _options([*base, "--seeds", "5"]).seeds == [0, 1, 2, 3, 4]
    assert _options(base).seeds == [0, 1, 2]


@pytest.mark.parametrize("argv, message", [
    (["--seed-list", "1", "1"], "distinct"),
    (["--seed-list", "-1"], "non-negative"),
    (["--seed-list", "x"], "integers"),
    (["--seeds", "3", "--seed-list", "5"], "not allowed with argument"),
])
def test_bad_seed_lists_are_clear_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--datasets", DATASET, *argv])
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_quick_writes_to_its_own_folder():
    parse = build_parser().parse_args
    assert str(output_folder(parse([]))) == "results"
    assert str(output_folder(parse(["--quick"]))) == "results/quick"
    assert str(output_folder(parse(["--quick", "--output", "mine"]))) == "mine"


def test_quick_page_says_it_is_a_smoke_test(fake, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["--quick", "--models", "fake", "--no-progress"]) == 0
    page = (tmp_path / "results" / "quick" / "results.md").read_text()
    assert page.startswith("# Benchmark results\n\n> **Smoke test, not a benchmark.**")
    assert not (tmp_path / "results" / "results.md").exists()


def test_ctrl_c_prints_one_message_naming_resume(fake, tmp_path, monkeypatch, capsys):
    real = execution.run_benchmark

    def interrupted(jobs, *args, **kwargs):  # one fit finishes, then Ctrl-C
        real(jobs[:1], *args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(execution, "run_benchmark", interrupted)
    out = tmp_path / "res"
    argv = ["--datasets", DATASET, "--models", "fake", "--seed-list", "4", "5",
            "--output", str(out), "--no-progress"]
    assert main(argv) == 130
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"interrupted: 1 finished fit is in {out / 'results.csv'}" in err
    assert err.rstrip().endswith(" ".join(["python -m sktspt.benchmark", *argv, "--resume"]))
    monkeypatch.setattr(execution, "run_benchmark", real)
    assert main([*argv, "--resume"]) == 0  # and the command it names finishes the run
    assert "skipped 1 fit already in" in capsys.readouterr().err


def test_minirocket_compiles_before_the_bar(monkeypatch, capsys):
    calls = []

    class Features:
        def fit_transform(self, X):
            calls.append(X.shape)
            return X

        def transform(self, X):
            return X

    import sktspt.benchmark.minirocket as minirocket

    monkeypatch.setattr(minirocket, "MiniRocketFeatures", Features)
    jobs = [run_module.Job(DATASET, "minirocket", 0, None),
            run_module.Job("BasicMotions", "minirocket", 0, None),
            run_module.Job(DATASET, "scratch", 0, None)]
    cli_module.compile_first(jobs, MODELS, None)
    assert sorted(calls) == [(4, 1, 32), (4, 2, 32)]  # univariate and multivariate kernels
    assert "compiling MiniRocket's numba code" in capsys.readouterr().err
    cli_module.compile_first(jobs[2:], MODELS, None)  # no MiniRocket: no step
    assert capsys.readouterr().err == ""
