"""Synchronisation of repulsive attention on the circle (MATH.md §13): the fraction of uniform starts that
synchronise, with its Clopper–Pearson interval.

SA on S¹ (Q = K = V = I) with β < 0: far tokens weigh more, V = I still attracts. Polyanskiy, Rigollet & Yao (arXiv
2507.22857): from almost every start all n tokens synchronise for β >= −0.16; not for β < −2/3, where the
equilateral triangle (n = 3) is a stable equilibrium (its non-rotational Jacobian eigenvalue is < 0 from β = −2/3 on;
printed below). For each (β, n), ``--seeds`` iid uniform starts run by ``particles.simulate`` (RK4) to t = 50, doubled
up to 800 while any start is neither synchronised (1 − min⟨x_i, x_j⟩ < 1e-8) nor at rest (every |ẋ_i| < 1e-9)
(:func:`validation.synchronisation.synchronisation`). The held starts are described by the numbers of clusters they
rest in (tokens within 1e-6 joined), with how many starts rest in each.

Run:  python scripts/repulsion_synchronisation.py                 (about two minutes on two cores)
      python scripts/repulsion_synchronisation.py --seeds 50      (quick)
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from validation.synchronisation import synchronisation


def triangle_eigenvalue(beta: float) -> float:
    """The largest non-rotational eigenvalue of the Jacobian of θ̇_i = Σ_j e^{β cos(θ_j − θ_i)} sin(θ_j − θ_i)/Z_i
    at the regular 3-gon, by central differences (h = 1e-6)."""
    def v(th):
        d = th[None, :] - th[:, None]
        w = np.exp(beta * np.cos(d))
        return (w * np.sin(d)).sum(1) / w.sum(1)

    th, h = 2 * np.pi * np.arange(3) / 3, 1e-6
    J = np.stack([(v(th + h * e) - v(th - h * e)) / (2 * h) for e in np.eye(3)], axis=1)
    ev = np.sort(np.linalg.eigvals(J).real)
    return float(ev[-2])  # the largest is the rotation's 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=400)
    parser.add_argument("--betas", type=float, nargs="+", default=[-0.1, -0.9, -2.0])
    parser.add_argument("--ns", type=int, nargs="+", default=[3, 5, 10, 50])
    args = parser.parse_args()
    start = time.perf_counter()
    print("the triangle's non-rotational eigenvalue: "
          + ", ".join(f"β = {b:g}: {triangle_eigenvalue(b):+.4f}" for b in (-0.5, -2 / 3, -0.7, -0.9, -2.0)))
    print(f"\n{'β':>6} {'n':>4} {'seeds':>6} {'synced':>7} {'held':>5} {'undecided':>9} {'fraction':>9} "
          f"{'95 % Clopper–Pearson':>22} {'t run':>6}  held in k clusters: starts")
    for beta in args.betas:
        for n in args.ns:
            r = synchronisation(n, beta, args.seeds, rng=[n, int(round(-1000 * beta))])
            lo, hi = r.interval
            print(f"{beta:6g} {n:4d} {r.seeds:6d} {r.synchronised:7d} {r.held:5d} {r.undecided:9d} {r.fraction:9.4f} "
                  f"[{lo:.4f}, {hi:.4f}]{'':>6} {r.t:6g}  "
                  + ", ".join(f"{k}: {c}" for k, c in zip(*np.unique(r.held_clusters, return_counts=True))))
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
