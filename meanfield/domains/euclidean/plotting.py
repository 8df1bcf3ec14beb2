"""Figures in R^d (matplotlib only): a density of cell averages (d = 1, 2), particle paths in the rescaled frame."""

from __future__ import annotations

import numpy as np

__all__ = ["plot", "plot_points", "plot_solution", "plot_particles_2d"]


def plot(density, ax=None, *, colorbar=True, vmax=None, cmap="magma", **kwargs):
    """ρ(x) (d = 1) or an image of ρ (d = 2). Returns the Axes."""
    import matplotlib.pyplot as plt

    g = density.grid
    if ax is None:
        _, ax = plt.subplots()
    if g.dim == 1:
        ax.plot(g.axes[0], density.values, **kwargs)
        ax.set_xlabel("x")
        ax.set_ylabel("ρ(x)")
        if vmax is not None:
            ax.set_ylim(0, vmax)
        return ax
    im = ax.pcolormesh(g.axes[0], g.axes[1], density.values.T, shading="nearest", cmap=cmap, vmin=0.0, vmax=vmax,
                       **kwargs)
    ax.set_aspect("equal")
    ax.set_xlabel("x₁")
    ax.set_ylabel("x₂")
    if colorbar:
        ax.figure.colorbar(im, ax=ax, label="ρ")
    return ax


def plot_points(x, ax, **kwargs):
    """Points of R^d over a density plot: ticks on the x axis (d = 1), dots (d = 2). Returns the Axes."""
    x = np.asarray(x, dtype=float)
    if x.shape[-1] == 1:
        ax.plot(x[:, 0], np.zeros(x.shape[0]), "|", **({"color": "c", "ms": 10} | kwargs))
    else:
        ax.plot(x[:, 0], x[:, 1], ".", **({"ms": 2, "color": "c"} | kwargs))
    return ax


def plot_solution(solution, title: str | None = None, ncols: int = 3):
    """Snapshots of a solution in R^d (at most 2·ncols, evenly spread). Returns the Figure."""
    import matplotlib.pyplot as plt

    k = len(solution.densities)
    shown = np.unique(np.linspace(0, k - 1, min(k, 2 * ncols)).astype(int))
    rows = -(-shown.size // ncols)
    fig, axes = plt.subplots(rows, ncols, figsize=(4.2 * ncols, 3.6 * rows), squeeze=False)
    for ax, idx in zip(axes.ravel(), shown):
        plot(solution.densities[idx], ax=ax)
        ax.set_title(f"t = {solution.t[idx]:.3g}", fontsize=9)
    for ax in axes.ravel()[shown.size:]:
        ax.set_visible(False)
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
