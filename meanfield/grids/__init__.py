"""Grids: geometry, quadrature and transforms, one module per domain."""

from .circle import CircleGrid

__all__ = ["CircleGrid"]
