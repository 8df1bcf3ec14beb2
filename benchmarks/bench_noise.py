"""What noise costs, side by side in one run (medians of >= 5; docs/MATH.md §7, PERFORMANCE.md):

- an RK4 step of SA β = 4 on S² at L = 63, 127 with noise D = 0.05 (Lawson RK4 on the coefficient stages)
  against the noiseless step, both as ``solve`` takes them (``GridProblem.stages``);
- a bifurcation diagram on S² (the single-cluster branch at 50 order parameters, Newton in r, and the states at
  50 noise values) at lmax 64 for the stability of 5 of them;
- an RK4 step of n = 4096 noisy particles on S² (Strang splitting, one RK4 step and one Brownian draw) against
  the noiseless step.

Run:  python benchmarks/bench_noise.py [--repeat 7]
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import meanfield as mf  # noqa: E402
import particles as pt  # noqa: E402
from meanfield.analysis import stationary as st
from meanfield.domains import SPHERE
from meanfield.integrate.steppers import FixedStepper
from meanfield.representations import GridProblem


def median(f, repeat):
    f()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def step(model, grid, y, h=1e-3):
    """One RK4 step as solve takes it (stages and, with noise, the integrating factor), from its last state."""
    problem = GridProblem(model, grid, "auto", False, grid.n)
    stepper = FixedStepper(problem.rate, 0.0, y, np.inf, h=h, stages=problem.stages())
    return stepper.step


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args(argv)
    print("| work | noisy | noiseless | ratio |\n|---|---|---|---|")
    for L in (63, 127):
        g = mf.SphereGrid(L)
        y = mf.Density.from_function(g, SPHERE.uniform_noise(0.3, 6, np.random.default_rng(0))).unit_mass().values
        t_noisy = median(step(mf.SelfAttention(4.0, noise=0.05), g, y), args.repeat)
        t_plain = median(step(mf.SelfAttention(4.0), g, y), args.repeat)
        print(f"| S² SA β=4 RK4 step, L = {L} | {1e3 * t_noisy:.2f} ms | {1e3 * t_plain:.2f} ms | "
              f"{t_noisy / t_plain:.2f} |")
    model = mf.SelfAttention(4.0, normalized=False)

    def diagram():
        b = st.branch(model, SPHERE, np.linspace(0.01, 0.95, 50))
        states = [st.stationary_states(b, D) for D in np.linspace(0.5 * b.critical, b.noise.max(), 50)]
        g = mf.SphereGrid(64)
        for s in b.states[::10]:
            st.stability(model, s, g, noise=s.noise)
        return states

    t0 = time.perf_counter()
    diagram()
    print(f"| S² bifurcation diagram: branch of 50 points, states at 50 D, stability of 5 at lmax 64 | "
          f"{time.perf_counter() - t0:.1f} s | — | |")
    x = pt.uniform_sphere(4096, 3, rng=1)
    for_noisy = mf.SelfAttention(2.0, noise=0.1)
    t_noisy = median(lambda: pt.simulate(for_noisy, x, [0, 0.05], dt=0.05, rng=2), args.repeat)
    t_plain = median(lambda: pt.simulate(mf.SelfAttention(2.0), x, [0, 0.05], dt=0.05), args.repeat)
    print(f"| particles n = 4096 on S², one step (simulate) | {1e3 * t_noisy:.1f} ms | {1e3 * t_plain:.1f} ms | "
          f"{t_noisy / t_plain:.2f} (one output interval of one step: the splitting's extra half step included) |")
    t_noisy = median(lambda: pt.simulate(for_noisy, x, [0, 1.0], dt=0.05, rng=2), max(3, args.repeat // 2))
    t_plain = median(lambda: pt.simulate(mf.SelfAttention(2.0), x, [0, 1.0], dt=0.05), max(3, args.repeat // 2))
    print(f"| particles n = 4096 on S², 20 steps | {1e3 * t_noisy:.1f} ms | {1e3 * t_plain:.1f} ms | "
          f"{t_noisy / t_plain:.2f} |")


if __name__ == "__main__":
    main()
