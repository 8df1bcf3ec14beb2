"""Wasserstein benchmarks (issue 4), each best of 3.

1. Circle: W1 and W2 between 10^6 iid points and a density (n = 256 grid,
   quantised exactly into 2^20 cells).
2. S²: exact OT (POT network simplex, geodesic cost) between 4000 points and
   the measure of a 64 × 128 Gauss–Legendre grid (nodes × quadrature weights
   of a smooth density), built here directly since the S² grid class is issue 5.
3. S², issue 33: W1 between 2000 of its samples and a density on
   SphereGrid(128) (33 153 nodes, over the default limit of exact OT): coarsened
   OT with its certified bound, in a child process so that its peak memory is
   its own; with ``--exact`` also exact OT with the limit raised (43 s, 2.8 GiB).
4. Circle, issue 39: W1 of a density (n = 128 grid, prepared once: 2^20 cells) against N = 40 … 10^4 weighted
   points, by the cells' cumulative masses (what ``distance`` takes for N below ``_cells_pay``'s limit) against
   the anchor, the merged formula over all 2^20 + N atoms: medians of 7 in alternation, their ratio and the two
   values' relative difference.

Run:  python benchmarks/bench_wasserstein.py [--exact] [--only-cells]
"""

import json
import subprocess
import sys
import time

import numpy as np

import meanfield as mf
import particles as pt
from meanfield.analysis import exact
from validation import w1, w2
from _timing import best, interleaved


def glq_measure(nlat=64, nlon=128):
    x, wx = np.polynomial.legendre.leggauss(nlat)  # cos(colatitude)
    phi = 2 * np.pi * np.arange(nlon) / nlon
    st = np.sqrt(1 - x**2)
    pts = np.stack([np.outer(st, np.cos(phi)), np.outer(st, np.sin(phi)), np.outer(x, np.ones(nlon))], -1).reshape(-1, 3)
    w = np.outer(wx, np.full(nlon, 2 * np.pi / nlon)).ravel()
    rho = np.exp(2.0 * pts[:, 2])  # a smooth density, von Mises–Fisher-like
    w = w * rho
    return pts, w / w.sum()


def circle_cells():
    from validation.wasserstein import _circle_w1, _circle_w1_cells, _sorted, prepare

    d = mf.Density.from_function(mf.CircleGrid(128), lambda x: np.exp(3 * x[..., 0]) + 0.5 * np.exp(5 * x[..., 1]))
    q = prepare(d.unit_mass())
    rng = np.random.default_rng(0)
    print("circle W1, density (2^20 cells) vs N points: N, cells path, merged anchor (medians of 7), ratio, rel. diff")
    for n in (40, 300, 3162, 10**4):
        x = pt.sample(d.unit_mass(), n, rng=rng)
        theta, w = np.mod(np.arctan2(x[:, 1], x[:, 0]), 2 * np.pi), rng.dirichlet(np.ones(n))
        t, ws = _sorted(theta, w)
        fast = lambda: _circle_w1_cells(*q.cell_sums, t, ws)  # noqa: E731
        anchor = lambda: _circle_w1(q.coords, q.weights, theta, w)  # noqa: E731
        a, b, _ = interleaved(fast, anchor, repeat=7, min_time=0.05)
        print(f"  N = {n:>6}: {a * 1e3:8.3f} ms  {b * 1e3:8.3f} ms  {b / a:7.1f}x  {abs(fast() - anchor()) / anchor():.1e}")


def main():
    circle_cells()
    if "--only-cells" in sys.argv:
        return
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

    for limit in ([None, 7 * 10**7] if "--exact" in sys.argv else [None]):
        r = large_sphere(limit)
        print(f"S², 2000 points vs SphereGrid(128) density ({r['method']}, atoms {r['atoms']}): "
              f"W1 = {r['value']:.6e} ± {r['bound']:.2e} in {r['seconds']:.1f} s, peak {r['peak'] / 2**30:.2f} GiB"
              + ("  (target < 30 s, < 4 GiB)" if limit is None else "  (exact, limit raised)"))


LARGE = """
import json, resource, sys, time
import numpy as np
import meanfield as mf, particles as pt
from validation import distance
a = mf.Density.from_function(mf.SphereGrid(128), lambda x: np.exp(3 * x[..., 2]) + np.exp(2 * x[..., 0])).unit_mass()
y = pt.sample(a, 2000, rng=1)
limit = json.loads(sys.argv[1])
t = time.perf_counter()
d = distance(a, y, 1) if limit is None else distance(a, y, 1, max_entries=limit)
seconds = time.perf_counter() - t
print(json.dumps(dict(value=d.value, bound=d.bound, method=d.method, atoms=d.atoms, seconds=seconds,
                      peak=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)))
"""


def large_sphere(limit):
    """W1 between a SphereGrid(128) density and 2000 of its samples in a fresh interpreter: value, bound, method,
    seconds and peak resident memory (bytes)."""
    out = subprocess.run([sys.executable, "-c", LARGE, json.dumps(limit)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
