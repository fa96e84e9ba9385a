"""White-box encoders (CRATE, attention-only): structure, padding, and use in the estimators."""

import numpy as np
import pytest
import torch
from conftest import make_panel
from torch import nn

from sktspt import SPTClassifier
from sktspt.nn.encoder import EncoderLayer, TransformerEncoder
from sktspt.nn.positional import POSITIONALS
from sktspt.nn.whitebox import (
    ARCHITECTURES,
    ISTA,
    MSSA,
    AttentionOnlyLayer,
    CRATELayer,
    encoder_layer,
)

D, HEADS = 16, 2


def _tokens(n=3, k=6, d=D, seed=0):
    return torch.randn(n, k, d, generator=torch.Generator().manual_seed(seed))


def test_mssa_has_one_bias_free_in_projection_shared_by_q_k_v():
    torch.manual_seed(0)
    attn = MSSA(D, HEADS, dropout=0.0, positional="none")
    linears = [m for m in attn.modules() if isinstance(m, nn.Linear)]
    assert len(linears) == 2  # U and the output map, no separate q/k/v
    assert attn.U.weight.shape == (D, D) and attn.U.bias is None
    assert not hasattr(attn, "qkv")
    x, keep = _tokens(), torch.ones(3, 6, dtype=torch.bool)
    w = attn.U(x).reshape(3, 6, HEADS, D // HEADS).transpose(1, 2)
    probs = torch.softmax(w @ w.transpose(-2, -1) / (D // HEADS) ** 0.5, dim=-1)
    manual = attn.out((probs @ w).transpose(1, 2).reshape(3, 6, D))
    assert torch.allclose(attn(x, keep), manual, atol=1e-5)
    assert torch.allclose(attn.attention_weights(x, keep), probs, atol=1e-6)


def test_ista_with_identity_dictionary_is_a_soft_threshold():
    ista = ISTA(D, step_size=0.1, lambd=0.1)
    with torch.no_grad():
        ista.weight.copy_(torch.eye(D))
    x = _tokens()
    assert torch.allclose(ista(x), torch.relu(x - 0.01))
    with torch.no_grad():
        ista.weight.mul_(0.5)  # a dictionary that reconstructs badly moves x
    assert not torch.allclose(ista(x), torch.relu(x - 0.01))


def test_white_box_layers_output_non_negative_codes():
    x, keep = 3 * _tokens(), torch.ones(3, 6, dtype=torch.bool)
    for cls in (CRATELayer, AttentionOnlyLayer):
        out = cls(D, HEADS, 0, 0.0, "none")(x, keep)
        assert out.shape == x.shape and bool((out >= 0).all()) and bool((out > 0).any())


def test_attention_only_threshold_and_reduction_from_crate():
    layer = AttentionOnlyLayer(D, HEADS, 0, 0.0, "none")
    assert layer.theta.numel() == 1 and layer.theta.item() == pytest.approx(0.01)
    assert not any(isinstance(m, (ISTA, nn.Sequential)) for m in layer.modules())

    def stack_params(architecture):
        enc = TransformerEncoder(1, 4, 8, d_model=64, depth=2, n_heads=4, dropout=0.0,
                                 architecture=architecture)
        return sum(p.numel() for p in enc.layers.parameters())

    crate, attention_only = stack_params("crate"), stack_params("attention_only")
    assert 0.30 <= 1 - attention_only / crate <= 0.35
    assert crate - attention_only == 2 * (64 * 64) - 2  # the dictionaries, less theta


@pytest.mark.parametrize("architecture", ["crate", "attention_only"])
@pytest.mark.parametrize("positional", ["none", "rotary", "alibi"])
def test_layers_ignore_padding_tokens(architecture, positional):
    torch.manual_seed(0)
    layer = encoder_layer(architecture, D, HEADS, 32, 0.1, positional).eval()
    x = _tokens(k=5)
    keep = torch.ones(3, 5, dtype=torch.bool)
    keep[1, 3:] = False  # a shorter series inside the batch
    padded = torch.cat([x, 100 * _tokens(k=4, seed=1)], dim=1)
    keep_padded = torch.cat([keep, torch.zeros(3, 4, dtype=torch.bool)], dim=1)
    out, out_padded = layer(x, keep), layer(padded, keep_padded)
    assert torch.allclose(out_padded[:, :5][keep], out[keep], atol=1e-5)
    with torch.no_grad():
        weights = layer.attention_weights(padded, keep_padded)
    assert weights.shape == (3, HEADS, 9, 9)
    assert torch.allclose(weights.sum(-1), torch.ones(3, HEADS, 9), atol=1e-5)
    assert weights[1, :, :, 3:].abs().max().item() == 0.0


@pytest.mark.parametrize("architecture", ARCHITECTURES)
@pytest.mark.parametrize("positional", POSITIONALS)
def test_encoder_outputs_on_real_tokens_ignore_nan_padding(architecture, positional):
    torch.manual_seed(0)
    enc = TransformerEncoder(2, 4, 12, d_model=D, depth=2, n_heads=HEADS, dropout=0.0,
                             positional=positional, architecture=architecture).eval()
    x = torch.randn(2, 2, 24, generator=torch.Generator().manual_seed(1))
    x_pad = torch.cat([x, torch.full((2, 2, 16), float("nan"))], dim=2)

    def run(values):
        observed = ~torch.isnan(values)
        return enc(torch.nan_to_num(values), observed, observed)

    (h, keep), (h_pad, keep_pad) = run(x), run(x_pad)
    assert bool(keep.all()) and not bool(keep_pad[:, 6:].any())
    assert torch.allclose(h_pad[:, :6], h, atol=1e-5)
    with torch.no_grad():
        maps = enc.attention_maps(torch.nan_to_num(x_pad), ~torch.isnan(x_pad), ~torch.isnan(x_pad))
    assert len(maps) == 2 and maps[0][..., 6:].abs().max().item() == 0.0


def test_encoder_builds_the_named_layers_and_rejects_unknown_names():
    layer_types = {"transformer": EncoderLayer, "crate": CRATELayer,
                   "attention_only": AttentionOnlyLayer}
    for name, cls in layer_types.items():
        enc = TransformerEncoder(1, 4, 8, d_model=D, depth=2, n_heads=HEADS, architecture=name)
        assert all(type(layer) is cls for layer in enc.layers)
    assert type(TransformerEncoder(1, 4, 8, d_model=D).layers[0]) is EncoderLayer
    with pytest.raises(ValueError, match="architecture"):
        TransformerEncoder(1, 4, 8, d_model=D, architecture="mlp")
    with pytest.raises(ValueError, match="architecture"):
        SPTClassifier(architecture="crate ").fit(*make_panel(n=12, t=16))


@pytest.mark.parametrize("architecture", ARCHITECTURES)
@pytest.mark.parametrize("objective", ["masked", "lejepa", "masked+sigreg"])
def test_classifier_fits_and_predicts_with_each_architecture_and_objective(
    architecture, objective
):
    X, y = make_panel(n=24, c=2, t=32)
    clf = SPTClassifier(
        depth=1, d_model=D, architecture__n_heads=HEADS, architecture__dim_feedforward=16,
            architecture__dropout=0.0, batch_size=8,
        pretrain_epochs=2, max_epochs=2, architecture=architecture,
        pretrain_objective=objective, random_state=0,
    ).fit(X, y)
    assert clf.encoder_kwargs_["architecture"] == architecture
    assert len(clf.pretrain_history_) == 2
    assert np.isfinite(clf.pretrain_history_[:, "train_loss"]).all()
    proba = clf.predict_proba(X[:5])
    assert proba.shape == (5, 2) and np.allclose(proba.sum(1), 1.0)
    assert set(clf.predict(X)) <= set(clf.classes_)
    assert clf.transform(X[:3]).shape == (3, D)
