r"""The representations of the product domains (:mod:`meanfield.domains.products`) on the one integrator.

- ``cylinder`` (:class:`CylinderRepresentation`): pre/peri-LN densities of (θ, s = log r) on S¹ × (0, ∞), a
  :class:`~meanfield.Density` on a :class:`~meanfield.cylinder.CylinderGrid` (spectral in θ, finite volumes in s;
  :mod:`meanfield.cylinder`, docs/MATH.md §10.1). It stops where mass reaches the guard cells at either end of the
  radii (the monitor's ``edge_tol``), where the angular tail or the negative part passes the monitor's
  ``tail_tol``/``neg_tol`` (default ``neg_tol`` :data:`meanfield.cylinder.NEG_TOL` unless a monitor is given).
- ``frequencies`` (:class:`FrequencyRepresentation`): one circle density per node of a frequency law's quadrature,
  coupled through the marginal, a :class:`~meanfield.frequencies.FrequencyDensity` (:mod:`meanfield.frequencies`,
  docs/MATH.md §11); the linear part (the rotation −ikω_j, the noise −Dk²) integrated exactly by Lawson's RK4. A node
  that stops being resolved in θ is handed over to atoms (``refine``, default True), else the run stops; the
  ω-resolution bound is checked against the monitor's ``omega_tol``.

Each is the only representation of its domain: :func:`~meanfield.representations.plan` chains it alone.
"""

from __future__ import annotations

import numpy as np

from ..density import Density
from ..integrate import Integrator, OutputTracker, Status, StopIntegration
from ..monitor import ResolutionError, ResolutionMonitor
from .base import Part, Representation

__all__ = ["CylinderRepresentation", "FrequencyRepresentation"]


def _own(rep, domain) -> str | None:
    """Why ``rep`` does not advance densities on ``domain`` (not its product domain), or None."""
    if getattr(domain, "representation", None) != rep.name:
        return f"it advances densities on the {rep.domain_words} only, not on the {getattr(domain, 'name', domain)}"
    return None


def _interrupted(outputs, t0, y0):
    """(t, y) of the last output where Ctrl-C stopped a run."""
    return (outputs.times[-1], outputs.states[-1]) if outputs.times else (t0, y0)


class CylinderRepresentation(Representation):
    """Pre/peri-LN densities on S¹ × (0, ∞) (module docstring)."""

    name = "cylinder"
    domain_words = "cylinder S¹ × (0, ∞) (a CylinderGrid)"
    options = frozenset({"method", "dt", "cfl", "monitor"})
    accuracy = "spectral in θ, second order in s = log r (docs/MATH.md §10.1)"
    #: the default CFL number (RK4 is stable to about 0.9 for the spectral part)
    default_cfl = 0.2

    def refusal(self, model, domain, start=None):
        from ..cylinder import _zonal_heads

        why = _own(self, domain)
        if why is not None:
            return why
        try:
            _zonal_heads(model)
        except ValueError as e:
            return str(e)
        return None

    @staticmethod
    def monitor(settings) -> ResolutionMonitor:
        """The monitor given, else the cylinder's: ``neg_tol`` = :data:`meanfield.cylinder.NEG_TOL`."""
        from ..cylinder import NEG_TOL

        return settings.monitor if "monitor" in settings.given else ResolutionMonitor(neg_tol=NEG_TOL)

    def _guard(self, model, start, settings):
        from ..cylinder import _Guard, _zonal_heads

        kind, head_list = _zonal_heads(model)
        if any(not normalized for _, _, normalized in head_list):
            bound = ""
        else:
            U = 1.0 if kind == "peri" else sum(abs(c) for _, c, _ in head_list)
            bound = (f" (|dr/dt| <= {U:g} here: a law supported in [r_0, r_1] at t0 stays in "
                     f"[r_0 − {U:g}(t − t0), r_1 + {U:g}(t − t0)])")
        monitor = self.monitor(settings)
        return _Guard(start.grid, monitor, monitor.edge_tol, bound)

    def check(self, settings, model, start, t0, first):
        """Refuse a method other than "rk4"/"ssprk3", and an initial law with mass at the walls
        (:class:`~meanfield.cylinder.RadiusRangeError`)."""
        from ..cylinder import METHODS, RadiusRangeError

        method = settings.method if first and settings.method is not None else "rk4"
        if method not in METHODS:
            raise ValueError(f"`method` must be one of {METHODS} on the cylinder, got {method!r}.")
        found = self._guard(model, start, settings).problem(t0, np.asarray(start.values))
        if found is not None and found[0] == "edge":
            _, message, side, mass = found
            raise RadiusRangeError(f"`rho0`: {message}", t0, side, mass)

    def run(self, model, start, t0, t1, t_eval, settings, hooks, first):
        from ..cylinder import RadialProblem

        grid = start.grid
        method = settings.method if first and settings.method is not None else "rk4"
        dt = settings.dt if first else None
        cfl = self.default_cfl if settings.cfl is None else settings.cfl
        guard = self._guard(model, start, settings)
        y0 = np.array(start.values)
        found = guard.problem(t0, y0)
        if found is not None:
            raise ResolutionError(t0, f"`rho0`: {found[1]}", initial=True)
        problem = RadialProblem(model, grid)
        problem.guard = guard

        def frame(t, y):
            return Density(grid, y, check=False)

        outputs = OutputTracker()
        integ = Integrator(problem, method, dt=dt, cfl=cfl, trackers=[guard, outputs] + hooks.for_part(frame))
        status, message, hint, t_reached = Status.SUCCESS, "the cylinder density reached the end of the interval", None, t1
        try:
            t_reached, y = integ.run(t0, y0, t_eval, t1)
        except StopIntegration as stop:
            status, message, hint, t_reached, y = stop.status, stop.reason, stop.hint, stop.t, stop.y
        except KeyboardInterrupt:
            status, message = Status.INTERRUPTED, "interrupted (Ctrl-C)"
            t_reached, y = _interrupted(outputs, t0, y0)
        diagnostics = {"mass_drift": guard.max_mass_drift}
        if status is Status.RESOLUTION_LOST and guard.found is not None and guard.found[0] == "edge":
            diagnostics["edge"] = (guard.found[2], guard.found[3])  # (side, mass) where the law reached the walls
        return Part(self.name, list(outputs.times), [frame(t, s) for t, s in zip(outputs.times, outputs.states)],
                    status, message, float(t_reached), frame(t_reached, y), method, "spectral", integ.nfev,
                    integ.nsteps, hint=hint, diagnostics=diagnostics)


class FrequencyRepresentation(Representation):
    """One circle density per frequency node, coupled through the marginal (module docstring)."""

    name = "frequencies"
    domain_words = "circle S¹ × R_ω (a FrequencyGrid)"
    options = frozenset({"dt", "cfl", "monitor", "refine"})
    accuracy = ("spectral in θ (each node's tail below tail_tol), the ω-quadrature's free-streaming error times the "
                "amplitude below omega_tol (docs/MATH.md §11)")
    #: the default CFL factor (:mod:`meanfield.frequencies`, "Time stepping")
    default_cfl = 0.1

    def refusal(self, model, domain, start=None):
        from ..frequencies import _attention_rhs

        why = _own(self, domain)
        if why is not None:
            return why
        if start is not None:
            try:
                _attention_rhs(model, start.grid.circle)
            except ValueError as e:
                return str(e)
        return None

    def check(self, settings, model, start, t0, first):
        """Refuse the Lorentzian's pole and bands where the field is not first-harmonic (unless the grid asks for
        the Cauchy-noise model), and a start with atoms (a frequency density starts on its grid)."""
        from ..frequencies import _check_masses, _first_harmonic, _tails

        quad = start.grid.quadrature
        if quad.rule in ("pole", "bands") and not start.grid.cauchy_noise and not _first_harmonic(model):
            raise ValueError(
                f"the Lorentzian's {quad.rule} is exact for first-harmonic fields only (β = 0, the Kuramoto field): "
                f"for {model!r} the field's harmonics l >= 2 couple the modes k >= 1 to negative ones, whose "
                f"continuation in ω grows below the real axis, and the {quad.rule} would solve the marginal under "
                "Cauchy noise −γ|k| instead — the same linear rates about the incoherent state, other nonlinear "
                "dynamics (docs/MATH.md §11). For natural frequencies at β > 0 use real nodes "
                "(Lorentzian(γ).quadrature(J), with omega_tol); cauchy_noise=True solves the Cauchy-noise model "
                "knowingly.")
        if np.any(start.as_points):
            raise ValueError("a frequency density starts with every node on its grid, not as atoms.")
        tails = _tails(start.coefficients, start.grid.n)
        if not np.max(tails) <= settings.monitor.tail_tol:
            j = int(np.argmax(tails))
            raise ResolutionError(t0, f"the initial density of node {j} is not resolved on {start.grid.circle!r}: "
                                  f"its spectral tail {tails[j]:.3g} exceeds tail_tol = {settings.monitor.tail_tol:.3g} "
                                  "(use a larger n)", initial=True)
        _check_masses(start.values, start.grid.circle)

    def run(self, model, start, t0, t1, t_eval, settings, hooks, first):
        from ..frequencies import FrequencyDensity, FrequencyProblem, _Monitor, _Outputs
        from ..integrate import FiniteTracker

        grid, quad = start.grid, start.grid.quadrature
        monitor = settings.monitor
        handover = True if settings.refine is None else settings.refine
        problem = FrequencyProblem(model, grid.circle, quad, handover=handover)
        problem.tail_tol = monitor.tail_tol
        y0 = problem.pack(start.coefficients, np.empty((0, grid.n)))
        watch = _Monitor(problem, quad, monitor.tail_tol, monitor.omega_tol)  # the start's tails: check()

        def frame(t, y, state=None):
            as_points, angles, masses = state if state is not None else (
                problem.as_points.copy(), _angles(problem, y), problem.masses.copy())
            return FrequencyDensity(grid, problem.coefficients(y) if state is None else y, as_points, angles, masses,
                                    tuple(problem.handovers))

        outputs = _Outputs(problem)
        dt = settings.dt if first else None
        cfl = self.default_cfl if settings.cfl is None else settings.cfl
        integrator = Integrator(problem, "rk4", dt=dt, cfl=cfl, subdivide=dt is not None,
                                trackers=[FiniteTracker(), watch, outputs] + hooks.for_part(frame))
        status, message, hint, t_reached, last = Status.SUCCESS, "the solver reached the end of the interval", None, \
            t1, None
        try:
            t_reached, last = integrator.run(t0, y0, t_eval, t1)
        except StopIntegration as stop:
            status, t_reached, last, hint = stop.status, stop.t, stop.y, stop.hint
            message = f"stopped at t = {stop.t:.6g}: {stop.reason}" + (f". {stop.hint}" if stop.hint else "")
        except KeyboardInterrupt:
            status, message = Status.INTERRUPTED, "interrupted (Ctrl-C)"
            t_reached = outputs.times[-1] if outputs.times else t0
        if problem.handovers:
            words = "; ".join(f"nodes {list(js)} handed over to atoms at t = {t:.6g}" for t, js in problem.handovers)
            message = f"{words} (they stopped being resolved in θ); {message}"
        frames = [frame(t, C, (p, a, problem.masses.copy())) for t, C, p, a in
                  zip(outputs.times, outputs.coefficients, outputs.as_points, outputs.angles)]
        final = frame(t_reached, last) if last is not None else (frames[-1] if frames else frame(t0, y0))
        diagnostics = {"max_tail": watch.max_tail, "omega_error": watch.omega_error,
                       "handovers": tuple(problem.handovers)}
        return Part(self.name, list(outputs.times), frames, status, message, float(t_reached), final, "rk4",
                    "lawson", integrator.nfev, integrator.nsteps, hint=hint, diagnostics=diagnostics)


def _angles(problem, y):
    """The atoms' angles of every node (NaN rows for nodes on the grid), as the outputs record them."""
    angles = np.full((problem.weights.size, problem.n), np.nan)
    angles[problem.on_points] = problem.unpack(y)[1]
    return angles
