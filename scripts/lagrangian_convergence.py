"""Convergence of the circle's Lagrangian measure (adaptive Gauss panels) through collapse.

1. β = 0, Ott–Antonsen (a_0 = 0.3 + 0.2i) to t = 20: the error of log ρ at the points against the exact
   characteristics (where κ_i <= 1e4) and of the mean, against the panel tolerance ``tol``.
2. β = 5, the metastability study's initial law (1 % in five random modes) to t = 100: cluster count
   history, the final cluster masses and E_β against the initial node count n and ``tol``, with the
   differences to the finest run (self-convergence).

Run:  python scripts/lagrangian_convergence.py
"""

import time

import numpy as np

import meanfield as mf
from meanfield.analysis import exact
from meanfield.lagrangian import cluster_history, transport_panels


def oa(tol):
    a0, n = 0.3 + 0.2j, 256
    theta = np.arange(n) * 2 * np.pi / n
    mu0 = mf.Density(mf.CircleGrid(n), exact.wrapped_cauchy(theta, a0))
    run = transport_panels(mf.SelfAttention(0.0), mu0, (0, 20), [20.0], tol=tol)
    f, x0 = run.frames[-1], run.origins[-1]
    _, lj = exact.ott_antonsen_characteristics(x0, f.t, a0)
    err = np.abs(np.expm1(f.log_density - (np.log(exact.wrapped_cauchy(x0, a0)) - lj)))
    ok = f.log_condition <= np.log(1e4)
    mean = abs(f.weights @ np.exp(1j * f.state[:, 0]) - exact.ott_antonsen(20.0, a0))
    return len(f), np.max(err[ok]), mean


def initial(n):
    g = mf.CircleGrid(n)
    k = np.arange(1, 6)
    phase = np.random.default_rng(0).uniform(0, 2 * np.pi, k.size)
    v = 1 + 0.01 * np.cos(np.multiply.outer(g.angles, k) + phase).sum(-1)
    return mf.Density(g, v / g.integrate(v))


def metastable(n, tol, rtol):
    t0 = time.perf_counter()
    run = transport_panels(mf.SelfAttention(5.0), initial(n), (0, 100), np.arange(0, 100.5, 0.5), tol=tol, rtol=rtol)
    wall = time.perf_counter() - t0
    h = cluster_history(run.frames)
    return dict(points=len(run.frames[-1]), wall=wall, events=h.events, masses=h.masses[-1],
                energy=run.frames[-1].energy(5.0))


def main():
    print("1. β = 0, Ott–Antonsen to t = 20 (exact characteristics)")
    print(f"{'tol':>8} {'points':>7} {'log ρ err (κ<=1e4)':>19} {'mean err':>10}")
    for tol in (1e-6, 1e-8, 1e-10, 1e-12, 1e-14):
        pts, e, m = oa(tol)
        print(f"{tol:>8.0e} {pts:>7} {e:>19.2e} {m:>10.2e}")
    print("\n2. β = 5 metastability to t = 100 (self-convergence against n = 4096, tol = 1e-14, rtol = 1e-12)")
    ref = metastable(4096, 1e-14, 1e-12)
    print(f"   reference: {ref['points']} points, events {ref['events']}, masses {np.round(ref['masses'], 12)}, "
          f"E = {ref['energy']:.15f}")
    print(f"{'n':>6} {'tol':>7} {'rtol':>7} {'points':>7} {'wall s':>7} {'same events':>11} {'|Δ masses|':>11} "
          f"{'|Δ E|':>9}")
    for n, tol, rtol in ((256, 1e-8, 1e-8), (256, 1e-10, 1e-10), (256, 1e-14, 1e-12), (1024, 1e-14, 1e-12),
                         (4096, 1e-10, 1e-10)):
        r = metastable(n, tol, rtol)
        dm = np.max(np.abs(r["masses"] - ref["masses"])) if len(r["masses"]) == len(ref["masses"]) else np.nan
        print(f"{n:>6} {tol:>7.0e} {rtol:>7.0e} {r['points']:>7} {r['wall']:>7.2f} "
              f"{str(r['events'] == ref['events']):>11} {dm:>11.2e} {abs(r['energy'] - ref['energy']):>9.2e}")


if __name__ == "__main__":
    main()
