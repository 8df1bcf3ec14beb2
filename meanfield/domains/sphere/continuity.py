r"""Right-hand sides ∂_t ρ = −div_S(ρ X[ρ]) on S², by strategy (MATH.md §2.1).

Products are formed on a dealiased GLQ grid of degree L_d = ⌈3L/2⌉ and the
result is truncated to degree L; the l = 0 tendency is set to exactly zero,
so the mass is conserved to round-off.

- :class:`SphereSpectral` (Q = qI, K = kI, V = cI). Funk–Hecke: the zonal
  kernel e^{β⟨x,y⟩} acts on Y_lm by λ_l = 4π i_l(β), i_l(β) = √(π/2β) I_{l+1/2}(β)
  (exponentially scaled: ``ive``). The field is a surface gradient X = ∇φ,
  USA: φ = (c/β) K_β*ρ (times e^β, kept unscaled as MATH.md requires),
  SA:  φ = (c/β) log K_β*ρ = (c/β) log1p(β u) + const, u = Σ_{l>=1} (λ_l/β) ρ_lm Y_lm / (λ_0 ρ_00 Y_00),
  which tends to c·u as β → 0 (the β = 0 field P_x^⊥ m, λ_1/β → 4π/3).
  The divergence is div(ρ∇φ) = ∇ρ·∇φ + ρΔφ with
  SA:  ∇φ = c∇u/(1 + βu),  Δφ = c[Δu/(1 + βu) − β|∇u|²/(1 + βu)²],
  USA: ∇φ = (c e^β)∇U,     Δφ = (c e^β)ΔU,
  where ∇ρ, ∇u and Δu come straight from coefficient arrays (Δ Y_lm = −l(l+1)Y_lm).
  The symmetric scalar form ½[Δ(ρφ) + ρΔφ − φΔρ] of MATH.md §2.1 is exact too,
  but it applies Δ to *analysed products*, whose round-off ε sits at every
  degree: the top degrees then gain ε L(L+1) per unit time (measured: 2e-12
  at L = 48 by t = 1 where the exact coefficient is 1e-13), which the
  resolution monitor reads as loss of resolution. The form used here never
  differentiates round-off.
- :class:`SphereQuadrature` (any model): X = ``field`` (the model's reference
  sum) at the dealiased nodes for the grid measure; div_S F = Σ_k ⟨∇_S F_k, e_k⟩
  for the Cartesian components F_k of the flux F = ρX, with ∇_S from
  :func:`transforms.surface_gradient`.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ive

from ...numerics import check_usa_beta
from .grid import SphereGrid
from .transforms import dealiased_degree, frames, laplacian, nodes, pad_coefficients, surface_gradient

__all__ = ["SphereSpectral", "SphereQuadrature", "funk_hecke"]

Y00 = 1.0 / np.sqrt(4.0 * np.pi)


def funk_hecke(lmax: int, beta: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Scaled Funk–Hecke multipliers of e^{β⟨x,y⟩}, l = 0..lmax.

    Returns ``D_l = e^{-β} λ_l`` and ``N_l = e^{-β} λ_l / β`` (N_0 = 0), with
    λ_l = 4π i_l(β); at β = 0, D = 4π δ_{l0} and N = (4π/3) δ_{l1}.
    """
    l = np.arange(lmax + 1)
    if beta == 0.0:
        return np.where(l == 0, 4 * np.pi, 0.0), np.where(l == 1, 4 * np.pi / 3, 0.0)
    if beta < 1e-8:  # i_l(β)/β ≈ β^{l-1}/(2l+1)!!, to avoid dividing subnormals
        from scipy.special import factorial2

        D = np.where(l == 0, 4 * np.pi, 0.0) * np.exp(-beta)
        N = np.where(l >= 1, 4 * np.pi * beta ** np.maximum(l - 1, 0) / factorial2(2 * l + 1), 0.0) * np.exp(-beta)
        D = D + beta * N
        return D, np.where(l >= 1, N, 0.0)
    D = 4.0 * np.pi * np.sqrt(np.pi / (2.0 * beta)) * ive(l + 0.5, beta)
    N = np.where(l >= 1, D / beta, 0.0)
    return D, N


class _SphereRate:
    path: str

    def __init__(self, grid: SphereGrid):
        self.grid = grid
        self.L = grid.lmax
        self.Ld = dealiased_degree(grid.lmax)
        self.backend = grid.backend

    def _finish(self, div_c):
        """Tendency −div on the L-grid from the divergence's coefficients (any degree)."""
        t = -pad_coefficients(div_c, self.L)
        t[:, 0, 0] = 0.0
        return self.backend.synthesis(t, self.L)

    def rate(self, values):
        return self.rate_and_speeds(values)[0]


class SphereSpectral(_SphereRate):
    """Funk–Hecke field and scalar-transform divergence for zonal kernels on S²."""

    path = "spectral"

    def __init__(self, grid: SphereGrid, beta: float, c: float, normalized: bool):
        super().__init__(grid)
        check_usa_beta(beta, normalized, "S²")
        self.beta, self.c, self.normalized = float(beta), float(c), bool(normalized)
        D, N = funk_hecke(self.L, self.beta)
        self._D0 = D[0]
        self._N = N[None, :, None]
        self._lap_L = laplacian(self.L)

    def gradient_and_laplacian(self, cilm):
        """(∂_θ φ, ∂_φ φ / sin θ, Δφ) of the potential on the dealiased grid, X = ∇φ."""
        B, Ld = self.backend, self.Ld
        Nc = self._N * cilm
        u_t, u_p = surface_gradient(Nc, Ld, B)
        lap_u = B.synthesis(self._lap_L * Nc, Ld)
        if not self.normalized:
            k = self.c * np.exp(self.beta)
            return k * u_t, k * u_p, k * lap_u
        scale = 1.0 / (self._D0 * cilm[0, 0, 0] * Y00)  # u = U / (λ_0 ρ_00 Y_00): K_β*ρ ∝ 1 + βu
        u_t, u_p, lap_u = u_t * scale, u_p * scale, lap_u * scale
        one_bu = 1.0 + self.beta * scale * B.synthesis(Nc, Ld) if self.beta else 1.0
        grad2 = u_t * u_t + u_p * u_p
        return (self.c * u_t / one_bu, self.c * u_p / one_bu,
                self.c * (lap_u / one_bu - self.beta * grad2 / one_bu**2))

    @staticmethod
    def _speed(f_t, f_p):
        return float(np.sqrt(np.max(f_t * f_t + f_p * f_p)))

    def speeds(self, values):
        f_t, f_p, _ = self.gradient_and_laplacian(self.backend.analysis(values, self.L))
        return self._speed(f_t, f_p), 0.0

    def rate_and_speeds(self, values):
        B, Ld = self.backend, self.Ld
        cilm = B.analysis(values, self.L)
        rho = B.synthesis(cilm, Ld)
        r_t, r_p = surface_gradient(cilm, Ld, B)
        f_t, f_p, lap_f = self.gradient_and_laplacian(cilm)
        div = r_t * f_t + r_p * f_p + rho * lap_f
        return self._finish(B.analysis(div, Ld)), self._speed(f_t, f_p), 0.0


class SphereQuadrature(_SphereRate):
    """Field by quadrature: ``field(points, weights, queries)`` for the grid measure at the dealiased nodes."""

    path = "quadrature"

    def __init__(self, grid: SphereGrid, field):
        super().__init__(grid)
        self.field = field
        self._queries = nodes(self.Ld)[2].reshape(-1, 3)
        theta_hat, phi_hat = frames(self.Ld)
        self._e = [(theta_hat[..., k], phi_hat[..., k]) for k in range(3)]
        self._shape = theta_hat.shape[:-1]

    def _field(self, values):
        X = self.field(self.grid.points.reshape(-1, 3), (values * self.grid.weights).ravel(), self._queries)
        return X.reshape(self._shape + (3,))

    def speeds(self, values):
        return float(np.max(np.linalg.norm(self._field(values), axis=-1))), 0.0

    def rate_and_speeds(self, values):
        B = self.backend
        cilm = B.analysis(values, self.L)
        rho = B.synthesis(cilm, self.Ld)
        X = self._field(values)
        div = np.zeros(rho.shape)
        for k in range(3):
            g_t, g_p = surface_gradient(B.analysis(rho * X[..., k], self.Ld), self.Ld, B)
            div += g_t * self._e[k][0] + g_p * self._e[k][1]
        speed = float(np.max(np.linalg.norm(X, axis=-1)))
        return self._finish(B.analysis(div, self.Ld)), speed, 0.0
