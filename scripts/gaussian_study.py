"""Gaussian closures with random Q, K, V (CACP): covariance trajectories and the low-rank limit.

For random matrices (iid N(0, 1/d) entries) the covariance ODE of softmax
attention (MATH.md §3) is integrated from Σ_0 = I until t_max, finite-time
blow-up, or ‖Σ‖ growing 10⁴-fold (``--escape``; past that the linear map
VΣA makes the ODE so fast that explicit steps stall, and the shape of Σ has
settled);
at the end the numerical rank of Σ(t)/‖Σ(t)‖ (eigenvalues above ``--tol``)
is recorded. The histogram of ranks over many draws shows how often the
dynamics collapses onto a low-dimensional subspace (the rank histogram
study of CACP). Also plotted: the eigenvalues of Σ(t)/‖Σ(t)‖ over time for
a few draws.

Writes ``gaussian_study.png`` and ``gaussian_study.npz`` into ``--output``.

Run:  python scripts/gaussian_study.py --d 4 --draws 200
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np

from meanfield.analysis.gaussian import solve_gaussian
from meanfield.models import Softmax


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--d", type=int, default=4)
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--t-max", type=float, default=10.0)
    ap.add_argument("--tol", type=float, default=1e-3, help="relative eigenvalue threshold of the rank")
    ap.add_argument("--escape", type=float, default=1e4,
                    help="stop a draw once ‖Σ‖ has grown by this factor (counted as escape / blow-up)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--output", type=Path, default=Path("gaussian-study-output"))
    args = ap.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    d = args.d
    t = np.linspace(0.0, args.t_max, 201)
    ranks, blowups, spectra = [], [], []
    for k in range(args.draws):
        Q, K, V = (rng.normal(size=(d, d)) / np.sqrt(d) for _ in range(3))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sol = solve_gaussian(Softmax(Q, K, V), np.zeros(d), np.eye(d), t, blowup=args.escape, rtol=1e-8, atol=1e-12)
        ev = np.linalg.eigvalsh(sol.cov)  # (T, d), ascending
        norm = ev[:, -1:]
        ranks.append(int(np.sum(ev[-1] > args.tol * norm[-1])))
        blowups.append(np.nan if sol.blowup_time is None else sol.blowup_time)
        if k < 4:
            spectra.append((sol.t, ev / norm))
    ranks = np.array(ranks)
    blowups = np.array(blowups)
    hist = np.bincount(ranks, minlength=d + 1)[1:]
    print(f"d = {d}, {args.draws} draws, t_max = {args.t_max:g}: rank of Σ/‖Σ‖ at the end (tol {args.tol:g}):")
    for r, c in enumerate(hist, start=1):
        print(f"  rank {r}: {c}")
    print(f"  blow-up or escape (‖Σ‖ grown {args.escape:g}-fold) before t_max in {np.sum(np.isfinite(blowups))} draws")

    args.output.mkdir(parents=True, exist_ok=True)
    np.savez(args.output / "gaussian_study.npz", ranks=ranks, blowup_time=blowups, d=d, t_max=args.t_max)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for tt, ev in spectra:
        axes[0].semilogy(tt, np.maximum(ev, 1e-16))
    axes[0].set_xlabel("t")
    axes[0].set_ylabel("eigenvalues of Σ(t)/‖Σ(t)‖")
    axes[0].set_title("four random draws")
    axes[1].bar(np.arange(1, d + 1), hist, color="0.4")
    axes[1].set_xlabel(f"rank of Σ/‖Σ‖ at the end (tol {args.tol:g})")
    axes[1].set_ylabel("draws")
    axes[1].set_title(f"softmax, d = {d}, {args.draws} draws")
    fig.tight_layout()
    fig.savefig(args.output / "gaussian_study.png", dpi=110)
    print(f"wrote gaussian_study.png and gaussian_study.npz into {args.output}")


if __name__ == "__main__":
    main()
