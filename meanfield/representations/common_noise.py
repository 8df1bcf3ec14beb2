r"""Densities driven by a common noise: the stochastic continuity equation on a grid (MATH.md §13).

Conditioned on the common path W (:class:`meanfield.models.common_noise.CommonPath`), the density solves

    dμ + div(μ X[μ]) dt + Σ_k div(μ P_x Σ_k x) ∘ dW^k = D Δμ dt,

the mean-field limit of the tokens of :func:`particles.simulate` with the same ``common_noise``. The scheme is the
particles' (:mod:`meanfield.models.common_noise`): on the path's grid t_j = t0 + jh the density is pushed forward by
the noise map u ↦ e^A u/|e^A u| (``Grid.linear_transport``: on the circle a shift of the Fourier coefficients for
a rotation, exact, and the interpolant at the preimages times the Jacobian otherwise; on S² the Wigner rotation of
the coefficients for a rotation, and the expansion at the preimages times the Jacobian by local Lagrange stencils
on an equiangular grid otherwise, their size from an a-priori bound), and between two maps it is
advanced by the noiseless grid problem (:class:`~.grid.GridProblem`: the domain's right-hand side for the strategy,
DΔ by the integrating factor) with RK4 steps that cut each path step into the fewest equal steps <= ``dt``, or <=
the CFL step ``cfl`` × the problem's bound where ``dt`` is not given. The same maps of the same path as the
particles: one realisation of the density and of n tokens can be compared by W1 path by path.

It runs as the "common-noise" representation of :func:`meanfield.solve` (``solve(..., common_noise=)``), which
returns the one :class:`~.base.Solution`. Every Σ_k = 0: ``solve`` drops the noise and runs today's chain, bit for
bit. Grids without ``linear_transport`` (R^d finite volumes; the zonal, cylinder and sequence grids) are refused with
the grid's reason.
"""

from __future__ import annotations

import numpy as np

from ..density import Density
from ..integrate import Status
from ..integrate.steppers import FIXED, FixedStepper
from ..models.common_noise import CommonNoise, interval_maps
from .base import Part, Representation
from .chain import register
from .grid import GridProblem

__all__ = ["CommonNoiseRepresentation", "check_common_noise"]


def check_common_noise(value) -> CommonNoise:
    """The ``common_noise`` option of :func:`meanfield.solve`: a :class:`~meanfield.models.common_noise.CommonNoise`."""
    if not isinstance(value, CommonNoise):
        raise TypeError(f"`common_noise` must be a meanfield.models.common_noise.CommonNoise, got "
                        f"{type(value).__name__}.")
    return value


class CommonNoiseRepresentation(Representation):
    """A grid density driven by the common path (module docstring): the noise maps on the path's grid, the
    noiseless grid problem between them by fixed RK4/SSPRK3 steps; no refinement and no hand-over (a state the
    monitor refuses ends the run with RESOLUTION_LOST)."""

    name = "common-noise"
    domain_words = "circle and S² (grids with a linear transport)"
    options = frozenset({"method", "dt", "cfl", "strategy", "monitor", "common_noise"})
    accuracy = "the grid's spectral accuracy between the noise maps; the maps exact for rotations"

    def refusal(self, model, domain, start=None):
        grid = getattr(start, "grid", None)
        if grid is None:
            return "common noise moves a density on a grid (a Density), not points"
        return grid.linear_transport_refusal()

    def check(self, settings, model, start, t0, first):
        noise = settings.common_noise
        if noise is None:
            raise ValueError("the common-noise representation moves a density by a common path: give `common_noise`.")
        if noise.dim != start.grid.dim:
            raise ValueError(f"`common_noise`: its matrices Σ_k are {noise.dim}×{noise.dim} but the density lives in "
                             f"R^{start.grid.dim}.")
        method = settings.method or "rk4"
        if method not in FIXED:
            raise ValueError(f"`method` must be one of {tuple(FIXED)} with common noise (fixed steps on the path's "
                             f"grid), got {method!r}.")
        if model.time_dependent:
            raise ValueError("`model`: common noise with time-dependent weights is not implemented (the layer "
                             "boundaries would have to fall on the path's grid); give constant weights.")
        noise.path.index(t0, "t_span[0]")

    def run(self, model, start, t0, t1, t_eval, settings, hooks, first):
        noise, monitor, dt = settings.common_noise, settings.monitor, settings.dt
        method = settings.method or "rk4"
        grid = start.grid
        cfl = grid.domain.default_cfl(False) if settings.cfl is None else settings.cfl
        path = noise.path
        path.index(t1, "t_span[1]")
        path.index(np.asarray(t_eval, dtype=float), "t_eval")
        marks = np.unique(np.concatenate([[t0], t_eval, [t1]]))
        js = path.index(marks, "t_eval")
        outputs = set(np.asarray(t_eval, dtype=float).tolist())
        problem = GridProblem(model, grid, settings.strategy, refine=False, max_n=grid.n, t0=t0)
        y = np.array(start.values, dtype=float)
        checked, spectrum = y, grid.spectrum(y)  # the state the resolution check last read and its spectrum, which
        reason = monitor.check_state(grid, y, spectrum)  # the next map reads rather than analyse the state again
        if reason is not None:
            raise ValueError(f"`mu0` is not resolved: {reason}.")
        stages, h_path = problem.stages(), path.dt
        times, frames = [], []
        if t0 in outputs:
            times.append(t0)
            frames.append(Density(grid, y.copy(), check=False, t=t0))
        nsteps = nfev = 0
        status, message = Status.SUCCESS, "the grid reached the end of the interval"
        t_good, y_good = t0, y.copy()  # the last state the monitor accepted
        problem.probe(y)

        def cfl_step():
            h = cfl * problem.max_step()
            problem.begin_step()
            return h

        for mark, a, b in zip(marks[1:], js[:-1], js[1:]):
            maps = interval_maps(noise, int(a), int(b))
            for i, j in enumerate(range(int(a), int(b))):
                if maps[i] is not None:
                    y = grid.linear_transport(y, maps[i], spectrum=spectrum if checked is y else None)
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
                checked, spectrum = y, grid.spectrum(y)
                reason = monitor.check_state(grid, y, spectrum)
                if reason is not None:
                    status, message = Status.RESOLUTION_LOST, f"at t = {t + h_path:.6g}: {reason}"
                    break
                t_good, y_good = t + h_path, y
            if status is not Status.SUCCESS:
                break
            t_good = float(mark)  # the output time itself, not its float reconstruction t0 + jh
            if t_good in outputs:
                times.append(t_good)
                frames.append(Density(grid, np.array(y, copy=True), check=False, t=t_good))
        t_reached = t_good
        last = Density(grid, np.array(y_good, copy=True), check=False, t=t_reached)
        hint = None if status is Status.SUCCESS else "Refine the grid (the common noise runs without refinement)."
        return Part(self.name, times, frames, status, message, float(t_reached), last, method, problem.strategy,
                    nfev, nsteps, hint=hint)


register(CommonNoiseRepresentation())
