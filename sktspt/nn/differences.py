"""Differences of a series as extra input channels (the ``differences`` parameter).

MultiRocket and HIVE-COTE 2 read each series' first differences beside the series:
classes that differ in slope rather than level separate more easily there.
:class:`DifferenceView` appends differences of order ``1 .. K`` to the tokenizer's
input, inside the network, so that

- a difference is available only where both of its steps are: values hidden by
  pretraining's masks stay hidden in every view, and no slope gives a hidden value away;
- pretraining reconstructs the hidden slopes as well as the hidden values
  (:meth:`~sktspt.nn.heads.ReconstructionModel.targets`). Reconstructing the values alone
  lost 3–5 points in training-split CV (``docs/tuning-history.md``, round 16): the slopes then
  only make the task easier, and asking for them is what teaches shape;
- each channel's differences are divided by their root mean square over the training
  panel (:meth:`DifferenceView.fit_panel`, through
  :func:`~sktspt.nn.panel_fit.fit_to_panel`; part of the weights as a buffer), so slopes reach the
  tokenizer on the scale of the values whatever the sampling rate, and steep and gentle
  series keep their difference. A per-series scale would follow pretraining's masks and
  differ between pretraining and fine-tuning.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["DifferenceView", "both_available", "difference"]


def both_available(available: torch.Tensor) -> torch.Tensor:
    """Where a first difference is available: its step and the one before it are."""
    both = torch.zeros_like(available)
    both[..., 1:] = available[..., 1:] & available[..., :-1]
    return both


def difference(x: torch.Tensor, available: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """First differences of ``x`` ``(n, c, t)`` along time, and where they are available.

    Step 0 and every step whose predecessor (or itself) is unavailable are unavailable,
    with value 0, as the tokenizers expect.
    """
    both = both_available(available)
    d = torch.zeros_like(x)
    d[..., 1:] = x[..., 1:] - x[..., :-1]
    return torch.where(both, d, torch.zeros_like(d)), both


def _rms(x: torch.Tensor, available: torch.Tensor) -> torch.Tensor:
    """Per channel, the root mean square of ``x`` over available steps of all series."""
    count = available.sum(dim=(0, 2)).clamp_min(1)
    return (torch.where(available, x, 0.0).double().square().sum(dim=(0, 2)) / count).sqrt()


class DifferenceView(nn.Module):
    """``(x, available)`` with ``c`` channels -> the same plus differences of order ``1..K``.

    The output has ``c * (1 + orders)`` channels: the series, then their first
    differences scaled by ``scale[0]``, then the differences of those scaled by
    ``scale[1]``, and so on. ``scale`` (``(orders, c)``, ones until :meth:`fit_panel`
    sets it) is a buffer, saved and loaded with the weights.
    """

    def __init__(self, orders: int, n_channels: int):
        super().__init__()
        self.orders = int(orders)
        self.register_buffer("scale", torch.ones(self.orders, n_channels))

    def forward(self, x: torch.Tensor, available: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
        values, flags = [x], [available]
        for k in range(self.orders):
            d, a = difference(values[-1], flags[-1])
            values.append(d / self.scale[k, :, None].to(d.dtype))
            flags.append(a)
        return torch.cat(values, dim=1), torch.cat(flags, dim=1)

    def available(self, available: torch.Tensor) -> torch.Tensor:
        """The availability half of :meth:`forward`, without computing any difference."""
        flags = [available]
        for _ in range(self.orders):
            flags.append(both_available(flags[-1]))
        return torch.cat(flags, dim=1)

    @torch.no_grad()
    def fit_panel(self, x: torch.Tensor, available: torch.Tensor) -> None:
        """Scale each order's differences to unit RMS on the training panel ``x``.

        A channel whose differences are all 0 (constant series) keeps scale 1; the floor,
        a millionth of the channel's own RMS, keeps rounding noise from being amplified.
        """
        for k in range(self.orders):
            d, a = difference(x, available)
            floor = 1e-6 * _rms(x, available)
            rms = _rms(d, a)
            self.scale[k] = torch.where(rms > 0, torch.maximum(rms, floor), 1.0).to(self.scale)
            x, available = d / self.scale[k, :, None], a

    def extra_repr(self) -> str:
        return f"orders={self.orders}"
