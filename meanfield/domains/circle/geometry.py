"""Geometry of the circle S¹ ⊂ R²: the sphere's (d = 2) plus the angle θ.

Points are unit vectors x = (cos θ, sin θ); tangent projection, retraction and
the geodesic distance are those of :mod:`meanfield.domains.sphere.geometry`
(on S¹ the geodesic distance is min(|θ − θ'|, 2π − |θ − θ'|)). This module is
the one place where points become angles and back.
"""

from __future__ import annotations

import numpy as np

__all__ = ["angles_to_points", "points_to_angles", "tangents"]


def angles_to_points(theta: np.ndarray) -> np.ndarray:
    """Unit vectors ``(cos θ, sin θ)`` of shape ``theta.shape + (2,)``."""
    theta = np.asarray(theta, dtype=float)
    return np.stack([np.cos(theta), np.sin(theta)], axis=-1)


def points_to_angles(x: np.ndarray) -> np.ndarray:
    """Angles θ in [0, 2π) of points ``(cos θ, sin θ)`` of shape (..., 2)."""
    x = np.asarray(x, dtype=float)
    return np.mod(np.arctan2(x[..., 1], x[..., 0]), 2.0 * np.pi)


def tangents(x: np.ndarray) -> np.ndarray:
    """The unit tangent ∂_θ x = (−sin θ, cos θ) at points x = (cos θ, sin θ), shape (..., 2)."""
    x = np.asarray(x, dtype=float)
    return np.stack([-x[..., 1], x[..., 0]], axis=-1)
