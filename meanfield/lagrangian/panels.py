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
domain              panels, record (each domain's ``panels``: :class:`meanfield.domains.panels.PanelSupport`)
==================  ==============================================================================
circle              intervals of the initial angle, p = 16 nodes (:mod:`meanfield.domains.circle.panels`)
sphere (S²)         squares of the six faces of the equiangular cubed sphere, p × p = 12 × 12 nodes,
                    split along either face coordinate (:mod:`meanfield.domains.sphere.panels`)
==================  ==============================================================================

Docs: docs/MATH.md §6 ("adaptive panels").
"""

from __future__ import annotations

import numpy as np

from ..domains.panels import condition
from ..domains.zonal import zonal_refusal
from ..models.normalization import density_refusal
from ..integrate import (
    Integrator, InterruptTracker, Problem, ProgressTracker, RecordingStepper, Status, StopIntegration, Tracker,
)
from .measure import LagrangianMeasure

__all__ = ["PanelTransport", "PanelProblem", "transport_panels", "panels_refusal", "NOISE_REFUSAL"]

#: Why no Lagrangian representation advances a noisy model.
NOISE_REFUSAL = ("the Lagrangian measure carries mass along the characteristics of X; with noise (D > 0) the mass also "
                 "diffuses across them: use the grid (representation='grid') or particles")


def panels_refusal(model, domain) -> str | None:
    """None if adaptive panels advance ``model`` on ``domain``, else why not."""
    why = density_refusal(model)
    if why is not None:
        return why
    if model.noise:
        return NOISE_REFUSAL
    if model.time_dependent:
        return ("the panels replay new points through the recorded field of one model; its weights depend on time: "
                "use fixed nodes (representation='nodes') or the grid")
    if domain.panels is None:
        return f"no adaptive panels are built on the {domain.name}"
    why = zonal_refusal(model)
    return None if why is None else f"adaptive panels record a zonal field: {why}"


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
        self.strategy, self.points, self.panels = "spectral", np.asarray(points), np.asarray(panels)
        self.origins, self.unresolved_mass, self.t = tuple(origins), float(unresolved_mass), float(t)


class PanelProblem(Problem, Tracker):
    """The characteristics on adaptive panels as a :class:`~meanfield.integrate.Problem` (module docstring).

    The state is the (points, ℓ) array of every Gauss node, panel-major. Before every step :meth:`adapt`
    bisects the panels whose map is no longer resolved and replays the new points through the recorded field;
    the steps are Dormand–Prince 8(5,3) (:class:`~meanfield.integrate.RecordingStepper`), which hands the
    moments of every stage of every accepted step to the record. As a tracker it keeps the panels' state and
    conditioning after every accepted step and gathers the frames at the output times.
    """

    def __init__(self, model, density, *, order, panels, tol, rtol, atol, max_points, first_step):
        self.domain = density.domain
        support = self.domain.panels
        order = support.order if order is None else order
        self.tol = support.tol if tol is None else tol
        self.F = F = support.field(model)
        self.L, self.k, self.ncol = F.degree, F.k, F.ncol
        count = panels if panels is not None else support.panels.default_count(density, int(order))
        self.P = support.panels(density, int(order), int(count), float(self.tol), support.min_width)
        self.max_points = support.max_points if max_points is None else max_points
        self.rtol, self.atol, self.h = rtol, atol, first_step
        self.budget, self.unresolved_mass = 1e3 * self.tol, 0.0
        # the record of the field: step sizes and stage moments, grown by doubling
        ns = RecordingStepper.stages
        self.hs = np.empty(64)
        self.M = np.empty((64, ns) + F.record_shape, dtype=F.record_dtype)
        self.nrec = 0
        self.fsal = None
        self.frames, self.origins, self.points, self.counts = [], [], [], []

    def state(self) -> np.ndarray:
        return self.P.y.reshape(-1, self.ncol)

    def frame(self, t: float) -> LagrangianMeasure:
        """The Lagrangian measure of the panels' current points at time t."""
        return LagrangianMeasure(domain=self.domain, t=t, check=False, **self.P.frame())

    # ---- the integrator's questions
    def rate_and_record(self, y):
        return self.F.rate(y[:, :self.k], self.P.w.ravel())

    def rate(self, y):
        return self.rate_and_record(y)[0]

    def retract(self, y):
        return self.F.retract(y)

    def adapt(self, t, y):
        """Bisect where the map has steepened (new points replayed through the record); StopIntegration where
        float64 cannot resolve it or ``max_points`` would be exceeded."""
        P, L, bisected = self.P, self.L, False
        if P.w.size > self.max_points:  # resolving ρ_0 itself took more (a density with sharp clusters)
            raise StopIntegration(t, y, f"at t = {t:.6g} resolving the initial density takes {P.w.size} points, more "
                                  f"than max_points = {self.max_points}")
        while True:
            split, stuck, added = P.unresolved(L)
            if 2.0 * max(1, L) * stuck > self.budget:
                raise StopIntegration(t, y, f"at t = {t:.6g} the flow map is steeper than float64 resolves the initial "
                                      f"point on panels of mass {stuck:.3g}: the moments could err by "
                                      f"{2 * max(1, L) * stuck:.3g} > {self.budget:.3g}; stopped rather than lose "
                                      "accuracy")
            self.unresolved_mass = max(self.unresolved_mass, stuck)
            if not added:
                return self.state() if bisected else None
            if P.w.size + added > self.max_points:
                raise StopIntegration(t, y, f"at t = {t:.6g} resolving the flow map needs more than max_points = "
                                      f"{self.max_points} points; stopped rather than lose accuracy")
            P.bisect(split, self._replay)
            self.fsal, bisected = None, True

    def _replay(self, y, cond):
        self.F.replay(y, cond, self.hs[:self.nrec], self.M[:self.nrec])

    def _record(self, h, records):
        if self.nrec == self.hs.size:
            self.hs = np.concatenate([self.hs, np.empty(self.hs.size)])
            self.M = np.concatenate([self.M, np.empty_like(self.M)])
        self.hs[self.nrec], self.M[self.nrec] = h, records
        self.nrec += 1

    def stepper(self, f, t, y, t_bound):
        """One recording stepper per output interval, going on with the last one's step and first stage."""
        s = RecordingStepper(self.rate_and_record, t, y, t_bound, rtol=self.rtol, atol=self.atol, first_step=self.h,
                             fsal=self.fsal, on_accept=self._record)
        self._current = s
        return s

    def fail(self, t, y, message):
        raise StopIntegration(t, y, f"the Lagrangian panels failed: {message}", status=Status.FAILED)

    # ---- as a tracker: the panels' state after each accepted step, the frames at the outputs
    def handle(self, t, y, h):
        self.P.y = y.reshape(self.P.y.shape)
        condition(self.P.cond, self.P.y[..., -1])
        self.h, self.fsal = self._current.h, self._current.fsal

    def reset(self, t, y):
        self.P.y = y.reshape(self.P.y.shape)

    def output(self, t, y):
        P = self.P
        self.frames.append(self.frame(t))
        self.origins.append(P.origins())
        self.points.append(P.w.size)
        self.counts.append(P.count)


def transport_panels(model, density, t_span, t_eval, *, order: int | None = None, panels: int | None = None,
                     tol: float | None = None, rtol: float = 1e-12, atol: float = 1e-12, max_points: int | None = None,
                     first_step: float | None = None, progress: bool = False) -> PanelTransport:
    r"""Advance the Lagrangian measure of a density on the circle or S² on adaptive panels (module docstring).

    Parameters
    ----------
    model : SelfAttention
        A zonal model (Q = qI, K = kI, V = cI): its field at time s is fixed by the moments of μ_s up to the
        degree L of its domain's point sums (``Domain.point_sums(d).degree``).
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
    max_points : int, optional
        Stop (status RESOLUTION_LOST, with the message) rather than exceed this many points (default the domain's:
        2^20 on the circle, 2^16 on S², where panels refine without end along the separatrices between forming
        clusters).
    first_step : float, optional
    progress : bool

    Returns
    -------
    PanelTransport
    """
    why = panels_refusal(model, density.domain)
    if why is not None:
        raise ValueError(f"{why}.")
    if order is not None and int(order) < 4:
        raise ValueError(f"`order` must be at least 4, got {order!r}.")
    if tol is not None and not (np.isfinite(tol) and tol > 0):
        raise ValueError(f"`tol` must be positive, got {tol!r}.")
    if not float(t_span[1]) > float(t_span[0]):
        raise ValueError(f"`t_span` must increase, got {t_span!r}.")
    if np.any(np.diff(np.asarray(t_eval, dtype=float)) <= 0) or np.any(np.asarray(t_eval) < t_span[0]) \
            or np.any(np.asarray(t_eval) > t_span[1]):
        raise ValueError(f"`t_eval` must increase strictly inside `t_span` = {tuple(t_span)!r}, got {t_eval!r}.")
    t0, t1 = float(t_span[0]), float(t_span[1])
    problem = PanelProblem(model, density, order=order, panels=panels, tol=tol, rtol=rtol, atol=atol,
                           max_points=max_points, first_step=first_step if first_step is not None else min(0.01, t1 - t0))
    trackers = [problem, ProgressTracker(t1 - t0, enabled=progress), InterruptTracker()]
    integrator = Integrator(problem, "dop853", trackers=trackers, stepper=problem.stepper)
    status, message, t = Status.SUCCESS, "the Lagrangian measure reached the end of the interval", t1
    try:
        integrator.run(t0, problem.state(), np.asarray(t_eval, dtype=float), t1)
    except StopIntegration as stop:
        status, message, t = stop.status, stop.reason, stop.t
    except KeyboardInterrupt:
        status, message, t = Status.INTERRUPTED, "interrupted (Ctrl-C)", problem.frames[-1].t if problem.frames else t0
    return PanelTransport(problem.frames, integrator.nfev, integrator.nsteps, status, message, problem.points,
                          problem.counts, problem.origins, problem.unresolved_mass, t)
