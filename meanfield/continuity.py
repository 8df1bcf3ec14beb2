r"""Right-hand sides ∂_t ρ = −div(ρ X[ρ]) of the continuity equation, by strategy.

Each class is stateless apart from precomputed tables: ``rate(values)`` takes
nodal density values and returns their time derivative; ``rate_and_speeds``
also returns the largest speed |X| and strain |∂X| on the product grid, which
the solver turns into a CFL step.

Circle (MATH.md §2.1). The density is a trigonometric polynomial of degree
n/2. Products are formed on a padded grid of M >= 3n/2 nodes (the 2/3 rule),
transformed back and truncated, and the divergence is the spectral derivative
of the flux with its k = 0 coefficient exactly zero, so the mass is conserved
to round-off.

- :class:`CircleSpectral` (Q = qI, K = kI, V = cI): with K_β*ρ having
  coefficients 2π I_k(β) ρ̂_k, the angular velocity is
  USA: v = c (1/β) ∂_θ(K_β*ρ);  SA: v = c (1/β) ∂_θ(K_β*ρ) / (K_β*ρ),
  computed with exponentially scaled Bessel functions ``ive`` (the factor
  e^β cancels in SA, is multiplied back in USA). At β = 0 the limits
  I_1(β)/β → 1/2 give the Kuramoto field v = Im(z e^{-iθ}), z = ∫e^{iθ}dμ.
- :class:`CircleQuadrature` (any model, including multi-head): the field is
  ``model.field`` at the padded nodes for the grid measure (nodes, ρ_j 2π/n).
"""

from __future__ import annotations

import numpy as np
import scipy.fft as sfft
from scipy.special import ive

from .grids.circle import CircleGrid
from .models import _EXP_MAX, check_usa_beta

__all__ = ["CircleSpectral", "CircleQuadrature", "circle_rate", "circle_excess_energy", "circle_energy"]


def _padded_size(n: int) -> int:
    """Smallest even FFT-friendly size M >= 3n/2."""
    m = sfft.next_fast_len(-(-3 * n // 2), real=True)
    return m + (m % 2)


def bessel_multipliers(kmax: int, beta: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Scaled multipliers of K_β* and of (1/β)∂_θ K_β*, for k = 0..kmax.

    Returns ``D_k = 2π e^{-β} I_k(β)`` and ``N_k = 2π i k e^{-β} I_k(β)/β``
    (the β → 0 limits where β = 0: D = 2π δ_{k0}, N = πi δ_{k1}).
    """
    k = np.arange(kmax + 1)
    if beta == 0.0:
        D = np.where(k == 0, 2.0 * np.pi, 0.0).astype(complex)
        N = np.where(k == 1, 1j * np.pi, 0.0)
        return D, N
    I = ive(k, beta)
    if beta < 1e-8:  # I_k(β)/β from its series, to avoid dividing two subnormals
        from scipy.special import factorial

        over_beta = np.where(k > 0, (beta / 2.0) ** np.maximum(k - 1, 0) / (2.0 * factorial(k)), 0.0)
        over_beta = over_beta * np.exp(-beta)
    else:
        over_beta = I / beta
    return (2.0 * np.pi * I).astype(complex), 2j * np.pi * k * over_beta


class _CircleRate:
    """Padding, product and divergence shared by the circle strategies."""

    def __init__(self, grid: CircleGrid):
        self.grid = grid
        self.n = grid.n
        self.M = _padded_size(grid.n)
        self.k = np.arange(self.n // 2 + 1)
        self._dtheta_M = 2.0 * np.pi / self.M

    def _pad(self, values):
        """rfft of the values, their padded coefficient array, and values on the M-grid."""
        c = sfft.rfft(values)
        P = np.zeros(self.M // 2 + 1, dtype=complex)
        P[: c.size] = c * (self.M / self.n)
        if self.n % 2 == 0:
            P[self.n // 2] *= 0.5
        return P, sfft.irfft(P, self.M)

    def _divergence(self, flux_M):
        """−∂_θ of the flux given on the M-grid, truncated to the n-grid."""
        F = sfft.rfft(flux_M)[: self.n // 2 + 1] * (self.n / self.M)
        F *= -1j * self.k
        if self.n % 2 == 0:
            F[-1] = 0.0
        return sfft.irfft(F, self.n)

    def angular_velocity(self, values):
        """Angular velocity v(θ) on the padded grid of M nodes."""
        P, rho_M = self._pad(values)
        return self._velocity(values, P, rho_M)

    def rate(self, values):
        """∂_t ρ at the nodes."""
        P, rho_M = self._pad(values)
        return self._divergence(rho_M * self._velocity(values, P, rho_M))

    def rate_and_speeds(self, values):
        """(∂_t ρ, max |v|, max |∂_θ v|) with v on the padded grid."""
        P, rho_M = self._pad(values)
        v = self._velocity(values, P, rho_M)
        dv = np.diff(v, append=v[:1]) / self._dtheta_M
        return self._divergence(rho_M * v), float(np.max(np.abs(v))), float(np.max(np.abs(dv)))


class CircleSpectral(_CircleRate):
    """Spectral field for zonal kernels on the circle (MATH.md §2.1).

    Parameters
    ----------
    grid : CircleGrid
    beta : float
        Effective inverse temperature β q k >= 0.
    c : float
        V = cI.
    normalized : bool
        SA (True) or USA (False).
    """

    def __init__(self, grid: CircleGrid, beta: float, c: float, normalized: bool):
        super().__init__(grid)
        check_usa_beta(beta, normalized, "the circle")
        self.beta, self.c, self.normalized = float(beta), float(c), bool(normalized)
        D, N = bessel_multipliers(self.M // 2, self.beta)
        self._D, self._N = D, N
        self._usa_scale = None if normalized else self.c * np.exp(self.beta)

    def _velocity(self, values, P, rho_M):
        num = sfft.irfft(P * self._N, self.M)
        if self.normalized:
            return self.c * num / sfft.irfft(P * self._D, self.M)
        return self._usa_scale * num


class CircleQuadrature(_CircleRate):
    """Field by quadrature through ``model.field`` for any model on the circle."""

    def __init__(self, grid: CircleGrid, model):
        super().__init__(grid)
        self.model = model
        theta_M = 2.0 * np.pi * np.arange(self.M) / self.M
        self._queries = np.stack([np.cos(theta_M), np.sin(theta_M)], axis=-1)
        self._tangent = np.stack([-np.sin(theta_M), np.cos(theta_M)], axis=-1)

    def _velocity(self, values, P, rho_M):
        X = self.model.field(self.grid.points, values * self.grid.weights, self._queries)
        return np.sum(X * self._tangent, axis=-1)


def choose_rate(model, grid, path: str, spectral, quadrature):
    """The right-hand side for ``model`` on ``grid``: ``spectral(grid, β_eff, c, normalized)``
    when the kernel is zonal and ``path`` allows it ("auto" or "spectral"), else
    ``quadrature(grid, model)`` ("auto" or "quadrature")."""
    if path not in ("auto", "spectral", "quadrature"):
        raise ValueError(f"`path` must be 'auto', 'spectral' or 'quadrature', got {path!r}.")
    zonal = getattr(model, "zonal", None)
    if path == "spectral" and zonal is None:
        raise ValueError(f"the spectral path needs Q = qI, K = kI, V = cI (qk >= 0); got {model!r}.")
    if path in ("auto", "spectral") and zonal is not None:
        return spectral(grid, zonal[0], zonal[1], model.normalized)
    return quadrature(grid, model)


def circle_rate(model, grid: CircleGrid, path: str = "auto"):
    """Choose the circle right-hand side ("auto", "spectral" or "quadrature"); see :func:`choose_rate`."""
    return choose_rate(model, grid, path, CircleSpectral, CircleQuadrature)


def _i0m1(beta: float) -> float:
    """I_0(β) − 1 without cancellation."""
    if beta > 0.5:
        return float(ive(0, beta) * np.exp(beta) - 1.0) if beta < _EXP_MAX else np.inf
    term, total, j = 1.0, 0.0, 0
    q = beta * beta / 4.0
    while True:
        j += 1
        term *= q / (j * j)
        total += term
        if term < 1e-17 * total:
            return total


def circle_excess_energy(grid: CircleGrid, values, beta: float) -> float:
    r"""e^{-β}(E_β − m²/2β) of the trigonometric interpolant, m its mass, by Parseval.

    E_β = (1/2β)∫ρ (K_β*ρ) dθ = (2π²/β) Σ_{k∈Z} I_k(β)|ρ̂_k|² and m = 2πρ̂_0, so
    E_β − m²/2β = (2π²/β)[(I_0(β) − 1)|ρ̂_0|² + Σ_{k≠0} I_k(β)|ρ̂_k|²]. Mass is
    conserved, so this is monotone exactly when E_β is, and it stays well
    conditioned as β → 0, where it tends to ½|∫x dμ|² = 2π²|ρ̂_1|² (the value
    :meth:`SelfAttention.energy` gives at β = 0).
    """
    c = grid.coefficients(values)
    a2 = np.abs(c) ** 2
    a2[1:] *= 2.0
    if grid.n % 2 == 0:
        a2[-1] *= 0.25  # ±n/2 each carry half of the Nyquist coefficient
    if beta == 0.0:
        return float(np.pi**2 * a2[1])
    # e^{-β}(I_0(β) − 1); past the overflow threshold e^{-β} is below round-off
    i0m1 = np.exp(-beta) * _i0m1(beta) if beta < _EXP_MAX else ive(0, beta)
    s = ive(np.arange(1, c.size), beta) @ a2[1:] + i0m1 * a2[0]
    return float(2.0 * np.pi**2 / beta * s)


def energy_from_excess(excess: float, mass: float, beta: float) -> float:
    """E_β = e^β·excess + m²/2β from the excess e^{-β}(E_β − m²/2β) (= E_β's β → 0 limit at β = 0).

    ``OverflowError`` past β ≈ 709, where e^β overflows."""
    if beta == 0.0:
        return excess
    if beta > _EXP_MAX:
        raise OverflowError(f"E_β overflows float64 for β = {beta:g}.")
    return excess * np.exp(beta) + mass * mass / (2.0 * beta)


def circle_energy(grid: CircleGrid, values, beta: float) -> float:
    """E_β of the interpolant (½|∫x dμ|² at β = 0); ``OverflowError`` past β ≈ 709."""
    return energy_from_excess(circle_excess_energy(grid, values, beta), float(grid.integrate(values)), beta)
