"""Issue 83: ``--help`` fits a screen, the default models are the main job's, and a usage
error is one line that points at ``--help``. Fast: no fit runs."""

import re
from pathlib import Path

import pytest

from sktspt.benchmark import DEFAULT_MODELS, main
from sktspt.benchmark.options import build_parser, resolve_options

ROOT = Path(__file__).resolve().parents[1]
MAIN_JOB = re.compile(r"python -m sktspt\.benchmark --datasets GunPoint --models ([\w -]+?) --")


def _help(monkeypatch, columns=80):
    monkeypatch.setenv("COLUMNS", str(columns))
    return build_parser().format_help()


def test_help_fits_a_screen_of_80_columns(monkeypatch):
    lines = _help(monkeypatch).splitlines()
    assert len(lines) <= 45, "\n".join(lines)
    assert max(map(len, lines)) <= 80
    # the common options come first, the rest in named groups
    text = "\n".join(lines)
    first = text[:text.index("\n\n", text.index("options:"))]
    for option in ("--datasets", "--models", "--seeds", "--data-dir", "--n-jobs", "--resume"):
        assert option in first
    assert "--backend" not in first and "--model-params" not in first


def test_each_option_has_a_one_line_help(monkeypatch):
    lines = _help(monkeypatch).splitlines()
    options = [line for line in lines if line.startswith("  -")]
    continued = [line for line in lines if line.startswith(" " * 10) and line.strip()]
    assert len(options) >= 20 and not continued, continued


def test_default_models_are_the_main_jobs_four():
    readme, guide = (ROOT / "README.md").read_text(), (ROOT / "docs" / "benchmark.md").read_text()
    jobs = MAIN_JOB.findall(readme) + MAIN_JOB.findall(guide)
    assert jobs and all(job.split() == list(DEFAULT_MODELS) for job in jobs), jobs
    parser = build_parser()
    opts = resolve_options(parser.parse_args(["--datasets", "GunPoint"]), parser)
    assert opts.models == ["spt-span", "scratch", "scratch-rotary", "minirocket"]


def test_help_states_the_defaults_the_run_uses(monkeypatch):
    from sktspt import SPTClassifier

    text = " ".join(_help(monkeypatch, 200).split())
    parser = build_parser()
    opts = resolve_options(parser.parse_args(["--datasets", "GunPoint"]), parser)
    defaults = SPTClassifier().get_params()
    # the spt-* models self-pretrain: 'auto', whatever SPTClassifier's own default (0)
    assert opts.pretrain_epochs == "auto" and defaults["pretrain_epochs"] == 0
    assert "pretraining of the spt-* models (default auto)" in text
    assert opts.epochs == defaults["max_epochs"] == "auto"
    assert "fine-tuning epochs (default auto)" in text
    assert f"(default {defaults['depth']})" in text.split("--depth")[1].split("--")[0]
    assert f"default: {' '.join(DEFAULT_MODELS)}" in text


@pytest.mark.parametrize("argv", [
    ["--frobnicate"],
    ["--backend", "spark"],
    ["--n-jobs", "two"],
    ["--seeds", "0"],
    ["--datasets", "NoSuchProblem"],
    ["--datasets", "GunPoint", "--models", "nope"],
    ["--datasets", "GunPoint", "--threads", "0"],
    ["--datasets", "GunPoint", "--n-jobs", "0"],
    ["--datasets", "GunPoint", "--model-params", "depth=2"],
])
def test_a_usage_error_is_one_line_that_points_at_help(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert len(err.splitlines()) == 1, err
    assert err.startswith("sktspt-benchmark: error: ") and err.endswith(" (see --help)\n"), err
