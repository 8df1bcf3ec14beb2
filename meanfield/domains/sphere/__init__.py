"""The sphere S² (S^{d-1} for particles): geometry, grid, transforms, right-hand sides, energy, sampling, plots.

:data:`SPHERE` is the :class:`~meanfield.domains.base.Domain` everything above
this layer dispatches through. Particles live on S^{d-1} for any d >= 3; densities on S² (d = 3).
"""

from __future__ import annotations

import numpy as np

from ..base import Domain, register
from ..zonal import choose_rate, energy_beta
from . import energy as _energy, plotting as _plotting, sampling as _sampling
from .continuity import SphereQuadrature, SphereSpectral, funk_hecke
from .geometry import check_on_sphere, geodesic, normalise, on_sphere, project_tangent, retract, spherical
from .grid import SphereGrid
from .transforms import BACKENDS, DuccBackend, PyshtoolsBackend, default_backend

__all__ = ["SPHERE", "Sphere", "SphereGrid", "SphereSpectral", "SphereQuadrature", "funk_hecke", "project_tangent",
           "retract", "normalise", "check_on_sphere", "geodesic", "spherical", "BACKENDS", "DuccBackend",
           "PyshtoolsBackend", "default_backend"]


class Sphere(Domain):
    """The unit sphere S^{d-1} ⊂ R^d, d >= 3 (MATH.md §1–2): densities on S², particles in any d."""

    name = "sphere"
    grid_type = SphereGrid
    projection = "mollweide"
    default_max_n = 256

    def check_points(self, x, name):
        x = check_on_sphere(x, name)
        if x.shape[-1] < 3:
            raise ValueError(f"`{name}` must hold points of S^(d-1) with d >= 3 (d = 2 is the circle), got shape "
                             f"{x.shape}.")
        return x

    def contains(self, x, atol=1e-8):
        x = np.asarray(x, dtype=float)
        return x.ndim >= 1 and x.shape[-1] >= 3 and on_sphere(x, atol)

    def project(self, x, v):
        return project_tangent(x, v)

    def retract(self, y):
        return normalise(y)

    def distance(self, xa, xb):
        return geodesic(xa, xb)

    def coordinates(self, x):
        return spherical(x)

    def rate(self, model, grid, path="auto"):
        return choose_rate(model, grid, path, SphereSpectral, SphereQuadrature, "S²")

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


SPHERE = register(Sphere())
