"""Training objectives: masked reconstruction (SPT), SIGReg and LeJEPA, the LEAP exit loss.

SIGReg and LeJEPA
-----------------
SIGReg (*sketched isotropic Gaussian regularisation*, Balestriero & LeCun 2025) pushes a
batch of embeddings towards an isotropic standard Gaussian, the distribution that provably
minimises the downstream risk of linear probes. It projects the batch on ``M`` random unit
directions and scores each projection with the Epps-Pulley statistic, which compares the
empirical characteristic function with the Gaussian's::

    EP(x) = N * integral |phi_hat(t) - exp(-t^2/2)|^2 * exp(-t^2/2) dt,
    phi_hat(t) = mean_n exp(i t x_n).

The integrand is even in ``t``, so it is integrated on ``[0, 3]`` by the trapezoid rule
(17 points) with doubled weights. Under ``N(0, I)`` the expected value is
``sqrt(2 pi) - sqrt(2 pi / 3) ~ 1.06`` whatever ``N``; a collapsed, shrunk or shifted
cloud scores orders of magnitude higher. Everything is smooth, so SIGReg is a loss.

LeJEPA trains an encoder with no teacher, EMA or stop-gradient: views of a sample must
predict the centre of its global views, and SIGReg prevents the collapse that this
invariance term alone would reach.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["masked_reconstruction_loss", "SIGReg", "LeJEPALoss", "random_directions",
           "EXIT_TAU", "exit_loss"]

#: Target cosine of the LEAP loss (the paper's tau).
EXIT_TAU = 0.98
#: Sharpness of the sigmoid in the LEAP loss.
EXIT_SHARPNESS = 10.0


def masked_reconstruction_loss(
    reconstruction: torch.Tensor, X: torch.Tensor, hidden: torch.Tensor
) -> torch.Tensor:
    """Squared error on the values of NaN-coded ``X`` that were ``hidden`` *and* observed;
    0 (with a gradient path) when a batch hides nothing."""
    target_mask = hidden & ~torch.isnan(X)
    target = torch.nan_to_num(X, nan=0.0)
    diff = reconstruction.float() - target.float()
    err = diff.square()
    w = target_mask.to(err.dtype)
    return (err * w).sum() / w.sum().clamp_min(1.0)


def random_directions(
    dim: int, n_slices: int, seed: int, step: int, device=None
) -> torch.Tensor:
    """``(dim, n_slices)`` unit columns, a pure function of ``(seed, step)``: drawn on the
    CPU, so a step uses the same directions on any device."""
    mixed = (int(seed) * 0x9E3779B97F4A7C15 + int(step)) % (2**63)
    g = torch.Generator(device="cpu").manual_seed(mixed)
    A = torch.randn(dim, n_slices, generator=g, dtype=torch.float32)
    return (A / A.norm(dim=0, keepdim=True)).to(device)


class SIGReg(nn.Module):
    """Sliced Epps-Pulley statistic of embeddings against ``N(0, I)``.

    Parameters
    ----------
    n_slices : int, default=256
        Random 1-D projections per call (the paper uses 256-1024).
    n_points : int, default=17
        Trapezoid quadrature points on ``[0, t_max]``.
    t_max : float, default=3.0
        Upper integration limit; the Gaussian window makes larger ``t`` negligible.
    seed : int, default=0
        Seeds the directions together with the step counter.

    Notes
    -----
    ``forward(z, step=None)`` takes ``z`` ``(N, K)`` or ``(V, N, K)`` (a statistic per view
    over the ``N`` samples) and returns the mean, a float32 scalar even under autocast.
    With ``step=None`` a training-mode module advances its counter ``n_steps`` (fresh
    directions each step); an eval-mode module uses step 0 (comparable validation values).
    """

    def __init__(self, n_slices: int = 256, n_points: int = 17, t_max: float = 3.0,
                 seed: int = 0):
        super().__init__()
        if int(n_slices) < 1:
            raise ValueError(f"n_slices must be a positive integer, got {n_slices!r}.")
        if int(n_points) < 2:
            raise ValueError(f"n_points must be at least 2, got {n_points!r}.")
        if not float(t_max) > 0:
            raise ValueError(f"t_max must be positive, got {t_max!r}.")
        self.n_slices = int(n_slices)
        self.seed = int(seed)
        self.n_steps = 0
        t = torch.linspace(0.0, float(t_max), int(n_points), dtype=torch.float32)
        dt = float(t_max) / (int(n_points) - 1)
        # Trapezoid weights on [0, t_max] (dt/2 at the ends, dt inside), doubled for the
        # symmetric half of the integral on [-t_max, 0].
        weights = torch.full((int(n_points),), 2 * dt, dtype=torch.float32)
        weights[[0, -1]] = dt
        window = torch.exp(-t.square() / 2.0)
        self.register_buffer("t", t, persistent=False)
        self.register_buffer("phi", window, persistent=False)
        self.register_buffer("weights", weights * window, persistent=False)

    def forward(self, z: torch.Tensor, step: int | None = None) -> torch.Tensor:
        if z.dim() < 2:
            raise ValueError(f"z must have shape (N, K) or (..., N, K), got {tuple(z.shape)}.")
        if step is None:
            step = self.n_steps if self.training else 0
            if self.training:
                self.n_steps += 1
        with torch.autocast(device_type=z.device.type, enabled=False):
            z = z.float()
            A = random_directions(z.shape[-1], self.n_slices, self.seed, step, z.device)
            x_t = (z @ A).unsqueeze(-1) * self.t  # (..., N, M, T)
            err = (x_t.cos().mean(-3) - self.phi).square() + x_t.sin().mean(-3).square()
            statistic = (err @ self.weights) * z.shape[-2]  # (..., M)
            return statistic.mean()


class LeJEPALoss(nn.Module):
    """``(1 - lambda) * L_pred + lambda * SIGReg`` on projections ``(V, N, K)`` of ``V`` views.

    ``L_pred``: mean squared distance of each view to its sample's centre (the mean of the
    first ``n_global`` views), averaged over coordinates too (as in the reference code), so
    ``lambda`` means the same whatever ``K``; SIGReg per view, averaged.

    Parameters
    ----------
    sigreg_lambda : float, default=0.05
        Weight of SIGReg in ``[0, 1]``: the estimators' ``pretrain_objective__sigreg_lambda``,
        which ``"masked+sigreg"`` weighs its SIGReg term by too (unused with ``"masked"``).
    n_global : int, default=2
    n_slices, seed
        Passed to :class:`SIGReg`.
    """

    def __init__(self, n_global: int = 2, n_slices: int = 256, seed: int = 0, *,
                 sigreg_lambda: float = 0.05):
        super().__init__()
        if not 0.0 <= float(sigreg_lambda) <= 1.0:
            raise ValueError(f"sigreg_lambda must be in [0, 1], got {sigreg_lambda!r}.")
        if int(n_global) < 1:
            raise ValueError(f"n_global must be a positive integer, got {n_global!r}.")
        self.sigreg_lambda = float(sigreg_lambda)
        self.n_global = int(n_global)
        self.sigreg = SIGReg(n_slices=n_slices, seed=seed)

    def prediction_loss(self, z: torch.Tensor) -> torch.Tensor:
        centres = z[: self.n_global].mean(0)
        return (centres - z).float().square().mean()

    def forward(self, z: torch.Tensor, y=None) -> torch.Tensor:
        if z.dim() != 3 or z.shape[0] < self.n_global:
            raise ValueError(
                f"z must have shape (views >= {self.n_global}, N, K), got {tuple(z.shape)}."
            )
        lam = self.sigreg_lambda
        return (1.0 - lam) * self.prediction_loss(z) + lam * self.sigreg(z)


def exit_loss(
    pooled: list[torch.Tensor], tau: float = EXIT_TAU, sharpness: float = EXIT_SHARPNESS
) -> torch.Tensor:
    """The LEAP loss ``mean_{l<L} mean_n sigmoid(sharpness (tau - cos(e_l, sg(e_L))))``.

    ``pooled`` holds ``e_1 .. e_L`` ``(n, d)``, the pooled representation after each layer
    (``sg`` stops the gradient: intermediate layers move towards the last, not the reverse);
    a layer's penalty is one half at cosine ``tau``. 0 for a single layer.
    """
    if len(pooled) < 2:
        return pooled[-1].sum() * 0.0
    final = pooled[-1].detach().float()
    terms = [
        torch.sigmoid(sharpness * (tau - F.cosine_similarity(e.float(), final, dim=-1))).mean()
        for e in pooled[:-1]
    ]
    return torch.stack(terms).mean()
