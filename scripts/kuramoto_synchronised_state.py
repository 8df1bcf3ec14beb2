"""The Kuramoto synchronised state with Lorentzian frequencies, from the density on S¹ × R_ω (docs/MATH.md §11).

At β = 0 (θ̇ = ω + c Im(z e^{−iθ})) and a Lorentzian law of width γ < c/2, Ott–Antonsen gives r(t) → r_∞ =
√(1 − 2γ/c). Two ways to put ω on nodes, both run by ``meanfield.solvers.frequencies.solve`` from the same wrapped Cauchy
start (a_0 = 0.1, the same law of θ for every ω):

- **bands** (``Lorentzian(γ).bands(J)``): each node the exact pole of a band of frequencies (width δ = γ/2); the
  bands' free streaming is damped, the finite sum has no recurrence, and r(t) converges to r_∞ fast in J;
- **real nodes** (``Lorentzian(γ).quadrature(J)``): J frequencies; the locked ones collapse to points and are
  handed over to atoms; the finite system's drifting nodes never phase-mix, so r(t) keeps oscillating about r_∞
  by the recurrences of J populations (the error falls slowly in J).

Printed: for each J, the largest |r(t) − r_∞| over t ∈ [T/2, T], the wall time, the nodes handed over; and the
measured order between successive J. About 30 minutes on two cores for the default J = 64, 128, 256.

    python scripts/kuramoto_synchronised_state.py [--J 64 128 256] [--T 100] [--rule bands real]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import meanfield as mf
from meanfield.analysis import exact
from meanfield.solvers import frequencies as fq


def run(rule: str, J: int, T: float, gamma: float = 0.2, c: float = 1.0, a0: float = 0.1):
    law = fq.Lorentzian(gamma)
    if rule == "bands":  # a locked band's law has the width δ/(c r) of its frequencies: n = 512 resolves it
        quad, grid, cfl = law.bands(J), mf.CircleGrid(512), 0.5
    else:  # real nodes collapse (atoms from then on); the grid only has to carry them until then
        quad, grid, cfl = law.quadrature(J), mf.CircleGrid(256), 0.5
    t = np.linspace(0.0, T, int(4 * T) + 1)
    start = time.perf_counter()
    sol = fq.solve(mf.SelfAttention(0.0, V=c * np.eye(2)), mf.Density(grid, exact.wrapped_cauchy(grid.angles, a0)),
                   quad, (0.0, T), t, omega_tol=np.inf, cfl=cfl)
    wall = time.perf_counter() - start
    if sol.status is not mf.Status.SUCCESS:
        raise RuntimeError(sol.message)
    r_inf = exact.lorentzian_order_limit(gamma, c)
    late = sol.t >= T / 2
    return float(np.max(np.abs(sol.order[late] - r_inf))), wall, int(sol.as_points[-1].sum()), sol


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--J", type=int, nargs="+", default=[64, 128, 256])
    parser.add_argument("--T", type=float, default=100.0)
    parser.add_argument("--rule", nargs="+", default=["bands", "real"], choices=["bands", "real"])
    args = parser.parse_args(argv)
    for rule in args.rule:
        print(f"\n{rule}: γ = 0.2, c = 1, r_∞ = {exact.lorentzian_order_limit(0.2, 1.0):.12f}, t ∈ [0, {args.T:g}]")
        print("| J | max |r(t) − r_∞|, t ∈ [T/2, T] | order | nodes as atoms at T | wall (s) |")
        print("|---|---|---|---|---|")
        last = None
        for J in args.J:
            err, wall, atoms, _ = run(rule, J, args.T)
            order = "" if last is None else f"{np.log(last[1] / err) / np.log(J / last[0]):.2f}"
            print(f"| {J} | {err:.3e} | {order} | {atoms} of {J} | {wall:.0f} |", flush=True)
            last = (J, err)


if __name__ == "__main__":
    main()
