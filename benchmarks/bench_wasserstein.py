"""Wasserstein benchmarks (issue 4), each best of 3.

1. Circle: W1 and W2 between 10^6 iid points and a density (n = 256 grid,
   quantised exactly into 2^20 cells).
2. S²: exact OT (POT network simplex, geodesic cost) between 4000 points and
   the measure of a 64 × 128 Gauss–Legendre grid (nodes × quadrature weights
   of a smooth density), built here directly since the S² grid class is issue 5.

Run:  python benchmarks/bench_wasserstein.py
"""

import time

import numpy as np

import meanfield as mf
import particles as pt
from meanfield import exact
from validation import w1, w2
from _timing import best


def glq_measure(nlat=64, nlon=128):
    x, wx = np.polynomial.legendre.leggauss(nlat)  # cos(colatitude)
    phi = 2 * np.pi * np.arange(nlon) / nlon
    st = np.sqrt(1 - x**2)
    pts = np.stack([np.outer(st, np.cos(phi)), np.outer(st, np.sin(phi)), np.outer(x, np.ones(nlon))], -1).reshape(-1, 3)
    w = np.outer(wx, np.full(nlon, 2 * np.pi / nlon)).ravel()
    rho = np.exp(2.0 * pts[:, 2])  # a smooth density, von Mises–Fisher-like
    w = w * rho
    return pts, w / w.sum()


def main():
    d = mf.Density.from_function(mf.CircleGrid(256), lambda x: exact.wrapped_cauchy(np.arctan2(x[..., 1], x[..., 0]), 0.5))
    x = pt.sample(d, 10**6, rng=1)
    w1(d, x[:10]), w2(d, x[:10])  # compile
    v1, v2 = w1(d, x), w2(d, x)  # the values, and the warm-up
    t1 = best(lambda: w1(d, x), repeat=3, warmup=False)
    t2 = best(lambda: w2(d, x), repeat=3, warmup=False)
    print(f"circle, 10^6 points vs density: W1 = {v1:.6e} in {t1:.3f} s, W2 = {v2:.6e} in {t2:.3f} s  (target < 1 s)")

    pts, w = glq_measure()
    y = pt.uniform_sphere(4000, 3, rng=2)
    t0 = time.perf_counter()
    v3 = w1(y, (pts, w))  # one exact OT is long enough to time once
    t3 = time.perf_counter() - t0
    print(f"S², 4000 points vs 64x128 grid measure, exact OT: W1 = {v3:.6e} in {t3:.1f} s  (target < 20 s)")


if __name__ == "__main__":
    main()
