r"""The circle's chart for the Lagrangian measure: points move as unwrapped angles, the mesh is their cyclic order.

The state of n moving points is their angle θ_i(t), continuous in time (never
wrapped), so the flow's cyclic order — a diffeomorphism of the circle keeps it —
is the order of the initial nodes, and the density between the points is a
periodic cubic spline of log ρ in θ (docs/MATH.md §6).
"""

from __future__ import annotations

import numpy as np

from .geometry import angles_to_points, points_to_angles, tangents

__all__ = ["check_state", "mesh", "to_state", "to_points", "state_rate", "retract", "interpolate_log",
           "cell_averages"]


def mesh(grid):
    """None: the connectivity of circle nodes is their order, which the flow keeps."""
    return None


def to_state(points):
    """Angles θ ∈ [0, 2π) of the initial points, shape (n, 1), unwrapped along the node order."""
    return np.unwrap(points_to_angles(points))[:, None]


def to_points(state):
    return angles_to_points(state[:, 0])


def state_rate(state, points, velocity):
    """dθ/dt = ⟨X, (−sin θ, cos θ)⟩."""
    return np.sum(velocity * tangents(points), axis=-1)[:, None]


def retract(state):
    return state


def interpolate_log(state, mesh, log_density, queries):
    """log ρ at unit vectors ``queries`` (..., 2): a periodic cubic spline of log ρ over the moved angles."""
    from scipy.interpolate import CubicSpline

    theta = np.mod(state[:, 0], 2.0 * np.pi)
    order = np.argsort(theta, kind="stable")  # the flow keeps the cyclic order; sorting only rotates it
    th, lr = theta[order], log_density[order]
    base = th[0]
    x = np.append(th - base, 2.0 * np.pi)
    y = np.append(lr, lr[0])
    ok = np.concatenate([[True], np.diff(x) > 0])  # points that coincide to round-off carry one value
    spline = CubicSpline(x[ok], y[ok], bc_type="periodic")
    q = np.mod(points_to_angles(np.asarray(queries, dtype=float)) - base, 2.0 * np.pi)
    return spline(q)


def check_state(state):
    """Finite angles, shape (n, 1)."""
    if state.ndim != 2 or state.shape[1] != 1 or not np.all(np.isfinite(state)):
        raise ValueError(f"`state` must hold finite angles, shape (n, 1); got shape {state.shape}.")


def cell_averages(state, weights, grid):
    """The measure Σ w_i δ_{θ_i} as cell averages on the n-node ``grid``: the mass in the cell around each node
    (width 2π/n) divided by the width."""
    n = grid.n
    h = 2.0 * np.pi / n
    cell = np.mod(np.round(np.mod(state[:, 0], 2.0 * np.pi) / h), n).astype(int)
    return np.bincount(cell, weights=weights, minlength=n) / h
