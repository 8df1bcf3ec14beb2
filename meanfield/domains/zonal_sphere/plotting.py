"""Figures of zonal densities (matplotlib only): the law of the polar angle, its space-time heat map.

On S^{d-1} the density ρ itself is of order 1/|S^{d−1}| (1.5e55 at d = 128) and its mass sits near the equator
θ = π/2 for large d, so the figures draw the law of the polar angle θ = arccos⟨x, e⟩,
q(θ) = |S^{d−2}| sin^{d−2}θ ρ(cos θ), a probability density on [0, π] that particles' polar angles are compared
with (a histogram of theirs has the same scale).
"""

from __future__ import annotations

import numpy as np

from ..plotting import density_colormap, density_label, density_norm, for_norm, plot_energy
from ..gegenbauer import log_sphere_area
from .grid import polar_angles

__all__ = ["plot", "plot_points", "polar_frames", "plot_spacetime", "plot_solution", "polar_weight", "LAW_LABEL"]

#: The y label of the polar angle's law (mathtext).
LAW_LABEL = r"law of the polar angle $q(\theta)$"
_TICKS = ([0, np.pi / 4, np.pi / 2, 3 * np.pi / 4, np.pi], ["0", "π/4", "π/2", "3π/4", "π"])


def log_polar_weight(d: int, theta) -> np.ndarray:
    """log(|S^{d−2}| sin^{d−2}θ), finite wherever 0 < θ < π: at d = 128 the weight itself underflows below
    θ ≈ 4e-3, where a collapsed law still has all its mass (−inf at the poles)."""
    with np.errstate(divide="ignore"):
        return log_sphere_area(d - 2) + (d - 2) * np.log(np.sin(np.asarray(theta, dtype=float)))


def polar_weight(d: int, theta) -> np.ndarray:
    """|S^{d−2}| sin^{d−2}θ: the density of the polar angle is this times ρ(cos θ)."""
    return np.exp(log_polar_weight(d, theta))


def _law(frame, theta) -> np.ndarray:
    """q(θ) of a grid density or a Lagrangian frame (through its log-density: no overflow where ρ exceeds 1e308)."""
    d = frame.domain.d
    with np.errstate(divide="ignore"):
        log_ring = log_sphere_area(d - 2) + (d - 2) * np.log(np.sin(theta))
    if hasattr(frame, "log_density_at"):
        with np.errstate(over="ignore"):
            return np.exp(frame.log_density_at(theta[:, None]) + log_ring)
    from .sampling import polar_law

    return polar_law(frame, theta)


def plot(density, ax=None, *, colorbar=True, vmax=None, cmap="magma", **kwargs):
    """The law of the polar angle of ``density`` on [0, π] (``colorbar`` and ``cmap`` do not apply to a curve; a log
    axis where its maximum exceeds ten times that of the uniform law's). Returns the Axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(layout="constrained")
    theta = np.linspace(0.0, np.pi, 1025)
    q = _law(density, theta)
    ax.plot(theta, q, **kwargs)
    reference = float(np.max(_uniform_law(density.domain.d, theta)))
    if np.nanmax(q) > 10.0 * reference:
        ax.set_yscale("log")
        ax.set_ylim(np.nanmax(q) * 1e-8, None)
    elif vmax is not None:
        ax.set_ylim(0, vmax)
    ax.set_xlabel("polar angle θ = arccos⟨x, e⟩")
    ax.set_ylabel(LAW_LABEL)
    ax.set_xlim(0, np.pi)
    ax.set_xticks(*_TICKS)
    return ax


def _uniform_law(d: int, theta) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.exp(log_sphere_area(d - 2) - log_sphere_area(d - 1) + (d - 2) * np.log(np.sin(theta)))


def plot_points(x, ax, **kwargs):
    """Points (unit vectors of R^d or polar angles) as ticks at their polar angles on the θ axis. Returns the Axes."""
    x = np.asarray(x, dtype=float)
    theta = polar_angles(x, x.shape[-1] if x.shape[-1] > 1 else 2)  # unit vectors of R^d carry d; angles need none
    ax.plot(np.ravel(theta), np.zeros(np.size(theta)), "|", **({"color": "c", "ms": 10, "alpha": 0.7} | kwargs))
    return ax


def polar_frames(solution, points: int = 513) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(t, theta, q)``: the law of the polar angle of every frame of a zonal solution on one grid of ``points``
    angles (grid densities by their expansion, Lagrangian frames by their log-density), q of shape (len(t), points)."""
    theta = np.linspace(0.0, np.pi, points)
    q = np.array([_law(f, theta) for f in solution.densities])
    return np.asarray(solution.t), theta, q


def plot_spacetime(solution, ax=None, cmap="magma", log=None):
    """Heat map of q(t, θ) with one labelled colour bar (a log scale where it exceeds ten times the uniform law's
    maximum, :func:`~meanfield.domains.plotting.density_norm`). Returns the Axes."""
    import matplotlib.pyplot as plt

    t, theta, q = polar_frames(solution)
    if ax is None:
        _, ax = plt.subplots(layout="constrained")
    reference = float(np.max(_uniform_law(solution.densities[0].domain.d, theta)))
    norm = density_norm(q, reference, log=log)
    im = ax.pcolormesh(t, theta, for_norm(q.T, norm), shading="nearest", cmap=density_colormap(cmap), norm=norm)
    ax.set_xlabel("t")
    ax.set_ylabel("polar angle θ")
    ax.set_yticks(*_TICKS)
    ax.figure.colorbar(im, ax=ax, label=density_label(r"$q(t, \theta)$", norm))
    return ax


def plot_solution(solution, title: str | None = None):
    """Heat map of the polar angle's law and the energy curve side by side. Returns the Figure."""
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
