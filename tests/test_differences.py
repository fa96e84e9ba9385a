"""The difference view (``differences``): slopes beside the series, hidden values kept hidden."""

import numpy as np
import pytest
import torch
from conftest import make_panel

from sktspt import SPTClassifier, SPTPretrainer, load
from sktspt.nn.differences import DifferenceView, difference
from sktspt.nn.heads import ReconstructionModel

TINY = dict(depth=1, d_model=8, n_heads=2, dim_feedforward=8, dropout=0.0, random_state=0,
            batch_size=8, n_threads=1)


def test_difference_is_the_slope_scaled_to_unit_rms():
    x = torch.tensor([[[0.0, 1.0, 3.0, 6.0, 10.0]]])
    d, a = difference(x, torch.ones_like(x, dtype=torch.bool))
    slopes = torch.tensor([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(d[0, 0, 1:], slopes / slopes.square().mean().sqrt(), rtol=1e-6)
    assert d[0, 0, 0] == 0 and a.tolist() == [[[False, True, True, True, True]]]


def test_an_unavailable_step_makes_both_of_its_differences_unavailable():
    x = torch.arange(8.0).reshape(1, 1, 8) ** 2
    available = torch.ones_like(x, dtype=torch.bool)
    available[0, 0, 4] = False
    d, a = difference(x, available)
    assert a[0, 0].tolist() == [False, True, True, True, False, False, True, True]
    assert (d[~a] == 0).all()


def test_the_view_stacks_orders_after_the_series():
    x = torch.randn(3, 2, 20)
    available = torch.ones_like(x, dtype=torch.bool)
    out, flags = DifferenceView(2)(x, available)
    assert out.shape == flags.shape == (3, 6, 20)
    torch.testing.assert_close(out[:, :2], x)
    assert not flags[:, 2:4, 0].any() and not flags[:, 4:, :2].any()  # 1 and 2 steps lost
    d1, _ = difference(x, available)
    torch.testing.assert_close(out[:, 2:4], d1)


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
    clf = SPTClassifier(differences=1, pretrain_epochs=1, max_epochs=2, **TINY).fit(X, y)
    assert clf.encoder_kwargs_["differences"] == 1
    # the stem reads the 2 channels, their 2 slopes and a flag for each of the 4
    assert clf.net_.module_.encoder.embed.branches[0].in_channels == 8
    clf.save(tmp_path / "model.sktspt")
    again = load(tmp_path / "model.sktspt")
    assert again.differences == 1
    np.testing.assert_array_equal(again.predict_proba(X), clf.predict_proba(X))


def test_a_fitted_pretrainer_fixes_differences():
    X, y = make_panel(n=24, c=1, t=32)
    pre = SPTPretrainer(differences=2, max_epochs=1, **TINY).fit(X)
    clf = SPTClassifier(pretrainer=pre, max_epochs=1, **TINY).fit(X, y)
    assert clf.encoder_kwargs_["differences"] == 2
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
