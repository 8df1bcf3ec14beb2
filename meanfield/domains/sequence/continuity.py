r"""The causal continuity equation on [0, 1] × S¹ (docs/MATH.md §8.4): a batch of circle equations, one per row.

Positions never move, so ∂_t f(s, θ) = −∂_θ(f(s, θ) v(s, θ)) row by row, and the row at s sees the measure of the
tokens up to s, R(s, ·) = ∫_0^s f(τ, ·) dτ (the cumulative trapezoidal sums of :func:`.grid.cumulative`):

    SA:  v(s, ·) = the circle's SA field of R(s, ·) (a ratio: invariant under R ↦ R/s, with its s → 0 limit f(0, ·)
         at the first row);
    USA: v(s, ·) = the circle's USA field of R(s, ·) (0 at s = 0).

Each row's field is the circle's (:mod:`meanfield.domains.circle.continuity`: Bessel multipliers for zonal models on
the padded grid, or the model's own sum by quadrature), so row s depends only on the rows before it — the causal
structure holds exactly in the discrete equations, and the fluxes are formed and differentiated as on the circle
(mass of every row conserved to round-off).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...core.numerics import check_usa_beta
from ..circle import fourier
from ..circle.continuity import bessel_multipliers
from ..circle.geometry import angles_to_points, tangents
from .grid import SequenceGrid, cumulative

__all__ = ["SequenceSpectral", "SequenceQuadrature", "SequencePairs"]


class _SequenceRate:
    """Padding, the rows' seen measure and the divergence shared by the strategies."""

    strategy: str

    def __init__(self, grid: SequenceGrid, normalized: bool):
        self.grid, self.normalized = grid, bool(normalized)
        self.decay = 0.0
        self.n, self.M = grid.n, fourier.padded_size(grid.n)
        self.k = np.arange(self.n // 2 + 1)
        self._dtheta_M = 2.0 * np.pi / self.M

    def _pad(self, values):
        P = fourier.pad(fourier.rfft(values) * (self.M / self.n), self.n, self.M // 2 + 1)
        return P, fourier.irfft(P, self.M)

    def seen(self, P, decay=None):
        """What each row attends to, in the same layout as ``P`` (values or coefficients, rows first): R(s_k, ·) =
        ∫_0^{s_k} e^{−λ(s_k − τ)} f(τ, ·) dτ (λ = ``decay``, default the model's; docs/MATH.md §13), with the first
        row's limit f(0, ·) for SA (whose field is invariant under scaling R; the limit of R/∫_0^s e^{−λ(s−τ)}dτ)."""
        R = cumulative(P, self.grid.h, self.decay if decay is None else decay)
        if self.normalized:
            R[0] = P[0]
        return R

    def _divergence(self, flux_M):
        F = fourier.rfft(flux_M)[..., : self.n // 2 + 1] * (self.n / self.M)
        F *= -1j * self.k
        if self.n % 2 == 0:
            F[..., -1] = 0.0
        return fourier.irfft(F, self.n)

    def _speeds(self, v):
        if not np.all(np.isfinite(v)):
            return np.nan, np.nan
        jump = np.max(np.abs(np.diff(v, axis=-1, append=v[..., :1])))
        return float(np.max(np.abs(v))), float(jump) / self._dtheta_M

    def angular_velocity(self, values):
        """v(s_k, θ) on the padded grid, shape (m, M)."""
        P, rho_M = self._pad(values)
        return self._velocity(P, rho_M)

    def rate(self, values):
        P, rho_M = self._pad(values)
        return self._divergence(rho_M * self._velocity(P, rho_M))

    def speeds(self, values):
        return self._speeds(self.angular_velocity(values))

    def rate_and_speeds(self, values):
        P, rho_M = self._pad(values)
        v = self._velocity(P, rho_M)
        return (self._divergence(rho_M * v),) + self._speeds(v)


class SequenceSpectral(_SequenceRate):
    """Zonal causal attention (Q = qI, K = kI, V = cI): each row's field from the Bessel multipliers of its seen
    measure's coefficients (the cumulative sums taken on the coefficients: they are linear). ``decay`` = λ of the
    decay mask e^{−λ(s − τ)} (docs/MATH.md §13): it weighs the rows, not the angles, so the kernel stays zonal."""

    strategy = "spectral"

    def __init__(self, grid: SequenceGrid, beta: float, c: float, normalized: bool, decay: float = 0.0):
        super().__init__(grid, normalized)
        self.decay = float(decay)
        check_usa_beta(beta, normalized, "the circle")
        self.beta, self.c = float(beta), float(c)
        self._D, self._N = bessel_multipliers(self.M // 2, self.beta)
        self._usa_scale = None if normalized else self.c * np.exp(self.beta)

    def _velocity(self, P, rho_M):
        R = self.seen(P)
        num = fourier.irfft(R * self._N, self.M)
        if self.normalized:
            return self.c * num / fourier.irfft(R * self._D, self.M)
        return self._usa_scale * num


class SequenceQuadrature(_SequenceRate):
    """Any causal sphere model in d = 2 (any Q, K, V, several heads): each row's field is the model's own sum
    (``field``, the non-causal heads) over the circle's nodes weighted by the row's seen measure, at the padded
    nodes. Each head's seen measure carries its own decay mask (``decay`` of the head, docs/MATH.md §13)."""

    strategy = "quadrature"

    def __init__(self, grid: SequenceGrid, model, field=None):
        for h in model.heads:
            if h.rotary:
                raise ValueError(f"the seen measure of the circle does not hold RoPE phases (the key R(ωτ)Ky turns "
                                 f"with the source row); got {h!r}: SequencePairs sums them.")
        self.decays = tuple(h.decay for h in model.heads)
        heads = tuple(dataclasses.replace(h, causal=False, decay=0.0) for h in model.heads)
        super().__init__(grid, all(h.normalized for h in heads))
        if len({h.normalized for h in heads}) > 1:  # the first row's limit differs between SA and USA heads
            raise ValueError(f"causal heads must all be SA or all USA on a SequenceGrid; got {model!r}.")
        self.heads = heads
        self._queries = angles_to_points(2.0 * np.pi * np.arange(self.M) / self.M)
        self._tangent = tangents(self._queries)

    def _velocity(self, P, rho_M):
        values = fourier.irfft(P, self.M)
        seen = {lam: self.seen(values, lam) for lam in dict.fromkeys(self.decays)}  # on the padded nodes (exact)
        pts = np.broadcast_to(self._queries, values.shape + (2,))
        X = sum(h.field(pts, seen[lam] * (2.0 * np.pi / self.M), pts) for h, lam in zip(self.heads, self.decays))
        return np.sum(X * self._tangent, axis=-1)


class SequencePairs(_SequenceRate):
    r"""Any causal sphere model in d = 2 whose logits depend on the source row beyond a decay (RoPE phases, docs/MATH.md
    §13): each row's field is the causal model's own field (mask, decay and RoPE its own) of the measure of all the
    rows up to it, the padded nodes (τ_k, φ_j) weighted by the trapezoidal weights of [0, s_i] times f(τ_k, φ_j)·2π/M
    (the first row, SA: its own row with weight 1, the limit s → 0; USA: nothing).

    The cost is m²M² kernel values a rate (every row against every earlier node) where the seen-measure strategies
    cost mM²: what RoPE costs, whose key R(ωτ)Ky turns with its row, so that no sum over τ can be taken first.
    Second order in the row spacing, like the cumulative sums (the same trapezoidal rule in τ)."""

    strategy = "quadrature"

    def __init__(self, grid: SequenceGrid, model, field=None):
        heads = model.heads
        super().__init__(grid, all(h.normalized for h in heads))
        if len({h.normalized for h in heads}) > 1:
            raise ValueError(f"causal heads must all be SA or all USA on a SequenceGrid; got {model!r}.")
        self.model = model
        m, M, h = grid.m, self.M, grid.h
        T = np.tril(np.full((m, m), h))  # T[i, k]: the trapezoidal weight of row k in ∫_0^{s_i}
        T[:, 0] *= 0.5
        T[np.arange(m), np.arange(m)] *= 0.5
        T[0, 0] = 1.0 if self.normalized else 0.0
        self._T = T
        angles = 2.0 * np.pi * np.arange(M) / M
        xy = angles_to_points(angles)
        pts = np.concatenate([np.repeat(grid.positions, M)[:, None], np.tile(xy, (m, 1))], axis=-1)  # (mM, 3)
        self._points = pts
        self._queries = pts.reshape(m, M, 3)
        self._tangent = tangents(xy)

    def _velocity(self, P, rho_M):
        values = fourier.irfft(P, self.M)  # (m, M) on the padded nodes
        w = (self._T[:, :, None] * values[None, :, :]).reshape(self.grid.m, -1) * (2.0 * np.pi / self.M)
        X = self.model.field(np.broadcast_to(self._points, (self.grid.m,) + self._points.shape), w, self._queries)
        return np.sum(X[..., 1:] * self._tangent, axis=-1)
