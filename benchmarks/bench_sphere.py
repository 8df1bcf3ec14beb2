"""S² solver benchmark (issue 5): one RK4 step at lmax = 127, SA, β = 4, fast path, both backends.

Counts the spherical-harmonic transforms one right-hand side performs
(1 analysis at L, 7 syntheses and 1 analysis at the dealiased degree
L_d = ⌈3L/2⌉, 1 synthesis at L), times exactly those transforms alone, and
compares with the full RK4 step (4 right-hand sides) in the same run.

Run:  python benchmarks/bench_sphere.py
"""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")


import numpy as np  # noqa: E402

import meanfield as mf  # noqa: E402
from meanfield.domains import SPHERE  # noqa: E402
from meanfield.domains.sphere.transforms import dealiased_degree  # noqa: E402
from _timing import best  # noqa: E402


def main():
    for backend in ("pyshtools", "ducc0"):
        run(backend)


def run(backend):
    L = 127
    g = mf.SphereGrid(L, backend=backend)
    Ld = dealiased_degree(L)
    mu0 = mf.Density.from_function(g, lambda x: np.exp(2 * x[..., 2] + x[..., 0] * x[..., 1]))
    rate = SPHERE.rate(mf.SelfAttention(4.0), g)
    B = g.backend
    y = mu0.values
    c = B.analysis(y, L)
    fine = B.synthesis(c, Ld)
    cd = B.analysis(fine, Ld)

    def transforms():
        B.analysis(y, L)
        for _ in range(7):
            B.synthesis(c, Ld)
        B.analysis(fine, Ld)
        B.synthesis(cd, L)

    def rk4_step(h=1e-3):
        k1 = rate.rate(y)
        k2 = rate.rate(y + 0.5 * h * k1)
        k3 = rate.rate(y + 0.5 * h * k2)
        k4 = rate.rate(y + h * k3)
        return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)

    t_tr = best(transforms)
    t_rhs = best(lambda: rate.rate(y))
    t_step = best(rk4_step, repeat=3)
    print(f"lmax = {L} (grid {g.shape}), dealiased degree {Ld}, backend {B.name}")
    print(f"  transforms of one RHS alone   {t_tr * 1e3:8.1f} ms")
    print(f"  one RHS                       {t_rhs * 1e3:8.1f} ms   ({t_rhs / t_tr:.2f}x its transforms)")
    print(f"  one RK4 step (4 RHS)          {t_step * 1e3:8.1f} ms   ({t_step / (4 * t_tr):.2f}x its transforms)")


if __name__ == "__main__":
    main()
