r"""Densities driven by a common noise: the stochastic continuity equation on a grid (MATH.md §13).

Conditioned on the common path W (:class:`meanfield.models.common_noise.CommonPath`), the density solves

    dμ + div(μ X[μ]) dt + Σ_k div(μ P_x Σ_k x) ∘ dW^k = D Δμ dt,

the mean-field limit of the tokens of :func:`particles.simulate` with the same ``common_noise``. The scheme is the
particles' (:mod:`meanfield.models.common_noise`): on the path's grid t_j = t0 + jh the density is pushed forward by
the noise map u ↦ e^A u/|e^A u| (``Grid.linear_transport``: on the circle a shift of the Fourier coefficients for
a rotation, exact, and the interpolant at the preimages times the Jacobian otherwise; on S² the Wigner rotation of
the coefficients for a rotation, and the expansion at the preimages times the Jacobian by ducc0's non-uniform
synthesis otherwise), and between two maps it is
advanced by the noiseless grid problem (:class:`~.grid.GridProblem`: the domain's right-hand side for the strategy,
DΔ by the integrating factor) with RK4 steps that cut each path step into the fewest equal steps <= ``dt``, or <=
the CFL step ``cfl`` × the problem's bound where ``dt`` is not given. The same maps of the same path as the
particles: one realisation of the density and of n tokens can be compared by W1 path by path.

Every Σ_k = 0: the run is today's grid run (the same problem and :class:`~meanfield.integrate.Integrator` through
the output times as :func:`meanfield.solve` with ``representation="grid"``), bit for bit. Grids without
``linear_transport`` (R^d finite volumes; the zonal, cylinder and sequence grids) are refused with the grid's reason.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core import checks
from ..density import Density
from ..integrate import Integrator, OutputTracker, Status, StopIntegration
from ..integrate.steppers import FIXED, FixedStepper
from ..models import as_model, heads
from ..models.common_noise import CommonNoise, interval_maps
from ..integrate.monitor import ResolutionMonitor
from .grid import GridProblem, ResolutionTracker

__all__ = ["solve_common_noise", "CommonNoiseSolution"]


@dataclass(frozen=True)
class CommonNoiseSolution:
    """One realisation of the stochastic continuity equation (:func:`solve_common_noise`).

    Attributes
    ----------
    t : ndarray, shape (T,)
        The output times reached.
    densities : list of Density
        The density at each of them.
    status : Status
        SUCCESS, or RESOLUTION_LOST where the monitor refused a state (``message`` says why; the outputs stop at the
        last one reached).
    message : str
    nsteps, nfev : int
        Drift steps and right-hand-side evaluations.
    method, strategy : str
    common_noise : CommonNoise or None
        None where every Σ_k was 0 (today's run).
    """

    t: np.ndarray
    densities: list
    status: Status
    message: str
    nsteps: int
    nfev: int
    method: str
    strategy: str
    common_noise: object

    @property
    def values(self) -> np.ndarray:
        """The nodal values at the outputs, shape (T,) + grid shape."""
        return np.stack([d.values for d in self.densities])


def solve_common_noise(model, mu0: Density, t_eval, common_noise: CommonNoise, *, method: str = "rk4",
                       dt: float | None = None, cfl: float | None = None, strategy: str = "auto",
                       monitor: ResolutionMonitor | None = None) -> CommonNoiseSolution:
    r"""One realisation of dμ + div(μX[μ]) dt + Σ_k div(μ P_xΣ_k x) ∘ dW^k = DΔμ dt on the common path (module
    docstring).

    Parameters
    ----------
    model : attention model or Transformer
        Its ``noise`` is the idiosyncratic D (MATH.md §6); constant weights.
    mu0 : Density
        On a grid with ``linear_transport`` (the circle, S²).
    t_eval : array_like, shape (T,)
        Increasing output times on the path's grid; ``t_eval[0]`` is the start.
    common_noise : CommonNoise
        The matrices Σ_k (2×2 on the circle, 3×3 on S²) and the path, the one given to :func:`particles.simulate`.
    method : {"rk4", "ssprk3"}
    dt : float, optional
        Largest drift step (default: the CFL step).
    cfl : float, optional
        CFL factor (default the domain's, 0.1).
    strategy : str
        Field strategy (:mod:`meanfield.kernels.strategies`).
    monitor : ResolutionMonitor, optional
        Checks every state at the path's grid (finite, non-negative, resolved).

    Returns
    -------
    CommonNoiseSolution
    """
    model = as_model(model)
    heads(model)
    if getattr(mu0, "grid", None) is None:  # a frame that holds grid values (a Density), not points
        raise TypeError(f"`mu0` must be a Density on a grid, got {type(mu0).__name__}.")
    if not isinstance(common_noise, CommonNoise):
        raise TypeError(f"`common_noise` must be a CommonNoise, got {type(common_noise).__name__}.")
    grid = mu0.grid
    why = grid.linear_transport_refusal()
    if why is not None:
        raise ValueError(f"`common_noise`: {why}.")
    if common_noise.dim != grid.dim:
        raise ValueError(f"`common_noise`: its matrices Σ_k are {common_noise.dim}×{common_noise.dim} but the density "
                         f"lives in R^{grid.dim}.")
    if method not in FIXED:
        raise ValueError(f"`method` must be one of {tuple(FIXED)} (fixed steps on the path's grid), got {method!r}.")
    if model.time_dependent:
        raise ValueError("`model`: common noise with time-dependent weights is not implemented (the layer boundaries "
                         "would have to fall on the path's grid); give constant weights.")
    t_eval = checks.output_times(t_eval)
    js = common_noise.path.index(t_eval, "t_eval")
    dt = None if dt is None else checks.positive(dt, "dt")
    cfl = grid.domain.default_cfl(False) if cfl is None else checks.positive(cfl, "cfl")
    monitor = ResolutionMonitor() if monitor is None else monitor
    t0 = float(t_eval[0])
    problem = GridProblem(model, grid, strategy, refine=False, max_n=grid.n, t0=t0)
    y0 = np.array(mu0.values, dtype=float)
    reason = monitor.check_state(grid, y0)
    if reason is not None:
        raise ValueError(f"`mu0` is not resolved: {reason}.")

    if common_noise.is_zero:  # today's grid run, through the same integrator
        outputs = OutputTracker()
        integrator = Integrator(problem, method, dt=dt, cfl=cfl, trackers=[ResolutionTracker(problem, monitor),
                                                                            outputs])
        status, message = Status.SUCCESS, "the grid reached the end of the interval"
        try:
            integrator.run(t0, y0, t_eval)
        except StopIntegration as stop:
            status, message = stop.status, stop.reason
        return _solution(grid, outputs.times, outputs.states, status, message, integrator.nsteps, integrator.nfev,
                         method, problem.strategy, None)

    path, stages = common_noise.path, problem.stages()
    h_path = path.dt
    times, states = [t0], [y0.copy()]
    y, nsteps, nfev = y0, 0, 0
    status, message = Status.SUCCESS, "the grid reached the end of the interval"
    problem.probe(y)

    def cfl_step():
        h = cfl * problem.max_step()
        problem.begin_step()
        return h

    for a, b in zip(js[:-1], js[1:]):
        maps = interval_maps(common_noise, int(a), int(b))
        for i, j in enumerate(range(int(a), int(b))):
            if maps[i] is not None:
                y = grid.linear_transport(y, maps[i])
            t = path.t0 + j * h_path
            stepper = FixedStepper(problem.rate, t, y, t + h_path, method=method,
                                   h=dt if dt is not None else cfl_step, subdivide=dt is not None, stages=stages)
            while stepper.status == "running":
                stepper.step()
                nsteps += 1
            nfev += stepper.nfev
            y = stepper.y
            if maps[-1] is not None and j == int(b) - 1:
                y = grid.linear_transport(y, maps[-1])
            reason = monitor.check_state(grid, y)
            if reason is not None:
                status, message = Status.RESOLUTION_LOST, f"at t = {t + h_path:.6g}: {reason}"
                break
        if status is not Status.SUCCESS:
            break
        times.append(path.t0 + int(b) * h_path)
        states.append(np.array(y, copy=True))
    return _solution(grid, times, states, status, message, nsteps, nfev, method, problem.strategy, common_noise)


def _solution(grid, times, states, status, message, nsteps, nfev, method, strategy, common):
    dens = [Density(grid, v, check=False, t=t) for t, v in zip(times, states)]
    return CommonNoiseSolution(np.asarray(times, dtype=float), dens, status, message, int(nsteps), int(nfev), method,
                               strategy, common)
