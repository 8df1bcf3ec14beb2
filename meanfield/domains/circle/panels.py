r"""The circle's panels: intervals of the initial angle with Gauss nodes, and the zonal field recorded by its
Fourier moments.

A panel [lo, hi) of the initial angle carries p Gauss–Legendre nodes x_j and weights
w_j = ρ_0(x_j) ω_j (ρ_0 the initial density's interpolant). It is bisected where

    mass(panel) · max(1, L) · (|a_{p−2}| + |a_{p−1}|) > tol,

a_k the Legendre coefficients of the unwrapped angle Φ_t on the panel and L the kernel's
degree (a change δΦ moves the k-th Fourier moment by at most k·δΦ per unit mass). A zonal
field at time s is fixed by the L + 1 Fourier moments of μ_s, which the run records at every
stage of every accepted step, so a new point is replayed through them at O(L) per stage.
Panels keep the order of the initial angle, which the flow keeps too (the frame's density
between the points is a periodic spline in that order).

Docs: docs/MATH.md §6 ("adaptive panels").
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .point_sums import (
    circle_degree, fourier_moments, series_multipliers, spectral_coefficients, zonal_rate, zonal_rates, zonal_scale,
)
from ..panels import TABLEAU, gauss

__all__ = ["CirclePanels", "CircleField"]


@nb.njit(cache=True)
def _replay(y, cond, hs, M, A_rk, B_rk, Nm, Dm, N2, beta, normalized, scale):
    """Advance the points ``y`` (m, 2) = (θ, ℓ) through the recorded steps ``hs`` with the recorded stage moments
    ``M`` (S, stages, L+1) — the same Runge–Kutta stages the measure took, with its field — and their
    conditioning ``cond`` (m, 2) = (min ℓ so far, log κ) as :func:`~meanfield.lagrangian.panels.base.condition`
    does; the multipliers are :func:`~meanfield.kernels.circle.series_multipliers`."""
    m = y.shape[0]
    ns = B_rk.size
    L1 = Dm.size
    K = np.empty((ns, m, 2))
    A = np.empty(L1, dtype=np.complex128)
    D = np.empty(L1, dtype=np.complex128)
    A2 = np.empty(L1, dtype=np.complex128)
    for s in range(hs.size):
        h = hs[s]
        for i in range(ns):
            for k in range(L1):
                A[k] = Nm[k] * M[s, i, k]
                D[k] = Dm[k] * M[s, i, k]
                A2[k] = N2[k] * M[s, i, k]
            for q in range(m):
                th = y[q, 0]
                for j in range(i):
                    th += h * A_rk[i, j] * K[j, q, 0]
                v, dv = zonal_rate(complex(np.cos(th), np.sin(th)), A, D, A2, beta, normalized, scale)
                K[i, q, 0] = v
                K[i, q, 1] = dv
        for q in range(m):
            for i in range(ns):
                y[q, 0] += h * B_rk[i] * K[i, q, 0]
                y[q, 1] += h * B_rk[i] * K[i, q, 1]
            cond[q, 0] = min(cond[q, 0], y[q, 1])
            cond[q, 1] = max(cond[q, 1], y[q, 1] - cond[q, 0])


class CircleField:
    """The zonal field of a weighted point set on the circle from its Fourier moments: the rate of (θ_i, ℓ_i) and
    the record that replays it (module docstring)."""

    ncol, k = 2, 1  # state columns (θ, ℓ), chart columns (θ)
    record_dtype = complex

    def __init__(self, model):
        beta, c = float(model.zonal.beta), float(model.zonal.c)
        self.beta, self.normalized = beta, bool(model.normalized)
        self.scale = zonal_scale(beta, self.normalized, c)
        self.degree = circle_degree(beta, order=2)
        self.multipliers = series_multipliers(self.degree, beta)
        self.record_shape = (self.degree + 1,)

    def rate(self, state, w):
        """(dθ/dt, dℓ/dt) at the points and the moments c_k/2π of Σ w_j δ_{θ_j} (the record of this stage)."""
        theta = state[:, 0]
        x = np.stack([np.cos(theta), np.sin(theta)], axis=-1)
        ck = fourier_moments(x, w, self.degree) / (2.0 * np.pi)
        A, D, A2 = spectral_coefficients(ck, self.beta)
        v, div = zonal_rates(x, A, D, A2, self.beta, self.normalized, self.scale)
        return np.stack([v, div], axis=-1), ck

    def replay(self, y, cond, hs, M):
        Nm, Dm, N2 = self.multipliers
        _replay(y, cond, hs, M, TABLEAU.A, TABLEAU.B, Nm, Dm, N2, self.beta, self.normalized, self.scale)

    def retract(self, y):
        """Angles need no retraction."""
        return y


class CirclePanels:
    """Panels [lo, hi) of the initial angle with their Gauss nodes, weights, log ρ_0 and moving state (θ, ℓ).

    Arrays are panel-major: ``x``, ``w``, ``logr0`` (P, p), ``y`` (P, p, 2), ``cond`` (P, p, 2)."""

    def __init__(self, density, order: int, count: int, tol: float, min_width: float):
        self.density, self.p, self.tol, self.min_width = density, order, tol, min_width
        self.gx, self.gw, self.T = gauss(order)
        edges = 2.0 * np.pi * np.arange(count + 1) / count
        self.lo, self.hi = edges[:-1], edges[1:]
        self.x, self.w, self.logr0 = self._nodes(self.lo, self.hi)
        # resolve ρ_0 itself first: the quadrature of the initial measure
        while True:
            rho = np.where(self.w > 0, np.exp(np.where(self.w > 0, self.logr0, 0.0)), 0.0)
            tail = self._tail(rho) * 0.5 * (self.hi - self.lo)
            bad = (tail > tol) & (self.hi - self.lo > min_width)
            if not np.any(bad):
                break
            self.bisect(np.flatnonzero(bad), None)
        self.y = np.stack([self.x, np.zeros_like(self.x)], axis=-1)
        self.cond = np.zeros_like(self.y)

    @staticmethod
    def default_count(density, order: int) -> int:
        """The grid's nodes / order, at least 8."""
        return max(8, int(np.ceil(density.grid.n / order)))

    @property
    def count(self) -> int:
        return self.lo.size

    def _nodes(self, lo, hi):
        x = 0.5 * (lo + hi)[:, None] + 0.5 * (hi - lo)[:, None] * self.gx
        rho = np.asarray(self.density(np.stack([np.cos(x), np.sin(x)], axis=-1)), dtype=float)
        positive = rho > 0
        w = np.where(positive, rho, 0.0) * self.gw * 0.5 * (hi - lo)[:, None]
        with np.errstate(divide="ignore"):
            logr = np.where(positive, np.log(np.where(positive, rho, 1.0)), -np.inf)
        return x, w, logr

    def _tail(self, f):
        a = f @ self.T.T
        return np.abs(a[:, -1]) + np.abs(a[:, -2])

    def unresolved(self, degree: int):
        """(panels to bisect, the mass of those that fail the criterion but are too narrow to be, points added)."""
        err = self.w.sum(axis=1) * max(1, degree) * self._tail(self.y[..., 0])
        bad = err > self.tol
        narrow = (self.hi - self.lo) <= self.min_width
        split = np.flatnonzero(bad & ~narrow)
        return split, float(self.w[bad & narrow].sum()), split.size * self.p

    def bisect(self, idx, replay):
        mid = 0.5 * (self.lo[idx] + self.hi[idx])
        lo = np.stack([self.lo[idx], mid], axis=1).ravel()
        hi = np.stack([mid, self.hi[idx]], axis=1).ravel()
        x, w, logr = self._nodes(lo, hi)
        keep = np.ones(self.lo.size, dtype=bool)
        keep[idx] = False
        # children take the parent's place: the panel order stays the order of the initial angle
        pos = np.repeat(idx - np.arange(idx.size), 2)
        self.lo = np.insert(self.lo[keep], pos, lo)
        self.hi = np.insert(self.hi[keep], pos, hi)
        self.x = np.insert(self.x[keep], pos, x, axis=0)
        self.w = np.insert(self.w[keep], pos, w, axis=0)
        self.logr0 = np.insert(self.logr0[keep], pos, logr, axis=0)
        if replay is not None:
            y = np.ascontiguousarray(np.stack([x.ravel(), np.zeros(x.size)], axis=-1))
            cond = np.zeros_like(y)
            replay(y, cond)
            self.y = np.insert(self.y[keep], pos, y.reshape(x.shape + (2,)), axis=0)
            self.cond = np.insert(self.cond[keep], pos, cond.reshape(x.shape + (2,)), axis=0)

    def origins(self) -> np.ndarray:
        """The initial angle of each point."""
        return self.x.ravel()

    def frame(self) -> dict:
        """The arguments of the Lagrangian measure of the current points (:class:`meanfield.lagrangian.LagrangianMeasure`)."""
        y = self.y.reshape(-1, 2)
        return dict(state=y[:, :1], weights=self.w.ravel(), log_density=self.logr0.ravel() - y[:, 1], mesh=None,
                    log_condition=self.cond[..., 1].ravel())
