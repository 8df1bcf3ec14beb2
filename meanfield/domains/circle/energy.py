r"""The interaction energy E_β(ρ) = (1/2β)∬ e^{β cos(θ − θ')} ρ ρ of a circle density, by Parseval (MATH.md §2)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.special import ive

from .bessel import scaled_bessel

from ...core.numerics import EXP_MAX
from ..zonal import energy_from_excess
from . import fourier
from .grid import CircleGrid

__all__ = ["excess_energy", "energy", "i0_minus_one", "pair_fraction"]


def i0_minus_one(beta: float) -> float:
    """I_0(β) − 1 without cancellation (an even function of β)."""
    beta = abs(beta)
    if beta > 0.5:
        return float(ive(0, beta) * np.exp(beta) - 1.0) if beta < EXP_MAX else np.inf
    term, total, j = 1.0, 0.0, 0
    q = beta * beta / 4.0
    while True:
        j += 1
        term *= q / (j * j)
        total += term
        if term < 1e-17 * total:
            return total


def excess_energy(grid: CircleGrid, values, beta: float, spectrum=None) -> float:
    r"""e^{-β}(E_β − m²/2β) of the trigonometric interpolant, m its mass, by Parseval.

    E_β = (1/2β)∫ρ (K_β*ρ) dθ = (2π²/β) Σ_{k∈Z} I_k(β)|ρ̂_k|² and m = 2πρ̂_0, so
    E_β − m²/2β = (2π²/β)[(I_0(β) − 1)|ρ̂_0|² + Σ_{k≠0} I_k(β)|ρ̂_k|²]; the sum over ±k
    weighs |ρ̂_k|² by m_k²/2 (2, and ½ for the split Nyquist mode; :func:`fourier.multiplicity`).
    Mass is conserved, so this is monotone exactly when E_β is, and it stays well
    conditioned as β → 0, where it tends to ½|∫x dμ|² = 2π²|ρ̂_1|² (the value
    :meth:`SelfAttention.energy` gives at β = 0). ``spectrum``: ``grid.spectrum(values)`` (ρ̂_k) where the
    caller has it.
    """
    c = grid.coefficients(values) if spectrum is None else spectrum
    a2 = c.real**2 + c.imag**2
    if beta == 0.0:
        return float(np.pi**2 * a2[1] * 0.5 * fourier.multiplicity(grid.n)[1] ** 2)
    return float(_parseval_weights(grid.n, float(beta)) @ a2)


@lru_cache(maxsize=64)
def _parseval_weights(n: int, beta: float) -> np.ndarray:
    """(2π²/β) m_k²/2 e^{-β} I_k(β) for k >= 1 and (2π²/β) e^{-β}(I_0(β) − 1) at k = 0 (read-only)."""
    weight = 0.5 * fourier.multiplicity(n) ** 2
    weight[0] = 1.0
    # e^{-β}(I_0(β) − 1); past the overflow threshold e^{-β} is below round-off
    i0m1 = np.exp(-beta) * i0_minus_one(beta) if beta < EXP_MAX else ive(0, beta)
    bessel = np.concatenate([[i0m1], scaled_bessel(np.arange(1, n // 2 + 1), beta)])
    out = 2.0 * np.pi**2 / beta * bessel * weight
    out.setflags(write=False)
    return out


def energy(grid: CircleGrid, values, beta: float) -> float:
    """E_β of the interpolant (½|∫x dμ|² at β = 0); ``OverflowError`` past β ≈ 709."""
    return energy_from_excess(excess_energy(grid, values, beta), float(grid.integrate(values)), beta)


def pair_fraction(grid, values, delta: float) -> float:
    r"""∬ 1{cos(θ − θ') >= 1 − δ} ρ(θ) ρ(θ') dθ dθ' of the trigonometric interpolant of ``values`` on ``grid``.

    The indicator of |θ − θ'| <= a, a = arccos(1 − δ), has Fourier coefficients sin(ka)/(πk) (a/π at k = 0), so
    by Parseval the double integral is 4π Σ_k w_k |c_k|², w_0 = a, w_k = sin(ka)/k, c_k = ρ̂_k/n (each k ≠ 0
    and ≠ n/2 counted for ±k)."""
    a = float(np.arccos(1.0 - delta))
    v = np.asarray(values, dtype=float)
    n = v.size
    c = np.fft.rfft(v) / n
    k = np.arange(c.size)
    weight = np.where(k == 0, a, np.sin(k * a) / np.maximum(k, 1))
    double = np.where((k == 0) | ((n % 2 == 0) & (k == n // 2)), 1.0, 2.0)
    return float(4.0 * np.pi * np.sum(double * weight * np.abs(c) ** 2))
