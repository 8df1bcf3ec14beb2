"""The clustering phase diagram over (t, β) (GLPR §6.3, Figure 3).

For each β, ``realisations`` systems of n particles iid uniform on S^{d-1}
follow SA (Q = K = V = I); at each time the statistic

    p(t, β) = P(⟨x_1(t), x_2(t)⟩ >= 1 − δ)

is estimated by the fraction of all ordered pairs i ≠ j, over all
realisations, within δ (the same expectation by permutation equivariance,
with far less variance than using the first pair only). Also recorded: the
fraction of realisations that form a single cluster at tolerance δ.

Overlaid: the equiangular curve t*(β), where the solution of GLPR (6.9) from
ρ(0) = 0 with the same n reaches 1 − δ (MATH.md §3; exact for orthogonal
starts in d >= n, and for iid starts the limit d → ∞ of GLPR Theorem 6.9: at
d = 128 > n = 32 the iid tokens are nearly orthogonal and cluster along it).

In d > n (``--d 128``, GLPR §6) each system runs in the n-dimensional span of
its initial tokens (``particles.span``: exact, a quarter of the coordinates at
n = 32), on the fused zonal kernel (``particles.fused``).

The step is dt = c/(1 + β) (c = 2 by default), cut to land on the output
grid. ``--check-step`` reruns the first, middle and last β with half the step
actually taken (the output spacing caps it at small β) from the same initial
points and prints the largest change of the statistic against its Hoeffding
half-width √(log(2/α)/(2R)) at α = 0.05 (R systems: 0.042 at R = 1024), the
statistical error it must stay well below. Measured with 1024 systems and
10 β (steps 0.25, 0.25, 0.125 halved at β = 0.1, 5.04, 9): d = 3, 5.3e-5,
1.6e-5, 1.6e-5; d = 128, 5.1e-4, 9.3e-5, 0 (at β = 9 no pair is within δ by
t = 30).

Cost at d = 128 (1024 systems, 10 β, --serial, on a shared 2-core machine):
128 s, 12.8 s a β, with 6.4 GB resident (the study keeps each β's 121
frames of positions, 4.06 GB); before the span reduction, 26.6 s a β for 256
systems.

It runs as a sweep of a study over β (:func:`meanfield.study.sweep`, the same
as ``meanfield sweep examples/phase_diagram.toml --over beta=0.1:9:90``): on a
local dask cluster with one process per core, or ``--serial``.

Writes ``phase_diagram.png`` and ``phase_diagram.npz`` (beta, t, p_pair,
p_single, t_star) into ``--output``.

Run:  python scripts/phase_diagram.py            (defaults of issue 3)
      python scripts/phase_diagram.py --realisations 64 --betas 10   (quick)
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

from meanfield.study import sweep


def equiangular_time(n: int, beta: float, delta: float, t_max: float) -> float:
    """t* with ρ(t*) = 1 − δ for GLPR (6.9); inf if not reached by t_max."""
    def rhs(_, r):
        return 2.0 * (1.0 - r) * ((n - 1) * r + 1.0) / (np.exp(beta * (1.0 - r)) + n - 1)

    hit = lambda _, r: r[0] - (1.0 - delta)
    hit.terminal = True
    sol = solve_ivp(rhs, (0.0, t_max), [0.0], events=hit, rtol=1e-10, atol=1e-12)
    return float(sol.t_events[0][0]) if sol.t_events[0].size else np.inf


def study(n, d, realisations, t, delta, c, seed) -> dict:
    """The phase diagram as a study (examples/phase_diagram.toml with these settings)."""
    return {
        "name": "phase_diagram", "domain": "sphere", "dimension": d, "seed": seed,
        "model": {"beta": 1.0}, "initial": {"kind": "uniform"},
        "time": {"t_eval": [float(v) for v in t]},
        "particles": {"n": [n], "repeats": realisations, "delta": delta, "dt_factor": c, "save_positions": False},
    }


def taken_step(beta: float, c: float, spacing: float) -> float:
    """The RK4 step the study takes at β: dt = c/(1 + β) cut to the fewest equal steps of an output interval."""
    return spacing / max(1, int(np.ceil(spacing / (c / (1.0 + beta)) * (1.0 - 1e-12))))


def hoeffding(realisations: int, alpha: float = 0.05) -> float:
    """Half-width √(log(2/α)/(2R)) of the statistic: a mean of R independent per-system fractions in [0, 1]."""
    return float(np.sqrt(np.log(2.0 / alpha) / (2.0 * realisations)))


def run(n, d, realisations, betas, t, delta, c, seed, progress=None, scheduler=None, workers=None):
    """p_pair and p_single, shape (len(betas), len(t)), by a sweep of the study over β."""
    ds = sweep(study(n, d, realisations, t, delta, c, seed), {"beta": [float(b) for b in betas]},
               scheduler=scheduler, workers=workers, output=False, progress=progress)
    frac = ds["pair_fraction"].isel(n_particles=0).transpose("beta", "repeat", "time").values
    return frac.mean(axis=1), (frac >= 1.0).mean(axis=1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=32)
    ap.add_argument("--d", type=int, default=3)
    ap.add_argument("--realisations", type=int, default=1024)
    ap.add_argument("--betas", type=int, default=90, help="number of β values in [beta-min, beta-max]")
    ap.add_argument("--beta-min", type=float, default=0.1)
    ap.add_argument("--beta-max", type=float, default=9.0)
    ap.add_argument("--t-max", type=float, default=30.0)
    ap.add_argument("--dt-out", type=float, default=0.25, help="spacing of the output times")
    ap.add_argument("--delta", type=float, default=1e-3)
    ap.add_argument("--c", type=float, default=2.0, help="step factor: dt = c/(1 + β)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--check-step", action="store_true", help="rerun 3 β values at half the step")
    ap.add_argument("--serial", action="store_true", help="no dask: run the β values one after the other")
    ap.add_argument("--workers", type=int, default=None, help="processes of the local dask cluster")
    ap.add_argument("--output", type=Path, default=Path("phase-diagram-output"))
    args = ap.parse_args(argv)

    betas = np.linspace(args.beta_min, args.beta_max, args.betas)
    t = np.arange(0.0, args.t_max + 0.5 * args.dt_out, args.dt_out)
    start = time.perf_counter()
    scheduler = "serial" if args.serial else None
    p_pair, p_single = run(args.n, args.d, args.realisations, betas, t, args.delta, args.c, args.seed,
                           scheduler=scheduler, workers=args.workers)
    elapsed = time.perf_counter() - start
    t_star = np.array([equiangular_time(args.n, b, args.delta, args.t_max) for b in betas])
    print(f"phase diagram: n = {args.n}, d = {args.d}, {args.realisations} realisations, "
          f"{betas.size} β in [{betas[0]:g}, {betas[-1]:g}], t in [0, {args.t_max:g}]: {elapsed:.1f} s")

    if args.check_step:  # each β with half the step it took, from the same initial points (the study's seed)
        idx = np.unique([0, betas.size // 2, betas.size - 1])
        changes = []
        for i in idx:
            half = 0.5 * taken_step(betas[i], args.c, args.dt_out) * (1.0 + betas[i])  # c giving half that step
            fine, _ = run(args.n, args.d, args.realisations, betas[i:i + 1], t, args.delta, half, args.seed,
                          progress=False, scheduler="serial")
            changes.append(np.max(np.abs(fine[0] - p_pair[i])))
        bound = hoeffding(args.realisations)
        print(f"step check at β = {np.round(betas[idx], 3).tolist()} (steps "
              f"{[round(taken_step(b, args.c, args.dt_out), 4) for b in betas[idx]]} halved): max |p(h) − p(h/2)| = "
              f"{', '.join(f'{v:.1e}' for v in changes)}; Hoeffding half-width √(log(2/α)/(2R)) = {bound:.3f} "
              f"(α = 0.05): {'converged' if max(changes) < bound else 'NOT converged: lower --c'}")

    args.output.mkdir(parents=True, exist_ok=True)
    np.savez(args.output / "phase_diagram.npz", beta=betas, t=t, p_pair=p_pair, p_single=p_single, t_star=t_star,
             n=args.n, d=args.d, realisations=args.realisations, delta=args.delta)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    im = ax.pcolormesh(betas, t, p_pair.T, shading="nearest", cmap="Blues", vmin=0, vmax=1)
    fig.colorbar(im, ax=ax, label=f"P(⟨x₁(t), x₂(t)⟩ ≥ 1 − δ), δ = {args.delta:g}")
    finite = np.isfinite(t_star)
    ax.plot(betas[finite], t_star[finite], "r-", lw=1.5, label="equiangular curve, GLPR (6.9)")
    ax.set_xlabel("β")
    ax.set_ylabel("t")
    ax.set_ylim(0, args.t_max)
    ax.set_title(f"clustering phase diagram: n = {args.n}, d = {args.d}, {args.realisations} realisations")
    ax.legend(loc="upper right")
    fig.tight_layout()
    fig.savefig(args.output / "phase_diagram.png", dpi=120)
    print(f"wrote {args.output / 'phase_diagram.png'} and {args.output / 'phase_diagram.npz'}")


if __name__ == "__main__":
    main()
