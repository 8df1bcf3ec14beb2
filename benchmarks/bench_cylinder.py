"""Pre-LN density step on S¹ × (0, ∞) against independent circle steps (issue 37, performance).

One RK4 step of the cylinder density (``meanfield.solvers.cylinder``: n_θ = 256 angles × 128 cells of log r, SA, β = 4,
pre-LN; the right-hand side :class:`meanfield.solvers.cylinder.RadialProblem` advances, stepped by the library's
``meanfield.integrate.rk4`` as the Integrator's fixed steps are) against 128 RK4 steps of the circle solver at
n = 256 (post-LN, the same SA β = 4: the step ``solve`` takes, ``_anchors.problem_step``), one per radius. Both
sides do the same FFT work per radius (the 3/2-padded product and the spectral derivative); the cylinder computes
the field once from the directions' marginal and adds the finite-volume fluxes in s. Medians of 7 interleaved
timings (``_timing.interleaved``, each at least 0.2 s of calls). Target: ratio <= 2.

Run:  python benchmarks/bench_cylinder.py
"""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import meanfield as mf  # noqa: E402
from _anchors import problem_step  # noqa: E402
from _timing import interleaved  # noqa: E402
from meanfield.solvers.cylinder import CylinderGrid, RadialProblem
from meanfield.integrate import rk4
from meanfield.models import SelfAttention, Transformer

N_THETA, N_S, BETA, H = 256, 128, 4.0, 1e-3


def main():
    grid = CylinderGrid(N_THETA, N_S, (np.exp(-0.5), np.exp(4.5)))
    th, s = grid.theta[None, :], grid.s[:, None]
    rho = np.exp(2 * np.cos(th - 1) - 0.5 * ((s - 2) / 0.25) ** 2) * (1 + 0.5 * np.sin(2 * th) * np.tanh(s - 2))
    y = rho / grid.mass(rho)
    problem = RadialProblem(Transformer(SelfAttention(BETA), normalization="pre"), grid)

    def cylinder_step():
        rk4(problem.rate, y, H)

    circle = mf.CircleGrid(N_THETA)
    rows = [np.exp(2 * np.cos(circle.angles - 1 - 0.01 * m)) for m in range(N_S)]
    steps = [problem_step(SelfAttention(BETA), circle, r / circle.integrate(r), H) for r in rows]

    def circle_steps():
        for step in steps:
            step()

    t_cyl, t_circ, ratios = interleaved(cylinder_step, circle_steps, repeat=7, min_time=0.2)
    print(f"pre-LN density step, n_theta = {N_THETA} x {N_S} radii (RK4):  {t_cyl * 1e3:7.2f} ms")
    print(f"{N_S} circle steps at n = {N_THETA} (RK4, solve's step):     {t_circ * 1e3:7.2f} ms")
    print(f"ratio cylinder / circles: {t_cyl / t_circ:.2f}  (pairs {min(ratios):.2f} .. {max(ratios):.2f}; "
          "target <= 2)")


if __name__ == "__main__":
    main()
