"""Figures on [0, 1] × S¹ (matplotlib only): a density as a heat map over (position, angle), tokens over it."""

from __future__ import annotations

import numpy as np

from ..circle.geometry import points_to_angles
from ..plotting import density_colormap, density_label, density_norm, for_norm, snapshot_frames

__all__ = ["plot", "plot_points", "plot_solution"]

_PI_TICKS = (np.pi * np.array([0, 0.5, 1, 1.5, 2]), ["0", "π/2", "π", "3π/2", "2π"])


def plot(density, ax=None, *, colorbar=True, vmax=None, cmap="magma", norm=None, **kwargs):
    """f(s, θ) as a heat map, position s across, angle θ up; ``norm`` a matplotlib norm in place of the default
    (:func:`~meanfield.domains.plotting.density_norm`, against the uniform 1/2π). Returns the Axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(layout="constrained")
    g = density.grid
    values = np.hstack([density.values, density.values[:, :1]])  # close the circle at θ = 2π
    if norm is None:
        norm = density_norm(values, 1.0 / (2.0 * np.pi), vmax=vmax)
    im = ax.pcolormesh(g.positions, np.append(g.angles, 2 * np.pi), for_norm(values.T, norm), shading="gouraud",
                       cmap=density_colormap(cmap), norm=norm, **kwargs)
    ax.set_xlabel("position s")
    ax.set_ylabel("θ")
    ax.set_yticks(*_PI_TICKS)
    if colorbar:
        ax.figure.colorbar(im, ax=ax, label=density_label("f(s, θ)", norm))
    return ax


def plot_points(x, ax, **kwargs):
    """Tokens (s, x) as dots at (s, θ). Returns the Axes."""
    x = np.asarray(x, dtype=float).reshape(-1, 3)
    ax.plot(x[:, 0], points_to_angles(x[:, 1:]), ".", **({"color": "c", "ms": 1.5, "alpha": 0.6} | kwargs))
    return ax


def plot_solution(solution, title: str | None = None, max_panels: int = 5):
    """The density at up to ``max_panels`` output times (the first and the last among them), one colour scale and
    one colour bar. Returns the Figure."""
    import matplotlib.pyplot as plt

    dens = list(solution.densities)
    pick, _ = snapshot_frames(solution.t, max_panels)
    fig, axes = plt.subplots(1, pick.size, figsize=(3.4 * pick.size, 3.2), squeeze=False, sharey=True,
                             layout="constrained")
    norm = density_norm(np.concatenate([dens[i].values.ravel() for i in pick]), 1.0 / (2.0 * np.pi))
    for ax, i in zip(axes[0], pick):
        plot(dens[i], ax=ax, colorbar=False, norm=norm)
        ax.set_title(f"t = {solution.t[i]:.3g}")
        ax.label_outer()
    fig.colorbar(axes[0, -1].collections[0], ax=axes[0].tolist(), label=density_label("f(s, θ)", norm))
    if title:
        fig.suptitle(title)
    return fig
