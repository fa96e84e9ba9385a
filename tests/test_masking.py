"""Masking objectives: ratios, span lengths, structure, determinism."""

import numpy as np
import pytest
import torch

from sktspt.masking import MASKINGS, block_mask, channel_mask, make_mask, random_mask, span_mask


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def run_lengths(mask_rows: torch.Tensor) -> np.ndarray:
    """Lengths of the True runs in each row that touch neither edge."""
    lengths = []
    for row in mask_rows.numpy().astype(int):
        d = np.diff(np.concatenate([[0], row, [0]]))
        starts, ends = np.flatnonzero(d == 1), np.flatnonzero(d == -1)
        for s, e in zip(starts, ends):
            if s > 0 and e < len(row):
                lengths.append(e - s)
    return np.array(lengths)


@pytest.mark.parametrize("ratio", [0.15, 0.3, 0.6])
@pytest.mark.parametrize("kind", ["random", "span", "block"])
def test_realised_ratio_close_to_mask_ratio(kind, ratio):
    m = make_mask(kind, (400, 3, 256), ratio, 5.0, gen())
    assert m.shape == (400, 3, 256) and m.dtype == torch.bool
    assert abs(m.float().mean().item() - ratio) < 0.02


def test_channel_ratio_close_when_all_hidden_is_rare():
    m = channel_mask((4000, 8, 4), 0.3, gen())
    assert abs(m.float().mean().item() - 0.3) < 0.02


@pytest.mark.parametrize("mean_span", [3.0, 8.0])
def test_span_runs_have_requested_mean_length(mean_span):
    m = span_mask((300, 1, 1000), 0.3, mean_span, gen())
    lengths = run_lengths(m[:, 0])
    assert len(lengths) > 1000
    assert abs(lengths.mean() - mean_span) < 0.1 * mean_span


def test_random_mask_has_short_runs():
    lengths = run_lengths(random_mask((100, 1, 1000), 0.3, gen())[:, 0])
    assert lengths.mean() < 1.6


def test_block_hides_same_steps_in_every_channel():
    m = block_mask((50, 5, 200), 0.4, 6.0, gen())
    assert torch.equal(m, m[:, :1].expand_as(m))
    assert 0.3 < m.float().mean() < 0.5


def test_channel_hides_whole_channels_never_all():
    m = channel_mask((2000, 3, 50), 0.9, gen())
    assert torch.equal(m, m[:, :, :1].expand_as(m))
    assert not m[:, :, 0].all(dim=1).any()
    assert m[:, :, 0].sum(dim=1).float().mean() > 1.5


def test_channel_on_univariate_falls_back_to_span():
    m = make_mask("channel", (100, 1, 300), 0.3, 5.0, gen())
    assert 0.2 < m.float().mean() < 0.4
    assert not m[:, 0].all(dim=1).all()


@pytest.mark.parametrize("kind", MASKINGS)
def test_deterministic_under_seed(kind):
    shape = (16, 3, 64)
    a = make_mask(kind, shape, 0.3, 4.0, gen(7))
    b = make_mask(kind, shape, 0.3, 4.0, gen(7))
    c = make_mask(kind, shape, 0.3, 4.0, gen(8))
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


def test_mixed_draws_several_objectives():
    g = gen(0)
    kinds = set()
    for _ in range(40):
        m = make_mask("mixed", (8, 3, 64), 0.5, 4.0, g)
        if torch.equal(m, m[:, :, :1].expand_as(m)):
            kinds.add("channel")
        elif torch.equal(m, m[:, :1].expand_as(m)):
            kinds.add("block")
        else:
            kinds.add("per-value")
    assert kinds == {"channel", "block", "per-value"}


def test_unknown_masking_raises():
    with pytest.raises(ValueError, match="masking must be one of"):
        make_mask("nope", (2, 1, 8), 0.3, 3.0, gen())


# --- a ratio per series (mask_ratio_spread) ----------------------------------------------
def test_no_spread_is_one_ratio_and_draws_nothing():
    from sktspt.masking import draw_ratios

    g = gen(5)
    assert draw_ratios(0.7, 0.0, 10, g) == 0.7
    assert torch.equal(g.get_state(), gen(5).get_state())
    assert torch.equal(make_mask("span", (8, 2, 64), 0.7, 4.0, gen(1), ratio_spread=0.0),
                       make_mask("span", (8, 2, 64), 0.7, 4.0, gen(1)))


def test_spread_ratios_cover_their_range_within_bounds():
    from sktspt.masking import draw_ratios

    r = draw_ratios(0.7, 0.25, 20_000, gen())
    assert r.shape == (20_000,)
    assert 0.45 <= r.min() < 0.46 and 0.94 < r.max() <= 0.95
    assert abs(r.mean().item() - 0.7) < 0.005
    clipped = draw_ratios(0.9, 0.2, 20_000, gen())
    assert clipped.min() >= 0.7 and clipped.max() <= 0.95


@pytest.mark.parametrize("kind", ["random", "span", "block", "channel"])
def test_spread_gives_each_series_its_own_ratio(kind):
    """The mean ratio stays, but series differ far more than one ratio's sampling noise."""
    shape = (600, 64, 10) if kind == "channel" else (600, 2, 400)
    one = make_mask(kind, shape, 0.6, 6.0, gen())
    spread = make_mask(kind, shape, 0.6, 6.0, gen(), ratio_spread=0.3)
    per_series = spread.float().mean(dim=(1, 2))
    assert abs(per_series.mean().item() - 0.6) < 0.03
    assert per_series.std() > 2.5 * one.float().mean(dim=(1, 2)).std()
    assert per_series.std() > 0.1
    if kind == "block":  # every channel of a series still shares its spans
        assert torch.equal(spread[:, 0], spread[:, 1])


def test_spread_masks_follow_the_seed_and_never_hide_missing_values():
    observed = torch.rand(50, 1, 90, generator=gen(3)) > 0.2
    a = make_mask("span", (50, 1, 90), 0.7, 5.0, gen(2), observed=observed, ratio_spread=0.2)
    b = make_mask("span", (50, 1, 90), 0.7, 5.0, gen(2), observed=observed, ratio_spread=0.2)
    assert torch.equal(a, b)
    assert not (a & ~observed).any()
