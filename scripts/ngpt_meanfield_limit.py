"""The mean-field limit of post-LN and nGPT on S¹ and S² (issue 37; docs/MATH.md §10): N tokens against the density.

SA at β = 2 (Q = K = V = I); nGPT with α = 0.5 (θ̇ = α P_θA/|A|), post-LN θ̇ = P_θA. The initial law is the uniform
one perturbed by three random modes of relative amplitude 0.3 (``meanfield.laws.uniform_noise``, seed 1) on the
circle (n = 256) and on S² (lmax 32). The density is solved on the grid (nGPT: the quadrature sums on S¹, the moments
on S², the only strategies that give |A|); the N tokens are drawn iid from it and moved by ``particles.simulate``.
At each output time W_1 between the tokens' empirical law and the density (exact on the circle, exact OT against
the grid measure on S²) is fitted as C N^α over N = 10² … 3·10³ with its 95 % interval
(``validation.meanfield_limit``): the iid rate is α = −½ (on S² up to a √log N factor: E W_1 ≍ √(log N/N) on a
two-dimensional manifold, Ajtai–Komlós–Tusnády, so the S² rows also fit W_1/√log N, whose exponent is −½).

Run:  python scripts/ngpt_meanfield_limit.py                                   (about 10 min on two cores)
      python scripts/ngpt_meanfield_limit.py --domains circle --ns 100 316 1000 --repeats 4          (quick)
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import meanfield as mf
from meanfield import laws
from meanfield.models import Normalization, SelfAttention, Transformer
from validation.meanfield_limit import fit_exponent, meanfield_limit

BETA, ALPHA = 2.0, 0.5
GRIDS = {"circle": lambda: mf.CircleGrid(256), "sphere": lambda: mf.SphereGrid(32)}


def models():
    head = SelfAttention(BETA)
    return {"post": Transformer(head), "ngpt": Transformer(head, normalization=Normalization("ngpt", alpha=ALPHA))}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--domains", nargs="+", default=["circle", "sphere"], choices=tuple(GRIDS))
    ap.add_argument("--normalizations", nargs="+", default=["post", "ngpt"], choices=("post", "ngpt"))
    ap.add_argument("--ns", type=int, nargs="+", default=[100, 316, 1000, 3162])
    ap.add_argument("--repeats", type=int, default=8)
    ap.add_argument("--times", type=float, nargs="+", default=[0.0, 1.0, 2.0])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    print(f"SA β = {BETA:g}, nGPT α = {ALPHA:g}; N = {args.ns}, {args.repeats} repeats; W_1 ~ C N^α, 95 % interval")
    print(f"{'domain':8s} {'model':6s} {'strategy':11s} " + " ".join(f"{'t = %g' % t:>24s}" for t in args.times)
          + "   wall")
    for name in args.domains:
        mu0 = mf.Density.from_function(GRIDS[name](), laws.uniform_noise(name, 0.3, 3, rng=1))
        for kind in args.normalizations:
            start = time.perf_counter()
            r = meanfield_limit(models()[kind], mu0, args.ns, args.times, repeats=args.repeats, rng=args.seed)
            cells = [f"{e:+.3f} [{lo:+.3f}, {hi:+.3f}]" for e, (lo, hi) in zip(r.exponent, r.exponent_ci)]
            print(f"{name:8s} {kind:6s} {r.solution.strategy:11s} " + " ".join(f"{c:>24s}" for c in cells)
                  + f"   {time.perf_counter() - start:.0f} s", flush=True)
            if name == "sphere":  # W_1/√log N: the two-dimensional iid rate's logarithm divided out
                scaled = r.distances / np.sqrt(np.log(np.asarray(args.ns, dtype=float)))[:, None, None]
                fits = [fit_exponent(args.ns, scaled[:, :, k]) for k in range(len(args.times))]
                cells = [f"{e:+.3f} [{lo:+.3f}, {hi:+.3f}]" for e, (lo, hi) in fits]
                print(f"{'':8s} {'':6s} {'/√log N':11s} " + " ".join(f"{c:>24s}" for c in cells), flush=True)


if __name__ == "__main__":
    main()
