r"""Particles on S^{d-1} drawn from a zonal density: the polar angle by inversion, the ring's point uniformly.

A point x with ⟨x, e⟩ = cos θ is x = cos θ e + sin θ ξ with ξ a unit vector of e^⊥. Under ρ(x) = f(⟨x, e⟩) the
polar angle has the law q(θ) = |S^{d−2}| sin^{d−2}θ f(cos θ) on [0, π] and ξ is uniform on S^{d−2} ⊂ e^⊥,
independent of θ (the surface measure disintegrates into rings). θ is drawn by inversion of the CDF of q: its mass on
each of K equal cells by an 8-point Gauss–Legendre rule per cell, then inside the cell a safeguarded Newton iteration
on the same rule from the cell's left edge, converged to 1e-12 of the cell's width (or a few ulps) — exact up to the interpolant's own round-off;
ξ is a normalised Gaussian of e^⊥ (on the circle, S⁰ = {±1}, a fair sign).
"""

from __future__ import annotations

import numpy as np

from ..gegenbauer import log_sphere_area, orthonormal
from .grid import axis

__all__ = ["sample", "polar_law", "lift"]

_GL_S, _GL_W = np.polynomial.legendre.leggauss(8)


def polar_law(density, theta) -> np.ndarray:
    """q(θ) = |S^{d−2}| sin^{d−2}θ ρ(cos θ), the density of the polar angle (module docstring), at angles θ; negative
    round-off of the interpolant is set to 0."""
    grid = density.grid
    d = grid.d
    theta = np.asarray(theta, dtype=float)
    c = grid.coefficients(density.values)
    f = orthonormal(d, grid.lmax, np.cos(theta), normalized=True) @ c
    with np.errstate(divide="ignore"):
        log_ring = log_sphere_area(d - 2) + (d - 2) * np.log(np.sin(theta))
    return np.maximum(f, 0.0) * np.exp(log_ring)


def lift(theta, d: int, rng) -> np.ndarray:
    """Points x = cos θ e + sin θ ξ of S^{d-1}, ξ uniform on the unit sphere of e^⊥ (module docstring), shape
    θ.shape + (d,)."""
    theta = np.asarray(theta, dtype=float)
    e = axis(d)
    if d == 2:
        xi = np.zeros(theta.shape + (2,))
        xi[..., 1] = np.where(rng.random(theta.shape) < 0.5, -1.0, 1.0)
    else:
        xi = rng.standard_normal(theta.shape + (d,))
        xi[..., -1] = 0.0
        xi /= np.linalg.norm(xi, axis=-1, keepdims=True)
    return np.cos(theta)[..., None] * e + np.sin(theta)[..., None] * xi


def cell_masses(density, cells: int) -> tuple[np.ndarray, np.ndarray]:
    """(masses, edges): the polar angle's law on ``cells`` equal cells of [0, π], each by the 8-point Gauss–Legendre
    rule of q (exact to round-off for the smooth q of a resolved density on cells of width π/cells)."""
    edges = np.linspace(0.0, np.pi, cells + 1)
    h = np.pi / cells
    mass = np.empty(cells)
    for start in range(0, cells, 1 << 14):  # chunks: the tables are (chunk, 8, lmax + 1)
        part = slice(start, min(cells, start + (1 << 14)))
        nodes = edges[part, None] + 0.5 * h * (_GL_S + 1.0)
        mass[part] = polar_law(density, nodes) @ (0.5 * h * _GL_W)
    return mass, edges


def polar_moment(density, f) -> float:
    """∫_0^π f(θ) q(θ) dθ by the 8-point Gauss–Legendre rule on max(64, lmax) equal cells of [0, π] (as
    :func:`cell_masses`): exact to round-off for a resolved density and an f smooth on [0, π]."""
    cells = max(64, density.grid.lmax)
    h = np.pi / cells
    nodes = np.linspace(0.0, np.pi, cells + 1)[:-1, None] + 0.5 * h * (_GL_S + 1.0)
    return float(np.sum(polar_law(density, nodes) * f(nodes) @ (0.5 * h * _GL_W)))


def sample(density, shape: tuple, rng) -> np.ndarray:
    """iid points of S^{d-1} from a zonal ``density`` (module docstring), shape ``shape + (d,)``."""
    grid = density.grid
    K = max(4096, 16 * grid.lmax)
    mass, edges = cell_masses(density, K)
    h = np.pi / K
    cdf = np.concatenate([[0.0], np.cumsum(mass)])
    total = cdf[-1]
    if not total > 0:
        raise ValueError("the density has no positive mass to sample.")
    U = (rng.random(tuple(shape)) * total).ravel()
    theta = np.empty_like(U)
    for start in range(0, U.size, 2048):  # chunks: the Newton tables are (chunk, 8, lmax + 1)
        part = slice(start, start + 2048)
        theta[part] = _invert(density, U[part], cdf, mass, edges, h)
    return lift(theta.reshape(tuple(shape)), grid.d, rng)


def _invert(density, U, cdf, mass, edges, h):
    """θ with ∫_0^θ q = U: the cell of U, then safeguarded Newton on the cell's Gauss–Legendre rule."""
    K = mass.size
    cell = np.clip(np.searchsorted(cdf, U, side="right") - 1, 0, K - 1)
    a, target = edges[cell], U - cdf[cell]
    lo, hi = a.copy(), a + h
    share = np.where(mass[cell] > 0, target / np.where(mass[cell] > 0, mass[cell], 1.0), 0.5)
    theta = a + h * np.clip(share, 0.0, 1.0)  # the linear interpolation of the CDF across the cell
    for _ in range(60):
        width = theta - a
        pts = a[:, None] + 0.5 * width[:, None] * (_GL_S + 1.0)
        F = (polar_law(density, pts) @ _GL_W) * 0.5 * width - target
        q = polar_law(density, theta)
        lo = np.where(F < 0, theta, lo)
        hi = np.where(F > 0, theta, hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            newton = theta - F / q
        inside = np.isfinite(newton) & (newton >= lo) & (newton <= hi)
        step = np.where(inside, newton, 0.5 * (lo + hi))
        done = np.abs(step - theta) <= np.maximum(1e-12 * h, 8.0 * np.finfo(float).eps * theta)
        theta = step
        if np.all(done):
            break
    return theta
