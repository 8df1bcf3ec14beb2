"""S² solver benchmark: one RK4 step, SA, β = 4, one thread, L = 63 / 127 / 255, three ways side by side.

- ring plans (the default with ducc0), the step as ``solve`` takes it: stages on the
  coefficients, per right-hand side 3 Legendre syntheses and 2 analyses on the
  dealiased rings (FFT-friendly longitude counts), 4 ring FFTs out and 2 back (the
  flux form); one transform each way at L per step;
- the cilm path with ducc0 (``fast=False``, the scalar form ∇ρ·∇φ + ρΔφ: per right-hand
  side 1 analysis at L, 7 syntheses and 1 analysis on the GLQ grid of degree L_d,
  1 synthesis at L);
- the same cilm path with pyshtools (SHTOOLS).

Medians of 5 steps after a warm-up; ratios against the ring plans. For the
shtns anchor (where shtns is installed) see ``bench_table.py --rows s2-step``.

Run:  python benchmarks/bench_sphere.py
"""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import meanfield as mf  # noqa: E402
from meanfield.domains.sphere import SphereSpectral
from _anchors import rk4_step, solver_step  # noqa: E402
from _timing import median  # noqa: E402


def main():
    f = lambda x: np.exp(2 * x[..., 2] + x[..., 0] * x[..., 1])  # noqa: E731
    print(f"{'L':>4} {'ring plans':>12} {'cilm, ducc0':>14} {'cilm, pyshtools':>17}")
    for L in (63, 127, 255):
        times = []
        for backend, fast in (("ducc0", True), ("ducc0", False), ("pyshtools", False)):
            g = mf.SphereGrid(L, backend=backend)
            y = mf.Density.from_function(g, f).values
            rate = SphereSpectral(g, 4.0, 1.0, True, fast=fast)
            times.append(median(solver_step(rate, y) if fast else (lambda: rk4_step(rate.rate, y)), 5))
        t0 = times[0]
        print(f"{L:>4} {t0 * 1e3:9.2f} ms {times[1] * 1e3:9.2f} ms ({times[1] / t0:4.1f}x) "
              f"{times[2] * 1e3:9.2f} ms ({times[2] / t0:4.1f}x)")


if __name__ == "__main__":
    main()
