"""Several networks trained as one module: one skorch net, one optimizer, shared batches.

Members start from different random weights, draw their own masks, augmentations and
dropout, and are trained on the same batches with independent losses (the loss is the
mean of the members' losses, so no member is pulled towards the others, and each member's
gradient is clipped on its own: :class:`~sktspt.training.callbacks.MemberGradientClipping`).

Where the members are the standard transformer (the default), their layers run *stacked*:
each weight is stacked across members on the fly and every layer is one batched product
(``baddbmm``) for all members, so ``n`` members launch the kernels of one. The weights
stay in the members' own modules (state dicts, pretrained encoders and saved files are
those of the member loop), and gradients reach them through the stacking. The rocket
tokenizer's thresholds are drawn once for the ensemble, so where the members read the same
input (fine-tuning, prediction) its features are computed once for all of them. Other
architectures run member by member.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .dropout import attention
from .encoder import masked_mean
from .heads import ClassificationModel, ReconstructionModel, RegressionModel, split_input
from .layers import EncoderLayer
from .panel_fit import fit_panel_tensors
from .tokenizers import RocketEmbedding, unpatchify

__all__ = ["Ensemble", "mean_member_proba"]


def _stack(modules, name: str) -> torch.Tensor:
    return torch.stack([getattr(m, name) for m in modules])


def _linear(h: torch.Tensor, modules) -> torch.Tensor:
    """Each member's ``nn.Linear`` on its slice of ``h`` ``(members, rows, in)``."""
    return torch.baddbmm(_stack(modules, "bias")[:, None], h, _stack(modules, "weight").mT)


def _layer_norm(h: torch.Tensor, modules) -> torch.Tensor:
    """Each member's ``nn.LayerNorm`` on its slice of ``h`` ``(members, rows, d)``."""
    normed = F.layer_norm(h, h.shape[-1:], eps=modules[0].eps)
    weight, bias = _stack(modules, "weight")[:, None], _stack(modules, "bias")[:, None]
    return torch.addcmul(bias, normed, weight)


def _stacked_layer(layers, h: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """Pre-norm :class:`EncoderLayer` s (one per member) on ``h`` ``(members, n, k, d)``;
    ``keep`` ``(members * n, k)`` marks the tokens that may be attended to."""
    m, n, k, d = h.shape
    first = layers[0]
    heads, head_dim = first.attn.n_heads, first.attn.head_dim
    x = _layer_norm(h.reshape(m, n * k, d), [layer.norm1 for layer in layers])
    qkv = _linear(x, [layer.attn.qkv for layer in layers])
    q, kk, v = qkv.reshape(m * n, k, 3, heads, head_dim).permute(2, 0, 3, 1, 4)
    if first.attn.rotary is not None:  # no trained weights: the same for every member
        q, kk = first.attn.rotary(q, kk)
    bias = first.attn._bias(keep, k, q.dtype)
    y = attention(q, kk, v, bias, first.attn.dropout if first.training else 0.0)
    y = _linear(y.transpose(1, 2).reshape(m, n * k, d), [layer.attn.out for layer in layers])
    h = h + first.drop(y).reshape(m, n, k, d)
    ffn = [layer.ffn for layer in layers]
    x = _layer_norm(h.reshape(m, n * k, d), [layer.norm2 for layer in layers])
    x = first.ffn[2](first.ffn[1](_linear(x, [f[0] for f in ffn])))
    return h + first.drop(_linear(x, [f[3] for f in ffn])).reshape(m, n, k, d)


class Ensemble(nn.Module):
    """``n_members`` copies of ``member(**kwargs)``, run on the same input.

    - With a mask (``hidden``), the input of reconstruction models arrives repeated once
      per member (``n_members * n`` series, a mask per copy): member ``i`` sees chunk
      ``i`` and the outputs are concatenated back, so each member has its own masks.
    - A classifier's logits (a regressor's values) are stacked to
      ``(n, n_members, n_classes)`` (``n_outputs``).
    - ``embed`` concatenates the members' embeddings: ``(n, n_members * d_model)``.
    - ``encoder`` is a ``ModuleList`` of the members' encoders (built on access, so the
      state dict holds each weight once), which ``load_state_dict`` can fill from another
      ensemble's ``encoder``.
    """

    def __init__(self, member: type[nn.Module], n_members: int, **kwargs):
        super().__init__()
        if n_members < 2:
            raise ValueError(f"An Ensemble needs at least 2 members, got {n_members}.")
        self.n_members = n_members
        self.members = nn.ModuleList(member(**kwargs) for _ in range(n_members))

    @property
    def encoder(self) -> nn.ModuleList:
        return nn.ModuleList(m.encoder for m in self.members)

    @torch.no_grad()
    def fit_panel(self, x: torch.Tensor, available: torch.Tensor) -> None:
        """Fit the first member's panel buffers and give every member the same: the
        members then share the rocket tokenizer's features (and the difference scales,
        which do not depend on the draw)."""
        fit_panel_tensors(self.members[0], x, available)
        buffers = dict(self.members[0].named_buffers())
        for member in self.members[1:]:
            for name, buffer in member.named_buffers():
                buffer.copy_(buffers[name])

    def forward(self, X: torch.Tensor, hidden: torch.Tensor | None = None) -> torch.Tensor:
        if self.stackable():
            return self._stacked_forward(X, hidden)
        if hidden is not None:  # masked reconstruction: one chunk of X per member
            pairs = zip(self.members, X.chunk(self.n_members), hidden.chunk(self.n_members))
            return torch.cat([m(x, h) for m, x, h in pairs])
        return torch.stack([m(X) for m in self.members], dim=1)

    def stackable(self) -> bool:
        """Whether the members run stacked: the plain transformer, dense attention."""
        for m in self.members:
            if type(m) not in (ClassificationModel, RegressionModel, ReconstructionModel):
                return False
            for layer in m.encoder.layers:
                if type(layer) is not EncoderLayer or (
                        layer.training and layer.attn.sparse_attention is not None):
                    return False
        return True

    def _stacked_forward(self, X: torch.Tensor, hidden: torch.Tensor | None) -> torch.Tensor:
        members = self.members
        h, keep = self._stacked_states(X, hidden)
        m, n, k, d = h.shape
        if hidden is not None:
            out = _linear(h.reshape(m, n * k, d), [mm.head for mm in members])
            return torch.cat([unpatchify(o.reshape(n, k, -1), members[0].n_outputs,
                                         members[0].encoder.patch_size) for o in out])
        pooled = masked_mean(h.reshape(m * n, k, d), keep).reshape(m, n, d)
        logits = _linear(members[0].head[0](pooled), [mm.head[1] for mm in members])
        return logits.transpose(0, 1)

    def _stacked_states(self, X: torch.Tensor, hidden: torch.Tensor | None):
        """The members' final token states ``(members, n, k, d)`` and ``keep``
        ``(members * n, k)``: what each member's encoder returns, for all at once."""
        encoders = [m.encoder for m in self.members]
        first = encoders[0]
        x, observed = split_input(X)
        if hidden is None:  # every member reads X
            h = self._tokens(*[[v] * self.n_members for v in (x, observed, observed)])
            keep = first.keep(observed).repeat(self.n_members, 1)
        else:  # member i reads chunk i, with its own mask
            h = self._tokens(*[v.chunk(self.n_members) for v in (x, observed & ~hidden, observed)])
            keep = first.keep(observed)
        m, n, k, d = h.shape
        for i in range(len(first.layers)):
            h = _stacked_layer([e.layers[i] for e in encoders], h, keep)
        h = _layer_norm(h.reshape(m, n * k, d), [e.norm for e in encoders])
        return h.reshape(m, n, k, d), keep

    def _tokens(self, xs, availables, observeds) -> torch.Tensor:
        """Each member's embedded tokens of its input, ``(members, n, k, d)``.

        Members that share a rocket tokenizer's thresholds compute its features once for an
        input they share, and map them with all members' trained maps at once.
        """
        encoders = [m.encoder for m in self.members]
        if not self._shared_rocket(encoders):
            return torch.stack([e.tokens(x, a, o)[0]
                                for e, x, a, o in zip(encoders, xs, availables, observeds)])
        embeds = [e.embed for e in encoders]
        shared = all(x is xs[0] for x in xs) and all(a is availables[0] for a in availables)
        if shared:
            f = embeds[0].features(xs[0], availables[0])
        else:  # chunk by chunk: one chunk's responses stay in cache, all of them would not
            f = torch.cat([embeds[0].features(x, a) for x, a in zip(xs, availables)])
        f = F.layer_norm(f, f.shape[-1:], eps=embeds[0].norm.eps)
        # proj(norm(f)) with the norm's affine folded into the map, for every member at once
        projs, norms = [e.proj for e in embeds], [e.norm for e in embeds]
        proj = _stack(projs, "weight")
        weight = proj * _stack(norms, "weight")[:, None]
        bias = torch.baddbmm(_stack(projs, "bias")[:, :, None], proj,
                             _stack(norms, "bias")[:, :, None])[..., 0]
        m = len(embeds)
        if shared:
            n, k, width = f.shape
            h = torch.addmm(bias.reshape(1, -1), f.reshape(n * k, width),
                            weight.reshape(-1, width).T).reshape(n, k, m, -1).permute(2, 0, 1, 3)
        else:
            n, k, width = f.shape[0] // m, f.shape[1], f.shape[2]
            h = torch.baddbmm(bias[:, None], f.reshape(m, n * k, width),
                              weight.mT).reshape(m, n, k, -1)
        return torch.stack([e.position(t) for e, t in zip(encoders, h)])

    def _shared_rocket(self, encoders) -> bool:
        """Whether all members' rocket tokenizers hold the same thresholds (ensembles saved
        before they were drawn once do not). Compared again only after a threshold changed
        (a fit, a load, a move), so a training step waits on no comparison on a GPU."""
        first = encoders[0].embed
        if not isinstance(first, RocketEmbedding) or encoders[0].difference_view is not None:
            return False
        key = tuple((e.embed.threshold.data_ptr(), e.embed.threshold._version) for e in encoders)
        if getattr(self, "_shared_key", None) != key:
            self._shared = all(
                type(e.embed) is type(first) and e.embed.dilations == first.dilations
                and torch.equal(e.embed.threshold, first.threshold) for e in encoders[1:])
            self._shared_key = key
        return self._shared

    def targets(self, X: torch.Tensor, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Each member's reconstruction targets for its chunk of ``X``, concatenated."""
        pairs = [m.targets(x, h) for m, x, h in
                 zip(self.members, X.chunk(self.n_members), hidden.chunk(self.n_members))]
        return torch.cat([t for t, _ in pairs]), torch.cat([h for _, h in pairs])

    def embed(self, X: torch.Tensor) -> torch.Tensor:
        if not self.stackable():
            return torch.cat([m.embed(X) for m in self.members], dim=1)
        h, keep = self._stacked_states(X, None)
        m, n, k, d = h.shape
        return masked_mean(h.reshape(m * n, k, d), keep).reshape(m, n, d).transpose(0, 1).reshape(
            n, m * d)


def mean_member_proba(logits: torch.Tensor) -> torch.Tensor:
    """Class probabilities of an ensemble: the mean of the members' softmax."""
    return torch.softmax(logits.float(), dim=-1).mean(dim=1)
