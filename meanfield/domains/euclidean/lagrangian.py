r"""R^d's chart for the Lagrangian measure: points move in R^d; the mesh is the order (d = 1) or a Delaunay
triangulation (d = 2) of the initial cell centres, moved with the flow; outside it the density is 0."""

from __future__ import annotations

import numpy as np

from .. import simplices

__all__ = ["check_state", "mesh", "mesh_of", "to_state", "to_points", "state_rate", "retract", "interpolate_log"]


def mesh(grid):
    """The mesh of the grid's cell centres (:func:`mesh_of`)."""
    return mesh_of(grid.points.reshape(-1, grid.dim))


def mesh_of(points):
    """None in d = 1 (a flow on the line keeps the order), else the Delaunay simplices of the points (n, d)."""
    if points.shape[-1] == 1:
        return None
    from scipy.spatial import Delaunay

    return Delaunay(points).simplices


def to_state(points):
    return np.array(points, dtype=float)


def to_points(state):
    return state


def state_rate(state, points, velocity):
    return velocity


def retract(state):
    return state


def interpolate_log(state, mesh, log_density, queries):
    """log ρ at ``queries`` (..., d): linear between the moved points, −inf outside their hull."""
    q = np.asarray(queries, dtype=float)
    if state.shape[1] == 1:
        order = np.argsort(state[:, 0], kind="stable")
        x, y = state[order, 0], log_density[order]
        return np.interp(q[..., 0], x, y, left=-np.inf, right=-np.inf)
    return simplices.interpolate(state, mesh, log_density, q, homogeneous=True)


def check_state(state):
    """Finite points, shape (n, d)."""
    if state.ndim != 2 or not np.all(np.isfinite(state)):
        raise ValueError(f"`state` must hold finite points, shape (n, d); got shape {state.shape}.")
