"""The S² default chain (issue 39, item 6): SA β = 4 from the uniform law perturbed by 5 % in six bumps on lmax 32,
``solve(model, mu0, (0, 20))`` with every default (grid, refined to lmax 256, then the panels hand over to 104 544
fixed nodes at t = 8.35), its wall time and the two clusters' masses, with the S² point sums as they are (ducc0's
non-uniform transforms from 4096 points) and, with ``--before``, forced back to the O(N L²) recurrences for every
size (how the chain ran before).

Run:  python benchmarks/bench_s2_chain.py [--repeat 3] [--before]
"""

import argparse
import statistics
import time

import numpy as np

import meanfield as mf
from meanfield.domains.sphere import point_sums
from meanfield.lagrangian.clusters import clusters
from meanfield.laws import uniform_noise


def chain():
    grid = mf.SphereGrid(32)
    mu0 = mf.Density(grid, uniform_noise(grid, 0.05, 6, rng=0)(grid.points)).unit_mass()
    t0 = time.perf_counter()
    sol = mf.solve(mf.SelfAttention(4.0), mu0, (0, 20), t_eval=np.linspace(0, 20, 21))
    wall = time.perf_counter() - t0
    return wall, sol, sorted((c.mass for c in clusters(sol.densities[-1])), reverse=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before", action="store_true", help="the recurrences at every size")
    args = parser.parse_args()
    if args.before:
        point_sums.NONUNIFORM_FROM = 10 ** 12
    walls = []
    for _ in range(args.repeat):
        wall, sol, masses = chain()
        walls.append(wall)
        print(f"wall {wall:6.1f} s  {sol.status.value}  hand-overs at t = "
              f"{', '.join(f'{h.t:.3f}' for h in sol.handovers)}  masses {' '.join(f'{m:.10f}' for m in masses)}")
    print(f"median of {args.repeat}: {statistics.median(walls):.1f} s "
          f"({'recurrences' if args.before else 'non-uniform transforms from 4096 points'})")


if __name__ == "__main__":
    main()
