"""``benchmarks/probes/extremes_probe.py``: a development set cut to a few series a class."""

import numpy as np
from conftest import load_benchmark


def test_draw_keeps_the_same_count_of_every_class_in_order():
    probe = load_benchmark("probes/extremes_probe")
    y = np.repeat(["a", "b", "c"], [5, 7, 4])
    keep = probe.draw(y, 2, seed=0)
    assert np.all(np.diff(keep) > 0)  # original order, no repeats
    assert sorted(np.unique(y[keep], return_counts=True)[1]) == [2, 2, 2]
    np.testing.assert_array_equal(keep, probe.draw(y, 2, seed=0))
    assert any(not np.array_equal(keep, probe.draw(y, 2, seed=s)) for s in range(1, 5))


def test_a_fit_reports_the_screen_and_a_test_score(monkeypatch):
    probe = load_benchmark("probes/extremes_probe")
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(12).astype(str), 3)
    X = rng.normal(size=(36, 1, 32)).astype(np.float32)
    monkeypatch.setattr(probe, "load_dataset", lambda name: (X, y, X[:6], y[:6], None))
    monkeypatch.setattr(probe, "SPTClassifier", lambda **kw: _tiny(**kw))
    row = probe.fit_score("Toy", 2, seed=0, augment="auto")
    assert row["dataset"] == "Toy" and 0.0 <= row["accuracy"] <= 1.0
    assert row["chose"] in (False, "roll") and "alignment_gain" in row["evidence"]


def _tiny(**kw):
    from sktspt import SPTClassifier

    return SPTClassifier(**{**kw, "depth": 1, "d_model": 16, "architecture__n_heads": 2,
                            "architecture__dim_feedforward": 16, "pretrain_epochs": 1,
                            "max_epochs": 2})
