"""iid points from a density on S²: rejection from the uniform law against the addition-theorem bound."""

from __future__ import annotations

import numpy as np

from .transforms import evaluate, upper_bound

__all__ = ["sample"]


def sample(density, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Points of shape ``shape + (3,)`` drawn iid from ``density``.

    Rejection from the uniform law against sup ρ <= Σ_l √(p_l(2l + 1)/4π)
    (addition theorem), exact for the spherical-harmonic expansion (evaluated
    at 1e-14 with ducc0). ``ValueError`` where the expansion is negative.
    """
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
