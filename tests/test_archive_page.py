"""The archive page: a run's results beside tsml-eval's published default-split accuracies."""

import datetime

import numpy as np
import pandas as pd
import pytest

from sktspt.benchmark.archive import (
    MEDICAL,
    PROBLEM_TYPES,
    PUBLISHED,
    archive_page,
    breakdown,
    depth_section,
    main,
    minirocket_check,
    read_published,
    wdl,
    wilcoxon_p,
)

NAMES = ["Alpha", "Beta", "Gamma", "Delta", "Eps", "Zeta"]


def _published(folder, methods=PUBLISHED):
    rng = np.random.default_rng(0)
    for k, method in enumerate(methods):
        rows = ["Resamples:,0,1,2"] + [
            f"{name},{0.8 + 0.02 * k + 0.01 * i:.4f},{rng.uniform():.3f},{rng.uniform():.3f}"
            for i, name in enumerate(NAMES[:-1])]  # the last dataset has no published result
        (folder / f"{method}_accuracy.csv").write_text("\n".join(rows) + "\n")
    return folder


def _results(spt_gain=0.05):
    rows = []
    for i, name in enumerate(NAMES):
        base = 0.7 + 0.03 * i
        for model, acc in (("spt-span", base + spt_gain), ("scratch", base),
                           ("minirocket", 0.8 + 0.01 * i)):
            rows.append(dict(dataset=name, model=model, seed=0, accuracy=acc, fit_s=10.0,
                             predict_s=1.0, error=""))
    return pd.DataFrame(rows)


def _facts():
    return pd.DataFrame({"length": [24, 150, 500, 1000, 80, 300],
                         "n_train": [20, 50, 300, 1000, 60, 200],
                         "n_classes": [2, 2, 5, 12, 3, 2],
                         "type": ["ECG", "Image", "Sensor", "ECG", "Motion", "Image"]},
                        index=NAMES)


def test_published_files_give_the_default_split_column(tmp_path):
    table = read_published(_published(tmp_path))
    assert list(table.columns) == ["MiniROCKET", "MR-Hydra", "HC2", "InceptionTime",
                                   "H-InceptionTime", "LITETime", "ResNet", "QUANT"]
    assert table.loc["Alpha", "MiniROCKET"] == pytest.approx(0.80)
    assert table.loc["Beta", "HC2"] == pytest.approx(0.85)
    assert table.loc["Alpha", "ResNet"] == pytest.approx(0.92)
    assert "Zeta" not in table.index


def test_missing_or_malformed_published_files_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="MiniROCKET_accuracy.csv is missing"):
        read_published(tmp_path)
    (tmp_path / "MiniROCKET_accuracy.csv").write_text("name,acc\nAlpha,0.9\n")
    with pytest.raises(ValueError, match="no column '0'"):
        read_published(tmp_path, ["MiniROCKET"])
    (tmp_path / "MiniROCKET_accuracy.csv").write_text("Resamples:,0\nAlpha,90\n")
    with pytest.raises(ValueError, match=r"outside \[0, 1\]"):
        read_published(tmp_path, ["MiniROCKET"])


def test_wins_draws_losses_and_wilcoxon():
    a, b = np.array([0.9, 0.8, 0.7, 0.6, np.nan]), np.array([0.8, 0.8, 0.6, 0.5, 0.4])
    assert wdl(a, b) == (3, 1, 0)
    assert np.isnan(wilcoxon_p(a, a))
    ahead = wilcoxon_p(np.linspace(0.6, 0.9, 12) + 0.05, np.linspace(0.6, 0.9, 12))
    assert ahead < 0.01


def test_page_lists_every_dataset_the_published_columns_and_spt_against_each(tmp_path):
    published = read_published(_published(tmp_path))
    results = _results()
    results.loc[(results.dataset == "Gamma") & (results.model == "scratch"), "error"] = "boom"
    text = archive_page(results, published, _facts(), "cmd", datetime.datetime(2026, 1, 1),
                        1.0)
    for name in NAMES:
        assert f"| {name} |" in text
    for method in published.columns:
        assert method in text
    assert "Completed: 5 of 6 datasets" in text and "Gamma/scratch" in text
    assert "SPT wins / draws / losses" in text and "Wilcoxon p" in text
    assert "## Where SPT pays" in text and "| problem type | ECG | 2 of 2 |" in text
    assert "Which sets shaped the defaults" in text


def test_breakdown_reports_spt_minus_scratch_per_group():
    matrix = pd.DataFrame({"SPT": [0.8, 0.9, 0.7, 0.6, 0.5, 0.4],
                           "scratch": [0.7, 0.9, 0.7, 0.5, 0.5, 0.4],
                           "MiniRocket (ours)": [0.9] * 6}, index=NAMES)
    table = breakdown(matrix, _facts())
    ecg = next(line for line in table.splitlines() if "| ECG |" in line)
    assert "+10.0" in ecg and "2 / 0 / 0" in ecg


def test_minirocket_check_names_datasets_more_than_five_points_apart():
    matrix = pd.DataFrame({"MiniRocket (ours)": [0.90, 0.80, 0.70],
                           "MiniROCKET": [0.90, 0.70, 0.71]}, index=["A", "B", "C"])
    lines = minirocket_check(matrix)
    assert "+3.00 points" in lines[0] and "B +10.0" in lines[1] and "C" not in lines[1]


def test_every_archive_dataset_has_a_problem_type():
    assert len(PROBLEM_TYPES) == 93
    assert PROBLEM_TYPES["ECG200"] == "ECG" and PROBLEM_TYPES["GunPoint"] == "Motion"


def test_command_line_writes_the_page_and_its_figure(tmp_path):
    data = tmp_path / "ucr"
    rng = np.random.default_rng(0)
    for name in NAMES:
        (data / name).mkdir(parents=True)
        for split in ("TRAIN", "TEST"):
            lines = [f"{c}\t" + "\t".join(f"{v:.3f}" for v in rng.normal(size=8))
                     for c in (0, 1) * 3]
            (data / name / f"{name}_{split}.tsv").write_text("\n".join(lines) + "\n")
    _results().to_csv(tmp_path / "results.csv", index=False)
    page = tmp_path / "archive.md"
    assert main(["--results", str(tmp_path / "results.csv"), "--published",
                 str(_published(tmp_path)), "--data-dir", str(data), "--write-docs",
                 str(page)]) == 0
    assert "| Zeta |" in page.read_text() and (tmp_path / "archive-cd.png").is_file()


def test_depth_section_gives_spt_minus_scratch_per_depth():
    rows = [dict(dataset=name, model=model, seed=0, depth=depth, error="",
                 accuracy=0.8 + (0.01 * depth if model == "spt-span" else 0))
            for name in ("ECG200", "EOGVerticalSignal") for depth in (3, 6)
            for model in ("spt-span", "scratch")]
    lines = depth_section(pd.DataFrame(rows))
    text = "\n".join(lines)
    assert "| ECG200 | 0.830 / 0.800 (+3.0) | 0.860 / 0.800 (+6.0) |" in text
    assert "- depth 6: SPT − scratch +6.0 points over 2 datasets, 2 / 0 / 0" in text
    assert set(MEDICAL) >= {"ECG200", "EOGVerticalSignal"} and len(MEDICAL) == 7


def test_the_default_row_is_the_classifier_exactly_as_shipped():
    from sktspt import SPTClassifier
    from sktspt.benchmark.datasets import DatasetInfo
    from sktspt.benchmark.models import MODELS, RunConfig

    info = DatasetInfo(name="X", n_channels=1, max_length=20, equal_length=True, n_classes=2,
                       n_train=10, n_test=5)
    cfg = RunConfig(seed=3, pretrain_epochs=7, epochs=9, depth=None, data=info,
                    params={"d_model": 32})
    clf = MODELS["default"].factory(cfg)
    # --epochs and --pretrain-epochs do not reach it: only the seed and --model-params
    assert clf.get_params() == SPTClassifier(random_state=3, d_model=32).get_params()


def test_with_a_default_row_the_page_sets_it_against_each_method_and_names_far_losses(tmp_path):
    from sktspt.benchmark.archive import CAUSES

    published = read_published(_published(tmp_path))
    results = _results()
    default = results[results.model == "scratch"].assign(model="default")
    results = pd.concat([results, default], ignore_index=True)
    # far under the published ResNet on one dataset with a stated cause, one without
    results.loc[(results.model == "default") & (results.dataset == "Alpha"), "accuracy"] = 0.1
    results.loc[(results.model == "default") & (results.dataset == "Beta"), "accuracy"] = 0.2
    CAUSES_before = dict(CAUSES)
    CAUSES["Alpha"] = "a stated cause"
    try:
        text = archive_page(results, published, _facts(), "cmd",
                            datetime.datetime(2026, 1, 1), 1.0,
                            run_command=["first run", "second run"], wall_s=[3600, 1800])
    finally:
        CAUSES.clear()
        CAUSES.update(CAUSES_before)
    assert "## The default classifier against each method" in text
    assert "default wins / draws / losses" in text and "Our 4 models" in text
    assert "default − InceptionTime (points)" in text
    assert "| Alpha | 0.100 |" in text and "a stated cause" in text
    assert "| Beta | 0.200 |" in text and "not yet diagnosed" in text
    assert "- Run: `first run`" in text and "- Run: `second run`" in text
    assert "wall-clock 1.50 h" in text
