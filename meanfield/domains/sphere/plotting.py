"""Figures on S² (matplotlib only): Mollweide maps of a density, snapshot grids of a solution."""

from __future__ import annotations

import numpy as np

from ..plotting import density_colormap, density_label, density_norm, for_norm, outlined, plot_energy, snapshot_frames
from .transforms import evaluate

__all__ = ["sphere_map", "cell_map", "style_map", "plot", "plot_points", "plot_solution"]


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


def style_map(ax, fontsize: float = 6) -> None:
    """Readable axes on a Mollweide map: longitudes −120°, 0°, 120° labelled in white with a black outline over the
    map (the map's own labels every 30° overlap), latitudes every 30° beside it, thin grey graticule."""
    ax.set_xticks(np.radians([-120, 0, 120]), ["−120°", "0°", "120°"], fontsize=fontsize, **outlined())
    ax.set_yticks(np.radians([-60, -30, 0, 30, 60]), ["−60°", "−30°", "0°", "30°", "60°"], fontsize=fontsize)
    ax.grid(True, color="0.75", lw=0.3, alpha=0.6)


def plot(density, ax=None, *, colorbar=True, vmax=None, cmap="magma", cells=False, norm=None):
    """A density on S² as a Mollweide map: its spectral synthesis, or with ``cells`` its node values as cells
    (cell averages of a Lagrangian measure); ``norm`` a matplotlib norm in place of the default
    (:func:`~meanfield.domains.plotting.density_norm`: linear from 0 to ``vmax``, logarithmic where the density
    exceeds ten times the uniform one). Returns the Axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(subplot_kw={"projection": "mollweide"}, layout="constrained")
    if cells:
        lon, lat, values = cell_map(density)
    else:
        lon, lat, values = sphere_map(density)
    if norm is None:
        norm = density_norm(values, 1.0 / (4.0 * np.pi), vmax=vmax)
    im = ax.pcolormesh(lon, lat, for_norm(values, norm), shading="flat" if cells else "gouraud",
                       cmap=density_colormap(cmap), norm=norm)
    style_map(ax)
    ax.set_facecolor(density_colormap(cmap)(0.0))  # no white slivers between cells and the map's edge
    if colorbar:
        ax.figure.colorbar(im, ax=ax, orientation="horizontal", fraction=0.05, pad=0.06,
                           label=density_label("ρ", norm, "cell averages" if cells else None))
    return ax


def plot_points(x, ax, **kwargs):
    """Points of S² on a Mollweide map (longitude in (−π, π], latitude): small light-cyan dots. Returns the Axes."""
    x = np.asarray(x, dtype=float)
    ax.plot(np.arctan2(x[:, 1], x[:, 0]), np.arcsin(np.clip(x[:, 2], -1, 1)), ".",
            **({"ms": 1.5, "color": "c", "alpha": 0.7} | kwargs))
    return ax


def plot_solution(solution, title: str | None = None, max_panels: int = 8):
    """Mollweide snapshots of a solution on S² (the first and the last time among them, no empty panel, one
    colour scale and colour bar) above its energy. Returns the Figure."""
    import matplotlib.pyplot as plt

    shown, ncols = snapshot_frames(solution.t, max_panels)
    rows = -(-shown.size // ncols)
    has_energy = solution.energy_steps is not None
    fig = plt.figure(figsize=(3.6 * ncols, 2.1 * rows + (2.6 if has_energy else 0) + 0.6), layout="constrained")
    grid = fig.add_gridspec(rows + (1 if has_energy else 0), ncols)
    values = [sphere_map(solution.densities[i])[2] for i in shown]
    norm = density_norm(np.concatenate([v.ravel() for v in values]), 1.0 / (4.0 * np.pi))
    axes = []
    for j, idx in enumerate(shown):
        ax = fig.add_subplot(grid[j // ncols, j % ncols], projection="mollweide")
        plot(solution.densities[idx], ax=ax, colorbar=False, norm=norm)
        ax.set_title(f"t = {solution.t[idx]:.3g}, ℓmax = {solution.densities[idx].grid.lmax}", fontsize=9)
        axes.append(ax)
    fig.colorbar(axes[0].collections[0], ax=axes, shrink=0.8, label=density_label("ρ", norm))
    if has_energy:
        plot_energy(solution, ax=fig.add_subplot(grid[rows, :]), color="k")
    if title:
        fig.suptitle(title)
    return fig
