"""Finite volumes in R² (issue 6): one right-hand side, best of 5.

- L2 attention with Q = K on 256 × 256 cells: FFT convolution (target < 50 ms);
- softmax attention with direct summation on 128 × 128 cells (target < 2 s),
  and the same exact sums computed separably (the default for softmax).

Run:  python benchmarks/bench_euclidean.py
"""


import numpy as np

import meanfield as mf
from meanfield import gaussian as G
from meanfield.domains.euclidean import FiniteVolume
from meanfield.models import L2, Softmax
from _timing import best


def main():
    m0, S0 = np.array([0.2, -0.1]), np.array([[0.3, 0.05], [0.05, 0.2]])
    softmax = Softmax(Q=np.array([[0.5, 0.2], [0.0, 0.3]]))
    for model, n, target, how in ((L2(Q=np.diag([1.0, 0.7]), K=np.diag([1.0, 0.7])), 256, "< 50 ms", "spectral"),
                                  (softmax, 128, "< 2 s", "quadrature"), (softmax, 128, "< 2 s", "separable")):
        g = mf.EuclideanGrid([(-4, 4), (-4, 4)], n)
        rho = G.gaussian_pdf(g.points, m0, S0)
        fv = FiniteVolume(g, model, how)
        t = best(lambda: fv.rate_and_speeds(rho), repeat=5 if n == 256 else 3)
        print(f"{type(model).__name__:8s} {n}x{n} ({fv.path}): one RHS {t * 1e3:8.1f} ms  (target {target})")


if __name__ == "__main__":
    main()
