r"""The Lagrangian measure advanced in time: points with the field, log-Jacobians with its divergence.

The state is (chart coordinates of the n points, ℓ_i) and its rate

    dX_i/dt = X[μ_t](X_i),   dℓ_i/dt = div X[μ_t](X_i),   μ_t = Σ_j w_j δ_{X_j(t)}

(docs/MATH.md §6): one field-and-divergence evaluation at the points per stage.
Strategies (:mod:`meanfield.kernels.strategies`): ``spectral`` where the domain has spectral sums of
point sets and the model is zonal (``Domain.point_sums``: the circle's O(nL) Fourier sums, S²'s
O(nL²) harmonic sums; L set by β alone, not by how sharp the clusters are), ``quadrature``
elsewhere (``model.field_and_divergence``, NumPy row chunks, O(n²)).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels import strategies
from ..domains import EUCLIDEAN
from ..domains.base import REPULSION_REFUSAL
from ..analysis.gaussian import gauss_hermite, gaussian_pdf
from ..models import attention_of, repulsive
from ..integrate import (
    FiniteTracker, Integrator, InterruptTracker, Problem, ProgressTracker, Status, StopIntegration, Tracker,
)
from .measure import LagrangianMeasure

__all__ = ["LagrangianProblem", "transport", "start", "start_gaussian", "Transport", "field_and_divergence"]


def start(density) -> LagrangianMeasure:
    """The Lagrangian measure of a grid density at its time 0: nodes, weights ρ_j w_j, log ρ_j.

    Nodes where ρ_j <= 0 (zero, or a round-off dip a spectral grid allows) get weight 0 and
    log-density −inf: they move with the flow as characteristics but carry no mass, and the
    density stays 0 along them (the continuity equation keeps zero density zero); the other
    nodes' masses are then scaled by the density's mass over theirs (1 + the dips' share, at most
    the monitor's neg_tol), so the measure keeps the density's mass exactly.
    """
    grid = density.grid
    d = grid.points.shape[-1]
    values = np.ravel(density.values)
    positive = values > 0
    weights = np.where(positive, values, 0.0) * np.ravel(grid.weights)
    if not np.all(positive):  # the dropped round-off dips must not change the mass: the positive masses carry it
        mass = float(np.sum(values * np.ravel(grid.weights)))
        weights *= mass / float(np.sum(weights))
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


def field_and_divergence(model, domain, d: int, weights, strategy: str):
    """``(f, strategy)``: ``f(points) -> (X, div X)`` for the measure Σ w_j δ_{points_j} in R^d, by the strategy
    :func:`meanfield.kernels.strategies.resolve` picks for the Lagrangian measure."""
    strategy = strategies.resolve(strategy, strategies.for_nodes(model, domain, d),
                                  f"the Lagrangian measure on the {domain.name}")
    if strategy == "spectral":
        att = attention_of(model)
        sums, (beta, c) = domain.point_sums(d), att.zonal

        def attention(x):
            return sums.field_and_divergence(x, weights, x, beta, att.normalized, c)

        if not model.has_blocks:  # attention alone
            return attention, strategy

        def with_blocks(x):  # a X_att + b Σ X_ff: the blocks' field and divergence added to the spectral sums'
            a, b = model.weights
            X, div = attention(x) if a else (np.zeros(x.shape), np.zeros(x.shape[:-1]))
            X, div = a * X, a * div
            for f in model.feedforward:
                Xf, df = f.velocity_and_divergence(x)
                X, div = X + b * Xf, div + b * df
            return X, div

        return with_blocks, strategy
    return (lambda x: model.field_and_divergence(x, weights, x)), strategy


def _rows_holding(V, div, shape):
    """The C-ordered float64 array of ``shape`` (k + 1, n) whose rows 0..k−1 are Vᵀ and row k is ``div``, element
    for element in its own memory (their common base), or None: then the rate is that array as it is."""
    rows = div.base
    if not (isinstance(rows, np.ndarray) and rows.shape == shape and rows.dtype == np.float64
            and rows.flags.c_contiguous and rows.flags.writeable and V.dtype == np.float64):
        return None
    k = shape[0] - 1
    head, last = rows[:k], rows[k]
    Vt = V.T
    same = (Vt.shape == head.shape and Vt.flags.c_contiguous and Vt.ctypes.data == head.ctypes.data
            and div.shape == last.shape and div.flags.c_contiguous and div.ctypes.data == last.ctypes.data)
    return rows if same else None


class LagrangianProblem(Problem, Tracker):
    """The characteristic system of a Lagrangian measure with fixed nodes as a :class:`~meanfield.integrate.Problem`;
    as a tracker it gathers the frames at the output times (``frames``)."""

    def __init__(self, model, frame: LagrangianMeasure, strategy: str = "auto"):
        if model.noise:
            from .panels import NOISE_REFUSAL

            raise ValueError(f"`model` has noise = {model.noise:g}: {NOISE_REFUSAL}.")
        self.domain, self.chart, self.start = frame.domain, frame.domain.chart, frame
        self.k = frame.state.shape[1]
        self.dynamics, self.requested = model, strategy
        self.time_dependent = bool(model.time_dependent)
        self._now = None
        self._layer_time = frame.t
        self._set_model(model.at(frame.t))
        self.frames = []

    def _set_model(self, model):
        """The field and divergence of ``model`` (a time-dependent one's model of the time) at the points."""
        if model is not self._now:
            if repulsive(model):  # a β(t) < 0 met during the run: the Lagrangian bounds need β >= 0
                raise ValueError(f"`model` at t = {self._layer_time:g}: β < 0 (repulsive attention): "
                                 f"{REPULSION_REFUSAL}.")
            f = self.start
            self.field, self.strategy = field_and_divergence(model, self.domain, f.dim, f.weights, self.requested)
            self._now = model

    def at_time(self, t, layer_time=None):
        """The model of time t; called with t alone at the start of a stretch of steps, whose layer it fixes (a step
        ending at a layer boundary evaluates its last stages in its own layer)."""
        if self.time_dependent:
            if layer_time is None:
                self._layer_time = layer_time = t
            self._set_model(self.dynamics.at(t, layer_time))

    def breakpoints(self, t0, t1):
        return self.dynamics.breakpoints(t0, t1) if self.time_dependent else ()

    # The state y is stored by rows, shape (k + 1, n): the k chart coordinates of the n points, then ℓ — each a
    # contiguous row, so a chart of one coordinate (the zonal rings' θ) hands the sums its state without a copy
    # (ascontiguousarray of the (n, 1) view y[:1].T is that view) and the rate's rows are written contiguously.
    # The same elementwise arithmetic as the former (n, k + 1) columns, so the same bits for the fixed steps (the
    # adaptive pairs' error norms sum the same elements in another order: round-off in the step sizes). The
    # layout is this problem's own: everything outside reads the state through :meth:`frame`.
    def _state(self, y) -> np.ndarray:
        """The chart coordinates of the state y as a C-ordered (n, k) array (a view where k = 1)."""
        return np.ascontiguousarray(y[: self.k].T)

    def pack(self, frame: LagrangianMeasure) -> np.ndarray:
        y = np.empty((self.k + 1, len(frame)))
        y[: self.k] = frame.state.T
        y[self.k] = 0.0
        return y

    def frame(self, t, y) -> LagrangianMeasure:
        """The Lagrangian measure of the state y = (chart coordinates, ℓ) at time t: log ρ = log ρ_0 − ℓ."""
        f = self.start
        log_density = f.log_density - y[self.k]
        log_density.setflags(write=False)  # handed over: the frame keeps it (and shares the start's weights)
        return LagrangianMeasure(self._state(y), f.weights, log_density, f.domain, f.mesh, t, check=False)

    def rate(self, y, t=None):
        if t is not None:
            self.at_time(t, self._layer_time)
        state = self._state(y)
        points = self.chart.to_points(state)
        X, div = self.field(points)
        V = self.chart.state_rate(state, points, X)
        rows = _rows_holding(V, div, y.shape)
        if rows is not None:  # the sums made both as the rows of one array (the zonal rings' do): no copy
            return rows
        out = np.empty(y.shape)
        out[: self.k] = V.T
        out[self.k] = div
        return out

    def retract(self, y):
        out = np.empty(y.shape)
        out[: self.k] = self.chart.retract(self._state(y)).T
        out[self.k] = y[self.k]
        return out

    def reject(self, t, y, reason):
        raise StopIntegration(t, y, reason, status=Status.FAILED)

    def fail(self, t, y, message):
        raise StopIntegration(t, y, f"the adaptive integrator failed: {message}", status=Status.FAILED)

    def output(self, t, y):
        self.frames.append(self.frame(t, y))

    def run(self, t0, t1, t_eval, *, method, dt, rtol, atol, trackers):
        """Integrate (with :class:`~meanfield.integrate.FiniteTracker`, then ``trackers``) from the start frame at t0
        through ``t_eval`` to t1: (status, message, t reached, state there, integrator); Ctrl-C and SIGTERM end it
        with status INTERRUPTED at the last output time."""
        integrator = Integrator(self, method, dt=dt, rtol=rtol, atol=atol, trackers=[FiniteTracker(), self, *trackers])
        y0 = self.pack(self.start)
        status, message = Status.SUCCESS, "the Lagrangian nodes reached the end of the interval"
        try:
            t, y = integrator.run(t0, y0, np.asarray(t_eval, dtype=float), t1)
        except StopIntegration as stop:
            status, t, y = stop.status, stop.t, stop.y
            message = f"the Lagrangian integration stopped at t = {stop.t:.6g}: {stop.reason}"
        except KeyboardInterrupt:
            status, message = Status.INTERRUPTED, "interrupted (Ctrl-C)"
            t, y = (self.frames[-1].t, None) if self.frames else (t0, y0)
        return status, message, t, y, integrator


@dataclass(frozen=True)
class Transport:
    """The frames at the output times, the evaluations and steps, how the run ended."""

    frames: tuple
    nfev: int
    nsteps: int
    status: Status
    message: str
    strategy: str


def transport(model, frame: LagrangianMeasure, t_span, t_eval, *, method: str = "dop853", dt: float | None = None,
              rtol: float = 1e-10, atol: float = 1e-12, strategy: str = "auto", progress: bool = False) -> Transport:
    """Advance a Lagrangian measure from ``t_span[0]`` (its time) through ``t_eval`` with its nodes fixed (the
    ``nodes`` representation of :func:`meanfield.solve`, which is the front).

    ``KeyboardInterrupt`` (Ctrl-C, SIGTERM) ends the run with the frames reached: the returned
    ``Transport`` then has status INTERRUPTED (the caller decides whether to raise).
    """
    t0, t1 = float(t_span[0]), float(t_span[1])
    problem = LagrangianProblem(model, frame, strategy)
    status, message, _, _, integrator = problem.run(
        t0, t1, t_eval, method=method, dt=dt, rtol=rtol, atol=atol,
        trackers=[ProgressTracker(t1 - t0, enabled=progress), InterruptTracker()])
    return Transport(tuple(problem.frames), integrator.nfev, integrator.nsteps, status, message, problem.strategy)
