r"""The zonal basis of S^{d-1}, any d: functions f(⟨x, e⟩), their Gauss nodes, the Funk–Hecke multipliers.

MATH.md §9.
Shared by the domains that have zonal functions (the circle d = 2, S² d = 3, the zonal sphere of any d): the
stationary states are discretised on it, the zonal grid and its rings are built on it.

With u = ⟨x, e⟩ the surface measure of S^{d-1} pushes forward to

    dσ(u) = |S^{d−2}| (1 − u²)^a du,   a = (d − 3)/2,

so a zonal function is a function of u ∈ [−1, 1] in L²(dσ). Its orthonormal polynomials p_l (degree l) are the
normalised Jacobi polynomials P_l^{(a,a)} — the Gegenbauer polynomials C_l^{((d−2)/2)}, which are degenerate at
d = 2 (C_l^{(0)} ≡ 0); the Jacobi form holds for every d >= 2 (d = 2: Chebyshev T_l, d = 3: Legendre P_l) — made
orthonormal for dσ itself, so ∫_{S^{d-1}} p_l(⟨x,e⟩) p_k(⟨x,e⟩) dσ(x) = δ_lk. They follow the three-term recurrence

    u p_l = b_{l+1} p_{l+1} + b_l p_{l−1},   p_0 = |S^{d−1}|^{−1/2},
    b_1² = 1/d,   b_l² = l(l + d − 3)/((2l + d − 2)(2l + d − 4))  (l >= 2),

the monic Jacobi coefficients (independent of the weight's total mass), evaluated here with their derivatives in
the same sweep: stable for every d and l (no Gamma-function normalisations). Each p_l(⟨x, e⟩) is a spherical
harmonic of degree l: Δ_S p_l = −l(l + d − 2) p_l.

Gauss nodes: the eigenvalues of the Jacobi matrix (Golub–Welsch), polished by Newton's method on p_M, and the
Christoffel weights w_j = 1/Σ_{l<M} p_l(u_j)², so that Σ_j w_j g(u_j) = ∫ g dσ exactly for polynomials of degree
<= 2M − 1 (scipy's ``roots_jacobi`` loses digits for large a: 3e-14 of the total at d = 128, NaN at d = 1024,
M = 513). At d = 2 they are the midpoints θ_j = π(j + ½)/M in the angle, at d = 3 the Gauss–Legendre nodes.

Funk–Hecke (MATH.md §9): ∫ e^{β⟨x,y⟩} p_l(⟨y,e⟩) dσ(y) = λ_l p_l(⟨x,e⟩) with

    λ_l = (2π)^{d/2} I_{l+ν}(β)/β^ν,   ν = d/2 − 1,

(d = 2: 2π I_l; d = 3: 4π i_l). They are computed as λ_l = |S^{d−1}| m_l with the normalised multipliers
m_l = Γ(ν + 1)(2/β)^ν I_{ν+l}(β) (m_0 = ₀F₁(; ν + 1; β²/4) ≥ 1, = 1 at β = 0), scaled by e^{−β} (≤ 1 for every
β): m_0 from ``ive`` where it is a normal number, else from its series (large ν, small β), and the ratios
I_{k+1}/I_k by Miller's backward recurrence I_{k−1}/I_k = 2k/β + I_{k+1}/I_k (the ratio of the minimal solution:
stable downwards). No overflow or underflow for any d; the products underflow to 0 where λ_l is below 1e-308 λ_0.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.linalg import eigh_tridiagonal
from scipy.special import gammaln, hyp0f1, ive

__all__ = ["log_sphere_area", "sphere_area", "harmonic_dimension", "recurrence", "orthonormal", "gauss",
           "bessel_ratio", "scaled_multipliers", "multipliers", "degree", "ZonalBasis"]


def log_sphere_area(k: int) -> float:
    """log |S^k| = log(2π^{(k+1)/2}/Γ((k+1)/2)), the surface area of the unit sphere S^k ⊂ R^{k+1} (k >= 0;
    |S^0| = 2, the two points ±1)."""
    return float(np.log(2.0) + 0.5 * (k + 1) * np.log(np.pi) - gammaln(0.5 * (k + 1)))


def sphere_area(k: int) -> float:
    """|S^k| (``OverflowError``-free: it underflows to 0.0 only past k ≈ 1000, where its log is the usable form)."""
    return float(np.exp(log_sphere_area(k)))


def harmonic_dimension(d: int, l) -> np.ndarray:
    """N(d, l), the dimension of the spherical harmonics of degree l on S^{d-1}: 1 at l = 0, 2 for l >= 1 on the
    circle, (2l + d − 2)/(l + d − 2)·C(l + d − 2, l) otherwise; as floats (they exceed int64 quickly)."""
    l = np.asarray(l, dtype=float)
    if d == 2:
        return np.where(l == 0, 1.0, 2.0)
    with np.errstate(over="ignore"):
        log_c = gammaln(l + d - 1) - gammaln(l + 1) - gammaln(d - 1)
        return np.where(l == 0, 1.0, (2 * l + d - 2) / (l + d - 2) * np.exp(log_c))


def _log_harmonic_dimension(d: int, l: np.ndarray) -> np.ndarray:
    l = np.asarray(l, dtype=float)
    if d == 2:
        return np.where(l == 0, 0.0, np.log(2.0))
    return np.where(l == 0, 0.0, np.log((2 * l + d - 2) / (l + d - 2)) + gammaln(l + d - 1) - gammaln(l + 1)
                    - gammaln(d - 1))


def recurrence(d: int, L: int) -> np.ndarray:
    """b_0..b_L of the orthonormal recurrence u p_l = b_{l+1} p_{l+1} + b_l p_{l−1} (b_0 = 0; module docstring)."""
    l = np.arange(L + 1, dtype=float)
    b2 = np.zeros(L + 1)
    if L >= 1:
        b2[1] = 1.0 / d
    if L >= 2:
        k = l[2:]
        b2[2:] = k * (k + d - 3.0) / ((2.0 * k + d - 2.0) * (2.0 * k + d - 4.0))
    return np.sqrt(b2)


def orthonormal(d: int, L: int, u, derivatives: int = 0, *, normalized: bool = False):
    r"""p_l(u) for l = 0..L (and their first ``derivatives`` u-derivatives, 0 to 2), shape ``u.shape + (L + 1,)``
    each: a tuple (p, p′, p″)[: derivatives + 1], or the array p where ``derivatives`` = 0.

    ``normalized``: the polynomials p̄_l = |S^{d−1}|^{1/2} p_l, orthonormal for the normalised surface measure
    σ̄ = σ/|S^{d−1}| (p̄_0 = 1, p̄_l(1) = N(d, l)^{1/2}): free of the factor |S^{d−1}|^{−1/2}, which overflows
    past d ≈ 700."""
    u = np.asarray(u, dtype=float)
    b = recurrence(d, max(L, 1))
    out = [np.empty(u.shape + (L + 1,)) for _ in range(derivatives + 1)]
    p0 = 1.0 if normalized else np.exp(-0.5 * log_sphere_area(d - 1))
    out[0][..., 0] = p0
    for o in out[1:]:
        o[..., 0] = 0.0
    if L >= 1:
        out[0][..., 1] = u * p0 / b[1]
        if derivatives >= 1:
            out[1][..., 1] = p0 / b[1]
        if derivatives >= 2:
            out[2][..., 1] = 0.0
    for l in range(1, L):
        p, q = out[0][..., l], out[0][..., l - 1]
        out[0][..., l + 1] = (u * p - b[l] * q) / b[l + 1]
        if derivatives >= 1:
            dp, dq = out[1][..., l], out[1][..., l - 1]
            out[1][..., l + 1] = (p + u * dp - b[l] * dq) / b[l + 1]
        if derivatives >= 2:
            out[2][..., l + 1] = (2.0 * out[1][..., l] + u * out[2][..., l] - b[l] * out[2][..., l - 1]) / b[l + 1]
    return out[0] if derivatives == 0 else tuple(out)


def _top(d: int, M: int, u):
    """(p̄_M(u), p̄_M′(u)) by the recurrence (Newton's method on the nodes)."""
    b = recurrence(d, M)
    q, p = np.zeros_like(u), np.ones_like(u)
    dq, dp = np.zeros_like(u), np.zeros_like(u)
    for l in range(M):
        nxt = (u * p - b[l] * q) / b[l + 1]
        dnxt = (p + u * dp - b[l] * dq) / b[l + 1]
        q, p, dq, dp = p, nxt, dp, dnxt
    return p, dp


@lru_cache(maxsize=64)
def gauss(d: int, M: int) -> tuple[np.ndarray, np.ndarray]:
    """The M-point Gauss rule of the normalised measure dσ̄(u) = dσ(u)/|S^{d−1}| (module docstring): nodes u_j in
    decreasing order (θ_j = arccos u_j increasing) and weights summing to 1 (times |S^{d−1}| for dσ); read-only
    arrays."""
    if M < 1:
        raise ValueError(f"a Gauss rule needs M >= 1 nodes, got {M}.")
    b = recurrence(d, M)[1:M]
    u = np.sort(eigh_tridiagonal(np.zeros(M), b, eigvals_only=True))[::-1].copy() if M > 1 else np.zeros(1)
    for _ in range(3):  # Newton on p_M: the eigenvalues are within a few ε of the roots already
        p, dp = _top(d, M, u)
        u = u - p / dp
    u = 0.5 * (u - u[::-1])  # symmetric to round-off: u_{M-1-j} = −u_j
    w = 1.0 / np.sum(orthonormal(d, M - 1, u, normalized=True) ** 2, axis=-1)
    w = 0.5 * (w + w[::-1])
    for a in (u, w):
        a.setflags(write=False)
    return u, w


def _log_m0(d: int, beta: float) -> float:
    """log(e^{−β} m_0(β)), m_0 = Γ(ν + 1)(2/β)^ν I_ν(β) = ₀F₁(; ν + 1; β²/4), ν = d/2 − 1."""
    nu = 0.5 * d - 1.0
    if beta == 0.0:
        return 0.0
    i = float(ive(nu, beta))
    if np.isfinite(i) and i > 1e-290:
        return float(gammaln(nu + 1.0) + nu * np.log(2.0 / beta) + np.log(i))
    return float(np.log(hyp0f1(nu + 1.0, 0.25 * beta * beta)) - beta)  # large ν ≫ β: the series is near 1


def _ratios(d: int, L: int, beta: float) -> np.ndarray:
    """I_{ν+l+1}(β)/I_{ν+l}(β) for l = 0..L−1 by Miller's backward recurrence (module docstring)."""
    nu = 0.5 * d - 1.0
    top = L + 40 + int(2.0 * beta) + int(np.sqrt(max(nu, 0.0)))
    r = 0.0
    out = np.empty(max(L, 0))
    for k in range(top, 0, -1):  # r = I_{ν+k}/I_{ν+k−1} after the step
        r = beta / (2.0 * (nu + k) + beta * r)
        if k - 1 < L:
            out[k - 1] = r
    return out


def bessel_ratio(nu: float, beta: float) -> float:
    """I_{ν+1}(β)/I_ν(β) for β > 0 by Miller's backward recurrence (module docstring): no under- or overflow for any
    order (``ive`` underflows for ν ≫ β)."""
    r = 0.0
    for k in range(40 + int(2.0 * beta) + int(np.sqrt(max(nu, 0.0))), 0, -1):
        r = beta / (2.0 * (nu + k) + beta * r)
    return float(r)


def scaled_multipliers(d: int, L: int, beta: float) -> np.ndarray:
    r"""e^{−β} m_l = e^{−β} λ_l/|S^{d−1}| for l = 0..L (module docstring): 1 at l = 0 and β = 0, in (0, 1] for
    every β; λ_l ρ_0 with ρ_0 = 1/|S^{d−1}| the uniform law, which is what the linear rates read."""
    out = np.zeros(L + 1)
    if beta == 0.0:
        out[0] = 1.0
        return out
    out[0] = np.exp(_log_m0(d, beta))
    if L >= 1:
        out[1:] = out[0] * np.cumprod(_ratios(d, L, beta))
    return out


def multipliers(d: int, L: int, beta: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Scaled Funk–Hecke multipliers of e^{β⟨x,y⟩} on S^{d-1}, l = 0..L: ``D_l = e^{−β} λ_l`` and
    ``N_l = e^{−β} λ_l/β`` (N_0 = 0), λ_l = (2π)^{d/2} I_{l+d/2−1}(β)/β^{d/2−1} (MATH.md §9); at β = 0,
    D = |S^{d−1}| δ_{l0} and N = (|S^{d−1}|/d) δ_{l1} (the limit of λ_1/β). d = 2 and 3 give the circle's
    2π e^{−β}I_l and S²'s 4π e^{−β}i_l."""
    area = sphere_area(d - 1)
    D = area * scaled_multipliers(d, L, beta)
    N = np.zeros(L + 1)
    if beta == 0.0:
        if L >= 1:
            N[1] = area / d
    else:
        N[1:] = D[1:] / beta
    return D, N


def degree(d: int, beta: float, tol: float = 1e-17) -> int:
    r"""The degree K past which the kernel's terms are below ``tol`` relative, for any probability measure:
    Σ_{l>K} (m_l/m_0) N(d, l)(1 + l(l + d − 2))² <= tol, with N(d, l) the dimension of degree-l harmonics
    (|p_l| <= p_l(1) = (N(d, l)/|S^{d−1}|)^{1/2}, |p_l′| <= p_l(1) l(l + d − 2)/(d − 1)): the truncation of K_β*μ and
    of its first two derivatives. K >= 1."""
    K = 8
    while True:
        m = scaled_multipliers(d, K + 64, beta)
        l = np.arange(m.size, dtype=float)
        with np.errstate(divide="ignore"):
            logt = np.log(m / m[0]) + _log_harmonic_dimension(d, l) + 2.0 * np.log1p(l * (l + d - 2.0))
        t = np.exp(np.where(np.isfinite(logt), logt, -np.inf))
        tail = np.cumsum(t[::-1])[::-1]  # tail[k] = Σ_{l>=k}
        ok = np.flatnonzero(tail[1:] <= tol)
        if ok.size and ok[0] < m.size - 2 and t[-1] <= tol * 1e-3:
            return int(max(1, ok[0]))
        K *= 2
        if K > 1 << 16:
            raise ValueError(f"the kernel e^(β⟨x,y⟩) needs more than 65536 zonal degrees on S^{d - 1} at β = {beta:g}.")


class ZonalBasis:
    """The zonal basis with an M-point Gauss rule (module docstring): what the grids, the stationary solver and the
    rings of the Lagrangian measure share.

    Functions are expanded in p̄_l = |S^{d−1}|^{1/2} p_l, orthonormal for the normalised surface measure
    σ̄ = σ/|S^{d−1}|: f = Σ_l c̄_l p̄_l with c̄_l = ∫ f p̄_l dσ̄ (c̄_0 is the mean of f over the sphere, 1/|S^{d−1}| for
    the uniform law of mass 1; c̄_l = |S^{d−1}|^{−1/2} c_l for the coefficients c_l on p_l). Free of |S^{d−1}|, which
    leaves float64 in high dimension, the tables stay of order one.

    Parameters
    ----------
    d : int >= 2
        S^{d-1} ⊂ R^d.
    M : int >= 1
        Gauss nodes: the projection of a degree-(M − 1) function onto p̄_0..p̄_{M−1} is exact.

    Attributes
    ----------
    d, M : int
    u : ndarray, shape (M,)
        Nodes u_j = ⟨x, e⟩, decreasing (the polar angles θ_j = arccos u_j increase).
    theta : ndarray, shape (M,)
    mean_weights : ndarray, shape (M,)
        ∫ f dσ̄ = Σ_j w̄_j f(u_j) for polynomials f of degree <= 2M − 1 (they sum to 1).
    weights : ndarray, shape (M,)
        |S^{d−1}| w̄_j: ∫_{S^{d-1}} f(⟨x, e⟩) dσ(x) = Σ_j w_j f(u_j).
    P : ndarray, shape (M, M)
        p̄_l(u_j) (nodes × degrees).
    analysis : ndarray, shape (M, M)
        Values at the nodes → coefficients c̄_l (exact for degree <= M − 1): (P · w̄)ᵀ.
    area, log_area : float
        |S^{d−1}| and its logarithm.
    eigenvalues : ndarray, shape (M,)
        −l(l + d − 2): the Laplace–Beltrami operator on the coefficients.
    """

    def __init__(self, d: int, M: int):
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 2:
            raise ValueError(f"`d` must be an integer >= 2 (S^(d-1) ⊂ R^d), got {d!r}.")
        if isinstance(M, bool) or not isinstance(M, (int, np.integer)) or M < 1:
            raise ValueError(f"`M` must be an integer >= 1, got {M!r}.")
        self.d, self.M = int(d), int(M)
        self.u, self.mean_weights = gauss(self.d, self.M)
        self.theta = np.arccos(np.clip(self.u, -1.0, 1.0))
        self.log_area = log_sphere_area(self.d - 1)
        self.area = float(np.exp(self.log_area))
        self.weights = self.area * self.mean_weights
        self.P = orthonormal(self.d, self.M - 1, self.u, normalized=True)
        self.analysis = (self.P * self.mean_weights[:, None]).T
        l = np.arange(self.M, dtype=float)
        self.eigenvalues = -l * (l + self.d - 2.0)
        for a in (self.theta, self.weights, self.P, self.analysis, self.eigenvalues):
            a.setflags(write=False)

    def coefficients(self, values) -> np.ndarray:
        """c̄_l = ∫ f p̄_l dσ̄, l = 0..M−1, of the function with these nodal values (last axis)."""
        return np.asarray(values) @ self.analysis.T

    def values(self, coefficients) -> np.ndarray:
        """Nodal values of Σ_l c̄_l p̄_l (last axis; fewer coefficients than M are zero-padded)."""
        c = np.asarray(coefficients)
        return c @ self.P[:, : c.shape[-1]].T

    def evaluate(self, coefficients, u) -> np.ndarray:
        """Σ_l c̄_l p̄_l(u) at any u ∈ [−1, 1] (shape of u)."""
        c = np.asarray(coefficients, dtype=float)
        return orthonormal(self.d, c.size - 1, np.asarray(u, dtype=float), normalized=True) @ c

    def __repr__(self) -> str:
        return f"ZonalBasis(d={self.d}, M={self.M})"


def __getattr__(name):
    if name == "normalized_multipliers":  # the old spelling, in one line naming the new one
        raise AttributeError("gegenbauer.normalized_multipliers is now gegenbauer.scaled_multipliers (e^{−β}λ_l).")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
