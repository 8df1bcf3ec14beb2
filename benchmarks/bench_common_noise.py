"""What a common noise costs a density step on the circle, side by side in one run (issue 48: ≤ 1.2×; MATH.md §13).

A run of 40 steps of SA β = 4 on S¹ (n = 256 and 1024 nodes, RK4 with dt = the path's step h = 0.01):

- noiseless: ``meanfield.solve(..., representation="grid", dt=h, refine=False)``, today's grid run;
- common noise: ``meanfield.solve(..., common_noise=)`` on a CommonPath with the same h — one noise map per step between the RK4
  steps: a rotation (skew Σ: the Fourier shift) and a general Σ (the interpolant at the preimages times the
  Jacobian, a non-uniform FFT); and the general Σ on a path of step 2h (one map per two RK4 steps of h).

Both timings are medians of >= 5 runs taken in alternation (``_timing.interleaved``), the ratio is per step (the
same number of steps in both), in one run of this script.

Run:  python benchmarks/bench_common_noise.py [--repeat 7]
"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import meanfield as mf  # noqa: E402
from meanfield.models.common_noise import CommonNoise, CommonPath

from _timing import interleaved  # noqa: E402

J = np.array([[0.0, -1.0], [1.0, 0.0]])
SIGMAS = {"rotation (skew Σ = 0.5 J)": 0.5 * J,
          "general Σ (0.4 diag(1, −1) + 0.5 J)": np.array([[0.4, -0.5], [0.5, -0.4]])}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args(argv)
    if args.repeat < 5:
        ap.error("--repeat must be >= 5 (medians of at least 5)")
    h, steps = 0.01, 40
    t = np.array([0.0, steps * h])
    model = mf.SelfAttention(4.0)
    print("| density step on S¹, SA β = 4 | n | common noise | noiseless | ratio (median of pairs) |\n"
          "|---|---|---|---|---|")
    for n in (256, 1024):
        g = mf.CircleGrid(n)
        mu = mf.Density.from_function(g, lambda x: np.exp(1.5 * x[..., 0] + 0.4 * x[..., 1]))
        for (name, S), path_step in [(item, h) for item in SIGMAS.items()] + [(
                ("general Σ, path step 2h", SIGMAS["general Σ (0.4 diag(1, −1) + 0.5 J)"]), 2 * h)]:
            noise = CommonNoise(S, CommonPath(1, path_step, t[-1], seed=1))
            noise.half_maps()  # the path's maps once, as a run that reuses its path

            def noisy():
                sol = mf.solve(model, mu, (t[0], t[-1]), t_eval=t, dt=h, common_noise=noise)
                assert sol.nsteps == steps, sol.nsteps

            def plain():
                sol = mf.solve(model, mu, (t[0], t[-1]), t_eval=t, dt=h, representation="grid", refine=False)
                assert sol.nsteps == steps, sol.nsteps

            a, b, ratios = interleaved(noisy, plain, repeat=args.repeat)
            print(f"| {name} | {n} | {1e3 * a / steps:.3f} ms/step | {1e3 * b / steps:.3f} ms/step | "
                  f"{np.median(ratios):.3f} |")


if __name__ == "__main__":
    main()
