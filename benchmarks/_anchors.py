"""Plain-NumPy anchors shared by the benchmark scripts: classical RK4 and the S^{d-1} SA field; and the solver's own
RK4 step on S² (``solver_step``), timed against them."""

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
