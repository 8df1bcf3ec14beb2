"""The circle S¹: geometry, grid, Fourier transforms, right-hand sides, energy, sampling, plots.

:data:`CIRCLE` is the :class:`~meanfield.domains.base.Domain` everything above
this layer dispatches through.
"""

from __future__ import annotations

import numpy as np

from ..base import Domain, register
from ..sphere.geometry import UnitSphereGeometry, check_on_sphere, on_sphere
from ..zonal import choose_rate, energy_beta
from . import energy as _energy, lagrangian, plotting as _plotting, sampling as _sampling
from .continuity import CircleQuadrature, CircleSpectral, bessel_multipliers
from .geometry import angles_to_points, points_to_angles, tangents
from .grid import CircleGrid
from .sampling import cdf

__all__ = ["CIRCLE", "Circle", "CircleGrid", "CircleSpectral", "CircleQuadrature", "bessel_multipliers",
           "angles_to_points", "points_to_angles", "tangents", "cdf"]


class Circle(UnitSphereGeometry, Domain):
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

    def rate(self, model, grid, path="auto", field=None):
        return choose_rate(model, grid, path, CircleSpectral, CircleQuadrature, "the circle", field)

    # the sphere's geometry in d = 2 (the mixin), the angle as coordinate; its own energy, sampling, figures
    coordinates = staticmethod(points_to_angles)
    energy_beta = staticmethod(energy_beta)
    excess_energy = staticmethod(_energy.excess_energy)
    energy = staticmethod(_energy.energy)
    sample = staticmethod(_sampling.sample)
    plot = staticmethod(_plotting.plot)
    plot_points = staticmethod(_plotting.plot_points)
    plot_solution = staticmethod(_plotting.plot_solution)
    chart = lagrangian  # how points of the Lagrangian measure move and carry the density (docs/MATH.md §6)


CIRCLE = register(Circle())
