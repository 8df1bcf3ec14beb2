r"""The Lagrangian measure advanced in time: points with the field, log-Jacobians with its divergence.

The state is (chart coordinates of the n points, ℓ_i) and its rate

    dX_i/dt = X[μ_t](X_i),   dℓ_i/dt = div X[μ_t](X_i),   μ_t = Σ_j w_j δ_{X_j(t)}

(docs/MATH.md §6): one field-and-divergence evaluation at the points per stage.
Strategies (:mod:`meanfield.strategies`): ``spectral`` on the circle and S² for zonal
models (the O(nL) Fourier sums of :func:`meanfield.kernels.circle.circle_spectral_divergence`,
the O(nL²) harmonic sums of :func:`meanfield.kernels.sphere.sphere_spectral_divergence`; L set
by β alone, not by how sharp the clusters are), ``quadrature`` elsewhere
(``model.field_and_divergence``, NumPy row chunks, O(n²)).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import strategies
from ..domains import EUCLIDEAN
from ..gaussian import gauss_hermite, gaussian_pdf
from ..integrate import (FiniteTracker, Integrator, InterruptTracker, OutputTracker, Problem, ProgressTracker, Status,
                         StopIntegration)
from ..kernels.circle import circle_spectral_divergence
from ..kernels.sphere import sphere_spectral_divergence
from .measure import LagrangianMeasure
from .panels import DOMAINS as PANEL_DOMAINS, transport_panels

__all__ = ["LagrangianProblem", "transport", "start", "start_gaussian", "Transport", "transport_density", "refines"]

#: Compiled field-and-divergence sums of zonal models by domain (the ``spectral`` strategy).
_SPECTRAL = {"circle": circle_spectral_divergence, "sphere": sphere_spectral_divergence}


def start(density) -> LagrangianMeasure:
    """The Lagrangian measure of a grid density at its time 0: nodes, weights ρ_j w_j, log ρ_j.

    Nodes where ρ_j <= 0 (zero, or a round-off dip a spectral grid allows) get weight 0 and
    log-density −inf: they move with the flow as characteristics but carry no mass, and the
    density stays 0 along them (the continuity equation keeps zero density zero).
    """
    grid = density.grid
    d = grid.points.shape[-1]
    values = np.ravel(density.values)
    positive = values > 0
    weights = np.where(positive, values, 0.0) * np.ravel(grid.weights)
    with np.errstate(divide="ignore"):
        log_density = np.where(positive, np.log(np.where(positive, values, 1.0)), -np.inf)
    domain = density.domain
    state = domain.chart.to_state(grid.points.reshape(-1, d))
    return LagrangianMeasure(state, weights, log_density, domain, domain.chart.mesh(grid), 0.0, check=False)


def start_gaussian(mean, cov, order: int | None = None) -> LagrangianMeasure:
    r"""The Lagrangian measure of the Gaussian N(mean, cov) in R^d on a tensor Gauss–Hermite rule.

    Nodes x_i = mean + L z_i (cov = LLᵀ, z_i the order^d tensor nodes for e^{-|z|²/2}), weights the rule's,
    log ρ_0 the Gaussian's. The rule integrates polynomials of degree < 2·order exactly and the attention
    kernels' entire functions to round-off, and an affine flow (the Gaussian closures of docs/MATH.md §3) maps
    it exactly onto the rule of N(α_t, Σ_t): from here the Lagrangian measure follows the closures to the
    integrator's tolerance, which a box of finite volumes (:func:`start` of a grid density) cannot.

    Parameters
    ----------
    mean : array_like, shape (d,)
    cov : array_like, shape (d, d)
        Symmetric positive definite.
    order : int, optional
        Nodes per dimension (default 64 in d = 1, 32 in d = 2, 12 in d = 3, 6 beyond). The softmax-type fields
        integrate the tilted Gaussians e^{⟨Ax,y⟩}N(y) on the rule; their accuracy degrades at nodes whose tilt
        shift Σ^{1/2}Aᵀx is several standard deviations (the outermost nodes, of negligible weight), which more
        nodes per dimension push out.

    Returns
    -------
    LagrangianMeasure
        At t = 0, on R^d, with the Delaunay triangulation of the nodes (d >= 2) as its mesh.
    """
    mean = np.atleast_1d(np.asarray(mean, dtype=float))
    d = mean.size
    order = {1: 64, 2: 32, 3: 12}.get(d, 6) if order is None else order
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or order < 2:
        raise ValueError(f"`order` must be an integer >= 2, got {order!r}.")
    nodes, weights = gauss_hermite(mean, cov, int(order))
    log_density = np.log(gaussian_pdf(nodes, mean, cov))
    chart = EUCLIDEAN.chart
    return LagrangianMeasure(chart.to_state(nodes), weights / weights.sum(), log_density, EUCLIDEAN,
                             chart.mesh_of(nodes), 0.0)


def field_and_divergence(model, domain, weights, path: str):
    """``f(points) -> (X, div X)`` for the measure Σ w_j δ_{points_j}, by strategy."""
    offered = ("quadrature", "spectral") if domain.name in _SPECTRAL else ("quadrature",)
    strategies.check(path, offered, f"the Lagrangian measure on the {domain.name}")
    zonal = getattr(model, "zonal", None)
    if path == "spectral" and zonal is None:
        raise ValueError(f"the spectral path needs Q = qI, K = kI, V = cI (qk >= 0); got {model!r}.")
    if zonal is not None and path in ("auto", "spectral") and domain.name in _SPECTRAL:
        kernel = _SPECTRAL[domain.name]
        beta, c = zonal
        return (lambda x: kernel(x, weights, x, beta, model.normalized, c)), "spectral"
    return (lambda x: model.field_and_divergence(x, weights, x)), "quadrature"


class LagrangianProblem(Problem):
    """The characteristic system of a Lagrangian measure as a :class:`~meanfield.integrate.Problem`."""

    def __init__(self, model, frame: LagrangianMeasure, path: str = "auto"):
        self.domain, self.chart = frame.domain, frame.domain.chart
        self.k = frame.state.shape[1]
        self.field, self.path = field_and_divergence(model, self.domain, frame.weights, path)

    def pack(self, frame: LagrangianMeasure) -> np.ndarray:
        return np.concatenate([frame.state, np.zeros((len(frame), 1))], axis=1)

    def rate(self, y):
        state = y[:, : self.k]
        points = self.chart.to_points(state)
        X, div = self.field(points)
        return np.concatenate([self.chart.state_rate(state, points, X), div[:, None]], axis=1)

    def retract(self, y):
        y = np.array(y, copy=True)
        y[:, : self.k] = self.chart.retract(y[:, : self.k])
        return y


@dataclass(frozen=True)
class Transport:
    """The frames at the output times, the evaluations and steps, how the run ended."""

    frames: tuple
    nfev: int
    nsteps: int
    status: Status
    message: str
    path: str


def transport(model, frame: LagrangianMeasure, t_span, t_eval, *, method: str = "dop853", dt: float | None = None,
              rtol: float = 1e-10, atol: float = 1e-12, path: str = "auto", progress: bool = False) -> Transport:
    """Advance a Lagrangian measure from ``t_span[0]`` (its time) through ``t_eval``.

    ``KeyboardInterrupt`` (Ctrl-C, SIGTERM) ends the run with the frames reached: the returned
    ``Transport`` then has status INTERRUPTED (the caller decides whether to raise).
    """
    t0, t1 = float(t_span[0]), float(t_span[1])
    problem = LagrangianProblem(model, frame, path)
    outputs = OutputTracker()
    trackers = [FiniteTracker(), outputs, ProgressTracker(t1 - t0, enabled=progress), InterruptTracker()]
    integrator = Integrator(problem, method, dt=dt, rtol=rtol, atol=atol, trackers=trackers)
    ell0 = frame.log_density
    status, message = Status.SUCCESS, "the Lagrangian measure reached the end of the interval"
    try:
        integrator.run(t0, problem.pack(frame), np.asarray(t_eval, dtype=float), t1)
    except StopIntegration as stop:
        status, message = stop.status, f"the Lagrangian integration stopped at t = {stop.t:.6g}: {stop.reason}"
    except KeyboardInterrupt:
        status, message = Status.INTERRUPTED, "interrupted (Ctrl-C)"
    frames = tuple(
        LagrangianMeasure(y[:, : problem.k], frame.weights, ell0 - y[:, problem.k], frame.domain, frame.mesh, t,
                          check=False)
        for t, y in zip(outputs.times, outputs.states)
    )
    return Transport(frames, integrator.nfev, integrator.nsteps, status, message, problem.path)


def refines(model, domain) -> bool:
    """Whether the Lagrangian measure of ``model`` on ``domain`` inserts characteristics where the flow map
    steepens (adaptive Gauss panels: zonal models on the circle and S²), rather than keeping the grid's nodes."""
    return domain.name in PANEL_DOMAINS and getattr(model, "zonal", None) is not None


def transport_density(model, density, t_span, t_eval, *, method: str = "dop853", dt: float | None = None,
                      rtol: float = 1e-10, atol: float = 1e-12, path: str = "auto", progress: bool = False,
                      tol: float | None = None):
    """The Lagrangian solution from a grid density at time ``t_span[0]``: adaptive Gauss panels
    (:func:`~meanfield.lagrangian.panels.transport_panels`) for zonal models on the circle and S² with the adaptive
    default method, else the grid's nodes as fixed characteristics (:func:`start`, :func:`transport`).

    Returns a :class:`Transport` or a :class:`~meanfield.lagrangian.panels.PanelTransport` (the same fields).
    ``tol`` is the panels' moment tolerance (their default where None; fixed nodes have none).
    """
    if refines(model, density.domain) and method == "dop853" and dt is None and path in ("auto", "spectral"):
        return transport_panels(model, density, t_span, t_eval, rtol=rtol, atol=atol, progress=progress,
                                **({} if tol is None else {"tol": tol}))
    frame = start(density)
    if float(t_span[0]) != 0.0:
        frame = LagrangianMeasure(frame.state, frame.weights, frame.log_density, frame.domain, frame.mesh,
                                  float(t_span[0]), check=False)
    return transport(model, frame, t_span, t_eval, method=method, dt=dt, rtol=rtol, atol=atol, path=path,
                     progress=progress)
