"""The sphere S² (S^{d-1} for particles): geometry, grid, transforms, right-hand sides, energy, sampling, plots.

:data:`SPHERE` is the :class:`~meanfield.domains.base.Domain` everything above
this layer dispatches through. Particles live on S^{d-1} for any d >= 3; densities on S² (d = 3).
"""

from __future__ import annotations

import numpy as np

from ... import strategies
from ..base import Domain, register
from ..zonal import choose_rate, energy_beta
from . import energy as _energy, lagrangian, plotting as _plotting, sampling as _sampling
from .continuity import SphereQuadrature, SphereSpectral, funk_hecke
from .geometry import (UnitSphereGeometry, check_on_sphere, geodesic, normalise, on_sphere, project_tangent, retract,
                       spherical)
from .grid import SphereGrid
from .moments import SphereMoments, moments_refusal
from .transforms import BACKENDS, DuccBackend, PyshtoolsBackend, ShtnsBackend, dealiased_degree, default_backend

__all__ = ["SPHERE", "Sphere", "SphereGrid", "SphereSpectral", "SphereQuadrature", "SphereMoments", "funk_hecke",
           "project_tangent", "retract", "normalise", "check_on_sphere", "geodesic", "spherical", "BACKENDS",
           "DuccBackend", "PyshtoolsBackend", "ShtnsBackend", "default_backend"]


class Sphere(UnitSphereGeometry, Domain):
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

    def rate(self, model, grid, path="auto", field=None):
        """Zonal models: the spectral path; any other self-attention: the moment path where it applies
        (:mod:`.moments`); else the quadrature sums. ``path`` forces one."""
        strategies.check(path, ("quadrature", "spectral", "moments"), "S²")
        field = model.field if field is None else field
        if path == "moments" or (path == "auto" and model.zonal is None):
            why = moments_refusal(model, grid.lmax, dealiased_degree(grid.lmax))
            if why is None:
                return SphereMoments(grid, model, field)
            if path == "moments":
                raise ValueError(f"the moments path does not apply to {model!r} on {grid!r}: {why}.")
        return choose_rate(model, grid, path, SphereSpectral, SphereQuadrature, "S²", field)

    coordinates = staticmethod(spherical)
    energy_beta = staticmethod(energy_beta)
    excess_energy = staticmethod(_energy.excess_energy)
    energy = staticmethod(_energy.energy)
    sample = staticmethod(_sampling.sample)
    plot = staticmethod(_plotting.plot)
    plot_points = staticmethod(_plotting.plot_points)
    plot_solution = staticmethod(_plotting.plot_solution)
    chart = lagrangian  # how points of the Lagrangian measure move and carry the density (docs/MATH.md §6)


SPHERE = register(Sphere())
