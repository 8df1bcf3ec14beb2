"""The mean-field limit with natural frequencies: N tokens θ̇_i = ω_i + X[μ^N](θ_i) against the density on S¹ × R_ω
(docs/MATH.md §11).

The Kuramoto field (β = 0, Q = K = V = I), Lorentzian frequencies of half-width γ = 0.2 (below γ_c = 1/2: the
incoherent state is unstable), every token's angle drawn from the wrapped Cauchy law f_{a0}, a0 = 0.3, independently
of its frequency. The density is solved with the Lorentzian's pole quadrature (exact for a start independent of ω
and a first-harmonic field: ``meanfield.solvers.frequencies``; at β > 0 it would be the Cauchy-noise model), n = 256; the
tokens are drawn iid (angles exactly from f_{a0}, ω from g) and moved by
``particles.kuramoto.simulate`` (dt = 0.02). At each output time, W_1 between the tokens' empirical law of θ and the
density's marginal (exact on the circle, ``validation.distance``) and |r_N − r| are fitted as C N^α over
N = 10² … 10⁴ with their 95 % intervals (Student t on the regression slope): the iid rate is α = −½.

Run:  python scripts/frequencies_meanfield_limit.py                       (about 10 min on two cores)
      python scripts/frequencies_meanfield_limit.py --ns 100 316 1000 --repeats 4      (quick)
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import meanfield as mf
from meanfield.analysis import exact
from meanfield.solvers import frequencies as fq
from particles import kuramoto
from validation.meanfield_limit import fit_exponent
from validation.wasserstein import distance

BETA, GAMMA, A0 = 0.0, 0.2, 0.3


def density(t_eval, n: int = 256):
    """The marginal of the density on S¹ × R_ω at ``t_eval`` (pole quadrature)."""
    g = mf.CircleGrid(n)
    rho0 = mf.Density(g, exact.wrapped_cauchy(g.angles, A0))
    return fq.solve(mf.SelfAttention(BETA), rho0, fq.Lorentzian(GAMMA), (t_eval[0], t_eval[-1]), t_eval,
                    raise_on_failure=True)


def errors(ns, repeats: int, t_eval, seed: int = 0, dt: float = 0.02):
    """(W_1, |r_N − r|), each of shape (len(ns), repeats, T), and the density's solution."""
    sol = density(t_eval)
    rng = np.random.default_rng(seed)
    w1 = np.empty((len(ns), repeats, len(t_eval)))
    dr = np.empty_like(w1)
    for i, N in enumerate(ns):
        theta = exact.wrapped_cauchy_sample(rng.uniform(0.0, 2.0 * np.pi, (repeats, N)), A0)
        x0 = np.stack([np.cos(theta), np.sin(theta)], axis=-1)
        omega = fq.Lorentzian(GAMMA).sample((repeats, N), rng)
        tr = kuramoto.simulate(mf.SelfAttention(BETA), x0, omega, t_eval, dt=dt)
        dr[i] = np.abs(tr.order - sol.order[:, None]).T
        for k in range(len(t_eval)):
            for b in range(repeats):
                w1[i, b, k] = distance(sol.density(k), tr.x[k, b]).value
    return w1, dr, sol


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ns", type=int, nargs="+", default=[100, 316, 1000, 3162, 10000])
    ap.add_argument("--repeats", type=int, default=6)
    ap.add_argument("--t", type=float, nargs="+", default=[0.0, 1.0, 2.0])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    start = time.perf_counter()
    w1, dr, sol = errors(args.ns, args.repeats, args.t, args.seed)
    print(f"SA β = {BETA:g} (Kuramoto), Lorentzian γ = {GAMMA:g}, f_a0 with a0 = {A0:g}; N = {', '.join(map(str, args.ns))}, "
          f"{args.repeats} repeats, {time.perf_counter() - start:.0f} s")
    for k, t in enumerate(args.t):
        a, (lo, hi) = fit_exponent(args.ns, w1[:, :, k])
        b, (blo, bhi) = fit_exponent(args.ns, dr[:, :, k])
        cells = "  ".join(f"{v:.2e}" for v in w1[:, :, k].mean(axis=1))
        print(f"  t = {t:4.2f}  r = {sol.order[k]:.6f}  mean W1 {cells}   W1 ~ N^{a:.3f} [{lo:.3f}, {hi:.3f}]   "
              f"|r_N - r| ~ N^{b:.3f} [{blo:.3f}, {bhi:.3f}]")


if __name__ == "__main__":
    main()
