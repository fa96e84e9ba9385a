"""LEAP: exit-aware training and convergence-based early exit (Kapadia et al. 2026).

Both for :class:`~sktspt.SPTClassifier`:

- **Training** (``early_exit__loss_weight > 0``): fine-tuning adds the weighted
  :func:`~sktspt.objectives.exit_loss`, which pulls each intermediate layer's pooled
  representation ``e_l`` (final ``LayerNorm``, then the mean over non-padding tokens) towards
  the final one (whose gradient is stopped). The head is shared by all exits.
- **Prediction** (``early_exit = theta``): per series, the encoder stops at the first layer
  ``l >= early_exit__min_layer`` with ``cos(e_l, e_{l-1}) >= theta`` (``e_0`` pools the
  embedded tokens); the last layer always exits. Exited series leave the batch, so they
  stop costing compute (:func:`early_exit_pass`).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from ._concurrency import settle_eval
from ._params import validate
from .inference import token_groups
from .nn.encoder import masked_mean
from .nn.heads import split_input

__all__ = ["EarlyExit", "record_layers", "check_exit_params", "early_exit_pass"]

@dataclass(frozen=True, kw_only=True)
class EarlyExit:
    """LEAP's exit-aware loss and exit rule: the classifier's ``early_exit__`` settings.

    Parameters
    ----------
    loss_weight : float
        Weight of the LEAP exit-aware loss added in fine-tuning, ``>= 0`` (:mod:`sktspt.leap`),
        so that ``early_exit`` can stop early without losing accuracy. 0 turns it off.
    min_layer : int
        First layer (1-based) at which ``early_exit`` may stop a series.
    """

    loss_weight: float = 0.0
    min_layer: int = 2


#: The parameters of LEAP, checked again at prediction (they can be set after fit).
EXIT_PARAMS = ("early_exit__loss_weight", "early_exit", "early_exit__min_layer")


@contextmanager
def record_layers(encoder):
    """Yields a list that, after the block, holds the pooled ``e_1 .. e_L`` ``(n, d)`` of
    ``encoder``'s last forward pass, with their gradients (forward hooks)."""
    outputs: list[tuple[torch.Tensor, torch.Tensor]] = []
    pooled: list[torch.Tensor] = []

    def hook(module, args, output):
        outputs.append((output, args[1]))

    handles = [layer.register_forward_hook(hook) for layer in encoder.layers]
    try:
        yield pooled
    finally:
        for handle in handles:
            handle.remove()
    depth = len(encoder.layers)
    pooled.extend(masked_mean(encoder.norm(h), keep) for h, keep in outputs[-depth:])


def check_exit_params(settings: dict, constraints: dict) -> None:
    """Validate LEAP's settings (:data:`EXIT_PARAMS`): they may change after fit."""
    validate(settings, constraints, EXIT_PARAMS)


def _padded(t: torch.Tensor, size: int, fill: float | bool = 0) -> torch.Tensor:
    """``t`` with rows of ``fill`` appended up to a multiple of ``size`` rows."""
    missing = -t.shape[0] % size
    if missing == 0:
        return t
    return torch.cat([t, t.new_full((missing, *t.shape[1:]), fill)])


def _per_pass(fn, batch: int, *tensors: torch.Tensor) -> torch.Tensor:
    """``fn`` on consecutive passes of ``batch`` rows (fixed shape), concatenated."""
    n = tensors[0].shape[0]
    if n == batch:
        return fn(*tensors)
    return torch.cat([fn(*(t[s : s + batch] for t in tensors)) for s in range(0, n, batch)])


def early_exit_pass(
    module, X: torch.Tensor, threshold: float | None, min_layer: int, batch: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Run a classification ``module`` on ``X`` with the LEAP exit rule.

    Every layer runs on passes of exactly ``batch`` rows (the active series padded with
    filler rows), gathered again after each exit, so a row's result depends on its own
    series only (:mod:`sktspt.inference`) and without exits the full model's passes are
    reproduced exactly.

    Parameters
    ----------
    module : sktspt.nn.heads.ClassificationModel
        In eval mode, called under ``torch.no_grad``.
    X : torch.Tensor of shape (n, c, t)
        NaN-coded series of one token count.
    threshold : float or None
        Exit cosine between consecutive pooled representations; None runs every layer.
    min_layer : int
        First layer (1-based) at which a series may exit.
    batch : int

    Returns
    -------
    logits : torch.Tensor of shape (n, n_classes)
    pooled : torch.Tensor of shape (n, d_model)
        What the head read.
    exit_layer : torch.Tensor of shape (n,)
        Layer (1-based) at which each series exited.
    """
    encoder = module.encoder
    n = X.shape[0]
    depth = len(encoder.layers)

    def tokens(xb):
        x, observed = split_input(xb)
        h, keep = encoder.tokens(x, observed, observed)
        return torch.cat([h, keep[..., None].to(h.dtype)], dim=-1)

    def pool(h, keep):
        return masked_mean(encoder.norm(h), keep)

    both = _per_pass(tokens, batch, _padded(X, batch))
    h, keep = both[..., :-1], both[..., -1] > 0
    rows = _padded(torch.arange(n, device=h.device), batch, -1)
    keep = keep | (rows < 0)[:, None]  # filler rows: all tokens kept, no empty softmax
    prev = None
    if threshold is not None and min_layer <= 1:
        prev = _per_pass(pool, batch, h, keep)
    logits = pooled = None
    exit_layer = torch.full((n,), depth, dtype=torch.long)
    for number, layer in enumerate(encoder.layers, start=1):
        h = _per_pass(layer, batch, h, keep)
        last = number == depth
        pb = None
        if last or threshold is not None and number >= min_layer - 1:
            pb = _per_pass(pool, batch, h, keep)
        if last:
            done = rows >= 0
        elif threshold is not None and number >= min_layer:
            done = (F.cosine_similarity(pb, prev, dim=-1) >= threshold) & (rows >= 0)
        else:
            prev = pb
            continue
        if bool(done.any()):
            # The head runs on whole passes (a fixed shape), as in the full model.
            lb = _per_pass(module.head, batch, pb)
            if logits is None:
                logits = lb.new_empty((n, lb.shape[1]))
                pooled = pb.new_empty((n, pb.shape[1]))
            out = rows[done]
            logits[out], pooled[out], exit_layer[out.cpu()] = lb[done], pb[done], number
            stay = ~done & (rows >= 0)
            if not bool(stay.any()):
                break
            h, keep = _padded(h[stay], batch), _padded(keep[stay], batch, True)
            pb, rows = _padded(pb[stay], batch), _padded(rows[stay], batch, -1)
        prev = pb
    return logits, pooled, exit_layer


def early_exit_infer(module, X: np.ndarray, threshold, min_layer: int, batch: int, *,
                     patch_size: int, max_tokens: int, device) -> tuple[np.ndarray, ...]:
    """:func:`early_exit_pass` on prepared ``X``, grouped by token count as for prediction
    (:func:`sktspt.inference.token_groups`): float64 logits and pooled representations,
    and the exit layers."""
    n = X.shape[0]
    logits = pooled = None
    exits = np.empty(n, dtype=np.int64)
    settle_eval(module)
    with torch.no_grad():
        for rows, group in token_groups(X, patch_size, max_tokens):
            xb = torch.from_numpy(np.ascontiguousarray(group)).to(device)
            lg, pl, ex = early_exit_pass(module, xb, threshold, min_layer, batch)
            if logits is None:
                logits = np.empty((n, lg.shape[1]))
                pooled = np.empty((n, pl.shape[1]))
            logits[rows] = lg.double().cpu().numpy()
            pooled[rows] = pl.double().cpu().numpy()
            exits[rows] = ex.numpy()
    return logits, pooled, exits
