"""Several networks trained as one module: one skorch net, one optimizer, shared batches.

Members start from different random weights, draw their own masks, augmentations and
dropout, and are trained on the same batches with independent losses (the loss is the
mean of the members' losses, so no member is pulled towards the others). Sharing the
batches, the optimizer step and skorch's per-batch work makes ``n`` members cost less
than ``n`` separate fits on CPU, where these small models are overhead-bound.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["Ensemble", "mean_member_proba"]


class Ensemble(nn.Module):
    """``n_members`` copies of ``member(**kwargs)``, run on the same input.

    - With a mask (``hidden``), the input of reconstruction models arrives repeated once
      per member (``n_members * n`` series, a mask per copy): member ``i`` sees chunk
      ``i`` and the outputs are concatenated back, so each member has its own masks.
    - A classifier's logits are stacked to ``(n, n_members, n_classes)``.
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

    def forward(self, X: torch.Tensor, hidden: torch.Tensor | None = None) -> torch.Tensor:
        if hidden is not None:  # masked reconstruction: one chunk of X per member
            pairs = zip(self.members, X.chunk(self.n_members), hidden.chunk(self.n_members))
            return torch.cat([m(x, h) for m, x, h in pairs])
        return torch.stack([m(X) for m in self.members], dim=1)

    def targets(self, X: torch.Tensor, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Each member's reconstruction targets for its chunk of ``X``, concatenated."""
        pairs = [m.targets(x, h) for m, x, h in
                 zip(self.members, X.chunk(self.n_members), hidden.chunk(self.n_members))]
        return torch.cat([t for t, _ in pairs]), torch.cat([h for _, h in pairs])

    def embed(self, X: torch.Tensor) -> torch.Tensor:
        return torch.cat([m.embed(X) for m in self.members], dim=1)


def mean_member_proba(logits: torch.Tensor) -> torch.Tensor:
    """Class probabilities of an ensemble: the mean of the members' softmax."""
    return torch.softmax(logits.float(), dim=-1).mean(dim=1)
