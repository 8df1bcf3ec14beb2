r"""Densities on a grid: the grid measure Σ_j ρ_j w_j δ_{x_j} and its interpolant.

A :class:`Density` is a grid plus nodal values ρ_j of a density with respect
to the grid's natural measure (dθ on the circle, surface area on the sphere,
Lebesgue measure in R^d). As a measure it is the quadrature rule: points
``grid.points`` with weights ``ρ_j × grid.weights`` (docs/DESIGN.md, "A measure is
points with weights, on a domain"), which is what :meth:`Density.as_measure` returns and what the models'
``field`` consumes. A density carries its domain (``density.domain``, the
grid's): sampling and plotting dispatch through it.

A density is one of three *frames* (:class:`Frame`): a measure on a domain at a time that answers the same questions
— a grid density here, a :class:`~meanfield.lagrangian.LagrangianMeasure` (moved points carrying their log-density)
and a particle snapshot (:class:`particles.Snapshot`). Code that takes "a state" asks the frame what it can do
(``frame.grid``, ``frame.lagrangian``), never which class it is.
"""

from __future__ import annotations

from typing import Callable, Protocol, runtime_checkable

import numpy as np

from .domains import Domain, Grid, Measure

__all__ = ["Density", "Frame"]

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


@runtime_checkable
class Frame(Protocol):
    """A measure on a domain at a time: a grid :class:`Density`, a :class:`~meanfield.lagrangian.LagrangianMeasure`
    or a particle snapshot (:class:`particles.Snapshot`) — what ``Solution.frame(k)``, ``Trajectory.frame(k)``, the
    users' trackers and events see, and what :mod:`validation` compares.

    Attributes
    ----------
    domain : Domain
        Where the measure lives.
    t : float or None
        The time of the frame (None: a density given at no time, such as an initial law built by hand).
    grid : Grid or None
        The grid whose nodal values the frame is (a density on a grid: its interpolant, its exact CDF on the circle,
        its spectral resampling), None for point frames.
    lagrangian : bool
        Whether the frame's points carry their log-density along the characteristics (``log_density``,
        ``log_density_at``: a Lagrangian measure), so that ρ is known at the points and interpolated between them.

    Methods
    -------
    as_measure()
        The measure as points with weights on its domain (:class:`~meanfield.domains.Measure`; a grid density:
        its quadrature rule).
    mass()
        Its total mass.
    energy(beta)
        E_β = (1/2β)∬ e^{β⟨x,y⟩} dμ dμ (½|∫x dμ|² at β = 0; GLPR §3.2).
    mean()
        The first moment ∫ x dμ in the ambient R^d of the domain (the order parameter r = |mean| of a probability
        measure on a sphere).
    plot(ax=None, **kwargs)
        A figure of the frame on its domain's axes. Returns the Axes.
    """

    domain: Domain
    t: float | None
    grid: Grid | None
    lagrangian: bool

    def as_measure(self) -> Measure: ...

    def mass(self) -> float: ...

    def energy(self, beta: float) -> float: ...

    def mean(self) -> np.ndarray: ...

    def plot(self, ax=None, **kwargs): ...


class Density:
    """A density on a grid.

    Parameters
    ----------
    grid : CircleGrid, SphereGrid or EuclideanGrid
        The grid carrying the nodal values.
    values : array_like, shape grid.shape
        Non-negative, finite nodal values of positive mass. They are *not*
        renormalised (use :meth:`from_function` or :meth:`normalized`).
    check : bool, keyword-only
        ``False`` wraps values as they are (a private copy), for solver output
        whose sign and finiteness the resolution monitor has already checked
        (it allows −1e-8 × mean, this constructor 1e-13 × max).

    Raises
    ------
    ValueError
        For values of the wrong shape, non-finite or negative values (beyond
        round-off, 1e-13 × max), or zero mass.
    """

    __slots__ = ("grid", "values", "t")

    #: a grid density's nodal values are no Lagrangian points (:class:`Frame`)
    lagrangian = False

    def __init__(self, grid, values, *, check: bool = True, t: float | None = None):
        if not isinstance(grid, Grid):
            raise TypeError(f"`grid` must be a grid object (e.g. CircleGrid), got {type(grid).__name__}.")
        values = _check_values(grid, values) if check else np.array(values, dtype=float)
        values.setflags(write=False)
        self.grid = grid
        self.values = values
        self.t = None if t is None else float(t)

    @property
    def domain(self):
        """The :class:`~meanfield.domains.Domain` the density lives on."""
        return self.grid.domain

    @classmethod
    def from_function(cls, grid, f: Callable[[np.ndarray], np.ndarray]) -> "Density":
        """Sample ``f`` at the grid's unit vectors and normalise to mass 1.

        Parameters
        ----------
        grid : CircleGrid, SphereGrid or EuclideanGrid
        f : callable
            ``f(x)`` with x of shape grid.shape + (d,) (unit vectors) returns
            non-negative values of shape grid.shape (``grid.values_of(f)``: on the zonal grid f is a function of
            unit vectors of R^d, evaluated on each ring and refused where it is not zonal).
        """
        if not callable(f):
            raise TypeError(f"`f` must be callable, got {type(f).__name__}.")
        values = grid.values_of(f)
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

    def energy(self, beta: float) -> float:
        """E_β = (1/2β)∬ e^{β⟨x,y⟩} ρ(x)ρ(y) (½|∫x dρ|² at β = 0; GLPR §3.2) by the domain's quadrature of the grid
        (``OverflowError`` past β ≈ 709); circle and S² only."""
        return self.domain.energy(self.grid, self.values, float(beta))

    @property
    def dim(self) -> int:
        """The dimension d of the ambient R^d of the grid's points."""
        return self.grid.dim

    def unit_mass(self) -> "Density":
        """The same density scaled to mass 1 (ρ / ∫ρ)."""
        return Density(self.grid, self.values / self.mass(), t=self.t)

    def normalized(self):
        """Renamed: "normalized" is SA/USA's word (``SelfAttention(normalized=)``); rescaling is :meth:`unit_mass`."""
        raise AttributeError("Density.normalized() is now Density.unit_mass() (rescaling to mass 1).")

    def as_measure(self) -> Measure:
        """The grid measure Σ_j ρ_j w_j δ_{x_j}, carrying its domain; unpacks as ``points, weights``.

        Returns
        -------
        Measure
            ``points`` (N, d): the grid nodes (flattened); ``weights`` (N,); ``domain``.
        """
        d = self.grid.points.shape[-1]
        return Measure(self.grid.points.reshape(-1, d), (self.values * self.grid.weights).ravel(), self.domain)

    def marginals(self):
        """The laws of its factors' coordinates where its grid is a product grid that has them
        (:meth:`~meanfield.domains.Grid.marginals`: on the cylinder the direction's law and that of log r), else
        None."""
        return self.grid.marginals(self.values)

    def mean(self) -> np.ndarray:
        """The first moment ∫ x dμ(x) ∈ R^d, in the ambient R^d of every domain (a zonal law on S^{d-1}:
        (∫ cos θ dμ) e, e the axis; its polar angle's mean is :meth:`mean_polar_angle`)."""
        pts, w = self.as_measure()
        return self.domain.mean(pts, w)

    def mean_polar_angle(self) -> float:
        """∫ θ dμ / ∫ dμ, θ the polar angle of the zonal sphere's rings (its points): what :meth:`mean` returned
        there before it meant ∫ x dμ. ``ValueError`` on domains whose points are not polar angles."""
        return self.domain.mean_polar_angle(self)

    def __call__(self, points) -> np.ndarray:
        """Evaluate the spectral interpolant at unit vectors of shape (..., d)."""
        return self.grid.interpolate(self.values, points)

    def resampled(self, grid) -> "Density":
        """The interpolant on another grid of the same kind (exact when refining)."""
        if not isinstance(grid, Grid) or grid.domain is not self.domain:
            raise TypeError(f"cannot resample a density on {self.grid!r} onto {grid!r}.")
        return Density(grid, self.grid.resample(self.values, grid.n), check=False, t=self.t)

    def __repr__(self) -> str:
        at = "" if self.t is None else f", t={self.t:g}"
        return f"Density({self.grid!r}, mass={self.mass():.6g}{at})"

    # ------------------------------------------------------------------ plotting
    def plot(self, ax=None, **kwargs):
        """Plot the density (its domain's figure: against the angle on the circle, a Mollweide map on S²,
        a curve or an image in R^d). Returns the Axes."""
        return self.domain.plot(self, ax=ax, **kwargs)
