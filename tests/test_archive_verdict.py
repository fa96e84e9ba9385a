"""``benchmarks/archive_verdict.py``: SPT against scratch on 70/30 cuts of archive training
splits (the evidence for the classifier's default), and the cut it shares with
``benchmarks/archive_budget.py``."""

import csv

import numpy as np
from conftest import ROOT, load_benchmark


def _folder(root, classes: dict[str, int], per_class: int = 2):
    rng = np.random.default_rng(0)
    for name, k in classes.items():
        (root / name).mkdir(parents=True)
        for split in ("TRAIN", "TEST"):
            lines = [f"{c}\t" + "\t".join(f"{v:.3f}" for v in rng.normal(size=16) + c)
                     for c in range(k) for _ in range(per_class)]
            (root / name / f"{name}_{split}.tsv").write_text("\n".join(lines) + "\n")
    return root


def test_a_cut_is_stratified_only_where_the_classes_allow(tmp_path):
    budget = load_benchmark("archive_budget")
    data = _folder(tmp_path, {"Few": 2, "Many": 10}, per_class=4)
    _, _, y_fit, y_val = budget.holdout("Few", str(data))
    assert len(y_val) == 3 and len(np.unique(y_fit)) == 2
    # 10 classes of 4: the 30 % (12 series) holds one of each, so stratified
    _, _, y_fit, y_val = budget.holdout("Many", str(data))
    assert len(np.unique(y_val)) == 10
    # 10 classes of 2: the 30 % (6 series) cannot hold one of each: a plain random cut
    data = _folder(tmp_path / "two", {"Pairs": 10}, per_class=2)
    _, _, y_fit, y_val = budget.holdout("Pairs", str(data))
    assert len(y_fit) + len(y_val) == 20 and len(y_val) == 6


def test_the_verdict_fits_both_arms_resumes_and_summarises(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # it imports archive_budget
    verdict = load_benchmark("archive_verdict")
    data = _folder(tmp_path / "data", {"Aa": 2, "Bb": 2, "GunPoint": 2}, per_class=6)
    fits = []

    def fit_score(name, model, data_dir, depth):
        fits.append((name, model))
        return name, model, {"spt": 0.5, "scratch": 0.75}[model] if name == "Aa" else 1.0, 0.1

    monkeypatch.setattr(verdict, "fit_score", fit_score)
    out = tmp_path / "rows.csv"
    argv = ["--data-dir", str(data), "--n-problems", "2", "--output", str(out)]
    assert verdict.main(argv) == 0
    assert sorted(fits) == [("Aa", "scratch"), ("Aa", "spt"), ("Bb", "scratch"), ("Bb", "spt")]
    fits.clear()
    assert verdict.main(argv) == 0 and fits == []  # every row already there: resumed
    rows = list(csv.DictReader(out.open()))
    text = verdict.verdict(rows)
    assert "| Aa | 0.500 | 0.750 | -25.0 |" in text
    assert "SPT − scratch -12.5 points, 0 / 1 / 1" in text
    assert "GunPoint" not in text  # a development set is never drawn


def test_both_arms_take_the_same_steps_and_only_spt_pretrains(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    verdict = load_benchmark("archive_verdict")
    data = _folder(tmp_path, {"Aa": 2}, per_class=6)
    import sktspt

    seen = {}
    real = sktspt.SPTClassifier

    def tiny(**kw):
        clf = real(**kw, depth=1, d_model=8, architecture__n_heads=2,
                   architecture__dim_feedforward=8)
        seen[kw["pretrain_epochs"]] = clf
        return clf

    monkeypatch.setattr(sktspt, "SPTClassifier", tiny)
    import sktspt._routed as routed
    import sktspt._supervised as supervised

    monkeypatch.setattr(routed, "PHASE_STEPS", 20)
    monkeypatch.setattr(supervised, "PHASE_STEPS", 20)
    # no epoch floor: at a 20-step phase it would dominate these 8 series' tiny budget
    monkeypatch.setattr(real, "_auto_min_epochs", 0)
    for model in ("spt", "scratch"):
        name, arm, acc, _ = verdict.fit_score("Aa", model, str(data), None)
        assert (name, arm) == ("Aa", model) and 0 <= acc <= 1
    spt, scratch = seen["auto"], seen[0]
    assert spt.pretrain_history_ is not None and scratch.pretrain_history_ is None
    steps = [sum(len(e["batches"]) for h in (c.pretrain_history_, c.history_) if h for e in h)
             for c in (spt, scratch)]
    assert steps[0] == steps[1]
