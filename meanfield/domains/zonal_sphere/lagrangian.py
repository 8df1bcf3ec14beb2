r"""The zonal domain's chart for the Lagrangian measure: rings move by their polar angle, in the order they start.

A ring {⟨x, e⟩ = cos θ} carries its mass uniformly; the field is meridional, so each ring moves as one point θ(t) of
[0, π] (θ̇ = −ψ′(cos θ) sin θ: the poles are fixed, a ring never crosses them), the flow of [0, π] keeps the rings'
order, and log ρ between them is a cubic spline in θ (docs/MATH.md §6, §9).
"""

from __future__ import annotations

import numpy as np

__all__ = ["check_state", "mesh", "to_state", "to_points", "state_rate", "retract", "interpolate_log",
           "cell_averages"]


def mesh(grid):
    """None: the connectivity of rings is their order, which the flow keeps."""
    return None


def to_state(points):
    """Polar angles θ of the rings, shape (n, 1)."""
    return np.asarray(points, dtype=float).reshape(-1, 1).copy()


def to_points(state):
    return state


def state_rate(state, points, velocity):
    """dθ/dt: the velocity of a ring is its polar velocity already."""
    return velocity


def retract(state):
    return np.clip(state, 0.0, np.pi)


def interpolate_log(state, mesh, log_density, queries):
    """log ρ at polar angles ``queries`` (..., 1): a cubic spline of log ρ over the moved angles (the rings of
    positive mass), extended by its end polynomials beyond the outermost rings."""
    from scipy.interpolate import CubicSpline

    theta = state[:, 0]
    ok = np.isfinite(log_density)
    order = np.argsort(theta[ok], kind="stable")
    th, lr = theta[ok][order], log_density[ok][order]
    keep = np.concatenate([[True], np.diff(th) > 0])  # rings that coincide to round-off carry one value
    th, lr = th[keep], lr[keep]
    q = np.asarray(queries, dtype=float)[..., 0]
    if th.size < 2:
        return np.full(q.shape, lr[0] if lr.size else -np.inf)
    return CubicSpline(th, lr, bc_type="not-a-knot" if th.size > 3 else "natural")(q)


def check_state(state):
    """Finite polar angles in [0, π], shape (n, 1)."""
    if state.ndim != 2 or state.shape[1] != 1 or not np.all(np.isfinite(state)):
        raise ValueError(f"`state` must hold finite polar angles, shape (n, 1); got shape {state.shape}.")
    if np.any((state < -1e-12) | (state > np.pi + 1e-12)):
        raise ValueError("`state`: polar angles must lie in [0, π].")


def cell_averages(state, weights, grid):
    """The rings' masses as densities on ``grid``: each ring's mass in the cell of the nearest node (edges at the
    midpoints of the nodes' polar angles, 0 and π), divided by the cell's surface measure."""
    from .grid import cell_measure

    th = grid.theta
    edges = np.concatenate([[0.0], 0.5 * (th[1:] + th[:-1]), [np.pi]])
    cell = np.clip(np.searchsorted(edges, np.clip(state[:, 0], 0.0, np.pi), side="right") - 1, 0, th.size - 1)
    mass = np.bincount(cell, weights=weights, minlength=th.size)
    measure = cell_measure(grid.d, edges)
    return np.where(measure > 0, mass / np.where(measure > 0, measure, 1.0), 0.0)
