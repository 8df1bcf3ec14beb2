"""The circle's Lagrangian measure through collapse (adaptive Gauss panels), side by side in one run.

SA, β = 5, from the uniform law perturbed by 1 % in five random modes (the metastability study),
to t = 100: three clusters form near t = 10, two merge later. For each initial node count n:
the wall time of the whole run (median of ``--rounds``), its accepted steps, field evaluations and
final points, and the cost of one field-and-divergence evaluation at the final points — the
compiled O(N L) Fourier sums the run uses — against the anchor measured in the same run: the
plain NumPy pairwise O(N²) evaluation of the same field and divergence (``model.field_and_divergence``).

With ``--sphere``: S², SA β = 4, the metastability example (examples/metastability_sphere.toml: uniform law
perturbed by 5 % in six bumps) on the fixed nodes of lmax-50, 70, 100 grids to t = 40 (DOP853, rtol 1e-8): one
run per size (its wall time, steps, evaluations, the cluster count at the end) and the cost of one evaluation at
the final points — the compiled O(N L²) harmonic sums — against the plain NumPy pairwise evaluation (median of
``--rounds``; the pairwise anchor at N <= 1.2·10⁴).

Run:  python benchmarks/bench_lagrangian.py [--rounds 5] [--sizes 1024 4096] [--sphere]
"""

import argparse
import time

import numpy as np

import meanfield as mf
from meanfield.domains.circle.point_sums import circle_spectral_divergence
from meanfield.domains.sphere.point_sums import sphere_spectral_divergence
from meanfield.lagrangian import cluster_history, start, transport, transport_panels
from _timing import best, median


def initial(n, seed=0, amplitude=0.01):
    g = mf.CircleGrid(n)
    k = np.arange(1, 6)
    phase = np.random.default_rng(seed).uniform(0, 2 * np.pi, k.size)
    v = 1 + amplitude * np.cos(np.multiply.outer(g.angles, k) + phase).sum(-1)
    return mf.Density(g, v / g.integrate(v))


def sphere(rounds, sizes=(50, 70, 100), t_end=40.0):
    from meanfield.study import build, read

    print(f"S², SA β = 4, fixed nodes to t = {t_end:g} (one run each), one evaluation: medians of {rounds}")
    print(f"{'lmax':>5} {'N':>6} {'wall s':>8} {'steps':>6} {'nfev':>6} {'clusters':>8} {'per step ms':>11} "
          f"{'eval ms':>8} {'pairwise ms':>11} {'ratio':>7}")
    for lmax in sizes:
        cfg = read(dict(name="bench", domain="sphere", seed=0, grid=dict(lmax=lmax), model=dict(beta=4.0),
                        initial=dict(kind="uniform-noise", amplitude=0.05, modes=6), time=dict(t_end=t_end)))
        model = build.build_model(cfg)
        frame = start(build.initial_density(cfg, build.build_grid(cfg)))
        transport(model, frame, (0, 0.1), [0.1])  # compile
        t0 = time.perf_counter()
        run = transport(model, frame, (0, t_end), [t_end], rtol=1e-8, atol=1e-10)
        wall = time.perf_counter() - t0
        f = run.frames[-1]
        x, w = f.points, f.weights
        spectral = median(lambda: sphere_spectral_divergence(x, w, x, 4.0, True, 1.0), rounds)
        pairwise = median(lambda: model.field_and_divergence(x, w, x), rounds) if len(f) <= 12_000 else np.nan
        print(f"{lmax:>5} {len(f):>6} {wall:>8.1f} {run.nsteps:>6} {run.nfev:>6} "
              f"{cluster_history([f]).count[-1]:>8} {1e3 * wall / run.nsteps:>11.1f} {1e3 * spectral:>8.2f} "
              f"{1e3 * pairwise:>11.1f} {pairwise / spectral:>7.0f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1024, 4096])
    ap.add_argument("--t-end", type=float, default=100.0)
    ap.add_argument("--sphere", action="store_true", help="the S² metastability run instead of the circle's")
    args = ap.parse_args()
    if args.sphere:
        return sphere(args.rounds)
    model = mf.SelfAttention(5.0)
    print(f"SA β = 5 on the circle to t = {args.t_end:g}, medians of {args.rounds} runs")
    print(f"{'n':>6} {'wall s':>8} {'steps':>6} {'nfev':>6} {'points':>7} {'per step ms':>11} "
          f"{'eval ms':>8} {'pairwise ms':>11} {'ratio':>7}")
    for n in args.sizes:
        mu0 = initial(n)
        transport_panels(model, mu0, (0, 1.0), [1.0])  # compile
        walls, run = [], None
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            run = transport_panels(model, mu0, (0, args.t_end), [args.t_end], rtol=1e-10)
            walls.append(time.perf_counter() - t0)
        f = run.frames[-1]
        x, w = f.points, f.weights
        spectral = best(lambda: circle_spectral_divergence(x, w, x, 5.0))
        pairwise = best(lambda: model.field_and_divergence(x, w, x), repeat=3)
        wall = float(np.median(walls))
        print(f"{n:>6} {wall:>8.2f} {run.nsteps:>6} {run.nfev:>6} {len(f):>7} {1e3 * wall / run.nsteps:>11.2f} "
              f"{1e3 * spectral:>8.3f} {1e3 * pairwise:>11.1f} {pairwise / spectral:>7.0f}")


if __name__ == "__main__":
    main()
