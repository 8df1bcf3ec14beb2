"""Figures on [0, 1] × S¹ (matplotlib only): a density as a heat map over (position, angle), tokens over it."""

from __future__ import annotations

import numpy as np

from ..circle.geometry import points_to_angles

__all__ = ["plot", "plot_points", "plot_solution"]

_PI_TICKS = (np.pi * np.array([0, 0.5, 1, 1.5, 2]), ["0", "π/2", "π", "3π/2", "2π"])


def plot(density, ax=None, *, colorbar=True, vmax=None, cmap="magma", norm=None, **kwargs):
    """f(s, θ) as a heat map, position s across, angle θ up. Returns the Axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(layout="constrained")
    g = density.grid
    values = np.hstack([density.values, density.values[:, :1]])  # close the circle at θ = 2π
    im = ax.pcolormesh(g.positions, np.append(g.angles, 2 * np.pi), values.T, shading="gouraud", cmap=cmap,
                       vmin=None if norm is not None else 0.0, vmax=None if norm is not None else vmax, norm=norm,
                       **kwargs)
    ax.set_xlabel("position s")
    ax.set_ylabel("θ")
    ax.set_yticks(*_PI_TICKS)
    if colorbar:
        ax.figure.colorbar(im, ax=ax, label="f(s, θ)")
    return ax


def plot_points(x, ax, **kwargs):
    """Tokens (s, x) as dots at (s, θ). Returns the Axes."""
    x = np.asarray(x, dtype=float).reshape(-1, 3)
    ax.plot(x[:, 0], points_to_angles(x[:, 1:]), ".", **({"color": "c", "ms": 2, "alpha": 0.7} | kwargs))
    return ax


def plot_solution(solution, title: str | None = None, ncols: int = 4):
    """The density at up to ``ncols`` output times (the first and the last among them), one colour scale. Returns
    the Figure."""
    import matplotlib.pyplot as plt

    dens = list(solution.densities)
    pick = np.unique(np.linspace(0, len(dens) - 1, min(ncols, len(dens))).round().astype(int))
    fig, axes = plt.subplots(1, pick.size, figsize=(3.4 * pick.size, 3.2), squeeze=False, layout="constrained")
    vmax = max(float(np.max(dens[i].values)) for i in pick)
    for ax, i in zip(axes[0], pick):
        plot(dens[i], ax=ax, colorbar=False, vmax=vmax)
        ax.set_title(f"t = {solution.t[i]:.3g}")
    fig.colorbar(axes[0, -1].collections[0], ax=axes[0].tolist(), label="f(s, θ)")
    if title:
        fig.suptitle(title)
    return fig
