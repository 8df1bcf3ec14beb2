"""The domain layer: one package per domain, one protocol everything above dispatches through.

=============  ==========================  =====================================================
domain         package                     grid
=============  ==========================  =====================================================
``CIRCLE``     :mod:`.circle`              :class:`CircleGrid` (n nodes, FFT)
``SPHERE``     :mod:`.sphere`              :class:`SphereGrid` (Gauss–Legendre, harmonics)
``EUCLIDEAN``  :mod:`.euclidean`           :class:`EuclideanGrid` (a box, finite volumes)
``SEQUENCE``   :mod:`.sequence`            :class:`SequenceGrid` ([0, 1] × S¹: positions × angles)
``ZONAL``      :mod:`.zonal_sphere`        :class:`ZonalGrid` (rings of S^{d-1}, any d: Gegenbauer)
=============  ==========================  =====================================================

The protocol is :class:`Domain` and :class:`Grid` (:mod:`.base`); ``register(domain)`` adds one (each package
registers its instance; a domain defined elsewhere registers the same way, ``unregister(name)`` removes it:
tests/meanfield/test_new_domain.py); ``get(name)``
returns a domain by name, ``infer(points)`` reads the domain of a bare array of
points (the documented convention for arrays that carry none), ``for_manifold(manifold, d)`` the domain of the
points a model moves (``model.manifold``; ``of_model(model)`` the same for a model) and ``unit_sphere(d)`` S^{d-1}
(the circle for d = 2). Every domain knows ``dim``, the d of its ambient R^d; an object that stands for its family in
every d (``SPHERE``, ``EUCLIDEAN``, ``SEQUENCE``, ``ZONAL``) has None there and ``of_dim(d)`` its member in R^d (the
unit spheres are one family: ``sphere_of_dim(d)``, the circle for d = 2). May import:
numpy, scipy, numba, pyshtools/ducc0, :mod:`meanfield.core.numerics`,
:mod:`meanfield.core.checks`, :mod:`meanfield.kernels.strategies`; nothing above.
"""

from .base import (
    Domain, Grid, Measure, for_manifold, get, infer, of_model, register, sphere_of_dim, unit_sphere, unregister,
)
from .circle import CIRCLE, CircleGrid
from .euclidean import EUCLIDEAN, EuclideanGrid
from .sphere import SPHERE, SphereGrid
from .sequence import SEQUENCE, SequenceGrid
from .zonal_sphere import ZONAL, ZonalGrid, zonal_domain

DOMAINS = (CIRCLE, SPHERE, EUCLIDEAN, SEQUENCE, ZONAL)

__all__ = ["Domain", "Grid", "Measure", "register", "unregister", "get", "infer", "unit_sphere", "for_manifold", "CIRCLE", "SPHERE", "EUCLIDEAN",
           "DOMAINS", "of_model", "sphere_of_dim", "CircleGrid", "SphereGrid", "EuclideanGrid", "SEQUENCE", "SequenceGrid", "ZONAL", "ZonalGrid", "zonal_domain"]
