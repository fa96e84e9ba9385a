"""The CPU dropout draws: the rate, the expectation, seeding, gradients, and attention."""

import pytest
import torch
import torch.nn.functional as F

import sktspt.nn.dropout as dropout_module
from sktspt.nn.dropout import Dropout, attention, dropout


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_dropout_drops_at_its_rate_and_keeps_the_expectation(p):
    torch.manual_seed(0)
    x = torch.ones(1000, 1001)  # not a multiple of four values: the last draw is cut
    y = dropout(x, p)
    dropped = (y == 0).double().mean().item()
    assert abs(dropped - p) < 0.003
    assert abs(y.double().mean().item() - 1.0) < 0.01
    kept = y[y != 0]
    torch.testing.assert_close(kept, torch.full_like(kept, kept[0].item()))


def test_dropout_draws_are_independent_between_neighbours():
    """Four values share a 64-bit draw; their decisions must still be independent."""
    torch.manual_seed(1)
    kept = dropout(torch.ones(300_000), 0.5) != 0
    pairs = (kept[:-1] & kept[1:]).double().mean().item()
    assert abs(pairs - 0.25) < 0.005


def test_every_quarter_of_a_draw_drops_at_the_rate():
    """The top quarter of a draw holds the sign bit: it must be as random as the others."""
    torch.manual_seed(2)
    kept = (dropout(torch.ones(400_000), 0.1) != 0).reshape(-1, 4).double().mean(dim=0)
    torch.testing.assert_close(kept, torch.full_like(kept, 0.9), atol=0.004, rtol=0)


def test_dropout_follows_the_seed_and_is_off_outside_training():
    x = torch.randn(4, 7, 9)
    torch.manual_seed(3)
    a = dropout(x, 0.1)
    torch.manual_seed(3)
    assert torch.equal(a, dropout(x, 0.1))
    assert not torch.equal(a, dropout(x, 0.1))
    assert dropout(x, 0.1, training=False) is x
    layer = Dropout(0.1).eval()
    assert torch.equal(layer(x), x)


def test_dropout_gradient_is_its_mask():
    torch.manual_seed(0)
    x = torch.randn(50, 60, requires_grad=True)
    y = dropout(x, 0.3)
    y.sum().backward()
    torch.testing.assert_close(x.grad, torch.where(y != 0, 1 / (1 - round(0.3 * 65536) / 65536),
                                                   0.0))


@pytest.mark.parametrize("bias_heads", [1, 4], ids=["padding", "alibi"])
def test_written_out_attention_is_sdpa(monkeypatch, bias_heads):
    """With its dropout made the identity, the CPU path computes what SDPA computes."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(3, 4, 10, 8) for _ in range(3))
    bias = torch.randn(3, bias_heads, 10 if bias_heads > 1 else 1, 10)
    bias[0, ..., -3:] = float("-inf")
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
    monkeypatch.setattr(dropout_module, "dropout", lambda x, p, training=True: x)
    torch.testing.assert_close(attention(q, k, v, bias, 0.1), want)
