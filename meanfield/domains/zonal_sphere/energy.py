r"""E_β and the pair fraction of a zonal density, in closed form on its coefficients (MATH.md §9).

With the moments ĝ_l = ∫ p̄_l dμ = |S^{d−1}| c̄_l of μ = ρσ (ĝ_0 the mass) and a zonal kernel k(⟨x, y⟩) of
Funk–Hecke eigenvalues κ_l, ∬ k(⟨x, y⟩) dμ(x) dμ(y) = Σ_l (κ_l/|S^{d−1}|) ĝ_l² — only the zonal harmonic of each
degree carries mass. For e^{βt}, κ_l/|S^{d−1}| = m_l (:mod:`.basis`): E_β = (1/2β) Σ_l m_l ĝ_l², returned through
the well-conditioned excess e^{−β}(E_β − m²/2β) (:func:`.point_sums.excess_from_moments`). For the indicator
1{t >= 1 − δ},

    κ_l/|S^{d−1}| = (|S^{d−2}|/|S^{d−1}|) ∫_0^{θ_δ} P̃_l(cos θ) sin^{d−2}θ dθ,   θ_δ = arccos(1 − δ),

with P̃_l = p̄_l/p̄_l(1) (1 at θ = 0), by Gauss–Legendre quadrature in θ (a trigonometric polynomial of degree
l + d − 2: exact to round-off with the nodes taken).
"""

from __future__ import annotations

import numpy as np

from ..zonal import energy_from_excess
from ..gegenbauer import log_sphere_area, orthonormal
from .point_sums import excess_from_moments

__all__ = ["excess_energy", "energy", "pair_fraction"]


def _moments(grid, values, spectrum=None):
    c = grid.coefficients(values) if spectrum is None else np.asarray(spectrum)
    return grid.basis.area * c


def excess_energy(grid, values, beta: float, spectrum=None) -> float:
    """e^{−β}(E_β − m²/2β) of the density (module docstring); ``spectrum``: ``grid.spectrum(values)``."""
    return excess_from_moments(_moments(grid, values, spectrum), grid.d, float(beta))


def energy(grid, values, beta: float) -> float:
    """E_β = (1/2β)∬e^{β⟨x,y⟩}ρρ (½|∫x dρ|² at β = 0); ``OverflowError`` past β ≈ 709."""
    return energy_from_excess(excess_energy(grid, values, beta), float(grid.integrate(values)), float(beta))


def pair_fraction(grid, values, delta: float) -> float:
    """∬ 1{⟨x, y⟩ >= 1 − δ} ρ(x)ρ(y) (module docstring)."""
    d, L = grid.d, grid.lmax
    g = _moments(grid, values)
    theta_d = float(np.arccos(np.clip(1.0 - delta, -1.0, 1.0)))
    nq = max(64, L + d + 16)
    s, w = np.polynomial.legendre.leggauss(nq)
    th = 0.5 * theta_d * (s + 1.0)
    w = 0.5 * theta_d * w
    P = orthonormal(d, L, np.cos(th), normalized=True)
    P1 = orthonormal(d, L, np.ones(1), normalized=True)[0]
    ratio = np.exp(log_sphere_area(d - 2) - log_sphere_area(d - 1))  # |S^{d−2}|/|S^{d−1}| (1/π on the circle)
    kappa = ratio * ((w * np.sin(th) ** (d - 2)) @ (P / P1))
    return float(kappa @ (g * g))
