"""Differences of a series as extra input channels (the ``differences`` parameter).

MultiRocket and HIVE-COTE 2 read each series' first differences beside the series:
classes that differ in slope rather than level (a hand drawing a gun quickly or slowly)
separate more easily there. :class:`DifferenceView` appends differences of order ``1 ..
K`` to the tokenizer's input, inside the network, so that

- a difference is available only where both of its steps are: values hidden by
  pretraining's masks stay hidden in every view, and reconstruction (which targets the
  input values alone) cannot read them back from a slope;
- nothing is fitted: each difference series is divided by its root mean square over its
  available steps, so slopes reach the tokenizer on the scale of the values whatever the
  sampling rate, and a series' own steps alone set its scale.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["DifferenceView", "difference"]

#: Floor of a difference series' root mean square (values are normalised, so of order 1):
#: a constant series keeps zero slopes rather than amplified rounding noise.
RMS_FLOOR = 1e-4


def difference(x: torch.Tensor, available: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """First differences of ``x`` ``(n, c, t)`` along time, scaled to unit RMS per series.

    Step 0 and every step whose predecessor (or itself) is unavailable are unavailable,
    with value 0, as the tokenizers expect.
    """
    both = torch.zeros_like(available)
    both[..., 1:] = available[..., 1:] & available[..., :-1]
    d = torch.zeros_like(x)
    d[..., 1:] = x[..., 1:] - x[..., :-1]
    d = torch.where(both, d, torch.zeros_like(d))
    count = both.sum(dim=-1, keepdim=True).clamp_min(1)
    rms = (d.square().sum(dim=-1, keepdim=True) / count).sqrt().clamp_min(RMS_FLOOR)
    return d / rms, both


class DifferenceView(nn.Module):
    """``(x, available)`` with ``c`` channels -> the same plus differences of order ``1..K``.

    The output has ``c * (1 + orders)`` channels: the series, then their first
    differences, then the differences of those, and so on.
    """

    def __init__(self, orders: int):
        super().__init__()
        self.orders = int(orders)

    def forward(self, x: torch.Tensor, available: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
        values, flags = [x], [available]
        for _ in range(self.orders):
            d, a = difference(values[-1], flags[-1])
            values.append(d)
            flags.append(a)
        return torch.cat(values, dim=1), torch.cat(flags, dim=1)

    def extra_repr(self) -> str:
        return f"orders={self.orders}"
