"""Attention inspection: maps from fitted estimators, proximity profile/summary, plot."""

import numpy as np
import pytest
from conftest import make_panel
from sklearn.exceptions import NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression

from sktspt import SPTClassifier, SPTPretrainer
from sktspt.inspection import (
    attention_maps,
    plot_proximity,
    proximity_profile,
    proximity_summary,
)

TINY = dict(depth=2, d_model=16, architecture__n_heads=2, architecture__dim_feedforward=32,
            tokenizer__patch_size=4,
            batch_size=8, random_state=0)


def _ragged(n=12, seed=0):
    """Series of 2 channels and lengths 48, 40, 32, 24 (12, 10, 8, 6 tokens)."""
    X, y = make_panel(n=n, t=48, seed=seed)
    lengths = [48, 40, 32, 24]
    return [X[i, :, : lengths[i % 4]] for i in range(n)], y, lengths


@pytest.fixture(scope="module")
def fitted():
    X, y, _ = _ragged()
    clf = SPTClassifier(**TINY, pretrain_epochs=1, max_epochs=1).fit(X, y)
    pre = SPTPretrainer(**TINY, pretrain_epochs=1).fit(X)
    return clf, pre


# --- attention_maps ----------------------------------------------------------------------
@pytest.mark.parametrize("which", [0, 1])
def test_attention_maps_shapes_rows_and_padding(fitted, which):
    est = fitted[which]
    X, _, lengths = _ragged()
    maps = attention_maps(est, X)
    assert len(maps) == 2
    real = np.array([lengths[i % 4] // 4 for i in range(len(X))])
    keep = np.arange(12)[None, :] < real[:, None]
    for m in maps:
        assert m.shape == (12, 2, 12, 12) and m.dtype == np.float32
        rows = m.sum(axis=-1)
        np.testing.assert_allclose(rows[keep[:, None, :].repeat(2, 1)], 1.0, atol=1e-5)
        pad_rows = ~keep[:, None, :, None]
        pad_cols = ~keep[:, None, None, :]
        assert (m[np.broadcast_to(pad_rows | pad_cols, m.shape)] == 0).all()
        assert (m[np.broadcast_to(~(pad_rows | pad_cols), m.shape)] > 0).all()


def test_attention_maps_batching_frozen_and_mode(fitted):
    clf, pre = fitted
    X, _, _ = _ragged()
    encoder = pre.net_.module_.encoder
    encoder.train()
    full = attention_maps(FrozenEstimator(pre), X)
    # Left in evaluation mode, as fit leaves it: switching it back would let a
    # prediction in another thread run with dropout on.
    assert not encoder.training
    encoder.eval()
    small = attention_maps(pre, X, batch_size=5)
    for a, b in zip(full, small, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)
    # the classifier's fine-tuned encoder is its own, not the pretrainer's
    assert not np.allclose(attention_maps(clf, X)[0], full[0])


def test_attention_maps_rejects_bad_input(fitted):
    clf, _ = fitted
    with pytest.raises(NotFittedError):
        attention_maps(SPTPretrainer(), np.zeros((2, 1, 8)))
    with pytest.raises(TypeError, match="SPTClassifier or SPTPretrainer"):
        attention_maps(LogisticRegression(), np.zeros((2, 8)))
    with pytest.raises(ValueError, match="channels"):
        attention_maps(clf, np.zeros((2, 3, 48)))
    with pytest.raises(ValueError, match="batch_size"):
        attention_maps(clf, make_panel(n=2)[0], batch_size=0)


def test_alibi_encoder_is_local_at_initialisation():
    """An ALiBi encoder attends locally before any training (its built-in prior)."""
    X, _ = make_panel(n=8, t=64)
    summaries = {}
    for positional in ("alibi", "none"):
        pre = SPTPretrainer(**TINY, architecture__positional=positional, pretrain_epochs=0).fit(X)
        summaries[positional] = proximity_summary(attention_maps(pre, X), w=1)
    alibi, none = summaries["alibi"], summaries["none"]
    # head 0 has the steepest slope (2^-4 with 2 heads); head 1's 2^-8 is nearly flat
    steep = alibi[alibi["head"] == 0]
    assert (steep.spearman > 0.3).all()
    assert (steep.mass_within_w > steep.uniform_mass_within_w).all()
    assert steep.spearman.mean() > none[none["head"] == 0].spearman.mean() + 0.2


# --- hand-made maps ------------------------------------------------------------------------
def _maps_from_scores(scores: np.ndarray, keep: np.ndarray, heads=2, layers=2):
    """Softmax of ``scores (n, k, k)`` over real keys, padding rows zeroed."""
    s = np.where(keep[:, None, :], scores, -np.inf)
    a = np.exp(s - s.max(axis=-1, keepdims=True))
    a = a / a.sum(axis=-1, keepdims=True) * keep[:, :, None]
    m = np.repeat(a[:, None], heads, axis=1)
    return [m.copy() for _ in range(layers)]


def _dist(k):
    return np.abs(np.arange(k)[:, None] - np.arange(k)[None, :]).astype(float)


def test_diagonal_heavy_attention_is_proximal():
    k = 10
    keep = np.ones((4, k), dtype=bool)
    maps = _maps_from_scores(np.broadcast_to(-2.0 * _dist(k), (4, k, k)), keep)
    summary = proximity_summary(maps, w=1)
    assert list(summary.columns[:2]) == ["layer", "head"] and len(summary) == 4
    assert summary.attrs["w"] == 1
    # not exactly 1: edge rows have fewer neighbours, so more mass on each
    assert (summary.spearman > 0.95).all()
    # uniform would put 28 of 100 pairs within ±1 (rows at the edges see 2 keys)
    np.testing.assert_allclose(summary.uniform_mass_within_w, 28 / 100)
    assert (summary.mass_within_w > 0.9).all()
    assert (summary.mean_distance < 0.5).all()
    profile = proximity_profile(maps)
    assert profile.shape == (2, 2, k)
    assert (np.diff(profile, axis=-1) < 0).all()


def test_uniform_attention_has_no_proximity():
    k = 10
    keep = np.ones((3, k), dtype=bool)
    maps = _maps_from_scores(np.zeros((3, k, k)), keep)
    summary = proximity_summary(maps, w=2)
    assert (summary.spearman == 0).all()
    np.testing.assert_allclose(summary.mass_within_w, summary.uniform_mass_within_w)
    np.testing.assert_allclose(proximity_profile(maps), 1 / k)


def test_noisy_uniform_attention_has_near_zero_correlation(rng):
    k = 16
    keep = np.ones((20, k), dtype=bool)
    maps = _maps_from_scores(0.3 * rng.normal(size=(20, k, k)), keep)
    assert proximity_summary(maps).spearman.abs().max() < 0.05


def test_attention_to_far_tokens_gives_negative_correlation():
    k = 8
    keep = np.ones((2, k), dtype=bool)
    maps = _maps_from_scores(np.broadcast_to(_dist(k), (2, k, k)), keep)
    summary = proximity_summary(maps, w=1)
    assert (summary.spearman < -0.9).all()
    assert (summary.mass_within_w < summary.uniform_mass_within_w).all()


def test_variable_length_uniform_attention_is_not_mistaken_for_proximity():
    """Short series have larger probabilities *and* shorter distances; ranking raw
    probabilities would call uniform attention local."""
    k = 12
    keep = np.arange(k)[None, :] < np.array([12, 9, 6, 3])[:, None]
    maps = _maps_from_scores(np.zeros((4, k, k)), keep)
    summary = proximity_summary(maps)
    assert (summary.spearman == 0).all()
    np.testing.assert_allclose(summary.mass_within_w, summary.uniform_mass_within_w)
    # the padding is found without being told, and profile averages real pairs only
    profile = proximity_profile(maps)
    np.testing.assert_allclose(profile, proximity_profile(maps, keep=keep))
    assert np.isfinite(profile).all() and (profile[..., 11] == 1 / 12).all()
    # a distance no pair of real tokens reaches is NaN, not 0
    short = _maps_from_scores(np.zeros((2, k, k)), keep[2:])
    assert np.isnan(proximity_profile(short)[..., 6:]).all()


def test_proximity_inputs_are_validated():
    k = 4
    maps = _maps_from_scores(np.zeros((2, k, k)), np.ones((2, k), dtype=bool))
    with pytest.raises(ValueError, match="shape"):
        proximity_profile(np.zeros((2, 3, 4)))
    with pytest.raises(TypeError, match="non-empty"):
        proximity_summary([])
    with pytest.raises(ValueError, match="same shape"):
        proximity_profile([maps[0], maps[0][:1]])
    with pytest.raises(ValueError, match="w must be"):
        proximity_summary(maps, w=-1)
    with pytest.raises(ValueError, match="keep must have shape"):
        proximity_summary(maps, keep=np.ones((2, 3), dtype=bool))
    with pytest.raises(ValueError, match="finite"):
        proximity_profile([np.full((1, 1, 2, 2), np.nan)])
    np.testing.assert_allclose(proximity_profile(np.stack(maps)), proximity_profile(maps))


# --- plot --------------------------------------------------------------------------------
def test_plot_proximity_returns_figure_and_writes_png(fitted, tmp_path):
    Figure = pytest.importorskip("matplotlib.figure").Figure
    clf, pre = fitted
    X, _, _ = _ragged()
    k = 12
    states = {
        "uniform": _maps_from_scores(np.zeros((len(X), k, k)), np.ones((len(X), k), bool)),
        "after SPT": attention_maps(pre, X),
        "after fine-tuning": attention_maps(clf, X),
    }
    path = tmp_path / "proximity.png"
    fig = plot_proximity(states, title="tiny", path=path, max_distance=8)
    assert isinstance(fig, Figure)
    assert [ax.get_title() for ax in fig.axes] == list(states)
    assert len(fig.axes[0].lines[-1].get_xdata()) == 9
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(TypeError, match="mapping"):
        plot_proximity([])
