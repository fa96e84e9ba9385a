"""Task heads and the networks the estimators train."""

from __future__ import annotations

import torch
from torch import nn

from .encoder import TransformerEncoder, masked_mean, unpatchify

__all__ = ["EncoderModel", "ReconstructionModel", "ClassificationModel", "RegressionModel",
           "LeJEPAModel", "split_input"]


def split_input(X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """NaN-coded input -> (values with zeros for NaN, observed mask)."""
    observed = ~torch.isnan(X)
    return torch.nan_to_num(X, nan=0.0), observed


class EncoderModel(nn.Module):
    """An encoder; subclasses add a task head. All pool the same way (mean over non-padding
    tokens), so ``transform`` means the same thing everywhere."""

    def __init__(self, **encoder_kwargs):
        super().__init__()
        self.encoder = TransformerEncoder(**encoder_kwargs)

    def embed(self, X: torch.Tensor) -> torch.Tensor:
        """Pooled embeddings ``(n, d_model)``."""
        x, observed = split_input(X)
        return masked_mean(*self.encoder(x, observed, observed))


class ReconstructionModel(EncoderModel):
    """Encoder plus a linear head that maps each token back to its patch values:
    ``forward(X, hidden)`` reconstructs ``(n, c, t)`` from ``X`` without ``hidden``."""

    def __init__(self, **encoder_kwargs):
        super().__init__(**encoder_kwargs)
        e = self.encoder
        self.n_outputs = e.n_channels
        self.head = nn.Linear(e.d_model, self.n_outputs * e.patch_size)

    def forward(self, X: torch.Tensor, hidden: torch.Tensor | None = None) -> torch.Tensor:
        x, observed = split_input(X)
        available = observed if hidden is None else observed & ~hidden
        h, _ = self.encoder(x, available, observed)
        return unpatchify(self.head(h), self.n_outputs, self.encoder.patch_size)

    def targets(self, X: torch.Tensor, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """What :meth:`forward` is scored on: NaN-coded targets (``X`` itself) and which
        were hidden."""
        return X, hidden


class ClassificationModel(EncoderModel):
    """Encoder, mean pooling over non-padding tokens, and a linear classifier (logits)."""

    def __init__(self, n_classes: int, head_dropout: float = 0.0, **encoder_kwargs):
        super().__init__(**encoder_kwargs)
        self.head = nn.Sequential(
            nn.Dropout(head_dropout), nn.Linear(self.encoder.d_model, n_classes)
        )

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        return self.head(self.embed(X))


class RegressionModel(ClassificationModel):
    """The classification network (same state-dict keys) with ``n_outputs`` values, not
    logits."""

    def __init__(self, n_outputs: int, head_dropout: float = 0.0, **encoder_kwargs):
        super().__init__(n_classes=n_outputs, head_dropout=head_dropout, **encoder_kwargs)


class LeJEPAModel(EncoderModel):
    """Encoder, mean pooling and a projector (``Linear-BN-ReLU`` twice, then ``Linear``, as
    in the LeJEPA reference code): ``forward(X)`` returns the embeddings ``(n, d_model)``
    and the projections ``(n, proj_dim)`` the loss acts on."""

    def __init__(self, proj_dim: int = 64, proj_hidden: int | None = None, **encoder_kwargs):
        super().__init__(**encoder_kwargs)
        d = self.encoder.d_model
        hidden = 4 * d if proj_hidden is None else int(proj_hidden)
        self.projector = nn.Sequential(
            nn.Linear(d, hidden),
            nn.BatchNorm1d(hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.BatchNorm1d(hidden),
            nn.ReLU(),
            nn.Linear(hidden, int(proj_dim)),
        )

    def forward(self, X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        emb = self.embed(X)
        return emb, self.projector(emb)
