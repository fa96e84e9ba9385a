"""``benchmarks/sweep.py``: the job order that keeps a cut-off sweep paired, and its summary."""

import sys

import pytest
from conftest import load_benchmark


def test_plan_puts_every_config_of_a_fold_together():
    sweep = load_benchmark("sweep")
    jobs = sweep.plan(["a", "b"], ["a"], ["D1", "D2"], [0, 1], folds=3)
    assert len(jobs) == 3 * 2 * 2 * 3
    # each block of three jobs is one (seed, dataset, fold) scored by every config and model
    for start in range(0, len(jobs), 3):
        block = jobs[start:start + 3]
        assert {(j[0], j[2]) for j in block} == {("a", "spt"), ("b", "spt"), ("a", "scratch")}
        assert len({(j[3], j[1], j[4]) for j in block}) == 1
    # CV seeds are the outer loop: the first seed is complete before the second starts
    assert [j[3] for j in jobs] == [0] * 18 + [1] * 18


ROWS = """config,dataset,model,cv_seed,fold,cv_accuracy,seconds,note
base,A,spt,0,0,0.50,1,
base,A,spt,1,0,0.70,1,
new,A,spt,0,0,0.60,1,
new,A,spt,1,0,0.60,1,
base,A,scratch,0,0,0.40,1,
"""


def test_summary_pairs_folds_of_the_same_cv_seed(tmp_path):
    sweep = load_benchmark("sweep")
    path = tmp_path / "s.csv"
    path.write_text(ROWS)
    text = sweep.summary(str(path), "base")
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ") for line in text.splitlines()
            if line.startswith("| new") or line.startswith("| base")}
    # fold 0 of seed 0 and fold 0 of seed 1 are two pairs: +.1 and -.1
    assert rows["new"][1] == "2" and rows["new"][3].startswith("+0.000")
    assert rows["new"][4] == "1 / 1"
    assert "scratch" in text  # the mean table shows the scratch rows beside SPT's


def test_unknown_config_is_refused(monkeypatch, tmp_path):
    sweep = load_benchmark("sweep")
    monkeypatch.setattr(sys, "argv", ["sweep.py", "--configs", "nope",
                                      "--output", str(tmp_path / "s.csv")])
    with pytest.raises(SystemExit):
        sweep.main()
    assert not (tmp_path / "s.csv").exists()
