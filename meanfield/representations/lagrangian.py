r"""The Lagrangian representations: adaptive panels and fixed nodes (docs/MATH.md §6).

- ``panels`` (:class:`PanelsRepresentation`): Gauss panels of the initial domain, bisected where the flow map
  steepens, the field recorded by its moments (:mod:`meanfield.lagrangian.panels`); zonal models on the domains
  that build panels (``Domain.panels``: the circle, S²). They state a bound on the moments' error and stop
  (``max_points``, or a map steeper than float64 resolves) rather than exceed it.
- ``nodes`` (:class:`NodesRepresentation`): the points of a Lagrangian measure as fixed characteristics
  (:class:`meanfield.lagrangian.LagrangianProblem`), any model and domain: an exact weak solution for the discrete
  measure it starts from (a weighted particle system), never losing resolution; its distance to the continuum
  solution is that of its initial quadrature, carried by the flow, and is not certified.
"""

from __future__ import annotations

from ..integrate import FIXED, Integrator, Status, StopIntegration
from ..lagrangian import LagrangianMeasure, LagrangianProblem, start as start_nodes
from ..lagrangian.panels import NOISE_REFUSAL, PanelProblem, panels_refusal
from ..domains.base import REPULSION_REFUSAL
from ..models import repulsive
from ..models.normalization import density_refusal
from .base import Part, Representation

__all__ = ["PanelsRepresentation", "NodesRepresentation"]


class PanelsRepresentation(Representation):
    """Adaptive Gauss panels from a grid density (module docstring)."""

    name = "panels"
    options = frozenset({"rtol", "atol", "lagrangian_tol", "max_points", "strategy"})
    strategies = ("spectral",)
    accuracy = ("each panel's contribution to the error of the kernel's moments below lagrangian_tol; the moments "
                "to 1e3·lagrangian_tol")

    def refusal(self, model, domain, start=None):
        if start is not None and start.grid is None:
            return f"panels start from a grid Density, not a {type(start).__name__}"
        if repulsive(model):
            return REPULSION_REFUSAL
        return panels_refusal(model, domain)

    @staticmethod
    def _problem(model, start, settings, first_step):
        return PanelProblem(model, start, order=None, panels=None, tol=settings.lagrangian_tol,
                            rtol=settings.rtol, atol=settings.atol, max_points=settings.max_points,
                            first_step=first_step)

    def check(self, settings, model, start, t0, first):
        """Whatever the panels' problem refuses (e.g. USA whose unscaled kernel overflows), by building it as
        :meth:`run` does."""
        self._problem(model, start, settings, 0.01)

    def run(self, model, start, t0, t1, t_eval, settings, hooks, first):
        problem = self._problem(model, start, settings, min(0.01, t1 - t0))
        trackers = [problem] + hooks.for_part(lambda t, y: problem.frame(t))
        integrator = Integrator(problem, "dop853", trackers=trackers, stepper=problem.stepper)
        status, message, hint, t = Status.SUCCESS, "the Lagrangian panels reached the end of the interval", None, t1
        try:
            integrator.run(t0, problem.state(), t_eval, t1)
        except StopIntegration as stop:
            status, message, t = stop.status, stop.reason, stop.t
            hint = ("Loosen lagrangian_tol ([time] lagrangian_tol in a study file), raise max_points, or go on with "
                    "fixed nodes: representation=('grid', 'panels', 'nodes'), the default chain.")
        except KeyboardInterrupt:
            status, message = Status.INTERRUPTED, "interrupted (Ctrl-C)"
            t = problem.frames[-1].t if problem.frames else t0
        return Part("panels", [f.t for f in problem.frames], list(problem.frames), status, message, float(t), problem.frame(t), "dop853", "spectral",
                    integrator.nfev, integrator.nsteps, hint=hint)


class NodesRepresentation(Representation):
    """Fixed Lagrangian nodes from a grid density (its nodes) or a Lagrangian measure (its points)."""

    name = "nodes"
    options = frozenset({"method", "dt", "rtol", "atol", "strategy"})
    strategies = ("spectral", "quadrature")
    accuracy = ("an exact weak solution for its discrete initial measure (its points as weighted particles); the "
                "distance to the continuum solution is its initial quadrature's, carried by the flow, not certified")

    def refusal(self, model, domain, start=None):
        if start is not None and start.grid is None and not start.lagrangian:
            return f"nodes start from a Density or a LagrangianMeasure, not a {type(start).__name__}"
        if domain.chart is None:
            return f"the {domain.name} has no Lagrangian chart (meanfield.domains: Domain.chart)"
        why = density_refusal(model)  # the field's divergence along the nodes is post-LN attention's
        if why is not None:
            return why
        if repulsive(model):
            return REPULSION_REFUSAL
        return NOISE_REFUSAL if model.noise else None

    def _problem(self, model, start, settings, t0):
        frame = start if start.lagrangian else start_nodes(start)
        if frame.t != t0:
            frame = LagrangianMeasure(frame.state, frame.weights, frame.log_density, frame.domain, frame.mesh, t0,
                                      check=False)
        strategy = settings.strategy if settings.strategy in self.strategies else "auto"
        return LagrangianProblem(model, frame, strategy)

    def check(self, settings, model, start, t0, first):
        """Fixed steps need a step: the nodes have no CFL bound to choose one; and whatever the nodes' problem
        refuses (e.g. USA whose unscaled kernel overflows), by building it as :meth:`run` does and evaluating its
        rate at the start (one field evaluation: the sums are chosen at the first)."""
        method = settings.method if first else None
        if method in FIXED and settings.dt is None:
            raise ValueError(f"`method` {method!r} advances Lagrangian nodes by fixed steps: give `dt` (they have no "
                             "stability bound to choose one), or use an adaptive method.")
        problem = self._problem(model, start, settings, t0)
        problem.rate(problem.pack(problem.start), t0)

    def run(self, model, start, t0, t1, t_eval, settings, hooks, first):
        method = settings.method if first and settings.method is not None else "dop853"
        problem = self._problem(model, start, settings, t0)
        status, message, t, y, integrator = problem.run(
            t0, t1, t_eval, method=method, dt=settings.dt if first else None, rtol=settings.rtol, atol=settings.atol,
            trackers=hooks.for_part(problem.frame))
        last = problem.frames[-1] if y is None else problem.frame(t, y)
        return Part("nodes", [f.t for f in problem.frames], list(problem.frames), status, message, float(t), last, method, problem.strategy,
                    integrator.nfev, integrator.nsteps)
