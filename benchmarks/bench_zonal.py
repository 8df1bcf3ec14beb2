"""Zonal densities on S^{d-1} in high dimension, side by side in one run (medians of >= 5; docs/MATH.md §9):

- an RK4 step of SA β = 4 on the zonal grid of S^127 (d = 128) at L = 256, as ``solve`` takes it (coefficient
  stages, :mod:`meanfield.domains.zonal_sphere.continuity`), against a NumPy quadrature loop of the same equation:
  at every stage the kernel sums φ, φ′ at the dealiased rings summed over the grid's rings with the ring kernel
  k(u, v) = e^{βuv} ₀F₁(; (d−1)/2; β²(1−u²)(1−v²)/4) evaluated pair by pair (exp and ₀F₁ per pair, as the S² row's
  anchor evaluates e^{β⟨x,y⟩} per pair), then the same flux and divergence — and, second, the same loop with its
  kernel tabulated once (the best a quadrature can do: two matrix products per stage, like ours);
- a solve to t = 20 at d = 128 (SA β = 4, the default chain: grid from L = 32, refined, then the rings);
- the stationary branch at d = 128 (SA β = 1), 100 values of r in (0, 0.95].

Run:  python benchmarks/bench_zonal.py [--repeat 7]
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy.special import hyp0f1

sys.path.insert(0, str(Path(__file__).resolve().parent))

import meanfield as mf  # noqa: E402
from meanfield.analysis import stationary as st
from meanfield.domains import ZonalGrid, zonal_domain
from meanfield.domains.gegenbauer import gauss, orthonormal
from meanfield.domains.zonal_sphere.continuity import dealiased_nodes

from _anchors import problem_step, rk4_step  # noqa: E402
from _timing import interleaved, median  # noqa: E402


class QuadratureLoop:
    """∂_t c̄ = G (ρψ′) at the dealiased rings with φ, φ′ summed over the grid's rings by the ring kernel, in plain
    NumPy (module docstring); ``tabulated``: the kernel once, else per stage and pair."""

    def __init__(self, grid, beta: float, tabulated: bool):
        d, L = grid.d, grid.lmax
        self.grid, self.beta, self.tabulated = grid, beta, tabulated
        self.u, w = gauss(d, dealiased_nodes(L))
        P, P1 = orthonormal(d, L, self.u, derivatives=1, normalized=True)
        self.P, self.G = P, (P1 * (w * (1 - self.u ** 2))[:, None]).T
        self.v, self.wv = grid.basis.u, grid.basis.mean_weights
        self.b = 0.5 * (d - 1)
        if tabulated:
            self.K, self.dK = self._kernel()

    def _kernel(self):
        u, v, beta = self.u[:, None], self.v[None, :], self.beta
        z = 0.25 * beta * beta * (1 - u * u) * (1 - v * v)
        scale = np.exp(beta * (u * v - 1.0))
        F0, F1 = hyp0f1(self.b, z), hyp0f1(self.b + 1.0, z) / self.b
        return scale * F0, scale * (v * F0 - 0.5 * beta * u * (1 - v * v) * F1)

    def rate(self, values):
        K, dK = (self.K, self.dK) if self.tabulated else self._kernel()
        f = values * self.wv
        psi1 = dK @ f / (K @ f)  # SA, c = 1: (1/β)φ′/φ
        c = self.grid.coefficients(values)
        rate = self.G @ ((self.P @ c) * psi1)
        rate[0] = 0.0
        return self.grid.from_coefficients(rate)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args(argv)
    model = mf.SelfAttention(4.0)
    g = ZonalGrid(128, 256)
    y = mf.Density.from_function(g, mf.laws.uniform_noise(g, 0.2, 4, rng=1)).values
    ours = problem_step(model, g, y, h=1e-3)
    loop = QuadratureLoop(g, 4.0, tabulated=False)
    table = QuadratureLoop(g, 4.0, tabulated=True)
    step = problem_step(model, g, y, h=1e-3)
    step()
    b = step.__self__.y  # the stepper's state after one step: the grid values
    a = rk4_step(loop.rate, y, 1e-3)
    w = g.weights  # in masses: at d = 128 the outer rings' values carry ε‖f‖/√w̄_j (their measure is 1e-76)
    print(f"(one step of the loop and of ours differ by {np.max(np.abs(w * (a - b))) / np.max(np.abs(w * (b - y))):.1e}"
          " of the change of the rings' masses)")
    print("| work | ours | anchor | anchor time | ratio |\n|---|---|---|---|---|")
    t_ours, t_loop, r = interleaved(ours, lambda: rk4_step(loop.rate, y, 1e-3), repeat=args.repeat)
    print(f"| zonal RK4 step, d = 128, L = 256 | {1e3 * t_ours:.2f} ms | NumPy quadrature loop (kernel per pair) | "
          f"{1e3 * t_loop:.1f} ms | {t_loop / t_ours:.0f}× (pairs {min(r):.4f}–{max(r):.4f}) |")
    t_ours, t_tab, r = interleaved(ours, lambda: rk4_step(table.rate, y, 1e-3), repeat=args.repeat, min_time=0.2)
    print(f"| zonal RK4 step, d = 128, L = 256 | {1e3 * t_ours:.2f} ms | NumPy quadrature loop (kernel tabulated) | "
          f"{1e3 * t_tab:.2f} ms | {t_tab / t_ours:.2f}× |")
    g32 = ZonalGrid(128, 32)
    mu0 = mf.Density.from_function(g32, mf.laws.uniform_noise(g32, 0.1, 4, rng=1))
    holder = {}

    def solve():
        holder["sol"] = mf.solve(model, mu0, (0, 20), t_eval=np.linspace(0, 20, 11))

    t_solve = median(solve, repeat=max(3, args.repeat // 2))
    sol = holder["sol"]
    print(f"| solve to t = 20, d = 128, SA β = 4 ({' → '.join(dict.fromkeys(sol.representation))}, "
          f"{len(sol.refinements)} refinements, {sol.status.value}) | {t_solve:.2f} s | — | | target < 5 s |")
    sa = mf.SelfAttention(1.0)
    t_branch = median(lambda: st.branch(sa, zonal_domain(128), np.linspace(0.0095, 0.95, 100)),
                      repeat=max(3, args.repeat // 2))
    print(f"| stationary branch, d = 128, SA β = 1, 100 values of r to 0.95 | {t_branch:.2f} s | — | | "
          "target < 5 s |")


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"({time.perf_counter() - t0:.0f} s)")
