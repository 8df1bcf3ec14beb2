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
        return Part(self.name, list(outputs.times), [frame(t, s) for t, s in zip(outputs.times, outputs.states)],
                    status, message, float(t_reached), frame(t_reached, y), method, "spectral", integ.nfev,
                    integ.nsteps, hint=hint)


class FrequencyRepresentation(Representation):
    """Placeholder (filled below)."""

    name = "frequencies"
    domain_words = "circle S¹ × R_ω (a FrequencyGrid)"
    options = frozenset({"dt", "cfl", "monitor", "refine"})
    accuracy = ""

    def refusal(self, model, domain, start=None):
        return _own(self, domain)

    def run(self, *a, **k):
        raise NotImplementedError
