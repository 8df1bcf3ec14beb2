"""Spectral convergence in lmax on S² (SA, fast path), as a table.

Max error at t = 0.5 from ρ_0 ∝ exp(x + ½z² − 0.3yz) against lmax = 48,
relative to max ρ, for β ∈ {1, 4, 9}; the resolution monitor is switched off
for the under-resolved grids ("*" marks those the default monitor refuses).

Run:  python scripts/sphere_convergence.py
"""

import numpy as np

import meanfield as mf


def initial(lmax):
    return mf.Density.from_function(
        mf.SphereGrid(lmax), lambda x: np.exp(x[..., 0] + 0.5 * x[..., 2] ** 2 - 0.3 * x[..., 1] * x[..., 2])
    )


def main():
    kw = dict(method="dop853", rtol=1e-12, atol=1e-14)
    off = mf.ResolutionMonitor(1.0, 1.0, 1.0)
    ls = [6, 8, 12, 16, 20, 24, 32]
    print("max error at t = 0.5 relative to max ρ (* = refused by the default monitor)")
    print("  beta " + "".join(f"{L:>10d}" for L in ls))
    for beta in (1.0, 4.0, 9.0):
        model = mf.SelfAttention(beta)
        ref = mf.solve(model, initial(48), (0, 0.5), **kw).densities[-1]
        row = []
        for L in ls:
            d = mf.solve(model, initial(L), (0, 0.5), monitor=off, **kw).densities[-1]
            err = np.max(np.abs(d.grid.resample(d.values, 48) - ref.values)) / ref.values.max()
            try:
                mf.solve(model, initial(L), (0, 0.5), refine=False, **kw)  # the fixed grid: refused by the monitor?
                flag = " "
            except mf.ResolutionError:
                flag = "*"
            row.append(f"{err:9.1e}{flag}")
        print(f"  {beta:4g} " + "".join(row))


if __name__ == "__main__":
    main()
