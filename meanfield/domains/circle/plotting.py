"""Figures on the circle (matplotlib only): a density against θ, the space-time heat map of a solution."""

from __future__ import annotations

import numpy as np

from ..plotting import density_colormap, density_label, density_norm, for_norm, plot_energy
from . import fourier
from .geometry import points_to_angles
from .grid import CircleGrid

__all__ = ["plot", "plot_points", "spacetime", "plot_spacetime", "plot_solution"]


def plot(density, ax=None, *, colorbar=True, vmax=None, cmap="magma", **kwargs):
    """ρ(θ) on [0, 2π] (``colorbar`` and ``cmap`` do not apply to a curve). Returns the Axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(layout="constrained")
    th = np.append(density.grid.angles, 2 * np.pi)
    ax.plot(th, np.append(density.values, density.values[0]), **kwargs)
    ax.set_xlabel("θ")
    ax.set_ylabel("ρ(θ)")
    ax.set_xlim(0, 2 * np.pi)
    ax.set_xticks([0, np.pi / 2, np.pi, 3 * np.pi / 2, 2 * np.pi], ["0", "π/2", "π", "3π/2", "2π"])
    if vmax is not None:
        ax.set_ylim(0, vmax)
    return ax


def plot_points(x, ax, **kwargs):
    """Points of the circle as ticks at their angles on the θ axis. Returns the Axes."""
    theta = points_to_angles(x)
    ax.plot(theta, np.zeros_like(theta), "|", **({"color": "c", "ms": 10, "alpha": 0.7} | kwargs))
    return ax


def spacetime(solution) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The circle solution on one grid: ``(t, theta, rho)`` with rho of shape (len(t), n).

    Snapshots on coarser grids (before a refinement) are zero-padded to the
    finest grid, which is exact for their trigonometric interpolants.
    """
    grids = [d.grid for d in solution.densities]
    if not all(g.domain.name == "circle" for g in grids):
        raise TypeError("spacetime needs a solution on the circle.")
    n = max(g.n for g in grids)
    rho = np.array([fourier.resample(d.values, n) if d.grid.n != n else d.values for d in solution.densities])
    return np.asarray(solution.t), CircleGrid(n).angles, rho


def plot_spacetime(solution, ax=None, cmap="magma", log=None):
    """Heat map of ρ(t, θ) for a circle solution, one labelled colour bar. ``log``: True, False, or None to choose
    (a log scale where ρ exceeds ten times the uniform density 1/2π:
    :func:`~meanfield.domains.plotting.density_norm`). Returns the Axes."""
    import matplotlib.pyplot as plt

    t, theta, rho = spacetime(solution)
    if ax is None:
        _, ax = plt.subplots(layout="constrained")
    norm = density_norm(rho, 1.0 / (2.0 * np.pi), log=log)
    im = ax.pcolormesh(t, np.append(theta, 2 * np.pi), for_norm(np.vstack([rho.T, rho[:, :1].T]), norm),
                       shading="nearest", cmap=density_colormap(cmap), norm=norm)
    ax.set_xlabel("t")
    ax.set_ylabel("θ")
    ax.set_yticks([0, np.pi / 2, np.pi, 3 * np.pi / 2, 2 * np.pi], ["0", "π/2", "π", "3π/2", "2π"])
    ax.figure.colorbar(im, ax=ax, label=density_label("ρ(t, θ)", norm))
    return ax


def plot_solution(solution, title: str | None = None):
    """Heat map and energy curve side by side. Returns the Figure."""
    import matplotlib.pyplot as plt

    has_energy = solution.energy_steps is not None
    fig, axes = plt.subplots(1, 2 if has_energy else 1, figsize=(11 if has_energy else 6, 4), squeeze=False,
                             layout="constrained")
    plot_spacetime(solution, ax=axes[0, 0])
    if has_energy:
        plot_energy(solution, ax=axes[0, 1], color="k")
        axes[0, 1].set_title("interaction energy")
    if title:
        fig.suptitle(title)
    return fig
