"""The particle step of each normalisation variant against post-LN's, side by side in one run (docs/MATH.md §10).

One RK4 step of n = 4096 tokens (SA β = 1, Q = K = V = I) through ``particles.simulate`` (checks, strategy, the step
itself, four evaluations of the heads' sums), each variant timed in alternation with post-LN (medians of >= 5
pairs, :func:`_timing.interleaved`), at d = 3 and d = 128:

- the variants sum the average A at the directions on post-LN's own paths: the compiled pairwise sums at d = 3,
  the BLAS products of the model's sums at d = 128 (``strategies.BLAS_FROM``); their ratio to post-LN on the same
  path is the cost of the normalisation itself (target <= 1.1×);
- at d = 3 post-LN alone may take the spectral sums of S² ("auto"), which compute P_θA and so are not the
  variants' (:func:`particles.system.particle_strategies`): that ratio is printed too, for what it is.

pre- and peri-LN tokens have radii in [0.5, 2]; nGPT's and post-LN's are unit vectors; Mix-LN is timed in its
post-LN stretch (its pre-LN stretch is pre-LN's step).

Run:  python benchmarks/bench_normalization.py [--repeat 5] [--dims 3 128]

Measured (--repeat 7, OPENBLAS_NUM_THREADS=1, a 2-core machine shared with other jobs: single pairs spread 0.57-1.86),
median ratios to post-LN on the same sums: d = 3 (pairwise) pre 0.99, peri 1.02, nGPT 1.06, Mix-LN 1.03; d = 128
(quadrature) pre 1.04, peri 1.02, nGPT 0.99, Mix-LN 0.92. pre-LN against post-LN's own "auto" at d = 3 (the spectral
sums of S²): 1.11.
"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import particles as pt  # noqa: E402
from meanfield.models import Normalization, SelfAttention, Transformer

from _timing import interleaved  # noqa: E402

VARIANTS = {"pre": "pre", "peri": "peri", "ngpt": Normalization("ngpt", alpha=0.2),
            "mix": Normalization("mix", switch=1e9)}


def step(model, x, dt, strategy):
    return lambda: pt.simulate(model, x, [0.0, dt], dt=dt, strategy=strategy)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dims", type=int, nargs="+", default=[3, 128])
    parser.add_argument("-n", type=int, default=4096)
    args = parser.parse_args()
    n, dt = args.n, 0.01
    att = SelfAttention(1.0)
    print(f"one RK4 step of n = {n} tokens, SA beta = 1; medians of {args.repeat} interleaved pairs")
    for d in args.dims:
        unit = pt.uniform_sphere(n, d, rng=0)
        radial = unit * np.random.default_rng(1).uniform(0.5, 2.0, (n, 1))
        path = pt.simulate(Transformer(att, normalization="pre"), radial, [0, dt], dt=dt).strategy
        post = step(att, unit, dt, path)
        print(f"d = {d}: the variants' path is {path!r}")
        for name, norm in VARIANTS.items():
            x = radial if name in ("pre", "peri") else unit
            tv, tp, ratios = interleaved(step(Transformer(att, normalization=norm), x, dt, path), post,
                                         repeat=args.repeat, min_time=0.2)
            print(f"  {name:5s} {tv * 1e3:9.1f} ms   post-LN {tp * 1e3:9.1f} ms   ratio {np.median(ratios):.3f} "
                  f"[{min(ratios):.3f}, {max(ratios):.3f}]")
        auto = pt.simulate(att, unit, [0, dt], dt=dt).strategy
        if auto != path:
            tv, tp, ratios = interleaved(step(Transformer(att, normalization="pre"), radial, dt, path),
                                         step(att, unit, dt, "auto"), repeat=args.repeat, min_time=0.2)
            print(f"  pre against post-LN's own 'auto' ({auto!r}, P_θA only): {tv * 1e3:.1f} ms against "
                  f"{tp * 1e3:.1f} ms, ratio {np.median(ratios):.2f}")


if __name__ == "__main__":
    main()
