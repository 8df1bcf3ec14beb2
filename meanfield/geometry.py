"""Geometry of the unit sphere S^{d-1}, kept apart from the dynamics.

The models, integrators and fluxes use only these few pure functions
(tangent projection, retraction, conversion between angles and unit vectors
on the circle).  Source: MATH.md, notation; GLPR §2.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "project_tangent",
    "retract",
    "check_on_sphere",
    "angles_to_points",
    "points_to_angles",
]


def project_tangent(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    r"""Project ``v`` on the tangent space of the sphere at ``x``.

    .. math:: P_x^\perp v = v - \langle x, v\rangle x

    Parameters
    ----------
    x : array_like, shape (..., d)
        Unit vectors.
    v : array_like, shape (..., d)
        Vectors to project (broadcast against ``x``).
    """
    return v - np.sum(x * v, axis=-1, keepdims=True) * x


def retract(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Move from ``x`` along ``v`` and return to the sphere: ``(x + v)/|x + v|``."""
    y = x + v
    return y / np.linalg.norm(y, axis=-1, keepdims=True)


def check_on_sphere(x: np.ndarray, name: str, atol: float = 1e-8) -> np.ndarray:
    """Return ``x`` as a float array after checking it holds finite unit vectors.

    Raises
    ------
    ValueError
        If ``x`` has fewer than one axis, holds non-finite values, or a row
        whose norm differs from 1 by more than ``atol``.
    """
    x = np.asarray(x, dtype=float)
    if x.ndim < 1 or x.shape[-1] < 2:
        raise ValueError(f"`{name}` must have shape (..., d) with d >= 2, got shape {x.shape}.")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"`{name}` contains non-finite values (NaN or inf).")
    if x.size:
        dev = np.max(np.abs(np.linalg.norm(x, axis=-1) - 1.0))
        if dev > atol:
            raise ValueError(
                f"`{name}` must hold unit vectors (points on the sphere); "
                f"the largest deviation of |x| from 1 is {dev:.3g} > {atol:g}."
            )
    return x


def angles_to_points(theta: np.ndarray) -> np.ndarray:
    """Unit vectors ``(cos θ, sin θ)`` of shape ``theta.shape + (2,)``."""
    theta = np.asarray(theta, dtype=float)
    return np.stack([np.cos(theta), np.sin(theta)], axis=-1)


def points_to_angles(x: np.ndarray) -> np.ndarray:
    """Angles θ in [0, 2π) of points ``(cos θ, sin θ)`` of shape (..., 2)."""
    x = np.asarray(x, dtype=float)
    return np.mod(np.arctan2(x[..., 1], x[..., 0]), 2.0 * np.pi)
