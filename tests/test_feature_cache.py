"""cache_features: the rocket features of the training series computed once per fine-tuning
phase, with rolls and mixup acting on the tokens' features."""

import numpy as np
import pytest
import torch
from conftest import make_panel

from sktspt import SPTClassifier, SPTRegressor, _supervised
from sktspt.augment import mixup, panel_tokens, roll_series, token_panel
from sktspt.loaders import TensorBatchIterator
from sktspt.nn import tokenizers

TINY = dict(depth=1, d_model=16, architecture__n_heads=2, architecture__dim_feedforward=32,
            batch_size=8,
            pretrain_epochs=1, max_epochs=3, random_state=0, device__threads=1)


@pytest.fixture(scope="module")
def uneven():
    """Series of unequal lengths (NaN-padded), so that batches are cut and tokens padded."""
    X, y = make_panel(n=24, c=2, t=64, seed=4)
    X = X.astype(np.float64)
    for i in range(0, 24, 3):
        X[i, :, 40 + i:] = np.nan
    return X, y


@pytest.fixture
def feature_calls(monkeypatch):
    """Counts calls of the rocket tokenizer's feature computation, by series."""
    calls = []
    features = tokenizers.RocketEmbedding.features

    def counted(self, x, available):
        calls.append(len(x))
        return features(self, x, available)

    monkeypatch.setattr(tokenizers.RocketEmbedding, "features", counted)
    return calls


@pytest.mark.parametrize("weights", [False, True])
def test_without_views_the_cached_fit_is_the_same_fit(uneven, weights):
    """No rolls, no mixup: the features are what each step would compute, so the fit is
    the same (bit for bit here), with and without sample weights."""
    X, y = uneven
    sw = np.linspace(0.5, 2, len(y)) if weights else None
    params = dict(TINY, augment=False, mixup=0.0)
    plain = SPTClassifier(**params).fit(X, y, sample_weight=sw)
    cached = SPTClassifier(**params, cache_features=True).fit(X, y, sample_weight=sw)
    np.testing.assert_array_equal(plain.predict_proba(X), cached.predict_proba(X))


def test_features_are_computed_once_per_phase(uneven, feature_calls):
    X, y = uneven
    params = dict(TINY, pretrain_epochs=0, max_epochs=4, augment="roll", mixup=0.4)
    SPTClassifier(**params).fit(X, y)
    every_step = sum(feature_calls)
    assert every_step == 4 * len(X)  # each epoch computes every series' features
    feature_calls.clear()
    clf = SPTClassifier(**params, cache_features=True).fit(X, y)
    assert feature_calls == [len(X)]  # once, for the whole panel
    assert clf.augment_ == "roll" and clf.mixup_ == 0.4
    # The views still act: the fit differs from one without them.
    still = SPTClassifier(**dict(params, augment=False, mixup=0.0), cache_features=True).fit(X, y)
    assert not np.array_equal(clf.predict_proba(X), still.predict_proba(X))


@pytest.mark.parametrize("params", [
    dict(augment="stretch"),  # changes values inside a patch: no token view matches it
    dict(n_estimators=2),
    dict(tokenizer="patch"),
])
def test_not_cached_where_it_does_not_apply(uneven, feature_calls, params):
    X, y = uneven
    clf = SPTClassifier(**dict(TINY, pretrain_epochs=0, max_epochs=2), **params,
                        cache_features=True).fit(X, y)
    assert clf._fixed_features(clf.net_, clf._prepare(X)) is None
    if params.get("tokenizer") != "patch":
        assert sum(feature_calls) >= 2 * len(X)  # computed at every step


def test_a_panel_past_the_memory_bound_is_not_cached(uneven, feature_calls, monkeypatch):
    X, y = uneven
    monkeypatch.setattr(_supervised, "FEATURE_CACHE_VALUES", 100)
    SPTClassifier(**dict(TINY, pretrain_epochs=0, max_epochs=2), cache_features=True).fit(X, y)
    assert sum(feature_calls) == 2 * len(X)


def test_the_regressor_and_self_training_cache_too(uneven, feature_calls):
    X, y = uneven
    SPTRegressor(**dict(TINY, pretrain_epochs=0, max_epochs=3), cache_features=True).fit(
        X, y.astype(float))
    assert feature_calls == [len(X)]
    feature_calls.clear()
    clf = SPTClassifier(**dict(TINY, pretrain_epochs=0, max_epochs=3), self_training=0.5,
                        cache_features=True).fit(X[:12], y[:12], X_unlabeled=X[12:])
    assert clf.n_pseudo_labeled_ > 0
    # The labelled panel once; prediction passes (of 64 series) for the pseudo-labels;
    # then the labelled and pseudo-labelled panel once: no call per step.
    assert feature_calls[0] == 12 and feature_calls[-1] == 12 + clf.n_pseudo_labeled_
    assert set(feature_calls[1:-1]) == {64}


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_cache_features_must_be_a_bool(uneven, value):
    X, y = uneven
    with pytest.raises(TypeError, match="cache_features"):
        SPTClassifier(**TINY, cache_features=value).fit(X, y)


def test_token_panel_views_act_on_tokens():
    g = torch.Generator().manual_seed(0)
    features = torch.randn(3, 5, 4)
    keep = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 1, 1, 0]], dtype=torch.bool)
    panel = token_panel(features, keep)
    assert panel.shape == (3, 4, 5)
    assert torch.isnan(panel[1, :, 3:]).all() and not torch.isnan(panel[1, :, :3]).any()
    back = panel_tokens(panel)
    assert torch.equal(back[keep], features[keep]) and (back[~keep] == 0).all()
    # A roll turns each series' kept tokens among themselves; padding stays padding.
    rolled = panel_tokens(roll_series(panel, torch.tensor([0.4, 0.5, 0.0])))
    assert torch.equal(rolled[0], torch.roll(features[0], 2, dims=0))
    assert torch.equal(rolled[1, :3], torch.roll(features[1, :3], 1, dims=0))
    assert torch.equal(rolled[2], back[2])
    # A blend mixes tokens; where the partner is padding, a token keeps its own features.
    mixed, partner, lam = mixup(panel, 0.4, g, "blend")
    mixed = panel_tokens(mixed)
    for i in range(3):
        both = keep[i] & keep[partner[i]]
        want = lam[i] * features[i] + (1 - lam[i]) * features[partner[i]]
        assert torch.allclose(mixed[i][both], want[both])
        assert torch.equal(mixed[i][keep[i] & ~keep[partner[i]]],
                           features[i][keep[i] & ~keep[partner[i]]])


def test_the_loader_cuts_features_with_their_series():
    """A dict batch is cut after its longest series as a plain one is, and its features
    lose the same trailing tokens."""
    from skorch.dataset import Dataset

    X = np.full((4, 1, 32), np.nan, dtype=np.float32)
    X[:, :, :10] = 1.0  # valid for 10 steps of 32: the batch is cut to 12 (patch 4)
    features = np.arange(4 * 8 * 3, dtype=np.float32).reshape(4, 8, 3)
    data = Dataset({"X": X, "features": features}, np.zeros(4))
    batches = list(TensorBatchIterator(data, batch_size=4, trim_multiple=4, trim_margin=0))
    (Xb, _), = batches
    assert Xb["X"].shape == (4, 1, 12) and Xb["features"].shape == (4, 3, 3)
    assert torch.equal(Xb["features"], torch.from_numpy(features[:, :3]))
    plain = list(TensorBatchIterator(Dataset(X, np.zeros(4)), batch_size=4, trim_multiple=4))
    assert plain[0][0].shape == Xb["X"].shape
