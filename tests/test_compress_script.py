"""``benchmarks/compress.py`` end to end on one tiny configuration.

No timing or accuracy is asserted (the machine is shared): only that the script fits with
the estimator's step budget, fuses to the depths asked for, and writes a page, a plot and
raw rows whose numbers are sane.
"""

import json

import numpy as np
from conftest import load_benchmark


def test_compress_script_writes_page(tmp_path):
    compress = load_benchmark("compress")
    out = tmp_path / "compression.md"
    compress.main(["--datasets", "ItalyPowerDemand", "--depth", "3", "--auto-steps", "4",
                   "--steps", "3", "--finetune-steps", "2", "--latency-series", "3",
                   "--fuse-depths", "1", "7", "--output", str(out)])
    rows = json.loads(out.with_suffix(".json").read_text())
    twt = [r for r in rows if r["method"] == "TWT fusion"]
    assert [r["setting"] for r in twt] == ["max_depth=1"]  # 7 >= depth is dropped
    assert twt[0]["depth_kept"] == 1.0
    cut = [r for r in rows if r["method"] == "truncation (control)"]
    assert [(r["setting"], r["depth_kept"]) for r in cut] == [("max_depth=1", 1.0)]
    full = next(r for r in rows if r["method"] == "full model")
    assert full["depth_kept"] == 3.0
    assert all(0.0 <= r["accuracy"] <= 1.0 and np.isfinite(r["speedup256"]) for r in rows)
    page = out.read_text()
    assert "auto_steps=4" in page and "ItalyPowerDemand" in page
    assert out.with_suffix(".png").stat().st_size > 0


def test_compress_script_resume_keeps_measured_pairs(tmp_path, monkeypatch):
    compress = load_benchmark("compress")
    out = tmp_path / "compression.md"
    tiny = ["--depth", "2", "--auto-steps", "2", "--steps", "2", "--finetune-steps", "0",
            "--latency-series", "2", "--output", str(out)]
    compress.main(["--datasets", "ItalyPowerDemand", *tiny])
    first = json.loads(out.with_suffix(".json").read_text())

    measured = []
    real = compress.run_dataset

    def counting(name, seed, args, log):
        measured.append((name, seed))
        return real(name, seed, args, log)

    monkeypatch.setattr(compress, "run_dataset", counting)
    # A second seed of the smallest set is a new pair as much as a second dataset would be,
    # at a fraction of the cost (a multivariate set's 256-series timings took minutes).
    compress.main(["--datasets", "ItalyPowerDemand", "--seeds", "0", "1", "--resume", *tiny])
    rows = json.loads(out.with_suffix(".json").read_text())
    assert measured == [("ItalyPowerDemand", 1)]  # the pair already on disk is not fitted again
    assert rows[: len(first)] == first
    assert {(r["dataset"], r["seed"]) for r in rows} == {("ItalyPowerDemand", 0),
                                                        ("ItalyPowerDemand", 1)}
    assert "1 dataset-seed pairs kept" in out.read_text()
