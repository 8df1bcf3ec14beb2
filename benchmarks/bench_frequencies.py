"""A step of the density with natural frequencies against the circle steps it replaces (issue 38, docs/MATH.md §12).

One RK4 step (as ``meanfield.solvers.frequencies.solve`` takes it: Lawson's integrating factor on the node coefficients,
``FrequencyProblem.stages``) of 64 Gauss–Hermite frequency nodes × n = 256 (SA, β = 4, σ = 0.5), against 64
independent RK4 steps of the library's circle solver at n = 256 (``GridProblem`` as ``solve`` takes it, the spectral
right-hand side, a FixedStepper step each). Both from resolved perturbed-uniform states, the same step h. Medians of
``--repeat`` interleaved timings (``_timing.interleaved``), the ratio printed; target <= 1.5.

Run:  python benchmarks/bench_frequencies.py [--repeat 7] [--nodes 64] [--n 256]
"""

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import meanfield as mf  # noqa: E402
from _timing import interleaved  # noqa: E402
from meanfield.solvers import frequencies as fq
from meanfield.domains.circle import fourier
from meanfield.integrate import FixedStepper
from meanfield.representations import GridProblem


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--nodes", type=int, default=64)
    ap.add_argument("--n", type=int, default=256)
    args = ap.parse_args(argv)
    J, n, h = args.nodes, args.n, 1e-3
    model = mf.SelfAttention(4.0)
    g = mf.CircleGrid(n)
    rng = np.random.default_rng(0)
    rho = mf.Density.from_function(g, mf.domains.CIRCLE.uniform_noise(0.2, 4, rng)).unit_mass()
    quad = fq.Gaussian(0.5).quadrature(J)

    problem = fq.FrequencyProblem(model, g, quad)
    y = fourier.coefficients(np.broadcast_to(rho.values, (J, n))).astype(complex)
    ours = FixedStepper(problem.rate, 0.0, y, np.inf, h=h, stages=problem.stages())

    circle = GridProblem(model, g, "auto", False, n)
    steppers = [FixedStepper(circle.rate, 0.0, rho.values.copy(), np.inf, h=h, stages=circle.stages())
                for _ in range(J)]

    def frequency_step():
        ours.step()

    def circle_steps():
        for s in steppers:
            s.step()

    t_ours, t_circle, ratios = interleaved(frequency_step, circle_steps, repeat=args.repeat, min_time=0.2)
    print("| work | time | ratio |\n|---|---|---|")
    print(f"| one RK4 step, {J} ω-nodes × n = {n} (frequencies.solve's) | {1e3 * t_ours:.2f} ms | "
          f"{t_ours / t_circle:.2f} (pairs {min(ratios):.2f}–{max(ratios):.2f}; target <= 1.5) |")
    print(f"| {J} independent circle RK4 steps, n = {n} (solve's GridProblem, strategy "
          f"{circle.strategy!r}) | {1e3 * t_circle:.2f} ms | 1 |")


if __name__ == "__main__":
    main()
