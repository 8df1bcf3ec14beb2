"""Figures on S² (matplotlib only): Mollweide maps of a density, snapshot grids of a solution."""

from __future__ import annotations

import numpy as np

from ..plotting import plot_energy
from .transforms import evaluate

__all__ = ["sphere_map", "cell_map", "plot", "plot_points", "plot_solution"]


def sphere_map(density, nlat: int = 90, nlon: int = 180):
    """(lon, lat, values) of a density on S² on a regular longitude–latitude grid (radians)."""
    lon = np.linspace(-np.pi, np.pi, nlon)
    lat = np.linspace(-np.pi / 2, np.pi / 2, nlat)
    LON, LAT = np.meshgrid(lon, lat)
    x = np.stack([np.cos(LAT) * np.cos(LON), np.cos(LAT) * np.sin(LON), np.sin(LAT)], axis=-1)
    return lon, lat, evaluate(density.grid.coefficients(density.values), x)


def cell_map(density):
    """(longitude edges, latitude edges, values) of a density's node values as the cells around the nodes
    (radians, both edges ascending): for cell averages, which a spectral synthesis would ring around."""
    g = density.grid
    h = 2.0 * np.pi / g.longitudes.size
    lon = np.mod(g.longitudes + np.pi, 2.0 * np.pi) - np.pi
    order = np.argsort(lon)
    lon_edges = np.clip(np.concatenate([lon[order] - h / 2, [lon[order][-1] + h / 2]]), -np.pi, np.pi)
    colat_edges = g.colatitude_edges
    return lon_edges, (np.pi / 2 - colat_edges)[::-1], np.asarray(density.values)[::-1][:, order]


def plot(density, ax=None, *, colorbar=True, vmax=None, cmap="magma", cells=False, norm=None):
    """A density on S² as a Mollweide map: its spectral synthesis, or with ``cells`` its node values as cells
    (cell averages of a Lagrangian measure); ``norm`` a matplotlib norm (say LogNorm) in place of [0, vmax].
    Returns the Axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(subplot_kw={"projection": "mollweide"})
    scale = {"norm": norm} if norm is not None else {"vmin": 0.0, "vmax": vmax}
    if cells:
        lon, lat, values = cell_map(density)
        im = ax.pcolormesh(lon, lat, values, shading="flat", cmap=cmap, **scale)
    else:
        lon, lat, values = sphere_map(density)
        im = ax.pcolormesh(lon, lat, values, shading="gouraud", cmap=cmap, **scale)
    ax.set_xticklabels([])
    ax.grid(True, color="0.6", lw=0.3)
    if colorbar:
        ax.figure.colorbar(im, ax=ax, orientation="horizontal", fraction=0.05, pad=0.04, label="ρ")
    return ax


def plot_points(x, ax, **kwargs):
    """Points of S² on a Mollweide map (longitude in (−π, π], latitude). Returns the Axes."""
    x = np.asarray(x, dtype=float)
    ax.plot(np.arctan2(x[:, 1], x[:, 0]), np.arcsin(np.clip(x[:, 2], -1, 1)), ".", **({"ms": 2, "color": "c"} | kwargs))
    return ax


def plot_solution(solution, ncols: int = 3, title: str | None = None):
    """Mollweide snapshots of a solution on S² (at most 2·ncols, evenly spread) and its energy. Returns the Figure."""
    import matplotlib.pyplot as plt

    k = len(solution.densities)
    shown = np.unique(np.linspace(0, k - 1, min(k, 2 * ncols)).astype(int))
    rows = -(-shown.size // ncols)
    has_energy = solution.energy_steps is not None
    fig = plt.figure(figsize=(4.2 * ncols, 2.6 * rows + (2.6 if has_energy else 0)))
    for i, idx in enumerate(shown):
        ax = fig.add_subplot(rows + (1 if has_energy else 0), ncols, i + 1, projection="mollweide")
        plot(solution.densities[idx], ax=ax, colorbar=False)
        ax.set_title(f"t = {solution.t[idx]:.3g}, lmax = {solution.densities[idx].grid.lmax}", fontsize=9)
    if has_energy:
        ax = fig.add_subplot(rows + 1, 1, rows + 1)
        plot_energy(solution, ax=ax, color="k")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
