r"""Local Lagrange interpolation on equispaced nodes: the constants of its a-priori error bound, and the smallest
stencil that a spectrum's bound allows (the common-noise maps, MATH.md §13).

A trigonometric mode cos(kθ + φ) sampled with spacing h and interpolated at x (in units of h, in the middle
interval [p/2 − 1, p/2] of p consecutive nodes 0..p−1) by the Lagrange polynomial of those nodes is off by at most
(kh)^p |ω(x)|/p! (Cauchy's remainder, |d^p/dθ^p cos| <= k^p), ω(x) = Π_{j<p} (x − j). For even p,
ω((p−1)/2 + t) = Π_{i<p/2} (t² − (i + ½)²) is even in t and each factor's modulus decreases in |t| <= ½, so

    max over the middle interval |ω| / p! = W_p = Π_{i<p/2} (i + ½)² / p!        (exact, :func:`remainder_constant`).

Interpolation is linear, so a sum of modes with amplitudes a_k is off by at most W_p Σ_k a_k (kh)^p
(:func:`smallest_stencil` picks the smallest even p that keeps this under a tolerance). A tensor product of two such
stencils (the sphere's longitude and colatitude) is off by at most E_φ + Λ_p E_θ, Λ_p the stencil's Lebesgue
constant on the middle interval (:func:`lebesgue_constant`).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numba as nb
import numpy as np

__all__ = ["barycentric_weights", "remainder_constant", "lebesgue_constant", "remainders", "smallest_stencil",
           "stencil_search", "MAX_STENCIL"]

#: The largest stencil the tables hold.
MAX_STENCIL = 32


def barycentric_weights(p: int) -> np.ndarray:
    """Barycentric weights of p equispaced nodes 0..p−1: 1/Π_{j≠i}(i − j) = (−1)^{p−1−i} / (i! (p−1−i)!)."""
    return np.array([(-1.0) ** (p - 1 - i) / (math.factorial(i) * math.factorial(p - 1 - i)) for i in range(p)])


def remainder_constant(p: int) -> float:
    """W_p = max_{x ∈ [p/2−1, p/2]} |ω(x)| / p! = Π_{i<p/2} (i + ½)² / p! for even p >= 2 (module docstring)."""
    p = int(p)
    if p < 2 or p % 2:
        raise ValueError(f"`p` must be an even stencil size >= 2, got {p}.")
    w = 1.0
    for i in range(p // 2):
        w *= (i + 0.5) ** 2
    return w / math.factorial(p)


@lru_cache(maxsize=None)
def lebesgue_constant(p: int) -> float:
    r"""An upper bound of Λ_p = max_{x ∈ [p/2−1, p/2]} Σ_j |ℓ_j(x)|, the Lebesgue constant of the p-node stencil on
    its middle interval (even p).

    On that interval no node lies inside, so every ℓ_j keeps its sign and Σ_j |ℓ_j| = Σ_j s_j ℓ_j is a polynomial
    P of degree p − 1 on an interval of length 1; sampled at spacing δ its maximum M_δ misses the true one by at
    most (δ/2) max|P'| <= (δ/2) · 2(p−1)² max|P| (Markov's inequality), so Λ_p <= M_δ / (1 − δ(p−1)²)."""
    remainder_constant(p)  # checks p
    m = 1 << 14
    delta = 1.0 / m
    x = p / 2 - 1 + (np.arange(m + 1) + 0.0) * delta
    x[0] += 1e-9  # off the node itself (ℓ_j(node) is 0 or 1 there: the same polynomial, continuous)
    x[-1] -= 1e-9
    w = barycentric_weights(p)
    t = w[None, :] / (x[:, None] - np.arange(p)[None, :])
    lam = np.abs(t).sum(axis=1) / np.abs(t.sum(axis=1))
    return float(np.max(lam) / (1.0 - delta * (p - 1) ** 2))


@lru_cache(maxsize=None)
def remainders() -> np.ndarray:
    """W_p for p = 0..:data:`MAX_STENCIL` (0 where p is odd or < 2; read-only)."""
    out = np.zeros(MAX_STENCIL + 1)
    for p in range(2, MAX_STENCIL + 1, 2):
        out[p] = remainder_constant(p)
    out.flags.writeable = False
    return out


@nb.njit(cache=True)
def stencil_search(a, step, W, factor, tol, p_min, p_max):
    """The compiled loop of :func:`smallest_stencil` (W = :func:`remainders`), callable from compiled code."""
    K = a.size
    q2 = np.empty(K)
    pw = np.empty(K)
    for k in range(K):
        q = k * step
        q2[k] = q * q
        pw[k] = 1.0
        for _ in range(p_min):
            pw[k] *= q
    for p in range(p_min, p_max + 1, 2):
        s = 0.0
        for k in range(K):
            s += a[k] * pw[k]
        if factor * W[p] * s <= tol:
            return p, factor * W[p] * s
        for k in range(K):
            pw[k] *= q2[k]
    return -1, np.inf


def smallest_stencil(amplitudes: np.ndarray, step: float, tol: float, *, factor: float = 1.0, p_min: int = 4,
                     p_max: int = MAX_STENCIL) -> tuple[int, float]:
    r"""(p, bound): the smallest even p in [p_min, p_max] with bound = factor · W_p Σ_k a_k (k·step)^p <= tol, or
    (−1, inf) if none.

    ``amplitudes`` a_k >= 0 is indexed by the wavenumber k = 0, 1, … (a_0 does not count: constants are
    interpolated exactly), ``step`` is the node spacing h in the variable of the modes e^{ikθ}; the sum is the
    a-priori bound of the interpolation error of Σ_k a_k cos(kθ + φ_k) (module docstring)."""
    if not (2 <= p_min <= p_max <= MAX_STENCIL and p_min % 2 == 0):
        raise ValueError(f"`p_min`, `p_max` must be even sizes 2 <= p_min <= p_max <= {MAX_STENCIL}, got "
                         f"{p_min}, {p_max}.")
    a = np.ascontiguousarray(amplitudes, dtype=float)
    p, bound = stencil_search(a, float(step), remainders(), float(factor), float(tol), int(p_min), int(p_max))
    return int(p), float(bound)
