"""The difference view (``differences``): slopes beside the series, hidden values kept hidden."""

import numpy as np
import pytest
import torch
from conftest import make_panel

from sktspt import SPTClassifier, SPTPretrainer, load
from sktspt.nn.differences import DifferenceView, difference
from sktspt.nn.heads import ReconstructionModel
from sktspt.nn.panel_fit import fit_to_panel

TINY = dict(depth=1, d_model=8, architecture__n_heads=2, architecture__dim_feedforward=8,
            architecture__dropout=0.0, random_state=0,
            batch_size=8, device__threads=1)


def test_difference_is_the_slope_where_both_steps_are_available():
    x = torch.arange(8.0).reshape(1, 1, 8) ** 2
    available = torch.ones_like(x, dtype=torch.bool)
    d, a = difference(x, available)
    assert d[0, 0].tolist() == [0, 1, 3, 5, 7, 9, 11, 13] and not a[0, 0, 0]
    available[0, 0, 4] = False
    d, a = difference(x, available)
    assert a[0, 0].tolist() == [False, True, True, True, False, False, True, True]
    assert (d[~a] == 0).all()


def test_fitted_scales_give_unit_rms_on_the_training_panel():
    g = torch.Generator().manual_seed(0)
    X = torch.cumsum(torch.randn(10, 2, 50, generator=g), dim=-1) * torch.tensor([[1.0], [30.0]])
    X[0, 0, 20:] = float("nan")  # a short series: its padding is not a slope
    view = DifferenceView(2, n_channels=2)
    fit_to_panel(view, X.numpy())
    available = ~torch.isnan(X)
    out, flags = view(torch.nan_to_num(X), available)
    assert out.shape == flags.shape == (10, 6, 50)
    torch.testing.assert_close(out[:, :2], torch.nan_to_num(X))
    assert not flags[:, 2:4, 0].any() and not flags[:, 4:, :2].any()  # 1 and 2 steps lost
    for c in range(2, 6):
        rms = out[:, c][flags[:, c]].square().mean().sqrt()
        assert abs(rms.item() - 1) < 1e-4
    # channel 1 is 30 times steeper: its scale, not its slopes, says so
    torch.testing.assert_close(view.scale[0, 1] / view.scale[0, 0], torch.tensor(30.0),
                               rtol=0.2, atol=0)


def test_constant_channels_keep_zero_slopes():
    view = DifferenceView(1, n_channels=1)
    fit_to_panel(view, np.ones((4, 1, 10), dtype=np.float32))
    out, _ = view(torch.ones(4, 1, 10), torch.ones(4, 1, 10, dtype=torch.bool))
    assert view.scale.item() == 1.0 and (out[:, 1] == 0).all()


@pytest.mark.parametrize("tokenizer", ["conv", "patch"])
def test_reconstruction_cannot_read_a_hidden_value_from_a_slope(tokenizer):
    """What the network sees does not depend on the hidden values in any view."""
    torch.manual_seed(0)
    model = ReconstructionModel(n_channels=2, patch_size=4, max_tokens=8, d_model=8, depth=1,
                                n_heads=2, dim_feedforward=8, dropout=0.0,
                                tokenizer=tokenizer, differences=2).eval()
    X = torch.randn(4, 2, 32)
    hidden = torch.zeros_like(X, dtype=torch.bool)
    hidden[:, :, 10:15] = True
    changed = X.clone()
    changed[hidden] += 5.0
    with torch.no_grad():
        torch.testing.assert_close(model(X, hidden), model(changed, hidden))
        # ... whereas without the mask the same change is seen
        assert not torch.allclose(model(X), model(changed))


def test_a_classifier_with_differences_fits_saves_and_reloads(tmp_path):
    X, y = make_panel(n=24, c=2, t=32)
    clf = SPTClassifier(differences=1, pretrain_epochs=1, max_epochs=2, tokenizer="conv",
                        **TINY).fit(X, y)
    assert clf.encoder_kwargs_["differences"] == 1
    # the stem reads the 2 channels, their 2 slopes and a flag for each of the 4
    assert clf.net_.module_.encoder.embed.branches[0].in_channels == 8
    assert (clf.encoder_.difference_view.scale != 1).all()  # fitted, and saved below
    clf.save(tmp_path / "model.sktspt")
    again = load(tmp_path / "model.sktspt")
    assert again.differences == 1
    np.testing.assert_array_equal(again.predict_proba(X), clf.predict_proba(X))


def test_a_fitted_pretrainer_fixes_differences():
    X, y = make_panel(n=24, c=1, t=32)
    pre = SPTPretrainer(differences=2, pretrain_epochs=1, **TINY).fit(X)
    clf = SPTClassifier(pretrainer=pre, max_epochs=1, **TINY).fit(X, y)
    assert clf.encoder_kwargs_["differences"] == 2
    torch.testing.assert_close(clf.encoder_.difference_view.scale,
                               pre.encoder_.difference_view.scale)
    with pytest.warns(UserWarning, match="differences=1"):
        SPTClassifier(pretrainer=pre, differences=1, max_epochs=1, **TINY).fit(X, y)


def test_differences_change_what_a_fit_learns():
    X, y = make_panel(n=24, c=1, t=32)
    plain = SPTClassifier(pretrain_epochs=1, max_epochs=2, **TINY).fit(X, y)
    slopes = SPTClassifier(differences=1, pretrain_epochs=1, max_epochs=2, **TINY).fit(X, y)
    assert not np.allclose(plain.predict_proba(X), slopes.predict_proba(X))


@pytest.mark.parametrize("value", [-1, 1.5, True, "1"])
def test_bad_differences_are_refused_at_fit(value):
    X, y = make_panel(n=24, c=1, t=32)
    with pytest.raises(ValueError, match="differences must be a non-negative integer"):
        SPTClassifier(differences=value, **TINY).fit(X, y)


def test_every_member_of_an_ensemble_scales_its_differences():
    X, y = make_panel(n=24, c=1, t=32)
    clf = SPTClassifier(differences=1, n_estimators=2, pretrain_epochs=1, max_epochs=1,
                        **TINY).fit(X, y)
    scales = [m.encoder.difference_view.scale for m in clf.net_.module_.members]
    assert (scales[0] != 1).all()
    torch.testing.assert_close(scales[0], scales[1])


def test_reconstruction_targets_the_slopes_a_hidden_value_enters():
    model = ReconstructionModel(n_channels=1, patch_size=4, max_tokens=4, d_model=8, depth=1,
                                n_heads=2, dim_feedforward=8, differences=1)
    X = torch.arange(16.0).reshape(1, 1, 16) ** 2
    X[0, 0, 12:] = float("nan")  # padding: never a target
    hidden = torch.zeros_like(X, dtype=torch.bool)
    hidden[0, 0, 5] = True
    target, scored = model.targets(X, hidden)
    assert model(X, hidden).shape == target.shape == (1, 2, 16)
    assert scored[0, 0].nonzero().flatten().tolist() == [5]
    assert scored[0, 1].nonzero().flatten().tolist() == [5, 6]  # x5 - x4 and x6 - x5
    assert target[0, 1, 6] == 11 and target[0, 1, 12:].isnan().all()


def test_a_pretrainer_with_differences_reconstructs_the_values_alone():
    X, _ = make_panel(n=24, c=2, t=32)
    pre = SPTPretrainer(differences=1, pretrain_epochs=1, **TINY).fit(X)
    hidden = np.zeros(X.shape, dtype=bool)
    hidden[:, :, 8:12] = True
    assert pre.reconstruct(X, hidden).shape == X.shape


def test_the_availability_alone_matches_the_view():
    available = torch.rand(3, 2, 40, generator=torch.Generator().manual_seed(0)) > 0.3
    view = DifferenceView(2, n_channels=2)
    _, flags = view(torch.randn(3, 2, 40), available)
    assert torch.equal(view.available(available), flags)
