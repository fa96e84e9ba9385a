"""The transformer encoder: tokens, a stack of layers (:mod:`sktspt.nn.layers`), pooling."""

from __future__ import annotations

import torch
from torch import nn

from .layers import EncoderLayer, SelfAttention
from .positional import POSITIONALS, LearnedPosition, SinusoidalPosition
from .tokenizers import PatchEmbedding, make_tokenizer, patchify, unpatchify
from .whitebox import encoder_layer

__all__ = ["PatchEmbedding", "SelfAttention", "EncoderLayer", "TransformerEncoder", "patchify",
           "unpatchify"]


class TransformerEncoder(nn.Module):
    """Time-series transformer: patches -> tokens -> ``depth`` layers -> token states.

    ``forward(x, available, observed)`` takes normalised values ``(n, c, t)`` (``t`` a
    multiple of ``patch_size``) and boolean masks of that shape; it returns token states
    ``(n, k, d_model)`` and ``keep`` ``(n, k)``, the tokens with an observed value.
    ``tokenizer``: :mod:`sktspt.nn.tokenizers`; ``architecture``: ``"transformer"``,
    ``"crate"`` or ``"attention_only"`` (:mod:`sktspt.nn.whitebox`). The keyword-only
    arguments are the estimators' ``architecture__`` settings.

    Parameters
    ----------
    n_heads : int
        Attention heads; must divide ``d_model``.
    dim_feedforward : int
        Hidden width of each layer's feed-forward block.
    dropout : float
        Dropout in attention and feed-forward blocks, in ``[0, 1)``.
    positional : {"sinusoidal", "learned", "rotary", "alibi", "none"}
        Positional encoding. ``rotary`` and ``alibi`` are relative (locality priors).
    """

    def __init__(
        self,
        n_channels: int,
        patch_size: int,
        max_tokens: int,
        d_model: int = 64,
        depth: int = 3,
        architecture: str = "transformer",
        tokenizer: str = "patch",
        *,
        n_heads: int = 4,
        dim_feedforward: int = 128,
        dropout: float = 0.1,
        positional: str = "sinusoidal",
    ):
        super().__init__()
        if positional not in POSITIONALS:
            raise ValueError(f"positional must be one of {POSITIONALS}, got {positional!r}.")
        self.n_channels = n_channels
        self.patch_size = patch_size
        self.d_model = d_model
        self.embed = make_tokenizer(tokenizer, n_channels, patch_size, d_model,
                                    max_tokens * patch_size)
        if positional == "sinusoidal":
            self.position = SinusoidalPosition(d_model)
        elif positional == "learned":
            self.position = LearnedPosition(d_model, max_tokens)
        else:
            self.position = nn.Identity()
        self.layers = nn.ModuleList(
            encoder_layer(architecture, d_model, n_heads, dim_feedforward, dropout, positional)
            for _ in range(depth)
        )
        self.norm = nn.LayerNorm(d_model)

    def keep(self, observed: torch.Tensor) -> torch.Tensor:
        """Which tokens hold at least one observed value ``(n, k)``: the rest are padding."""
        return patchify(observed.float(), self.patch_size).amax(dim=-1) > 0

    def tokens(self, x: torch.Tensor, available: torch.Tensor, observed: torch.Tensor):
        """Embedded tokens with positions, and which tokens are not padding."""
        return self.position(self.embed(x, available)), self.keep(observed)

    def forward(self, x: torch.Tensor, available: torch.Tensor, observed: torch.Tensor):
        h, keep = self.tokens(x, available, observed)
        for layer in self.layers:
            h = layer(h, keep)
        return self.norm(h), keep

    def layer_states(self, x: torch.Tensor, available: torch.Tensor, observed: torch.Tensor):
        """The ``depth + 1`` token states ``(n, k, d_model)`` before the first layer and after
        each (without the final norm), and ``keep``."""
        h, keep = self.tokens(x, available, observed)
        states = [h]
        for layer in self.layers:
            h = layer(h, keep)
            states.append(h)
        return states, keep

    def attention_maps(self, x, available, observed) -> list[torch.Tensor]:
        """Per layer, attention probabilities ``(n, heads, k, k)``."""
        h, keep = self.tokens(x, available, observed)
        maps = []
        for layer in self.layers:
            maps.append(layer.attention_weights(h, keep))
            h = layer(h, keep)
        return maps


def masked_mean(h: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """Mean over tokens that are not padding: ``(n, k, d)`` -> ``(n, d)``."""
    w = keep.to(h.dtype)[..., None]
    return (h * w).sum(1) / w.sum(1).clamp_min(1.0)
