r"""The grid representation: a density on a grid of its domain, refined where it stops being resolved.

A :class:`GridProblem` is the continuity equation on a grid (the domain's right-hand side for the strategy, the
CFL step, refinement by zero-padding up to ``max_n``); its trackers are :class:`ResolutionTracker` (the monitor:
a state that is no longer resolved is rejected, then refined or the run stops), :class:`HistoryTracker` (mass and
E_β at every step, densities at the outputs) and :class:`OutflowTracker` (mass leaving a box in R^d: recorded as
``Solution.outflow``, warned about past the monitor's ``outflow_tol``).

CFL step
--------
On the grid the fastest linear time scales are advection at the highest resolved wavenumber, k_max |v| with
k_max = π/Δθ, and compression by the strain |∂_θ v|. The default step is

    dt = cfl × min(Δθ/max|v|, 1/max|∂_θ v|, 1/L),

with L = :func:`meanfield.models.rate_scale` a bound on the strain for any state (circle and S²; finite volumes
use their own CFL number, see :class:`~meanfield.domains.euclidean.FiniteVolume`; for nGPT's α P_θA/|A|, which has
no such bound, L = α rate_scale(attention)/min |A| over the nodes of the latest field evaluation), and
``cfl = 0.1`` by default for the fixed-step methods: RK4 is stable to cfl ≈ 0.9, and the smaller default keeps the
time error below the spatial error of a resolved solution (measured: Ott–Antonsen at n = 256, t = 3, L¹ error
1e-11 at cfl 0.1, 8e-10 at 0.4, 1e-8 at 0.8). The adaptive methods use cfl = 0.8 as a stability cap only.
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import kernels
from ..kernels import strategies
from ..density import Density
from ..domains.zonal import energy_from_excess
from ..integrate import Integrator, Problem, Stages, Status, StopIntegration, Tracker
from ..integrate.steppers import ADAPTIVE, integrating_factor_refusal
from ..models import normalization_of, rate_scale, repulsive
from ..models.schedule import piecewise_constant
from ..integrate.monitor import ResolutionError, ResolutionMonitor
from ..core import checks
from ..core.numerics import EXP_MAX
from .base import Part, Representation, Settings, run_to_end

__all__ = ["GridRepresentation", "GridProblem", "ResolutionTracker", "HistoryTracker", "OutflowTracker",
           "step_bound"]


# --------------------------------------------------------------------- the right-hand side of a model
def continuity(domain, model, grid, strategy):
    """The domain's right-hand side for ``model`` on ``grid`` by the resolved ``strategy``: an attention model's
    own; a :class:`~meanfield.models.Transformer`'s a X_att + b Σ X_ff as the attention's right-hand side with the
    fixed drift (b/a) Σ X_ff, times a (exact: −div(ρX) is linear in X), or the drift b Σ X_ff alone where a = 0;
    nGPT's α P_θA/|A| (docs/MATH.md §10) as the whole model's field, by the sums that give the average A itself
    (the quadrature sums, the S² moments: what :func:`meanfield.kernels.strategies.for_grid` offers it)."""
    if not getattr(model, "has_blocks", False) or not model.normalization.heads_field:
        return domain.continuity(model, grid, strategy, kernels.grid_field(model))
    a, b = model.weights
    blocks = model.feedforward if b else ()
    if model.attention is None or a == 0:
        return domain.continuity(None, grid, "quadrature", None, model.drift if blocks else None)
    drift = (lambda q: model.drift(q) / a) if blocks else None
    rhs = domain.continuity(model.attention, grid, strategy, kernels.grid_field(model.attention), drift)
    return rhs if a == 1.0 else Scaled(rhs, a)


def step_bound(spacing: float, vmax: float, strain: float, *rates: float) -> float:
    """The CFL step before its factor (module docstring): min(Δ/max|v|, 1/max|∂v|, 1/r for each rate r), each term
    where its speed or rate is > 0; inf where none is (the integrator then steps to its output times)."""
    bounds = [spacing / vmax] if vmax > 0 else []
    bounds += [1.0 / r for r in (strain,) + rates if r > 0]
    return min(bounds) if bounds else np.inf


class Scaled:
    """A right-hand side of velocity c X: its rates and speeds times c (every other attribute its own)."""

    def __init__(self, rhs, c: float):
        self._rhs, self._c = rhs, float(c)

    def __getattr__(self, name):
        return getattr(self._rhs, name)

    def rate(self, values):
        return self._c * self._rhs.rate(values)

    def rate_and_speeds(self, values):
        rate, vmax, strain = self._rhs.rate_and_speeds(values)
        return self._c * rate, abs(self._c) * vmax, abs(self._c) * strain

    def speeds(self, values):
        vmax, strain = self._rhs.speeds(values)
        return abs(self._c) * vmax, abs(self._c) * strain

    def coefficient_rate_and_speeds(self, z):
        rate, vmax, strain = self._rhs.coefficient_rate_and_speeds(z)
        return self._c * rate, abs(self._c) * vmax, abs(self._c) * strain

    def coefficient_speeds(self, z):
        vmax, strain = self._rhs.coefficient_speeds(z)
        return abs(self._c) * vmax, abs(self._c) * strain


# --------------------------------------------------------------------- the problem
class GridProblem(Problem):
    """The continuity equation on a grid: right-hand side, CFL step, energy, refinement.

    Parameters
    ----------
    model, grid, strategy
        The model, the grid, the strategy requested (resolved by :func:`meanfield.kernels.strategies.resolve` on every grid
        the run uses; the grid's domain builds the right-hand side).
    refine : bool
        Refine (double the resolution by zero-padding, exact for band-limited
        data) when a step is rejected, up to ``max_n``; else stop.
    max_n : int
    """

    def __init__(self, model, grid, strategy: str, refine: bool, max_n: int, t0: float = 0.0):
        self.dynamics, self.strategy_requested, self.refine, self.max_n = model, strategy, refine, max_n
        self.time_dependent = bool(model.time_dependent)
        # a schedule's layers keep their precomputations for the layer; a callable's model changes every stage
        self.layered = not self.time_dependent or piecewise_constant(model)
        self.domain = grid.domain
        self.model = model.at(t0)
        self._layer_time = t0
        self.noise = float(model.noise)
        self.grid = grid
        self._check_model(t0)
        self._use(grid)
        # E_β is the Lyapunov functional of constant weights only: no energy for time-dependent ones
        self.energy_beta = None if self.time_dependent else self.domain.energy_beta(model)
        # the monitored Lyapunov functional (docs/MATH.md §7): E_β, non-decreasing for V = cI, c > 0 (GLPR Lemma 3.7); with
        # noise, for USA the free energy F = −cE_β + D∫ρ log ρ, non-increasing; for SA with noise none is known
        # (the free energy is USA's own: a head's, model.zonal; not nGPT's, whose field divides by |A|)
        c = 0.0 if self.energy_beta is None else float(model.energy_kernel.c)
        self.lyapunov_sign = float(np.sign(c)) if not self.noise else (
            -1.0 if c and not model.normalized and model.zonal is not None else 0.0)
        self.strain_bound = self._strain_bound(self.model)
        self.refinements: list[tuple[float, int, int]] = []
        self.speeds = (0.0, 0.0)

    def _check_model(self, t) -> None:
        if self.model.dim is not None and self.model.dim != self.grid.dim:
            raise ValueError(f"`model` at t = {t:g}: its matrices are {self.model.dim}×{self.model.dim} but the density "
                             f"lives in R^{self.grid.dim} (a time-dependent weight of the wrong shape).")
        if self.domain.repulsion_refusal is not None and repulsive(self.model):  # a β(t) < 0 met during the run
            raise ValueError(f"`model` at t = {t:g}: β < 0 (repulsive attention) on the {self.domain.description}: "
                             f"{self.domain.repulsion_refusal}.")

    def at_time(self, t, layer_time=None):
        """The model of time t (a schedule's layer, a callable's value), its right-hand side rebuilt where it changed.
        Called with t alone at the start of a stretch of steps, whose layer it fixes for the stages that follow."""
        if not self.time_dependent:
            return
        if layer_time is None:
            self._layer_time = layer_time = t
        m = self.dynamics.at(t, layer_time)
        if m is not self.model:
            self.model = m
            self._check_model(t)
            self._use(self.grid)
            self.strain_bound = self._strain_bound(m)

    def breakpoints(self, t0, t1):
        return self.dynamics.breakpoints(t0, t1) if self.time_dependent else ()

    def _strain_bound(self, model) -> float:
        """rate_scale(model), the a priori bound on the strain that caps the step (domains with ``strain_capped``).
        A variant other than post-LN (nGPT's α P_θA/|A|) has none for every state (|A| may be small): its cap is
        rate_scale(attention) times its ``step_scale`` at min |A| over the nodes of the latest field evaluation
        (:class:`meanfield.kernels.NGPTField`; nGPT's α/min |A|, the particles' default step divided the same way),
        read by :meth:`max_step`; here the attention's scale."""
        if not self.domain.strain_capped:
            return 0.0
        if not normalization_of(model).heads_field:
            return rate_scale(model.attention)
        return rate_scale(model)

    def _use(self, grid):
        self.grid = grid
        self.strategy = strategies.resolve(self.strategy_requested, strategies.for_grid(self.model, grid), repr(grid))
        self.rhs = continuity(self.domain, self.model, grid, self.strategy)
        # nGPT's min |A| of the latest evaluation, for max_step: the S² moments' own record, else the quadrature sums'
        field = getattr(self.rhs, "field", None)
        if not isinstance(field, kernels.NGPTField):
            self._lengths = None
        else:
            self._lengths = self.rhs if getattr(self.rhs, "velocity", None) is not None else field
        self.laplacian = grid.laplacian() if self.noise and not getattr(self.rhs, "coefficient_stages", False) else None

    # ---- the integrator's questions
    def rate(self, y, t=None):
        if t is not None:
            self.at_time(t, self._layer_time)
        return self._measured(*self.rhs.rate_and_speeds(y))

    def _measured(self, rate, vmax, strain):
        """``rate``, after folding the speeds measured with it into this step's maxima."""
        self.speeds = (max(self.speeds[0], vmax), max(self.speeds[1], strain))
        return rate

    def probe(self, y):
        self.speeds = self.rhs.speeds(y)

    def stages(self):
        """The variables the steps run their stages in: the right-hand side's coefficients where it has them
        (``coefficient_stages``: the S² spectral path on ring plans, the S² moment path), with the noise's DΔ as their
        decay (−Dl(l+1)); with noise elsewhere, the coordinates in which the grid's Laplacian is diagonal
        (:meth:`~meanfield.domains.Grid.laplacian`); else None (the stages run on the values)."""
        rhs = self.rhs
        if getattr(rhs, "coefficient_stages", False) and self.layered:  # one right-hand side for the whole stretch

            def rate(z, t=None):
                return self._measured(*rhs.coefficient_rate_and_speeds(z))

            return Stages(rhs.coefficients, rhs.values, rate, self.noise * rhs.laplacian if self.noise else None)
        if not self.noise:
            return None
        op = self.laplacian if self.laplacian is not None else self.grid.laplacian()

        def rate(z, t=None):
            return op.encode(self.rate(op.decode(z), t))

        return Stages(op.encode, op.decode, rate, self.noise * op.eigenvalues)

    def begin_step(self):
        self.speeds = (0.0, 0.0)

    def max_step(self):
        cap = self.strain_bound if self._lengths is None else self.strain_bound * normalization_of(
            self.model).step_scale(1.0, lambda: self._lengths.smallest_length)
        return step_bound(self.grid.spacing, *self.speeds, cap)

    def reject(self, t, y, reason):
        """Refine and return the zero-padded state, or stop with the reason."""
        n = self.grid.n
        if not self.refine:
            raise StopIntegration(t, y, reason, hint="Pass refine=True (with a larger max_n) to refine the grid, hand "
                                  "over to the Lagrangian measure (representation=('grid', 'nodes'); 'auto' does where "
                                  "the adaptive panels apply), or use the particle system, "
                                  "which is the reference in the collapse regime (MATH.md §2.2).")
        if 2 * n > self.max_n:
            raise StopIntegration(
                t, y, f"{reason}; refinement stopped at {self.grid!r} (n = {n}): the next grid, n = {2 * n}, "
                f"would pass max_n = {self.max_n}",
                hint="Raise max_n to go on refining (clusters sharpen exponentially in time, "
                "so each doubling buys a bounded time), hand over to the Lagrangian measure "
                "(representation=('grid', 'nodes'); 'auto' does where the adaptive panels apply; docs/MATH.md §6), "
                "or use the "
                "particle system, which is the reference in the collapse regime (MATH.md §2.2).",
            )
        old = self.grid
        self._use(old.refined())
        self.refinements.append((float(t), int(n), int(self.grid.n)))  # plain numbers: they print as such
        self.speeds = (0.0, 0.0)
        return old.resample(y, self.grid.n)

    def fail(self, t, y, message):
        raise StopIntegration(t, y, f"the adaptive integrator failed: {message}")

    def frame(self, t, y) -> Density:
        """The state as a density on the current grid (what users' trackers and events see)."""
        return Density(self.grid, y, check=False, t=t)

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

    def lyapunov(self, values, excess):
        """The monitored functional from the state's excess energy: the excess itself without noise; with noise (USA)
        e^{-β}(F − const) = −c·excess + D e^{-β}∫ρ log ρ, F = −cE_β + D∫ρ log ρ (the mass is conserved)."""
        if not self.noise or excess is None:
            return excess
        rho = np.maximum(values, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            entropy = float(self.grid.integrate(np.where(rho > 0, rho * np.log(np.where(rho > 0, rho, 1.0)), 0.0)))
        return -float(self.model.energy_kernel.c) * excess + self.noise * np.exp(-self.energy_beta) * entropy



# --------------------------------------------------------------------- its trackers
class ResolutionTracker(Tracker):
    """The resolution monitor as a tracker: a candidate state that is no longer resolved is rejected.

    Checks the state (``monitor.check_state``: finite, non-negative, the grid's
    resolution) and, for zonal models, that the model's Lyapunov functional moved in its
    monotone direction (``GridProblem.lyapunov``: E_β, GLPR Lemma 3.7; with noise the free
    energy of USA, MATH.md §6). ``excess`` is e^{-β}(E_β − m²/2β) of the last accepted state.
    """

    def __init__(self, problem: GridProblem, monitor: ResolutionMonitor):
        self.problem, self.monitor = problem, monitor
        self.excess = self.value = self._candidate = None

    def initialize(self, t, y):
        self.excess = self.problem.excess_energy(y)
        self.value = self.problem.lyapunov(y, self.excess)

    def reset(self, t, y):
        self.initialize(t, y)

    def check(self, t, y):
        p = self.problem
        spectrum = p.grid.spectrum(y)  # one analysis for both checks (read only once the state is finite)
        reason = self.monitor.check_state(p.grid, y, spectrum)
        self._candidate = None
        if reason is None and p.energy_beta is not None:
            excess = p.excess_energy(y, spectrum)
            self._candidate = (excess, p.lyapunov(y, excess))
            reason = self.monitor.check_energy(self.value, self._candidate[1], p.lyapunov_sign)
        return reason

    def handle(self, t, y, h):
        self.excess, self.value = self._candidate if self._candidate is not None else (None, None)


class HistoryTracker(Tracker):
    """Mass and E_β at every accepted step, the density at every output time."""

    def __init__(self, problem: GridProblem, resolution: ResolutionTracker):
        self.problem, self.resolution = problem, resolution
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
        self.out_d.append(Density(self.problem.grid, y, check=False, t=t))


class OutflowTracker(Tracker):
    """The mass that has left the domain (a box in R^d): ``lost`` after every accepted step (recorded as
    ``Solution.outflow``), one ``RuntimeWarning`` where it exceeds ``tol`` × the initial mass (the monitor's
    ``outflow_tol``, default 1e-6), and a stop (``Status.FAILED``, not handed over: no representation gets the lost
    mass back) where it exceeds ``stop`` × the initial mass (``outflow_stop``, default 1e-4). Less than ``tol`` —
    the ~1e-8 a Gaussian's far tail carries through the box's edges — is below the scheme's own errors and is
    recorded only."""

    def __init__(self, problem: GridProblem, tol: float = 1e-6, stop: float = 1e-4):
        self.problem, self.tol, self.stop = problem, float(tol), float(stop)
        self.mass0, self.lost, self.warned = None, 0.0, False

    def initialize(self, t, y):
        self.mass0 = float(self.problem.grid.integrate(y))

    def handle(self, t, y, h):
        self.lost = max(self.lost, self.mass0 - float(self.problem.grid.integrate(y)))
        where = f"the box {self.problem.grid!r}"
        if self.lost > self.stop * self.mass0:
            raise StopIntegration(
                t, y, f"{self.lost:.3g} of the mass ({self.lost / self.mass0:.2e} relative, more than the monitor's "
                f"outflow_stop = {self.stop:.1e}) has left {where} by t = {t:.6g}: the density in the box is no longer "
                "the solution", status=Status.FAILED,
                hint="Solve on a larger box: widen the grid's `bounds` (keep the cell size: raise the number of cells "
                "with it) so that the mass stays inside until the end of the run; or raise "
                "ResolutionMonitor(outflow_stop=...) to accept the loss (Solution.outflow keeps the account).")
        if not self.warned and self.lost > self.tol * self.mass0:
            self.warned = True
            warnings.warn(
                f"{self.lost:.3g} of the mass ({self.lost / self.mass0:.2e} relative, more than the monitor's "
                f"outflow_tol = {self.tol:.1e}) has left {where} by t = {t:.6g}; enlarge the "
                "box's `bounds` (Solution.outflow and Solution.mass keep the account).",
                RuntimeWarning,
                stacklevel=checks.user_stacklevel(),
            )


# --------------------------------------------------------------------- the representation
class GridRepresentation(Representation):
    """A density on its grid: spectral on the circle and S² (refined by zero-padding, exact for band-limited data),
    finite volumes in R^d. Resolved while the monitor says so (``Settings.monitor``); stops where it cannot refine."""

    name = "grid"
    options = frozenset({"method", "dt", "cfl", "refine", "max_n", "rtol", "atol", "monitor", "strategy"})
    accuracy = "resolved on its grid (spectral tail below the monitor's tail_tol, no negative values)"

    def refusal(self, model, domain, start=None):
        if start is not None and start.grid is None:  # a point frame (Lagrangian measure, particles): no grid values
            return f"a grid starts from a Density, not a {type(start).__name__}"
        return None

    @staticmethod
    def defaults(domain, settings: Settings, first: bool, start_resolution: int):
        """(method, dt, cfl, refine, max_n) of this run, the domain's defaults where not given."""
        method = settings.method if first and settings.method is not None else domain.default_method
        dt = settings.dt if first else None
        cfl = domain.default_cfl(method in ADAPTIVE) if settings.cfl is None else settings.cfl
        refinable = domain.default_max_n is not None
        refine = refinable if settings.refine is None else settings.refine
        max_n = (domain.default_max_n or start_resolution) if settings.max_n is None else settings.max_n
        return method, dt, cfl, refine, max(int(max_n), start_resolution)

    def check(self, settings: Settings, model, start, t0: float, first: bool) -> None:
        """Refuse a refinement finite volumes cannot do, a ``max_n`` below the start, ``dt`` with an adaptive method,
        a method without an integrating-factor form for the noise's DΔ (which the steps integrate exactly), an
        initial state the domain refuses, and whatever the problem itself refuses (its strategy, its right-hand side:
        e.g. USA whose unscaled kernel overflows), by building it as :meth:`run` does (milliseconds)."""
        domain = start.domain
        if settings.refine and domain.default_max_n is None:
            raise ValueError("finite-volume grids are not refined: pass refine=False and a finer grid.")
        if settings.max_n is not None and settings.max_n < start.grid.n:
            raise ValueError(f"`max_n` must be an integer >= the initial resolution {start.grid.n}, "
                             f"got {settings.max_n!r}.")
        method = settings.method if first and settings.method is not None else domain.default_method
        if settings.dt is not None and method in ADAPTIVE:
            raise ValueError(f"`dt` fixes the step of 'rk4'/'ssprk3'; method {method!r} chooses its own.")
        noise = float(model.noise)
        refusal = integrating_factor_refusal(method) if noise else None
        if refusal is not None:
            raise ValueError(f"`method` {method!r} cannot step a noisy model (D = {noise:g}) on a grid, whose steps "
                             f"integrate DΔ exactly by an integrating factor: {refusal}.")
        domain.check_initial(start)
        _, _, _, refine, max_n = self.defaults(domain, settings, first, start.grid.n)
        GridProblem(model, start.grid, settings.strategy, refine, max_n, t0=t0)

    def run(self, model, start, t0, t1, t_eval, settings, hooks, first):
        domain = start.domain
        method, dt, cfl, refine, max_n = self.defaults(domain, settings, first, start.grid.n)
        problem = GridProblem(model, start.grid, settings.strategy, refine, max_n, t0=t0)
        resolution = ResolutionTracker(problem, settings.monitor)
        history = HistoryTracker(problem, resolution)
        reason = settings.monitor.check_state(start.grid, start.values)
        if reason is not None:  # refused: the initial density is bad input, nothing to integrate
            raise ResolutionError(
                t0, f"the initial density is not resolved: {reason}", None, initial=True,
                hint="Sample it on a finer grid (refinement by zero-padding cannot recover data that was never "
                "sampled)" + (", or loosen the monitor's tail_tol (ResolutionMonitor; [time] tail_tol in a study file)."
                              if domain.default_max_n is not None else "."))
        tol = settings.monitor.outflow_tol  # the stop never comes before the warning: a user who raised the
        stop = max(settings.monitor.outflow_stop, tol)  # warning's threshold accepts that loss
        outflow = None if domain.conserves_mass else OutflowTracker(problem, tol, stop)
        trackers = [resolution, history] + ([] if outflow is None else [outflow])
        trackers += hooks.for_part(problem.frame)
        integrator = Integrator(problem, method, dt=dt, cfl=cfl, rtol=settings.rtol, atol=settings.atol,
                                trackers=trackers)
        y0 = np.array(start.values)
        status, message, hint, t_reached, y = run_to_end(
            integrator, t0, y0, t_eval, t1, "the grid reached the end of the interval",
            lambda: (history.out_t[-1], history.out_d[-1].values) if history.out_t else None)
        return Part("grid", list(history.out_t), list(history.out_d), status, message, float(t_reached), problem.frame(t_reached, y),
                    method, problem.strategy, integrator.nfev, integrator.nsteps, history.t_steps,
                    history.mass_steps, history.energy_steps, problem.refinements, hint,
                    outflow=0.0 if outflow is None else float(outflow.lost))
