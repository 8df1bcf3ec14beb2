r"""iid points from a circle density: inversion of the exact CDF of its trigonometric interpolant."""

from __future__ import annotations

import numpy as np

from . import fourier
from .geometry import angles_to_points

__all__ = ["sample", "sample_values", "cdf"]


def cdf(density, theta) -> np.ndarray:
    r"""F(θ) = ∫_0^θ ρ of the trigonometric interpolant, normalised by the mass.

    F(θ) = [c_0 θ + Σ_{k>=1} 2 Re(c_k (e^{ikθ} − 1)/(ik))] / (2π c_0), with the
    Nyquist coefficient of an even grid counted once (c_k = ρ̂_k; :func:`fourier.cdf_coefficients`).
    """
    return fourier.cdf_and_density(density.values, theta)[0]


def sample(density, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Points of shape ``shape + (2,)`` drawn iid from ``density`` by inverting its CDF (:func:`sample_values`)."""
    return sample_values(density.values, shape, rng)


def sample_values(values, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Points of shape ``shape + (2,)`` drawn iid from the interpolant of nodal ``values`` by inverting its CDF.

    Bracketed on a table of 16n nodes and refined by four safeguarded Newton
    steps (kept inside the bracket), converged to round-off. The interpolant
    must be non-negative for this to be a law (``ValueError`` otherwise).
    """
    values = np.asarray(values, dtype=float)
    table_t = np.linspace(0.0, 2 * np.pi, 16 * values.shape[-1] + 1)
    table_f = fourier.cdf_and_density(values, table_t)[0]
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
        F, rho = fourier.cdf_and_density(values, theta)
        theta = np.clip(theta - (F - u) / np.maximum(rho, 1e-300), lo, hi)
    return angles_to_points(np.mod(theta, 2 * np.pi)).reshape(shape + (2,))
