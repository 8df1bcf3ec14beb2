"""Spectral convergence in n and RK4 order in time on the circle (SA), as tables.

Errors of the solution at t = 1 from ρ_0 ∝ exp(cos θ + ½ sin 2θ), max norm
relative to max ρ, against n = 512 (space) or DOP853 at rtol 1e-13 (time).
The coarse grids are under-resolved on purpose, so the resolution monitor is
switched off here; "flagged" says whether the default monitor would have
refused the run.

Run:  python scripts/circle_convergence.py
"""

import numpy as np

import meanfield as mf
from meanfield.domains.circle import points_to_angles
from validation import observed_order


def initial(n):
    return mf.Density.from_function(
        mf.CircleGrid(n), lambda x: np.exp(np.cos(points_to_angles(x)) + 0.5 * np.sin(2 * points_to_angles(x)))
    )


def main():
    kw = dict(method="dop853", rtol=1e-13, atol=1e-15)
    off = mf.ResolutionMonitor(tail_tol=1.0, neg_tol=1.0, energy_rtol=1.0)
    ns = [16, 24, 32, 48, 64, 96]
    print("space: max error at t = 1 relative to max ρ (* = refused by the default monitor)")
    print("  beta " + "".join(f"{n:>11d}" for n in ns))
    for beta in (1.0, 4.0, 8.0):
        model = mf.SelfAttention(beta)
        ref = mf.solve(model, initial(512), (0, 1), **kw).densities[-1]
        row = []
        for n in ns:
            d = mf.solve(model, initial(n), (0, 1), monitor=off, **kw).densities[-1]
            err = np.max(np.abs(d.grid.resample(d.values, 512) - ref.values)) / ref.values.max()
            try:
                mf.solve(model, initial(n), (0, 1), refine=False, representation="grid", **kw)  # the fixed grid: would the monitor refuse it?
                flag = " "
            except mf.ResolutionError:
                flag = "*"
            row.append(f"{err:10.1e}{flag}")
        print(f"  {beta:4g} " + "".join(row))

    print("\ntime: RK4 at n = 64, beta = 4, max error at t = 1")
    model, d = mf.SelfAttention(4.0), initial(64)
    ref = mf.solve(model, d, (0, 1), **kw).densities[-1].values
    hs = np.array([1 / 8, 1 / 16, 1 / 32, 1 / 64])
    errs = [np.max(np.abs(mf.solve(model, d, (0, 1), dt=h).densities[-1].values - ref)) for h in hs]
    for h, e in zip(hs, errs):
        print(f"  dt = 1/{int(1 / h):<3d} error {e:.2e}")
    print(f"  observed order {observed_order(hs, errs).order:.3f}")


if __name__ == "__main__":
    main()
