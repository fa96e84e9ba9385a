"""Attention inspection: where a fitted encoder looks, and how *local* that is.

Self-pretraining seems to help largely by teaching attention **proximity**: absolute
positional encodings turned into attention that favours nearby tokens (Coser et al.
2026). These helpers measure that on a fitted :class:`~sktspt.SPTClassifier` or
:class:`~sktspt.SPTPretrainer`, so that states (at initialisation, from scratch, after SPT,
after fine-tuning) can be compared on the same data. Distances are in tokens; padding
tokens are never attended to, their rows are zero in :func:`attention_maps` and the other
functions leave them out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import torch
from sklearn.utils.validation import check_is_fitted

from ._base import SPTBase
from ._concurrency import settle_eval
from .nn.encoder import TransformerEncoder
from .nn.heads import split_input

__all__ = ["attention_maps", "proximity_profile", "proximity_summary", "plot_proximity"]


def _unwrap(estimator):
    """The SPT estimator itself, also when wrapped in ``sklearn.frozen.FrozenEstimator``."""
    from sklearn.frozen import FrozenEstimator

    if isinstance(estimator, FrozenEstimator):
        estimator = estimator.estimator
    if not isinstance(estimator, SPTBase):
        raise TypeError("attention_maps needs a fitted SPTClassifier or SPTPretrainer, got "
                        f"{type(estimator).__name__}.")
    return estimator


def attention_maps(estimator, X, *, batch_size: int = 256) -> list[np.ndarray]:
    """Attention probabilities of every layer of a fitted estimator's encoder on ``X``.

    ``X`` is prepared as in ``predict`` and run in eval mode: the weights the fitted
    network uses. ``batch_size`` (series per pass) bounds memory, not the result.

    Parameters
    ----------
    estimator : SPTClassifier or SPTPretrainer
        Fitted (optionally wrapped in ``FrozenEstimator``).
    X : array-like
        Series in any format the estimator accepts.
    batch_size : int, default=256

    Returns
    -------
    maps : list of ndarray of shape (n_instances, n_heads, n_tokens, n_tokens)
        One float32 array per layer; ``maps[l][s, h, i, j]``: how much query ``i``
        attends to key ``j``. Real rows sum to 1, padding rows and columns are 0.
    """
    est = _unwrap(estimator)
    check_is_fitted(est, "net_")
    encoder = getattr(getattr(est.net_, "module_", None), "encoder", None)
    if not isinstance(encoder, TransformerEncoder):
        raise TypeError(f"{type(est).__name__}.net_ has no TransformerEncoder at module_.encoder.")
    if not isinstance(batch_size, int | np.integer) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}.")
    learned = est._architecture.get("positional") == "learned"
    Xp = est.input_spec_.network_input(X, type(est).__name__, learned_positions=learned)
    device = next(encoder.parameters()).device
    settle_eval(encoder)
    layers: list[list[np.ndarray]] = [[] for _ in encoder.layers]
    with torch.no_grad():
        for start in range(0, len(Xp), batch_size):
            x, observed = split_input(torch.from_numpy(Xp[start : start + batch_size]))
            x, observed = x.to(device), observed.to(device)
            _, keep = encoder.tokens(x, observed, observed)
            rows = keep[:, None, :, None].to(x.dtype)
            for out, m in zip(layers, encoder.attention_maps(x, observed, observed),
                              strict=True):
                out.append((m * rows).float().cpu().numpy())
    return [np.concatenate(parts) for parts in layers]


def _check_maps(maps) -> list[np.ndarray]:
    """One 4D ``(n, heads, k, k)`` array per layer (or a 4D/5D array), all the same shape."""
    if isinstance(maps, np.ndarray | torch.Tensor):
        maps = list(maps) if maps.ndim == 5 else [maps]
    if isinstance(maps, str | bytes) or not isinstance(maps, Sequence) or len(maps) == 0:
        raise TypeError("maps must be a non-empty list of (n, heads, k, k) arrays, one per layer, "
                        f"as returned by attention_maps; got {type(maps).__name__}.")
    out = []
    for i, m in enumerate(maps):
        m = np.asarray(m.detach().cpu() if isinstance(m, torch.Tensor) else m, dtype=np.float64)
        if m.ndim != 4 or m.shape[2] != m.shape[3]:
            raise ValueError(f"maps[{i}] must have shape (n, heads, k, k); got {m.shape}.")
        if not np.isfinite(m).all() or (m < 0).any():
            raise ValueError(f"maps[{i}] must hold finite, non-negative probabilities.")
        if out and m.shape != out[0].shape:
            raise ValueError(f"All layers must have the same shape; maps[0] is {out[0].shape}, "
                             f"maps[{i}] is {m.shape}.")
        out.append(m)
    return out


def _check_keep(keep, maps: list[np.ndarray]) -> np.ndarray:
    """Which tokens are real, ``(n, k)``; by default those any query attends to (a padding
    key's score is ``-inf``, so it gets exactly zero attention)."""
    n, _, k, _ = maps[0].shape
    if keep is None:
        keep = maps[0].sum(axis=(1, 2)) > 0
    else:
        keep = np.asarray(keep)
        if keep.shape != (n, k):
            raise ValueError(f"keep must have shape {(n, k)}; got {keep.shape}.")
        keep = keep.astype(bool)
    if not keep.any(axis=1).all():
        raise ValueError("Every series needs at least one real (non-padding) token.")
    return keep


def _distance(k: int) -> np.ndarray:
    idx = np.arange(k)
    return np.abs(idx[:, None] - idx[None, :])


def proximity_profile(maps, keep=None) -> np.ndarray:
    """Mean attention probability as a function of the token distance ``|i - j|``.

    Averaged over every pair of real tokens at each distance, over all series: uniform
    attention over ``L`` tokens is flat at ``1 / L``, local attention decreases.

    Parameters
    ----------
    maps : list of ndarray of shape (n, heads, k, k)
        Per-layer attention from :func:`attention_maps`.
    keep : ndarray of shape (n, k) of bool, optional
        Real tokens; by default inferred from the maps.

    Returns
    -------
    profile : ndarray of shape (n_layers, n_heads, k)
        NaN at distances that no pair of real tokens reaches.
    """
    maps = _check_maps(maps)
    keep = _check_keep(keep, maps)
    k = keep.shape[1]
    dist = _distance(k).ravel()
    pairs = keep[:, :, None] & keep[:, None, :]
    counts = np.bincount(dist, weights=pairs.sum(axis=0).ravel(), minlength=k)
    profile = np.full((len(maps), maps[0].shape[1], k), np.nan)
    for layer, m in enumerate(maps):
        totals = (m * pairs[:, None]).sum(axis=0)
        for head, t in enumerate(totals):
            sums = np.bincount(dist, weights=t.ravel(), minlength=k)
            np.divide(sums, counts, out=profile[layer, head], where=counts > 0)
    return profile


def proximity_summary(maps, w: int = 2, keep=None) -> pd.DataFrame:
    """How local attention is, per layer and head.

    Parameters
    ----------
    maps, keep
        As for :func:`proximity_profile`.
    w : int, default=2
        Keys with ``|i - j| <= w`` count as near.

    Returns
    -------
    summary : pandas.DataFrame
        One row per ``(layer, head)`` with columns

        - ``mass_within_w``: attention on keys within ``±w``, averaged over real queries;
        - ``uniform_mass_within_w``: the same for uniform attention, the reference;
        - ``spearman``: Spearman correlation over pairs of real tokens between attention
          relative to uniform (``a[i, j]`` times row ``i``'s real keys, so that lengths
          compare) and ``-|i - j|``; 0 for attention that does not vary;
        - ``mean_distance``: expected ``|i - j|`` under the attention.

        ``summary.attrs["w"]`` records ``w``.
    """
    from scipy.stats import spearmanr

    maps = _check_maps(maps)
    if isinstance(w, bool) or not isinstance(w, int | np.integer) or w < 0:
        raise ValueError(f"w must be a non-negative integer, got {w!r}.")
    keep = _check_keep(keep, maps)
    dist = _distance(keep.shape[1])
    pairs = keep[:, :, None] & keep[:, None, :]
    n_keys = keep.sum(axis=1)  # real keys of every row of series s
    near = (pairs & (dist <= w)[None]).astype(np.float64)
    uniform = ((near.sum(axis=2) / n_keys[:, None])[keep]).mean()
    neg_dist = -np.broadcast_to(dist, pairs.shape)[pairs]
    rows = []
    for layer, m in enumerate(maps):
        for head in range(m.shape[1]):
            a = m[:, head]
            mass = (a * near).sum(axis=2)[keep].mean()
            mean_distance = (a * dist * pairs).sum(axis=2)[keep].mean()
            relative = (a * n_keys[:, None, None])[pairs]
            if np.ptp(relative) == 0:
                rho = 0.0
            else:
                rho = float(spearmanr(relative, neg_dist).statistic)
            rows.append(dict(layer=layer, head=head, mass_within_w=float(mass),
                             uniform_mass_within_w=float(uniform), spearman=rho,
                             mean_distance=float(mean_distance)))
    summary = pd.DataFrame(rows)
    summary.attrs["w"] = int(w)
    return summary


def plot_proximity(
    states: Mapping[str, Sequence[np.ndarray]],
    *,
    keep=None,
    title: str | None = None,
    path=None,
    max_distance: int | None = None,
):
    """Attention-vs-distance profiles of several states of a model, side by side.

    One panel per state, on one y-axis: per layer the profile averaged over heads (thick)
    and each head (thin); dashed, uniform attention. Built without pyplot, so it works
    under any backend and leaves no global figure open.

    Parameters
    ----------
    states : mapping of str to list of ndarray
        State name -> per-layer maps from :func:`attention_maps`, in display order.
    keep : ndarray of shape (n, k) of bool, optional
        Real tokens; by default inferred from each state's maps.
    title : str, optional
    path : str or path-like, optional
        Where the figure is also saved (format from the extension).
    max_distance : int, optional
        Show distances ``0 .. max_distance`` only.

    Returns
    -------
    fig : matplotlib.figure.Figure
    """
    try:
        from matplotlib.figure import Figure
    except ImportError as err:  # pragma: no cover - matplotlib is an optional extra
        raise ImportError("plot_proximity needs matplotlib: pip install matplotlib") from err
    if not isinstance(states, Mapping) or len(states) == 0:
        raise TypeError("states must be a non-empty mapping of state name -> attention maps.")
    if max_distance is not None and (
        not isinstance(max_distance, int | np.integer) or max_distance < 1
    ):
        raise ValueError(f"max_distance must be a positive integer, got {max_distance!r}.")
    fig = Figure(figsize=(3.6 * len(states), 3.4), layout="constrained")
    axes = fig.subplots(1, len(states), sharey=True, squeeze=False)[0]
    for ax, (name, maps) in zip(axes, states.items(), strict=True):
        maps = _check_maps(maps)
        state_keep = _check_keep(keep, maps)
        profile = proximity_profile(maps, state_keep)
        # uniform attention over the real keys of each row, through the same averaging
        n_keys = state_keep.sum(axis=1)[:, None, None, None]
        flat = state_keep[:, None, None, :] * state_keep[:, None, :, None] / n_keys
        reference = proximity_profile([flat], state_keep)[0, 0]
        d = np.arange(profile.shape[-1])
        if max_distance is not None:
            d = d[: max_distance + 1]
        for layer, per_head in enumerate(profile):
            colour = f"C{layer % 10}"
            for head in per_head:
                ax.plot(d, head[d], color=colour, lw=0.6, alpha=0.35)
            ax.plot(d, np.nanmean(per_head, axis=0)[d], color=colour, lw=2,
                    label=f"layer {layer}")
        ax.plot(d, reference[d], color="k", ls="--", lw=1, label="uniform")
        ax.set_title(str(name))
        ax.set_xlabel("token distance |i − j|")
    axes[0].set_ylabel("mean attention probability")
    axes[-1].legend(fontsize="small")
    if title is not None:
        fig.suptitle(title)
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig
