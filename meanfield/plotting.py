"""Figures of solutions (matplotlib only): circle space-time heat maps, S² Mollweide maps and snapshot grids, energy curves."""

from __future__ import annotations

import numpy as np

from .grids.circle import CircleGrid

__all__ = ["circle_spacetime", "plot_spacetime", "plot_energy", "plot_solution", "sphere_map", "plot_sphere",
           "plot_sphere_solution", "plot_particles_2d"]


def circle_spacetime(solution) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The circle solution on one grid: ``(t, theta, rho)`` with rho of shape (len(t), n).

    Snapshots on coarser grids (before a refinement) are zero-padded to the
    finest grid, which is exact for their trigonometric interpolants.
    """
    grids = [d.grid for d in solution.densities]
    if not all(isinstance(g, CircleGrid) for g in grids):
        raise TypeError("circle_spacetime needs a solution on a CircleGrid.")
    n = max(g.n for g in grids)
    rho = np.array([d.grid.resample(d.values, n) if d.grid.n != n else d.values for d in solution.densities])
    return np.asarray(solution.t), CircleGrid(n).angles, rho


def plot_spacetime(solution, ax=None, cmap="magma", log=False):
    """Heat map of ρ(t, θ) for a circle solution. Returns the Axes."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm

    t, theta, rho = circle_spacetime(solution)
    if ax is None:
        _, ax = plt.subplots()
    norm = None
    if log:
        pos = rho[rho > 0]
        norm = LogNorm(vmin=max(pos.min(), pos.max() * 1e-6), vmax=pos.max())
        rho = np.where(rho > 0, rho, np.nan)
    im = ax.pcolormesh(t, np.append(theta, 2 * np.pi), np.vstack([rho.T, rho[:, :1].T]),
                       shading="nearest", cmap=cmap, norm=norm)
    ax.set_xlabel("t")
    ax.set_ylabel("θ")
    ax.set_yticks([0, np.pi / 2, np.pi, 3 * np.pi / 2, 2 * np.pi], ["0", "π/2", "π", "3π/2", "2π"])
    ax.figure.colorbar(im, ax=ax, label="ρ(t, θ)")
    return ax


def plot_energy(solution, ax=None, **kwargs):
    """E_β along the solution (every accepted step). Returns the Axes."""
    import matplotlib.pyplot as plt

    if solution.energy_steps is None:
        raise ValueError("this solution has no energy (non-zonal model, or β > 709).")
    if ax is None:
        _, ax = plt.subplots()
    ax.plot(solution.t_steps, solution.energy_steps, **kwargs)
    for t, _, _ in solution.refinements:
        ax.axvline(t, color="0.7", lw=0.8, ls="--")
    ax.set_xlabel("t")
    ax.set_ylabel("E_β(μ_t)")
    return ax


def plot_solution(solution, title: str | None = None):
    """Circle: heat map and energy curve side by side; S²: snapshots and energy. Returns the Figure."""
    import matplotlib.pyplot as plt

    if solution.densities[0].grid.domain == "sphere":
        return plot_sphere_solution(solution, title=title)
    has_energy = solution.energy_steps is not None
    fig, axes = plt.subplots(1, 2 if has_energy else 1, figsize=(11 if has_energy else 6, 4), squeeze=False)
    plot_spacetime(solution, ax=axes[0, 0])
    if has_energy:
        plot_energy(solution, ax=axes[0, 1], color="k")
        axes[0, 1].set_title("interaction energy (refinements dashed)")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def sphere_map(density, nlat: int = 90, nlon: int = 180):
    """(lon, lat, values) of a density on S² on a regular longitude–latitude grid (radians)."""
    from .grids.sphere import evaluate

    lon = np.linspace(-np.pi, np.pi, nlon)
    lat = np.linspace(-np.pi / 2, np.pi / 2, nlat)
    LON, LAT = np.meshgrid(lon, lat)
    x = np.stack([np.cos(LAT) * np.cos(LON), np.cos(LAT) * np.sin(LON), np.sin(LAT)], axis=-1)
    return lon, lat, evaluate(density.grid.coefficients(density.values), x)


def plot_sphere(density, ax=None, cmap="magma", vmax=None, colorbar=True):
    """A density on S² as a Mollweide map (matplotlib only). Returns the Axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(subplot_kw={"projection": "mollweide"})
    lon, lat, values = sphere_map(density)
    im = ax.pcolormesh(lon, lat, values, shading="gouraud", cmap=cmap, vmin=0.0, vmax=vmax)
    ax.set_xticklabels([])
    ax.grid(True, color="0.6", lw=0.3)
    if colorbar:
        ax.figure.colorbar(im, ax=ax, orientation="horizontal", fraction=0.05, pad=0.04, label="ρ")
    return ax


def plot_sphere_solution(solution, ncols: int = 3, title: str | None = None):
    """Mollweide snapshots of a solution on S² (at most 2·ncols, evenly spread) and its energy. Returns the Figure."""
    import matplotlib.pyplot as plt

    k = len(solution.densities)
    shown = np.unique(np.linspace(0, k - 1, min(k, 2 * ncols)).astype(int))
    rows = -(-shown.size // ncols)
    has_energy = solution.energy_steps is not None
    fig = plt.figure(figsize=(4.2 * ncols, 2.6 * rows + (2.6 if has_energy else 0)))
    for i, idx in enumerate(shown):
        ax = fig.add_subplot(rows + (1 if has_energy else 0), ncols, i + 1, projection="mollweide")
        plot_sphere(solution.densities[idx], ax=ax, colorbar=False)
        ax.set_title(f"t = {solution.t[idx]:.3g}, lmax = {solution.densities[idx].grid.lmax}", fontsize=9)
    if has_energy:
        ax = fig.add_subplot(rows + 1, 1, rows + 1)
        plot_energy(solution, ax=ax, color="k")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_particles_2d(t, x, V=None, ax=None, every: int = 1):
    """Particle paths in R² (shape (T, n, 2)); with ``V``, in the rescaled frame z = e^{−tV}x (GLPR §9.2).

    In the rescaled frame the clustering geometry of the R^d dynamics shows
    (points converging to the vertices of a polytope, or onto hyperplanes).
    Returns the Axes.
    """
    import matplotlib.pyplot as plt
    from scipy.linalg import expm

    t = np.asarray(t, dtype=float)
    x = np.asarray(x, dtype=float)
    if x.ndim != 3 or x.shape[-1] != 2 or x.shape[0] != t.size:
        raise ValueError(f"`x` must have shape (len(t), n, 2), got {x.shape}.")
    z = x if V is None else np.stack([xk @ expm(-tk * np.asarray(V, dtype=float)).T for tk, xk in zip(t, x)])
    if ax is None:
        _, ax = plt.subplots()
    for i in range(0, z.shape[1], every):
        ax.plot(z[:, i, 0], z[:, i, 1], lw=0.6, color="0.6")
    ax.scatter(z[0, :, 0], z[0, :, 1], s=6, color="0.3", label="t = 0")
    ax.scatter(z[-1, :, 0], z[-1, :, 1], s=10, color="C3", label=f"t = {t[-1]:g}")
    ax.set_xlabel("z₁" if V is not None else "x₁")
    ax.set_ylabel("z₂" if V is not None else "x₂")
    ax.legend()
    ax.set_title("rescaled frame z = e^{−tV} x" if V is not None else "particles")
    return ax
