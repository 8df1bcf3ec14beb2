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
  The fast paths take the divergence in flux form: the flux F = ρ∇φ on the
  dealiased rings, with
  SA:  ∇φ = c∇u/(1 + βu),  USA: ∇φ = (c e^β)∇U,
  and (−div F)_lm = ∫ F·∇Ȳ_lm by one vector analysis (the adjoint of the
  gradient synthesis). The reference path takes the scalar form
  div(ρ∇φ) = ∇ρ·∇φ + ρΔφ with Δφ = c[Δu/(1 + βu) − β|∇u|²/(1 + βu)²] (SA) or
  (c e^β)ΔU (USA), where ∇ρ, ∇u and Δu come straight from coefficient arrays
  (Δ Y_lm = −l(l+1)Y_lm). Neither applies Δ to analysed products, as the
  symmetric scalar form ½[Δ(ρφ) + ρΔφ − φΔρ] of MATH.md §2.1 would: their
  round-off ε sits at every degree, and Δ makes it ε L(L+1) at the top
  degrees per unit time (measured: 2e-12 at L = 48 by t = 1 where the exact
  coefficient is 1e-13), which the resolution monitor reads as loss of
  resolution. The flux form multiplies the flux's round-off by |∇Y_lm| ~ l
  once (measured in :class:`SphereSpectral`).
- :class:`SphereQuadrature` (any model): X = ``field`` (the model's reference
  sum) at the dealiased nodes for the grid measure; div_S F = Σ_k ⟨∇_S F_k, e_k⟩
  for the Cartesian components F_k of the flux F = ρX, with ∇_S from
  :func:`transforms.surface_gradient`.
"""

from __future__ import annotations

import numba
import numpy as np
from scipy.special import ive

from ...core.numerics import check_usa_beta
from .grid import SphereGrid
from .ducc import ring_plan
from .shtns_plans import MIN_NLAT, ShtnsBackend, shtns_plan
from .gauss import alm_layout
from .transforms import DuccBackend, dealiased_degree, frames, laplacian, nodes, pad_coefficients, surface_gradient

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
    """What the strategies share: the degrees, the backend, the noise's Laplacian, and a fixed ``drift``.

    ``drift``, optional, is a fixed tangent field ``drift(points) -> vectors`` added to X[ρ] (a Transformer's
    feed-forward blocks, docs/MATH.md §8.2): evaluated once, at the nodes where each strategy forms the flux.
    """

    strategy: str

    def __init__(self, grid: SphereGrid, drift=None):
        self.drift = drift
        self.grid = grid
        self.L = grid.lmax
        self.Ld = dealiased_degree(grid.lmax)
        self.backend = grid.backend
        l = alm_layout(self.L)[0]
        self.laplacian = -(l * (l + 1.0))  # Δ_S on the a_lm of the coefficient stages (MATH.md §6: DΔρ)

    def _finish(self, div_c):
        """Tendency −div on the L-grid from the divergence's coefficients (any degree)."""
        t = -pad_coefficients(div_c, self.L)
        t[:, 0, 0] = 0.0
        return self.backend.synthesis(t, self.L)

    def rate(self, values):
        return self.rate_and_speeds(values)[0]

    def _rate_through_coefficients(self, values):
        """``rate_and_speeds`` of the paths with ``coefficient_stages``: their coefficient right-hand side
        between one analysis and one synthesis at degree L."""
        tendency, speed, strain = self.coefficient_rate_and_speeds(self.coefficients(values))
        return self.values(tendency), speed, strain


def fast_ring_count(lmax_d: int) -> int:
    """Longitudes of the dealiased rings on the fast path: the smallest 2^a 3^b 5^c ... >= 2 L_d + 1.

    2 L_d + 1 is the GLQ grid's own count (prime for L = 63, 127); any count
    >= 2 L_d + 1 keeps the products' quadrature exact for band-limited data.
    """
    from scipy.fft import next_fast_len

    return int(next_fast_len(2 * lmax_d + 1, real=True))


class SphereSpectral(_SphereRate):
    r"""Funk–Hecke field and the flux's divergence for zonal kernels on S².

    Fast path (ducc0 ring plans, :mod:`.ducc`, or the optional shtns plans on grids
    of at least 32 colatitudes): from the coefficients a_lm of ρ (degree L), the
    dealiased rings carry u, ∇u and ρ (ducc0: 3 scalar Legendre syntheses, ∇ through
    the ladder of sin θ ∂_θ, :meth:`.ducc.RingPlan.gradient_legs`, those of u and
    sin θ ∂_θ u only to the degree :func:`potential_degree` past which u's terms are
    below round-off — about 15–30 for moderate β, whatever L; shtns: 2 scalar and
    one spheroidal synthesis of degree L), the flux F = ρ∇φ is formed there, and the adjoint of
    the gradient gives −div F directly (ducc0: 2 scalar analyses,
    :meth:`.ducc.RingPlan.divergence_analysis`; shtns: one vector analysis):

        (−div F)_lm = −∫ Ȳ_lm div F = ∫ F·∇Ȳ_lm    (shtns: F = ∇S + curl T, −div F = l(l+1) S).

    4 ring FFTs out and 2 back per right-hand side, on ``nphi`` longitudes per
    dealiased ring (default :func:`fast_ring_count`). The fixed-step integrators
    run their stages on the coefficients (:meth:`coefficient_rate_and_speeds`,
    :class:`meanfield.integrate.Stages`): one analysis and one synthesis at degree L
    per step instead of per stage.

    Round-off: the analysed flux's is multiplied by |∇Y_lm| ~ l. Against the exact
    β = 0 tendency (tests/meanfield/test_sphere_flux.py) the fast path errs by 7.2 times
    the tendency's own conditioning at L = 63 (its change under a round-off perturbation
    of ρ), the scalar form on ducc0 by 4.2; the top coefficients of the tendency of a
    degree-4 density, exactly zero for USA, sit at 3e-14 / 1.3e-13 / 2.3e-13 of ρ_00
    at L = 48 / 127 / 255 (scalar form: 2e-14 / 1.7e-13 / 3.5e-13), far below the
    resolution monitor's tail_tol.

    Reference path (pyshtools, or ``fast=False``): the scalar form
    div(ρ∇φ) = ∇ρ·∇φ + ρΔφ through cilm arrays and one-call transforms on the GLQ
    grid of degree L_d, which the fast paths are tested against (an independent
    formula for the same tendency).
    """

    strategy = "spectral"

    def __init__(self, grid: SphereGrid, beta: float, c: float, normalized: bool, nphi: int | None = None,
                 fast: bool | None = None, drift=None):
        super().__init__(grid, drift)
        check_usa_beta(beta, normalized, "S²")
        self.beta, self.c, self.normalized = float(beta), float(c), bool(normalized)
        D, N = funk_hecke(self.L, self.beta)
        self._D0, self._N_l = D[0], N
        self._N = N[None, :, None]
        self._lap_L = laplacian(self.L)
        nphi = fast_ring_count(self.Ld) if nphi is None else int(nphi)
        # a drift is laid on ducc0's rings (shtns' are the same GLQ rings, but only ducc0's layout is tested)
        self.shtns = self.backend is ShtnsBackend and self.L + 1 >= MIN_NLAT and fast is not False and drift is None
        fast_capable = self.backend in (DuccBackend, ShtnsBackend)
        self.fast = self.shtns or (fast_capable if fast is None else bool(fast))
        if self.fast and not fast_capable:
            raise ValueError(f"`fast` needs the ducc0 or shtns backend, got backend {self.backend.name!r}.")
        self.coefficient_stages = self.fast  # solve's fixed steps run their stages on the a_lm
        if self.fast:
            self._N_alm = N[alm_layout(self.L)[0]]  # shtns packs its coefficients as ducc0 does
            plan = shtns_plan if self.shtns else ring_plan
            self._pL, self._pd = plan(self.L), plan(self.L, self.Ld, nphi)
            if drift is not None:  # (θ̂, φ̂) components on the rings times the flux's scale; max |drift|
                pd = self._pd
                t_hat, p_hat, points = ring_frames(pd.theta, pd.nphi)
                D = drift(points)
                self._drift_flux = np.stack([np.sum(D * t_hat, axis=-1), np.sum(D * p_hat, axis=-1)]) \
                    * pd.flux_scale[None, :, None]
                self._drift_max = float(np.sqrt(np.max(np.sum(D * D, axis=-1))))
        if drift is not None:  # the reference path's: on the dealiased GLQ grid
            self._drift_glq = _DriftFlux(self.Ld, drift, self.backend)

    # ---- the fast path: coefficients a_lm in the plans' layout
    def coefficients(self, values) -> np.ndarray:
        """The a_lm (degree L, the plans' layout) of grid values: the stages' state (fast path only)."""
        return self._pL.analysis(values)

    def values(self, alm) -> np.ndarray:
        """Grid values of coefficients from :meth:`coefficients` (a new array)."""
        return self._pL.synthesis(alm)

    def _rings(self, alm, density: bool):
        """Values on the dealiased grid of u and of its gradient (∂_θ u, ∂_φ u / sin θ) divided by the plan's
        ``gradient_scale`` (and ρ if ``density``), u = Σ N_l a_lm Y_lm (:func:`funk_hecke`); a work array of the
        plan (overwritten at the next call)."""
        k = 4 if density else 3
        Na = self._N_alm * alm
        pd = self._pd
        if self.shtns:
            g = pd.scratch(("rings", density), (k,) + tuple(pd.spat_shape))
            pd.SH_to_spat(Na, g[0])
            pd.SHsph_to_spat(Na, g[1], g[2])
            if density:
                pd.SH_to_spat(alm, g[3])
            return g
        spectra = pd.spectra(k, key=density)
        n = self.L + 1
        pd.gradient_legs(Na, out=spectra[:3, :, :n], degree=potential_degree(alm, self.L, self._N_l))
        if density:
            pd.leg(alm, out=spectra[3, :, :n])
        return pd.rings(spectra, out=pd.scratch(("rings", density), spectra.shape[:-1] + (pd.nphi,)))

    def _potential_constants(self, alm):
        """(s, β, c) with ∇φ = c s∇u/(1 + βsu): SA s = 1/(λ_0 ρ_00 Y_00); USA s = 1, β → 0, c → c e^β."""
        if not self.normalized:
            return 1.0, 0.0, self.c * np.exp(self.beta)
        return 1.0 / (self._D0 * alm[0].real * Y00), self.beta, self.c

    def coefficient_rate_and_speeds(self, alm):
        """(coefficients of ∂_t ρ = −div(ρ∇φ), max |X|, 0) from the a_lm of ρ (fast path only)."""
        pd = self._pd
        g = self._rings(alm, density=True)
        flux = pd.scratch("flux", (2,) + g.shape[1:])
        speed2 = _flux(g, pd.gradient_scale, pd.flux_scale, *self._potential_constants(alm), flux)
        if self.drift is None:
            return pd.divergence_analysis(flux), float(np.sqrt(speed2)), 0.0
        flux += g[3] * self._drift_flux  # ρ × the drift; max |X| <= max |∇φ| + max |drift|
        return pd.divergence_analysis(flux), float(np.sqrt(speed2)) + self._drift_max, 0.0

    def coefficient_speeds(self, alm):
        """(max |X|, 0) from the a_lm of ρ (fast path only; with a drift, max |∇φ| + max |drift|)."""
        g = self._rings(alm, density=False)
        speed = float(np.sqrt(_max_speed2(g, self._pd.gradient_scale, *self._potential_constants(alm))))
        return speed + (self._drift_max if self.drift is not None else 0.0), 0.0

    # ---- the reference path (cilm arrays)
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
            return self.coefficient_speeds(self.coefficients(values))
        f_t, f_p, _ = self.gradient_and_laplacian(self.backend.analysis(values, self.L))
        return self._speed(f_t, f_p) + (self._drift_glq.max if self.drift is not None else 0.0), 0.0

    def rate_and_speeds(self, values):
        if self.fast:
            return self._rate_through_coefficients(values)
        B, Ld = self.backend, self.Ld
        cilm = B.analysis(values, self.L)
        rho = B.synthesis(cilm, Ld)
        r_t, r_p = surface_gradient(cilm, Ld, B)
        f_t, f_p, lap_f = self.gradient_and_laplacian(cilm)
        div = r_t * f_t + r_p * f_p + rho * lap_f
        if self.drift is None:
            return self._finish(B.analysis(div, Ld)), self._speed(f_t, f_p), 0.0
        div += self._drift_glq.divergence(rho)
        return self._finish(B.analysis(div, Ld)), self._speed(f_t, f_p) + self._drift_glq.max, 0.0


@numba.njit(cache=True, nogil=True)
def potential_degree(alm, L, N):
    r"""The degree L_u <= L past which the potential u = Σ N_l a_lm Y_lm is below round-off: the smallest L_u >= 1 with

        Σ_{l > L_u} N_l c_l ‖a_l‖ <= 2⁻⁵³ Σ_l N_l c_l ‖a_l‖,   c_l = √(l(l+1)(2l+1)/4π),   ‖a_l‖² = Σ_m |a_lm|²,

    from the healpy-ordered ``alm`` of degree L (‖a_l‖² = |a_l0|² + 2 Σ_{m>0} |a_lm|²) and the multipliers N_l.

    By Cauchy–Schwarz and the addition theorem (Σ_m |∇Y_lm(x)|² = l(l+1)(2l+1)/4π), N_l c_l ‖a_l‖ bounds
    the degree-l part of |∇u| at every point, so the right-hand side bounds Σ|terms| of the full sum, the
    scale of its round-off: the truncated ∇u differs from the full one by at most one unit round-off of that
    bound, and u by less (the weights √(l(l+1)) grow, so the tail's share of u's bound is smaller). N_l decays
    like (β/2)^l/(2l+1)!!: L_u = 24 at β = 4 and 90 at β = 100 for coefficients of equal norm per degree, so
    the syntheses of u and ∇u cost (L_u/L)² of full ones where β is moderate. Non-finite coefficients give L.
    """
    norm2 = np.zeros(L + 1)
    for m in range(L + 1):
        start = m * (2 * L + 1 - m) // 2
        w = 1.0 if m == 0 else 2.0
        for l in range(m, L + 1):
            a = alm[start + l]
            norm2[l] += w * (a.real * a.real + a.imag * a.imag)
    terms = np.zeros(L + 1)
    total = 0.0
    for l in range(1, L + 1):
        terms[l] = N[l] * np.sqrt(l * (l + 1.0) * (2.0 * l + 1.0) / (4.0 * np.pi) * norm2[l])
        total += terms[l]
    if not np.isfinite(total):
        return L
    tail = 0.0
    for l in range(L, 0, -1):
        tail += terms[l]
        if tail > 2.0**-53 * total:
            return l
    return 1


@numba.njit(inline="always")
def _potential_gradient(g, i, k, w, scale, beta, c):
    """∇φ = c s∇u/(1 + βsu) at ring node (i, k) from :meth:`SphereSpectral._rings`' values ``g``
    (u, then the gradient of u over ``gradient_scale`` w)."""
    r = c * scale * w / (1.0 + beta * scale * g[0, i, k])
    return r * g[1, i, k], r * g[2, i, k]


@numba.njit(cache=True, nogil=True)
def _flux(g, gradient_scale, flux_scale, scale, beta, c, flux):
    """The flux F = ρ∇φ times ``flux_scale`` at every ring node, into ``flux`` (2, ntheta, nphi); returns max |∇φ|².

    ``g`` holds the ring values of :meth:`SphereSpectral._rings` (u, the gradient of u over
    ``gradient_scale``, ρ); with s = ``scale``, ∇φ = c s∇u/(1 + βsu), the field of
    :meth:`SphereSpectral.gradient_and_laplacian` (one division per node).
    """
    vmax = 0.0
    for i in range(g.shape[1]):
        w = gradient_scale[i]
        for k in range(g.shape[2]):
            f_t, f_p = _potential_gradient(g, i, k, w, scale, beta, c)
            rho = g[3, i, k] * flux_scale[i]
            flux[0, i, k] = rho * f_t
            flux[1, i, k] = rho * f_p
            speed2 = f_t * f_t + f_p * f_p
            if not speed2 <= vmax:  # NaN propagates, as with np.max
                vmax = speed2
    return vmax


@numba.njit(cache=True, nogil=True)
def _max_speed2(g, gradient_scale, scale, beta, c):
    """max |∇φ|² over the ring nodes (:func:`_flux` without the flux)."""
    vmax = 0.0
    for i in range(g.shape[1]):
        w = gradient_scale[i]
        for k in range(g.shape[2]):
            f_t, f_p = _potential_gradient(g, i, k, w, scale, beta, c)
            speed2 = f_t * f_t + f_p * f_p
            if not speed2 <= vmax:
                vmax = speed2
    return vmax


class SphereQuadrature(_SphereRate):
    """Field by quadrature: ``field(points, weights, queries)`` for the grid measure at the dealiased nodes."""

    strategy = "quadrature"

    def __init__(self, grid: SphereGrid, field, drift=None):
        super().__init__(grid, drift)
        self.field = field  # None: no attention (the drift alone)
        self._queries = nodes(self.Ld)[2].reshape(-1, 3)
        theta_hat, phi_hat = frames(self.Ld)
        self._e = [(theta_hat[..., k], phi_hat[..., k]) for k in range(3)]
        self._shape = theta_hat.shape[:-1]
        self._drift = None if drift is None else drift(self._queries).reshape(self._shape + (3,))

    def _field(self, values, rho=None):
        """X at the dealiased nodes, shape (ntheta, nphi, 3); ``rho``: the density there, where known."""
        if self.field is None:
            return np.zeros(self._shape + (3,))
        X = self.field(self.grid.points.reshape(-1, 3), (values * self.grid.weights).ravel(), self._queries)
        return X.reshape(self._shape + (3,))

    def _velocity(self, X):
        """X plus the drift, where there is one."""
        return X if self._drift is None else X + self._drift

    def speeds(self, values):
        return float(np.max(np.linalg.norm(self._velocity(self._field(values)), axis=-1))), 0.0

    def rate_and_speeds(self, values):
        B = self.backend
        cilm = B.analysis(values, self.L)
        rho = B.synthesis(cilm, self.Ld)
        X = self._velocity(self._field(values, rho))
        div = flux_divergence(rho, X, self._e, self.Ld, B)
        speed = float(np.max(np.linalg.norm(X, axis=-1)))
        return self._finish(B.analysis(div, self.Ld)), speed, 0.0


def flux_divergence(rho, X, e, Ld, B):
    """div_S(ρX) on the GLQ grid of degree Ld = Σ_k ⟨∇_S(ρX_k), e_k⟩, X_k the Cartesian components, e_k = (θ̂_k, φ̂_k)
    (the tangential part of ∇_S(ρX_k) along the k-th axis; exact for the dealiased products)."""
    div = np.zeros(rho.shape)
    for k in range(3):
        g_t, g_p = surface_gradient(B.analysis(rho * X[..., k], Ld), Ld, B)
        div += g_t * e[k][0] + g_p * e[k][1]
    return div


class _DriftFlux:
    """A fixed drift on the GLQ grid of degree Ld: div_S(ρ·drift) for the reference paths, and max |drift|."""

    def __init__(self, Ld, drift, backend):
        theta_hat, phi_hat = frames(Ld)
        self.Ld, self.B = Ld, backend
        self.e = [(theta_hat[..., k], phi_hat[..., k]) for k in range(3)]
        self.X = drift(nodes(Ld)[2].reshape(-1, 3)).reshape(theta_hat.shape)
        self.max = float(np.sqrt(np.max(np.sum(self.X * self.X, axis=-1))))

    def divergence(self, rho):
        return flux_divergence(rho, self.X, self.e, self.Ld, self.B)


def ring_frames(theta, nphi):
    """(θ̂, φ̂, points) at the nodes of rings at colatitudes ``theta`` with ``nphi`` longitudes 2πk/nphi, shape
    (ntheta, nphi, 3) each."""
    phi = 2.0 * np.pi * np.arange(nphi) / nphi
    ct, st = np.cos(theta)[:, None], np.sin(theta)[:, None]
    cp, sp = np.cos(phi)[None, :], np.sin(phi)[None, :]
    t_hat = np.stack(np.broadcast_arrays(ct * cp, ct * sp, -st), axis=-1)
    p_hat = np.stack(np.broadcast_arrays(-sp + 0 * ct, cp + 0 * ct, 0 * (ct * cp)), axis=-1)
    points = np.stack(np.broadcast_arrays(st * cp, st * sp, ct + 0 * cp), axis=-1)
    return t_hat, p_hat, points
