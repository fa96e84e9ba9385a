"""The benchmark command: outputs, protocol bookkeeping, dask backend and option errors."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sktspt import benchmark
from sktspt.benchmark import MODELS, load_dataset, main

TINY = ["--pretrain-epochs", "1", "--epochs", "1", "--depth", "1", "--model-params",
        "d_model=16", "architecture__n_heads=2", "architecture__dim_feedforward=32",
        "--threads", "1", "--no-progress"]


def _check_outputs(out, models, seeds):
    results = pd.read_csv(out / "results.csv", keep_default_na=False, na_values=[""])
    assert len(results) == len(models) * len(seeds)
    assert set(results["model"]) == set(models)
    assert sorted(set(results["seed"])) == sorted(seeds)
    assert (results["dataset"] == "ItalyPowerDemand").all()
    assert results["error"].isna().all(), results["error"].tolist()
    assert np.isfinite(results["accuracy"]).all()
    assert results["accuracy"].between(0, 1).all()
    assert (results["fit_s"] > 0).all() and (results["predict_s"] > 0).all()
    assert (results["n_params"] > 0).all()
    neural = results[results["model"] != "minirocket"]
    assert (neural["depth"] == 1).all()
    # The epochs that ran: scratch fine-tunes for both phases' epochs, without pretraining.
    scratch = neural["model"].str.startswith("scratch")
    assert (neural["epochs"] == np.where(scratch, 2, 1)).all()
    assert (neural["pretrain_epochs"] == np.where(scratch, 0, 1)).all()
    assert results.loc[results["model"] == "minirocket", "depth"].isna().all()
    assert results.loc[results["model"] == "minirocket", "augment"].isna().all()
    assert (neural["augment"] == "none").all()  # ItalyPowerDemand fails the roll screen
    page = (out / "results.md").read_text()
    assert "python -m sktspt.benchmark" in page and "CPU cores" in page and "torch" in page
    for model in models:
        assert model in page
    png = (out / "accuracy.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 1000
    return results


def test_tiny_run_writes_csv_md_png_and_docs(tmp_path, capsys):
    out, docs = tmp_path / "res", tmp_path / "docs" / "results.md"
    argv = ["--datasets", "ItalyPowerDemand", "--models", "scratch,minirocket", "--seeds", "0,1",
            "--output", str(out), "--write-docs", str(docs), *TINY]
    assert main(argv) == 0
    _check_outputs(out, ["scratch", "minirocket"], [0, 1])
    printed = capsys.readouterr().out
    assert "ItalyPowerDemand" in printed and "±" in printed
    page = docs.read_text()
    assert "do not edit by hand" in page and "--write-docs" in page
    assert "![accuracy per dataset and model](results.png)" in page
    assert (docs.parent / "results.png").exists()


def test_dask_backend_runs_without_failures(tmp_path):
    distributed = pytest.importorskip("distributed")
    out = tmp_path / "res"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        argv = ["--datasets", "ItalyPowerDemand", "--models", "spt-random", "minirocket",
                "--seeds", "1", "--output", str(out), "--backend", "dask", "--n-jobs", "2",
                "--scheduler", cluster.scheduler_address, *TINY]
        assert main(argv) == 0
        assert cluster.scheduler.transition_counter > 0  # the fits really went through dask
    _check_outputs(out, ["spt-random", "minirocket"], [0])


def test_ray_backend_runs_without_failures(tmp_path, monkeypatch):
    ray = pytest.importorskip("ray")
    out = tmp_path / "res"
    remotes, real_remote = [], ray.remote

    def remote(*args, **kwargs):
        remotes.append(kwargs)
        return real_remote(*args, **kwargs)

    monkeypatch.setattr(ray, "remote", remote)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    try:
        argv = ["--datasets", "ItalyPowerDemand", "--models", "spt-random", "--seeds", "2",
                "--output", str(out), "--backend", "ray", "--n-jobs", "2", *TINY]
        assert main(argv) == 0
        # the fits ran as ray tasks, which ray retries if their worker dies
        assert remotes and remotes[0]["max_retries"] >= 1
    finally:
        ray.shutdown()
    _check_outputs(out, ["spt-random"], [0, 1])


def test_seed_is_random_state_so_reruns_agree_and_default_depth_is_recorded():
    from sktspt import SPTClassifier

    spec, job = MODELS["spt-block"], benchmark.Job("ItalyPowerDemand", "spt-block", 5, None)
    params = {"d_model": 16, "architecture__n_heads": 2, "architecture__dim_feedforward": 32}
    a = benchmark.run_job(job, spec, 1, 1, params, n_parallel=1, threads=1)
    b = benchmark.run_job(job, spec, 1, 1, params, n_parallel=1, threads=1)
    assert a["error"] == "" and np.isfinite(a["accuracy"])
    assert a["accuracy"] == b["accuracy"] and a["n_params"] == b["n_params"]
    assert a["depth"] == SPTClassifier().depth


def test_rows_record_what_fine_tuning_augmented_with():
    params = {"d_model": 16, "architecture__n_heads": 2, "architecture__dim_feedforward": 32,
              "depth": 1}
    job = benchmark.Job("ItalyPowerDemand", "spt-span", 0, None)
    # ItalyPowerDemand fails augment="auto"'s alignment screen, so its fit does not roll.
    auto = benchmark.run_job(job, MODELS["spt-span"], 1, 1, params, n_parallel=1, threads=1)
    rolled = benchmark.run_job(job, MODELS["spt-span"], 1, 1, {**params, "augment": "roll"},
                               n_parallel=1, threads=1)
    rocket = benchmark.run_job(benchmark.Job("ItalyPowerDemand", "minirocket", 0, None),
                               MODELS["minirocket"], 1, 1, {}, n_parallel=1, threads=1)
    assert (auto["error"], rolled["error"], rocket["error"]) == ("", "", "")
    assert (auto["augment"], rolled["augment"], rocket["augment"]) == ("none", "roll", None)


def test_failed_job_is_reported_not_raised(monkeypatch, tmp_path):
    def broken(cfg):
        raise RuntimeError("boom")

    monkeypatch.setitem(MODELS, "broken", benchmark.ModelSpec(broken, neural=False))
    out = tmp_path / "res"
    argv = ["--datasets", "ItalyPowerDemand", "--models", "broken", "--seeds", "1",
            "--output", str(out), "--no-progress"]
    assert main(argv) == 1
    results = pd.read_csv(out / "results.csv", keep_default_na=False)
    assert results["error"].tolist() == ["RuntimeError: boom"]
    assert "Failed jobs" in (out / "results.md").read_text()


def test_plan_skips_channel_masking_on_univariate_and_depth_for_minirocket():
    jobs = benchmark.plan_jobs(["ItalyPowerDemand", "BasicMotions"],
                               ["spt-channel", "minirocket"], [0, 1], [1, 2], MODELS)
    keys = {(j.dataset, j.model, j.depth) for j in jobs}
    assert ("ItalyPowerDemand", "spt-channel", 1) not in keys
    assert {("BasicMotions", "spt-channel", 1), ("BasicMotions", "spt-channel", 2)} <= keys
    assert {j.depth for j in jobs if j.model == "minirocket"} == {None}
    # minirocket: 2 datasets x 2 seeds; spt-channel: BasicMotions only, 2 depths x 2 seeds.
    assert len(jobs) == 2 * 2 + 2 * 2


def test_scratch_controls_match_spt_budget_and_network():
    info = load_dataset("ItalyPowerDemand")[-1]
    cfg = benchmark.RunConfig(seed=3, pretrain_epochs=4, epochs=6, depth=2, data=info,
                              params={"d_model": 16})
    spt = MODELS["spt-mixed"].factory(cfg)
    assert (spt.masking, spt.pretrain_epochs, spt.max_epochs) == ("mixed", 4, 6)
    for name, positional in [("scratch", spt.architecture__positional),
                             ("scratch-rotary", "rotary"), ("scratch-alibi", "alibi")]:
        est = MODELS[name].factory(cfg)
        assert (est.pretrain_epochs, est.max_epochs,
                est.architecture__positional) == (0, 10, positional)
        assert (est.depth, est.d_model, est.random_state) == (2, 16, 3)


def test_tables_average_over_seeds_in_registry_order_without_failed_jobs():
    rows = [
        # dataset, model, seed, depth, accuracy, error
        ("GunPoint", "minirocket", 0, None, 0.9, ""),
        ("GunPoint", "spt-span", 0, 2, 0.5, ""),
        ("GunPoint", "spt-span", 1, 2, 0.7, ""),
        ("GunPoint", "spt-span", 2, 2, 0.0, "RuntimeError: boom"),
        ("GunPoint", "spt-span", 0, 1, 0.6, ""),
        ("ArrowHead", "minirocket", 0, None, 0.8, ""),
    ]
    results = pd.DataFrame(
        [dict(dataset=d, model=m, seed=s, depth=dp, pretrain_epochs=1, epochs=1, accuracy=a,
              fit_s=1.0, predict_s=0.1, n_params=10, error=e) for d, m, s, dp, a, e in rows]
    ).astype({"depth": "Int64"})
    text = benchmark.markdown_tables(results)
    header = next(line for line in text.splitlines() if line.startswith("| dataset | spt"))
    assert header == "| dataset | spt-span (depth 1) | spt-span (depth 2) | minirocket |"
    assert "| GunPoint | 0.600 | 0.600 ± 0.141 | 0.900 |" in text  # std over 2 seeds, ddof=1
    assert "| **mean** | — | — | 0.850 |" in text  # spt-span did not run on ArrowHead
    assert "RuntimeError: boom" in text.split("## Failed jobs")[1]


def test_detail_table_counts_augment_choices_and_names_the_slowest_fit():
    rows = [("spt-span", 0, "roll", 10.0), ("spt-span", 1, "none", 30.0),
            ("spt-span", 2, "roll", 20.0), ("minirocket", 0, None, 1.0)]
    results = pd.DataFrame(
        [dict(dataset="OSULeaf", model=m, seed=s, depth=None, pretrain_epochs=1, epochs=1,
              augment=a, accuracy=0.5, fit_s=f, predict_s=0.1, n_params=10, error="")
         for m, s, a, f in rows]
    ).astype({"depth": "Int64"})
    lines = benchmark.markdown_tables(results).splitlines()
    spt = "| OSULeaf | spt-span | 0.500 ± 0.000 | 3 | 20.0 | 30.0 | 0.10 | 10 |"
    assert f"{spt} roll 2, none 1 |" in lines
    assert "| OSULeaf | minirocket | 0.500 | 1 | 1.0 | 1.0 | 0.10 | 10 | — |" in lines
    old = benchmark.markdown_tables(results.drop(columns="augment"))  # pre-column results.csv
    assert f"{spt} — |" in old.splitlines()


def test_module_runs_as_a_script_with_process_workers(tmp_path):
    """``python -m`` with loky workers: job functions must unpickle by module name."""
    import subprocess
    import sys

    out = tmp_path / "res"
    argv = ["--datasets", "ItalyPowerDemand", "--models", "scratch", "--seeds", "1",
            "--n-jobs", "2", "--output", str(out), *TINY]
    done = subprocess.run([sys.executable, "-m", "sktspt.benchmark", *argv],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    results = pd.read_csv(out / "results.csv")
    assert len(results) == 1 and np.isfinite(results["accuracy"]).all()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--datasets", "Nope"], "unknown dataset"),
        (["--models", "spt-span,gpt"], "unknown model"),
        (["--seeds", "0"], "--seeds count"),
        (["--seeds", "1", "1"], "distinct"),
        (["--seeds", "x"], "integers"),
        (["--epochs", "0"], "--epochs"),
        (["--depth", "0"], "--depth"),
        (["--model-params", "depth=2"], "its own option"),
        (["--model-params", "colour=red"], "not a settable"),
        (["--model-params", "d_model"], "key=value"),
        (["--scheduler", "tcp://x:8786"], "--backend dask"),
        (["--n-jobs", "0"], "--n-jobs"),
        (["--threads", "0"], "--threads"),
        (["--backend", "spark"], "invalid choice"),
    ],
)
def test_bad_options_give_clear_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_ray_backend_missing_is_a_clear_error(monkeypatch, capsys):
    import builtins

    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray" or name.startswith("ray."):
            raise ImportError("No module named 'ray'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(SystemExit):
        main(["--backend", "ray", "--datasets", "ItalyPowerDemand"])
    assert "needs ray" in capsys.readouterr().err


# --- figures, skipped cells, banner -----------------------------------------------------
def _fake_results(datasets=("GunPoint", "ArrowHead", "OSULeaf", "PLAID"),
                  models=("spt-span", "scratch", "scratch-rotary", "minirocket"), seeds=(0, 1)):
    rng = np.random.default_rng(0)
    rows = [dict(dataset=d, model=m, seed=s, depth=None if m == "minirocket" else 2,
                 pretrain_epochs=1, epochs=1, accuracy=0.8 + 0.03 * j + 0.01 * i
                 + rng.normal(0, 0.005), fit_s=1.0, predict_s=0.1, n_params=10, error="")
            for i, d in enumerate(datasets) for j, m in enumerate(models) for s in seeds]
    return pd.DataFrame(rows).astype({"depth": "Int64"})


@pytest.fixture
def saved_figures(monkeypatch):
    """Every matplotlib figure saved, kept for inspection."""
    from matplotlib.figure import Figure

    saved, real = [], Figure.savefig

    def keep(fig, path, *args, **kwargs):
        fig.canvas.draw()  # lays the figure out as saving does
        saved.append((Path(path).name, (fig, fig.canvas.get_renderer())))
        return real(fig, path, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    return saved


def test_figures_are_written_and_embedded_in_the_page(tmp_path, saved_figures, monkeypatch):
    import datetime

    from sktime.benchmarking import critical_difference as cd_module

    calls = []
    real_cd = cd_module.plot_critical_difference

    def record(scores, labels, **kwargs):
        calls.append((scores, labels, kwargs))
        return real_cd(scores, labels, **kwargs)

    monkeypatch.setattr(cd_module, "plot_critical_difference", record)
    results = _fake_results()
    figures = benchmark.write_figures(results, tmp_path, stem="results")
    names = [f.file for f in figures]
    assert names == ["results.png", "results-cd.png", "results-pairwise.png"]
    for name in names:
        png = (tmp_path / name).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    # The critical-difference diagram is sktime's, fed the mean accuracies best model first.
    (scores, labels, kwargs), = calls
    assert labels == ["minirocket", "scratch-rotary", "scratch", "spt-span"]
    assert scores.shape == (4, 4) and kwargs["is_errors"] is False
    # Accuracy axis zoomed to the results (all within 0.75-0.95 here), not from 0.
    figs = {name: fig for name, (fig, _) in saved_figures}
    renderers = {name: renderer for name, (_, renderer) in saved_figures}
    low, high = figs["results.png"].axes[0].get_xlim()
    assert 0.7 < low < 0.8 and 0.9 < high <= 1.01
    # Titles inside the figure: nothing cut off on either side.
    for name in ("results.png", "results-pairwise.png"):
        fig = figs[name]
        box, renderer = fig.bbox, renderers[name]
        for text in [fig._suptitle, *(ax.title for ax in fig.axes)]:
            if text is not None and text.get_text():
                ext = text.get_window_extent(renderer)
                assert ext.x0 >= box.x0 and ext.x1 <= box.x1, (name, text.get_text())
    # Pairwise: SPT against MiniRocket, then against scratch, each with the diagonal.
    pair_axes = figs["results-pairwise.png"].axes
    assert [ax.get_xlabel() for ax in pair_axes] == ["minirocket accuracy", "scratch accuracy"]
    assert all(ax.get_ylabel() == "spt-span accuracy" for ax in pair_axes)
    for ax in pair_axes:
        (x0, x1), (y0, y1) = ax.lines[0].get_data()
        assert x0 == y0 and x1 == y1  # the line y = x
    page = benchmark.markdown_page(results, "python -m sktspt.benchmark", datetime.datetime.now(),
                                   1.0, {"seeds": "0,1"}, figures=figures)
    for alt, name in [("accuracy per dataset and model", "results.png"),
                      ("critical-difference diagram", "results-cd.png"),
                      ("pairwise accuracy scatter", "results-pairwise.png")]:
        assert f"![{alt}]({name})" in page


def test_figures_that_the_results_do_not_allow_are_left_out_with_the_reason(tmp_path):
    one_dataset = _fake_results(datasets=("GunPoint",))
    assert "at least 2 datasets" in benchmark.plot_critical_difference(one_dataset, tmp_path / "a")
    two_models = _fake_results(models=("spt-span", "minirocket"))
    assert "3 models" in benchmark.plot_critical_difference(two_models, tmp_path / "b")
    no_spt = _fake_results(models=("scratch", "minirocket"))
    assert "SPT model" in benchmark.plot_pairwise(no_spt, tmp_path / "c")
    # One point per panel says nothing the accuracy figure does not: no scatter.
    assert "at least 2 datasets" in benchmark.plot_pairwise(one_dataset, tmp_path / "d")
    assert [f.file for f in benchmark.write_figures(one_dataset, tmp_path / "one")] == [
        "accuracy.png"]
    assert [f.file for f in benchmark.write_figures(two_models, tmp_path)] == [
        "accuracy.png", "pairwise.png"]
    assert not any((tmp_path / n).exists()
                   for n in ("a", "b", "c", "d", "critical_difference.png"))


def test_accuracy_error_bars_stop_at_one(tmp_path, saved_figures):
    results = _fake_results(datasets=("GunPoint", "ArrowHead"), models=("spt-span", "scratch"))
    results["accuracy"] = np.where(results["seed"] == 0, 1.0, 0.96)  # mean .98, std .028
    benchmark.plot_accuracy(results, tmp_path / "accuracy.png")
    (_, (fig, _)), = saved_figures
    ax = fig.axes[0]
    ends = [x for c in ax.collections for seg in c.get_segments() for x, _ in seg]
    assert ends and max(ends) == pytest.approx(1.0) and min(ends) < 0.96
    assert ax.get_xlim()[1] <= 1.01


def test_banner_counts_fits_with_skipped_cells_and_tables_explain_them():
    from sktspt.benchmark.cli import banner
    from sktspt.benchmark.options import Options

    datasets, models = ["ItalyPowerDemand", "BasicMotions"], ["spt-channel", "minirocket"]
    opts = Options(datasets, models, seeds=[0, 1], pretrain_epochs=1, epochs=1,
                   depths=[1, 2], params={}, threads=1)
    skipped = benchmark.skipped_cells(datasets, models, MODELS)
    jobs = benchmark.plan_jobs(datasets, models, [0, 1], [1, 2], MODELS)
    assert [(s.dataset, s.model) for s in skipped] == [("ItalyPowerDemand", "spt-channel")]
    text = banner(jobs, opts, skipped, "loky", 1)
    # spt-channel: BasicMotions, 2 depths x 2 seeds; minirocket: 2 datasets x 2 seeds.
    assert len(jobs) == 8 and text.startswith("8 fits: 2 datasets x 2 models x 2 seeds x 2 depths")
    assert "minirocket: once per seed" in text and "less 4 skipped fits" in text
    assert "skipped: spt-channel on ItalyPowerDemand: it needs a multivariate dataset" in text
    rows = [dict(dataset=d, model=m, seed=0, depth=None, pretrain_epochs=1, epochs=1,
                 accuracy=0.9, fit_s=1.0, predict_s=0.1, n_params=10, error="")
            for d, m in [("ItalyPowerDemand", "minirocket"), ("BasicMotions", "minirocket"),
                         ("BasicMotions", "spt-channel")]]
    tables = benchmark.markdown_tables(pd.DataFrame(rows), skipped)
    assert "| ItalyPowerDemand | — | 0.900 |" in tables
    assert "- — spt-channel did not run on ItalyPowerDemand: it needs a multivariate" in tables
    assert "mean is given only for models that ran on every dataset" in tables


def test_readme_results_table_is_the_archive_pages():
    root = Path(__file__).resolve().parents[1]
    page = (root / "docs" / "results-archive.md").read_text()
    readme = (root / "README.md").read_text()
    section = page.split("## The default classifier against each method", 1)[1]
    rows = [line for line in section.split("\n\n")[2].splitlines() if line.startswith("| ")]
    assert len(rows) > 8 and "docs/results-archive.md" in readme
    for row in rows:
        if "(ours)" not in row:  # the README leaves out our copy of MiniRocket
            assert row in readme, row


def test_machine_description_names_the_cpu_model():
    """Fits reproduce bitwise only on one CPU model, so the pages must say which ran."""
    from sktspt.benchmark.report import cpu_model, machine_description

    model = cpu_model()
    assert model and model in machine_description()


def test_a_results_page_says_which_of_its_sets_shaped_the_defaults():
    from sktspt.benchmark.report import shaping_line

    line = shaping_line(["GunPoint", "Coffee", "PigCVP", "GunPoint", "Wafer"])
    assert line.startswith("- Which sets shaped the defaults: GunPoint is among the development")
    assert "Coffee shaped no default (held out" in line
    assert "PigCVP was held out, but the roll rule" in line  # its test scores were read
    assert "Wafer is not part of the package's tuning" in line
    assert "development" not in shaping_line(["Coffee"])
