r"""A particle snapshot: the empirical measure Σ_i w_i δ_{x_i} of a particle system at one time, as a frame.

What :meth:`particles.Trajectory.frame` returns: the particles' points with their weights on their domain at the
output's time, answering the questions of every frame (:class:`meanfield.density.Frame`) as a grid density and a
Lagrangian measure do — ``domain``, ``t``, ``as_measure()``, ``mass()``, ``energy(beta)``, ``mean()``, ``plot()`` —
so that :mod:`validation` compares it with either without asking which it holds.
"""

from __future__ import annotations

import numpy as np

from meanfield.domains import infer
from meanfield.lagrangian import PointFrame

__all__ = ["Snapshot"]


class Snapshot(PointFrame):
    """Σ_i w_i δ_{x_i} on a domain at time t: a particle system's frame.

    Parameters
    ----------
    points : array_like, shape (n, d)
        The particles' positions (unit vectors on spheres; the rows (s, x) of tokens with positions).
    weights : array_like, shape (n,), optional
        Their masses, finite and non-negative (default 1/n each).
    domain : Domain, optional
        Where the points live (default: read off the points by :func:`meanfield.domains.infer`).
    t : float or None
        The time of the snapshot (None: points given at no time).

    Raises
    ------
    ValueError
        Points not of shape (n, d) with n >= 1, non-finite points, or weights of the wrong shape, negative or
        non-finite.
    """

    __slots__ = ("points", "weights", "domain", "t")

    #: a frame of points, not of grid values (:class:`meanfield.density.Frame`)
    grid = None
    #: the particles carry no density (:class:`meanfield.density.Frame`)
    lagrangian = False

    def __init__(self, points, weights=None, domain=None, t: float | None = None):
        points = np.array(points, dtype=float)
        if points.ndim != 2 or points.shape[0] == 0:
            raise ValueError(f"`points` must have shape (n, d) with n >= 1, got shape {points.shape}.")
        if not np.all(np.isfinite(points)):
            raise ValueError(f"`points` holds {int(np.sum(~np.isfinite(points)))} non-finite coordinate(s).")
        n = points.shape[0]
        weights = np.full(n, 1.0 / n) if weights is None else np.array(weights, dtype=float)
        if weights.shape != (n,):
            raise ValueError(f"`weights` must have shape ({n},) to match `points`, got {weights.shape}.")
        if not np.all(np.isfinite(weights)) or np.any(weights < 0):
            raise ValueError(f"`weights` must be finite and non-negative, got minimum {np.min(weights)!r}.")
        for a in (points, weights):
            a.setflags(write=False)
        self.points, self.weights = points, weights
        self.domain = infer(points) if domain is None else domain
        self.t = None if t is None else float(t)

    def __len__(self) -> int:
        return self.weights.size

    def __repr__(self) -> str:
        at = "" if self.t is None else f", t={self.t:g}"
        return f"Snapshot({self.domain.name}, n={len(self)}{at})"

    def plot(self, ax=None, **kwargs):
        """The points on their domain's axes (``Domain.plot_points``: a Mollweide map on S², the angle on the circle,
        the plane in R²), titled with the time. Returns the Axes."""
        if ax is None:
            import matplotlib.pyplot as plt

            _, ax = plt.subplots(subplot_kw={"projection": self.domain.projection}, layout="constrained")
        ax = self.domain.plot_points(self.points, ax, **kwargs)
        if self.t is not None:
            ax.set_title(f"t = {self.t:g}")
        return ax
