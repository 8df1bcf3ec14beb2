"""Grids: geometry, quadrature and transforms, one module per domain."""

from .circle import CircleGrid
from .euclidean import EuclideanGrid
from .sphere import SphereGrid

__all__ = ["CircleGrid", "SphereGrid", "EuclideanGrid"]
