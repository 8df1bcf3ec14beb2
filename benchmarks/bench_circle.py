"""Circle solver benchmarks, compared side by side in one run.

1. One right-hand-side evaluation at n = 1024 (SA, β = 4, spectral path)
   against the FFTs it performs, timed alone on the same sizes
   (rfft n, 3 × irfft M, rfft M, irfft n with M = 1536 the 3/2-padded grid).
2. A solve to t = 10 at n = 1024, β = 4, SA, on one core, from a uniform
   density perturbed by 1e-3 × (five random low modes): the uniform state is
   unstable and the perturbation grows ~100-fold by t = 10 but stays resolved,
   so no refinement is needed.
3. The quadrature path (model.field at the padded nodes, the model's own NumPy
   sum) for the same RHS, for scale.

The right-hand sides are those ``solve`` builds (``_anchors.grid_rhs``: the grid
problem's ``continuity`` for the strategy ``meanfield.kernels.strategies`` resolves).

Run:  python benchmarks/bench_circle.py
"""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")


import numpy as np  # noqa: E402
import scipy.fft as sfft  # noqa: E402

import meanfield as mf  # noqa: E402
from _anchors import grid_rhs  # noqa: E402
from _timing import best  # noqa: E402


def perturbed_uniform(n, seed=0, eps=1e-3):
    rng = np.random.default_rng(seed)
    g = mf.CircleGrid(n)
    k = np.arange(1, 6)
    v = 1 + eps * np.cos(np.multiply.outer(g.angles, k) + rng.uniform(0, 2 * np.pi, k.size)).sum(-1)
    return mf.Density(g, v / g.integrate(v))


def main():
    n = 1024
    mu0 = perturbed_uniform(n)
    model = mf.SelfAttention(4.0)
    rate = grid_rhs(model, mu0.grid)  # 'auto': the spectral path
    M = rate.M
    y = mu0.values.copy()
    yM = np.random.default_rng(1).random(M)
    cn = sfft.rfft(y)
    cM = sfft.rfft(yM)

    def ffts():
        sfft.rfft(y)
        sfft.irfft(cM, M)
        sfft.irfft(cM, M)
        sfft.irfft(cM, M)
        sfft.rfft(yM)
        sfft.irfft(cn, n)

    t_fft = best(ffts, repeat=7, number=2000)
    t_rhs = best(lambda: rate.rate(y), repeat=7, number=2000)
    quad = grid_rhs(model, mu0.grid, "quadrature", own_sum=True)  # model.field, as Domain.rate's default was
    t_quad = best(lambda: quad.rate(y), repeat=3, number=5)
    print(f"n = {n}, padded M = {M}")
    print(f"  6 FFTs alone            {t_fft * 1e6:8.1f} us")
    print(f"  spectral RHS            {t_rhs * 1e6:8.1f} us   ratio RHS/FFTs = {t_rhs / t_fft:.2f}  (target <= 5)")
    print(f"  quadrature RHS          {t_quad * 1e6:8.1f} us   ({t_quad / t_rhs:.0f}x the spectral path)")

    for method in ("rk4", "rk45"):
        sol = None

        def run():
            nonlocal sol
            sol = mf.solve(model, mu0, (0.0, 10.0), method=method)

        t_solve = best(run, repeat=3)
        growth = np.max(np.abs(sol.densities[-1].values - 1 / (2 * np.pi))) / np.max(
            np.abs(mu0.values - 1 / (2 * np.pi))
        )
        print(
            f"  solve to t = 10 ({method:5s}) {t_solve:8.3f} s    {sol.nsteps} steps, {sol.nfev} RHS, "
            f"perturbation grew {growth:.0f}x, n stayed {sol.densities[-1].grid.n}  (target < 2 s)"
        )


if __name__ == "__main__":
    main()
