"""Cost curves on one page (issue 50, item 5): time against n, L and d, each log-log with its fitted exponent.

Panels (SA, β = 4, one thread, medians of ``--repeat`` calls after a warm-up):

1. The field of n points on S² by pair sums (``kernels.field``: n² pairs, exponent 2 expected) and by point sums
   (``sphere_spectral_field``: spherical-harmonic sums truncated where the Funk–Hecke multipliers of e^{β⟨x,y⟩}
   fall below round-off, exponent ~1 expected, fitted over n >= 10⁴ where their fixed cost no longer dominates),
   with the crossover n where the point sums become cheaper: measured at the same sizes, interpolated log-log
   between the two sizes that bracket it.
2. One RK4 step of an S² density on the grid of degree L (ducc0 transforms: ~L³ expected), timed as the difference
   of a 6-step and a 2-step solve divided by 4, so the set-up cancels.
3. The pairwise field of n = 2048 particles on S^{d−1} against d (the d-dimensional dot products: ~d once d exceeds
   the exponential's own cost, flat below).

The fitted exponent is the least-squares slope of log t against log n (L, d) over the sizes shown (panel 3: over
d >= 16, where the dot products dominate). Under another session's load the times move; the slopes much less.

Run:  python benchmarks/bench_cost_curves.py [--repeat 3] [--out benchmarks/cost_curves.png] [--quick]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import median  # noqa: E402

import numba  # noqa: E402

import meanfield as mf  # noqa: E402
from meanfield import kernels  # noqa: E402
from meanfield.domains.sphere.point_sums import sphere_spectral_field  # noqa: E402
from particles import uniform_sphere  # noqa: E402

BETA = 4.0


def slope(x, t):
    """The least-squares exponent of t ~ x^p and its prefactor: (p, c) with t ≈ c x^p."""
    p, logc = np.polyfit(np.log(x), np.log(t), 1)
    return float(p), float(np.exp(logc))


def measured_crossover(n_pair, t_pair, n_point, t_point) -> float:
    """The n above which the point sums are cheaper, from the sizes measured both ways: log-log interpolation of the
    ratio t_point/t_pair between the sizes that bracket 1 (NaN where it does not cross in the sizes measured)."""
    common = np.array([n for n in n_pair if n in set(n_point.tolist())])
    ratio = np.array([t_point[list(n_point).index(n)] / t_pair[list(n_pair).index(n)] for n in common])
    for k in range(len(common) - 1):
        if ratio[k] >= 1.0 > ratio[k + 1]:
            a, b = np.log(ratio[k]), np.log(ratio[k + 1])
            return float(np.exp(np.log(common[k]) + a / (a - b) * np.log(common[k + 1] / common[k])))
    return float("nan")


def pair_and_point_sums(repeat, quick):
    model = mf.SelfAttention(BETA)
    n_pair = [512, 1024, 2048, 4096] + ([] if quick else [8192])
    n_point = [512, 1024, 2048, 4096, 8192, 10**4, 3 * 10**4, 10**5] + ([] if quick else [3 * 10**5, 10**6])
    t_pair, t_point = [], []
    for n in n_pair:
        x = uniform_sphere(n, 3, rng=n)
        w = np.full(n, 1.0 / n)
        t_pair.append(median(lambda: kernels.field(model, x, w, x), repeat))
    for n in n_point:
        x = uniform_sphere(n, 3, rng=n)
        w = np.full(n, 1.0 / n)
        t_point.append(median(lambda: sphere_spectral_field(x, w, x, BETA), repeat))
    return np.array(n_pair), np.array(t_pair), np.array(n_point), np.array(t_point)


def sphere_steps(repeat, quick):
    model = mf.SelfAttention(BETA)
    degrees = [31, 63, 127] + ([] if quick else [255, 511])
    out = []
    for L in degrees:
        grid = mf.SphereGrid(L)
        mu = mf.Density.from_function(grid, lambda x: np.exp(2.0 * x[..., 2]))
        h = 1e-3

        def run(k):
            return mf.solve(model, mu, (0.0, k * h), dt=h, representation="grid", refine=False)

        t6 = median(lambda: run(6), repeat)
        t2 = median(lambda: run(2), repeat)
        out.append(max((t6 - t2) / 4.0, 1e-9))
    return np.array(degrees), np.array(out)


def particle_dims(repeat, quick):
    n = 2048
    dims = [2, 4, 8, 16, 32, 64] + ([] if quick else [128])
    out = []
    for d in dims:
        x = uniform_sphere(n, d, rng=d)
        w = np.full(n, 1.0 / n)
        model = mf.SelfAttention(BETA)
        out.append(median(lambda: kernels.field(model, x, w, x), repeat))
    return np.array(dims), np.array(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "cost_curves.png"))
    ap.add_argument("--quick", action="store_true", help="the smaller sizes only (a minute)")
    args = ap.parse_args()
    numba.set_num_threads(1)

    n_pair, t_pair, n_point, t_point = pair_and_point_sums(args.repeat, args.quick)
    L, t_step = sphere_steps(args.repeat, args.quick)
    dims, t_dim = particle_dims(args.repeat, args.quick)
    p_pair, c_pair = slope(n_pair, t_pair)
    large = n_point >= 10**4
    p_point, c_point = slope(n_point[large], t_point[large])
    p_step, _ = slope(L, t_step)
    big = dims >= 16
    p_dim, _ = slope(dims[big], t_dim[big])
    crossover = measured_crossover(n_pair, t_pair, n_point, t_point)
    local = np.log(t_step[-1] / t_step[-2]) / np.log(L[-1] / L[-2])

    print("| curve | sizes | fitted exponent | expected |")
    print("|---|---|---|---|")
    print(f"| S² field, pair sums, t(n) | n = {n_pair[0]}…{n_pair[-1]} | {p_pair:.2f} | 2 |")
    print(f"| S² field, point sums, t(n) | n = {n_point[large][0]}…{n_point[-1]} | {p_point:.2f} | ~1 |")
    print(f"| S² density RK4 step, t(L) | L = {L[0]}…{L[-1]} | {p_step:.2f} (last two sizes: {local:.2f}) | ~3 |")
    print(f"| particle field n = 2048, t(d), d >= 16 | d = {dims[big][0]}…{dims[-1]} | {p_dim:.2f} | ~1 |")
    print(f"crossover, measured: point sums cheaper above n ≈ {crossover:.3g} (particles.simulate's 'auto' chooses "
          "by its own rule; this is this machine's measurement)")
    for name, xs, ts in (("pair", n_pair, t_pair), ("point", n_point, t_point), ("step L", L, t_step),
                         ("dim d", dims, t_dim)):
        print(f"{name}: " + ", ".join(f"{x:g}: {t:.3g} s" for x, t in zip(xs, ts)))

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 4), constrained_layout=True)
    ax = axes[0]
    ax.loglog(n_pair, t_pair, "o-", label=f"pair sums (n^{p_pair:.2f})")
    ax.loglog(n_point, t_point, "s-", label=f"point sums (n^{p_point:.2f})")
    if np.isfinite(crossover):
        ax.axvline(crossover, color="0.6", ls=":", label=f"crossover n ≈ {crossover:.2g}")
    ax.set(xlabel="n (points on S²)", ylabel="seconds per field", title="S² field, SA β = 4, one thread")
    ax.legend()
    ax = axes[1]
    ax.loglog(L, t_step, "o-", label=f"L^{p_step:.2f}")
    ax.set(xlabel="degree L", ylabel="seconds per RK4 step", title="S² density step (ducc0)")
    ax.legend()
    ax = axes[2]
    ax.loglog(dims, t_dim, "o-", label=f"d^{p_dim:.2f} (d >= 16)")
    ax.set(xlabel="d", ylabel="seconds per field", title="pairwise field, n = 2048 on S^(d−1)")
    ax.legend()
    from matplotlib.ticker import NullFormatter

    for ax in axes:
        ax.xaxis.set_minor_formatter(NullFormatter())
    fig.savefig(args.out, dpi=110)
    print(f"figure: {args.out}")


if __name__ == "__main__":
    main()
