"""The speed benchmark's functions on a tiny configuration, and its FLOP count.

No timing is asserted (the machine is shared): only that the tables have the columns the
report needs and hold positive, finite numbers, and that the analytic FLOP count agrees
with torch's own counter.
"""

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import load_benchmark

from sktspt import masking
from sktspt.nn.heads import ClassificationModel, ReconstructionModel
from sktspt.training import fused_adamw_params

speed = load_benchmark("speed")

TINY = replace(
    speed.QUICK, lengths=(32, 96), depths=(1,), d_models=(16,), n_heads=2, n_series=8,
    batch_size=4, epochs=2, reps=2, mvts_lengths=(32,), mvts_epochs=2, mvts_n_series=8,
    gunpoint=False, levers=False,
)


@pytest.fixture(scope="module")
def tables():
    return speed.run(TINY, log=lambda *a: None)


def _positive_finite(df: pd.DataFrame, columns) -> None:
    values = df[list(columns)].to_numpy(dtype=float)
    assert np.isfinite(values).all(), df[list(columns)]
    assert (values > 0).all(), df[list(columns)]


def test_training_table(tables):
    tr = tables["training"]
    assert set(speed.TRAINING_COLUMNS) <= set(tr.columns)
    # One pretraining and one fine-tuning row per (length, depth, d_model).
    assert len(tr) == 2 * len(TINY.lengths)
    assert set(tr.phase) == {"pretrain", "finetune"}
    assert sorted(set(tr.n_timepoints)) == list(TINY.lengths)
    _positive_finite(tr, ["series_per_s_cpu", "series_per_s_wall", "gflop_per_series",
                          "achieved_gflops_cpu", "peak_fraction_cpu", "peak_fraction_wall"])
    assert np.isfinite(tr.peak_rss_mb).all()
    # patch_size="auto" keeps about 32 tokens whatever the length.
    assert (tr.n_tokens <= speed.TARGET_TOKENS).all()


def test_inference_mvts_and_summary_tables(tables):
    inf = tables["inference"]
    assert sorted(set(inf.batch)) == [1, 256]
    _positive_finite(inf, ["latency_ms_cpu", "latency_ms_wall", "series_per_s_cpu"])
    mv = tables["mvts"]
    assert len(mv) == len(TINY.mvts_lengths)
    assert (mv.mvts_tokens == mv.n_timepoints).all()
    _positive_finite(mv, ["spt_series_per_s_cpu", "mvts_series_per_s_cpu", "ratio_cpu",
                          "ratio_wall"])
    _positive_finite(tables["peak"], ["gflops_cpu", "gflops_wall"])
    sc = tables["scaling"]
    assert len(sc) == 2 and np.isfinite(sc.time_exponent).all()
    assert {"target", "goal", "reached", "met"} <= set(tables["targets"].columns)


def test_report_and_outputs(tables, tmp_path):
    info = dict(speed.machine_info(), date="today", duration_s=1.0, reps=TINY.reps)
    report = speed.markdown_report(tables, info, "python benchmarks/speed.py --quick")
    speed.write_outputs(tables, report, tmp_path)
    for name in ("training", "inference", "mvts", "scaling", "targets", "peak"):
        back = pd.read_csv(tmp_path / f"{name}.csv")
        assert len(back) == len(tables[name])
    text = (tmp_path / "speed.md").read_text()
    assert "MVTSTransformerClassifier" in text and "torch" in text
    assert text.count("|---") >= 5


def test_equal_token_rows_become_a_target_and_a_section(tables):
    eq = pd.DataFrame([
        dict(dataset="GunPoint", n_timepoints=150, patch_size=p, spt_tokens=150 // p,
             mvts_tokens=150, repeats=3, spt_series_per_s_cpu=60.0 * r,
             mvts_series_per_s_cpu=60.0, ratio_cpu=r, ratio_cpu_min=r - 0.1,
             ratio_cpu_max=r + 0.1, ratio_wall=r)
        for p, r in ((1, 1.25), (5, 9.5))
    ])
    with_eq = dict(tables, equal_tokens=eq)
    rows = speed.targets(with_eq)
    row = rows[rows.target.str.contains("equal token count")].iloc[0]
    assert row.goal == ">= 5x" and "1.25x" in row.reached and not row.met
    info = dict(speed.machine_info(), date="today", duration_s=1.0, reps=TINY.reps)
    report = speed.markdown_report(dict(with_eq, targets=rows), info, "cmd")
    assert speed.EQUAL_TOKENS_HEADING in report and "| 9.5 |" in report
    assert "equal token count" not in speed.targets(tables).target.str.cat()


def test_cli_rejects_bad_threads():
    with pytest.raises(SystemExit):
        speed.main(["--threads", "0", "--quick"])


def test_steady_needs_a_warm_up_epoch():
    with pytest.raises(ValueError, match="warm-up"):
        speed._steady([speed.Timing(1.0, 1.0)])
    assert speed._steady([speed.Timing(9.0, 9.0), speed.Timing(1.0, 2.0),
                          speed.Timing(3.0, 4.0)]).wall == 2.0


@pytest.mark.parametrize("c, t, p, d, depth, ff", [(1, 48, 3, 16, 2, 32), (3, 40, 5, 24, 1, 48)])
def test_flops_match_flop_counter(c, t, p, d, depth, ff):
    """Analytic training FLOPs equal FlopCounterMode's on the math attention path.

    With dropout > 0, CPU attention runs as plain matmuls, which the counter sees. With
    dropout 0 it runs a fused CPU kernel the counter ignores, so the counted total is the
    analytic one less the attention matmuls: this checks each part separately.
    """
    torch.manual_seed(0)
    k = t // p
    kw = dict(n_channels=c, patch_size=p, max_tokens=k, d_model=d, depth=depth, n_heads=2,
              dim_feedforward=ff)
    shape = dict(n_tokens=k, patch_values=c * p, d_model=d, depth=depth, dim_feedforward=ff)
    n = 4
    X = torch.randn(n, c, t)
    hidden = torch.rand(n, c, t) < 0.3
    for dropout in (0.1, 0.0):
        rec = ReconstructionModel(dropout=dropout, **kw)
        counted = speed.counted_training_flops(rec, lambda m=rec: ((m(X, hidden) - X) ** 2).mean())
        expected = n * speed.training_flops(**shape)
        cls = ClassificationModel(n_classes=3, dropout=dropout, **kw)
        counted_cls = speed.counted_training_flops(cls, lambda m=cls: m(X).sum())
        expected_cls = n * speed.training_flops(head="classification", n_classes=3, **shape)
        if dropout == 0.0:
            attention = 3 * n * speed.forward_flops(**shape)["attention"]
            expected, expected_cls = expected - attention, expected_cls - attention
        assert counted == pytest.approx(expected, rel=1e-6)
        assert counted_cls == pytest.approx(expected_cls, rel=1e-6)


def test_forward_flops_parts_and_validation():
    parts = speed.forward_flops(n_tokens=32, patch_values=5, d_model=64, depth=3,
                                dim_feedforward=128)
    assert parts["attention"] == 3 * 4 * 32 * 32 * 64
    # Training = 3x forward, less the embedding's input gradient.
    total = speed.training_flops(n_tokens=32, patch_values=5, d_model=64, depth=3,
                                 dim_feedforward=128)
    assert total == 3 * sum(parts.values()) - parts["embedding"]
    with pytest.raises(ValueError, match="head"):
        speed.forward_flops(n_tokens=4, patch_values=1, d_model=8, depth=1,
                            dim_feedforward=8, head="bogus")


def test_auto_patching_matches_the_estimators():
    from sktspt import SPTPretrainer

    X = np.random.default_rng(0).normal(size=(6, 1, 1000)).astype(np.float32)
    est = SPTPretrainer(depth=1, d_model=8, architecture__n_heads=2, pretrain_epochs=0).fit(X)
    assert speed.n_tokens_for(1000) == (est.patch_size_, math.ceil(1000 / est.patch_size_))


def test_peak_rss_sees_an_allocation():
    with speed.PeakRSS(interval=0.001) as mem:
        block = np.ones(64 * 2**20 // 8)  # 64 MB, touched
        block.sum()
    del block
    assert mem.mb > 32


def test_fused_adamw_params_build_a_working_optimizer():
    params = fused_adamw_params("cpu")
    assert params in ({}, {"optimizer__fused": True})
    assert fused_adamw_params(None) == {}
    w = torch.nn.Parameter(torch.ones(3))
    opt = torch.optim.AdamW([w], lr=0.1, **{k.split("__")[1]: v for k, v in params.items()})
    w.sum().backward()
    opt.step()
    assert (w < 1).all()


def test_mixed_mask_selection_on_device_matches_host_choice():
    """The accelerator path returns exactly the mask the host path would pick."""
    shape, ratio, span = (5, 3, 40), 0.4, 4.0
    observed = torch.rand(shape, generator=torch.Generator().manual_seed(1)) < 0.9
    choices = ("random", "span", "block", "channel")
    for seed in range(6):
        g = torch.Generator().manual_seed(seed)
        idx = torch.randint(0, 4, (1,), generator=g)
        state = g.get_state()
        got = masking._select_on_device(choices, idx, shape, ratio, span, g, None, observed)
        g.set_state(state)
        candidates = [masking.make_mask(k, shape, ratio, span, g, None, observed)
                      for k in choices]
        assert got.dtype == torch.bool and got.shape == shape
        assert torch.equal(got, candidates[int(idx)])
        assert not (got & ~observed).any()
