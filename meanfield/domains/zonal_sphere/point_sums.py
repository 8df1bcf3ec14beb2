r"""The spectral sums of rings: the field of a zonal measure Σ_j w_j σ_{θ_j} (w_j on the ring of polar angle θ_j,
uniform on it) at the polar angles of other rings — the ``spectral`` strategy of the zonal Lagrangian measure.

With the ring moments ĝ_l = Σ_j w_j p̄_l(cos θ_j) (ĝ_0 the mass) Funk–Hecke gives the kernel sum

    φ(u) = ∫ e^{β⟨x,y⟩} dμ(y) = Σ_l m_l ĝ_l p̄_l(u),    m_l = λ_l/|S^{d−1}|,

exactly (MATH.md §9; :mod:`.basis`), truncated at the degree K past which the terms are below 1e-17 of the first for
any probability measure (:func:`.basis.degree`): O((n + m)K) for n rings and m queries, K set by β and d alone,
however sharp the rings' clusters. From φ (the velocity potential ψ of :mod:`.continuity`):

    θ̇ = −ψ′(cos θ) sin θ,      div_S X = Δψ = (1 − u²)ψ″ − (d − 1)uψ′,

the second the log-Jacobian rate of the Lagrangian measure (docs/MATH.md §6), and the energy
E_β = (1/2β) Σ_l λ_l |μ_l|² = (1/2β) Σ_l m_l ĝ_l².
"""

from __future__ import annotations

import numpy as np

from ...core.numerics import EXP_MAX
from ..gegenbauer import degree, harmonic_dimension, scaled_multipliers, orthonormal

__all__ = ["ring_degree", "ring_moments", "ring_field", "ring_field_and_divergence", "ring_excess_energy",
           "excess_from_moments", "mean_excess"]


def ring_degree(d: int, beta: float) -> int:
    """K of :func:`.basis.degree`: the ring sums' truncation degree."""
    return degree(d, beta)


def _angles(points) -> np.ndarray:
    x = np.asarray(points, dtype=float)
    return x[..., 0] if x.ndim >= 1 and x.shape[-1] == 1 else x


def ring_moments(points, weights, K: int, d: int) -> np.ndarray:
    """ĝ_l = Σ_j w_j p̄_l(cos θ_j), l = 0..K, of rings at polar angles ``points`` (n, 1) with masses ``weights``."""
    return np.asarray(weights, dtype=float) @ orthonormal(d, K, np.cos(_angles(points)), normalized=True)


def _multipliers(d, K, beta):
    m = scaled_multipliers(d, K, beta)
    n = np.zeros(K + 1)
    if beta == 0.0:
        if K >= 1:
            n[1] = 1.0 / d
    else:
        n[1:] = m[1:] / beta
    return m, n


def _potential(points, weights, queries, beta, normalized, c, d, second):
    """(ψ′, ψ″ or None, u at the queries, bound on |ψ′ − exact|)."""
    beta = float(beta)
    if not normalized and beta > EXP_MAX:
        raise OverflowError(f"USA on S^{d - 1} overflows float64 for β = {beta:g} (it keeps e^β unscaled).")
    K = ring_degree(d, beta)
    g = ring_moments(points, weights, K, d)
    m, n = _multipliers(d, K, beta)
    u = np.cos(_angles(queries))
    tables = orthonormal(d, K, u, derivatives=2 if second else 1, normalized=True)
    P, P1 = tables[0], tables[1]
    num = P1 @ (n * g)
    # truncation: |ĝ_l| <= mass N^{1/2}, |p̄_l| <= N^{1/2}, |p̄_l′| <= N^{1/2} l(l+d−2)/(d−1) (Gegenbauer maxima at ±1)
    l = np.arange(K + 1, K + 65, dtype=float)
    mt, nt = _multipliers(d, K + 64, beta)
    Nl = harmonic_dimension(d, l)
    mass = float(np.sum(np.abs(weights)))
    TD = mass * float(np.sum(mt[K + 1:] * Nl))
    TN = mass * float(np.sum(nt[K + 1:] * Nl * l * (l + d - 2.0) / (d - 1.0)))
    if normalized:
        den = P @ (m * g)
        psi1 = c * num / den
        margin = den - TD
        with np.errstate(divide="ignore", invalid="ignore"):
            bound = np.where(margin > 0, abs(c) * (TN + np.abs(num / den) * TD) / np.where(margin > 0, margin, 1.0),
                             np.inf)
        psi2 = c * (tables[2] @ (n * g) / den - beta * (num / den) ** 2) if second else None
    else:
        scale = c * np.exp(beta)
        psi1 = scale * num
        bound = np.full(u.shape, abs(scale) * TN)
        psi2 = scale * (tables[2] @ (n * g)) if second else None
    return psi1, psi2, u, bound


def ring_field(points, weights, queries, beta: float, normalized: bool = True, c: float = 1.0, *, d: int):
    r"""θ̇ at the polar angles ``queries`` (m, 1) for rings at ``points`` (n, 1) with masses ``weights`` on S^{d-1}
    (module docstring). Returns ``(velocity (m, 1), bound (m,))``, the bound on the truncation error of ψ′."""
    psi1, _, u, bound = _potential(points, weights, queries, beta, normalized, c, d, False)
    return (-psi1 * np.sqrt(np.maximum(1.0 - u * u, 0.0)))[..., None], bound


def ring_field_and_divergence(points, weights, queries, beta: float, normalized: bool = True, c: float = 1.0, *,
                              d: int):
    """``(θ̇ (m, 1), div_S X (m,))`` at the queries (module docstring)."""
    psi1, psi2, u, _ = _potential(points, weights, queries, beta, normalized, c, d, True)
    sin2 = np.maximum(1.0 - u * u, 0.0)
    return (-psi1 * np.sqrt(sin2))[..., None], sin2 * psi2 - (d - 1) * u * psi1


def mean_excess(d: int, beta: float) -> float:
    """e^{−β}(m_0 − 1)/β, m_0 = ₀F₁(; d/2; β²/4) the kernel's mean over the sphere (its β → 0 limit 0): by its
    series where β < 1 (no cancellation), else directly."""
    if beta == 0.0:
        return 0.0
    if beta < 1.0:
        x, b, term, total = 0.25 * beta * beta, 0.5 * d, 1.0, 0.0
        for k in range(1, 60):
            term *= x / ((b + k - 1.0) * k)
            total += term
            if term < 1e-18 * total:
                break
        return float(np.exp(-beta) * total / beta)
    return float((scaled_multipliers(d, 0, beta)[0] - np.exp(-beta)) / beta)


def excess_from_moments(g, d: int, beta: float) -> float:
    """e^{−β}(E_β − m²/2β) = ½[Σ_{l>=1} e^{−β}m_l ĝ_l²/β + e^{−β}(m_0 − 1)/β · ĝ_0²] from the moments ĝ_l (the
    β → 0 limit ½|∫x dμ|²); ĝ_0 is the mass m."""
    g = np.asarray(g, dtype=float)
    _, n = _multipliers(d, g.size - 1, beta)
    return 0.5 * float(np.sum(n[1:] * g[1:] ** 2) + mean_excess(d, beta) * g[0] ** 2)


def ring_excess_energy(points, weights, beta: float, *, d: int) -> float:
    """e^{−β}(E_β − m²/2β) of the rings (module docstring)."""
    return excess_from_moments(ring_moments(points, weights, ring_degree(d, float(beta)), d), d, float(beta))
