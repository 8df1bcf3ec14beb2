r"""Densities on a grid: the grid measure Σ_j ρ_j w_j δ_{x_j} and its interpolant.

A :class:`Density` is a grid plus nodal values ρ_j of a density with respect
to the grid's natural measure (dθ on the circle, surface area on the sphere,
Lebesgue measure in R^d). As a measure it is the quadrature rule: points
``grid.points`` with weights ``ρ_j × grid.weights`` (DESIGN.md, "the one
idea"), which is what :meth:`Density.as_measure` returns and what the models'
``field`` consumes.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["Density"]

#: Nodal values down to −NEG_ROUNDOFF × max|ρ| are accepted as round-off.
NEG_ROUNDOFF = 1e-13


def _check_values(grid, values, name: str = "values") -> np.ndarray:
    v = np.array(values, dtype=float)
    if v.shape != grid.shape:
        raise ValueError(f"`{name}` must have shape {grid.shape} to match {grid!r}, got {v.shape}.")
    if not np.all(np.isfinite(v)):
        bad = int(np.sum(~np.isfinite(v)))
        raise ValueError(f"`{name}` contains {bad} non-finite value(s) (NaN or inf); a density must be finite.")
    vmax = np.max(np.abs(v)) if v.size else 0.0
    vmin = np.min(v) if v.size else 0.0
    if vmin < -NEG_ROUNDOFF * vmax:
        raise ValueError(
            f"`{name}` must be non-negative: its minimum is {vmin:.3g} (max |value| {vmax:.3g}); "
            f"a density may dip below 0 by round-off only ({NEG_ROUNDOFF:g} × max)."
        )
    mass = float(grid.integrate(v))
    if not mass > 0:
        raise ValueError(f"`{name}` has mass {mass:.3g}; a density must have positive mass.")
    return v


class Density:
    """A density on a grid.

    Parameters
    ----------
    grid : CircleGrid
        The grid carrying the nodal values.
    values : array_like, shape grid.shape
        Non-negative, finite nodal values of positive mass. They are *not*
        renormalised (use :meth:`from_function` or :meth:`normalized`).

    Raises
    ------
    ValueError
        For values of the wrong shape, non-finite or negative values (beyond
        round-off, 1e-13 × max), or zero mass.
    """

    __slots__ = ("grid", "values")

    def __init__(self, grid, values):
        if not hasattr(grid, "points") or not hasattr(grid, "weights"):
            raise TypeError(f"`grid` must be a grid object (e.g. CircleGrid), got {type(grid).__name__}.")
        values = _check_values(grid, values)
        values.setflags(write=False)
        self.grid = grid
        self.values = values

    @classmethod
    def _trusted(cls, grid, values) -> "Density":
        """Wrap solver output whose sign and finiteness the resolution monitor checked."""
        obj = cls.__new__(cls)
        values = np.array(values, dtype=float)
        values.setflags(write=False)
        obj.grid, obj.values = grid, values
        return obj

    @classmethod
    def from_function(cls, grid, f: Callable[[np.ndarray], np.ndarray]) -> "Density":
        """Sample ``f`` at the grid's unit vectors and normalise to mass 1.

        Parameters
        ----------
        grid : CircleGrid
        f : callable
            ``f(x)`` with x of shape grid.shape + (d,) (unit vectors) returns
            non-negative values of shape grid.shape.
        """
        if not callable(f):
            raise TypeError(f"`f` must be callable, got {type(f).__name__}.")
        values = np.asarray(f(grid.points), dtype=float)
        if values.shape != grid.shape:
            raise ValueError(
                f"`f` must return one value per node, shape {grid.shape}; got shape {values.shape}."
            )
        values = _check_values(grid, values, name="f(grid.points)")
        return cls(grid, values / grid.integrate(values))

    @classmethod
    def uniform(cls, grid) -> "Density":
        """The normalised uniform density."""
        v = np.ones(grid.shape)
        return cls(grid, v / grid.integrate(v))

    # ------------------------------------------------------------------ measures
    def mass(self) -> float:
        """∫ ρ, by the grid's quadrature."""
        return float(self.grid.integrate(self.values))

    def normalized(self) -> "Density":
        """The same density scaled to mass 1."""
        return Density(self.grid, self.values / self.mass())

    def as_measure(self) -> tuple[np.ndarray, np.ndarray]:
        """The grid measure: ``(points, weights)`` with weights ρ_j w_j.

        Returns
        -------
        points : ndarray, shape (N, d)
            The grid nodes as unit vectors (flattened).
        weights : ndarray, shape (N,)
        """
        d = self.grid.points.shape[-1]
        return self.grid.points.reshape(-1, d), (self.values * self.grid.weights).ravel()

    def mean(self) -> np.ndarray:
        """The first moment ∫ x dμ(x) ∈ R^d."""
        pts, w = self.as_measure()
        return w @ pts

    def __call__(self, points) -> np.ndarray:
        """Evaluate the spectral interpolant at unit vectors of shape (..., d)."""
        return self.grid.interpolate(self.values, points)

    def resampled(self, grid) -> "Density":
        """The interpolant on another grid of the same kind (exact when refining)."""
        if type(grid) is not type(self.grid):
            raise TypeError(f"cannot resample a density on {self.grid!r} onto {grid!r}.")
        return Density._trusted(grid, self.grid.resample(self.values, grid.n))

    def __repr__(self) -> str:
        return f"Density({self.grid!r}, mass={self.mass():.6g})"

    # ------------------------------------------------------------------ plotting
    def plot(self, ax=None, **kwargs):
        """Plot the density: against the angle on the circle, as a Mollweide map on S². Returns the Axes."""
        import matplotlib.pyplot as plt

        if self.grid.domain == "sphere":
            from .plotting import plot_sphere

            return plot_sphere(self, ax=ax, **kwargs)
        if ax is None:
            _, ax = plt.subplots()
        th = np.append(self.grid.angles, 2 * np.pi)
        ax.plot(th, np.append(self.values, self.values[0]), **kwargs)
        ax.set_xlabel("θ")
        ax.set_ylabel("ρ(θ)")
        ax.set_xlim(0, 2 * np.pi)
        return ax
