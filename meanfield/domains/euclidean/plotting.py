"""Figures in R^d (matplotlib only): a density of cell averages (d = 1, 2), particle paths in the rescaled frame."""

from __future__ import annotations

import numpy as np

from ..plotting import density_colormap, density_label, density_norm, for_norm, snapshot_frames

__all__ = ["plot", "plot_points", "plot_solution", "plot_particles_2d"]


def plot(density, ax=None, *, colorbar=True, vmax=None, cmap="magma", norm=None, **kwargs):
    """ρ(x) (d = 1) or an image of ρ (d = 2; ``norm`` a matplotlib norm in place of [0, ``vmax``]). Returns the
    Axes."""
    import matplotlib.pyplot as plt

    g = density.grid
    if ax is None:
        _, ax = plt.subplots(layout="constrained")
    if g.dim == 1:
        ax.plot(g.axes[0], density.values, **kwargs)
        ax.set_xlabel("x")
        ax.set_ylabel("ρ(x)")
        if vmax is not None:
            ax.set_ylim(0, vmax)
        return ax
    if norm is None:
        norm = density_norm(density.values, vmax=vmax, log=False)
    im = ax.pcolormesh(g.axes[0], g.axes[1], for_norm(density.values.T, norm), shading="nearest",
                       cmap=density_colormap(cmap), norm=norm, **kwargs)
    ax.set_aspect("equal")
    ax.set_xlabel("$x_1$")
    ax.set_ylabel("$x_2$")
    if colorbar:
        ax.figure.colorbar(im, ax=ax, label=density_label("ρ", norm))
    return ax


def plot_points(x, ax, **kwargs):
    """Points of R^d over a density plot: ticks on the x axis (d = 1), small light-cyan dots (d = 2). Returns the
    Axes."""
    x = np.asarray(x, dtype=float)
    if x.shape[-1] == 1:
        ax.plot(x[:, 0], np.zeros(x.shape[0]), "|", **({"color": "c", "ms": 10, "alpha": 0.7} | kwargs))
    else:
        ax.plot(x[:, 0], x[:, 1], ".", **({"ms": 1.5, "color": "c", "alpha": 0.7} | kwargs))
    return ax


def plot_solution(solution, title: str | None = None, max_panels: int = 8):
    """Snapshots of a solution in R^d (the first and the last time among them, no empty panel; d = 2: one colour
    scale and colour bar, shared axes). Returns the Figure."""
    import matplotlib.pyplot as plt

    shown, ncols = snapshot_frames(solution.t, max_panels)
    rows = -(-shown.size // ncols)
    dim = solution.densities[0].grid.dim
    fig, axes = plt.subplots(rows, ncols, figsize=(3.4 * ncols, 3.0 * rows + 0.5), squeeze=False, sharex=True,
                             sharey=True, layout="constrained")
    if dim == 2:
        norm = density_norm(np.concatenate([solution.densities[i].values.ravel() for i in shown]), log=False)
    top = max(float(np.max(solution.densities[i].values)) for i in shown)
    for ax, idx in zip(axes.ravel(), shown):
        if dim == 2:
            plot(solution.densities[idx], ax=ax, colorbar=False, norm=norm)
        else:
            plot(solution.densities[idx], ax=ax, vmax=1.05 * top, color="k")
        ax.set_title(f"t = {solution.t[idx]:.3g}", fontsize=9)
        ax.label_outer()
    if dim == 2:
        fig.colorbar(axes[0, 0].collections[0], ax=axes.ravel().tolist(), shrink=0.8, label=density_label("ρ", norm))
    if title:
        fig.suptitle(title)
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
        _, ax = plt.subplots(layout="constrained")
    for i in range(0, z.shape[1], every):
        ax.plot(z[:, i, 0], z[:, i, 1], lw=0.6, color="0.6", label="paths" if i == 0 else None)
    ax.scatter(z[0, :, 0], z[0, :, 1], s=6, color="0.3", label="t = 0")
    ax.scatter(z[-1, :, 0], z[-1, :, 1], s=10, color="C3", label=f"t = {t[-1]:g}")
    ax.set_xlabel("$z_1$" if V is not None else "$x_1$")
    ax.set_ylabel("$z_2$" if V is not None else "$x_2$")
    ax.legend()
    ax.set_title(r"rescaled frame $z = e^{-tV}x$" if V is not None else "particles")
    return ax
