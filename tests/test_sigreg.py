"""SIGReg: a normality statistic that is ~1 on N(0, I), large elsewhere, and a usable loss."""

import math

import pytest
import torch

from sktspt.objectives import LeJEPALoss, SIGReg, random_directions


def _expected_under_null(t_max: float = 3.0) -> float:
    """Expected value under ``N(0, I)`` for the exact integral on ``[-t_max, t_max]``."""
    half = math.sqrt(2 * math.pi) * math.erf(t_max / math.sqrt(2))
    third = math.sqrt(2 * math.pi / 3) * math.erf(t_max * math.sqrt(3 / 2))
    return half - third


def _normal(n, k, seed):
    return torch.randn(n, k, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("n", [64, 1024])
def test_close_to_its_null_value_on_standard_normal_samples(n):
    sig = SIGReg()
    values = [float(sig(_normal(n, 16, seed), step=seed)) for seed in range(6)]
    mean = sum(values) / len(values)
    assert abs(mean - _expected_under_null()) < 0.3
    assert 0.9 < _expected_under_null() < 1.2


def test_large_on_shrunk_shifted_and_low_rank_clouds():
    sig = SIGReg()
    z = _normal(512, 32, 0)
    null = float(sig(z, step=0))
    basis = torch.linalg.qr(_normal(32, 2, 1))[0].T  # 2 orthonormal rows
    low_rank = _normal(512, 2, 2) @ basis
    for cloud in (0.1 * z, z + 2.0, 3.0 * z, low_rank):
        assert float(sig(cloud, step=0)) > 20 * null


def test_optimising_it_alone_spreads_a_collapsed_cloud():
    g = torch.Generator().manual_seed(0)
    z0 = 0.1 * torch.randn(256, 1, generator=g) @ torch.randn(1, 8, generator=g)
    z0 = z0 + 1e-3 * torch.randn(256, 8, generator=g)
    z = z0.clone().requires_grad_(True)
    sig = SIGReg(n_slices=64)
    opt = torch.optim.Adam([z], lr=0.05)
    for _ in range(150):
        opt.zero_grad()
        sig(z).backward()
        opt.step()
    assert sig.n_steps == 150

    def summary(x):
        cov = torch.cov(x.T)
        eig = torch.linalg.eigvalsh(cov)
        return float(sig(x, step=10**6)), float(cov.trace()), int((eig > 0.1 * eig.max()).sum())

    before, after = summary(z0), summary(z.detach())
    assert after[0] < before[0] / 50
    assert after[1] > 20 * before[1]
    assert before[2] == 1 and after[2] == 8


def test_directions_and_value_depend_only_on_seed_and_step():
    z = _normal(128, 16, 0)
    a, b = SIGReg(seed=3), SIGReg(seed=3)
    assert torch.equal(a(z, step=7), b(z, step=7))
    assert not torch.equal(a(z, step=7), a(z, step=8))
    assert not torch.equal(a(z, step=7), SIGReg(seed=4)(z, step=7))
    d = random_directions(16, 32, seed=3, step=7)
    assert torch.equal(d, random_directions(16, 32, seed=3, step=7))
    assert torch.allclose(d.norm(dim=0), torch.ones(32))


def test_step_counter_advances_in_training_and_is_fixed_in_eval():
    z = _normal(128, 16, 0)
    sig = SIGReg(seed=1)
    first, second = sig(z), sig(z)
    assert sig.n_steps == 2
    assert torch.equal(first, sig(z, step=0)) and torch.equal(second, sig(z, step=1))
    sig.eval()
    assert torch.equal(sig(z), sig(z, step=0)) and sig.n_steps == 2


def test_float32_even_under_autocast():
    z = _normal(256, 16, 0)
    sig = SIGReg()
    expected = sig(z, step=0)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        inside = sig(z, step=0)
    assert inside.dtype == torch.float32
    assert torch.equal(inside, expected)
    bf16 = sig(z.bfloat16(), step=0)
    assert bf16.dtype == torch.float32
    assert torch.allclose(bf16, sig(z.bfloat16().float(), step=0))


def test_views_are_tested_separately_and_averaged():
    sig = SIGReg()
    z = torch.stack([_normal(128, 8, 0), 0.1 * _normal(128, 8, 1)])
    assert torch.allclose(sig(z, step=0), (sig(z[0], step=0) + sig(z[1], step=0)) / 2)


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="shape"):
        SIGReg()(torch.zeros(5))
    with pytest.raises(ValueError, match="n_slices"):
        SIGReg(n_slices=0)
    with pytest.raises(ValueError, match="sigreg_lambda"):
        LeJEPALoss(sigreg_lambda=1.5)
    with pytest.raises(ValueError, match="views"):
        LeJEPALoss(n_global=2)(torch.zeros(1, 4, 3))


def test_lejepa_loss_mixes_prediction_and_sigreg():
    g = torch.Generator().manual_seed(0)
    z = torch.randn(4, 32, 8, generator=g)
    centres = z[:2].mean(0)
    pred = (centres - z).square().mean()
    assert torch.allclose(LeJEPALoss(sigreg_lambda=0.0)(z), pred)
    full = LeJEPALoss(sigreg_lambda=1.0, seed=5)
    assert torch.allclose(full(z), SIGReg(seed=5)(z, step=0))
    mixed = LeJEPALoss(sigreg_lambda=0.25, seed=5)
    assert torch.allclose(mixed(z), 0.75 * pred + 0.25 * SIGReg(seed=5)(z, step=0))
    same = z[:1].expand(4, 32, 8)
    assert float(LeJEPALoss(sigreg_lambda=0.0)(same)) == 0.0
