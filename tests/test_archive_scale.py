"""``benchmarks/archive_scale.py``: training budgets compared on 70/30 cuts of the archive's
large training splits (the evidence for the classifier's budget)."""

import csv

import numpy as np
import pytest
from conftest import ROOT, load_benchmark
from test_archive_verdict import _folder


@pytest.fixture
def scale(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # it imports archive_budget
    return load_benchmark("archive_scale")


def test_an_epoch_floor_changes_only_fits_of_large_training_sets(scale):
    y_small = np.repeat([0, 1], 100)
    today, steps = scale.classifier("today", len(y_small), y_small, 16000)
    floor, floor_steps = scale.classifier("e50", len(y_small), y_small, 16000)
    assert today.max_epochs == floor.max_epochs == "auto" and steps == floor_steps
    y_large = np.repeat([0, 1], 1500)
    today, steps = scale.classifier("today", len(y_large), y_large, 16000)
    floor, floor_steps = scale.classifier("e50", len(y_large), y_large, 16000)
    assert floor.max_epochs == 50 and floor_steps > 2 * steps
    capped, capped_steps = scale.classifier("e500", len(y_large), y_large, 16000)
    assert capped_steps <= 16000 < scale.classifier("e500", len(y_large), y_large, 10**6)[1]
    assert scale.classifier("e50-noaug", len(y_large), y_large, 16000)[0].augment is False
    with pytest.raises(ValueError, match="unknown arm"):
        scale.classifier("e50x", len(y_large), y_large, 16000)


def test_spt_arms_pretrain_within_the_default_steps_or_on_top_of_a_scratch_budget(scale):
    from sktspt import SPTClassifier

    y = np.repeat([0, 1], 1500)
    spt, spt_steps = scale.classifier("spt", len(y), y, 16000)
    assert spt.pretrain_epochs == "auto" and spt.augment == "auto"
    default_steps = SPTClassifier(random_state=0)._planned_steps(len(y), y=y)
    assert abs(spt_steps - default_steps) < 0.05 * default_steps  # equal, to whole epochs
    scratch, scratch_steps = scale.classifier("e50", len(y), y, 16000)
    on_top, on_top_steps = scale.classifier("e50+spt", len(y), y, 16000)
    assert on_top.max_epochs == scratch.max_epochs == 50 and on_top.pretrain_epochs >= 1
    assert scratch_steps < on_top_steps < 2 * scratch_steps
    assert scale.classifier("spt-noaug", len(y), y, 16000)[0].augment is False
    both = scale.classifier("e50-noaug-nomix", len(y), y, 16000)[0]
    assert both.augment is False and both.mixup == 0 and both.max_epochs == 50
    assert scale.classifier("nomix", len(y), y, 16000)[0].get_params()["mixup"] == 0
    with pytest.raises(ValueError, match="unknown arm"):
        scale.classifier("spt+spt", len(y), y, 16000)


def test_one_fit_per_distinct_plan_and_a_stopped_run_resumes(scale, tmp_path, monkeypatch):
    data = _folder(tmp_path / "data", {"Aa": 2, "Bb": 2, "GunPoint": 2}, per_class=6)
    fits = []

    def fit_score(name, arm, data_dir, max_steps):
        fits.append((name, arm))
        acc = {"today": 0.5, "noaug": 0.75}[arm] if name == "Aa" else 1.0
        return {"dataset": name, "arm": arm, "n_fit": 8, "epochs": 200, "steps": 200,
                "augment": "roll" if name == "Aa" else "none", "accuracy": acc, "fit_s": 1.0}

    monkeypatch.setattr(scale, "fit_score", fit_score)
    out = tmp_path / "rows.csv"
    argv = ["--data-dir", str(data), "--min-train", "0", "--output", str(out),
            "--arms", "today", "e50"]
    assert scale.main(argv) == 0
    # the development set is never drawn; on these small sets e50 is today's fit
    assert sorted(fits) == [("Aa", "today"), ("Bb", "today")]
    rows = list(csv.DictReader(out.open()))
    assert {(r["dataset"], r["arm"]) for r in rows} == {
        ("Aa", "today"), ("Aa", "e50"), ("Bb", "today"), ("Bb", "e50")}
    fits.clear()
    # no rolls chosen on Bb: its noaug fit is today's; Aa's must run
    assert scale.main([*argv[:-2], "today", "noaug"]) == 0 and fits == [("Aa", "noaug")]
    rows = list(csv.DictReader(out.open()))
    text = scale.summary(rows)
    assert "| noaug | 2 | 0.875 | +12.5 | 1 / 1 / 0 |" in text
    with pytest.raises(SystemExit):
        scale.main([*argv, "--problems", "GunPoint"])


def test_rows_written_before_the_augment_column_are_kept(scale, tmp_path, monkeypatch):
    data = _folder(tmp_path / "data", {"Aa": 2}, per_class=6)
    out = tmp_path / "rows.csv"
    out.write_text("dataset,arm,n_fit,epochs,steps,accuracy,fit_s\nAa,today,8,200,200,0.5,1.0\n")
    monkeypatch.setattr(scale, "fit_score", lambda *a: pytest.fail("nothing to fit"))
    assert scale.main(["--data-dir", str(data), "--min-train", "0", "--output", str(out),
                       "--arms", "today"]) == 0
    rows = list(csv.DictReader(out.open()))
    assert list(rows[0]) == scale.FIELDS and rows[0]["accuracy"] == "0.5"
