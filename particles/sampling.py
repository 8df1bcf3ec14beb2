r"""Initial conditions for particle systems.

- :func:`uniform_sphere` — iid uniform on S^{d-1} (normalised Gaussians).
- :func:`orthogonal` — n <= d pairwise orthogonal unit vectors, uniformly
  rotated (the equiangular start of GLPR Theorem 6.8).
- :func:`sample` — iid points from a :class:`meanfield.Density`: on the
  circle by inversion of the exact CDF of its trigonometric interpolant.
"""

from __future__ import annotations

import numpy as np

from meanfield.density import Density
from meanfield.geometry import angles_to_points
from meanfield.grids.circle import CircleGrid
from meanfield.grids.euclidean import EuclideanGrid
from meanfield.grids.sphere import SphereGrid, evaluate, upper_bound

from .kernels import _circle_evaluate

__all__ = ["uniform_sphere", "orthogonal", "sample", "circle_cdf"]


def _count(n, name="n", minimum=1) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < minimum:
        raise ValueError(f"`{name}` must be an integer >= {minimum}, got {n!r}.")
    return int(n)


def _batch_shape(batch):
    if batch is None:
        return ()
    if isinstance(batch, (int, np.integer)):
        return (_count(batch, "batch"),)
    return tuple(_count(b, "batch") for b in batch)


def uniform_sphere(n: int, d: int, rng=None, batch=None) -> np.ndarray:
    """n iid points uniform on S^{d-1}, shape (*batch, n, d)."""
    n, d = _count(n), _count(d, "d", 2)
    rng = np.random.default_rng(rng)
    x = rng.standard_normal(_batch_shape(batch) + (n, d))
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def orthogonal(n: int, d: int, rng=None, batch=None) -> np.ndarray:
    """n pairwise orthogonal unit vectors in R^d (n <= d), uniformly rotated; shape (*batch, n, d)."""
    n, d = _count(n), _count(d, "d", 2)
    if n > d:
        raise ValueError(f"at most d = {d} vectors in R^{d} can be pairwise orthogonal, got n = {n}.")
    rng = np.random.default_rng(rng)
    g = rng.standard_normal(_batch_shape(batch) + (d, n))
    q, r = np.linalg.qr(g)
    # fix the signs so that the law is Haar (Mezzadri 2007)
    q = q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]
    return np.swapaxes(q, -1, -2)


def _cdf_coefficients(density: Density):
    """Coefficients for :func:`particles.kernels._circle_evaluate`: (A for F, D for ρ)."""
    g = density.grid
    c = g.coefficients(density.values)
    fac = np.full(c.size, 2.0)
    if g.n % 2 == 0:
        fac[-1] = 1.0
    k = np.arange(c.size)
    A = np.zeros(c.size, dtype=complex)
    A[1:] = fac[1:] * c[1:] / (2j * k[1:])
    D = fac * c / 2.0
    D[0] = c[0]
    return A, D, float(c[0].real), float(2.0 * np.sum(A.real))


def _cdf_and_density(density: Density, theta, coeffs):
    """(F(θ), ρ(θ)/mass) with F the normalised CDF of the interpolant."""
    A, D, c0, offset = coeffs
    flat = np.ascontiguousarray(np.asarray(theta, dtype=float).ravel())
    osc, rho = _circle_evaluate(flat, A, D)
    F = (c0 * flat + osc - offset) / (2.0 * np.pi * c0)
    return F.reshape(np.shape(theta)), (rho / (2.0 * np.pi * c0)).reshape(np.shape(theta))


def circle_cdf(density: Density, theta) -> np.ndarray:
    r"""F(θ) = ∫_0^θ ρ of the trigonometric interpolant, normalised by the mass.

    F(θ) = [c_0 θ + Σ_{k>=1} 2 Re(c_k (e^{ikθ} − 1)/(ik))] / (2π c_0), with the
    Nyquist coefficient of an even grid counted once (c_k = ρ̂_k).
    """
    return _cdf_and_density(density, theta, _cdf_coefficients(density))[0]


def sample(density: Density, n: int, rng=None, batch=None) -> np.ndarray:
    """n iid points from ``density``, shape (*batch, n, d).

    R^d (EuclideanGrid): a cell with probability ρ_i|cell|, then a uniform
    point in it — exact for the piecewise-constant density of cell averages.
    S²: rejection from the uniform law against the bound
    sup ρ <= Σ_l √(p_l(2l + 1)/4π) (addition theorem), exact for the
    spherical-harmonic expansion (evaluated at 1e-14 with ducc0).
    Circle: inversion of the exact CDF of the trigonometric interpolant,
    bracketed on a table of 16n nodes and refined by four safeguarded Newton
    steps (kept inside the bracket), converged to round-off.
    The interpolant must be non-negative for this to be a law; a density
    whose interpolant dips below zero between nodes raises ``ValueError``.
    """
    if not isinstance(density, Density):
        raise TypeError(f"`density` must be a meanfield.Density, got {type(density).__name__}.")
    n = _count(n)
    rng = np.random.default_rng(rng)
    shape = _batch_shape(batch) + (n,)
    g = density.grid
    if isinstance(g, SphereGrid):
        return _sample_sphere(density, shape, rng)
    if isinstance(g, EuclideanGrid):
        return _sample_cells(density, shape, rng)
    if not isinstance(g, CircleGrid):
        raise NotImplementedError(f"sampling from densities on {g!r} is not implemented yet.")
    coeffs = _cdf_coefficients(density)
    table_t = np.linspace(0.0, 2 * np.pi, 16 * g.n + 1)
    table_f = _cdf_and_density(density, table_t, coeffs)[0]
    if np.any(np.diff(table_f) < -1e-13):
        raise ValueError("the density's interpolant is negative somewhere: it is not a probability law.")
    table_f = np.maximum.accumulate(table_f)
    u = rng.uniform(0.0, 1.0, size=shape).ravel()
    idx = np.clip(np.searchsorted(table_f, u, side="right") - 1, 0, table_t.size - 2)
    lo, hi = table_t[idx], table_t[idx + 1]
    span = np.maximum(table_f[idx + 1] - table_f[idx], 1e-300)
    theta = lo + (hi - lo) * np.clip((u - table_f[idx]) / span, 0.0, 1.0)
    # safeguarded Newton on F(θ) = u: quadratic convergence from the O(h²) table guess
    for _ in range(4):
        F, rho = _cdf_and_density(density, theta, coeffs)
        theta = np.clip(theta - (F - u) / np.maximum(rho, 1e-300), lo, hi)
    return angles_to_points(np.mod(theta, 2 * np.pi)).reshape(shape + (2,))


def _sample_sphere(density: Density, shape, rng) -> np.ndarray:
    g = density.grid
    cilm = g.coefficients(density.values)
    bound = upper_bound(cilm)
    total = int(np.prod(shape))
    out = np.empty((total, 3))
    filled = 0
    accept_rate = max(density.mass() / (4 * np.pi * bound), 1e-3)
    while filled < total:
        k = int(1.2 * (total - filled) / accept_rate) + 16
        x = rng.standard_normal((k, 3))
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        rho = evaluate(cilm, x)
        if np.any(rho < -1e-10 * bound):
            raise ValueError("the density's expansion is negative somewhere: it is not a probability law.")
        keep = x[rng.uniform(0.0, bound, k) < rho]
        take = min(keep.shape[0], total - filled)
        out[filled : filled + take] = keep[:take]
        filled += take
    return out.reshape(shape + (3,))


def _sample_cells(density: Density, shape, rng) -> np.ndarray:
    g = density.grid
    p = np.clip((density.values * g.weights).ravel(), 0.0, None)
    cells = rng.choice(p.size, size=int(np.prod(shape)), p=p / p.sum())
    idx = np.stack(np.unravel_index(cells, g.shape), axis=-1)
    lower = g.bounds[:, 0] + idx * g.widths
    x = lower + rng.uniform(size=lower.shape) * g.widths
    return x.reshape(shape + (g.dim,))
