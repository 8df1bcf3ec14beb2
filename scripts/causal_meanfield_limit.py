"""The mean-field limit of causal attention on [0, 1] × S¹ (docs/MATH.md §8.4): W1 between N iid tokens (positions
uniform, angles from the law at their position), run causally, and the density on the [0, 1] × S¹ grid, at t = 0
and t = 1, with the fitted rate of W1/√(log N) ~ N^α and its 95% interval (intrinsic dimension 2: α = −½ expected).

Run:  python scripts/causal_meanfield_limit.py          (about eight minutes on two cores)
      python scripts/causal_meanfield_limit.py --decay 3  (the decay mask e^(−λ(s − s')), docs/MATH.md §13)
      python scripts/causal_meanfield_limit.py --rope 4 --angles 64 --rows 17 --repeats 3   (RoPE: every pair of rows
      in the density's sums, m²M² a rate, so a coarser grid)
"""

import argparse
import time

import numpy as np

import meanfield as mf
import particles
from meanfield.models import SelfAttention
from validation.meanfield_limit import fit_exponent
from validation.wasserstein import distance


def law(grid):
    s, th = grid.positions[:, None], grid.angles[None, :]
    return (1.0 + 0.4 * np.cos(th - s) + 0.2 * np.sin(2 * th) * s) / (2 * np.pi)


def main(ns=(100, 400, 1600, 6400, 10000), repeats=5, seed=7, decay=0.0, rope=0.0, angles=128, rows=65):
    g = mf.SequenceGrid(angles, rows)
    rho0 = mf.Density(g, law(g))
    model = SelfAttention(2.0, causal=True, decay=decay, rope=rope)
    sol = mf.solve(model, rho0, (0.0, 1.0), [0.0, 1.0])
    print(f"{model!r} on {g!r}: {sol.status.value}, grid at t = 1: {sol.densities[-1].grid!r}")
    rng = np.random.default_rng(seed)
    W = np.empty((2, len(ns), repeats))
    bound = np.zeros_like(W)
    print("| N | W1 at t = 0 | W1 at t = 1 | bound | seconds |\n|---|---|---|---|---|")
    for i, n in enumerate(ns):
        t0 = time.perf_counter()
        x = particles.simulate(model, particles.sample(rho0, n, rng=rng, batch=repeats), [0.0, 1.0], dt=0.01).x
        for k in range(2):
            d = distance(sol.densities[k], x[k], p=1)
            W[k, i], bound[k, i] = d.value, d.bound
        print(f"| {n} | {W[0, i].mean():.4f} ± {W[0, i].std():.4f} | {W[1, i].mean():.4f} ± {W[1, i].std():.4f} | "
              f"{bound[:, i].max():.1e} | {time.perf_counter() - t0:.0f} |")
    for k, t in enumerate((0.0, 1.0)):
        a, (lo, hi) = fit_exponent(np.array(ns), W[k] / np.sqrt(np.log(ns))[:, None])
        print(f"t = {t:g}: W1/√(log N) ~ N^{a:.3f}, 95% interval [{lo:.3f}, {hi:.3f}]")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decay", type=float, default=0.0, help="λ of the decay mask (default 0: plain causal)")
    parser.add_argument("--rope", type=float, default=0.0, help="ω of the RoPE phases (default 0)")
    parser.add_argument("--ns", type=int, nargs="+", default=[100, 400, 1600, 6400, 10000])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--angles", type=int, default=128)
    parser.add_argument("--rows", type=int, default=65)
    args = parser.parse_args()
    main(ns=tuple(args.ns), repeats=args.repeats, decay=args.decay, rope=args.rope, angles=args.angles,
         rows=args.rows)
