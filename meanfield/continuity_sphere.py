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
- :class:`SphereQuadrature` (any model): X = ``model.field`` at the dealiased
  nodes for the grid measure; div_S F = Σ_k ⟨∇_S F_k, e_k⟩ for the Cartesian
  components F_k of the flux F = ρX, with ∇_S from the recurrence
  sin θ ∂_θ Y_lm = l a_{l+1,m} Y_{l+1,m} − (l+1) a_{lm} Y_{l−1,m},
  a_lm = √((l² − m²)/(4l² − 1)), and ∂_φ(C cos mφ + S sin mφ) = m(S cos mφ − C sin mφ).
"""

from __future__ import annotations

import numpy as np
from scipy.special import ive

from .continuity import choose_rate, energy_from_excess
from .grids.sphere import SphereGrid, pad_coefficients, _glq
from .models import check_usa_beta

__all__ = ["SphereSpectral", "SphereQuadrature", "sphere_rate", "funk_hecke", "sphere_excess_energy",
           "sphere_energy", "surface_gradient"]

Y00 = 1.0 / np.sqrt(4.0 * np.pi)


def dealiased_degree(lmax: int) -> int:
    return -(-3 * lmax // 2)


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


def _laplacian(lmax):
    l = np.arange(lmax + 1)
    return -(l * (l + 1.0))[None, :, None]


def _a(l, m):
    l = np.asarray(l, dtype=float)
    m = np.asarray(m, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.sqrt(np.maximum(l * l - m * m, 0.0) / (4.0 * l * l - 1.0))
    return np.where(l > 0, r, 0.0)


def surface_gradient(cilm: np.ndarray, lmax_grid: int, backend):
    """(∂_θ f, (1/sin θ) ∂_φ f) of f = Σ c_lm Y_lm on the GLQ grid of degree ``lmax_grid``."""
    L = cilm.shape[1] - 1
    l = np.arange(L + 1)[:, None]
    m = np.arange(L + 1)[None, :]
    st = np.zeros((2, L + 2, L + 2))
    st[:, 1 : L + 2, : L + 1] += (l * _a(l + 1, m))[None] * cilm  # l a_{l+1,m} → degree l + 1
    st[:, : L, : L + 1] -= ((l + 1) * _a(l, m))[None, 1:] * cilm[:, 1:]  # (l+1) a_{lm} → degree l − 1
    dphi = np.empty_like(cilm)
    dphi[0] = m * cilm[1]
    dphi[1] = -m * cilm[0]
    zero, _ = _glq(lmax_grid)
    sin_t = np.sqrt(1.0 - zero**2)[:, None]
    return backend.synthesis(st, lmax_grid) / sin_t, backend.synthesis(dphi, lmax_grid) / sin_t


def _frames(lmax):
    """θ̂ and φ̂ at the nodes of the GLQ grid of degree lmax, shape (nlat, nlon, 3)."""
    g = SphereGrid(lmax, backend="pyshtools")  # geometry only
    ct = np.cos(g.colatitudes)[:, None]
    st = np.sin(g.colatitudes)[:, None]
    cp, sp = np.cos(g.longitudes)[None, :], np.sin(g.longitudes)[None, :]
    theta_hat = np.stack(np.broadcast_arrays(ct * cp, ct * sp, -st), axis=-1)
    phi_hat = np.stack(np.broadcast_arrays(-sp + 0 * ct, cp + 0 * ct, 0 * (ct * cp)), axis=-1)
    return g, theta_hat, phi_hat


class _SphereRate:
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

    def __init__(self, grid: SphereGrid, beta: float, c: float, normalized: bool):
        super().__init__(grid)
        check_usa_beta(beta, normalized, "S²")
        self.beta, self.c, self.normalized = float(beta), float(c), bool(normalized)
        D, N = funk_hecke(self.L, self.beta)
        self._D0 = D[0]
        self._N = N[None, :, None]
        self._lap_L = _laplacian(self.L)

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

    def rate_and_speeds(self, values):
        B, Ld = self.backend, self.Ld
        cilm = B.analysis(values, self.L)
        rho = B.synthesis(cilm, Ld)
        r_t, r_p = surface_gradient(cilm, Ld, B)
        f_t, f_p, lap_f = self.gradient_and_laplacian(cilm)
        div = r_t * f_t + r_p * f_p + rho * lap_f
        speed = float(np.sqrt(np.max(f_t * f_t + f_p * f_p)))
        return self._finish(B.analysis(div, Ld)), speed, 0.0


class SphereQuadrature(_SphereRate):
    """Field by quadrature through ``model.field`` for any model on S²."""

    def __init__(self, grid: SphereGrid, model):
        super().__init__(grid)
        self.model = model
        fine, self._th, self._ph = _frames(self.Ld)
        self._queries = fine.points.reshape(-1, 3)
        self._e = [(self._th[..., k], self._ph[..., k]) for k in range(3)]

    def rate_and_speeds(self, values):
        B = self.backend
        cilm = B.analysis(values, self.L)
        rho = B.synthesis(cilm, self.Ld)
        X = self.model.field(self.grid.points.reshape(-1, 3), (values * self.grid.weights).ravel(), self._queries)
        X = X.reshape(rho.shape + (3,))
        div = np.zeros(rho.shape)
        for k in range(3):
            g_t, g_p = surface_gradient(B.analysis(rho * X[..., k], self.Ld), self.Ld, B)
            div += g_t * self._e[k][0] + g_p * self._e[k][1]
        speed = float(np.max(np.linalg.norm(X, axis=-1)))
        return self._finish(B.analysis(div, self.Ld)), speed, 0.0


def sphere_rate(model, grid: SphereGrid, path: str = "auto"):
    """Choose the S² right-hand side ("auto", "spectral" or "quadrature"); see :func:`choose_rate`."""
    return choose_rate(model, grid, path, SphereSpectral, SphereQuadrature)


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


def sphere_excess_energy(grid: SphereGrid, values, beta: float) -> float:
    r"""e^{-β}(E_β − m²/2β) by Parseval: E_β = (1/2β) Σ λ_l c_lm², m = √(4π) c_00.

    At β = 0 the limit ½|∫x dμ|² = (2π/3) Σ_m c_1m².
    """
    p = np.sum(grid.coefficients(values) ** 2, axis=(0, 2))
    if beta == 0.0:
        return float(2.0 * np.pi / 3.0 * p[1])
    D, _ = funk_hecke(grid.lmax, beta)
    return float((D[1:] @ p[1:] + 4.0 * np.pi * _i0m1_scaled(beta) * p[0]) / (2.0 * beta))


def sphere_energy(grid: SphereGrid, values, beta: float) -> float:
    """E_β (½|∫x dμ|² at β = 0); ``OverflowError`` past β ≈ 709."""
    return energy_from_excess(sphere_excess_energy(grid, values, beta), grid.integrate(values), beta)
