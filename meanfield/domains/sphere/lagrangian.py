r"""S²'s chart for the Lagrangian measure: points in R³ retracted to the sphere, the mesh the nodes' convex hull.

The convex hull of the initial grid's nodes triangulates S² (central projection);
the flow moves the nodes and the triangles with them, and the log-density between
the points is interpolated linearly on the moved triangles (docs/MATH.md §6).
"""

from __future__ import annotations

import numpy as np

from .. import simplices
from .geometry import check_on_sphere, normalise

__all__ = ["check_state", "mesh", "to_state", "to_points", "state_rate", "retract", "interpolate_log",
           "cell_averages"]


def mesh(grid):
    """Triangles (T, 3) of the convex hull of the grid's nodes (flattened node order)."""
    from scipy.spatial import ConvexHull

    return ConvexHull(grid.points.reshape(-1, 3)).simplices


def to_state(points):
    return np.array(points, dtype=float)


def to_points(state):
    """The points on the sphere (the stages of a Runge–Kutta step leave it by O(h⁵); the field is taken at
    the nearest point of S²)."""
    return normalise(state)


def state_rate(state, points, velocity):
    return velocity


def retract(state):
    return normalise(state)


def interpolate_log(state, mesh, log_density, queries):
    """log ρ at unit vectors ``queries`` (..., 3), linear on the moved triangles."""
    return simplices.interpolate(state, mesh, log_density, queries, homogeneous=False)


def cell_averages(state, weights, grid):
    """The measure Σ w_i δ_{x_i} as cell averages on a Gauss–Legendre ``grid``: the mass in the cell around
    each node (between the midpoints of neighbouring colatitudes, the poles closing the first and last
    rows, and of neighbouring longitudes) divided by the cell's area, shape ``grid.shape``."""
    x = normalise(state)
    th = np.arccos(np.clip(x[:, 2], -1.0, 1.0))
    edges = grid.colatitude_edges
    row = np.clip(np.searchsorted(edges, th, side="right") - 1, 0, grid.colatitudes.size - 1)
    nlon = grid.longitudes.size
    h = 2.0 * np.pi / nlon
    col = np.mod(np.round((np.arctan2(x[:, 1], x[:, 0]) - grid.longitudes[0]) / h), nlon).astype(int)
    area = np.outer(np.cos(edges[:-1]) - np.cos(edges[1:]), np.full(nlon, h))
    return np.bincount(row * nlon + col, weights=weights, minlength=area.size).reshape(area.shape) / area


def check_state(state):
    """Unit vectors, shape (n, 3)."""
    check_on_sphere(state, "state")
    if state.shape[1] != 3:
        raise ValueError(f"`state` must hold points of S², shape (n, 3); got {state.shape}.")
