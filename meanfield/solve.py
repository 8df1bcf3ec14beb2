r"""Time integration of the continuity equation ∂_t μ + div(μ X[μ]) = 0 on a grid.

``solve`` follows ``scipy.integrate.solve_ivp``: one function, a table of
methods, a frozen result object. What it adds is the resolution monitor
(:mod:`meanfield.monitor`): after each step the state is checked, and an
unresolved state is either refined (``refine=True``) or reported by a
:class:`~meanfield.monitor.ResolutionError` carrying the partial solution.

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

with L = (1 + β_eff) × (speed scale) a bound on the strain for any state,
and ``cfl = 0.1`` by default for the fixed-step methods: RK4 is stable to
cfl ≈ 0.9, and the smaller default keeps the time error below the spatial
error of a resolved solution (measured: Ott–Antonsen at n = 256, t = 3, L¹
error 1e-11 at cfl 0.1, 8e-10 at 0.4, 1e-8 at 0.8). The adaptive methods use
cfl = 0.8 as a stability cap only. Pass ``dt`` for a fixed step.
"""

from __future__ import annotations

import enum
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.integrate as si
from tqdm.auto import tqdm

from .continuity import circle_energy, circle_excess_energy, circle_rate, energy_from_excess
from .continuity_sphere import sphere_energy, sphere_excess_energy, sphere_rate
from .density import Density
from .grids.circle import CircleGrid
from .grids.euclidean import EuclideanGrid
from .grids.sphere import SphereGrid
from .models import EUCLIDEAN_MODELS, MultiHeadAttention, SelfAttention, _EXP_MAX, rate_scale
from .monitor import ResolutionError, ResolutionMonitor

__all__ = ["solve", "Solution", "Status", "Interrupted"]


class Status(enum.Enum):
    """How a solve ended."""

    SUCCESS = "success"
    RESOLUTION_LOST = "resolution lost"
    INTERRUPTED = "interrupted"


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
        The time integrator and the field strategy ("spectral" or "quadrature").
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

    @property
    def success(self) -> bool:
        return self.status is Status.SUCCESS


# --------------------------------------------------------------------- steppers
def _rk4(f, y, h):
    k1 = f(y)
    k2 = f(y + 0.5 * h * k1)
    k3 = f(y + 0.5 * h * k2)
    k4 = f(y + h * k3)
    return y + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4), 4


def _ssprk3(f, y, h):
    y1 = y + h * f(y)
    y2 = 0.75 * y + 0.25 * (y1 + h * f(y1))
    return y / 3.0 + (2.0 / 3.0) * (y2 + h * f(y2)), 3


_FIXED = {"rk4": _rk4, "ssprk3": _ssprk3}
_ADAPTIVE = {"rk45": si.RK45, "dop853": si.DOP853}
METHODS = tuple(_FIXED) + tuple(_ADAPTIVE)


# --------------------------------------------------------------------- domain adapter
class _Problem:
    """Everything ``solve`` needs from a domain: rate, energy, refinement."""

    make_rate = excess = full_energy = None  # set per domain

    def __init__(self, model, grid, path: str):
        self.model, self.grid, self.path_requested = model, grid, path
        self.rate = type(self).make_rate(model, grid, path)
        self.path = "spectral" if "Spectral" in type(self.rate).__name__ else "quadrature"
        zonal = model.zonal
        self.energy_beta = None if zonal is None else zonal[0]
        self.energy_sign = 0.0 if zonal is None else float(np.sign(zonal[1]))
        self.strain_bound = rate_scale(model)

    def refined(self):
        return type(self)(self.model, self.grid.refined(), self.path_requested)

    def excess_energy(self, values):
        return None if self.energy_beta is None else type(self).excess(self.grid, values, self.energy_beta)

    def energy(self, values, grid=None):
        if self.energy_beta is None or self.energy_beta > _EXP_MAX:
            return np.nan
        return type(self).full_energy(self.grid if grid is None else grid, values, self.energy_beta)

    def energy_from_excess(self, excess, mass):
        """E_β from e^{-β}(E_β − m²/2β), which the monitor has already computed."""
        if self.energy_beta is None or self.energy_beta > _EXP_MAX:
            return np.nan
        return energy_from_excess(excess, mass, self.energy_beta)


class _CircleProblem(_Problem):
    make_rate = staticmethod(circle_rate)
    excess = staticmethod(circle_excess_energy)
    full_energy = staticmethod(circle_energy)
    default_max = 16384


def _finite_volume(model, grid, path):
    from .continuity_euclidean import FiniteVolume

    return FiniteVolume(grid, model, {"auto": "auto", "quadrature": "direct", "spectral": "auto"}[path])


class _EuclideanProblem(_Problem):
    """Finite volumes in R^d: no energy, no refinement, mass leaving the box reported."""

    make_rate = staticmethod(_finite_volume)
    default_max = 0

    def __init__(self, model, grid, path):
        if path not in ("auto", "spectral", "quadrature"):
            raise ValueError(f"`path` must be 'auto', 'spectral' or 'quadrature', got {path!r}.")
        self.model, self.grid, self.path_requested = model, grid, path
        self.rate = _finite_volume(model, grid, path)
        self.path = self.rate.path
        self.energy_beta, self.energy_sign, self.strain_bound = None, 0.0, 0.0


class _SphereProblem(_Problem):
    make_rate = staticmethod(sphere_rate)
    excess = staticmethod(sphere_excess_energy)
    full_energy = staticmethod(sphere_energy)
    default_max = 256


_PROBLEMS = {CircleGrid: _CircleProblem, SphereGrid: _SphereProblem, EuclideanGrid: _EuclideanProblem}


# --------------------------------------------------------------------- validation
def _check_times(t_span, t_eval):
    try:
        t0, t1 = (float(v) for v in t_span)
    except (TypeError, ValueError):
        raise ValueError(f"`t_span` must be a pair (t0, t1) of numbers, got {t_span!r}.") from None
    if not (np.isfinite(t0) and np.isfinite(t1)) or not t1 > t0:
        raise ValueError(f"`t_span` must be finite with t1 > t0, got {t_span!r}.")
    if t_eval is None:
        return t0, t1, np.array([t0, t1])
    te = np.asarray(t_eval, dtype=float)
    if te.ndim != 1 or te.size == 0:
        raise ValueError(f"`t_eval` must be a non-empty 1-dimensional array, got shape {te.shape}.")
    if not np.all(np.isfinite(te)):
        raise ValueError("`t_eval` contains non-finite values.")
    if np.any(np.diff(te) <= 0):
        raise ValueError("`t_eval` must be strictly increasing.")
    if te[0] < t0 or te[-1] > t1:
        raise ValueError(f"`t_eval` must lie within `t_span` = ({t0:g}, {t1:g}), got [{te[0]:g}, {te[-1]:g}].")
    return t0, t1, te


def _positive(name, value, allow_none=False):
    if value is None and allow_none:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"`{name}` must be a positive number, got {value!r}.") from None
    if not np.isfinite(v) or v <= 0:
        raise ValueError(f"`{name}` must be a positive finite number, got {value!r}.")
    return v


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
    refine: bool = False,
    max_n: int | None = None,
    cfl: float | None = None,
    rtol: float = 1e-10,
    atol: float = 1e-12,
    path: str = "auto",
    monitor: ResolutionMonitor | None = None,
) -> Solution:
    r"""Advance a density by the continuity equation ∂_t μ + div(μ X[μ]) = 0.

    Parameters
    ----------
    model : SelfAttention, MultiHeadAttention, or an R^d model (Softmax, L2, ...)
        Defines X[μ] (MATH.md §2, §5). On the circle and S² zonal models
        (Q = qI, K = kI, V = cI) use the spectral path, any other model the
        quadrature path through ``model.field``.
    mu0 : Density
        Initial density on a ``CircleGrid``, ``SphereGrid`` or
        ``EuclideanGrid`` (finite volumes; the model must be an R^d one).
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
    refine : bool
        On loss of resolution, double the resolution (n on the circle, lmax
        on S²) by zero-padding the last resolved state (exact) and redo the
        step, up to ``max_n``.
    max_n : int, optional
        Largest n (circle, default 16384) or lmax (S², default 256)
        refinement may reach.
    cfl : float, optional
        Safety factor of the CFL step (module docstring): default 0.1 for the
        fixed-step methods (an accuracy choice) and 0.8 for the adaptive ones
        (a stability cap; their error control sets the accuracy); 0.4 for
        finite volumes (SSP-RK3 keeps ρ >= 0 up to 0.5).
    rtol, atol : float
        Tolerances of the adaptive methods.
    path : {"auto", "spectral", "quadrature"}
        Field strategy; "auto" picks spectral where it applies. For finite
        volumes "auto"/"spectral" take the fastest exact sum (FFT for L2 with
        Q = K, separable for softmax) and "quadrature" the direct sum.
    monitor : ResolutionMonitor, optional
        Thresholds of the resolution checks.

    Returns
    -------
    Solution

    Raises
    ------
    ResolutionError
        When the state is no longer resolved and cannot be refined; its
        ``solution`` holds what was computed up to its ``t``.

    Warns
    -----
    RuntimeWarning
        Finite volumes: once more than 1e-8 of the mass has left the box
        (``Solution.mass`` keeps the account).
    """
    if not isinstance(model, (SelfAttention, MultiHeadAttention, *EUCLIDEAN_MODELS)):
        raise TypeError(f"`model` must be an attention model from meanfield.models, got {type(model).__name__}.")
    if not isinstance(mu0, Density):
        raise TypeError(f"`mu0` must be a Density, got {type(mu0).__name__}.")
    if type(mu0.grid) not in _PROBLEMS:
        raise NotImplementedError(f"no solver for densities on {mu0.grid!r} yet.")
    if model.dim is not None and model.dim != mu0.grid.dim:
        raise ValueError(
            f"the model's matrices are {model.dim}×{model.dim} but the density lives on "
            f"{mu0.grid!r} in R^{mu0.grid.dim}."
        )
    euclidean = isinstance(mu0.grid, EuclideanGrid)
    if (model.domain == "euclidean") != euclidean:
        raise ValueError(f"{model!r} lives on the {model.domain}, but the density is on {mu0.grid!r}.")
    method = ("ssprk3" if euclidean else "rk4") if method is None else method
    if method not in METHODS:
        raise ValueError(f"`method` must be one of {METHODS}, got {method!r}.")
    if euclidean and refine:
        raise ValueError("finite-volume grids are not refined: pass refine=False and a finer grid.")
    if euclidean:
        edge = mu0.grid.boundary_mass(mu0.values) / mu0.mass()
        if edge > 1e-6:
            raise ValueError(
                f"the box of {mu0.grid!r} is too small for the data: its boundary cells hold {edge:.2e} of the "
                "mass (more than 1e-6), which would leave at once; enlarge the box."
            )
    t0, t1, t_eval = _check_times(t_span, t_eval)
    dt = _positive("dt", dt, allow_none=True)
    if dt is not None and method in _ADAPTIVE:
        raise ValueError(f"`dt` fixes the step of 'rk4'/'ssprk3'; method {method!r} chooses its own.")
    if cfl is None:
        cfl = 0.4 if euclidean else (0.1 if method in _FIXED else 0.8)
    else:
        cfl = _positive("cfl", cfl)
    rtol, atol = _positive("rtol", rtol), _positive("atol", atol)
    kind = _PROBLEMS[type(mu0.grid)]
    max_n = (mu0.grid.n if euclidean else kind.default_max) if max_n is None else max_n
    if isinstance(max_n, bool) or not isinstance(max_n, (int, np.integer)) or max_n < mu0.grid.n:
        raise ValueError(f"`max_n` must be an integer >= the initial resolution {mu0.grid.n}, got {max_n!r}.")
    monitor = ResolutionMonitor() if monitor is None else monitor

    problem = kind(model, mu0.grid, path)
    run = _Run(problem, monitor, refine, int(max_n), method, dt, cfl, rtol, atol, t0, t_eval, progress)
    return run.integrate(mu0.values, t1)


class _Run:
    """The bookkeeping of one solve: histories, refinement, errors."""

    def __init__(self, problem, monitor, refine, max_n, method, dt, cfl, rtol, atol, t0, t_eval, progress):
        self.problem, self.monitor = problem, monitor
        self.refine, self.max_n, self.method, self.dt, self.cfl = refine, max_n, method, dt, cfl
        self.rtol, self.atol, self.t_eval = rtol, atol, t_eval
        self.out_t, self.out_d = [], []
        self.t_steps, self.mass_steps, self.energy_steps = [], [], []
        self.refinements, self.nfev, self.nsteps = [], 0, 0
        self.t0 = t0
        self.progress = progress
        self.speeds = (0.0, 0.0)
        self.warned_outflow = False

    # --- helpers
    def _f(self, y):
        dy, vmax, strain = self.problem.rate.rate_and_speeds(y)
        self.nfev += 1
        self.speeds = (max(self.speeds[0], vmax), max(self.speeds[1], strain))
        return dy

    def _cfl_step(self):
        p = self.problem
        vmax, strain = self.speeds
        bounds = [1.0 / p.strain_bound] if p.strain_bound > 0 else []
        if vmax > 0:
            bounds.append(p.grid.spacing / vmax)
        if strain > 0:
            bounds.append(1.0 / strain)
        return self.cfl * min(bounds) if bounds else np.inf

    def _record(self, t, y, excess):
        p = self.problem
        mass = float(p.grid.integrate(y))
        if self.mass_steps and not self.warned_outflow and isinstance(p.grid, EuclideanGrid):
            lost = self.mass_steps[0] - mass
            if lost > 1e-8 * self.mass_steps[0]:
                self.warned_outflow = True
                warnings.warn(
                    f"{lost:.3g} of the mass ({lost / self.mass_steps[0]:.2e} relative) has left the box "
                    f"{p.grid!r} by t = {t:.6g}; enlarge the box (Solution.mass keeps the account).",
                    RuntimeWarning,
                    stacklevel=4,
                )
        self.t_steps.append(t)
        self.mass_steps.append(mass)
        self.energy_steps.append(np.nan if excess is None else p.energy_from_excess(excess, mass))

    def _solution(self, status, message):
        energy_ok = self.problem.energy_beta is not None and self.problem.energy_beta <= _EXP_MAX
        dens = tuple(self.out_d)
        return Solution(
            t=np.array(self.out_t),
            densities=dens,
            mass=np.array([d.mass() for d in dens]),
            energy=np.array([self.problem_energy(d) for d in dens]) if energy_ok else None,
            t_steps=np.array(self.t_steps),
            mass_steps=np.array(self.mass_steps),
            energy_steps=np.array(self.energy_steps) if energy_ok else None,
            refinements=tuple(self.refinements),
            nfev=self.nfev,
            nsteps=self.nsteps,
            status=status,
            message=message,
            method=self.method,
            path=self.problem.path,
        )

    def problem_energy(self, density):
        return self.problem.energy(density.values, grid=density.grid)

    def _fail(self, t, y, reason, hint=None):
        # the partial solution ends with the last resolved state
        if not self.out_t or self.out_t[-1] < t:
            self.out_t.append(t)
            self.out_d.append(Density._trusted(self.problem.grid, y))
        sol = self._solution(Status.RESOLUTION_LOST, reason)
        raise ResolutionError(t, reason, sol, hint=hint)

    def _check(self, y_new, e_old):
        reason = self.monitor.check_state(self.problem.grid, y_new)
        e_new = None
        if reason is None and self.problem.energy_beta is not None:
            e_new = self.problem.excess_energy(y_new)
            reason = self.monitor.check_energy(e_old, e_new, self.problem.energy_sign)
        return reason, e_new

    def _try_refine(self, t, y, reason):
        """Refine and return the zero-padded state, or raise."""
        n = self.problem.grid.n
        if not self.refine:
            self._fail(t, y, reason)
        if 2 * n > self.max_n:
            self._fail(
                t,
                y,
                f"{reason}; refinement stopped at max_n = {self.max_n}",
                hint="Raise max_n to go on refining (clusters sharpen exponentially in time, "
                "so each doubling buys a bounded time), or use the particle system, which is "
                "the reference in the collapse regime (MATH.md §2.2).",
            )
        old = self.problem.grid
        self.problem = self.problem.refined()
        self.refinements.append((t, n, self.problem.grid.n))
        self.speeds = (0.0, 0.0)
        return old.resample(y, self.problem.grid.n)

    # --- main loop
    def integrate(self, y, t_end):
        p = self.problem
        t = self.t0
        reason = self.monitor.check_state(p.grid, y)
        if reason is not None:
            raise ResolutionError(
                t,
                f"the initial density is not resolved: {reason}",
                hint="Sample it on a finer grid: refinement by zero-padding cannot recover "
                "data that was never sampled.",
            )
        e = self.problem.excess_energy(y)
        self._record(t, y, e)
        self._f(y)  # speeds for the first CFL step
        self.nfev -= 1
        bar = tqdm(total=float(t_end - self.t0), disable=not self.progress, unit="t", leave=False)
        try:
            for t_out in self.t_eval:
                if t_out > t:
                    t, y, e = self._advance(t, y, e, t_out, bar)
                self.out_t.append(t_out)
                self.out_d.append(Density._trusted(self.problem.grid, y))
            if t < t_end:  # t_eval may stop short of t_span[1]
                t, y, e = self._advance(t, y, e, t_end, bar)
        except KeyboardInterrupt:
            last = f"t = {self.out_t[-1]:.6g}" if self.out_t else "no output time"
            raise Interrupted(self._solution(Status.INTERRUPTED, f"interrupted (Ctrl-C); kept up to {last}")) from None
        finally:
            bar.close()
        return self._solution(Status.SUCCESS, "the solver reached the end of the interval")

    def _advance(self, t, y, e, t_out, bar):
        if self.method in _FIXED:
            return self._advance_fixed(t, y, e, t_out, bar)
        return self._advance_adaptive(t, y, e, t_out, bar)

    def _accept(self, t, y, e, bar, h):
        self.nsteps += 1
        self._record(t, y, e)
        bar.update(h)

    def _advance_fixed(self, t, y, e, t_out, bar):
        stepper = _FIXED[self.method]
        while t < t_out:
            h = self.dt if self.dt is not None else self._cfl_step()
            last = t + h >= t_out * (1 - 1e-14) - 1e-300
            if last:
                h = t_out - t
            self.speeds = (0.0, 0.0)
            y_new, nf = stepper(self._f, y, h)
            reason, e_new = self._check(y_new, e)
            if reason is not None:
                y = self._try_refine(t, y, reason)
                e = self.problem.excess_energy(y)
                self._f(y)
                self.nfev -= 1
                continue
            t = t_out if last else t + h
            y, e = y_new, e_new
            self._accept(t, y, e, bar, h)
        return t, y, e

    def _advance_adaptive(self, t, y, e, t_out, bar):
        # scipy's steppers work on flat vectors; the state keeps the grid's shape
        solver = self._new_solver(t, y, t_out)
        state = lambda: solver.y.reshape(self.problem.grid.shape)
        while solver.status == "running":
            t_prev, y_prev = solver.t, state().copy()
            self.speeds = (0.0, 0.0)
            msg = solver.step()
            if solver.status == "failed":
                self._fail(t_prev, y_prev, f"the adaptive integrator failed: {msg}")
            reason, e_new = self._check(state(), e)
            if reason is not None:
                y = self._try_refine(t_prev, y_prev, reason)
                e = self.problem.excess_energy(y)
                solver = self._new_solver(t_prev, y, t_out)
                continue
            e = e_new
            self._accept(solver.t, state(), e, bar, solver.t - t_prev)
            solver.max_step = self._cfl_step()
        return t_out, state().copy(), e

    def _new_solver(self, t, y, t_out):
        self.speeds = (0.0, 0.0)
        self._f(y)
        self.nfev -= 1
        shape = self.problem.grid.shape
        return _ADAPTIVE[self.method](
            lambda _t, v: self._f(v.reshape(shape)).ravel(), t, y.ravel(), t_out, max_step=self._cfl_step(),
            rtol=self.rtol, atol=self.atol
        )
