"""Plain-NumPy anchors shared by the benchmark scripts: classical RK4 and the S^{d-1} SA field; and the solver's own
right-hand side on a grid (``grid_rhs``) and RK4 step on S² (``solver_step``), timed against them."""

import numpy as np


def rk4_step(rate, y, h=1e-3):
    """One classical RK4 step of ẏ = rate(y)."""
    k1 = rate(y)
    k2 = rate(y + 0.5 * h * k1)
    k3 = rate(y + 0.5 * h * k2)
    k4 = rate(y + h * k3)
    return y + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


def numpy_field(x, beta):
    """The SA field of equal-weight particles x on the sphere: Gram matrix, exp, matmul, projection."""
    G = x @ x.T
    E = np.exp(beta * (G - G.max(axis=1, keepdims=True)))
    U = (E @ x) / E.sum(axis=1, keepdims=True)
    return U - np.sum(U * x, axis=1, keepdims=True) * x


def grid_rhs(model, grid, strategy: str = "auto", own_sum: bool = False):
    """The right-hand side ∂_t ρ = −div(ρ X[ρ]) on ``grid`` that ``solve`` builds (``GridProblem``): the strategy
    resolved by :mod:`meanfield.strategies` (``for_grid``, ``resolve``) and the sums of
    :func:`meanfield.representations.grid.continuity` (compiled where ``kernels.grid_field`` has them).
    ``own_sum=True``: the same strategy summing with the model's own NumPy ``model.field`` (the reference sum).

    Domain.rate(model, grid, path, field) built these objects before the representations (c2114be): its default
    field was ``model.field`` (``own_sum=True``), and ``solve`` passed the compiled sum (the default here). The
    object has ``rate``, ``rate_and_speeds``, ``strategy`` and, where ``coefficient_stages``, the coefficient
    stages that ``solver_step`` runs."""
    from meanfield import strategies
    from meanfield.representations.grid import continuity

    domain = grid.domain
    resolved = strategies.resolve(strategy, strategies.for_grid(model, grid), repr(grid))
    if own_sum:
        return domain.continuity(model, grid, resolved, None)
    return continuity(domain, model, grid, resolved)


def solver_step(rate, y, h=1e-3):
    """One RK4 step as ``solve`` takes it: a fixed stepper, its stages on the coefficients where the right-hand
    side offers them (``coefficient_stages``), stepping on from its last state as ``solve`` does within an output
    interval (so, where the version keeps them, from its last stage variables); in versions without stages, four
    right-hand sides on grid values."""
    if not getattr(rate, "coefficient_stages", False):
        return lambda: rk4_step(rate.rate, y, h)
    from meanfield.integrate.steppers import FixedStepper, Stages

    stages = Stages(rate.coefficients, rate.values, lambda z: rate.coefficient_rate_and_speeds(z)[0])
    stepper = FixedStepper(rate.rate, 0.0, y, np.inf, h=h, stages=stages)
    return stepper.step


def problem_step(model, grid, y, h=1e-3, t0=0.0):
    """One RK4 step of the grid problem exactly as ``solve`` takes it: ``GridProblem`` at time ``t0`` (a schedule's
    layer there), the stepper the integrator builds for it (stages on the coefficients where the right-hand side
    has them; with noise the integrating factor of DΔ; a time-dependent problem's stages read their time), stepping
    on from its last state within an output interval. Returns the stepper's ``step`` (from ``t0``, steps of ``h``;
    keep the calls within the interval [t0, t0 + 10⁶h) and, for a schedule, within its layer)."""
    from meanfield.integrate import Integrator
    from meanfield.representations import GridProblem

    problem = GridProblem(model, grid, "auto", False, grid.n, t0=t0)
    problem.at_time(t0)
    return Integrator(problem, "rk4", dt=h)._stepper(t0, y, t0 + 1e6 * h).step
