"""Lighthouse attention: hierarchical sparse attention for training on long series.

Lighthouse (Peng, Ghosh & Quesnelle 2026) is a *training-only* wrapper around
``scaled_dot_product_attention`` that makes attention over thousands of tokens cheaper and
leaves an ordinary dense model behind. This is the bidirectional variant:

1. **Pyramid.** Queries, keys and values are average-pooled over kept tokens into
   ``levels`` levels (level ``l``: windows of ``pool**l`` tokens).
2. **Scores, without gradients.** Each window scores ``max ||q||`` and ``max ||k||`` over
   its kept tokens (per head); windows with none score below every other.
3. **Selection per tile, coarse to fine.** In each tile of ``tile_windows`` coarsest
   windows, at each level, ``ceil(topk / 2)`` candidates by query score and ``topk // 2``
   of the rest by key score are refined into their ``pool`` children; the others stay as
   coarse summaries. Summaries and tokens cover every position exactly once.
4. **Attention.** Plain SDPA runs on the entries ordered by position (ALiBi on their
   centres), and each entry's output goes back to every position its window covers.

With ``levels=1`` the result is exactly SDPA's. Tiles have a fixed size, so the selection
never depends on the padding after a series. The estimators install it on every layer
but the first and the last through :class:`sktspt.training.callbacks.LighthouseSchedule`,
dense for the last ``recovery`` share of a phase's steps; eval mode is always dense.
"""

from __future__ import annotations

import math
from dataclasses import KW_ONLY, dataclass

import numpy as np
import torch
import torch.nn.functional as F

__all__ = [
    "ATTENTIONS",
    "Lighthouse",
    "lighthouse_attention",
    "select_entries",
    "set_sparse_attention",
]

ATTENTIONS = ("dense", "lighthouse")
#: Coarsest windows per tile. 64 keeps a tile of the default pyramid (pool 4, 3 levels)
#: at 1024 tokens: 112 entries, about a ninth of the tokens (``docs/lighthouse.md``).
TILE_WINDOWS = 64


@dataclass(frozen=True)
class Lighthouse:
    """The settings of Lighthouse attention (the estimators' ``attention__``); calling it runs
    :func:`lighthouse_attention`. Not a module, so installing it adds no state.

    Parameters
    ----------
    levels : int
        Levels of the Lighthouse pyramid, ``>= 1`` (level ``l`` pools ``attention__pool**l``
        tokens); 1 is exactly dense attention.
    pool : int
        Pooling factor between levels, ``>= 2``.
    topk : int
        Windows refined per tile and level, ``>= 1`` (half by query norm, half by key norm);
        the other windows stay in as coarse summaries.
    recovery : float
        Fraction in ``[0, 1]`` of each phase's last optimizer steps trained with dense
        attention (the recovery phase).
    """

    tile_windows: int = TILE_WINDOWS
    _: KW_ONLY
    levels: int = 3
    pool: int = 4
    topk: int = 8
    recovery: float = 0.1

    @property
    def tile_tokens(self) -> int:
        """Tokens per tile (fixed, so that padding never moves tile boundaries)."""
        return self.tile_windows * self.pool ** (self.levels - 1)

    def __call__(self, q, k, v, keep, slopes=None, dropout_p: float = 0.0) -> torch.Tensor:
        return lighthouse_attention(q, k, v, keep, self, slopes=slopes, dropout_p=dropout_p)


@dataclass
class Entries:
    """The compressed sequence of each ``(series, head)``, sorted by ``start``: ``(n, h, S)``.

    ``flat`` indexes the concatenated pyramid; ``start``, ``size`` and ``level`` describe
    each window; ``levels`` keeps per level the summaries and selected tile indices.
    """

    flat: torch.Tensor
    start: torch.Tensor
    size: torch.Tensor
    level: torch.Tensor
    levels: list


def _tile_shape(n_tokens: int, cfg: Lighthouse) -> int:
    """Tokens of the padded timeline: a multiple of the tile (one exact tile at ``levels=1``)."""
    if cfg.levels == 1:
        return n_tokens
    tile = cfg.tile_tokens
    return tile * math.ceil(n_tokens / tile)


def _pooled_scores(norms: torch.Tensor, valid: torch.Tensor, cfg: Lighthouse) -> list:
    """Per level, the max of ``norms`` over each window's kept tokens; -1 where none."""
    x = norms.masked_fill(~valid[:, None, :], -1.0)
    out = [x]
    for _ in range(1, cfg.levels):
        x = x.unflatten(-1, (-1, cfg.pool)).amax(-1)
        out.append(x)
    return out


@torch.no_grad()
def select_entries(q: torch.Tensor, k: torch.Tensor, keep: torch.Tensor,
                   cfg: Lighthouse) -> Entries:
    """Steps 2 and 3: which windows form the compressed sequence of ``q, k`` ``(n, h, N, d)``
    (``N`` padded to :func:`_tile_shape`) and ``keep`` ``(n, N)``."""
    n, h, N, _ = q.shape
    p, L = cfg.pool, cfg.levels
    tile = N if L == 1 else cfg.tile_tokens
    nt = N // tile
    qs = _pooled_scores(q.float().norm(dim=-1), keep, cfg)
    ks = _pooled_scores(k.float().norm(dim=-1), keep, cfg)
    rows = n * h * nt
    # Per level, scores tiled to (rows, windows of the tile at that level).
    qs = [s.reshape(rows, -1) for s in qs]
    ks = [s.reshape(rows, -1) for s in ks]
    device = q.device
    cand = torch.arange(tile // p ** (L - 1), device=device).expand(rows, -1)
    kept: list[tuple[int, torch.Tensor]] = []
    record = []
    for level in range(L - 1, 0, -1):
        nc = cand.shape[1]
        top = min(cfg.topk, nc)
        by_q = (top + 1) // 2
        sq = qs[level].gather(1, cand)
        sk = ks[level].gather(1, cand)
        chosen = torch.zeros(rows, nc, dtype=torch.bool, device=device)
        chosen.scatter_(1, sq.topk(by_q, dim=1).indices, True)
        if top - by_q:
            # Already chosen ranks below every window, valid (>= 0) or invalid (-1).
            sk = sk.masked_fill(chosen, -2.0)
            chosen.scatter_(1, sk.topk(top - by_q, dim=1).indices, True)
        summaries = cand[~chosen].view(rows, nc - top)
        selected = cand[chosen].view(rows, top)
        kept.append((level, summaries))
        record.append((level, summaries, selected))
        cand = (selected[:, :, None] * p + torch.arange(p, device=device)).flatten(1)
    kept.append((0, cand))
    record.append((0, cand, cand[:, :0]))

    offsets = np.cumsum([0] + [N // p**lv for lv in range(L)])
    tile_ids = torch.arange(rows, device=device) % nt
    flat, start, size, level_id = [], [], [], []
    for level, idx in kept:
        c = p**level
        glob = idx + (tile_ids * (tile // c))[:, None]
        flat.append(glob + int(offsets[level]))
        start.append(glob * c)
        size.append(torch.full_like(idx, c))
        level_id.append(torch.full_like(idx, level))
    start = torch.cat(start, 1)
    order = start.argsort(dim=1)

    def arrange(parts):
        return torch.cat(parts, 1).gather(1, order).reshape(n, h, -1)

    return Entries(
        flat=arrange(flat), start=start.gather(1, order).reshape(n, h, -1), size=arrange(size),
        level=arrange(level_id), levels=record,
    )


def _pyramid(x: torch.Tensor, keep: torch.Tensor, cfg: Lighthouse):
    """Step 1: ``x`` ``(..., n, h, N, d)`` and its window means over kept tokens, levels
    concatenated; and which entries are valid ``(n, N_all)``."""
    w = keep.to(x.dtype)[:, None, :, None]
    total, count = x * w, keep.to(x.dtype)
    parts, valid = [x], [keep]
    for _ in range(1, cfg.levels):
        total = total.unflatten(-2, (-1, cfg.pool)).sum(-2)
        count = count.unflatten(-1, (-1, cfg.pool)).sum(-1)
        parts.append(total / count.clamp_min(1.0)[:, None, :, None])
        valid.append(count > 0)
    return torch.cat(parts, -2), torch.cat(valid, -1)


def lighthouse_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, keep: torch.Tensor,
    cfg: Lighthouse, slopes: torch.Tensor | None = None, dropout_p: float = 0.0,
) -> torch.Tensor:
    """Lighthouse attention of ``q, k, v`` ``(n, h, N, d)`` over the ``keep`` ``(n, N)``
    tokens, ALiBi ``slopes`` ``(h,)`` on the entries' centres; returns ``(n, h, N, d)``."""
    n, h, N, d = q.shape
    padded = _tile_shape(N, cfg)
    if padded != N:
        pad = padded - N
        q, k, v = (F.pad(t, (0, 0, 0, pad)) for t in (q, k, v))
        keep = F.pad(keep, (0, pad), value=False)
    entries = select_entries(q, k, keep, cfg)
    S = entries.flat.shape[-1]
    stacked, valid_all = _pyramid(torch.stack((q, k, v)), keep, cfg)
    index = entries.flat[None, ..., None].expand(3, n, h, S, d)
    qe, ke, ve = stacked.gather(-2, index)
    valid = valid_all[:, None, :].expand(n, h, -1).gather(-1, entries.flat)
    bias = torch.zeros(n, h, 1, S, dtype=q.dtype, device=q.device)
    bias = bias.masked_fill(~valid[:, :, None, :], float("-inf"))
    if slopes is not None:
        centre = entries.start.to(q.dtype) + (entries.size.to(q.dtype) - 1) / 2
        dist = (centre[..., :, None] - centre[..., None, :]).abs()
        bias = bias - slopes.to(q.dtype)[None, :, None, None] * dist
    y = F.scaled_dot_product_attention(qe, ke, ve, attn_mask=bias, dropout_p=dropout_p)
    # Each position takes the output of the one entry whose window covers it.
    positions = torch.arange(padded, device=q.device).expand(n * h, -1)
    cover = torch.searchsorted(entries.start.reshape(n * h, S).contiguous(),
                               positions.contiguous(), right=True) - 1
    y = y.gather(-2, cover.reshape(n, h, padded, 1).expand(-1, -1, -1, d))
    return y[:, :, :N]


def middle_attentions(module: torch.nn.Module) -> list:
    """The attention of every encoder layer but the first and last, in every encoder."""
    from .encoder import SelfAttention, TransformerEncoder

    found = []
    for sub in module.modules():
        if isinstance(sub, TransformerEncoder):
            for layer in list(sub.layers)[1:-1]:
                found += [m for m in layer.modules() if isinstance(m, SelfAttention)]
    return found


def set_sparse_attention(module: torch.nn.Module, cfg: Lighthouse | None) -> int:
    """Install ``cfg`` (None: dense) on the middle layers of ``module``'s encoders, for
    training mode; returns the number of attention blocks changed."""
    blocks = middle_attentions(module)
    for attn in blocks:
        attn.sparse_attention = cfg
    return len(blocks)
