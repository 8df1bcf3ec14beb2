r"""Initial laws on S^{d-1} that are not solutions: the von Mises–Fisher mixture, its density and exact samples.

f(x) = Σ_j w_j C_d(κ_j) e^{κ_j⟨x, c_j⟩},  C_d(κ) = κ^{d/2−1} / ((2π)^{d/2} I_{d/2−1}(κ))

against surface measure (Mardia & Jupp, *Directional Statistics*, (9.3.4)); C_d(0) = 1/|S^{d-1}|.
On the circle (d = 2) it is the von Mises law e^{κ cos(θ − θ_j)}/(2π I_0(κ)).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special, stats

__all__ = ["von_mises_fisher", "sample_von_mises_fisher"]


def _mixture(centres, kappa, weights):
    c = np.atleast_2d(np.asarray(centres, dtype=float))
    if c.ndim != 2 or c.shape[1] < 2:
        raise ValueError(f"`centres` must have shape (m, d) with d >= 2, got {np.shape(centres)}.")
    norms = np.linalg.norm(c, axis=1)
    if not np.allclose(norms, 1.0, atol=1e-12):
        raise ValueError(f"`centres` must be unit vectors; their norms are {norms}.")
    k = np.broadcast_to(np.asarray(kappa, dtype=float), (c.shape[0],))
    if not np.all(np.isfinite(k)) or np.any(k < 0):
        raise ValueError(f"`kappa` must be finite and >= 0, got {kappa!r}.")
    w = np.ones(c.shape[0]) if weights is None else np.broadcast_to(np.asarray(weights, dtype=float), (c.shape[0],))
    if not np.all(np.isfinite(w)) or np.any(w < 0) or not w.sum() > 0:
        raise ValueError(f"`weights` must be finite, >= 0 and not all 0, got {weights!r}.")
    return c, k, w / w.sum()


def von_mises_fisher(x, centres, kappa, weights=None) -> np.ndarray:
    r"""The von Mises–Fisher mixture's density at unit vectors ``x`` (..., d), against surface measure.

    Parameters
    ----------
    x : array_like, shape (..., d)
    centres : array_like, shape (m, d)
        Unit mean directions c_j.
    kappa : float or array_like, shape (m,)
        Concentrations κ_j >= 0 (0: the uniform law).
    weights : array_like, shape (m,), optional
        Mixture weights (normalised to sum 1; default equal).

    Notes
    -----
    Evaluated as e^{κ(⟨x,c⟩−1)} κ^ν / ((2π)^{d/2} I_ν^e(κ)), ν = d/2 − 1, with the exponentially scaled
    Bessel function I^e: no overflow for large κ.
    """
    c, k, w = _mixture(centres, kappa, weights)
    x = np.asarray(x, dtype=float)
    d = x.shape[-1]
    if d != c.shape[1]:
        raise ValueError(f"`x` has dimension {d} but `centres` {c.shape[1]}.")
    nu = d / 2.0 - 1.0
    area = 2.0 * math.pi ** (d / 2.0) / math.gamma(d / 2.0)
    out = np.zeros(x.shape[:-1])
    for cj, kj, wj in zip(c, k, w):
        if kj == 0.0:
            out += wj / area
        else:
            norm = kj**nu / ((2.0 * math.pi) ** (d / 2.0) * special.ive(nu, kj))
            out += wj * norm * np.exp(kj * (x @ cj - 1.0))
    return out


def sample_von_mises_fisher(n: int, centres, kappa, weights=None, *, rng, batch: int | None = None) -> np.ndarray:
    """Exact iid samples of the mixture: a component by its weight, then scipy's sampler (Wood 1994).

    Parameters
    ----------
    n : int
        Points per sample.
    centres, kappa, weights
        As :func:`von_mises_fisher`.
    rng : numpy.random.Generator or int
        The seed, passed explicitly.
    batch : int, optional
        Independent samples: shape (batch, n, d) instead of (n, d).
    """
    c, k, w = _mixture(centres, kappa, weights)
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"`n` must be a positive integer, got {n!r}.")
    rng = np.random.default_rng(rng)
    shape = (int(n),) if batch is None else (int(batch), int(n))
    d = c.shape[1]
    comp = rng.choice(c.shape[0], size=shape, p=w)
    out = np.empty(shape + (d,))
    for j in range(c.shape[0]):
        mask = comp == j
        m = int(mask.sum())
        if m == 0:
            continue
        if k[j] == 0.0:
            g = rng.normal(size=(m, d))
            out[mask] = g / np.linalg.norm(g, axis=1, keepdims=True)
        else:
            out[mask] = stats.vonmises_fisher(c[j], k[j]).rvs(m, random_state=rng).reshape(m, d)
    return out
