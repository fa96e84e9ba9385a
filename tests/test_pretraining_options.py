"""mask_channels (masking of chosen channels only) and the masking ratio's spread."""

import numpy as np
import pytest
import torch

from sktspt import SPTClassifier, SPTPretrainer
from sktspt.masking import make_mask

TINY = dict(depth=1, d_model=8, architecture__n_heads=2, architecture__dim_feedforward=8,
            architecture__dropout=0.0, random_state=0,
            batch_size=8)


@pytest.mark.parametrize("kind", ["random", "span", "block", "channel", "mixed"])
def test_mask_hides_only_the_chosen_channels(kind):
    g = torch.Generator().manual_seed(0)
    masks = torch.stack([
        make_mask(kind, (16, 4, 50), 0.3, 3.0, g, channels=(1, 3)) for _ in range(10)
    ])
    assert not masks[:, :, [0, 2]].any()  # covariates always visible
    hidden = masks[:, :, [1, 3]].float().mean().item()
    assert 0.15 < hidden < 0.45  # the objective's ratio holds on the chosen channels


def test_pretraining_never_reconstructs_the_visible_channels():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(16, 3, 24))
    pre = SPTPretrainer(pretrain_epochs=1, masking__channels=[2], masking="random", **TINY).fit(X)
    net = pre.net_
    hidden = net.draw_mask(torch.from_numpy(pre._prepare(X)), torch.Generator().manual_seed(1))
    assert hidden[:, 2].any() and not hidden[:, :2].any()
    # The loss counts hidden values only: changing the reconstruction of channels 0 and 1
    # does not change it.
    Xt = torch.from_numpy(pre._prepare(X))
    with torch.no_grad():
        recon = net.module_(Xt, hidden)
        from sktspt.objectives import masked_reconstruction_loss

        base = masked_reconstruction_loss(recon, Xt, hidden)
        recon[:, :2] += 100.0
        assert masked_reconstruction_loss(recon, Xt, hidden) == base


@pytest.mark.parametrize(
    ("channels", "match"),
    [([3], r"names channel\(s\) \[3\], but X has 3 channel"), ([-1], r"\[-1\]"),
     ([], "non-empty list"), ([0.5], "channel indices"), ([1, 1], "repeated"),
     ("0", "non-empty list")],
)
def test_mask_channels_is_validated_against_the_data(channels, match):
    X = np.random.RandomState(0).normal(size=(10, 3, 12))
    with pytest.raises(ValueError, match=match):
        SPTPretrainer(pretrain_epochs=1, masking__channels=channels, **TINY).fit(X)


def test_unequal_length_fit_with_masked_channels_predicts_shorter_series():
    rng = np.random.RandomState(0)
    X = [rng.normal(size=(2, n)) for n in rng.randint(30, 41, size=24)]
    y = np.arange(24) % 2
    clf = SPTClassifier(pretrain_epochs=2, max_epochs=2, masking__channels=[0], **TINY).fit(X, y)
    assert not clf.equal_length_
    short = [x[:, :n] for x, n in zip(X[:6], (3, 5, 8, 10, 12, 29))]
    proba = clf.predict_proba(short)
    assert proba.shape == (6, 2) and np.isfinite(proba).all()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert clf.predict(short).shape == (6,)
    assert clf.transform(short).shape == (6, 8)


def test_mask_ratio_spread_reaches_pretraining_masks_and_is_validated():
    from conftest import make_panel

    X, y = make_panel(n=24, t=64)
    pre = SPTPretrainer(masking__ratio_spread=0.3, depth=1, d_model=16, pretrain_epochs=2,
                        random_state=0).fit(X)
    assert pre.net_.ratio_spread == 0.3
    masks = pre.net_.draw_mask(torch.zeros(400, 1, 64), torch.Generator().manual_seed(0))
    assert masks.float().mean(dim=(1, 2)).std() > 0.1
    for bad in (0.5, -0.1, True, "wide"):
        with pytest.raises((ValueError, TypeError), match="masking__ratio_spread"):
            SPTClassifier(masking__ratio_spread=bad, pretrain_epochs=1, max_epochs=1).fit(X, y)
