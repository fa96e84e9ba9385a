"""Time-series views, the LeJEPA and masked+SIGReg nets, and the estimator options."""

import pickle

import numpy as np
import pytest
import torch
from conftest import make_panel
from sklearn.base import clone

from sktspt import SPTClassifier, SPTPretrainer
from sktspt.nn.heads import LeJEPAModel, ReconstructionModel
from sktspt.training import LeJEPANet, MaskedPretrainNet, MaskedSigRegNet
from sktspt.views import crop_resample, make_views, valid_lengths


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _ramp(n=200, c=1, t=50):
    return torch.arange(t, dtype=torch.float32).expand(n, c, t).clone()


def test_views_shape_order_and_reproducibility():
    X = torch.randn(5, 3, 40, generator=_gen(1))
    views = make_views(X, n_global=2, n_local=3, generator=_gen(0))
    assert views.shape == (5, 5, 3, 40)
    assert torch.equal(views, make_views(X, 2, 3, _gen(0)))
    assert not torch.equal(views, make_views(X, 2, 3, _gen(1)))


@pytest.mark.parametrize("view, low, high", [(0, 0.6, 1.0), (1, 0.2, 0.5)])
def test_crops_cover_the_configured_share_of_the_series(view, low, high):
    """A crop of a ramp, stretched back to full length, is a ramp of slope = crop share."""
    t = 50
    X = _ramp(t=t)
    views = make_views(X, 1, 1, _gen(0), scale_std=0.0, jitter_std=0.0)
    crops = views[view, :, 0]  # view 0 is global, view 1 local
    slopes = (crops[:, -1] - crops[:, 0]) / (t - 1)
    assert torch.allclose(crops.diff(dim=1), slopes[:, None].expand(-1, t - 1), atol=1e-4)
    assert float(slopes.min()) >= low - 1e-6 and float(slopes.max()) <= high + 1e-6
    assert float(slopes.max() - slopes.min()) > 0.5 * (high - low)
    assert float(crops.min()) >= 0 and float(crops.max()) <= t - 1 + 1e-4


def test_views_keep_padding_and_missing_values_nan():
    X = torch.randn(4, 2, 30, generator=_gen(0))
    X[1, :, 20:] = float("nan")  # a series of length 20
    X[2, 0, 10] = float("nan")  # one missing value
    views = make_views(X, 2, 2, _gen(0))
    assert bool(torch.isnan(views[:, 1, :, 20:]).all())
    assert not bool(torch.isnan(views[:, 1, :, :20]).any())
    assert not bool(torch.isnan(views[:, [0, 3]]).any())
    assert torch.equal(valid_lengths(X), torch.tensor([30, 20, 30, 30]))
    same = crop_resample(X, torch.ones(4), torch.zeros(4))
    assert torch.equal(torch.isnan(same), torch.isnan(X))
    assert torch.allclose(torch.nan_to_num(same), torch.nan_to_num(X))


def test_channel_scaling_and_jitter_have_the_configured_spread():
    ones = torch.ones(500, 3, 20)
    scaled = make_views(ones, 2, 0, _gen(0), scale_std=0.1, jitter_std=0.0)
    assert torch.allclose(scaled, scaled[..., :1].expand_as(scaled))  # one factor per channel
    assert abs(float(scaled[..., 0].std()) - 0.1) < 0.01
    noise = make_views(torch.zeros(500, 3, 20), 2, 0, _gen(0), jitter_std=0.05)
    assert abs(float(noise.std()) - 0.05) < 0.003


def test_views_reject_bad_settings():
    X = torch.zeros(2, 1, 10)
    with pytest.raises(ValueError, match="n_global"):
        make_views(X, 0, 2)
    with pytest.raises(ValueError, match="local_crop"):
        make_views(X, 1, 1, local_crop=(0.5, 0.2))
    with pytest.raises(ValueError, match="jitter_std"):
        make_views(X, 1, 1, jitter_std=-1.0)


def _lejepa_net(lam, epochs=15):
    return LeJEPANet(
        module=LeJEPAModel, module__n_channels=2, module__patch_size=4, module__max_tokens=8,
        module__d_model=16, module__depth=1, module__n_heads=2, module__dim_feedforward=16,
        module__dropout=0.0, module__proj_dim=8, sigreg_lambda=lam, max_epochs=epochs,
        batch_size=32, lr=3e-3, optimizer=torch.optim.AdamW, train_split=None,
    )


def test_sigreg_is_what_prevents_collapse_in_lejepa():
    X, _ = make_panel(n=64, c=2, t=32)
    spread = {}
    for lam in (0.0, 0.05):
        torch.manual_seed(0)
        net = _lejepa_net(lam).fit(X, None)
        losses = net.history[:, "train_loss"]
        assert losses[-1] < losses[0]
        net.module_.eval()
        with torch.no_grad():
            emb, proj = net.module_(torch.from_numpy(X))
        assert emb.shape == (64, 16) and proj.shape == (64, 8)
        spread[lam] = float(proj.std(0).mean())
    assert spread[0.05] > 10 * spread[0.0]


def test_lejepa_net_is_reproducible_and_picklable():
    X, _ = make_panel(n=32, c=2, t=32)
    runs = []
    for _ in range(2):
        torch.manual_seed(0)
        runs.append(_lejepa_net(0.05, epochs=2).fit(X, None))
    assert np.array_equal(runs[0].history[:, "train_loss"], runs[1].history[:, "train_loss"])
    assert runs[0].criterion_.n_global == 2 and runs[0].criterion_.sigreg_lambda == 0.05
    restored = pickle.loads(pickle.dumps(runs[0]))
    assert restored.module_.encoder.d_model == 16


def test_masked_sigreg_adds_exactly_the_weighted_regulariser():
    X, _ = make_panel(n=32, c=2, t=32)
    common = dict(
        module=ReconstructionModel, criterion=torch.nn.MSELoss, module__n_channels=2,
        module__patch_size=4, module__max_tokens=8, module__d_model=16, module__depth=1,
        module__n_heads=2, module__dim_feedforward=16, module__dropout=0.0, max_epochs=3,
        batch_size=16, train_split=None, optimizer=torch.optim.AdamW, mask_seed=3,
        masking="span", mask_ratio=0.3, mean_span=3.0,
    )
    histories = {}
    for name, cls, extra in [("plain", MaskedPretrainNet, {}),
                             ("zero", MaskedSigRegNet, dict(sigreg_lambda=0.0)),
                             ("reg", MaskedSigRegNet, dict(sigreg_lambda=0.5))]:
        torch.manual_seed(0)
        histories[name] = cls(**common, **extra).fit(X, None).history[:, "train_loss"]
    assert np.allclose(histories["plain"], histories["zero"])
    assert histories["reg"][0] > histories["plain"][0] + 0.1


def test_pretrainer_with_lejepa_embeds_and_refuses_to_reconstruct():
    X, _ = make_panel(n=24, c=2, t=32)
    pre = SPTPretrainer(depth=1, d_model=16, architecture__n_heads=2,
                        architecture__dim_feedforward=16, pretrain_epochs=2,
                        pretrain_objective="lejepa", architecture="attention_only",
                        random_state=0).fit(X)
    assert isinstance(pre.net_, LeJEPANet)
    assert pre.transform(X).shape == (24, 16)
    with pytest.raises(ValueError, match="reconstruct"):
        pre.reconstruct(X)
    assert clone(pre).get_params()["pretrain_objective"] == "lejepa"
    again = SPTPretrainer(**pre.get_params()).fit(X)
    assert np.allclose(again.transform(X), pre.transform(X), atol=1e-5)


@pytest.mark.parametrize(
    "params, match",
    [
        (dict(pretrain_objective="jepa"), "pretrain_objective"),
        (dict(pretrain_objective__sigreg_lambda=1.5), "pretrain_objective__sigreg_lambda"),
        (dict(pretrain_objective__sigreg_lambda="0.1"), "pretrain_objective__sigreg_lambda"),
        (dict(architecture="vit"), "architecture"),
    ],
)
def test_estimators_validate_the_new_parameters(params, match):
    X, y = make_panel(n=12, t=16)
    for est in (SPTClassifier(**params), SPTPretrainer(**params)):
        with pytest.raises(ValueError, match=match):
            est.fit(X, y)
