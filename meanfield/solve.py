r"""Time integration of the continuity equation ∂_t μ + div(μ X[μ]) = 0 on a grid.

``solve`` follows ``scipy.integrate.solve_ivp``: one function, a table of
methods (:mod:`meanfield.integrate`), a frozen result object. What it adds is
the resolution monitor (:mod:`meanfield.monitor`): after each step the state is
checked, and an unresolved state is either refined (the default on the circle
and S²) or reported by a :class:`~meanfield.monitor.ResolutionError` carrying
the partial solution.

Everything that differs between domains comes from the grid's domain
(:mod:`meanfield.domains`): its right-hand side for the chosen strategy, its
energy, its default method and step, whether it refines. The pieces of one
solve are a :class:`GridProblem` (right-hand side, CFL step, refinement) and
trackers: :class:`ResolutionTracker` (the monitor), :class:`HistoryTracker`
(mass and energy at every step, densities at the output times),
:class:`OutflowTracker` (mass leaving a box in R^d) and a progress bar.

Methods
-------
"rk4"     classical fourth-order Runge–Kutta, fixed step ``dt`` or, by
          default, a CFL step (see below).
"ssprk3"  the strong-stability-preserving third-order scheme of Shu & Osher.
"rk45", "dop853"
          adaptive embedded pairs from ``scipy.integrate`` (error control by
          ``rtol``/``atol``), with the step also capped by the CFL bound.

CFL step
--------
On the grid the fastest linear time scales are advection at the highest
resolved wavenumber, k_max |v| with k_max = π/Δθ, and compression by the
strain |∂_θ v|. The default step is

    dt = cfl × min(Δθ/max|v|, 1/max|∂_θ v|, 1/L),

with L = :func:`meanfield.models.rate_scale` a bound on the strain for any
state (circle and S²; finite volumes use their own CFL number, see
:class:`~meanfield.domains.euclidean.FiniteVolume`), and ``cfl = 0.1`` by default
for the fixed-step methods: RK4 is stable to cfl ≈ 0.9, and the smaller default
keeps the time error below the spatial error of a resolved solution (measured:
Ott–Antonsen at n = 256, t = 3, L¹ error 1e-11 at cfl 0.1, 8e-10 at 0.4, 1e-8 at
0.8). The adaptive methods use cfl = 0.8 as a stability cap only. Pass ``dt``
for a fixed step.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from functools import partial

import numpy as np

from . import checks, kernels
from .density import Density
from .domains.zonal import energy_from_excess
from .integrate import (METHODS, Integrator, InterruptTracker, Problem, ProgressTracker, Stages, Status,
                        StopIntegration, Tracker)
from .integrate.steppers import ADAPTIVE
from .lagrangian import LagrangianMeasure, refines, transport, transport_density
from .models import heads, rate_scale
from .monitor import ResolutionError, ResolutionMonitor
from .numerics import EXP_MAX

__all__ = ["solve", "Solution", "Status", "Interrupted", "GridProblem", "ResolutionTracker", "HistoryTracker",
           "OutflowTracker"]


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`solve`; ``solution`` holds the output times reached before it.

    A ``KeyboardInterrupt``, so code that does not catch it stops as usual.
    """

    def __init__(self, solution):
        super().__init__(solution.message)
        self.solution = solution


@dataclass(frozen=True)
class Solution:
    """Result of :func:`solve`. Time is the first axis of every history.

    Attributes
    ----------
    t : ndarray, shape (k,)
        The output times (``t_eval``).
    densities : tuple of Density
        The solution at each output time (grids may differ after refinement).
    mass : ndarray, shape (k,)
        ∫ρ at the output times.
    energy : ndarray, shape (k,) or None
        E_β at the output times (½|∫x dμ|² at β = 0) for zonal models, else None
        (also None past β ≈ 709 where E_β overflows; monotonicity is still
        monitored on e^{-β}E_β).
    t_steps, mass_steps, energy_steps : ndarray
        The same at every accepted step (energy_steps None as above).
    refinements : tuple of (t, n_old, n_new)
        Grid refinements performed.
    nfev, nsteps : int
        Right-hand-side evaluations and accepted steps.
    status : Status
    message : str
    method, path : str
        The time integrator and the field strategy (:mod:`meanfield.strategies`) of the grid
        (of the Lagrangian measure when it ran from the start).
    representation : tuple of str
        "grid" or "lagrangian" for each frame of ``densities``: a frame is a
        :class:`~meanfield.Density` or a :class:`~meanfield.lagrangian.LagrangianMeasure`.
    handover : float or None
        The time the grid handed its last resolved state over to the Lagrangian measure
        (``t_span[0]`` when it ran from the start; None: grid only). The step histories
        (``t_steps``, ``mass_steps``, ``energy_steps``) cover the grid's part.
    """

    t: np.ndarray
    densities: tuple
    mass: np.ndarray
    energy: np.ndarray | None
    t_steps: np.ndarray
    mass_steps: np.ndarray
    energy_steps: np.ndarray | None
    refinements: tuple
    nfev: int
    nsteps: int
    status: Status
    message: str
    method: str
    path: str
    representation: tuple = ()
    handover: float | None = None

    @property
    def success(self) -> bool:
        return self.status is Status.SUCCESS


# --------------------------------------------------------------------- the problem
def _compiled_field(model):
    """The quadrature path's sum through the compiled pairwise kernel (:func:`kernels.field`), for models on
    spheres (any Q, K, V, multi-head); None (the model's own sum) in R^d. Tested equal to ``model.field``."""
    if getattr(model, "domain", None) != "sphere":
        return None
    return partial(kernels.field, model)


class GridProblem(Problem):
    """The continuity equation on a grid: right-hand side, CFL step, energy, refinement.

    Parameters
    ----------
    model, grid, path
        The model, the grid, the strategy (the grid's domain builds the right-hand side).
    refine : bool
        Refine (double the resolution by zero-padding, exact for band-limited
        data) when a step is rejected, up to ``max_n``; else stop.
    max_n : int
    """

    def __init__(self, model, grid, path: str, refine: bool, max_n: int):
        self.model, self.path_requested, self.refine, self.max_n = model, path, refine, max_n
        self.domain = grid.domain
        self._use(grid)
        self.energy_beta = self.domain.energy_beta(model)
        self.energy_sign = 0.0 if self.energy_beta is None else float(np.sign(model.zonal[1]))
        self.strain_bound = rate_scale(model) if self.domain.strain_capped else 0.0
        self.refinements: list[tuple[float, int, int]] = []
        self.speeds = (0.0, 0.0)

    def _use(self, grid):
        self.grid = grid
        self.rhs = self.domain.rate(self.model, grid, self.path_requested, _compiled_field(self.model))
        self.path = self.rhs.path

    # ---- the integrator's questions
    def rate(self, y):
        return self._measured(*self.rhs.rate_and_speeds(y))

    def _measured(self, rate, vmax, strain):
        """``rate``, after folding the speeds measured with it into this step's maxima."""
        self.speeds = (max(self.speeds[0], vmax), max(self.speeds[1], strain))
        return rate

    def probe(self, y):
        self.speeds = self.rhs.speeds(y)

    def stages(self):
        """The right-hand side's coefficients as the fixed steps' stage variables, where it has them
        (``coefficient_stages``: the S² spectral path on ring plans, the S² moment path); else None."""
        rhs = self.rhs
        if not getattr(rhs, "coefficient_stages", False):
            return None
        return Stages(rhs.coefficients, rhs.values, lambda z: self._measured(*rhs.coefficient_rate_and_speeds(z)))

    def begin_step(self):
        self.speeds = (0.0, 0.0)

    def max_step(self):
        vmax, strain = self.speeds
        bounds = [1.0 / self.strain_bound] if self.strain_bound > 0 else []
        if vmax > 0:
            bounds.append(self.grid.spacing / vmax)
        if strain > 0:
            bounds.append(1.0 / strain)
        return min(bounds) if bounds else np.inf

    def reject(self, t, y, reason):
        """Refine and return the zero-padded state, or stop with the reason."""
        n = self.grid.n
        if not self.refine:
            raise StopIntegration(t, y, reason)
        if 2 * n > self.max_n:
            raise StopIntegration(
                t, y, f"{reason}; refinement stopped at max_n = {self.max_n}",
                hint="Raise max_n to go on refining (clusters sharpen exponentially in time, "
                "so each doubling buys a bounded time), hand over to the Lagrangian measure "
                "(representation='auto'; see its accuracy caveat in docs/MATH.md §6), or use the "
                "particle system, which is the reference in the collapse regime (MATH.md §2.2).",
            )
        old = self.grid
        self._use(old.refined())
        self.refinements.append((t, n, self.grid.n))
        self.speeds = (0.0, 0.0)
        return old.resample(y, self.grid.n)

    def fail(self, t, y, message):
        raise StopIntegration(t, y, f"the adaptive integrator failed: {message}")

    # ---- energy
    def excess_energy(self, values, spectrum=None):
        """e^{-β}(E_β − m²/2β) on the current grid, or None without an energy (``spectrum``:
        ``grid.spectrum(values)``, if known)."""
        if self.energy_beta is None:
            return None
        return self.domain.excess_energy(self.grid, values, self.energy_beta, spectrum)

    def energy_from_excess(self, excess, mass):
        """E_β from e^{-β}(E_β − m²/2β), which the monitor has already computed (NaN without an energy)."""
        return energy_from_excess(excess, mass, self.energy_beta) if self.has_energy() else np.nan

    def has_energy(self) -> bool:
        return self.energy_beta is not None and self.energy_beta <= EXP_MAX

    def energy(self, density):
        return self.domain.energy(density.grid, density.values, self.energy_beta) if self.has_energy() else np.nan


# --------------------------------------------------------------------- its trackers
class ResolutionTracker(Tracker):
    """The resolution monitor as a tracker: a candidate state that is no longer resolved is rejected.

    Checks the state (``monitor.check_state``: finite, non-negative, the grid's
    resolution) and, for zonal models, that E_β moved in its monotone direction
    (GLPR Lemma 3.7). ``excess`` is e^{-β}(E_β − m²/2β) of the last accepted state.
    """

    def __init__(self, problem: GridProblem, monitor: ResolutionMonitor):
        self.problem, self.monitor = problem, monitor
        self.excess = self._candidate = None

    def initialize(self, t, y):
        self.excess = self.problem.excess_energy(y)

    def check(self, t, y):
        p = self.problem
        spectrum = p.grid.spectrum(y)  # one analysis for both checks (read only once the state is finite)
        reason = self.monitor.check_state(p.grid, y, spectrum)
        self._candidate = None
        if reason is None and p.energy_beta is not None:
            self._candidate = p.excess_energy(y, spectrum)
            reason = self.monitor.check_energy(self.excess, self._candidate, p.energy_sign)
        return reason

    def handle(self, t, y, h):
        self.excess = self._candidate

    def reset(self, t, y):
        self.excess = self.problem.excess_energy(y)


class HistoryTracker(Tracker):
    """Mass and E_β at every accepted step, the density at every output time.

    On a lost resolution the last resolved state is kept as the final frame
    (at its own time). :meth:`solution` gathers a :class:`Solution`.
    """

    def __init__(self, problem: GridProblem, resolution: ResolutionTracker, keep_last: bool = True):
        self.problem, self.resolution, self.keep_last = problem, resolution, keep_last
        self.out_t, self.out_d = [], []
        self.t_steps, self.mass_steps, self.energy_steps = [], [], []

    def _record(self, t, y):
        p = self.problem
        mass = float(p.grid.integrate(y))
        self.t_steps.append(t)
        self.mass_steps.append(mass)
        e = self.resolution.excess
        self.energy_steps.append(np.nan if e is None else p.energy_from_excess(e, mass))

    def initialize(self, t, y):
        self._record(t, y)

    def handle(self, t, y, h):
        self._record(t, y)

    def output(self, t, y):
        self.out_t.append(t)
        self.out_d.append(Density(self.problem.grid, y, check=False))

    def finalize(self, t, y, status):
        if self.keep_last and status is Status.RESOLUTION_LOST and (not self.out_t or self.out_t[-1] < t):
            self.output(t, y)

    def solution(self, status: Status, message: str, nfev: int, nsteps: int, method: str) -> Solution:
        p = self.problem
        dens = tuple(self.out_d)
        return Solution(
            t=np.array(self.out_t),
            densities=dens,
            mass=np.array([d.mass() for d in dens]),
            energy=np.array([p.energy(d) for d in dens]) if p.has_energy() else None,
            t_steps=np.array(self.t_steps),
            mass_steps=np.array(self.mass_steps),
            energy_steps=np.array(self.energy_steps) if p.has_energy() else None,
            refinements=tuple(p.refinements),
            nfev=nfev,
            nsteps=nsteps,
            status=status,
            message=message,
            method=method,
            path=p.path,
            representation=("grid",) * len(dens),
        )


class OutflowTracker(Tracker):
    """Warns once when more than 1e-8 of the mass has left the domain (a box in R^d; ``Solution.mass`` keeps the account)."""

    def __init__(self, problem: GridProblem):
        self.problem = problem
        self.mass0, self.warned = None, False

    def initialize(self, t, y):
        self.mass0 = float(self.problem.grid.integrate(y))

    def handle(self, t, y, h):
        lost = self.mass0 - float(self.problem.grid.integrate(y))
        if not self.warned and lost > 1e-8 * self.mass0:
            self.warned = True
            warnings.warn(
                f"{lost:.3g} of the mass ({lost / self.mass0:.2e} relative) has left the box "
                f"{self.problem.grid!r} by t = {t:.6g}; enlarge the box (Solution.mass keeps the account).",
                RuntimeWarning,
                stacklevel=6,
            )


# --------------------------------------------------------------------- solve
def solve(
    model,
    mu0: Density,
    t_span,
    t_eval=None,
    method: str | None = None,
    dt: float | None = None,
    progress: bool = False,
    *,
    refine: bool | None = None,
    max_n: int | None = None,
    cfl: float | None = None,
    rtol: float = 1e-10,
    atol: float = 1e-12,
    path: str = "auto",
    monitor: ResolutionMonitor | None = None,
    representation: str | None = None,
    lagrangian_tol: float | None = None,
) -> Solution:
    r"""Advance a density by the continuity equation ∂_t μ + div(μ X[μ]) = 0.

    Parameters
    ----------
    model : SelfAttention, MultiHeadAttention, or an R^d model (Softmax, L2, ...)
        Defines X[μ] (MATH.md §2, §5). On the circle and S² zonal models
        (Q = qI, K = kI, V = cI) use the spectral path, any other model the
        quadrature path through ``model.field``.
    mu0 : Density or LagrangianMeasure
        Initial density on a ``CircleGrid``, ``SphereGrid`` or
        ``EuclideanGrid`` (finite volumes; the model must be an R^d one), or a
        Lagrangian measure (e.g. :func:`meanfield.lagrangian.start_gaussian`), which
        is advanced as it is, its nodes fixed (``representation`` "lagrangian").
    t_span : (float, float)
        Start and end times, t1 > t0.
    t_eval : array_like, optional
        Increasing output times within ``t_span`` (default: the two ends).
    method : {"rk4", "ssprk3", "rk45", "dop853"}, optional
        Time integrator (module docstring); default "rk4" on the circle and
        S², "ssprk3" for finite volumes in R^d (positivity preserving).
    dt : float, optional
        Fixed step for "rk4"/"ssprk3" (the last step before an output time
        is shortened to land on it). Default: the CFL step.
    progress : bool
        Show a tqdm progress bar over simulated time.
    refine : bool, optional
        On loss of resolution, double the resolution (n on the circle, lmax
        on S²) by zero-padding the last resolved state (exact) and redo the
        step, up to ``max_n``. Default: True on the circle and S² (the same
        default as study files), False in R^d (finite-volume grids are not
        refined; ``True`` there is refused).
    max_n : int, optional
        Largest n (circle, default 16384) or lmax (S², default 256)
        refinement may reach.
    cfl : float, optional
        Safety factor of the CFL step (module docstring): default 0.1 for the
        fixed-step methods (an accuracy choice) and 0.8 for the adaptive ones
        (a stability cap; their error control sets the accuracy); 0.4 for
        finite volumes (SSP-RK3 keeps ρ >= 0 up to 0.5).
    rtol, atol : float
        Tolerances of the adaptive methods (the study files' defaults too).
    path : {"auto", "quadrature", "spectral", "separable"}
        Field strategy (:mod:`meanfield.strategies`); "auto" picks spectral
        where it applies (zonal models on the circle and S², L2 with Q = K in
        R^d), separable for softmax in R^d, else quadrature (``model.field``).
    monitor : ResolutionMonitor, optional
        Thresholds of the resolution checks.
    representation : {"grid", "auto", "lagrangian"}, optional
        "grid": the grid only, a :class:`ResolutionError` where it cannot go on.
        "auto": the grid while it resolves the solution (refining as ``refine``
        says); where it cannot go on, its last resolved state is handed over to
        the Lagrangian measure (:mod:`meanfield.lagrangian`, docs/MATH.md §6),
        which goes on to ``t_span[1]``. "lagrangian": the Lagrangian measure from
        ``t_span[0]`` (adaptive DOP853 with ``rtol``/``atol``, or ``method``/``dt``
        when given). Default: "auto" where the Lagrangian measure refines itself
        (zonal models on the circle and S²: adaptive Gauss panels, exact through
        collapse to the problem's conditioning where the flow map is smooth; on S²
        they cannot resolve the separatrices between clusters and stop at
        ``max_points``), "grid" elsewhere — in R^d the Lagrangian nodes are the
        grid's, fixed, and accurate only while the flow map is resolved by them
        (docs/MATH.md §6), so it is asked for explicitly. To advance the grid's
        nodes as fixed characteristics anywhere, pass
        ``meanfield.lagrangian.start(mu0)`` as ``mu0``.
    lagrangian_tol : float, optional
        The adaptive Gauss panels' bound on each panel's contribution to the
        error of the moments (``tol`` of
        :func:`meanfield.lagrangian.panels.transport_panels`, default 1e-14 on the
        circle, 1e-10 on S²).
        The panels stop rather than let the moments err by more than 1e3 × this
        (the mass on panels float64 can no longer split); a looser value lets a
        run go on through sharper clusters with that error bound.

    Returns
    -------
    Solution

    Raises
    ------
    ResolutionError
        With ``representation="grid"`` (the default), when the state is no longer
        resolved and refinement is off or capped at ``max_n``; its ``solution``
        holds what was computed up to its ``t``.
    Interrupted
        On Ctrl-C (or SIGTERM, where no handler of the application's is set); its
        ``solution`` holds the output times reached.

    Warns
    -----
    RuntimeWarning
        Finite volumes: once more than 1e-8 of the mass has left the box
        (``Solution.mass`` keeps the account).
    """
    heads(model)  # TypeError for anything but an attention model
    if isinstance(mu0, LagrangianMeasure):
        return _solve_lagrangian(model, mu0, t_span, t_eval, method, dt, progress, rtol, atol, path, representation)
    if not isinstance(mu0, Density):
        raise TypeError(f"`mu0` must be a Density or a LagrangianMeasure, got {type(mu0).__name__}.")
    domain = mu0.domain
    domain.check_model(model, mu0.grid)
    method_given, method = method, domain.default_method if method is None else method
    if method not in METHODS:
        raise ValueError(f"`method` must be one of {METHODS}, got {method!r}.")
    refinable = domain.default_max_n is not None
    refine = refinable if refine is None else bool(refine)
    if refine and not refinable:
        raise ValueError("finite-volume grids are not refined: pass refine=False and a finer grid.")
    domain.check_initial(mu0)
    t0, t1, t_eval = checks.time_span(t_span, t_eval)
    dt = None if dt is None else checks.positive(dt, "dt")
    if dt is not None and method in ADAPTIVE:
        raise ValueError(f"`dt` fixes the step of 'rk4'/'ssprk3'; method {method!r} chooses its own.")
    cfl = domain.default_cfl(method in ADAPTIVE) if cfl is None else checks.positive(cfl, "cfl")
    rtol, atol = checks.positive(rtol, "rtol"), checks.positive(atol, "atol")
    max_n = (domain.default_max_n or mu0.grid.n) if max_n is None else max_n
    if isinstance(max_n, bool) or not isinstance(max_n, (int, np.integer)) or max_n < mu0.grid.n:
        raise ValueError(f"`max_n` must be an integer >= the initial resolution {mu0.grid.n}, got {max_n!r}.")
    monitor = ResolutionMonitor() if monitor is None else monitor
    panels = {} if lagrangian_tol is None else {"tol": checks.positive(lagrangian_tol, "lagrangian_tol")}

    if representation is None:
        representation = "auto" if refines(model, domain) else "grid"
    if representation not in ("auto", "grid", "lagrangian"):
        raise ValueError(f"`representation` must be 'auto', 'grid' or 'lagrangian', got {representation!r}.")
    if representation == "lagrangian":
        lmethod = method if method_given is not None or dt is not None else "dop853"  # a given dt means rk4
        run = transport_density(model, mu0, (t0, t1), t_eval, method=lmethod, dt=dt, rtol=rtol, atol=atol,
                                path=path, progress=progress, **panels)
        sol = _lagrangian_solution(model, domain, run, lmethod, t0)
        _raise_on_stop(run, sol)
        return sol

    problem = GridProblem(model, mu0.grid, path, refine, int(max_n))
    resolution = ResolutionTracker(problem, monitor)
    history = HistoryTracker(problem, resolution, keep_last=representation == "grid")
    reason = monitor.check_state(mu0.grid, mu0.values)
    if reason is not None:  # refused; the error's solution still holds the initial state (its only frame)
        y0 = np.array(mu0.values)
        history.initialize(t0, y0)
        history.output(t0, y0)
        reason = f"the initial density is not resolved: {reason}"
        raise ResolutionError(
            t0, reason, history.solution(Status.RESOLUTION_LOST, reason, 0, 0, method),
            hint="Sample it on a finer grid (refinement by zero-padding cannot recover data that was never "
            "sampled)" + (", or loosen the monitor's tail_tol (ResolutionMonitor; [time] tail_tol in a study file)."
                          if refinable else "."),
            initial=True,
        )
    trackers = [resolution, history]
    if not domain.conserves_mass:
        trackers.append(OutflowTracker(problem))
    trackers += [ProgressTracker(t1 - t0, enabled=progress), InterruptTracker()]
    integrator = Integrator(problem, method, dt=dt, cfl=cfl, rtol=rtol, atol=atol, trackers=trackers)

    def result(status, message):
        return history.solution(status, message, integrator.nfev, integrator.nsteps, method)

    try:
        integrator.run(t0, np.array(mu0.values), t_eval, t1)
    except StopIntegration as stop:
        if representation == "grid":
            raise ResolutionError(stop.t, stop.reason, result(Status.RESOLUTION_LOST, stop.reason),
                                  hint=stop.hint) from None
        return _hand_over(model, problem, stop, result(Status.SUCCESS, ""), t_eval, t1, rtol, atol, path, progress,
                          panels)
    except KeyboardInterrupt:
        last = f"t = {history.out_t[-1]:.6g}" if history.out_t else "no output time"
        raise Interrupted(result(Status.INTERRUPTED, f"interrupted (Ctrl-C); kept up to {last}")) from None
    return result(Status.SUCCESS, "the solver reached the end of the interval")


# --------------------------------------------------------------------- the Lagrangian measure
def _solve_lagrangian(model, frame, t_span, t_eval, method, dt, progress, rtol, atol, path, representation):
    """:func:`solve` from a Lagrangian measure: its nodes as fixed characteristics (:func:`transport`)."""
    if representation not in (None, "lagrangian"):
        raise ValueError(f"a LagrangianMeasure is advanced as one: `representation` must be 'lagrangian' or None, "
                         f"got {representation!r}.")
    domain = frame.domain
    if model.domain != domain.model_family:
        raise ValueError(f"{model!r} lives on the {model.domain}, but the Lagrangian measure is on the {domain.name}.")
    d = frame.points.shape[-1]
    if model.dim is not None and model.dim != d:
        raise ValueError(f"the model's matrices are {model.dim}×{model.dim} but the measure's points are in R^{d}.")
    t0, t1, t_eval = checks.time_span(t_span, t_eval)
    if t0 != frame.t:
        raise ValueError(f"`t_span` must start at the measure's time t = {frame.t:g}, got {t0:g}.")
    method = "dop853" if method is None and dt is None else (method or "rk4")
    if method not in METHODS:
        raise ValueError(f"`method` must be one of {METHODS}, got {method!r}.")
    rtol, atol = checks.positive(rtol, "rtol"), checks.positive(atol, "atol")
    dt = None if dt is None else checks.positive(dt, "dt")
    run = transport(model, frame, (t0, t1), t_eval, method=method, dt=dt, rtol=rtol, atol=atol, path=path,
                    progress=progress)
    sol = _lagrangian_solution(model, domain, run, method, t0)
    _raise_on_stop(run, sol)
    return sol


def _lagrangian_solution(model, domain, run, method: str, handover: float, grid_part: Solution | None = None,
                         energy_beta: float | None = None):
    """A :class:`Solution` of the Lagrangian frames of ``run``, after the grid's frames of ``grid_part``."""
    beta = domain.energy_beta(model) if energy_beta is None else energy_beta
    frames = run.frames
    has_energy = beta is not None and beta <= EXP_MAX
    lag_energy = np.array([f.energy(beta) for f in frames]) if has_energy else None
    lag_mass = np.array([f.mass() for f in frames])
    if grid_part is None:
        return Solution(
            t=np.array([f.t for f in frames]), densities=frames, mass=lag_mass, energy=lag_energy,
            t_steps=np.array([]), mass_steps=np.array([]), energy_steps=np.array([]) if has_energy else None,
            refinements=(), nfev=run.nfev, nsteps=run.nsteps, status=run.status, message=run.message,
            method=method, path=run.path, representation=("lagrangian",) * len(frames), handover=float(handover),
        )
    g = grid_part
    message = (f"the grid handed over to the Lagrangian measure at t = {handover:.6g} ({g.message}); "
               f"{run.message}")
    return Solution(
        t=np.concatenate([g.t, [f.t for f in frames]]), densities=g.densities + frames,
        mass=np.concatenate([g.mass, lag_mass]),
        energy=None if g.energy is None or lag_energy is None else np.concatenate([g.energy, lag_energy]),
        t_steps=g.t_steps, mass_steps=g.mass_steps, energy_steps=g.energy_steps, refinements=g.refinements,
        nfev=g.nfev + run.nfev, nsteps=g.nsteps + run.nsteps, status=run.status, message=message, method=g.method,
        path=g.path, representation=g.representation + ("lagrangian",) * len(frames), handover=float(handover),
    )


def _hand_over(model, problem: GridProblem, stop: StopIntegration, grid_part: Solution, t_eval, t1, rtol, atol, path,
               progress, panels):
    """Go on from the grid's last resolved state (``stop.y`` at ``stop.t``) with the Lagrangian measure."""
    last = Density(problem.grid, stop.y, check=False)
    rest = [t for t in t_eval if t > stop.t]
    run = transport_density(model, last, (stop.t, t1), rest if rest else [t1], rtol=rtol, atol=atol,
                            path="auto" if path in ("spectral", "separable") else path, progress=progress, **panels)
    sol = _lagrangian_solution(model, problem.domain, run, problem.path, stop.t, replace(grid_part, message=stop.reason))
    _raise_on_stop(run, sol)
    return sol


def _raise_on_stop(run, sol: Solution) -> None:
    """Interrupted → :class:`Interrupted`; a Lagrangian run that stopped rather than lose accuracy (the panels'
    point cap, a map steeper than float64 resolves) → :class:`ResolutionError`, each carrying ``sol``."""
    if run.status is Status.INTERRUPTED:
        raise Interrupted(sol)
    if run.status is Status.RESOLUTION_LOST:
        t = getattr(run, "t", float(sol.t[-1]) if sol.t.size else float("nan"))
        raise ResolutionError(t, run.message, sol, hint="Loosen lagrangian_tol (solve's argument; [time] "
                              "lagrangian_tol in a study file), raise max_points of "
                              "meanfield.lagrangian.transport_panels, or end earlier. Where clusters form on S², "
                              "the panels refine without end along the separatrices between them: advance the "
                              "grid's nodes as fixed characteristics instead, solve(model, "
                              "meanfield.lagrangian.start(mu0), ...) ([time] lagrangian_nodes = 'grid'; cluster "
                              "masses to a few 1e-4, docs/MATH.md §6).")
