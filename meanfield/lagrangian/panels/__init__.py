r"""The Lagrangian measure on adaptive panels: characteristics inserted where the flow map steepens.

With fixed nodes the Lagrangian measure integrates ∫ f dμ_t = ∫ f(Φ_t(x)) ρ_0(x) dx with
the quadrature of the initial grid; once the flow map Φ_t is steeper than the node spacing
(near the repelling points between clusters its slope grows like e^{ct}) that quadrature
errs by O(h) and the field, hence every characteristic, goes wrong. Here the initial domain
is cut into panels carrying Gauss–Legendre nodes (tensor nodes on S²) with weights
w_j = ρ_0(x_j) × quadrature weight, and before every step a panel whose map is not resolved
by its nodes is bisected. On the circle (16 nodes) the criterion is

    mass(panel) · max(1, L) · (Legendre tail of Φ_t on the panel) > tol,

L the kernel's degree (a displacement δΦ moves a degree-k moment by O(k δΦ) per unit mass);
on S² (12 × 12 nodes) it is the quadrature error of the degree-L moments themselves, from the
Legendre tail of e^{iL x_c(Φ_t)} ρ_0 dA on the panel (:mod:`.sphere`).
The children's characteristics are integrated from the start *with the recorded field*: a
zonal field at time s is fixed by the moments of μ_s up to L (Fourier moments on the
circle, spherical-harmonic moments on S²), which the run records at every stage of every
accepted Dormand–Prince 8(5,3) step, so a new point costs O(L) (circle) or O(L²) (S²) per
recorded stage and does not disturb the others.

==================  ==============================================================================
domain              panels, record
==================  ==============================================================================
circle              intervals of the initial angle, p = 16 nodes (:mod:`.circle`)
sphere (S²)         squares of the six faces of the equiangular cubed sphere, p × p = 12 × 12 nodes,
                    split along either face coordinate (:mod:`.sphere`)
==================  ==============================================================================

Docs: docs/MATH.md §6 ("adaptive panels").
"""

from __future__ import annotations

import numpy as np

from ...integrate import InterruptTracker, ProgressTracker, Status
from .base import TABLEAU, combine, condition
from .circle import CircleField, CirclePanels
from .sphere import SphereField, SpherePanels

__all__ = ["PanelTransport", "transport_panels", "DOMAINS"]

_SAFETY, _MIN_FACTOR, _MAX_FACTOR = 0.9, 0.2, 10.0

#: Panels and field records by domain: (panel set, field record, default order, narrowest panel split, default
#: tol). S²'s tol bounds each panel's quadrature error of the degree-L moments directly; at 1e-10 the moments of
#: smooth solutions agree with a refined grid's to 1e-11 (docs/MATH.md §6).
DOMAINS = {"circle": (CirclePanels, CircleField, 16, 2.0 * np.pi * 2.0 ** -44, 1e-14),
           "sphere": (SpherePanels, SphereField, 12, 0.5 * np.pi * 2.0 ** -42, 1e-10)}


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
        The initial point x_i of each point of each frame (its angle on the circle, a unit vector on S²): the flow
        map is x_i ↦ X_i(t).
    t : float
        The time reached (where the run stopped, if it did).
    unresolved_mass : float
        The largest mass on panels that failed the criterion but were too narrow to bisect: the moments may err by
        2·max(1, L) times it (the run stops before that exceeds 1000·tol).
    """

    def __init__(self, frames, nfev, nsteps, status, message, points, panels, origins, unresolved_mass, t):
        self.frames, self.nfev, self.nsteps, self.status, self.message = tuple(frames), nfev, nsteps, status, message
        self.path, self.points, self.panels = "spectral", np.asarray(points), np.asarray(panels)
        self.origins, self.unresolved_mass, self.t = tuple(origins), float(unresolved_mass), float(t)


def transport_panels(model, density, t_span, t_eval, *, order: int | None = None, panels: int | None = None,
                     tol: float | None = None, rtol: float = 1e-12, atol: float = 1e-12, max_points: int = 2 ** 20,
                     first_step: float | None = None, progress: bool = False) -> PanelTransport:
    r"""Advance the Lagrangian measure of a density on the circle or S² on adaptive panels (module docstring).

    Parameters
    ----------
    model : SelfAttention
        A zonal model (Q = qI, K = kI, V = cI): its field at time s is fixed by the moments of μ_s up to the
        degree L of :func:`~meanfield.kernels.circle.circle_degree` (circle) or
        :func:`~meanfield.kernels.sphere.sphere_degree` (S²).
    density : Density
        On a :class:`~meanfield.CircleGrid` or a :class:`~meanfield.SphereGrid`; its interpolant is ρ_0 at the
        Gauss nodes.
    t_span : (float, float)
        From the density's time ``t_span[0]``.
    t_eval : array_like
        Output times in ``t_span``, increasing; every step lands on them.
    order : int, optional
        Gauss nodes per panel (per side on S²; default 16 on the circle, 12 on S²).
    panels : int, optional
        Initial panel count (default: from the grid's resolution — the grid's nodes / order on the circle,
        lmax / (2 order) per cube-face side on S²), refined until ρ_0 is resolved.
    tol : float, optional
        Bound on each panel's contribution to the error of the moments (see the module docstring); default 1e-14
        on the circle, 1e-10 on S².
    rtol, atol : float
        Dormand–Prince 8(5,3) tolerances for the points and ℓ_i.
    max_points : int
        Stop (status RESOLUTION_LOST, with the message) rather than exceed this many points.
    first_step : float, optional
    progress : bool

    Returns
    -------
    PanelTransport
    """
    zonal = getattr(model, "zonal", None)
    name = density.domain.name
    if zonal is None:
        raise ValueError(f"adaptive panels need a zonal model (Q = qI, K = kI, V = cI); got {model!r}.")
    if name not in DOMAINS:
        raise ValueError(f"adaptive panels are built on {sorted(DOMAINS)}; got a density on the {name}.")
    Panels, Field, default_order, min_width, default_tol = DOMAINS[name]
    order = default_order if order is None else order
    tol = default_tol if tol is None else tol
    if int(order) < 4:
        raise ValueError(f"`order` must be at least 4, got {order!r}.")
    if not (np.isfinite(tol) and tol > 0):
        raise ValueError(f"`tol` must be positive, got {tol!r}.")
    if not float(t_span[1]) > float(t_span[0]):
        raise ValueError(f"`t_span` must increase, got {t_span!r}.")
    if np.any(np.diff(np.asarray(t_eval, dtype=float)) <= 0) or np.any(np.asarray(t_eval) < t_span[0]) \
            or np.any(np.asarray(t_eval) > t_span[1]):
        raise ValueError(f"`t_eval` must increase strictly inside `t_span` = {tuple(t_span)!r}, got {t_eval!r}.")
    F = Field(model)
    L, k, ncol = F.degree, F.k, F.ncol
    t0, t1 = float(t_span[0]), float(t_span[1])
    outputs = np.asarray(t_eval, dtype=float)
    count = panels if panels is not None else Panels.default_count(density, int(order))
    P = Panels(density, int(order), int(count), float(tol), min_width)
    A_rk, B_rk, E3, E5 = TABLEAU.A, TABLEAU.B, TABLEAU.E3, TABLEAU.E5
    ns = B_rk.size

    # the record of the field: step sizes and stage moments, grown by doubling
    hs = np.empty(64)
    M = np.empty((64, ns) + F.record_shape, dtype=F.record_dtype)
    nrec = 0

    def replay(y, cond):
        F.replay(y, cond, hs[:nrec], M[:nrec])

    frames, origins, npts, npan = [], [], [], []

    def output(t):
        frames.append(P.frame(t))
        origins.append(P.origins())
        npts.append(P.w.size)
        npan.append(P.count)

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
    K0 = rec0 = None
    try:
        while t < t1 and status is Status.SUCCESS:
            # refine where the map has steepened, then the rate of the (new) point set
            while True:
                split, stuck, added = P.unresolved(L)
                if 2.0 * max(1, L) * stuck > budget:
                    status = Status.RESOLUTION_LOST
                    message = (f"at t = {t:.6g} the flow map is steeper than float64 resolves the initial point on "
                               f"panels of mass {stuck:.3g}: the moments could err by {2 * max(1, L) * stuck:.3g} "
                               f"> {budget:.3g}; stopped rather than lose accuracy")
                    break
                unresolved_mass = max(unresolved_mass, stuck)
                if not added:
                    break
                if P.w.size + added > max_points:
                    status = Status.RESOLUTION_LOST
                    message = (f"at t = {t:.6g} resolving the flow map needs more than max_points = {max_points} "
                               f"points; stopped rather than lose accuracy")
                    break
                P.bisect(split, replay)
                K0 = None
            if status is not Status.SUCCESS:
                break
            w = P.w.ravel()
            y = P.y.reshape(-1, ncol)
            if K0 is None:
                K0, rec0 = F.rate(y[:, :k], w)
                nfev += 1
            # one Dormand–Prince 8(5,3) step, landing on the next output
            t_next = outputs[k_out] if k_out < outputs.size else t1
            while True:
                h_step = min(h, t_next - t)
                K = np.empty((ns + 1,) + y.shape)
                recs = np.empty((ns,) + F.record_shape, dtype=F.record_dtype)
                K[0], recs[0] = K0, rec0
                for i in range(1, ns):
                    state = y[:, :k] + h_step * combine(A_rk[i, :i], K[:i], k)
                    K[i], recs[i] = F.rate(state, w)
                y_new = y + h_step * combine(B_rk, K[:ns], ncol)
                K[ns], rec_new = F.rate(y_new[:, :k], w)
                nfev += ns
                scale_y = atol + rtol * np.maximum(np.abs(y), np.abs(y_new))
                err5 = combine(E5, K, ncol) / scale_y
                err3 = combine(E3, K, ncol) / scale_y
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
            hs[nrec], M[nrec] = h_step, recs
            nrec += 1
            nsteps += 1
            landed = h_step == t_next - t
            t = t_next if landed else t + h_step
            P.y = F.retract(y_new).reshape(P.y.shape)
            condition(P.cond, P.y[..., -1])
            K0, rec0 = K[ns], rec_new
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
