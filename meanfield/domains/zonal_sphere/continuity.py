r"""Right-hand sides of the zonal continuity equation on S^{d-1}, by strategy (MATH.md §9).

For Q = qI, K = kI, V = cI (β the effective βqk) a zonal density ρ = f(u), u = ⟨x, e⟩, has the zonal kernel sum
φ = K_β*ρ = Σ_l λ_l c̄_l p̄_l (Funk–Hecke) and a meridional velocity X = ∇_S ψ = ψ′(u)(e − u x) with

    USA: ψ = c φ/β,     SA: ψ = (c/β) log φ,

so u̇ = (1 − u²)ψ′(u) and the polar angle moves at θ̇ = −ψ′(cos θ) sin θ. Tested against p̄_l and integrated by
parts (the flux (1 − u²)^{(d−1)/2} ρψ′ vanishes at u = ±1 for every d >= 2), the continuity equation reads, on the
σ̄-orthonormal coefficients c̄_l = ∫ f p̄_l dσ̄,

    ∂_t c̄_l = ∫ p̄_l′(u) (1 − u²) ρ(u) ψ′(u) dσ̄(u)       (+ D·(−l(l + d − 2)) c̄_l with noise),

the weak (flux) form: it is evaluated by the Gauss rule of M_d = ⌈3(L + 1)/2⌉ nodes (the products dealiased as on
S¹ and S²), the rate of c̄_0 is exactly zero (p̄_0′ = 0: the mass is conserved to round-off), and no derivative of
an analysed product is taken. The fixed steps run their stages on the coefficients (``coefficient_stages``), the
noise's DΔ as their exact integrating factor.

- :class:`ZonalSpectral`: φ, φ′, φ″ from the multipliers (e^{−β}-scaled, :func:`.basis.scaled_multipliers`) up
  to the degree past which they are below round-off (:func:`.basis.degree`), or L.
- :class:`ZonalQuadrature` (the reference it is tested against): φ and φ′ by the Gauss rule of the grid's own
  rings against the ring kernel — the average of e^{β⟨x,y⟩} over the ring of y,

      k(u, v) = e^{βuv} ₀F₁(; (d − 1)/2; β²(1 − u²)(1 − v²)/4)

  (d = 2: e^{βuv} cosh(β√(1−u²)√(1−v²)), the two points of S⁰) — with no Funk–Hecke multiplier and no expansion
  of the kernel; O(L²) special-function evaluations per right-hand side.
"""

from __future__ import annotations

import numpy as np
from scipy.special import hyp0f1

from ...core.numerics import check_usa_beta
from ..gegenbauer import degree, gauss, scaled_multipliers, orthonormal

__all__ = ["ZonalSpectral", "ZonalQuadrature", "dealiased_nodes"]


def dealiased_nodes(lmax: int) -> int:
    """M_d = ⌈3(lmax + 1)/2⌉: Gauss nodes on which products of degree-lmax functions are formed."""
    return -(-3 * (lmax + 1) // 2)


def _refuse_drift(drift):
    if drift is not None:
        raise ValueError("the zonal domain takes attention alone: a feed-forward block's field W σ(Ax + b) is not "
                         "zonal in general (solve the Transformer on S¹ or S², or as particles).")


class _ZonalRate:
    """The dealiased rule, the divergence's analysis and the coefficient stages the strategies share."""

    strategy: str
    coefficient_stages = True

    def __init__(self, grid, beta: float, c: float, normalized: bool):
        check_usa_beta(beta, normalized, f"S^{grid.d - 1}")
        self.grid, self.d, self.L = grid, grid.d, grid.lmax
        self.beta, self.c, self.normalized = float(beta), float(c), bool(normalized)
        self.Md = dealiased_nodes(self.L)
        self.u, w = gauss(self.d, self.Md)  # σ̄-weights
        self.sin2 = 1.0 - self.u * self.u
        self.sin = np.sqrt(self.sin2)
        P, P1 = orthonormal(self.d, self.L, self.u, derivatives=1, normalized=True)
        self.P = P  # (Md, L + 1): c̄ → values at the dealiased nodes
        self.G = (P1 * (w * self.sin2)[:, None]).T  # (L + 1, Md): flux ρψ′ at the nodes → ∂_t c̄
        self.laplacian = np.array(grid.basis.eigenvalues)  # Δ on c̄ (the noise's decay, −D l(l + d − 2))
        self._usa = None if normalized else self.c * np.exp(self.beta) * grid.basis.area

    # ---- coefficients (the fixed steps' stages)
    def coefficients(self, values):
        return self.grid.coefficients(values)

    def values(self, coefficients):
        return self.grid.from_coefficients(coefficients)

    def coefficient_rate_and_speeds(self, c):
        rho = self.P @ c
        psi1, psi2 = self.potential(c)
        rate = self.G @ (rho * psi1)
        rate[0] = 0.0
        return (rate,) + self._speeds(psi1, psi2)

    def coefficient_speeds(self, c):
        return self._speeds(*self.potential(c))

    def _speeds(self, psi1, psi2):
        """(max |θ̇|, max |∂_θ θ̇|) at the dealiased nodes, θ̇ = −ψ′ sin θ, ∂_θ θ̇ = ψ″ sin²θ − ψ′ cos θ."""
        speed = np.max(np.abs(psi1) * self.sin)
        strain = np.max(np.abs(psi2 * self.sin2 - psi1 * self.u))
        return float(speed), float(strain)

    # ---- values (the adaptive methods)
    def rate_and_speeds(self, values):
        rate, speed, strain = self.coefficient_rate_and_speeds(self.coefficients(values))
        return self.values(rate), speed, strain

    def rate(self, values):
        return self.rate_and_speeds(values)[0]

    def speeds(self, values):
        return self.coefficient_speeds(self.coefficients(values))

    def polar_velocity(self, values):
        """θ̇ at the dealiased nodes (polar angles ``arccos(self.u)``)."""
        return -self.potential(self.coefficients(values))[0] * self.sin


class ZonalSpectral(_ZonalRate):
    """ψ′ and ψ″ from the Funk–Hecke multipliers (module docstring).

    Parameters
    ----------
    grid : ZonalGrid
    beta : float
        Effective inverse temperature βqk >= 0.
    c : float
        V = cI.
    normalized : bool
        SA (True) or USA (False).
    drift : None
        Refused otherwise (a feed-forward block is not zonal).
    """

    strategy = "spectral"

    def __init__(self, grid, beta: float, c: float, normalized: bool, drift=None):
        _refuse_drift(drift)
        super().__init__(grid, beta, c, normalized)
        K = min(self.L, degree(self.d, self.beta))
        self.K = K
        m = scaled_multipliers(self.d, K, self.beta)  # e^{−β} λ_l / |S|
        self.m = m
        self.n = np.zeros(K + 1)  # e^{−β} λ_l / (β|S|), the β → 0 limit 1/d at l = 1
        if self.beta == 0.0:
            self.n[1] = 1.0 / self.d
        else:
            self.n[1:] = m[1:] / self.beta
        self.PK = self.P[:, : K + 1]
        _, P1, P2 = orthonormal(self.d, K, self.u, derivatives=2, normalized=True)
        self.P1K, self.P2K = P1, P2

    def potential(self, c):
        """(ψ′, ψ″) at the dealiased nodes from the coefficients c̄."""
        ck = c[: self.K + 1]
        num, num2 = self.P1K @ (self.n * ck), self.P2K @ (self.n * ck)  # φ′/β, φ″/β (scaled)
        if self.normalized:
            den = self.PK @ (self.m * ck)  # φ (scaled)
            ratio = num / den
            return self.c * ratio, self.c * (num2 / den - self.beta * ratio * ratio)
        return self._usa * num, self._usa * num2


class ZonalQuadrature(_ZonalRate):
    """ψ′ from the ring kernel by quadrature over the grid's rings (module docstring): the reference of
    :class:`ZonalSpectral`. The strain is read from θ̇ across neighbouring dealiased nodes."""

    strategy = "quadrature"

    def __init__(self, grid, beta: float, c: float, normalized: bool, drift=None):
        _refuse_drift(drift)
        super().__init__(grid, beta, c, normalized)
        d, beta = self.d, self.beta
        v, s_v = grid.basis.u, np.sqrt(1.0 - grid.basis.u ** 2)
        u, s_u = self.u[:, None], self.sin[:, None]
        b = 0.5 * (d - 1)
        z = 0.25 * beta * beta * (s_u * s_v) ** 2
        scale = np.exp(beta * (u * v - 1.0))  # e^{−β} e^{βuv}
        F0, F1 = hyp0f1(b, z), hyp0f1(b + 1.0, z) / b
        self.kernel = scale * F0  # e^{−β} k(u_k, v_j), (Md, L + 1)
        # ∂_u k = βv k + e^{βuv} ₀F₁′ · β²(−2u)(1 − v²)/4, over β (the velocity's (1/β)φ′)
        self.dkernel = scale * (v * F0 - 0.5 * beta * u * (s_v ** 2) * F1)
        self.w = grid.basis.mean_weights  # σ̄-weights of the rings
        self.theta = np.arccos(np.clip(self.u, -1.0, 1.0))

    def potential(self, c):
        f = self.grid.from_coefficients(c) * self.w  # ring masses / |S|
        num = self.dkernel @ f  # (1/β)φ′ / |S| (scaled)
        psi1 = self.c * num / (self.kernel @ f) if self.normalized else self._usa * num
        return psi1, None

    def _speeds(self, psi1, psi2):
        v = -psi1 * self.sin
        strain = np.max(np.abs(np.diff(v)) / np.diff(self.theta)) if v.size > 1 else 0.0
        return float(np.max(np.abs(v))), float(strain)
