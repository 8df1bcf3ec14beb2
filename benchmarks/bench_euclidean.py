"""Finite volumes in R² (issues 6 and 33): one right-hand side, best of 5; the issue-33 solve against its closure.

- One right-hand side per scheme (WENO5-Z, the default; MUSCL–minmod, the earlier reference):
  L2 attention with Q = K on 256 × 256 cells, FFT convolution (target < 50 ms);
  softmax attention with direct summation on 128 × 128 cells (target < 2 s),
  and the same exact sums computed separably (the default for softmax).
- Issue 33: softmax in R², A = [[.5, .2], [−.1, .3]], V = [[1, .3], [0, .8]], from N((.5, −.3), [[.5, .1], [.1, .3]])
  to t = 1 on [−4.5, 7.5] × [−5.5, 4]: W2 of the grid's moments to the Gaussian closure, right-hand-side
  evaluations and wall time, for ``solve``'s default (WENO5-Z, RK4, cfl 0.8) and for the earlier default (MUSCL,
  SSP-RK3, cfl 0.4, stepped here with the same CFL rule). ``--sizes`` picks the grids (160 takes minutes).

Run:  python benchmarks/bench_euclidean.py [--sizes 56 80 160] [--no-muscl]
"""

import argparse
import time
import warnings

import numpy as np

import meanfield as mf
from meanfield.analysis import gaussian as G
from meanfield.domains.euclidean import FiniteVolume
from meanfield.integrate import ssprk3
from meanfield.models import L2, Softmax
from validation import gaussian_w2
from _timing import best

ISSUE_MODEL = Softmax(Q=np.array([[0.5, 0.2], [-0.1, 0.3]]), V=np.array([[1.0, 0.3], [0.0, 0.8]]))
ISSUE_START = np.array([0.5, -0.3]), np.array([[0.5, 0.1], [0.1, 0.3]])
ISSUE_BOX = [(-4.5, 7.5), (-5.5, 4.0)]


def right_hand_sides():
    m0, S0 = np.array([0.2, -0.1]), np.array([[0.3, 0.05], [0.05, 0.2]])
    softmax = Softmax(Q=np.array([[0.5, 0.2], [0.0, 0.3]]))
    for model, n, target, how in ((L2(Q=np.diag([1.0, 0.7]), K=np.diag([1.0, 0.7])), 256, "< 50 ms", "spectral"),
                                  (softmax, 128, "< 2 s", "quadrature"), (softmax, 128, "< 2 s", "separable")):
        g = mf.EuclideanGrid([(-4, 4), (-4, 4)], n)
        rho = G.gaussian_pdf(g.points, m0, S0)
        for scheme in ("weno5", "muscl"):
            fv = FiniteVolume(g, model, how, scheme=scheme)
            t = best(lambda: fv.rate_and_speeds(rho), repeat=5 if n == 256 else 3)
            tv = best(lambda: fv.velocity(rho), repeat=5 if n == 256 else 3)
            print(f"{type(model).__name__:8s} {n}x{n} ({fv.strategy}, {scheme}): one RHS {t * 1e3:8.1f} ms, "
                  f"of which the field {tv * 1e3:8.1f} ms  (target {target})")


def issue_33(sizes, muscl=True):
    exact = G.solve_gaussian(ISSUE_MODEL, *ISSUE_START, [0, 1.0])

    def w2(g, values):
        _, mean, cov = g.moments(values)
        return gaussian_w2(mean, cov, exact.mean[-1], exact.cov[-1])

    for n in sizes:
        g = mf.EuclideanGrid(ISSUE_BOX, n)
        rho0 = G.gaussian_density(g, *ISSUE_START)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # 3e-8 of the mass leaves the box
            sol = mf.solve(ISSUE_MODEL, rho0, (0, 1.0))
        wall = time.perf_counter() - t0
        print(f"issue 33, {n}x{n}: WENO5-Z + {sol.method}: W2 {w2(g, sol.densities[-1].values):.2e}, "
              f"{sol.nfev} RHS, {wall:6.1f} s", flush=True)
        if muscl:
            fv = FiniteVolume(g, ISSUE_MODEL, "separable", scheme="muscl")
            t0 = time.perf_counter()
            values, t, nfev, speed = rho0.values, 0.0, 0, fv.speeds(rho0.values)[0]

            def rate(v):  # as solve steps: dt from the largest speed the previous step's stages measured
                nonlocal nfev, speed
                r, vmax, _ = fv.rate_and_speeds(v)
                nfev, speed = nfev + 1, max(speed, vmax)
                return r

            while t < 1.0:
                dt, speed = min(0.4 * g.spacing / speed, 1.0 - t), 0.0
                values, t = ssprk3(rate, values, dt), t + dt
            wall = time.perf_counter() - t0
            print(f"issue 33, {n}x{n}: MUSCL + ssprk3:    W2 {w2(g, values):.2e}, {nfev} RHS, {wall:6.1f} s",
                  flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[56, 80])
    parser.add_argument("--no-muscl", action="store_true", help="skip the MUSCL reference solves")
    args = parser.parse_args()
    right_hand_sides()
    issue_33(args.sizes, muscl=not args.no_muscl)


if __name__ == "__main__":
    main()
