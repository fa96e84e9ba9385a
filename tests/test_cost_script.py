"""``benchmarks/cost.py``: the before/after page's arithmetic, the exported baseline tree,
and the few-labels CV folds of ``benchmarks/tune.py``."""

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import load_benchmark

ROOT = Path(__file__).resolve().parent.parent


def _rows():
    rows = []
    for seed, (before, after) in enumerate([(30.0, 10.0), (50.0, 10.0)]):
        for model, acc, fit, pred in (("spt-before", 0.90, before, 100.0),
                                      ("spt-after", 0.92 - 0.02 * seed, after, 300.0),
                                      ("minirocket", 0.95, 1.0, 1000.0)):
            rows.append({"dataset": "GunPoint", "seed": seed, "model": model, "accuracy": acc,
                         "fit_wall_s": fit, "fit_cpu_s": fit, "predict_series_per_s": pred,
                         "n_train": 50, "n_test": 150})
    return rows


def test_cost_page_reports_means_speed_up_and_accuracy_change():
    cost = load_benchmark("cost")
    page = cost.report(_rows(), "abc123", "python benchmarks/cost.py", 12.0)
    line = next(row for row in page.splitlines() if row.startswith("| GunPoint"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    # before 40 s, after 10 s (means over the seeds): 4x; accuracy .90 -> .91, +1.0 points
    assert cells[1:4] == ["40.0", "10.0", "4.00×"]
    assert cells[5:8] == ["0.900", "0.910", "+1.0"]
    assert cells[9:11] == ["300", "1000"]
    assert "`abc123`" in page and "seeds [0, 1]" in page
    assert "no dataset lost a point or more" in page


def test_cost_page_speed_up_is_the_geometric_mean_beside_the_ratio_of_totals():
    cost = load_benchmark("cost")
    rows = _rows() + [dict(r, dataset="ArrowHead", fit_wall_s=r["fit_wall_s"] / 4
                           if r["model"] == "spt-before" else r["fit_wall_s"],
                           accuracy=r["accuracy"] - (0.03 if r["model"] == "spt-after" else 0))
                      for r in _rows()]
    page = cost.report(rows, "abc123", "python benchmarks/cost.py", 12.0)
    # GunPoint 4x, ArrowHead 1x: geometric mean 2x, arithmetic 2.5x, totals 50/20 = 2.5x
    assert "2.00× (geometric; min 1.00×)" in page
    assert "geometric mean of the per-dataset ratios **2.00×**" in page
    assert "arithmetic mean of the ratios 2.50×" in page
    assert "lost a point or more on ArrowHead -2.0" in page  # .90 -> .88


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(),
                    reason="needs the git checkout")
def test_baseline_tree_is_the_package_at_the_revision(tmp_path):
    cost = load_benchmark("cost")
    folder = cost.export("HEAD", tmp_path)
    head = subprocess.run(["git", "show", "HEAD:sktspt/__init__.py"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout
    assert (folder / "sktspt" / "__init__.py").read_text() == head


def test_few_label_folds_hide_labels_inside_the_training_fold(monkeypatch):
    """``label_fraction`` keeps a stratified tenth of the training fold labelled, passes the
    rest as ``X_unlabeled`` (SPT only) and scores the untouched held-out fold."""
    tune = load_benchmark("tune")
    seen = {}

    class Recorder:
        def __init__(self, **params):
            seen["params"] = params

        def fit(self, X, y, X_unlabeled=None):
            seen["fit"] = (X, y, X_unlabeled)
            return self

        def score(self, X, y):
            seen["score"] = (X, y)
            return 0.5

    monkeypatch.setattr(tune, "SPTClassifier", Recorder)
    X = np.arange(40 * 8, dtype=float).reshape(40, 1, 8)
    y = np.repeat(["a", "b"], 20)
    train, test = np.arange(0, 40, 2), np.arange(1, 40, 2)
    tune.fit_score({"label_fraction": 0.1}, X, y, train, test, False, 0)
    Xl, yl, U = seen["fit"]
    assert sorted(yl) == ["a", "b"]  # one of each class's ten
    assert len(U) == 18 and not set(Xl[:, 0, 0]) & set(U[:, 0, 0])
    assert set(Xl[:, 0, 0]) | set(U[:, 0, 0]) == set(X[train, 0, 0])
    assert "label_fraction" not in seen["params"]
    assert np.array_equal(seen["score"][0], X[test])
    tune.fit_score({"label_fraction": 0.1}, X, y, train, test, True, 0)
    assert seen["fit"][2] is None and seen["params"]["pretrain_epochs"] == 0  # no X_unlabeled


def test_cost_page_second_part_reports_peak_share_mvts_and_length_growth():
    cost = load_benchmark("cost")
    training = {"series_per_s_cpu": 500.0, "achieved_gflops_cpu": 10.0,
                "peak_fraction_cpu": 0.0625}
    scaling = [{"n_timepoints": t, "n_tokens": t // 16, "us_per_series_cpu": 100.0 * t / 128,
                "series_per_s_cpu": 1e6 / (100.0 * t / 128)} for t in (128, 512, 2048)]
    equal = [{"spt_tokens": 150, "mvts_tokens": 150, "patch_size": 1,
              "spt_series_per_s_cpu": 200.0, "mvts_series_per_s_cpu": 100.0, "ratio_cpu": 2.0,
              "ratio_cpu_min": 1.8, "ratio_cpu_max": 2.2},
             {"spt_tokens": 30, "mvts_tokens": 150, "patch_size": 5,
              "spt_series_per_s_cpu": 900.0, "mvts_series_per_s_cpu": 100.0, "ratio_cpu": 9.0,
              "ratio_cpu_min": 8.0, "ratio_cpu_max": 10.0}]
    peers = {"peak": {"gflops_cpu": 160.0}, "gunpoint": training, "equal_tokens": equal,
             "scaling": scaling}
    page = cost.report(_rows(), "abc123", "python benchmarks/cost.py", 12.0, peers=peers)
    assert "**6.2 %** of the peak" in page and "160.0 GFLOP/s" in page
    assert "| one token per step (equal tokens) | 150 | 150 | 200 | 100 | **2.00×** (1.80–2.20) |" \
        in page
    assert "default patching (patch 5)" in page
    assert "length^1.00" in page  # time per series proportional to length here
    assert "| 2048 | 128 | 1600 | 625 |" in page
