"""``benchmarks/tune.py --summarize --against``: paired per-fold comparison of configs."""

import pytest
from conftest import load_benchmark

ROWS = """config,dataset,model,fold,cv_accuracy,seconds
base,A,spt,0,0.50,1
base,A,spt,1,0.70,1
base,B,spt,0,0.90,1
base,B,spt,1,0.80,1
new,A,spt,0,0.60,1
new,A,spt,1,0.80,1
new,B,spt,0,0.90,1
new,B,scratch,1,0.10,1
"""


def test_compare_pairs_folds_and_skips_unscored(tmp_path):
    tune = load_benchmark("tune")
    path = tmp_path / "r.csv"
    path.write_text(ROWS)
    table = tune.compare(str(path), "base").splitlines()
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ") for line in table[2:]}
    assert rows["base"][1:3] == ["4", "0.725"] and rows["base"][3].startswith("+0.000")
    # "new" has spt scores on three folds (B fold 1 is scratch only): only those pair up
    assert rows["new"][1] == "3"
    assert rows["new"][2] == f"{((0.6 + 0.8) / 2 + 0.9) / 2:.3f}"
    assert rows["new"][3].startswith("+0.067")  # (+.1, +.1, 0) / 3
    assert "A 0.700" in rows["new"][4] and "B 0.900" in rows["new"][4]


def test_compare_names_a_missing_baseline(tmp_path):
    tune = load_benchmark("tune")
    path = tmp_path / "r.csv"
    path.write_text(ROWS)
    with pytest.raises(ValueError, match="'nope' has no spt rows"):
        tune.compare(str(path), "nope")
