"""R^d (d = 1, 2 for densities, any d for particles): geometry, the finite-volume grid and scheme, sampling, plots.

:data:`EUCLIDEAN` is the :class:`~meanfield.domains.base.Domain` everything above
this layer dispatches through.
"""

from __future__ import annotations

import numpy as np

from ..base import SUPERSCRIPT, Domain, register
from . import geometry, lagrangian, plotting as _plotting, sampling as _sampling
from .continuity import FiniteVolume
from .grid import EuclideanGrid

__all__ = ["EUCLIDEAN", "Euclidean", "EuclideanGrid", "FiniteVolume"]


class Euclidean(Domain):
    """R^d with the attention variants of CACP (MATH.md §5): no projection, mass may leave a box."""

    name = "euclidean"
    description = "Euclidean space R^d"
    grid_type = EuclideanGrid
    manifold = "euclidean"
    initial_laws = ("gaussian",)
    grid_parameters = {"bounds": True, "shape": True}
    default_method = "rk4"  # fourth order with the fifth-order WENO fluxes; "ssprk3" keeps ρ >= 0 (FiniteVolume)
    default_max_n = None  # finite-volume grids are not refined
    conserves_mass = False
    strain_capped = False

    @property
    def plane(self):
        """R² (``of_dim(2)``): densities are images with equal axes."""
        return self.dim == 2

    def default_cfl(self, adaptive):
        return 0.8  # RK4 is stable with WENO5 to 1.73, SSP-RK3 to 1.43; SSP-RK3 keeps ρ >= 0 up to 1 (FiniteVolume)

    def contains(self, x, atol=1e-8):
        x = np.asarray(x, dtype=float)
        return bool(x.ndim >= 1 and np.all(np.isfinite(x)))

    @staticmethod
    def project(x, v):
        return v

    @staticmethod
    def retract(y):
        return y

    @staticmethod
    def divergence(x, v, trace, normal):
        """tr Dv: no projection, no curvature (``Domain.divergence``; ``normal`` is not used)."""
        return trace

    def check_particles(self, x, name):
        """Finite points of R^d in an array of shape (n, d) or (batch, n, d), a copy (``Domain.check_particles``)."""
        x = np.array(x, dtype=float)
        if x.ndim not in (2, 3) or x.shape[-2] < 1:
            raise ValueError(f"`{name}` must have shape (n, d) or (batch, n, d), got {x.shape}.")
        if self.dim is not None and x.shape[-1] != self.dim:
            raise ValueError(f"`{name}` must hold points of R^{self.dim}, got shape {x.shape}.")
        if not np.all(np.isfinite(x)):
            raise ValueError(f"`{name}` contains non-finite values (NaN or inf).")
        return x

    @staticmethod
    def particle_step(rate_scale):
        """A fixed 0.01 (``Domain.particle_step``): the rate scale, a bound on the unit sphere, bounds no field of
        R^d, which grows with the support (``rate_scale`` is not called)."""
        return 0.01

    @staticmethod
    def coordinates(x):
        return np.asarray(x, dtype=float)

    @staticmethod
    def chord_distance(chord):
        return np.asarray(chord)

    @staticmethod
    def brownian_step(x, tau, rng):
        """x + √(2τ) ξ, ξ standard normal: Brownian motion with generator Δ for time τ (= D·h), exactly."""
        x = np.asarray(x, dtype=float)
        return x + np.sqrt(2.0 * tau) * rng.standard_normal(x.shape)

    @staticmethod
    def symbol(d):
        return "ℝ" + (str(d).translate(SUPERSCRIPT) if d > 1 else "")

    @staticmethod
    def intrinsic_dimension(d):
        return d

    grid_strategies = staticmethod(FiniteVolume.strategies)

    @staticmethod
    def continuity(model, grid, strategy, field=None, drift=None):
        return FiniteVolume(grid, model, strategy, field, drift=drift)

    def check_initial(self, density):
        edge = density.grid.boundary_mass(density.values) / density.mass()
        if edge > 1e-6:
            raise ValueError(
                f"the box of {density.grid!r} is too small for the data: its boundary cells hold {edge:.2e} of the "
                "mass (more than 1e-6), which would leave at once; enlarge the box."
            )

    @staticmethod
    def make_grid(parameters):
        shape = parameters["shape"]
        return EuclideanGrid(parameters["bounds"], shape[0] if len(shape) == 1 else shape)

    @staticmethod
    def check_dimension(d, densities):
        d = 2 if d is None else d
        if d < 1:
            raise ValueError(f"dimension must be >= 1, got {d}")
        return d

    check_points = staticmethod(geometry.check_points)
    distance = staticmethod(geometry.distance)
    one_sided_lipschitz = staticmethod(geometry.one_sided_lipschitz)
    sample = staticmethod(_sampling.sample)
    plot = staticmethod(_plotting.plot)
    plot_points = staticmethod(_plotting.plot_points)
    plot_solution = staticmethod(_plotting.plot_solution)
    chart = lagrangian  # how points of the Lagrangian measure move and carry the density (docs/MATH.md §6)


EUCLIDEAN = register(Euclidean())
