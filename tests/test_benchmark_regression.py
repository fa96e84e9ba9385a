"""The regression benchmark (``--task regression``): datasets, rows, page, resume, errors."""

import contextlib
import io

import numpy as np
import pandas as pd
import pytest

from sktspt.benchmark import (
    DATASETS,
    REGRESSION_MODELS,
    TSER_DATASETS,
    ModelSpec,
    build_parser,
    dataset_task,
    load_dataset,
    main,
    resolve_options,
)
from sktspt.benchmark.results import read_results
from sktspt.benchmark.run import REGRESSION_COLUMNS

TINY = ["--pretrain-epochs", "1", "--epochs", "1", "--depth", "1", "--model-params",
        "d_model=16", "architecture__n_heads=2",
        "architecture__dim_feedforward=32", "--threads", "1", "--no-progress"]


def _write_ts(path, X, y, regression=True):
    """A univariate ``.ts`` file: ``@targetLabel true`` and numeric targets, or class
    labels."""
    label = "@targetLabel true" if regression else "@classLabel true " + " ".join(
        sorted({str(v) for v in y}))
    lines = ["@problemName synthetic", "@timeStamps false", "@missing false",
             "@univariate true", "@equalLength true", label, "@data"]
    lines += [",".join(f"{v:.6f}" for v in row) + f":{target}" for row, target in zip(X, y)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def _problem(folder, name, n_train=24, n_test=16, length=20, regression=True, seed=0):
    """A problem whose target is a linear function of the series' level."""
    rng = np.random.default_rng(seed)
    for split, n in (("TRAIN", n_train), ("TEST", n_test)):
        level = rng.uniform(-2, 2, size=n)
        X = level[:, None] + 0.1 * rng.normal(size=(n, length))
        y = 3.0 * level + 10.0 if regression else (level > 0).astype(int)
        _write_ts(folder / name / f"{name}_{split}.ts", X, y, regression)


class MeanRegressor:
    """Predicts the training targets' mean plus the seed (deterministic, instant)."""

    def __init__(self, seed=0):
        self.seed = seed

    def fit(self, X, y):
        self.mean_ = float(np.mean(y)) + 0.01 * self.seed
        return self

    def predict(self, X):
        return np.full(len(X), self.mean_)


def _mean_regressor(cfg):
    return MeanRegressor(cfg.seed)


@pytest.fixture
def fake_regressor(monkeypatch):
    monkeypatch.setitem(REGRESSION_MODELS, "mean",
                        ModelSpec(_mean_regressor, neural=False, task="regression"))


def test_shipped_tser_problems_load_with_numeric_targets():
    for name in TSER_DATASETS:
        X_tr, y_tr, X_te, y_te, info = load_dataset(name)
        assert dataset_task(name) == "regression" and info.task == "regression"
        assert y_tr.dtype == np.float64 and y_te.dtype == np.float64
        assert len(y_tr) == info.n_train == len(X_tr) and info.n_classes == 0
    assert {dataset_task(n) for n in DATASETS} == {"classification"}
    assert load_dataset("GunPoint")[-1].task == "classification"


def test_regression_run_writes_rmse_and_r2_rows_page_and_figures(tmp_path, capsys):
    out, docs = tmp_path / "res", tmp_path / "docs" / "results-regression.md"
    argv = ["--task", "regression", "--datasets", "Covid3Month", "--seeds", "0,1",
            "--output", str(out), "--write-docs", str(docs), *TINY]
    assert main(argv) == 0
    header = (out / "results.csv").read_text().splitlines()[0].split(",")
    assert tuple(header) == REGRESSION_COLUMNS and "accuracy" not in header
    results = read_results(out / "results.csv")
    assert sorted(set(results["model"])) == ["minirocket", "scratch", "spt"]  # the defaults
    assert len(results) == 6 and (results["error"] == "").all(), results["error"].tolist()
    # RMSE and R² of each row are those of the same predictions: R² = 1 - MSE / Var(y).
    y_test = load_dataset("Covid3Month")[3]
    np.testing.assert_allclose(results["r2"], 1 - results["rmse"] ** 2 / np.var(y_test),
                               rtol=1e-6)
    assert (results["rmse"] > 0).all() and (results["n_params"] > 0).all()
    neural = results[results["model"] != "minirocket"]
    scratch = neural["model"] == "scratch"  # equal optimizer steps, no pretraining
    assert (neural["epochs"] == np.where(scratch, 2, 1)).all()
    assert (neural["pretrain_epochs"] == np.where(scratch, 0, 1)).all()
    page = docs.read_text()
    assert page.startswith("# Regression benchmark results")
    assert "Test RMSE" in page and "Test R²" in page and "--task regression" in page
    assert "![test RMSE per dataset and model](results-regression.png)" in page
    assert (docs.parent / "results-regression.png").read_bytes()[:4] == b"\x89PNG"
    assert (out / "rmse.png").exists() and not (out / "accuracy.png").exists()
    assert "Covid3Month" in capsys.readouterr().out


def test_regression_task_is_read_from_the_ts_header_of_a_data_dir(tmp_path, capsys):
    data, out = tmp_path / "data", tmp_path / "res"
    _problem(data, "LevelA", seed=1)
    _problem(data, "LevelB", seed=2)
    argv = ["--datasets", "all", "--data-dir", str(data), "--models", "minirocket",
            "--seeds", "1", "--output", str(out), "--no-progress"]
    assert main(argv) == 0  # no --task: the headers say regression
    results = read_results(out / "results.csv")
    assert list(results["dataset"]) == ["LevelA", "LevelB"]
    assert (results["r2"] > 0.8).all(), results  # the target is linear in the level
    page = (out / "results.md").read_text()
    assert "**mean rank**" in page and "**mean**" in page
    assert (out / "pairwise.png").exists() is False  # no SPT model: no pair to draw
    # A mixed folder with --task keeps that task's problems.
    _problem(data, "Classes", regression=False)
    opts = resolve_options(*_parsed(["--datasets", "all", "--data-dir", str(data),
                                     "--task", "regression"]))
    assert opts.datasets == ["LevelA", "LevelB"] and opts.task == "regression"


def _parsed(argv):
    parser = build_parser()
    return parser.parse_args(argv), parser


def test_resume_skips_the_regression_rows_already_there(tmp_path, fake_regressor):
    argv = ["--task", "regression", "--datasets", "Tecator", "--models", "mean",
            "--seeds", "3", "--no-progress"]
    full, cut = tmp_path / "full", tmp_path / "cut"
    assert main([*argv, "--output", str(full)]) == 0
    assert main([*argv, "--output", str(cut)]) == 0
    lines = (cut / "results.csv").read_text().splitlines(keepends=True)
    (cut / "results.csv").write_text("".join(lines[:2]) + lines[2][:10])  # a kill mid-row
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main([*argv, "--output", str(cut), "--resume"]) == 0
    assert "skipped 1 fit already in" in err.getvalue() and "2 to run" in err.getvalue()
    columns = ["dataset", "model", "seed", "rmse", "r2", "error"]
    resumed = read_results(cut / "results.csv").sort_values("seed")[columns]
    pd.testing.assert_frame_equal(resumed.reset_index(drop=True),
                                  read_results(full / "results.csv")[columns])
    assert (cut / "results.md").read_text().split("## Test RMSE")[1] == \
        (full / "results.md").read_text().split("## Test RMSE")[1]


def test_classification_defaults_are_unchanged():
    opts = resolve_options(*_parsed([]))
    assert opts.task == "classification" and opts.datasets == list(DATASETS)
    assert "spt-span" in opts.models and "spt" not in opts.models
    opts = resolve_options(*_parsed(["--task", "regression"]))
    assert opts.datasets == list(TSER_DATASETS)
    assert opts.models == ["spt", "scratch", "minirocket"] and len(opts.seeds) == 3


@pytest.mark.parametrize("argv, message", [
    (["--task", "regression", "--datasets", "GunPoint"],
     "GunPoint is a classification problem"),
    (["--task", "classification", "--datasets", "Tecator"], "Tecator is a regression problem"),
    (["--datasets", "GunPoint", "Tecator"], "mix classification and regression"),
    (["--task", "regression", "--models", "spt-span"], "unknown model(s) spt-span for regression"),
    (["--datasets", "Tecator", "--model-params", "class_weight=balanced"],
     "not a settable SPTRegressor parameter"),
])
def test_bad_regression_options_give_clear_errors(argv, message, capsys):
    with pytest.raises(SystemExit):
        main(argv)
    assert message in capsys.readouterr().err


def test_a_results_file_of_the_other_task_is_not_resumed_into(tmp_path, fake_regressor):
    out = tmp_path / "res"
    argv = ["--datasets", "Tecator", "--models", "mean", "--seeds", "1", "--no-progress",
            "--output", str(out)]
    assert main(argv) == 0
    from sktspt.benchmark.results import ResultsFile
    from sktspt.benchmark.run import COLUMNS

    with pytest.raises(ValueError, match="not written by this version of the benchmark"):
        ResultsFile(out / "results.csv", COLUMNS)


def test_label_fractions_are_refused_for_regression(capsys):
    from sktspt.benchmark.cli import main

    with pytest.raises(SystemExit):
        main(["--task", "regression", "--label-fraction", "0.5", "--quick"])
    assert "--label-fraction" in capsys.readouterr().err

