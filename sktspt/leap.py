"""LEAP: exit-aware training and convergence-based early exit (Kapadia et al. 2026).

Two pieces, both for :class:`~sktspt.SPTClassifier`:

- **Training** (``exit_loss_weight > 0``): during fine-tuning the loss gains
  ``exit_loss_weight * L_exit`` with ``L_exit = mean_l sigmoid(10 (tau - cos(e_l, sg(e_L))))``
  over the intermediate layers ``l = 1 .. L-1``, ``tau = 0.98``. ``e_l`` is the pooled
  representation after layer ``l`` (final ``LayerNorm``, then the mean over non-padding
  tokens: what the classification head reads after the last layer) and ``sg`` stops the
  gradient, so intermediate layers move towards the final one and not the reverse. The
  head is shared: at an exit it reads ``e_l`` as it reads ``e_L``.
- **Prediction** (``early_exit = theta``): per series, the encoder stops at the first layer
  ``l >= min_exit_layer`` with ``cos(e_l, e_{l-1}) >= theta`` (``e_0`` pools the embedded
  tokens) and the head is applied there; the last layer always exits. Series that have
  exited leave the batch, so they stop costing compute (:func:`early_exit_pass`).
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import torch
import torch.nn.functional as F

from .nn.encoder import masked_mean
from .nn.heads import split_input

__all__ = ["EXIT_TAU", "exit_loss", "record_layers", "check_exit_params", "early_exit_pass"]

#: Target cosine of the LEAP loss (the paper's tau).
EXIT_TAU = 0.98
#: Sharpness of the sigmoid in the LEAP loss.
EXIT_SHARPNESS = 10.0


def _show(value) -> str:
    return repr(value.item() if isinstance(value, np.generic) else value)


def exit_loss(
    pooled: list[torch.Tensor], tau: float = EXIT_TAU, sharpness: float = EXIT_SHARPNESS
) -> torch.Tensor:
    """The LEAP auxiliary loss on pooled representations, one ``(n, d)`` tensor per layer.

    Parameters
    ----------
    pooled : list of torch.Tensor
        ``e_1 .. e_L``: pooled representations after each layer, the last one final.
    tau : float, default=0.98
        Cosine at which the penalty of a layer is one half.
    sharpness : float, default=10.0
        Slope of the sigmoid.

    Returns
    -------
    torch.Tensor
        Scalar: ``mean_{l<L} mean_n sigmoid(sharpness (tau - cos(e_l, sg(e_L))))``
        (uniform layer weights ``w_l = 1 / (L - 1)``); 0 for a single layer.
    """
    if len(pooled) < 2:
        return pooled[-1].sum() * 0.0
    final = pooled[-1].detach().float()
    terms = [
        torch.sigmoid(sharpness * (tau - F.cosine_similarity(e.float(), final, dim=-1))).mean()
        for e in pooled[:-1]
    ]
    return torch.stack(terms).mean()


@contextmanager
def record_layers(encoder):
    """Record each layer's output while ``encoder`` runs; yields a list of pooled states.

    After the ``with`` block the yielded list holds ``e_1 .. e_L`` (``(n, d)`` tensors:
    the final norm, then the mean over non-padding tokens) of the last forward pass,
    with their gradients. ``encoder.forward`` itself is untouched (forward hooks).
    """
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


def check_exit_params(est) -> None:
    """Validate ``exit_loss_weight``, ``early_exit`` and ``min_exit_layer`` of ``est``."""
    weight = getattr(est, "exit_loss_weight", 0.0)
    if isinstance(weight, bool | np.bool_) or not isinstance(weight, int | float | np.number) or (
        not 0.0 <= float(weight) < float("inf")
    ):
        raise ValueError(
            f"exit_loss_weight must be a non-negative number (0 turns the LEAP loss off), "
            f"got {_show(weight)}."
        )
    theta = getattr(est, "early_exit", None)
    if theta is not None and (
        isinstance(theta, bool | np.bool_) or not isinstance(theta, int | float | np.number)
        or not -1.0 <= float(theta) <= 1.0
    ):
        raise ValueError(
            "early_exit must be None or a cosine threshold in [-1, 1] (0.95 in the LEAP "
            f"paper), got {_show(theta)}."
        )
    layer = getattr(est, "min_exit_layer", 1)
    if isinstance(layer, bool | np.bool_) or not isinstance(layer, int | np.integer) or layer < 1:
        raise ValueError(f"min_exit_layer must be a positive integer, got {_show(layer)}.")
    members = int(getattr(est, "n_estimators", 1))
    if members > 1 and (theta is not None or float(weight) > 0):
        raise ValueError(
            "early_exit and exit_loss_weight act on a single network; got "
            f"n_estimators={members}. Use n_estimators=1 with LEAP."
        )


def _padded(t: torch.Tensor, size: int, fill: float | bool = 0) -> torch.Tensor:
    """``t`` with rows of ``fill`` appended up to ``size`` rows."""
    missing = size - t.shape[0]
    if missing <= 0:
        return t
    return torch.cat([t, t.new_full((missing, *t.shape[1:]), fill)])


def early_exit_pass(
    module, X: torch.Tensor, threshold: float | None, min_layer: int, batch: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Run a classification ``module`` on ``X`` with the LEAP exit rule.

    Parameters
    ----------
    module : sktspt.nn.heads.ClassificationModel
        The network, in eval mode, called under ``torch.no_grad``.
    X : torch.Tensor of shape (n, c, t)
        NaN-coded series of one token count.
    threshold : float or None
        Exit when the cosine between consecutive pooled representations reaches it;
        None runs every layer.
    min_layer : int
        First layer (1-based) at which a series may exit.
    batch : int
        Rows of every pass. Each layer runs only on the series still active, gathered
        into passes of exactly ``batch`` rows (the last one filled with zeros), so a row's
        result depends on its own series only, as in :meth:`SPTBase._infer`, and the
        full model's passes are reproduced exactly when no series exits early.

    Returns
    -------
    logits : torch.Tensor of shape (n, n_classes)
    pooled : torch.Tensor of shape (n, d_model)
        The pooled representation the head read.
    exit_layer : torch.Tensor of shape (n,)
        Layer (1-based) at which each series exited.
    """
    encoder = module.encoder
    n = X.shape[0]
    depth = len(encoder.layers)
    h = keep = prev = None
    for start in range(0, n, batch):
        xb = _padded(X[start : start + batch], batch)
        x, observed = split_input(xb)
        hb, kb = encoder.tokens(x, observed, observed)
        if h is None:
            h = hb.new_empty((n, *hb.shape[1:]))
            keep = kb.new_empty((n, *kb.shape[1:]))
            prev = hb.new_empty((n, hb.shape[2]))
        m = min(batch, n - start)
        h[start : start + m], keep[start : start + m] = hb[:m], kb[:m]
        if threshold is not None and min_layer <= 1:
            prev[start : start + m] = masked_mean(encoder.norm(hb), kb)[:m]
    logits = pooled = None
    exit_layer = torch.full((n,), depth, dtype=torch.long)
    active = torch.arange(n)
    for number, layer in enumerate(encoder.layers, start=1):
        still = []
        for start in range(0, len(active), batch):
            rows = active[start : start + batch]
            m = len(rows)
            kb = _padded(keep[rows], batch, True)
            out = layer(_padded(h[rows], batch), kb)
            done = torch.full((m,), number == depth)
            # Pooling is needed where a series may exit here or at the next layer.
            pb = None
            if number == depth or threshold is not None and number >= min_layer - 1:
                pb = masked_mean(encoder.norm(out), kb)
            if threshold is not None and min_layer <= number < depth:
                cos = F.cosine_similarity(pb, _padded(prev[rows], batch), dim=-1)[:m]
                done = cos.cpu() >= threshold
            if done.any():
                # The head runs on the whole pass (a fixed shape), as in the full model.
                lb = module.head(pb)
                if logits is None:
                    logits = lb.new_empty((n, lb.shape[1]))
                    pooled = pb.new_empty((n, pb.shape[1]))
                out_rows, fin = rows[done], done.nonzero().flatten()
                logits[out_rows], pooled[out_rows] = lb[fin], pb[fin]
                exit_layer[out_rows] = number
            rest = (~done).nonzero().flatten()
            h[rows[rest]] = out[rest]
            if pb is not None:
                prev[rows[rest]] = pb[rest]
            still.append(rows[rest])
        active = torch.cat(still) if still else active[:0]
        if not len(active):
            break
    return logits, pooled, exit_layer


def early_exit_infer(est, module, X: np.ndarray, threshold, min_layer: int, batch: int):
    """:func:`early_exit_pass` on prepared ``X``, grouped by token count as in ``_infer``.

    Returns float64 logits ``(n, n_classes)``, float64 pooled representations
    ``(n, d_model)`` and the exit layer of every series ``(n,)``.
    """
    p = est.patch_size_
    n, _, t = X.shape
    buckets = est._token_buckets(X)
    logits = pooled = None
    exits = np.empty(n, dtype=np.int64)
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad():
            for length in np.unique(buckets) * p:
                rows = np.flatnonzero(buckets * p == length)
                group = X[rows, :, : min(t, length)]
                if length > t:
                    group = np.pad(group, ((0, 0), (0, 0), (0, length - t)),
                                   constant_values=np.nan)
                xb = torch.from_numpy(np.ascontiguousarray(group)).to(est._device)
                lg, pl, ex = early_exit_pass(module, xb, threshold, min_layer, batch)
                if logits is None:
                    logits = np.empty((n, lg.shape[1]))
                    pooled = np.empty((n, pl.shape[1]))
                logits[rows] = lg.double().cpu().numpy()
                pooled[rows] = pl.double().cpu().numpy()
                exits[rows] = ex.numpy()
    finally:
        module.train(was_training)
    return logits, pooled, exits
