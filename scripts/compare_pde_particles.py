"""PDE against particles on the circle: snapshots, Wasserstein gaps over time, the rate in N.

Solves the mean-field equation from μ_0 ∝ exp(κ cos θ + ½ sin 2θ) with SA
(β given), runs particle systems of several sizes N from iid samples of μ_0,
and writes into ``--output``:

- ``snapshots.png``: the density and a histogram of N_max particles at
  several times;
- ``wasserstein.png``: W_1 and W_2 between μ^N_t and μ_t over time, mean over
  the repeats, one curve per N;
- ``rate.png``: W_1 at the final time against N with the fitted power law
  and its 95% confidence band (the expected exponent is −1/2 on the circle);
- ``compare.npz``: the data (t, ns, w1, w2, exponents and intervals).

Run:  python scripts/compare_pde_particles.py            (β = 1, N = 10²..10⁴, t ∈ [0, 2])
      python scripts/compare_pde_particles.py --beta 4 --t-end 3
(S² and R^d comparisons need their solvers, issues 5 and 6.)
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import meanfield as mf
import particles as pt
from meanfield.domains.circle import points_to_angles
from validation.meanfield_limit import meanfield_limit


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--beta", type=float, default=1.0)
    ap.add_argument("--kappa", type=float, default=1.0, help="concentration of the initial density")
    ap.add_argument("--n-grid", type=int, default=128)
    ap.add_argument("--ns", type=int, nargs="+", default=[100, 316, 1000, 3162, 10000])
    ap.add_argument("--repeats", type=int, default=8)
    ap.add_argument("--t-end", type=float, default=2.0)
    ap.add_argument("--times", type=int, default=11, help="number of output times")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--output", type=Path, default=Path("compare-output"))
    args = ap.parse_args(argv)

    grid = mf.CircleGrid(args.n_grid)
    mu0 = mf.Density.from_function(
        grid, lambda x: np.exp(args.kappa * np.cos(points_to_angles(x)) + 0.5 * np.sin(2 * points_to_angles(x)))
    )
    model = mf.SelfAttention(args.beta)
    t = np.linspace(0.0, args.t_end, args.times)
    r1 = meanfield_limit(model, mu0, args.ns, t, repeats=args.repeats, rng=args.seed, p=1)
    r2 = meanfield_limit(model, mu0, args.ns, t, repeats=args.repeats, rng=args.seed, p=2)
    ns = np.asarray(args.ns)
    print(f"SA β = {args.beta:g}, N = {ns.tolist()}, {args.repeats} repeats, t ∈ [0, {args.t_end:g}]")
    for k in (0, t.size // 2, t.size - 1):
        lo, hi = r1.exponent_ci[k]
        print(f"  t = {t[k]:5.2f}: W1 ~ N^{r1.exponent[k]:+.3f}  (95% CI [{lo:+.3f}, {hi:+.3f}]),"
              f"  W2 ~ N^{r2.exponent[k]:+.3f}")

    args.output.mkdir(parents=True, exist_ok=True)
    np.savez(args.output / "compare.npz", t=t, ns=ns, w1=r1.distances, w2=r2.distances,
             exponent_w1=r1.exponent, exponent_w1_ci=r1.exponent_ci, exponent_w2=r2.exponent,
             exponent_w2_ci=r2.exponent_ci, beta=args.beta)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # snapshots: density against a histogram of the largest particle system
    traj = pt.simulate(model, pt.sample(mu0, int(ns.max()), rng=args.seed + 1), t)
    shown = np.unique(np.linspace(0, t.size - 1, 4).astype(int))
    fig, axes = plt.subplots(1, shown.size, figsize=(3.2 * shown.size, 3), sharey=True)
    for ax, k in zip(np.atleast_1d(axes), shown):
        d = r1.solution.densities[k]
        th = np.linspace(0, 2 * np.pi, 600)
        ax.hist(points_to_angles(traj.x[k]), bins=60, range=(0, 2 * np.pi), density=True, color="0.8",
                label=f"N = {ns.max()}")
        ax.plot(th, d.grid.interpolate_angles(d.values, th), "k", label="PDE")
        ax.set_title(f"t = {t[k]:g}")
        ax.set_xlabel("θ")
    np.atleast_1d(axes)[0].legend()
    fig.tight_layout()
    fig.savefig(args.output / "snapshots.png", dpi=110)

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for name, r, ax in (("W₁", r1, axes[0]), ("W₂", r2, axes[1])):
        for i, n in enumerate(ns):
            ax.semilogy(t, r.distances[i].mean(axis=0), label=f"N = {n}")
        ax.set_xlabel("t")
        ax.set_ylabel(f"{name}(μᴺ_t, μ_t), mean of {args.repeats}")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.output / "wasserstein.png", dpi=110)

    fig, ax = plt.subplots(figsize=(5, 4))
    final = r1.distances[:, :, -1]
    ax.loglog(np.repeat(ns, final.shape[1]), final.ravel(), "o", ms=3, color="0.5", label="repeats")
    b, (lo, hi) = r1.exponent[-1], r1.exponent_ci[-1]
    C = np.exp(np.mean(np.log(final)) - b * np.mean(np.log(ns)))
    nn = np.geomspace(ns.min(), ns.max(), 50)
    ax.loglog(nn, C * nn**b, "k", label=f"fit N^{b:.3f}")
    ax.fill_between(nn, C * nn**lo * (ns.min() ** (b - lo)), C * nn**hi * (ns.min() ** (b - hi)), color="k",
                    alpha=0.1, label=f"95% CI [{lo:.2f}, {hi:.2f}]")
    ax.set_xlabel("N")
    ax.set_ylabel(f"W₁(μᴺ_t, μ_t) at t = {t[-1]:g}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.output / "rate.png", dpi=110)
    print(f"wrote snapshots.png, wasserstein.png, rate.png and compare.npz into {args.output}")


if __name__ == "__main__":
    main()
