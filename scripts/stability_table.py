"""Slack of the three Dobrushin bounds (a priori, a posteriori, sharper) per domain and β (issue 14, MATH.md §4).

Two nearby initial densities (W_1 ≈ 1e-2) on each domain, SA on the circle
and S² (Q = K = V = I), softmax attention with V = I/4 in R¹ and R² (compactly
supported bumps, so the support-radius bound applies); t ∈ [0, 2]. Prints one
markdown row per (domain, β): the measured ratio W_1(μ_t, ν_t)/W_1(μ_0, ν_0) at
t = 2 and min over t > 0 of bound/ratio for each bound (∞: the bound is vacuous).

Run:  python scripts/stability_table.py            (about two minutes on two cores)
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import meanfield as mf
from meanfield.domains.circle import points_to_angles
from meanfield.models import Softmax
from meanfield.integrate.monitor import ResolutionMonitor
from validation.stability import stability


def cases(beta):
    circle = mf.CircleGrid(128)

    def on_circle(shift):
        return mf.Density.from_function(
            circle, lambda x: np.exp(np.cos(points_to_angles(x) - shift) + 0.5 * np.sin(2 * points_to_angles(x))))

    sphere = mf.SphereGrid(16)

    def on_sphere(a):
        return mf.Density.from_function(
            sphere, lambda x: np.exp(np.cos(a) * x[..., 2] + np.sin(a) * x[..., 0] + 0.5 * x[..., 0] * x[..., 1]))

    def bump(grid, c):
        return mf.Density.from_function(grid, lambda x: np.clip(1 - np.sum((x - c) ** 2, -1), 0, None) ** 3)

    r1, r2 = mf.EuclideanGrid([(-2.5, 2.5)], 256), mf.EuclideanGrid([(-2.5, 2.5)] * 2, 40)
    yield "circle", mf.SelfAttention(beta), on_circle(0.0), on_circle(0.05), {}
    yield "S²", mf.SelfAttention(beta), on_sphere(0.0), on_sphere(0.02), dict(
        monitor=ResolutionMonitor(tail_tol=1e-4), max_n=32)
    yield "R¹", Softmax(V=0.25 * np.eye(1), beta=beta), bump(r1, 0.0), bump(r1, 0.02), {}
    yield "R²", Softmax(V=0.25 * np.eye(2), beta=beta), bump(r2, np.zeros(2)), bump(r2, np.full(2, 0.02)), {}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--betas", type=float, nargs="+", default=[0.5, 1.0, 3.0])
    ap.add_argument("--times", type=int, default=11)
    args = ap.parse_args(argv)
    t = np.linspace(0.0, 2.0, args.times)
    print("| domain | β | W1(μ0,ν0) | ratio at t=2 | slack a priori | slack a posteriori | slack sharper | s |")
    print("|---|---|---|---|---|---|---|---|")
    for beta in args.betas:
        for name, model, mu, nu, kw in cases(beta):
            t0 = time.perf_counter()
            r = stability(model, mu, nu, t, **kw)
            ok = np.all(r.ratio <= r.bound_sharp) and np.all(r.bound_sharp <= r.bound_a_posteriori)
            print(f"| {name} | {beta:g} | {r.distance[0]:.3e} | {r.ratio[-1]:.4f} | {r.slack:.3g} | "
                  f"{r.slack_a_posteriori:.3g} | {r.slack_sharp:.3g} | {time.perf_counter() - t0:.1f} |"
                  + ("" if ok else "  BOUND VIOLATED"), flush=True)


if __name__ == "__main__":
    main()
