"""Masking objectives for self-pretraining.

Each objective maps a batch shape ``(n, c, t)`` to a boolean mask of that shape
(True = hidden). Masks are drawn on the batch's device from a ``torch.Generator``,
vectorised over the whole batch, so the same seed gives the same masks.

- ``random``: every value hidden independently with probability ``mask_ratio``.
- ``span``: per channel, contiguous runs of geometric length with mean ``mean_span``
  (Zerveas et al. 2021), overall ratio ``mask_ratio``.
- ``block``: ``span`` drawn once per series and applied to all channels, so the model
  must infer from context in time rather than copy a neighbouring channel.
- ``channel``: whole channels hidden, never all of a series' channels, so the model
  must infer one modality from the others.
- ``mixed``: one of the four drawn per batch.

Whatever the objective, ``ratio_spread`` gives each series its own ratio and ``channels``
restricts it to some channels (:class:`Masking`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import torch

__all__ = [
    "MASKINGS", "Masking", "make_mask", "random_mask", "span_mask", "block_mask", "channel_mask",
    "resolve_masking", "draw_ratios",
]

MASKINGS = ("random", "span", "block", "channel", "mixed")
#: The range a series' own ratio is kept in when ``ratio_spread`` is set.
RATIO_RANGE = (0.05, 0.95)


@dataclass(frozen=True, kw_only=True)
class Masking:
    """What pretraining hides: the estimators' ``masking__`` settings, which their
    pretraining net passes to :func:`make_mask`.

    Parameters
    ----------
    ratio : float
        Fraction of values hidden, in ``(0, 1)``.
    ratio_spread : float
        Each series' hidden fraction is drawn uniformly from ``masking__ratio ±
        masking__ratio_spread`` (within ``[0.05, 0.95]``), so pretraining also sees mostly
        visible series, as fine-tuning does, without moving the mean. In ``[0, 0.5)``.
    mean_span : float or None
        Mean length of hidden runs for ``span`` and ``block``, positive; None uses
        ``max(3, patch size)``.
    channels : list of int or None
        The only channels masking may hide (indices into ``n_channels``); the others
        (covariates that are always known) stay visible as context and are never
        reconstructed. None masks all channels. Unused by ``"lejepa"``.
    """

    ratio: float = 0.7
    ratio_spread: float = 0.25
    mean_span: float | None = None
    channels: tuple[int, ...] | None = None


def draw_ratios(mask_ratio: float, ratio_spread: float, n: int, generator: torch.Generator,
                device=None) -> float | torch.Tensor:
    """``mask_ratio`` itself, or with a spread, one ratio per series ``(n,)``."""
    if not ratio_spread:
        return float(mask_ratio)
    low = max(mask_ratio - ratio_spread, RATIO_RANGE[0])
    high = min(mask_ratio + ratio_spread, RATIO_RANGE[1])
    return low + (high - low) * torch.rand((n,), generator=generator, device=device)


def _per_row(ratio: float | torch.Tensor, rows: int) -> float | torch.Tensor:
    """A ratio per series as a column of one ratio per row (``rows`` a multiple of n)."""
    if isinstance(ratio, torch.Tensor):
        return ratio.repeat_interleave(rows // ratio.numel())[:, None]
    return ratio


def random_mask(shape, mask_ratio, generator: torch.Generator, device=None) -> torch.Tensor:
    """Hide each value independently with probability ``mask_ratio`` (one, or per series)."""
    if isinstance(mask_ratio, torch.Tensor):
        mask_ratio = mask_ratio.reshape((-1,) + (1,) * (len(shape) - 1))
    return torch.rand(shape, generator=generator, device=device) < mask_ratio


def _geometric(shape, mean, generator, device) -> torch.Tensor:
    """Geometric lengths (1, 2, ...) of the given mean (one, or per row), by inverse CDF."""
    per_row = isinstance(mean, torch.Tensor)
    if not per_row and mean <= 1.0:
        return torch.ones(shape, device=device)
    u = torch.rand(shape, generator=generator, device=device).clamp_min(1e-12)
    if not per_row:
        return torch.floor(torch.log(u) / math.log1p(-1.0 / mean)) + 1.0
    lengths = torch.floor(torch.log(u) / torch.log1p(-1.0 / mean.clamp_min(1.0 + 1e-6))) + 1.0
    return torch.where(mean > 1.0, lengths, torch.ones_like(lengths))


def span_mask(
    shape, mask_ratio, mean_span: float, generator: torch.Generator, device=None
) -> torch.Tensor:
    """Alternating hidden / visible runs of geometric length per row, of means ``mean_span``
    and ``mean_span * (1 - r) / r`` (hidden fraction ``r``, one or a tensor ``(n,)`` per
    series). All rows at once: each step finds its run by ``searchsorted``."""
    *lead, t = shape
    rows = math.prod(lead) if lead else 1
    if isinstance(mask_ratio, torch.Tensor):
        # Enough runs for the largest ratio a series may draw, without reading it back.
        r, top = _per_row(mask_ratio, rows), RATIO_RANGE[1]
        shortest = min(mean_span, mean_span * (1.0 - top) / top)
    else:
        r = float(mask_ratio)
        if r <= 0.0:
            return torch.zeros(shape, dtype=torch.bool, device=device)
        if r >= 1.0:
            return torch.ones(shape, dtype=torch.bool, device=device)
        shortest = min(mean_span, mean_span * (1.0 - r) / r)
    mean_visible = mean_span * (1.0 - r) / r
    n_runs = 2 * (int(t / (1.0 + shortest)) + 8)
    hidden_len = _geometric((rows, n_runs // 2), mean_span, generator, device)
    visible_len = _geometric((rows, n_runs // 2), mean_visible, generator, device)
    start_hidden = torch.rand((rows, 1), generator=generator, device=device) < r
    # Runs alternate; which kind comes first depends on start_hidden.
    first = torch.where(start_hidden, hidden_len, visible_len)
    second = torch.where(start_hidden, visible_len, hidden_len)
    lengths = torch.stack([first, second], dim=2).reshape(rows, n_runs)
    # A random phase inside the first run keeps the process stationary at t=0.
    phase = torch.rand((rows,), generator=generator, device=device)
    lengths[:, 0] = torch.ceil(lengths[:, 0] * phase)
    ends = torch.cumsum(lengths, dim=1)
    steps = torch.arange(t, device=device, dtype=ends.dtype).expand(rows, t).contiguous()
    run = torch.searchsorted(ends, steps, right=True)
    hidden = (run % 2 == 0) == start_hidden
    return hidden.reshape(shape)


def block_mask(
    shape, mask_ratio: float, mean_span: float, generator: torch.Generator, device=None
) -> torch.Tensor:
    """The same hidden time spans in every channel of a series."""
    n, c, t = shape
    return span_mask((n, 1, t), mask_ratio, mean_span, generator, device).expand(n, c, t)


def channel_mask(
    shape, mask_ratio: float, generator: torch.Generator, device=None, observed=None
) -> torch.Tensor:
    """Hide whole channels, each with probability ``mask_ratio``, never all of them: at
    least one channel of each series with an ``observed`` value stays visible."""
    n, c, t = shape
    if c < 2:
        raise ValueError("channel masking needs at least 2 channels.")
    hidden = torch.rand((n, c), generator=generator, device=device) < _per_row(mask_ratio, n)
    # Where every channel was drawn hidden, reveal one channel chosen at random.
    if observed is None:
        keep = torch.randint(0, c, (n,), generator=generator, device=device)
        all_hidden = hidden.all(dim=1)
    else:
        has = observed.reshape(n, c, -1).any(dim=2)
        hidden = hidden & has
        scores = torch.where(has, torch.rand((n, c), generator=generator, device=device), -1.0)
        keep = scores.argmax(dim=1)
        all_hidden = ~(has & ~hidden).any(dim=1)
    reveal = torch.nn.functional.one_hot(keep, c).bool() & all_hidden[:, None]
    hidden = hidden & ~reveal
    return hidden[:, :, None].expand(n, c, t)


def resolve_masking(kind: str, n_channels: int) -> str:
    """The objective to use on ``n_channels`` channels: ``channel`` needs two or more."""
    if kind == "channel" and n_channels < 2:
        warnings.warn("masking='channel' needs at least 2 channels; using 'span' for "
                      "univariate input.", UserWarning, stacklevel=4)
        return "span"
    return kind


def make_mask(
    kind: str,
    shape,
    mask_ratio,
    mean_span: float,
    generator: torch.Generator,
    device=None,
    observed=None,
    channels=None,
    ratio_spread: float = 0.0,
) -> torch.Tensor:
    """Draw a mask of the named objective (:class:`Masking`); ``channel`` on one channel is
    ``span``. It never hides a value not ``observed``, nor one outside ``channels``."""
    if ratio_spread:
        mask_ratio = draw_ratios(mask_ratio, ratio_spread, shape[0], generator, device)
    if channels is not None:
        mask = make_mask(kind, shape, mask_ratio, mean_span, generator, device, observed)
        keep = torch.zeros(mask.shape[1], dtype=torch.bool, device=mask.device)
        keep[list(channels)] = True
        return mask & keep[None, :, None]
    if kind == "mixed":
        choices = ("random", "span", "block", "channel")[: 4 if shape[1] > 1 else 3]
        idx = torch.randint(0, len(choices), (1,), generator=generator, device=device)
        if idx.device.type != "cpu":
            return _select_on_device(choices, idx, shape, mask_ratio, mean_span, generator,
                                     device, observed)
        kind = choices[int(idx)]
    if kind == "random":
        mask = random_mask(shape, mask_ratio, generator, device)
    elif kind == "span" or (kind == "channel" and shape[1] < 2):
        mask = span_mask(shape, mask_ratio, mean_span, generator, device)
    elif kind == "block":
        mask = block_mask(shape, mask_ratio, mean_span, generator, device)
    elif kind == "channel":
        mask = channel_mask(shape, mask_ratio, generator, device, observed)
    else:
        raise ValueError(f"masking must be one of {MASKINGS}, got {kind!r}.")
    return mask if observed is None else mask & observed


def _select_on_device(choices, idx, shape, mask_ratio, mean_span, generator, device, observed):
    """Draw every candidate objective and keep the one at ``idx``: reading ``idx`` back would
    stall an accelerator once per batch."""
    masks = [
        make_mask(k, shape, mask_ratio, mean_span, generator, device, observed) for k in choices
    ]
    return torch.stack(masks).index_select(0, idx)[0]

