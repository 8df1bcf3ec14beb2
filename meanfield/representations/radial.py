r"""What the pre/peri-LN densities on S^{d-1} × (0, ∞) share, whatever their angular part (docs/MATH.md §10).

Pre- and peri-LN tokens x = rθ carry a radius r > 0; their densities are held in s = log r on cells of an interval
[log r_min, log r_max] with zero flux through its two ends (``meanfield.solvers.cylinder``: the circle S¹ × (0, ∞);
``meanfield.solvers.zonal_cylinder``: the zonal S^{d-1} × (0, ∞), any d). Both are advanced the same way, stated here once:

- :class:`RadialGuard` — after every step: mass in the :data:`GUARD_CELLS` outer cells of either end (the law's
  radii leave the interval, where the zero-flux walls would hold them: a wrong answer), a non-finite state, a negative
  part beyond the monitor's ``neg_tol``, the angular spectral tail beyond ``tail_tol`` (the grid's ``resolution``):
  each stops the run at the last good state (status RESOLUTION_LOST, never a silent wrong answer);
- :class:`RadialRepresentation` — the representation of such a product domain on the one
  :class:`~meanfield.integrate.Integrator`: its refusals, the check of the initial law (:class:`RadiusRangeError`
  where it has mass at the walls) and the run; a subclass gives its heads' reader and its problem.

The grids answer ``radii``, ``r_edges``, ``refine_words`` (which resolutions to raise, in words), ``mass(values)``,
``s_masses(values)`` (the mass of each cell of s, summed over the angles, for any rows of the values) and
``resolution(values, tail_tol)``.
"""

from __future__ import annotations

import abc
from dataclasses import replace

import numpy as np

from ..core import checks
from ..density import Density
from ..integrate import Integrator, OutputTracker, Problem, Status, StopIntegration, Tracker
from ..integrate.monitor import ResolutionError, ResolutionMonitor
from .base import Part, Representation, Settings, own_domain_refusal, run_to_end

__all__ = ["RadiusRangeError", "RadialGuard", "GuardedProblem", "RadialRepresentation", "GUARD_CELLS", "NEG_TOL",
           "METHODS", "bound_words", "initial_values", "view_settings", "raise_for_walls"]

#: cells at each end of the s-interval whose mass stops a run (mass there feels the zero-flux wall within a step)
GUARD_CELLS = 2
#: the default largest negative mass, relative to the total, before a run stops: the centred face values in s
#: undershoot in the tails of an under-resolved law in s (measured on the cylinder, a Gaussian in s of standard
#: deviation σ moved by pre-LN to t = 1: negative mass 4e-7 at σ/Δs = 7.7, 1e-10 at 15, 5e-15 at 31, while the L1 error
#: is 3e-3, 7e-4, 2e-4): the run stops where the law has fewer than about 7 cells per standard deviation in s
NEG_TOL = 1e-6
#: time integrators (:mod:`meanfield.integrate`) of the radial representations
METHODS = ("rk4", "ssprk3")


class RadiusRangeError(ValueError):
    """Mass reached the outer cells of the radius interval: the law of the radii leaves [r_min, r_max].

    Attributes
    ----------
    t : float
        The time of the last state inside (the partial solution ends there; the initial time where ρ0 itself
        puts mass there).
    side : {"inner", "outer"}
        Which end: r_min ("inner") or r_max ("outer").
    mass : float
        The mass in the guard cells of that end.
    solution : object or None
        What was computed up to ``t`` (None where ρ0 was refused).
    """

    def __init__(self, message: str, t: float, side: str, mass: float, solution=None):
        super().__init__(message)
        self.t, self.side, self.mass, self.solution = float(t), side, float(mass), solution


def bound_words(norm, head_list) -> str:
    """The words of a guard's stop on the radii's bound: |ṙ| <= Σ|c_h| (SA pre-LN) or 1 (peri-LN); none for USA
    (``norm``, ``head_list``: what :func:`meanfield.models.normalization.radial_zonal_heads` returns)."""
    if any(not normalized for _, _, normalized in head_list):
        return ""
    U = norm.speed_bound(sum(abs(c) for _, c, _ in head_list))  # |ṙ| <= |ẋ|, |A| <= Σ|c_h| (SA)
    return (f" (|dr/dt| <= {U:g} here: a law supported in [r_0, r_1] at t0 stays in "
            f"[r_0 − {U:g}(t − t0), r_1 + {U:g}(t − t0)])")


class RadialGuard(Tracker):
    """After every accepted step: mass in the guard cells (:class:`RadiusRangeError`'s words), finiteness, the sign
    and the angular tail (:class:`~meanfield.integrate.monitor.ResolutionError`'s); remembers the last good state, the largest
    mass drift and the smallest step. ``probe``: called with every accepted state (a problem that measures its CFL
    speeds there)."""

    def __init__(self, grid, monitor: ResolutionMonitor, edge_tol: float, bound_words: str, probe=None):
        self.grid, self.monitor, self.edge_tol, self.bound_words = grid, monitor, edge_tol, bound_words
        self.probe = probe
        self.t_good = None
        self.y_good = None
        self.max_mass_drift = 0.0
        self.min_step = np.inf
        self.mass0 = None
        self.found = None  # (kind, message, side, mass) of the last refused candidate

    def problem(self, t, y):
        """(kind, message, side, mass) of what is wrong with state y, or None."""
        g = self.grid
        for side, rows in (("inner", y[:GUARD_CELLS]), ("outer", y[-GUARD_CELLS:])):
            m = float(np.sum(g.s_masses(np.abs(rows))))
            if not m <= self.edge_tol:
                r = g.r_edges[GUARD_CELLS] if side == "inner" else g.r_edges[-GUARD_CELLS - 1]
                where = f"r < {r:.6g}" if side == "inner" else f"r > {r:.6g}"
                msg = (f"at t = {t:.6g} the law puts mass {m:.3g} in the {side} guard cells ({where}) of `radii` = "
                       f"({g.radii[0]:g}, {g.radii[1]:g}), above edge_tol = {self.edge_tol:g}: the tokens' radii "
                       f"leave the interval, where the zero-flux wall would hold them (a wrong answer). Widen "
                       f"`radii`{self.bound_words}.")
                return "edge", msg, side, m
        if not np.all(np.isfinite(y)):
            return "resolution", "the density has non-finite values", None, None
        total = float(np.sum(g.s_masses(y)))
        negative = float(np.sum(g.s_masses(np.minimum(y, 0.0))))
        if negative < -self.monitor.neg_tol * total:
            return ("resolution", f"the density's negative part has mass {negative:.3g} (neg_tol = "
                    f"{self.monitor.neg_tol:g} of the mass): refine {g.refine_words}", None, None)
        reason = g.resolution(y, self.monitor.tail_tol)
        return None if reason is None else ("resolution", reason, None, None)

    def initialize(self, t, y):
        self.t_good, self.y_good, self.mass0 = t, y.copy(), self.grid.mass(y)
        self.found = None

    def check(self, t, y):
        """The reason a candidate state is refused (the problem's ``reject`` then stops there), or None."""
        self.found = self.problem(t, y)
        return None if self.found is None else self.found[1]

    def handle(self, t, y, h):
        self.t_good, self.y_good = t, np.array(y, copy=True)
        self.max_mass_drift = max(self.max_mass_drift, abs(self.grid.mass(y) - self.mass0))
        self.min_step = min(self.min_step, float(h))
        if self.probe is not None:
            self.probe(y)


class GuardedProblem(Problem):
    """A radial problem whose rejected steps stop at the last good state with the :class:`RadialGuard`'s reason and
    the hint of its kind (``hints``: "edge", "resolution"); ``FloatingPointError`` for a non-finite step the guard
    did not name. ``words``: what the state is, in the error's words."""

    #: the guard whose check rejected the step (:class:`RadialGuard`; set by the representation's run)
    guard = None
    hints: dict = {}
    words = "the density"
    #: whether the CFL speeds are measured at every accepted state (the guard then calls :meth:`probe`)
    probe_accepted = False

    def reject(self, t, y, reason):
        """Stop at the last accepted state (t, y) where the guard found mass at the walls or a lost resolution;
        ``FloatingPointError`` for a non-finite step."""
        found = None if self.guard is None else self.guard.found
        if found is not None:
            raise StopIntegration(t, y, found[1], hint=self.hints.get(found[0]))
        raise FloatingPointError(f"{self.words} became non-finite in the step from t = {t:.6g} ({reason}); "
                                 "reduce `cfl` or `dt`.")


class RadialRepresentation(Representation):
    """A density on S^{d-1} × (0, ∞) of one product domain (module docstring), on the one integrator: it stops
    (status RESOLUTION_LOST) where mass reaches the guard cells (the monitor's ``edge_tol``;
    ``Solution.diagnostics["edge"]`` = (side, mass)), where the angular tail or the negative part passes
    ``tail_tol``/``neg_tol`` (default ``neg_tol`` :data:`NEG_TOL` unless a monitor is given);
    ``diagnostics["mass_drift"]`` is the largest |mass − mass(0)| over the accepted steps, ``diagnostics["min_step"]``
    the smallest step taken.

    A subclass gives ``name``, ``domain_words``, ``accuracy``, :meth:`heads` and :meth:`problem` (a
    :class:`GuardedProblem`)."""

    options = frozenset({"method", "dt", "cfl", "monitor"})
    #: the default CFL number (RK4 is stable to about 0.9 for the spectral part)
    default_cfl = 0.2

    @abc.abstractmethod
    def heads(self, model, domain) -> tuple:
        """(normalisation, [(β, c, normalized)]) of ``model`` on ``domain``, or ``ValueError`` naming what is
        refused."""

    @abc.abstractmethod
    def problem(self, model, grid):
        """The :class:`GuardedProblem` of the continuity equation on ``grid`` (its ``guard`` is set to the run's
        :class:`RadialGuard`, which calls its ``probe`` at every accepted state where ``probe_accepted``)."""

    def refusal(self, model, domain, start=None):
        why = own_domain_refusal(self, domain)
        if why is not None:
            return why
        try:
            self.heads(model, domain)
        except ValueError as e:
            return str(e)
        return None

    @staticmethod
    def monitor(settings) -> ResolutionMonitor:
        """The monitor given, else the radial one: ``neg_tol`` = :data:`NEG_TOL`."""
        return settings.monitor if "monitor" in settings.given else ResolutionMonitor(neg_tol=NEG_TOL)

    def _guard(self, model, start, settings, probe=None):
        monitor = self.monitor(settings)
        return RadialGuard(start.grid, monitor, monitor.edge_tol, bound_words(*self.heads(model, start.domain)),
                           probe)

    def check(self, settings, model, start, t0, first):
        """Refuse a method other than "rk4"/"ssprk3", and an initial law with mass at the walls
        (:class:`RadiusRangeError`)."""
        method = settings.method if first and settings.method is not None else "rk4"
        if method not in METHODS:
            raise ValueError(f"`method` must be one of {METHODS} on the {self.domain_words}, got {method!r}.")
        found = self._guard(model, start, settings).problem(t0, np.asarray(start.values))
        if found is not None and found[0] == "edge":
            _, message, side, mass = found
            raise RadiusRangeError(f"`rho0`: {message}", t0, side, mass)

    def run(self, model, start, t0, t1, t_eval, settings, hooks, first):
        grid = start.grid
        method = settings.method if first and settings.method is not None else "rk4"
        dt = settings.dt if first else None
        cfl = self.default_cfl if settings.cfl is None else settings.cfl
        problem = self.problem(model, grid)
        guard = self._guard(model, start, settings, problem.probe if problem.probe_accepted else None)
        y0 = np.array(start.values)
        found = guard.problem(t0, y0)
        if found is not None:
            raise ResolutionError(t0, f"`rho0`: {found[1]}", initial=True)
        problem.guard = guard

        def frame(t, y):
            return Density(grid, y, check=False, t=t)

        outputs = OutputTracker()
        integ = Integrator(problem, method, dt=dt, cfl=cfl, trackers=[guard, outputs] + hooks.for_part(frame))
        status, message, hint, t_reached, y = run_to_end(
            integ, t0, y0, t_eval, t1, f"the {self.name} density reached the end of the interval",
            lambda: (outputs.times[-1], outputs.states[-1]) if outputs.times else None)
        diagnostics = {"mass_drift": guard.max_mass_drift, "min_step": guard.min_step}
        if status is Status.RESOLUTION_LOST and guard.found is not None and guard.found[0] == "edge":
            diagnostics["edge"] = (guard.found[2], guard.found[3])  # (side, mass) where the law reached the walls
        return Part(self.name, list(outputs.times), [frame(t, s) for t, s in zip(outputs.times, outputs.states)],
                    status, message, float(t_reached), frame(t_reached, y), method, "spectral", integ.nfev,
                    integ.nsteps, hint=hint, diagnostics=diagnostics)


# ---------------------------------------------------------------------------------- the views' shared arguments
def initial_values(rho0, grid, variables: str, shape_words: str, coordinates: str) -> np.ndarray:
    """The cell values of ``rho0`` on a radial ``grid`` (a callable rho0(``variables``) averaged over the cells, or the
    values themselves, of shape ``shape_words``), checked finite, >= 0 (a density of ``coordinates``) and of positive
    mass, normalised to mass 1: the start of the views ``solve_radial`` and ``solve_zonal_radial``."""
    if callable(rho0):
        with np.errstate(all="raise"):
            try:
                y = np.array(grid.cell_averages(rho0), dtype=float)
            except FloatingPointError as e:
                raise ValueError(f"`rho0` raised a floating-point error on the grid {grid!r}: {e}.") from None
    else:
        y = np.array(rho0, dtype=float)
        if y.shape != grid.shape:
            raise ValueError(f"`rho0` must be a callable rho0({variables}) or the cell values of shape {shape_words} = "
                             f"{grid.shape}, got shape {y.shape}.")
    if not np.all(np.isfinite(y)):
        raise ValueError("`rho0` has non-finite values on the grid (NaN or inf).")
    if np.any(y < 0):
        raise ValueError(f"`rho0` must be >= 0 (a density of ({coordinates})), got a value {float(y.min()):.3g}.")
    mass = grid.mass(y)
    if not mass > 0:
        raise ValueError(f"`rho0` has zero mass on {grid!r}: no part of it lies inside `radii` = {grid.radii}.")
    return y / mass


def view_settings(method: str, edge_tol: float, monitor, cfl: float, dt) -> Settings:
    """The :class:`~.base.Settings` of a radial view's keywords, each checked (naming it): ``method`` of
    :data:`METHODS`, ``edge_tol`` > 0 into the monitor (default ``neg_tol`` :data:`NEG_TOL`), ``cfl`` > 0, ``dt``."""
    if method not in METHODS:
        raise ValueError(f"`method` must be one of {METHODS}, got {method!r}.")
    edge_tol = checks.positive(edge_tol, "edge_tol")
    monitor = ResolutionMonitor(neg_tol=NEG_TOL) if monitor is None else monitor
    if not isinstance(monitor, ResolutionMonitor):
        raise TypeError(f"`monitor` must be a meanfield.integrate.monitor.ResolutionMonitor, got {type(monitor).__name__}.")
    monitor = replace(monitor, edge_tol=edge_tol)
    cfl = checks.positive(cfl, "cfl")
    dt = None if dt is None else checks.positive(dt, "dt")
    return Settings(method=method, dt=dt, cfl=cfl, monitor=monitor, given=frozenset({"monitor"}))


def raise_for_walls(sol, out) -> None:
    """A view's errors: :class:`RadiusRangeError` where the run reached the walls (``diagnostics["edge"]``),
    :class:`~meanfield.integrate.monitor.ResolutionError` where it lost resolution, each carrying ``out``."""
    if "edge" in sol.diagnostics:
        side, mass = sol.diagnostics["edge"]
        raise RadiusRangeError(sol.message, sol.t_reached, side, mass, out)
    if sol.status is Status.RESOLUTION_LOST:
        raise ResolutionError(sol.t_reached, sol.message, out)
