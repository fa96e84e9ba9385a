"""Network modules: shapes, patching, padding, the mask indicator, the loss."""

import pytest
import torch

from sktspt.nn import ClassificationModel, ReconstructionModel, TransformerEncoder
from sktspt.nn.encoder import patchify, unpatchify
from sktspt.objectives import masked_reconstruction_loss

KW = dict(n_channels=3, patch_size=4, max_tokens=8, d_model=16, depth=2, n_heads=2,
          dim_feedforward=32, dropout=0.0)


def test_patchify_roundtrip_and_layout():
    x = torch.arange(2 * 3 * 8, dtype=torch.float32).reshape(2, 3, 8)
    tokens = patchify(x, 4)
    assert tokens.shape == (2, 2, 12)
    # token 1 of series 0 holds steps 4..7 of every channel
    assert torch.equal(tokens[0, 1].reshape(3, 4), x[0, :, 4:8])
    assert torch.equal(unpatchify(tokens, 3, 4), x)


@pytest.mark.parametrize("positional", ["sinusoidal", "learned", "rotary", "alibi", "none"])
def test_encoder_shapes(positional):
    torch.manual_seed(0)
    enc = TransformerEncoder(**KW, positional=positional)
    x = torch.randn(5, 3, 32)
    obs = torch.ones_like(x, dtype=torch.bool)
    h, keep = enc(x, obs, obs)
    assert h.shape == (5, 8, 16) and keep.all()
    maps = enc.attention_maps(x, obs, obs)
    assert len(maps) == 2 and maps[0].shape == (5, 2, 8, 8)
    assert torch.allclose(maps[0].sum(-1), torch.ones(5, 2, 8), atol=1e-5)


def test_mask_indicator_distinguishes_hidden_zero_from_observed_zero():
    torch.manual_seed(0)
    enc = TransformerEncoder(**KW)
    x = torch.zeros(1, 3, 32)
    obs = torch.ones_like(x, dtype=torch.bool)
    hidden = obs.clone()
    hidden[..., :4] = False
    h_obs, _ = enc(x, obs, obs)
    h_hid, _ = enc(x, hidden, obs)
    assert not torch.allclose(h_obs, h_hid)


def test_padding_tokens_do_not_change_real_tokens():
    torch.manual_seed(0)
    model = ClassificationModel(n_classes=3, **{**KW, "max_tokens": 16})
    model.eval()
    X = torch.randn(2, 3, 32)
    padded = torch.cat([X, torch.full((2, 3, 32), float("nan"))], dim=2)
    assert torch.allclose(model(X), model(padded), atol=1e-5)


def test_reconstruction_model_output_shape():
    model = ReconstructionModel(**KW)
    X = torch.randn(4, 3, 32)
    hidden = torch.rand(4, 3, 32) < 0.3
    assert model(X, hidden).shape == X.shape


def test_loss_counts_only_hidden_observed_values():
    X = torch.randn(2, 1, 8)
    X[0, 0, 0] = float("nan")
    hidden = torch.zeros(2, 1, 8, dtype=torch.bool)
    hidden[:, :, :2] = True
    recon = torch.nan_to_num(X.clone())
    recon[:, :, 2:] += 100.0  # visible values: ignored
    recon[0, 0, 0] = 1e6  # missing value: ignored
    assert masked_reconstruction_loss(recon, X, hidden).item() == 0.0
    recon[1, 0, 1] += 3.0
    assert masked_reconstruction_loss(recon, X, hidden).item() == pytest.approx(9.0 / 3)


def test_loss_with_nothing_hidden_is_zero_not_nan():
    X = torch.randn(2, 1, 8)
    loss = masked_reconstruction_loss(X + 1, X, torch.zeros_like(X, dtype=torch.bool))
    assert loss.item() == 0.0
