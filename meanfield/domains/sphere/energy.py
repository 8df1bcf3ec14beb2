r"""The interaction energy E_β(ρ) = (1/2β)∬ e^{β⟨x,y⟩} ρ ρ of a density on S², by Parseval (MATH.md §2.1)."""

from __future__ import annotations

import numpy as np

from ..zonal import energy_from_excess
from .continuity import funk_hecke
from .grid import SphereGrid

__all__ = ["excess_energy", "energy", "excess_from_power", "pair_fraction"]


def _i0m1_scaled(beta: float) -> float:
    """e^{-β}(i_0(β) − 1) with i_0(β) = sinh(β)/β, without cancellation."""
    if beta < 0.5:
        s, term, k = 0.0, 1.0, 0
        while True:  # sinh(β)/β − 1 = Σ_{k>=1} β^{2k}/(2k+1)!
            k += 1
            term *= beta * beta / ((2 * k) * (2 * k + 1))
            s += term
            if term < 1e-17 * s:
                return np.exp(-beta) * s
    return (1.0 - np.exp(-2.0 * beta)) / (2.0 * beta) - np.exp(-beta)


def excess_from_power(p, beta: float) -> float:
    r"""e^{-β}(E_β − m²/2β) from the power per degree p_l = Σ_m c_lm² of a measure's orthonormal expansion.

    Parseval: E_β = (1/2β) Σ_l λ_l p_l, λ_l = 4π i_l(β), and m = √(4π) c_00, so the excess is
    (1/2β)[4π e^{-β}(i_0(β) − 1) p_0 + Σ_{l>=1} D_l p_l] (D_l = e^{-β}λ_l); at β = 0 the limit
    ½|∫x dμ|² = (2π/3) p_1. Grids and point sets (:mod:`meanfield.kernels.sphere`) both use it.
    """
    p = np.asarray(p, dtype=float)
    if beta == 0.0:
        return float(2.0 * np.pi / 3.0 * p[1])
    D, _ = funk_hecke(p.size - 1, beta)
    return float((D[1:] @ p[1:] + 4.0 * np.pi * _i0m1_scaled(beta) * p[0]) / (2.0 * beta))


def excess_energy(grid: SphereGrid, values, beta: float, spectrum=None) -> float:
    r"""e^{-β}(E_β − m²/2β) of the expansion on the grid, by Parseval (:func:`excess_from_power`);
    ``spectrum``: ``grid.spectrum(values)`` (its coefficients) where the caller has it."""
    c = grid.coefficients(values) if spectrum is None else spectrum
    return excess_from_power(np.sum(c**2, axis=(0, 2)), beta)


def energy(grid: SphereGrid, values, beta: float) -> float:
    """E_β (½|∫x dμ|² at β = 0); ``OverflowError`` past β ≈ 709."""
    return energy_from_excess(excess_energy(grid, values, beta), grid.integrate(values), beta)


def pair_fraction(grid, values, delta: float) -> float:
    r"""∬ 1{⟨x, y⟩ >= 1 − δ} ρ(x) ρ(y) dx dy of the band-limited density ``values`` on ``grid`` (S²).

    Funk–Hecke: the cap's indicator 1{t >= c}, c = 1 − δ, has Legendre coefficients
    λ_l = 2π ∫_c^1 P_l = 2π (P_{l−1}(c) − P_{l+1}(c))/(2l + 1) (λ_0 = 2πδ), so the integral is Σ_l λ_l p_l,
    p_l = Σ_m c_lm² the power per degree of the orthonormal expansion."""
    from scipy.special import eval_legendre

    cilm = grid.coefficients(np.asarray(values, dtype=float))
    l = np.arange(cilm.shape[1])
    power = np.sum(cilm ** 2, axis=(0, 2))
    c = 1.0 - delta
    lam = 2.0 * np.pi * (eval_legendre(np.maximum(l - 1, 0), c) - eval_legendre(l + 1, c)) / (2 * l + 1)
    lam[0] = 2.0 * np.pi * delta
    return float(lam @ power)
