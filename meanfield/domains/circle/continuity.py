r"""Right-hand sides ∂_t ρ = −div(ρ X[ρ]) of the continuity equation on the circle, by strategy.

Each class is stateless apart from precomputed tables: ``rate(values)`` takes
nodal density values and returns their time derivative; ``rate_and_speeds``
also returns the largest speed |X| and strain |∂X| on the padded grid, which
the solver turns into a CFL step; ``speeds`` returns those two alone.

The density is a trigonometric polynomial of degree n/2 (MATH.md §2.1).
Products are formed on a padded grid of M >= 3n/2 nodes (the 2/3 rule,
:func:`fourier.padded_size`), transformed back and truncated, and the
divergence is the spectral derivative of the flux with its k = 0 coefficient
exactly zero, so the mass is conserved to round-off.

- :class:`CircleSpectral` (Q = qI, K = kI, V = cI): with K_β*ρ having
  coefficients 2π I_k(β) ρ̂_k, the angular velocity is
  USA: v = c (1/β) ∂_θ(K_β*ρ);  SA: v = c (1/β) ∂_θ(K_β*ρ) / (K_β*ρ),
  computed with exponentially scaled Bessel functions ``ive`` (the factor
  e^β cancels in SA, is multiplied back in USA). At β = 0 the limits
  I_1(β)/β → 1/2 give the Kuramoto field v = Im(z e^{-iθ}), z = ∫e^{iθ}dμ.
- :class:`CircleQuadrature` (any model, including multi-head): the field is
  ``field`` (the model's reference sum) at the padded nodes for the grid
  measure (nodes, ρ_j 2π/n).
"""

from __future__ import annotations

import numba
import numpy as np
from .bessel import scaled_bessel

from ...core.numerics import check_usa_beta
from . import fourier
from .geometry import angles_to_points, tangents
from .grid import CircleGrid

__all__ = ["CircleSpectral", "CircleQuadrature", "bessel_multipliers"]


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
    I = scaled_bessel(k, beta)  # e^{-β} I_k(β), β < 0 too
    if abs(beta) < 1e-8:  # I_k(β)/β from its series, to avoid dividing two subnormals
        from scipy.special import factorial

        over_beta = np.where(k > 0, (beta / 2.0) ** np.maximum(k - 1, 0) / (2.0 * factorial(k)), 0.0)
        over_beta = over_beta * np.exp(-beta)
    else:
        over_beta = I / beta
    return (2.0 * np.pi * I).astype(complex), 2j * np.pi * k * over_beta


@numba.njit(cache=True, nogil=True)
def _speed_and_jump(v):
    """(max_j |v_j|, max_j |v_{j+1} − v_j|) with v_n = v_0; NaN propagates."""
    vmax = abs(v[0])
    jump = abs(v[0] - v[-1])
    for j in range(1, v.size):
        a, b = abs(v[j]), abs(v[j] - v[j - 1])
        if not a <= vmax:
            vmax = a
        if not b <= jump:
            jump = b
    return vmax, jump


class _CircleRate:
    """Padding, product and divergence shared by the circle strategies; ``drift``, optional, a fixed tangent field
    ``drift(points) -> vectors`` added to X[ρ] (a Transformer's feed-forward blocks, docs/MATH.md §8.2), evaluated
    once at the padded nodes."""

    strategy: str

    def __init__(self, grid: CircleGrid, drift=None):
        self.grid = grid
        self.n = grid.n
        self.M = fourier.padded_size(grid.n)
        self.k = np.arange(self.n // 2 + 1)
        self._dtheta_M = 2.0 * np.pi / self.M
        self.drift = drift
        if drift is not None:
            q = angles_to_points(2.0 * np.pi * np.arange(self.M) / self.M)
            self._drift = np.sum(drift(q) * tangents(q), axis=-1)

    def _total_velocity(self, values, P, rho_M):
        v = self._velocity(values, P, rho_M)
        return v if self.drift is None else v + self._drift

    def _pad(self, values):
        """The padded coefficient array and the values on the M-grid."""
        P = fourier.pad(fourier.rfft(values) * (self.M / self.n), self.n, self.M // 2 + 1)
        return P, fourier.irfft(P, self.M)

    def _divergence(self, flux_M):
        """−∂_θ of the flux given on the M-grid, truncated to the n-grid."""
        F = fourier.rfft(flux_M)[: self.n // 2 + 1] * (self.n / self.M)
        F *= -1j * self.k
        if self.n % 2 == 0:
            F[-1] = 0.0
        return fourier.irfft(F, self.n)

    def _speeds(self, v):
        """(max |v|, max |Δv|/Δθ over neighbouring padded nodes, periodically)."""
        vmax, jump = _speed_and_jump(v)
        return vmax, jump / self._dtheta_M

    def angular_velocity(self, values):
        """Angular velocity v(θ) on the padded grid of M nodes."""
        P, rho_M = self._pad(values)
        return self._total_velocity(values, P, rho_M)

    def rate(self, values):
        """∂_t ρ at the nodes."""
        P, rho_M = self._pad(values)
        return self._divergence(rho_M * self._total_velocity(values, P, rho_M))

    def speeds(self, values):
        """(max |v|, max |∂_θ v|) with v on the padded grid."""
        return self._speeds(self.angular_velocity(values))

    def rate_and_speeds(self, values):
        """(∂_t ρ, max |v|, max |∂_θ v|) with v on the padded grid."""
        P, rho_M = self._pad(values)
        v = self._total_velocity(values, P, rho_M)
        return (self._divergence(rho_M * v),) + self._speeds(v)


class CircleSpectral(_CircleRate):
    """Spectral field for zonal kernels on the circle (MATH.md §2.1).

    Parameters
    ----------
    grid : CircleGrid
    beta : float
        Effective inverse temperature β q k (any real: β < 0 repels, MATH.md §13).
    c : float
        V = cI.
    normalized : bool
        SA (True) or USA (False).
    """

    strategy = "spectral"

    def __init__(self, grid: CircleGrid, beta: float, c: float, normalized: bool, drift=None):
        super().__init__(grid, drift)
        check_usa_beta(beta, normalized, "the circle")
        self.beta, self.c, self.normalized = float(beta), float(c), bool(normalized)
        self._D, self._N = bessel_multipliers(self.M // 2, self.beta)
        self._usa_scale = None if normalized else self.c * np.exp(self.beta)

    def kernel_sum(self, values):
        """e^{-β} K_β*ρ(θ) = e^{-β}∫ e^{β cos(θ − θ')} ρ(θ') dθ' on the padded grid (the SA normaliser Z_μ)."""
        P, _ = self._pad(values)
        return fourier.irfft(P * self._D, self.M)

    def _velocity(self, values, P, rho_M):
        num = fourier.irfft(P * self._N, self.M)
        if self.normalized:
            return self.c * num / fourier.irfft(P * self._D, self.M)
        return self._usa_scale * num


class CircleQuadrature(_CircleRate):
    """Field by quadrature: ``field(points, weights, queries)`` for the grid measure at the padded nodes."""

    strategy = "quadrature"

    def __init__(self, grid: CircleGrid, field, drift=None):
        super().__init__(grid, drift)
        self.field = field  # None: no attention (the drift alone)
        self._queries = angles_to_points(2.0 * np.pi * np.arange(self.M) / self.M)
        self._tangent = tangents(self._queries)

    def _velocity(self, values, P, rho_M):
        if self.field is None:
            return np.zeros(self.M)
        X = self.field(self.grid.points, values * self.grid.weights, self._queries)
        return np.sum(X * self._tangent, axis=-1)
