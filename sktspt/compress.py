"""TWT: post-hoc fusion of redundant layers of a fitted model (Tomar et al. 2026).

:func:`fuse_layers` returns a new fitted estimator of the same class with fewer encoder layers:

1. **Redundancy** on training inputs: the distance between layer outputs ``h_i, h_j``
   (``h_0`` the embedded tokens) is mean ``1 - cos``, pooled and per token, averaged
   (:func:`layer_distances`).
2. **Groups** of contiguous layers by exact dynamic programming (:func:`plan_groups`): the
   fewest groups whose *diameters* (largest distance between two outputs inside a group:
   how much its later layers still change the representation) are within ``tolerance``.
3. **Surrogates:** each group of two or more layers becomes one layer of the same kind,
   initialised from its first layer and trained (MSE on non-padding tokens, all else
   frozen) to map the group's input to its output.
4. Optionally (``finetune_steps > 0``) the compressed stack is trained end to end to
   reproduce the original encoder's final token states.

The result predicts, transforms, saves and loads like an estimator fitted at the new
``depth``. :func:`truncate_layers` is the control fusion is measured against: keep the
first layers, train nothing.
"""

from __future__ import annotations

import copy
import math
import sys

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils.validation import check_is_fitted

from ._base import EmbeddingTransformerMixin
from ._concurrency import THREADS, settle_eval
from ._params import Integer, Number
from .inference import INFERENCE_BATCH
from .nn.encoder import masked_mean
from .nn.heads import split_input

__all__ = ["FusedClassifier", "fuse_layers", "layer_distances", "plan_groups", "truncate_layers"]


#: ``fuse_layers``' tolerance and learning rate (integers are ``Integer(low)``).
_TOLERANCE = Number(lambda v: 0 <= v < math.inf, "None or a non-negative number", none=True)
_LR = Number(lambda v: 0 < v < math.inf, "a positive number")


def layer_distances(states: list[torch.Tensor], keep: torch.Tensor) -> np.ndarray:
    """Mean ``1 - cos`` between layer representations, pooled and per token, averaged.

    Shape:
        - states: ``L + 1`` tensors ``(n, k, d)``, ``h_0 .. h_L``; keep: ``(n, k)``, the
          non-padding tokens.
        - output: ``(L + 1, L + 1)``, symmetric, zero on the diagonal.
    """
    w = keep.to(states[0].dtype)
    pooled = [masked_mean(h, keep) for h in states]
    size = len(states)
    dist = np.zeros((size, size))
    for i in range(size):
        for j in range(i + 1, size):
            p = 1 - torch.nn.functional.cosine_similarity(pooled[i], pooled[j], dim=-1).mean()
            tok = 1 - torch.nn.functional.cosine_similarity(states[i], states[j], dim=-1)
            t = (tok * w).sum() / w.sum().clamp_min(1.0)
            dist[i, j] = dist[j, i] = 0.5 * (float(p) + float(t))
    return dist


def _min_groups(diam: np.ndarray, depth: int, limit: float) -> int:
    """Fewest contiguous groups of layers ``1 .. depth`` with every diameter <= limit."""
    best = [0] + [depth + 1] * depth
    for b in range(1, depth + 1):
        for a in range(1, b + 1):
            if diam[a, b] <= limit:
                best[b] = min(best[b], best[a - 1] + 1)
    return best[depth]


def _min_sum(diam: np.ndarray, depth: int, groups: int, limit: float) -> list[tuple[int, int]]:
    """Exactly ``groups`` contiguous groups, diameters <= limit, least sum of diameters."""
    inf = math.inf
    cost = np.full((groups + 1, depth + 1), inf)
    back = np.zeros((groups + 1, depth + 1), dtype=np.int64)
    cost[0, 0] = 0.0
    for g in range(1, groups + 1):
        for b in range(g, depth + 1):
            for a in range(g, b + 1):  # group g covers layers a .. b
                if diam[a, b] > limit or cost[g - 1, a - 1] == inf:
                    continue
                c = cost[g - 1, a - 1] + diam[a, b]
                if c < cost[g, b]:
                    cost[g, b], back[g, b] = c, a
    plan, b = [], depth
    for g in range(groups, 0, -1):
        a = int(back[g, b])
        plan.append((a, b))
        b = a - 1
    return plan[::-1]


def plan_groups(
    distances: np.ndarray, max_depth: int | None = None, tolerance: float | None = 0.1
) -> list[tuple[int, int]]:
    """Contiguous groups of layers, ``(first, last)`` each (1-based, inclusive), in order.

    The fewest groups whose diameters are all at most ``tolerance`` (None: any), and among
    those the least sum of diameters. Where that is more than ``max_depth`` groups, the
    ``max_depth`` groups whose largest diameter is smallest. ``distances`` is
    :func:`layer_distances`' matrix (index 0: the input of the first layer).
    """
    depth = distances.shape[0] - 1
    diam = np.zeros((depth + 1, depth + 1))
    for a in range(1, depth + 1):
        for b in range(a, depth + 1):
            block = distances[a : b + 1, a : b + 1]
            diam[a, b] = block.max() if b > a else 0.0
    limit = math.inf if tolerance is None else float(tolerance)
    groups = _min_groups(diam, depth, limit)
    if max_depth is not None and groups > max_depth:
        groups = int(max_depth)
        candidates = np.unique(diam[np.triu_indices(depth + 1)])
        limit = min(c for c in candidates if _min_groups(diam, depth, c) <= groups)
    elif tolerance is None:
        groups = depth if max_depth is None else min(int(max_depth), depth)
    return _min_sum(diam, depth, groups, limit)


def _collect_states(encoder, X: np.ndarray, device) -> tuple[list[torch.Tensor], torch.Tensor]:
    """``h_0 .. h_L`` and ``keep`` of prepared X, in eval mode, on the CPU."""
    chunks, keeps = [], []
    with torch.no_grad():
        for start in range(0, len(X), INFERENCE_BATCH):
            xb = torch.from_numpy(np.ascontiguousarray(X[start : start + INFERENCE_BATCH]))
            x, observed = split_input(xb.to(device))
            states, keep = encoder.layer_states(x, observed, observed)
            chunks.append([h.cpu() for h in states])
            keeps.append(keep.cpu())
    states = [torch.cat([c[i] for c in chunks]) for i in range(len(chunks[0]))]
    return states, torch.cat(keeps)


def _masked_mse(a: torch.Tensor, b: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    w = keep.to(a.dtype)[..., None]
    return ((a - b).square() * w).sum() / (w.sum() * a.shape[-1]).clamp_min(1.0)


def _train(params, loss_fn, n: int, steps: int, batch_size: int, lr: float, seed: int) -> None:
    """AdamW on ``loss_fn(rows)`` over shuffled batches of ``range(n)``, clip norm 1."""
    params = list(params)
    if steps == 0 or not params:
        return
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    generator = torch.Generator().manual_seed(int(seed))
    order, at = torch.randperm(n, generator=generator), 0
    for _ in range(steps):
        if at >= n:
            order, at = torch.randperm(n, generator=generator), 0
        rows = order[at : at + batch_size]
        at += batch_size
        optimizer.zero_grad()
        loss = loss_fn(rows)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()


def _rebuild(estimator, depth: int, encoder, groups, distances):
    """A copy of fitted ``estimator`` with ``depth`` layers and ``encoder``'s weights."""
    skip = ("net_", "encoder_", "history_", "_run_lock")
    new = type(estimator).__new__(type(estimator))
    new.__dict__.update(
        {k: copy.deepcopy(v) for k, v in estimator.__dict__.items() if k not in skip}
    )
    new.depth = int(depth)
    classes = {"classes": new.classes_} if hasattr(new, "classes_") else {}
    net = new._restore(
        new.input_spec_, {**estimator.encoder_kwargs_, "depth": int(depth)}, check=False,
        **classes,
    )
    state = {k: v for k, v in estimator.net_.module_.state_dict().items()
             if not k.startswith("encoder.layers.")}
    state.update({f"encoder.{k}": v for k, v in encoder.state_dict().items()
                  if k.startswith("layers.")})
    net.module_.load_state_dict(state, strict=True)
    net.history = copy.deepcopy(estimator.net_.history)
    # A fresh optimizer, marked as scheduled (as in sktspt.persistence), so that a
    # warm-start fit continues the learning-rate schedule.
    for group in net.optimizer_.param_groups:
        group.setdefault("initial_lr", group["lr"])
    new.net_ = net
    new.encoder_ = net.module_.encoder
    new.history_ = net.history
    new.fused_groups_ = [tuple(g) for g in groups]
    new.layer_distances_ = distances
    return new


def fuse_layers(
    estimator, X, max_depth=None, tolerance=0.1, *, steps=300, finetune_steps=0, lr=3e-4,
    batch_size=32, max_series=1024, random_state=0,
):
    """Fuse groups of redundant layers of a fitted estimator into one layer each (TWT).

    Parameters
    ----------
    estimator : SPTClassifier, SPTPretrainer or an sktime adapter of one
        Fitted; it is not modified.
    X : array-like
        Training inputs (any format the estimator takes; no labels) on which redundancy
        is measured and the surrogates are trained.
    max_depth : int or None, default=None
        Most layers to keep.
    tolerance : float or None, default=0.1
        Largest diameter (mean ``1 - cos``) of a fused group; None leaves the choice to
        ``max_depth``; 0 fuses only layers that change nothing.
    steps, finetune_steps : int, default=300, 0
        AdamW steps per surrogate layer, then of the compressed stack end to end.
    lr, batch_size : float, int, default=3e-4, 32
        Learning rate and series per step of both trainings.
    max_series, random_state : int, default=1024, 0
        At most this many series of ``X`` are used, drawn with this seed (which also
        orders the batches).

    Returns
    -------
    SPTClassifier, SPTPretrainer or the adapter given
        A new fitted estimator, ``depth == len(fused_groups_)``, with ``fused_groups_``
        (the original ``(first, last)`` layers of each new layer) and
        ``layer_distances_`` (not saved by :func:`sktspt.save`; the depth and weights are).
    """
    if _is_sktime_adapter(estimator):
        from sktime.datatypes import convert_to

        estimator.check_is_fitted()
        X = convert_to(X, to_type=estimator.get_tag("X_inner_mtype"), as_scitype="Panel")
        return _adapter_copy(estimator, fuse_layers(
            estimator.estimator_, X, max_depth, tolerance, steps=steps,
            finetune_steps=finetune_steps, lr=lr, batch_size=batch_size,
            max_series=max_series, random_state=random_state))
    _check_single_network(estimator, "fuse_layers")
    Integer(1, none=True)("max_depth", max_depth)
    _TOLERANCE("tolerance", tolerance)
    if max_depth is None and tolerance is None:
        raise ValueError("fuse_layers needs max_depth or tolerance (or both); both are None.")
    for name, value, low in (("steps", steps, 0), ("finetune_steps", finetune_steps, 0),
                             ("batch_size", batch_size, 1), ("max_series", max_series, 1),
                             ("random_state", random_state, 0)):
        Integer(low)(name, value)
    _LR("lr", lr)
    with THREADS.hold(estimator._thread_count()):
        return _fuse(estimator, X, max_depth, tolerance, int(steps), int(finetune_steps),
                     float(lr), int(batch_size), int(max_series), int(random_state))


def _is_sktime_adapter(estimator) -> bool:
    # Without the adapters' module imported no object is one (sktime stays unloaded).
    adapters = sys.modules.get("sktspt.sktime_adapters")
    return adapters is not None and isinstance(
        estimator, adapters.SPTClassifierSktime | adapters.SPTTransformerSktime)


def _check_single_network(estimator, caller: str) -> None:
    """``estimator`` must be a fitted SPTClassifier or SPTPretrainer."""
    from .classifier import SPTClassifier
    from .pretrainer import SPTPretrainer

    if not isinstance(estimator, SPTClassifier | SPTPretrainer):
        raise TypeError(f"{caller} takes a fitted SPTClassifier or SPTPretrainer (or an "
                        f"sktime adapter of one), got {type(estimator).__name__}.")
    check_is_fitted(estimator, "net_")


def _adapter_copy(adapter, compressed):
    """A copy of fitted sktime ``adapter`` whose core estimator is ``compressed``."""
    new = type(adapter).__new__(type(adapter))
    new.__dict__.update({k: copy.deepcopy(v) for k, v in adapter.__dict__.items()
                         if k != "estimator_"})
    new.estimator_ = compressed
    new.depth = compressed.depth
    new.fused_groups_ = compressed.fused_groups_
    new.layer_distances_ = compressed.layer_distances_
    return new


def truncate_layers(estimator, depth: int):
    """A copy of fitted ``estimator`` (as for :func:`fuse_layers`) with its first ``depth``
    encoder layers only, nothing trained: the control for :func:`fuse_layers`. Where later
    layers are idle, truncation already keeps the accuracy, and fusion must beat it.
    ``fused_groups_`` lists the kept layers, ``layer_distances_`` is None.
    """
    if _is_sktime_adapter(estimator):
        estimator.check_is_fitted()
        return _adapter_copy(estimator, truncate_layers(estimator.estimator_, depth))
    _check_single_network(estimator, "truncate_layers")
    Integer(1)("depth", depth)
    encoder = copy.deepcopy(estimator.net_.module_.encoder).cpu()
    depth = min(int(depth), len(encoder.layers))
    encoder.layers = torch.nn.ModuleList(encoder.layers[:depth])
    groups = [(i, i) for i in range(1, depth + 1)]
    return _rebuild(estimator, depth, encoder, groups, None)


def _fuse(estimator, X, max_depth, tolerance, steps, finetune_steps, lr, batch_size,
          max_series, seed):
    Xp = estimator._input(X)
    if len(Xp) > max_series:
        rows = np.sort(np.random.default_rng(seed).choice(len(Xp), max_series, replace=False))
        Xp = Xp[rows]
    original = estimator.net_.module_.encoder
    states, keep = _collect_states(settle_eval(original), Xp, estimator._device)
    distances = layer_distances(states, keep)
    groups = plan_groups(distances, max_depth, tolerance)
    encoder = copy.deepcopy(original).cpu().eval()
    for p in encoder.parameters():
        p.requires_grad_(False)
    layers = []
    for number, (a, b) in enumerate(groups):
        layer = encoder.layers[a - 1]
        if b > a:
            for p in layer.parameters():
                p.requires_grad_(True)
            h_in, h_out = states[a - 1], states[b]
            _train(
                layer.parameters(),
                lambda rows, layer=layer, h_in=h_in, h_out=h_out: _masked_mse(
                    layer(h_in[rows], keep[rows]), h_out[rows], keep[rows]),
                len(Xp), steps, batch_size, lr, seed + number,
            )
            for p in layer.parameters():
                p.requires_grad_(False)
        layers.append(layer)
    encoder.layers = torch.nn.ModuleList(layers)
    if finetune_steps and len(groups) < len(original.layers):
        for p in encoder.layers.parameters():
            p.requires_grad_(True)
        target = states[-1]

        def chained(rows):
            h, k = states[0][rows], keep[rows]
            for layer in encoder.layers:
                h = layer(h, k)
            with torch.no_grad():
                goal = encoder.norm(target[rows])
            return _masked_mse(encoder.norm(h), goal, k)

        _train(encoder.layers.parameters(), chained, len(Xp), finetune_steps, batch_size, lr,
               seed + len(groups))
    return _rebuild(estimator, len(groups), encoder, groups, distances)


class FusedClassifier(ClassifierMixin, EmbeddingTransformerMixin, BaseEstimator):
    """Fit an :class:`~sktspt.SPTClassifier`, then fuse its redundant layers (TWT).

    ``fit(X, y)`` fits a clone of ``estimator`` (None: ``SPTClassifier()``) and replaces it
    by ``fuse_layers(fitted, X, ...)`` (the other parameters are its), so the compression
    sees the training data only. ``estimator_`` is the fused classifier, ``depth_`` its depth.
    """

    def __init__(self, estimator=None, max_depth=None, tolerance=0.1, steps=300,
                 finetune_steps=300, random_state=0):
        self.estimator = estimator
        self.max_depth = max_depth
        self.tolerance = tolerance
        self.steps = steps
        self.finetune_steps = finetune_steps
        self.random_state = random_state

    def fit(self, X, y) -> FusedClassifier:
        """Fit a clone of ``estimator`` on ``(X, y)``, then fuse its layers on ``X``."""
        from .classifier import SPTClassifier

        fitted = (SPTClassifier() if self.estimator is None else clone(self.estimator)).fit(X, y)
        self.estimator_ = fuse_layers(fitted, X, self.max_depth, self.tolerance, steps=self.steps,
                                      finetune_steps=self.finetune_steps,
                                      random_state=self.random_state)
        self.classes_ = self.estimator_.classes_
        self.depth_ = self.estimator_.depth
        return self

    @property
    def n_features_in_(self) -> int:
        """The fitted classifier's, which has one for 2D (tabular-shaped) input only."""
        return self.estimator_.n_features_in_

    @property
    def _n_features_out(self) -> int:
        return self.estimator_._n_features_out

    def predict(self, X) -> np.ndarray:
        """Class labels from the fused network."""
        check_is_fitted(self, "estimator_")
        return self.estimator_.predict(X)

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities from the fused network."""
        check_is_fitted(self, "estimator_")
        return self.estimator_.predict_proba(X)

    def transform(self, X) -> np.ndarray:
        """Pooled embeddings from the fused encoder."""
        check_is_fitted(self, "estimator_")
        return self.estimator_.transform(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.three_d_array = True
        return tags
