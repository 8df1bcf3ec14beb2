"""The README's picture: clusters forming on the circle, the density and the particles that follow it.

SA with β = 4 (GLPR (2.3); the density's continuity equation of docs/MATH.md §2) from the uniform density
perturbed by three Fourier modes, solved as a density (the solver refines the grid as the clusters sharpen), and
N = 2000 particles drawn from the same initial density, integrated with the same model. Left: the heat map of
ρ(t, θ) with some of the particles' paths θ_i(t) over it; right: the two laws at the last time by their
distribution functions, and their Wasserstein distance W1 (``validation.w1``): the mean-field limit, up to its
N^{-1/2} sampling error (with N = 200 the two close clusters near θ = 4.3 and 5.7 may merge into one for the
particles, a fluctuation of that size).

A real solve with the library, about 10–20 s on two cores (numba compiles its kernels on a first run). Writes
``docs/_static/readme_clusters.png`` (about 100 KB; ``*.png`` is gitignored, so it is committed with
``git add -f``).

Run:  python scripts/readme_figure.py [--output PATH]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

OUTPUT = Path(__file__).resolve().parents[1] / "docs" / "_static" / "readme_clusters.png"


def solve(t_end=5.0, frames=101, n_particles=2000):
    """The density solution and the particles' positions (frames, N, 2) at ``frames`` equally spaced times."""
    import meanfield as mf
    import particles as pt

    grid = mf.CircleGrid(128)
    rho0 = mf.Density.from_function(grid, mf.laws.uniform_noise(grid, 0.33, 3, rng=0))
    model = mf.SelfAttention(beta=4.0)
    t_eval = np.linspace(0.0, t_end, frames)
    sol = mf.solve(model, rho0, (0.0, t_end), t_eval=t_eval, method="rk45", max_n=4096)
    sol.raise_for_status()
    x = pt.simulate(model, pt.sample(rho0, n_particles, rng=1), t_eval).x
    return sol, x


def figure(sol, x):
    """The two panels (see the module docstring). Returns the Figure."""
    import matplotlib.pyplot as plt

    from meanfield.plotting import plot_spacetime
    from validation import w1

    angles = np.mod(np.arctan2(x[..., 1], x[..., 0]), 2 * np.pi)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(8.0, 3.0), width_ratios=(2.0, 1.0), layout="constrained")
    plot_spacetime(sol, ax=ax)
    paths = angles.copy()
    paths[1:][np.abs(np.diff(angles, axis=0)) > np.pi] = np.nan  # break a path where it crosses θ = 0
    shown = paths[:, :: max(1, paths.shape[1] // 150)]  # about 150 paths, so the density shows between them
    ax.plot(sol.t, shown, color="w", lw=0.4, alpha=0.45)
    ax.set_title(f"SA, β = 4: the density ρ(t, θ) and {shown.shape[1]} of N = {paths.shape[1]} particles θ_i(t)",
                 fontsize=9)
    # the two laws at the last time by their distribution functions F(θ) = μ([0, θ]), whose L¹ distance on the
    # line is W1 there (on the circle W1 is that distance minimised over a shift of F: validation.w1)
    d = sol.densities[-1]
    th = np.append(d.grid.angles, 2 * np.pi)
    h = 2 * np.pi / d.grid.n
    cdf = np.concatenate([[0.0], np.cumsum(d.values * h)])  # node values times the cell: the rectangle rule
    bx.plot(th - h / 2, cdf / cdf[-1], color="k", lw=1.2, label="density")
    bx.step(np.sort(angles[-1]), np.arange(1, angles.shape[1] + 1) / angles.shape[1], where="post",
            color="tab:cyan", lw=1.0, ls="--", label=f"N = {angles.shape[1]}")
    bx.set(xlabel="θ", ylabel="F(θ) = μ([0, θ])", xlim=(0, 2 * np.pi), ylim=(0, 1))
    bx.set_xticks([0, np.pi, 2 * np.pi], ["0", "π", "2π"])
    bx.set_title(f"t = {sol.t[-1]:g}: W1 = {w1(d, x[-1]):.3f}", fontsize=9)
    bx.legend(fontsize=7, frameon=False, loc="upper left")
    return fig


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=OUTPUT, help=f"the PNG to write (default {OUTPUT})")
    args = parser.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    sol, x = solve()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    figure(sol, x).savefig(args.output, dpi=110)
    print(f"{args.output}: {args.output.stat().st_size / 1024:.0f} KB; solver {sol.status}, "
          f"refinements {[(round(t, 2), a, b) for t, a, b in sol.refinements]}")


if __name__ == "__main__":
    main()
