r"""The circle's Lagrangian measure on adaptive Gauss panels: characteristics inserted where the flow map steepens.

With fixed nodes the Lagrangian measure integrates ∫ f dμ_t = ∫ f(Φ_t(x)) ρ_0(x) dx with
the quadrature of the initial grid; once the flow map Φ_t is steeper than the node spacing
(near the repelling points between clusters its slope grows like e^{ct}) that quadrature
errs by O(h) and the field, hence every characteristic, goes wrong. Here the initial circle
is cut into panels carrying the p Gauss–Legendre nodes and weights w_j = ρ_0(x_j) ω_j
(ρ_0 the initial density's interpolant), and before every step a panel whose map is not
resolved by its nodes is bisected:

    mass(panel) · max(1, L) · (|a_{p−2}| + |a_{p−1}|) > tol,

a_k the Legendre coefficients of the unwrapped angle Φ_t on the panel and L the kernel's
degree (a change δΦ moves the k-th Fourier moment by at most k·δΦ per unit mass). The
children's characteristics are integrated from the start *with the recorded field*: on the
circle a zonal field at time s is fixed by the L + 1 Fourier moments of μ_s, which the run
records at every stage of every accepted step (the Dormand–Prince 8(5,3) tableau), so a
new point costs O(L) per recorded stage and does not disturb the others. The refinement
stops where a panel's mass times L falls below ``tol``: near a repelling point the panels
halve about once per time unit and the number of points grows like log(1/tol) per repelling
point, not like e^{ct}. Panels are never merged (inside a collapsing cluster the points
crowd, which costs time, not accuracy).

Docs: docs/MATH.md §6 ("adaptive panels").
"""

from __future__ import annotations

import numba as nb
import numpy as np
import scipy.integrate as si
from numpy.polynomial import legendre

from ..integrate import Status
from ..integrate import InterruptTracker, ProgressTracker
from ..kernels.circle import (circle_degree, fourier_moments, series_multipliers, spectral_coefficients, zonal_rate,
                              zonal_rates, zonal_scale)
from .measure import LagrangianMeasure

__all__ = ["PanelTransport", "transport_panels"]

_RK = si.DOP853  # the tableau (A, B, C, E3, E5) of scipy's Dormand–Prince 8(5,3)
_SAFETY, _MIN_FACTOR, _MAX_FACTOR = 0.9, 0.2, 10.0


@nb.njit(cache=True)
def _replay(y, cond, hs, M, A_rk, B_rk, Nm, Dm, N2, beta, normalized, scale):
    """Advance the points ``y`` (m, 2) = (θ, ℓ) through the recorded steps ``hs`` with the recorded stage moments
    ``M`` (S, stages, L+1) — the same Runge–Kutta stages the measure took, with its field — and their
    conditioning ``cond`` (m, 2) = (min ℓ so far, log κ) as :func:`_condition` does; the multipliers are
    :func:`~meanfield.kernels.circle.series_multipliers`."""
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


def _condition(cond, ell):
    """After a step: log κ_i = max over s' <= s <= t of ℓ_i(s) − ℓ_i(s'), the largest expansion of the flow
    along the characteristic (at the accepted steps), with the running minimum of ℓ_i."""
    np.minimum(cond[..., 0], ell, out=cond[..., 0])
    np.maximum(cond[..., 1], ell - cond[..., 0], out=cond[..., 1])


class _Panels:
    """Panels [lo, hi) of the initial angle with their Gauss nodes, weights, log ρ_0 and moving state."""

    def __init__(self, density, order: int, count: int, start: float, tol: float, min_width: float):
        self.density, self.p, self.tol, self.min_width = density, order, tol, min_width
        self.gx, self.gw = legendre.leggauss(order)
        # discrete Legendre transform on the nodes: a_k = (2k+1)/2 Σ_j ω_j P_k(x_j) f_j
        self.T = legendre.legvander(self.gx, order - 1).T * self.gw * (np.arange(order)[:, None] + 0.5)
        edges = start + 2.0 * np.pi * np.arange(count + 1) / count
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

    def unresolved(self, degree: int) -> tuple[np.ndarray, float]:
        """Panels whose map fails the criterion and can be bisected, and the mass of those too narrow to be."""
        err = self.w.sum(axis=1) * max(1, degree) * self._tail(self.y[..., 0])
        bad = err > self.tol
        narrow = (self.hi - self.lo) <= self.min_width
        return np.flatnonzero(bad & ~narrow), float(self.w[bad & narrow].sum())

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

    def frame(self, t: float) -> LagrangianMeasure:
        y = self.y.reshape(-1, 2)
        return LagrangianMeasure(y[:, :1], self.w.ravel(), self.logr0.ravel() - y[:, 1], self.density.domain, None, t,
                                 check=False, log_condition=self.cond[..., 1].ravel())


class PanelTransport:
    """The result of :func:`transport_panels` (the fields of :class:`~meanfield.lagrangian.Transport`, and more).

    Attributes
    ----------
    frames : tuple of LagrangianMeasure
    nfev, nsteps : int
        Field evaluations at all points, accepted steps.
    status : Status
    message : str
    path : str
        "spectral".
    points : ndarray
        The number of points at each frame.
    panels : ndarray
        The number of panels at each frame.
    origins : tuple of ndarray
        The initial angle x_i of each point of each frame (the flow map is x_i ↦ θ_i(t)).
    t : float
        The time reached (where the run stopped, if it did).
    unresolved_mass : float
        The largest mass on panels that failed the criterion but were too narrow (2π·2⁻⁴⁴) to bisect: the
        moments may err by 2·max(1, L) times it (the run stops before that exceeds 1000·tol).
    """

    def __init__(self, frames, nfev, nsteps, status, message, points, panels, origins, unresolved_mass, t):
        self.frames, self.nfev, self.nsteps, self.status, self.message = tuple(frames), nfev, nsteps, status, message
        self.path, self.points, self.panels = "spectral", np.asarray(points), np.asarray(panels)
        self.origins, self.unresolved_mass, self.t = tuple(origins), float(unresolved_mass), float(t)


def transport_panels(model, density, t_span, t_eval, *, order: int = 16, panels: int | None = None,
                     tol: float = 1e-14, rtol: float = 1e-12, atol: float = 1e-12, max_points: int = 2 ** 20,
                     first_step: float | None = None, progress: bool = False) -> PanelTransport:
    r"""Advance the Lagrangian measure of a circle density on adaptive Gauss panels (module docstring).

    Parameters
    ----------
    model : SelfAttention
        A zonal model on the circle (Q = qI, K = kI, V = cI): its field at time s is fixed by the
        Fourier moments of μ_s up to the degree L of :func:`~meanfield.kernels.circle.circle_degree`.
    density : Density
        On a :class:`~meanfield.CircleGrid`; its trigonometric interpolant is ρ_0 at the Gauss nodes.
    t_span : (float, float)
        From the density's time ``t_span[0]``.
    t_eval : array_like
        Output times in ``t_span``, increasing; every step lands on them.
    order : int
        Gauss nodes per panel (default 16).
    panels : int, optional
        Initial panel count (default: the grid's nodes / order, at least 8), refined until ρ_0 is resolved.
    tol : float
        Bound on each panel's contribution to the error of the moments (see the module docstring).
    rtol, atol : float
        Dormand–Prince 8(5,3) tolerances for (θ_i, ℓ_i).
    max_points : int
        Stop (status RESOLUTION_LOST, with the message) rather than exceed this many points.
    first_step : float, optional
    progress : bool

    Returns
    -------
    PanelTransport
    """
    zonal = getattr(model, "zonal", None)
    if zonal is None:
        raise ValueError(f"adaptive panels need a zonal model on the circle (Q = qI, K = kI, V = cI); got {model!r}.")
    if density.domain.name != "circle":
        raise ValueError(f"adaptive panels are built on the circle; got a density on the {density.domain.name}.")
    if int(order) < 4:
        raise ValueError(f"`order` must be at least 4, got {order!r}.")
    if not (np.isfinite(tol) and tol > 0):
        raise ValueError(f"`tol` must be positive, got {tol!r}.")
    if not float(t_span[1]) > float(t_span[0]):
        raise ValueError(f"`t_span` must increase, got {t_span!r}.")
    if np.any(np.diff(np.asarray(t_eval, dtype=float)) <= 0) or np.any(np.asarray(t_eval) < t_span[0]) \
            or np.any(np.asarray(t_eval) > t_span[1]):
        raise ValueError(f"`t_eval` must increase strictly inside `t_span` = {tuple(t_span)!r}, got {t_eval!r}.")
    beta, c = float(zonal[0]), float(zonal[1])
    normalized = bool(model.normalized)
    scale = zonal_scale(beta, normalized, c)
    L = circle_degree(beta, order=2)
    Nm, Dm, N2 = series_multipliers(L, beta)
    t0, t1 = float(t_span[0]), float(t_span[1])
    outputs = np.asarray(t_eval, dtype=float)
    count = panels if panels is not None else max(8, int(np.ceil(density.grid.n / order)))
    P = _Panels(density, int(order), int(count), 0.0, float(tol), 2.0 * np.pi * 2.0 ** -44)
    A_rk, B_rk, E3, E5 = _RK.A, _RK.B, _RK.E3, _RK.E5
    ns = B_rk.size

    # the record of the field: step sizes and stage moments, grown by doubling
    hs = np.empty(64)
    M = np.empty((64, ns, L + 1), dtype=complex)
    nrec = 0

    def replay(y, cond):
        _replay(y, cond, hs[:nrec], M[:nrec], A_rk, B_rk, Nm, Dm, N2, beta, normalized, scale)

    def rate(theta, w):
        """(dθ/dt, dℓ/dt) at the points and the moments c_k/2π of Σ w_j δ_{θ_j}."""
        x = np.stack([np.cos(theta), np.sin(theta)], axis=-1)
        ck = fourier_moments(x, w, L) / (2.0 * np.pi)
        A, D, A2 = spectral_coefficients(ck, beta)
        v, div = zonal_rates(x, A, D, A2, beta, normalized, scale)
        return np.stack([v, div], axis=-1), ck

    frames, origins, npts, npan = [], [], [], []

    def output(t):
        frames.append(P.frame(t))
        origins.append(P.x.ravel())
        npts.append(P.w.size)
        npan.append(P.lo.size)

    t, nfev, nsteps = t0, 0, 0
    budget, unresolved_mass = 1e3 * tol, 0.0
    k_out = 0
    while k_out < outputs.size and outputs[k_out] <= t0:
        output(t0)
        k_out += 1
    status, message = Status.SUCCESS, "the Lagrangian measure reached the end of the interval"
    trackers = (ProgressTracker(t1 - t0, enabled=progress), InterruptTracker())
    for tracker in trackers:
        tracker.initialize(t0, None)
    h = first_step if first_step is not None else min(0.01, t1 - t0)
    K0 = ck0 = None
    try:
        while t < t1 and status is Status.SUCCESS:
            # refine where the map has steepened, then the rate of the (new) point set
            while True:
                split, stuck = P.unresolved(L)
                if 2.0 * max(1, L) * stuck > budget:
                    status = Status.RESOLUTION_LOST
                    message = (f"at t = {t:.6g} the flow map is steeper than float64 resolves the initial angle on "
                               f"panels of mass {stuck:.3g}: the moments could err by {2 * max(1, L) * stuck:.3g} "
                               f"> {budget:.3g}; stopped rather than lose accuracy")
                    break
                unresolved_mass = max(unresolved_mass, stuck)
                if not split.size:
                    break
                if P.w.size + split.size * P.p > max_points:
                    status = Status.RESOLUTION_LOST
                    message = (f"at t = {t:.6g} resolving the flow map needs more than max_points = {max_points} "
                               f"points; stopped rather than lose accuracy")
                    break
                P.bisect(split, replay)
                K0 = None
            if status is not Status.SUCCESS:
                break
            w = P.w.ravel()
            y = P.y.reshape(-1, 2)
            if K0 is None:
                K0, ck0 = rate(y[:, 0], w)
                nfev += 1
            # one Dormand–Prince 8(5,3) step, landing on the next output
            t_next = outputs[k_out] if k_out < outputs.size else t1
            while True:
                h_step = min(h, t_next - t)
                K = np.empty((ns + 1,) + y.shape)
                cks = np.empty((ns, L + 1), dtype=complex)
                K[0], cks[0] = K0, ck0
                for i in range(1, ns):
                    theta = y[:, 0] + h_step * np.tensordot(A_rk[i, :i], K[:i, :, 0], axes=1)
                    K[i], cks[i] = rate(theta, w)
                y_new = y + h_step * np.tensordot(B_rk, K[:ns], axes=1)
                K[ns], ck_new = rate(y_new[:, 0], w)
                nfev += ns
                scale_y = atol + rtol * np.maximum(np.abs(y), np.abs(y_new))
                err5 = np.tensordot(E5, K, axes=1) / scale_y
                err3 = np.tensordot(E3, K, axes=1) / scale_y
                e5, e3 = np.sum(err5 ** 2), np.sum(err3 ** 2)
                err = 0.0 if e5 == 0 and e3 == 0 else h_step * e5 / np.sqrt((e5 + 0.01 * e3) * y.size)
                if not np.isfinite(err):
                    raise FloatingPointError(f"the Lagrangian measure's rate is not finite at t = {t:.6g}.")
                if err < 1.0:
                    break
                h = h_step * max(_MIN_FACTOR, _SAFETY * err ** (-1.0 / 8.0))
                if h < 1e-14 * max(1.0, abs(t)):
                    raise FloatingPointError(f"the step size underflowed at t = {t:.6g}.")
            if nrec == hs.size:
                hs = np.concatenate([hs, np.empty(hs.size)])
                M = np.concatenate([M, np.empty_like(M)])
            hs[nrec], M[nrec] = h_step, cks
            nrec += 1
            nsteps += 1
            landed = h_step == t_next - t
            t = t_next if landed else t + h_step
            P.y = y_new.reshape(P.y.shape)
            _condition(P.cond, P.y[..., 1])
            K0, ck0 = K[ns], ck_new
            for tracker in trackers:  # the bar, then a deferred Ctrl-C (meanfield.interrupts)
                tracker.handle(t, None, h_step)
            grown = h_step * (_MAX_FACTOR if err == 0 else min(_MAX_FACTOR, _SAFETY * err ** (-1.0 / 8.0)))
            h = max(h, grown) if landed else grown  # a step shortened to land on an output does not shrink the next
            while k_out < outputs.size and outputs[k_out] <= t:
                output(t)
                k_out += 1
    except KeyboardInterrupt:
        status, message = Status.INTERRUPTED, "interrupted (Ctrl-C)"
    finally:
        for tracker in trackers:
            tracker.finalize(t, None, status)
    return PanelTransport(frames, nfev, nsteps, status, message, npts, npan, origins, unresolved_mass, t)
