"""The mean-field limit of pre- and peri-LN on S¹ × (0, ∞): N particles against the density (docs/MATH.md §10.1).

ρ_0(θ, s) = f(θ) g(s), s = log r: f the von Mises law of concentration 2 about θ = 1, g the normal law N(2, 0.25²)
(radii about e² ≈ 7.4). The density is solved by :func:`meanfield.solvers.cylinder.solve_radial` (SA, β = 1, Q = K = V = I;
n_θ = 128, n_s = 256 cells on s ∈ [−0.5, 4.5]); N tokens x = rθ drawn iid from ρ_0 follow the same model as
particles (:func:`particles.simulate`, RK4, dt = 0.02: its error ~1e-8, far below W1). At each output time two
exact one-dimensional distances are measured, both by ``validation.marginal_w1`` between the density's frame
(``Solution.frame(k)``, whose grid gives its marginals) and the tokens:

- W1 between the directions' laws on the circle (the density's marginal ρ̄ = ∫ρ ds through the exact CDF of its
  trigonometric interpolant, within π/2^20; the particles' directions x/|x|);
- W1 between the laws of s = log r, ∫|F − F_N| ds, F the density's CDF (piecewise linear: the cell averages are
  constant on each cell) and F_N the particles' empirical CDF (exact, piece by piece in closed form).

Both marginals are one-dimensional, so for iid samples E W1 ≍ N^{-1/2}; the stability of the flow carries the rate
to every t. The exponent of W1 ~ C N^α is fitted over (N, repeat) with its 95 % interval (Student t on the slope,
``validation.meanfield_limit.fit_exponent``). The density's own error (second order in Δs, 1e-4 in the moments at
this grid) is far below the smallest W1 (~2e-3 at N = 4000).

Run:  python scripts/cylinder_meanfield_limit.py                       (about 2 min on two cores)
      python scripts/cylinder_meanfield_limit.py --ns 250 1000 --repeats 3 --kind peri   (quick)
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import particles as pt
from meanfield.solvers.cylinder import solve_radial
from meanfield.models import SelfAttention, Transformer
from validation import marginal_w1
from validation.meanfield_limit import fit_exponent

KAPPA, MU = 2.0, 1.0  # the directions' von Mises law
S0, SIGMA = 2.0, 0.25  # the law of s = log r
RADII = (np.exp(-0.5), np.exp(4.5))


def rho0(theta, s):
    """f(θ) g(s), with respect to dθ ds."""
    from scipy.special import i0

    f = np.exp(KAPPA * np.cos(theta - MU)) / (2.0 * np.pi * i0(KAPPA))
    return f * np.exp(-0.5 * ((s - S0) / SIGMA) ** 2) / (SIGMA * np.sqrt(2.0 * np.pi))


def sample(n: int, rng, batch: int = 1) -> np.ndarray:
    """iid tokens x = e^s (cos θ, sin θ) from ρ_0, shape (batch, n, 2)."""
    theta = rng.vonmises(MU, KAPPA, size=(batch, n))
    r = np.exp(rng.normal(S0, SIGMA, size=(batch, n)))
    return r[..., None] * np.stack([np.cos(theta), np.sin(theta)], axis=-1)


def run(ns, repeats: int, t_eval, kind: str = "pre", seed: int = 0, n_theta: int = 128, n_s: int = 256,
        dt: float = 0.02):
    """W1 of the two marginals, shape (2, len(ns), repeats, T) (directions, log r), and the fitted exponents with
    their intervals per marginal and time."""
    model = Transformer(SelfAttention(1.0), normalization=kind)
    t_eval = np.asarray(t_eval, dtype=float)
    sol = solve_radial(model, rho0, (t_eval[0], t_eval[-1]), t_eval, n_theta=n_theta, n_s=n_s, radii=RADII)
    rng = np.random.default_rng(seed)
    D = np.empty((2, len(ns), repeats, t_eval.size))
    for i, n in enumerate(ns):
        tr = pt.simulate(model, sample(n, rng, repeats), t_eval, dt=dt, strategy="pairwise")
        for k in range(t_eval.size):  # the density's frame against the (repeats, n, 2) tokens, marginal by marginal
            w = marginal_w1(sol.solution.frame(k), tr.x[k])
            D[0, i, :, k], D[1, i, :, k] = w["direction"], w["log r"]
    fits = [[fit_exponent(ns, D[m, :, :, k]) for k in range(t_eval.size)] for m in range(2)]
    return D, fits, sol


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ns", type=int, nargs="+", default=[250, 500, 1000, 2000, 4000])
    ap.add_argument("--repeats", type=int, default=4)
    ap.add_argument("--t", type=float, nargs="+", default=[0.0, 0.5, 1.0])
    ap.add_argument("--kind", choices=["pre", "peri"], nargs="+", default=["pre", "peri"])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    for kind in args.kind:
        start = time.perf_counter()
        D, fits, sol = run(args.ns, args.repeats, args.t, kind, args.seed)
        print(f"{kind}-LN: N = {', '.join(map(str, args.ns))}, {args.repeats} repeats, mass drift "
              f"{sol.mass_drift:.1e}, {time.perf_counter() - start:.0f} s")
        for m, name in enumerate(("direction", "log r")):
            for k, t in enumerate(args.t):
                slope, (lo, hi) = fits[m][k]
                cells = "  ".join(f"{v:.3e}" for v in D[m, :, :, k].mean(axis=1))
                print(f"  {name:9s} t = {t:4.2f}  mean W1 {cells}   W1 ~ N^{slope:.3f} [{lo:.3f}, {hi:.3f}]")


if __name__ == "__main__":
    main()
