"""The circle S¹: geometry, grid, Fourier transforms, right-hand sides, energy, sampling, plots.

:data:`CIRCLE` is the :class:`~meanfield.domains.base.Domain` everything above
this layer dispatches through.
"""

from __future__ import annotations

import numpy as np

from ..base import Domain, register
from ..sphere.geometry import check_on_sphere, geodesic, normalise, on_sphere, project_tangent
from ..zonal import choose_rate, energy_beta
from . import energy as _energy, plotting as _plotting, sampling as _sampling
from .continuity import CircleQuadrature, CircleSpectral, bessel_multipliers
from .geometry import angles_to_points, points_to_angles, tangents
from .grid import CircleGrid
from .sampling import cdf

__all__ = ["CIRCLE", "Circle", "CircleGrid", "CircleSpectral", "CircleQuadrature", "bessel_multipliers",
           "angles_to_points", "points_to_angles", "tangents", "cdf"]


class Circle(Domain):
    """The circle S¹ ⊂ R² (MATH.md §2.1): SA/USA and any Q, K, V in d = 2."""

    name = "circle"
    grid_type = CircleGrid
    default_max_n = 16384

    def check_points(self, x, name):
        x = check_on_sphere(x, name)
        if x.shape[-1] != 2:
            raise ValueError(f"`{name}` must hold points of the circle (unit vectors in R²), got shape {x.shape}.")
        return x

    def contains(self, x, atol=1e-8):
        x = np.asarray(x, dtype=float)
        return x.ndim >= 1 and x.shape[-1] == 2 and on_sphere(x, atol)

    def project(self, x, v):
        return project_tangent(x, v)

    def retract(self, y):
        return normalise(y)

    def distance(self, xa, xb):
        return geodesic(xa, xb)

    def coordinates(self, x):
        return points_to_angles(x)

    def rate(self, model, grid, path="auto"):
        return choose_rate(model, grid, path, CircleSpectral, CircleQuadrature, "the circle")

    def energy_beta(self, model):
        return energy_beta(model)

    def excess_energy(self, grid, values, beta):
        return _energy.excess_energy(grid, values, beta)

    def energy(self, grid, values, beta):
        return _energy.energy(grid, values, beta)

    def sample(self, density, shape, rng):
        return _sampling.sample(density, shape, rng)

    def plot(self, density, ax=None, **kwargs):
        return _plotting.plot(density, ax=ax, **kwargs)

    def plot_points(self, x, ax, **kwargs):
        return _plotting.plot_points(x, ax, **kwargs)

    def plot_solution(self, solution, title=None):
        return _plotting.plot_solution(solution, title=title)


CIRCLE = register(Circle())
