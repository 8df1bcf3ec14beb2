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

import numba
import numpy as np
from scipy.special import ive

from ...numerics import check_usa_beta
from .grid import SphereGrid
from .ducc import ring_plan
from .shtns_plans import MIN_NLAT, ShtnsBackend, shtns_plan
from .gauss import alm_layout, ladder
from .transforms import (DuccBackend, dealiased_degree, frames, laplacian, nodes, pad_coefficients,
                         surface_gradient)

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


def fast_ring_count(lmax_d: int) -> int:
    """Longitudes of the dealiased rings on the fast path: the smallest 2^a 3^b 5^c ... >= 2 L_d + 1.

    2 L_d + 1 is the GLQ grid's own count (prime for L = 63, 127); any count
    >= 2 L_d + 1 keeps the products' quadrature exact for band-limited data.
    """
    from scipy.fft import next_fast_len

    return int(next_fast_len(2 * lmax_d + 1, real=True))


class SphereSpectral(_SphereRate):
    """Funk–Hecke field and scalar-transform divergence for zonal kernels on S².

    With the ducc0 backend the right-hand side runs on precomputed ring plans
    (:mod:`.ducc`): 5 Legendre syntheses on the dealiased rings (ρ, sin θ ∂_θ ρ,
    u, sin θ ∂_θ u, Δu; the φ-derivatives are i m times the same Legendre
    coefficients), one batched ring FFT, one analysis there and one transform
    each way on the grid of degree L, on ``nphi`` longitudes per dealiased ring
    (default :func:`fast_ring_count`). With the optional shtns backend (grids of
    at least 32 colatitudes) the same fields come from shtns' transforms: 3 scalar
    syntheses (ρ, u, Δu) and 2 gradient syntheses (∇ρ, ∇u) on the dealiased grid,
    one analysis there, one transform each way at L. With pyshtools, or
    ``fast=False``, it runs the same formulas through cilm arrays and one-call
    transforms on the GLQ grid of degree L_d (the reference the fast paths are tested against).
    """

    path = "spectral"

    def __init__(self, grid: SphereGrid, beta: float, c: float, normalized: bool, nphi: int | None = None,
                 fast: bool | None = None):
        super().__init__(grid)
        check_usa_beta(beta, normalized, "S²")
        self.beta, self.c, self.normalized = float(beta), float(c), bool(normalized)
        D, N = funk_hecke(self.L, self.beta)
        self._D0 = D[0]
        self._N = N[None, :, None]
        self._lap_L = laplacian(self.L)
        nphi = fast_ring_count(self.Ld) if nphi is None else int(nphi)
        self.shtns = self.backend is ShtnsBackend and self.L + 1 >= MIN_NLAT and fast is not False
        fast_capable = self.backend in (DuccBackend, ShtnsBackend)
        self.fast = self.shtns or (fast_capable if fast is None else bool(fast))
        if self.fast and not fast_capable:
            raise ValueError(f"`fast` needs the ducc0 or shtns backend, got backend {self.backend.name!r}.")
        if self.fast:
            self._plan_fast(N, nphi)

    def _plan_fast(self, N, nphi):
        """Plans of the grid of degree L (``_pL``) and the dealiased one (``_pd``): ducc0 ring plans, or shtns
        plans with the same ``analysis``/``synthesis``/``scratch``; ``_sin`` is what ``_potential_rings``' θ and
        φ fields are still to be divided by (sin θ on the rings, 1 with shtns, which returns the derivatives)."""
        L = self.L
        l, m, _ = alm_layout(L)  # shtns packs its coefficients the same way
        self._N_alm = N[l]
        self._lap_alm = -(l * (l + 1.0)) * N[l]
        if self.shtns:
            self._pL, self._pd = shtns_plan(L), shtns_plan(L, self.Ld, nphi)
            self._sin = np.ones((self.Ld + 1, 1))
        else:
            self._pL, self._pd = ring_plan(L), ring_plan(L, self.Ld, nphi)
            self._sin = self._pd.sin_theta
            self._im = 1j * self._pd.m
            # sin θ ∂_θ Y_lm = l a_{l+1,m} Y_{l+1,m} − (l+1) a_{lm} Y_{l−1,m}: a_lm for l <= L + 1, m <= L
            lad_l, lad_m = np.meshgrid(np.arange(L + 2), np.arange(L + 1), indexing="ij")
            self._ladder = np.ascontiguousarray(ladder(lad_l, lad_m))
            self._n1 = (L + 2) * (L + 3) // 2
        self._inv_sin = 1.0 / self._sin[:, 0]

    def _legs(self, alm, spectra, j):
        """Λ_m of f, of sin θ ∂_θ f and of ∂_φ f on the dealiased rings into ``spectra[j: j + 3]``, f = Σ a_lm Y_lm."""
        st = self._pd.scratch("st", (self._n1,), complex)
        _sin_theta_derivative(alm, self.L, self._ladder, st)
        k = self.L + 1
        leg = self._pd.leg(alm, out=spectra[j, :, :k])
        self._pd.leg(st, self.L + 1, out=spectra[j + 1, :, :k])
        np.multiply(leg, self._im, out=spectra[j + 2, :, :k])

    def _potential_rings(self, alm, density: bool):
        """Values on the dealiased grid of ((ρ, sin θ ∂_θ ρ, ∂_φ ρ) if density,) u, sin θ ∂_θ u, ∂_φ u,
        (Δu if density); with shtns, ∂_θ and ∂_φ / sin θ in place of sin θ ∂_θ and ∂_φ (``_sin`` = 1).

        u = Σ N_l a_lm Y_lm (:func:`funk_hecke`).
        """
        if self.shtns:
            return self._shtns_fields(alm, density)
        spectra = self._pd.spectra(7 if density else 3, key=density)
        Na = self._N_alm * alm
        if density:
            self._legs(alm, spectra, 0)
            self._pd.leg(self._lap_alm * alm, out=spectra[6, :, : self.L + 1])
        self._legs(Na, spectra, 3 if density else 0)
        return self._pd.rings(spectra, out=self._pd.scratch(("rings", density), spectra.shape[:-1] + (self._pd.nphi,)))

    def _shtns_fields(self, alm, density: bool):
        """:meth:`_potential_rings` with shtns: scalar syntheses and gradient (spheroidal) syntheses."""
        sh = self._pd
        g = sh.scratch(("rings", density), (7 if density else 3,) + tuple(sh.spat_shape))
        Na = self._N_alm * alm
        j = 0
        if density:
            sh.SH_to_spat(alm, g[0])
            sh.SHsph_to_spat(alm, g[1], g[2])
            sh.SH_to_spat(self._lap_alm * alm, g[6])
            j = 3
        sh.SH_to_spat(Na, g[j])
        sh.SHsph_to_spat(Na, g[j + 1], g[j + 2])
        return g

    def _potential_constants(self, alm):
        """(s, β, c) with ∇φ = c s∇u/(1 + βsu): SA s = 1/(λ_0 ρ_00 Y_00); USA s = 1, β → 0, c → c e^β."""
        if not self.normalized:
            return 1.0, 0.0, self.c * np.exp(self.beta)
        return 1.0 / (self._D0 * alm[0].real * Y00), self.beta, self.c

    def _rate_fast(self, values):
        alm = self._pL.analysis(values)
        g = self._potential_rings(alm, density=True)
        div = self._pd.scratch("div", g.shape[1:])
        speed2 = _combine(g, self._inv_sin, *self._potential_constants(alm), div)
        tendency = self._pd.analysis(div)
        tendency *= -1.0
        tendency[0] = 0.0
        return self._pL.synthesis(tendency), float(np.sqrt(speed2)), 0.0

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
        if self.fast:
            alm = self._pL.analysis(values)
            u, u_st, u_p = self._potential_rings(alm, density=False)
            scale, beta, c = self._potential_constants(alm)
            factor = c * scale / (1.0 + beta * scale * u) / self._sin
            f_t, f_p = factor * u_st, factor * u_p
        else:
            f_t, f_p, _ = self.gradient_and_laplacian(self.backend.analysis(values, self.L))
        return self._speed(f_t, f_p), 0.0

    def rate_and_speeds(self, values):
        if self.fast:
            return self._rate_fast(values)
        B, Ld = self.backend, self.Ld
        cilm = B.analysis(values, self.L)
        rho = B.synthesis(cilm, Ld)
        r_t, r_p = surface_gradient(cilm, Ld, B)
        f_t, f_p, lap_f = self.gradient_and_laplacian(cilm)
        div = r_t * f_t + r_p * f_p + rho * lap_f
        return self._finish(B.analysis(div, Ld)), self._speed(f_t, f_p), 0.0


@numba.njit(cache=True, nogil=True)
def _sin_theta_derivative(alm, L, a, out):
    """Healpy-ordered coefficients (degree L + 1) of sin θ ∂_θ f from those of f (degree L), into ``out``:
    sin θ ∂_θ Y_lm = l a_{l+1,m} Y_{l+1,m} − (l+1) a_lm Y_{l−1,m}, a = :func:`.gauss.ladder` (l, m)."""
    for m in range(L + 1):
        src = m * (2 * L + 1 - m) // 2  # entry (l, m) at src + l
        dst = m * (2 * L + 3 - m) // 2  # in the layout of degree L + 1
        for l in range(m, L + 2):
            out[dst + l] = 0.0
        for l in range(m, L + 1):
            f = alm[src + l]
            out[dst + l + 1] += l * a[l + 1, m] * f
            if l > m:
                out[dst + l - 1] -= (l + 1) * a[l, m] * f
    return out


@numba.njit(cache=True, nogil=True)
def _combine(g, inv_sin, scale, beta, c, div):
    """div(ρ∇φ) = ∇ρ·∇φ + ρΔφ at every ring node, into ``div``; returns max |∇φ|².

    ``g`` holds the ring values of :meth:`SphereSpectral._potential_rings`
    (ρ, sin θ ∂_θ ρ, ∂_φ ρ, u, sin θ ∂_θ u, ∂_φ u, Δu); with s = ``scale``,
    ∇φ = c s∇u/(1 + βsu) and Δφ = c[sΔu/(1 + βsu) − β s²|∇u|²/(1 + βsu)²],
    the formulas of :meth:`SphereSpectral.gradient_and_laplacian`, fused (one division per node).
    """
    vmax = 0.0
    for i in range(g.shape[1]):
        w = inv_sin[i]
        for k in range(g.shape[2]):
            u_t = g[4, i, k] * w * scale
            u_p = g[5, i, k] * w * scale
            r = 1.0 / (1.0 + beta * scale * g[3, i, k])
            f_t = c * u_t * r
            f_p = c * u_p * r
            lap_f = c * r * (g[6, i, k] * scale - beta * (u_t * u_t + u_p * u_p) * r)
            div[i, k] = g[1, i, k] * w * f_t + g[2, i, k] * w * f_p + g[0, i, k] * lap_f
            speed2 = f_t * f_t + f_p * f_p
            if not speed2 <= vmax:  # NaN propagates, as with np.max
                vmax = speed2
    return vmax


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

    def _field(self, values, rho=None):
        """X at the dealiased nodes, shape (ntheta, nphi, 3); ``rho``: the density there, where known."""
        X = self.field(self.grid.points.reshape(-1, 3), (values * self.grid.weights).ravel(), self._queries)
        return X.reshape(self._shape + (3,))

    def speeds(self, values):
        return float(np.max(np.linalg.norm(self._field(values), axis=-1))), 0.0

    def rate_and_speeds(self, values):
        B = self.backend
        cilm = B.analysis(values, self.L)
        rho = B.synthesis(cilm, self.Ld)
        X = self._field(values, rho)
        div = np.zeros(rho.shape)
        for k in range(3):
            g_t, g_p = surface_gradient(B.analysis(rho * X[..., k], self.Ld), self.Ld, B)
            div += g_t * self._e[k][0] + g_p * self._e[k][1]
        speed = float(np.max(np.linalg.norm(X, axis=-1)))
        return self._finish(B.analysis(div, self.Ld)), speed, 0.0
