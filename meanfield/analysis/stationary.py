r"""Noisy self-attention on zonal domains: stationary states, critical noise, bifurcation branch (docs/MATH.md §7, §9).

For zonal models (Q = qI, K = kI, V = cI; β the effective βqk) the field is a gradient, X = (c/β)∇φ (USA) or
X = (c/β)∇log φ (SA) with φ = K_β*ρ = ∫e^{β⟨x,y⟩}ρ(y)dy, so a zero-flux stationary state of
∂_t ρ + div(ρX[ρ]) = DΔρ, ρX = D∇ρ, satisfies the self-consistency equation

    USA: ρ ∝ exp(cφ[ρ]/(βD)),     SA: ρ ∝ φ[ρ]^{c/(βD)}.

The uniform law ρ_0 = 1/|S^{d−1}| always solves it. Linearised about it, the zonal mode of degree l grows at the rate
(:func:`linear_rates`)

    USA: σ_l = l(l + d − 2)(c λ_l ρ_0/β − D),      SA: σ_l = l(l + d − 2)(c λ_l/(β λ_0) − D),

with the Funk–Hecke multipliers λ_l = (2π)^{d/2} I_{l+d/2−1}(β)/β^{d/2−1} (2πI_l on the circle, 4πi_l on S²;
MATH.md §9). They decrease in l, so the uniform law loses stability at the critical noise (:func:`critical_noise`)

    D_c = c 2^{d/2−1} Γ(d/2) I_{d/2}(β)/β^{d/2}  (USA),      D_c = c I_{d/2}(β)/(β I_{d/2−1}(β))  (SA).

The branch of single-cluster states bifurcating there is axisymmetric, ρ(x) = f(⟨x, e⟩): :func:`branch` follows it
in the order parameter r = |∫x dρ| (monotone along it where the transition is continuous or mildly discontinuous,
so the continuation goes round folds in D without pseudo-arclength; far above β_* the branch can turn back in r as
well, which is refused with that reason), from the uniform law, each state from the last two by a secant predictor.

Moments. The self-consistency equation is solved on the moments it depends on, not on f: with the zonal basis p̄_l
of the domain (``Domain.zonal_basis``, :mod:`meanfield.domains.gegenbauer`: orthonormal for the normalised surface
measure, the same for S¹, S² and the zonal S^{d−1} of any d), φ = Σ_l λ_l ĝ_l p̄_l/|S^{d−1}| involves only the
moments ĝ_l = ∫ p̄_l dρ of the degrees l <= K where the multipliers are above round-off (K = 18 at β = 1 on S¹, 24 on
S^{127}), so ρ = e^{h(ĝ, D)}/Z exactly and the equation is the K-dimensional fixed point G(ĝ, D) = ĝ,
G_l = ∫ p̄_l e^{h} dσ/∫ e^{h} dσ (with r fixed, ĝ_1 = √d r is given and D is the unknown in its place). Newton's
method on it has the covariances Cov_ρ(p̄_l, ∂h/∂ĝ_k) for its Jacobian; the integrals are Gauss–Legendre quadratures
in the polar angle over where the mass is, their nodes doubled until the moments no longer change. The state is
evaluated from its potential at any point (:class:`AxisymmetricState`): no expansion of f itself, which in high
dimension spans hundreds of decades between the cluster and the far side (f ~ e^{κ⟨x,e⟩}, κ ≈ (d − 1)/(2(1 − r))) and
whose Gauss coefficients carry that round-off. :func:`stationary_states` picks the states on the branch at a given D;
:func:`stability` takes the spectrum of the linearised continuity equation (its right-hand side on a grid, by central
differences, block by symmetry) to say which are stable. For USA on S^{d-1} the transition is continuous for β below
β_* (I_{d/2+1}(β_*)/I_{d/2}(β_*) = 1/d: 2.4469 on S¹, 1.8162 on S², 1.0157 on S^{127}; :func:`critical_beta`) and
discontinuous above it, where the branch leaves D_c towards larger D and folds back (Mun & Rosenzweig 2026): a window
of D above D_c with both the stable uniform law and a stable clustered state.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.optimize import brentq

from ..core import checks
from ..density import Density
from ..domains.gegenbauer import bessel_ratio, degree, log_sphere_area, multipliers, scaled_multipliers, orthonormal
from ..domains.zonal import zonal_refusal

__all__ = ["critical_noise", "linear_rates", "most_unstable_degree", "critical_beta", "transition_beta", "bifurcation",
           "AxisymmetricState", "Branch", "branch", "stationary_state", "stationary_states", "stability", "Stability",
           "symmetry_class"]


def _as_domain(domain):
    """A Domain, or the name of a registered one ("circle", "sphere"; ValueError naming the registered ones)."""
    from ..domains import Domain, get

    if not isinstance(domain, (Domain, str)):
        raise TypeError(f"`domain` must be a Domain or a domain's name, got {type(domain).__name__}.")
    return get(domain)


def _zonal(model, domain):
    """(β, c, normalized) of a zonal model on a domain with zonal functions; ValueError otherwise."""
    why = zonal_refusal(model)
    if why is not None:
        raise ValueError(f"stationary states are derived for zonal models, where the field is a gradient: {why}.")
    if _dimension(domain) is None:
        raise ValueError(f"stationary states are computed on domains with zonal functions (the circle, S², the zonal "
                         f"S^(d-1)), not on the {domain.name}.")
    z = model.zonal
    if z.beta < 0:  # the multipliers here are β > 0's (Miller's ratios, e^{-β} scaling): a NaN otherwise, not a rate
        raise ValueError(f"`model` has β = {z.beta:g} < 0 (repulsive attention, MATH.md §13): the linear rates, "
                         f"stationary states and critical noise here are derived for β >= 0; on the circle the rates "
                         f"at β < 0 are k²I_k(β)/(βI_0(β)) − Dk² (SA), not yet computed by this module.")
    return float(z.beta), float(z.c), bool(model.normalized)


def _dimension(domain) -> int | None:
    """d of the domain's zonal functions on S^{d-1} (None where it has none)."""
    basis = domain.zonal_basis(1)
    return None if basis is None else basis.d


def _multipliers(domain, K: int, beta: float):
    """(D_k, N_k) = (e^{-β}λ_k, e^{-β}λ_k/β) of the kernel on the domain's zonal basis, k = 0..K (N_0 = 0)."""
    return multipliers(_dimension(domain), K, beta)


def linear_rates(model, domain, degrees, noise: float | None = None) -> np.ndarray:
    r"""The growth rates σ_l of the zonal modes of degree l about the uniform law (module docstring; docs/MATH.md §7,
    §9): σ_l = l(l + d − 2)(c λ_l ρ_0/β − D) (USA), l(l + d − 2)(c λ_l/(β λ_0) − D) (SA).

    Parameters
    ----------
    model : SelfAttention
        Zonal (Q = qI, K = kI, V = cI).
    domain : Domain
        The circle, S², or a zonal sphere S^{d-1} (``meanfield.domains.zonal_domain(d)``).
    degrees : array_like of int >= 1
    noise : float, optional
        D (default ``model.noise``).
    """
    domain = _as_domain(domain)
    beta, c, normalized = _zonal(model, domain)
    D = model.noise if noise is None else checks.noise(noise)
    k = np.asarray(degrees)
    if np.any(k < 1):
        raise ValueError(f"`degrees` must be >= 1 (degree 0 is the mass, conserved), got {degrees!r}.")
    Dk, Nk = _multipliers(domain, int(np.max(k)), beta)
    # λ_k ρ_0/(β s): SA e^{-β}λ_k/(β e^{-β}λ_0) = N_k/D_0; USA λ_k/(β|S|) = e^β N_k/|S|
    ratio = Nk[k] / (Dk[0] if normalized else domain.volume * np.exp(-beta))
    return k * (k + _dimension(domain) - 2) * (c * ratio - D)


def critical_noise(model, domain, degree: int = 1) -> float:
    """D_l, the noise below which the uniform law is linearly unstable in the zonal degree l (``degree``): the zero of
    σ_l (module docstring), c λ_l ρ_0/β (USA), c λ_l/(β λ_0) (SA); l = 1 is D_c, the largest (the λ_l decrease),
    where the uniform law loses stability and the single-cluster branch leaves it."""
    domain = _as_domain(domain)
    beta, c, normalized = _zonal(model, domain)
    l = _degree(degree)
    Dk, Nk = _multipliers(domain, l, beta)
    return float(c * Nk[l] / (Dk[0] if normalized else domain.volume * np.exp(-beta)))


def _degree(degree) -> int:
    if isinstance(degree, bool) or int(degree) != degree or degree < 1:
        raise ValueError(f"`degree` must be an integer >= 1 (degree 0 is the mass, conserved), got {degree!r}.")
    return int(degree)


def most_unstable_degree(model, domain, noise: float | None = None, max_degree: int = 4096) -> int:
    r"""ℓ* = argmax_l σ_l, the zonal degree that grows fastest from the uniform law (without noise
    argmax_l l(l + d − 2) I_{l+d/2−1}(β): MATH.md §9); ``ValueError`` where no degree grows (σ_l <= 0 for all l)."""
    domain = _as_domain(domain)
    _zonal(model, domain)
    L = 8
    while True:
        rates = linear_rates(model, domain, np.arange(1, L + 1), noise)
        best = int(np.argmax(rates))
        if best < L // 2 or L >= max_degree:
            break
        L *= 2
    if not rates[best] > 0:
        raise ValueError(f"no zonal degree grows from the uniform law for {model!r} (largest rate {rates[best]:.6g} "
                         f"at degree {best + 1}): it is stable.")
    return best + 1


def critical_beta(d: int) -> float:
    r"""β_*(d), where USA's transition on S^{d-1} turns from continuous to discontinuous: I_{d/2+1}(β_*)/I_{d/2}(β_*)
    = 1/d (Mun & Rosenzweig 2026; MATH.md §9), by Brent's method on the ratio of scaled Bessel functions. The branch
    locates it too: :class:`Branch`'s ``continuous`` changes there."""
    if isinstance(d, bool) or int(d) != d or d < 2:
        raise ValueError(f"`d` must be an integer >= 2, got {d!r}.")
    g = lambda b: bessel_ratio(d / 2, b) - 1.0 / d  # increasing in β from 0
    hi = 1.0
    while g(hi) < 0:
        hi *= 2.0
    return float(brentq(g, 1e-8, hi, xtol=1e-15, rtol=1e-15))


def transition_beta(domain, c: float = 1.0, r=(0.01, 0.02), bracket=None) -> float:
    r"""β_* located from the branches alone (no Bessel-ratio formula): for USA the branch leaves D_c as
    D(r) − D_c = a(β) r² + b(β) r⁴ + O(r⁶), towards smaller D (continuous) where a < 0 and larger D (discontinuous)
    where a > 0; a(β) is extrapolated from the branch at two small r (Richardson's elimination of b) and its zero
    found by Brent's method. Agrees with :func:`critical_beta` to ~1e-8 (tested). ``bracket`` (β_lo, β_hi) defaults
    to critical_beta(d) × (0.7, 1.3)."""
    domain = _as_domain(domain)
    from ..models import SelfAttention

    d = _dimension(domain)
    if d is None:
        raise ValueError(f"β_* is located on domains with zonal functions, not on the {domain.name}.")
    r1, r2 = (float(v) for v in r)

    def a(beta):
        model = SelfAttention(beta, V=c * np.eye(d), normalized=False)
        b = branch(model, domain, [r1, r2])
        d1, d2 = (b.noise - b.critical) / np.array([r1, r2]) ** 2
        return (d1 * r2 ** 2 - d2 * r1 ** 2) / (r2 ** 2 - r1 ** 2) / b.critical

    lo, hi = bracket if bracket is not None else (0.7 * critical_beta(d), 1.3 * critical_beta(d))
    return float(brentq(a, lo, hi, xtol=1e-12, rtol=1e-12))


# ---------------------------------------------------------------------- the self-consistency equation on moments
class _Kernel:
    """The self-consistency map on the kernel's moments (module docstring, "Moments").

    A zonal state is μ = f σ with f = e^{h}/Z and h fixed by the moments ĝ_l = ∫ p̄_l dμ, l = 1..K (ĝ_0 = 1):
    U = Σ_{l>=1} (e^{−β}m_l/β) ĝ_l p̄_l (the scaled (1/β)(K_β*μ − its mean)), and h = (c e^β/D) U (USA),
    (c/(βD)) log(1 + βU/m̃_0) (SA; (c/D) U/m̃_0 at β = 0), m̃_l = e^{−β}m_l the normalised multipliers
    (:func:`meanfield.domains.gegenbauer.scaled_multipliers`), K the degree past which they are below round-off.
    The map G(ĝ, D)_l = ∫ p̄_l e^{h} dσ / ∫ e^{h} dσ is evaluated by Gauss–Legendre quadrature in the polar angle over
    the interval where the law of the polar angle is within e^{−60} of its maximum (the rest holds < 1e-24 of the
    mass), with nodes doubled until the moments change by less than 1e-13 of their scales ∫|p̄_l| dμ; its Jacobian is the covariance
    ∂G_l/∂x = Cov_μ(p̄_l, ∂h/∂x).
    """

    def __init__(self, model, domain, order: int = 1):
        self.beta, self.c, self.normalized = _zonal(model, domain)
        self.d = _dimension(domain)
        self.order = int(order)
        self.K = max(2 * self.order, degree(self.d, self.beta))
        self.active = symmetry_class(self.d, self.order, self.K)  # the degrees the branch's states may hold
        m = scaled_multipliers(self.d, self.K, self.beta)
        self.m0 = m[0]
        self.n = np.zeros(self.K + 1)
        if self.beta == 0.0:
            self.n[1] = 1.0 / self.d
        else:
            self.n[1:] = m[1:] / self.beta
        self.usa = None if self.normalized else self.c * np.exp(self.beta)
        self.top = orthonormal(self.d, self.K, np.ones(1), normalized=True)[0]  # p̄_l(1) = N(d, l)^{1/2}
        self.grid = np.linspace(0.0, np.pi, 4097)  # where the mass is: within e^{-60} of the maximum
        with np.errstate(divide="ignore"):
            self.log_sin_grid = (self.d - 2) * np.log(np.sin(self.grid)) if self.d > 2 else np.zeros_like(self.grid)
        self.Pgrid = orthonormal(self.d, self.K, np.cos(self.grid), normalized=True)

    def potential(self, g, D, P):
        """h and ∂h/∂ĝ_l (l = 1..K) at the points whose basis table is ``P`` (points × degrees 0..K)."""
        U = P[:, 1:] @ (self.n[1:] * g[1:])
        if not self.normalized:
            return (self.usa / D) * U, (self.usa / D) * P[:, 1:] * self.n[1:]
        s = self.beta * U / self.m0
        if np.any(s <= -1.0):  # K_β*μ must stay positive: an iterate past the admissible states
            raise FloatingPointError("the kernel sum of an iterate is not positive")
        h = (self.c / D) * (np.log1p(s) / self.beta if self.beta else U / self.m0)
        dh = (self.c / (D * self.m0)) / (1.0 + s)[:, None] * P[:, 1:] * self.n[1:]
        return h, dh

    def _nodes(self, g, D, M):
        """Gauss–Legendre nodes θ_j over the mass's interval (class docstring), their basis table and log weights
        log(w_j sin^{d−2}θ_j)."""
        h, _ = self.potential(g, D, self.Pgrid)
        q = h + self.log_sin_grid
        top = np.max(q)
        inside = np.flatnonzero(q > top - 60.0)
        a = self.grid[max(inside[0] - 1, 0)]
        b = self.grid[min(inside[-1] + 1, self.grid.size - 1)]
        x, w = _legendre(M)
        theta = a + 0.5 * (b - a) * (x + 1.0)
        log_w = np.log(0.5 * (b - a) * w) + ((self.d - 2) * np.log(np.sin(theta)) if self.d > 2 else 0.0)
        return theta, orthonormal(self.d, self.K, np.cos(theta), normalized=True), log_w

    def moments(self, g, D, M, jacobian=False):
        """G(ĝ, D) on M nodes, log ∫ e^{h} dσ̄ and the moments' scales ∫ |p̄_l| dμ (what their round-off is
        relative to: p̄_l reaches N(d, l)^{1/2} at the poles), with (∂G/∂ĝ_{1..K}, ∂G/∂D) where asked."""
        theta, P, log_w = self._nodes(g, D, M)
        h, dh = self.potential(g, D, P)
        lw = log_w + h
        top = np.max(lw)
        mu = np.exp(lw - top)
        total = mu.sum()
        mu /= total
        G = mu @ P
        log_z = top + np.log(total) + log_sphere_area(self.d - 2) - log_sphere_area(self.d - 1)
        scale = np.maximum(mu @ np.abs(P), 1.0)
        if not jacobian:
            return G, log_z, scale
        Pc = P - G  # centred p̄_l
        dG = (Pc * mu[:, None]).T @ dh  # Cov(p̄_l, ∂h/∂ĝ_k), (K + 1) × K
        dGdD = (Pc * mu[:, None]).T @ (-h / D)
        return G, log_z, scale, dG, dGdD


@lru_cache(maxsize=16)
def _legendre(M: int):
    return np.polynomial.legendre.leggauss(M)


def _newton(kernel, g, D, r_target=None, tol=1e-14, maxiter=60):
    """(ĝ, D, log Z, residual) solving G(ĝ, D) = ĝ on the kernel's symmetry class (with the branch's order parameter
    r_l = ĝ_l/p̄_l(1) = r_target fixed and D free, where given; l = ``kernel.order``) by Newton's method, damped where a
    full step does not reduce the residual, on quadrature nodes doubled until the moments no longer change
    (:class:`_Kernel`). With r fixed, G depends on D only through the cluster (∂G/∂D = O(r)), so D is determined to
    round-off / r: its step is converged at max(tol, 100ε/r) relative. Where the steps stop falling quadratically
    below 1e3·tol (the moments' round-off, in high dimension), the iterate is taken as converged."""
    l, act = kernel.order, kernel.active
    d_tol = tol if r_target is None else max(tol, 100.0 * np.finfo(float).eps / abs(r_target))
    g = np.array(g, dtype=float)
    g[np.setdiff1d(np.arange(1, kernel.K + 1), act)] = 0.0  # outside the class: zero, and kept so
    if r_target is not None:
        g[l] = kernel.top[l] * r_target
    free_deg = act if r_target is None else act[act != l]
    M = 64
    for _ in range(7):  # node refinements, up to 4096
        G, _, scale, dG, dGdD = kernel.moments(g, D, M, jacobian=True)
        last = np.inf
        for _ in range(maxiter):
            F = G[act] - g[act]
            J = dG[np.ix_(act, free_deg - 1)] - (act[:, None] == free_deg[None, :])  # ∂F/∂ĝ_free
            if r_target is None:
                step, step_D = np.linalg.solve(J, -F), 0.0
            else:
                full = np.linalg.solve(np.column_stack([J, dGdD[act]]), -F)  # unknowns ĝ_free and D
                step, step_D = full[:-1], full[-1]
            norm = np.max(np.abs(F) / scale[act])
            for _ in range(30):  # damped: halve the step until the residual falls (or the step is round-off)
                trial, trial_D = g.copy(), D + step_D
                trial[free_deg] += step
                try:
                    if not (np.all(np.isfinite(trial)) and trial_D > 0):
                        raise FloatingPointError
                    moments = kernel.moments(trial, trial_D, M, jacobian=True)
                    if np.max(np.abs(moments[0][act] - trial[act]) / moments[2][act]) < norm or norm < 1e-13:
                        break
                except FloatingPointError:
                    pass
                step, step_D = 0.5 * step, 0.5 * step_D
            else:
                raise FloatingPointError("Newton's method left the admissible states (no step reduces the residual)")
            g, D = trial, trial_D
            G, _, scale, dG, dGdD = moments
            size = max(float(np.max(np.abs(step) / scale[free_deg], initial=0.0)), abs(step_D) / (D * d_tol) * tol)
            if size <= tol:
                break
            if size <= 1e3 * tol and size >= 0.5 * last:  # no longer converging quadratically: at round-off
                break
            last = size
        else:
            raise RuntimeError(f"Newton's method did not converge in {maxiter} iterations (r = {r_target}, "
                               f"D = {D:.6g})")
        fine, log_z, scale = kernel.moments(g, D, 2 * M)
        if np.all(np.abs(fine - kernel.moments(g, D, M)[0]) <= 1e-13 * scale):
            return g, D, log_z, float(np.max(np.abs(fine[act] - g[act]) / scale[act]))
        M *= 2
    raise RuntimeError(f"the quadrature of the state's moments did not converge on {M} nodes (r = {r_target})")


def _slope(kernel, g, D, r) -> float:
    """dD/dr along the branch at the state (ĝ, D) of order parameter r: implicit differentiation of F(ĝ, D; r) = 0,
    whose Jacobian in the unknowns (the class's other moments and D) Newton's method already forms."""
    l, act = kernel.order, kernel.active
    free_deg = act[act != l]
    M = 256
    _, _, _, dG, dGdD = kernel.moments(g, D, M, jacobian=True)
    J = dG[np.ix_(act, free_deg - 1)] - (act[:, None] == free_deg[None, :])
    A = np.column_stack([J, dGdD[act]])
    dF_dr = (dG[act, l - 1] - (act == l)) * kernel.top[l]  # the fixed moment ĝ_l = p̄_l(1) r
    return float(np.linalg.solve(A, -dF_dr)[-1])


def symmetry_class(d: int, order: int, K: int) -> np.ndarray:
    r"""The degrees 1..K a branch bifurcating from degree ``order`` may hold: on the circle the multiples of k =
    ``order`` (its states are invariant under the rotation by 2π/k: only cos(jkθ) = T_{jk}(u)), on S^{d-1}, d >= 3, the
    even degrees where ``order`` is even (invariant under u ↦ −u), else all."""
    deg = np.arange(1, K + 1)
    if d == 2:
        return deg[deg % order == 0]
    return deg[deg % 2 == 0] if order % 2 == 0 else deg


@dataclass(frozen=True)
class AxisymmetricState:
    r"""A stationary state ρ(x) = f(⟨x, e⟩) (e the axis of its cluster; uniform where r = 0), exactly as the
    self-consistency equation gives it: f = e^{h}/Z with h fixed by the kernel's moments ĝ_1..ĝ_K (module docstring,
    "Moments": f ∝ (K_β*ρ)^{c/(βD)} for SA, e^{c K_β*ρ/(βD)} for USA). Evaluated at any point from its potential — no
    expansion of f itself, which in high dimension would span hundreds of decades between the cluster and the rest.

    Attributes
    ----------
    noise : float
        D.
    r : float
        The branch's order parameter r_l = ∫ P̃_l(⟨x, e⟩) dρ, P̃_l = p̄_l/p̄_l(1) (l = ``order``; l = 1: |∫ x dρ| =
        ∫⟨x, e⟩ dρ; on the circle r_k = ∫ cos kθ dρ, the k-cluster states' order parameter).
    moments : ndarray
        ĝ_l = ∫ p̄_l(⟨x, e⟩) dρ(x), l = 0..K (ĝ_0 = 1; p̄_l the domain's zonal basis, orthonormal for the normalised
        surface measure, :mod:`meanfield.domains.gegenbauer`; ĝ_1 = √d r).
    residual : float
        max_l |G_l(ĝ) − ĝ_l|/∫|p̄_l|dρ: the self-consistency map's residual on the moments, relative to their scales
        (by quadrature on twice the nodes).
    domain : Domain
    model : SelfAttention
        The zonal model (β, c, SA or USA) whose state it is.
    log_norm : float
        log Z = log ∫ e^{h} dσ, so ρ = e^{h − log Z} integrates to 1 against surface area.
    order : int
        l, the degree whose branch the state is on (its moments vanish outside :func:`symmetry_class`).
    """

    noise: float
    r: float
    moments: np.ndarray
    residual: float
    domain: object
    model: object
    log_norm: float
    order: int = 1

    def log_density(self, points, axis=None) -> np.ndarray:
        """log ρ at points of the domain (shape (..., d); polar angles (..., 1) on the zonal sphere)."""
        kernel = _Kernel(self.model, self.domain, self.order)
        u = self.domain.polar_cosine(points, axis)
        P = orthonormal(kernel.d, kernel.K, np.ravel(u), normalized=True)
        return (kernel.potential(self.moments, self.noise, P)[0] - self.log_norm).reshape(np.shape(u))

    def __call__(self, points, axis=None) -> np.ndarray:
        """ρ at points of the domain (shape (..., d); polar angles (..., 1) on the zonal sphere), its cluster
        centred at ``axis`` (default the domain's: (1, 0) on the circle, the north pole on S^{d-1})."""
        return np.exp(self.log_density(points, axis))

    def density(self, grid, axis=None) -> Density:
        """The state on a grid of its domain (its cluster centred at ``axis``)."""
        return Density(grid, self(grid.points, axis))


@dataclass(frozen=True)
class Branch:
    """A branch of stationary states of ``model`` bifurcating from the uniform law at degree ``degree`` (1: the
    single-cluster branch; on the circle k: the k-cluster states).

    Attributes
    ----------
    r : ndarray
        The order parameters r_l = ∫P̃_l dρ of its states (increasing).
    noise : ndarray
        D(r).
    states : tuple of AxisymmetricState
    folds : ndarray, shape (k, 2)
        (r, D) of each fold, where dD/dr = 0 and the branch turns back in D, located by Brent's method on dD/dr
        (implicit differentiation of the fixed point, :func:`_slope`) between the states that bracket it: to ~1e-13
        in r and round-off in D.
    critical : float
        D_l, where it leaves the uniform law (the zero of σ_l, :func:`critical_noise`).
    model
    degree : int
        l.
    """

    r: np.ndarray
    noise: np.ndarray
    states: tuple
    folds: np.ndarray
    critical: float
    model: object
    degree: int = 1

    @property
    def continuous(self) -> bool:
        """Whether the bifurcation is supercritical: the branch leaves D_l towards smaller D."""
        return bool(self.noise[0] < self.critical)

    @property
    def fold_indices(self) -> np.ndarray:
        """The indices of the states after which dD/dr changes sign (the folds' brackets)."""
        slope = np.sign(np.diff(self.noise))
        return np.flatnonzero(slope[1:] != slope[:-1]) + 1


def branch(model, domain, r, degree: int = 1) -> Branch:
    r"""The branch of stationary states bifurcating from the uniform law at the zonal degree ``degree`` (module
    docstring), at the order parameters ``r`` (strictly monotone, r_l = ∫P̃_l dρ inside (−1, 1), of one sign: positive
    for odd degrees and on the circle, where the other sign is the same states turned; of either sign for an even
    degree on S^{d−1}, d >= 3, whose two sides are different states — caps at both poles, or a ring), by Newton's method
    on the kernel's moments of the branch's symmetry class and D with r fixed, each from the previous one by a secant
    predictor in r. Folds are located exactly (:class:`Branch`).

    ``ValueError`` for a degree that never destabilises (its multiplier is zero: β = 0 for l >= 2, or below
    round-off), with its rate."""
    domain = _as_domain(domain)
    l = _degree(degree)
    r = np.asarray(r, dtype=float)
    Dl, states = critical_noise(model, domain, l), []
    for state in _follow(model, domain, r, l):
        states.append(state)
    return _as_branch(r, states, Dl, model, l, exact_folds=True)


def bifurcation(model, domain, degree: int = 1, r: float = 0.01) -> float:
    r"""D_l located from the branch alone: where it leaves the uniform law, by Richardson extrapolation to r = 0 of
    D(r) on the branch of degree l — a pitchfork, D = D_l + a r² + b r⁴ + O(r⁶), for odd degrees and on the circle:
    (64D(r) − 20D(2r) + D(4r))/45; a transcritical bifurcation for even degrees on S^{d−1}, d >= 3, whose odd terms
    the means over ±r cancel: the same combination of (D(ρ) + D(−ρ))/2. Agrees with the zero of σ_l
    (:func:`critical_noise`) to ~1e-12 at r = 0.01 (tested)."""
    domain = _as_domain(domain)
    l = _degree(degree)
    d = _dimension(domain)
    rs = r * np.array([1.0, 2.0, 4.0])
    values = branch(model, domain, rs, l).noise
    if d >= 3 and l % 2 == 0:
        values = 0.5 * (values + branch(model, domain, -rs, l).noise)
    return float((64.0 * values[0] - 20.0 * values[1] + values[2]) / 45.0)


def _as_branch(r, states, Dl, model, order=1, exact_folds=False) -> Branch:
    Ds = np.array([s.noise for s in states])
    slope = np.sign(np.diff(Ds))
    brackets = np.flatnonzero(slope[1:] != slope[:-1]) + 1
    folds = np.empty((0, 2))
    if exact_folds and brackets.size:
        folds = np.array([_fold(model, states, i) for i in brackets])
    elif brackets.size:
        folds = np.column_stack([np.array([states[i].r for i in brackets]), Ds[brackets]])
    return Branch(r[: len(states)].copy(), Ds, tuple(states), folds, Dl, model, order)


def _fold(model, states, i) -> tuple[float, float]:
    """(r, D) of the fold bracketed by states i − 1, i, i + 1: Brent's root of dD/dr (:func:`_slope`), each value from
    Newton's method at that r started from the nearest state."""
    from scipy.optimize import brentq

    near = states[i]
    kernel = _Kernel(model, near.domain, near.order)
    cache = {}

    def state_at(r):
        start = min(states[i - 1:i + 2], key=lambda s: abs(s.r - r))
        g, D, _, _ = _newton(kernel, start.moments, start.noise, r)
        cache[r] = (g, D)
        return g, D

    def slope(r):
        g, D = state_at(r)
        return _slope(kernel, g, D, r)

    a, b = states[i - 1].r, states[i + 1].r
    fa, fb = slope(a), slope(b)
    if fa * fb > 0:  # the sign change sits between i − 1 and i + 1 of D's differences but not of dD/dr: take i
        fm = slope(near.r)
        a, fa = (near.r, fm) if fm * fb < 0 else (a, fa)
        b = near.r if fm * fb >= 0 else b
    rf = brentq(slope, a, b, xtol=1e-14, rtol=4 * np.finfo(float).eps)
    return float(rf), float(state_at(rf)[1])


def _follow(model, domain, r, order: int = 1):
    """The states of the branch of degree ``order`` at the order parameters ``r``, one at a time (:func:`branch`)."""
    beta, c, normalized = _zonal(model, domain)
    if c <= 0:
        rate = float(linear_rates(model, domain, [order], 0.0)[0])
        raise ValueError(f"clusters form for V = cI with c > 0; got c = {c:g}: degree {order} is stable for every "
                         f"D (its rate without noise is σ_{order} = {rate:.6g}), there is no branch to follow from it.")
    d = _dimension(domain)
    two_sided = d >= 3 and order % 2 == 0
    side = np.sign(r[0]) if r.ndim == 1 and r.size else 1.0
    if (r.ndim != 1 or r.size < 1 or not np.all(np.isfinite(r)) or np.any(np.abs(r) >= 1) or np.any(side * r <= 0)
            or np.any(np.diff(side * r) <= 0) or (side < 0 and not two_sided)):
        where = ("inside (−1, 1), of one sign, moving away from 0 (increasing if positive, decreasing if negative)"
                 if two_sided else "increasing strictly inside (0, 1)")
        raise ValueError(f"`r` must be {where} (degree {order} on {domain!r}), got {r!r}.")
    kernel = _Kernel(model, domain, order)
    Dl = critical_noise(model, domain, order)
    if not Dl > 0 or order > kernel.K:
        rate = float(linear_rates(model, domain, [order], 0.0)[0])
        raise ValueError(f"degree {order} of {model!r} never destabilises the uniform law (its rate without noise is "
                         f"σ_{order} = {rate:.6g}): there is no branch to follow from it.")
    history = []  # (r, ĝ, D) of the last two states, for the secant predictor in r

    def predict(rk):
        if len(history) == 2:
            (r1, g1, D1), (r2, g2, D2) = history
            s = (rk - r2) / (r2 - r1)
            return g2 + s * (g2 - g1), D2 + s * (D2 - D1)
        if history:
            return history[-1][1], history[-1][2]
        g = np.zeros(kernel.K + 1)
        g[0] = 1.0
        return g, Dl  # from the uniform law along the degree-l mode, unstable below D_l

    def solve(rk, depth=0):
        """The state at rk, from the last ones; where Newton's method fails, through the midpoint in r first."""
        nonlocal history
        try:
            return _newton(kernel, *predict(rk), rk)
        except (RuntimeError, FloatingPointError, np.linalg.LinAlgError):
            if depth >= 12 or not history:
                raise
            mid = 0.5 * (history[-1][0] + rk)
            g, D, _, _ = solve(mid, depth + 1)
            history = (history + [(mid, g, D)])[-2:]
            return solve(rk, depth + 1)

    for rk in r:
        try:
            g, D, log_z, resid = solve(rk)
        except (RuntimeError, FloatingPointError, np.linalg.LinAlgError) as exc:
            raise ValueError(f"the branch of degree {order} of {model!r} on {domain!r} could not be continued to r = "
                             f"{rk:.6g} (from r = {history[-1][0] if history else 0.0:.6g}): {exc}. Where D(r) turns "
                             "sharply (a strongly discontinuous transition, USA far above β_*) the branch may turn "
                             "back in r too, which continuation in r cannot pass.") from None
        yield AxisymmetricState(float(D), float(rk), g.copy(), resid, domain, model, _log_norm(kernel, log_z), order)
        history = (history + [(rk, g, D)])[-2:]


def _log_norm(kernel, log_z_mean) -> float:
    """log ∫ e^{h} dσ from log ∫ e^{h} dσ̄."""
    return float(log_z_mean + log_sphere_area(kernel.d - 1))


def stationary_state(model, domain, noise: float | None = None, *, r_guess: float = 0.5):
    """The single-cluster stationary state at noise D (default ``model.noise``) whose order parameter is nearest
    ``r_guess``: the branch (:func:`branch`) is followed in r from the uniform law in steps of 0.02 towards r = 0.99 —
    until D(r) has fallen below D past the fold, if any (D(r) decreases from there on: no further crossing) — and
    each crossing of D(r) = D is refined by Newton's method with D fixed (:func:`stationary_states`). ``ValueError``
    where there is none: above the branch's largest D only the uniform law is stationary (SA, and USA below β_*:
    above D_c); below D(0.99) the cluster is sharper than this follows (a branch to larger r, :func:`branch`, then
    :func:`stationary_states`)."""
    domain = _as_domain(domain)
    D = model.noise if noise is None else checks.noise(noise)
    if not D > 0:
        raise ValueError("stationary states of the noisy model need `noise` > 0 (without noise, clusters collapse).")
    r_guess = checks.real(r_guess, "r_guess")
    if not 0 < r_guess < 1:
        raise ValueError(f"`r_guess` is an order parameter r = |∫ x dρ| of a single-cluster state, in (0, 1); got "
                         f"{r_guess!r}.")
    r = np.linspace(0.01, 0.99, 50)
    states = []
    for state in _follow(model, domain, r):
        states.append(state)
        Ds = [s.noise for s in states]
        if len(Ds) >= 3 and Ds[-1] < D and Ds[-1] < Ds[-2] < Ds[-3]:  # below D and falling: no crossing beyond
            break
    b = _as_branch(r, states, critical_noise(model, domain), model)
    found = stationary_states(b, D)
    if not found:
        if D > float(np.max(b.noise)):
            why = f"the branch's largest D is {float(np.max(b.noise)):g}: only the uniform law is stationary there"
        else:
            why = (f"D(r = 0.99) = {float(b.noise[-1]):g}: the cluster is sharper than r = 0.99 (compute the branch to "
                   "larger r with `branch` and refine with `stationary_states`)")
        raise ValueError(f"no single-cluster stationary state at noise D = {D:g} on r in (0.01, 0.99): {why}.")
    return min(found, key=lambda state: abs(state.r - r_guess))


def stationary_states(b: Branch, noise: float) -> list[AxisymmetricState]:
    """The states of branch ``b`` at noise D: every crossing of D(r) = D, refined by Newton's method with D fixed
    (the uniform law, always stationary, is not listed)."""
    D = checks.noise(noise)
    out = []
    s = b.noise - D
    for i in np.flatnonzero(np.sign(s[1:]) != np.sign(s[:-1])):
        near = b.states[i] if abs(s[i]) < abs(s[i + 1]) else b.states[i + 1]
        kernel = _Kernel(b.model, near.domain, near.order)
        g, _, log_z, resid = _newton(kernel, near.moments, D)
        l = near.order
        state = AxisymmetricState(D, float(g[l] / kernel.top[l]), g, resid, near.domain, b.model,
                                  _log_norm(kernel, log_z), l)
        out.append(_oriented(state))
    return out


def _oriented(state: AxisymmetricState) -> AxisymmetricState:
    """The state with r >= 0 where the other sign is the same state turned: the reflection u ↦ −u (moment j times
    (−1)^j: p̄_j has the parity of j) for odd degrees, the rotation by π/k on the circle (moment jk times (−1)^j); an
    even degree's states on S^{d−1}, d >= 3, are left as they are (their two signs are different states)."""
    l, d = state.order, _dimension(state.domain)
    if state.r >= 0 or (d >= 3 and l % 2 == 0):
        return state
    j = np.arange(state.moments.size)
    sign = (-1.0) ** (j // l if d == 2 else j)
    return AxisymmetricState(state.noise, -state.r, sign * state.moments, state.residual, state.domain, state.model,
                             state.log_norm, l)


@dataclass(frozen=True)
class Stability:
    """The spectrum of the linearised equation ∂_t δρ = L δρ about a stationary state, by symmetry block.

    Attributes
    ----------
    blocks : dict
        Block name → eigenvalues (sorted by decreasing real part). On the circle "even" (cos kθ) and "odd" (sin kθ)
        about the cluster's axis; on S² "m=0", "m=1", ... (azimuthal order about the axis). Degree 0 (the mass,
        conserved) is left out.
    neutral : dict
        Block name → the eigenvalue set aside as a symmetry's zero mode (the rotations of a cluster: circle "odd",
        S² "m=1"), or None.
    growth : float
        The largest real part of the other eigenvalues: the state is linearly stable where it is < 0.
    """

    blocks: dict
    neutral: dict
    growth: float

    @property
    def stable(self) -> bool:
        return self.growth < 0


def stability(model, state, grid, noise: float | None = None, *, orders=(0, 1, 2), epsilon: float = 1e-6) -> Stability:
    r"""The spectrum of L δρ = −div(δρ X[ρ*] + ρ* X'[ρ*]δρ) + DΔδρ about ``state`` (an :class:`AxisymmetricState`, or
    None: the uniform law) on ``grid``, from the grid's right-hand side by central differences (relative step
    ``epsilon``), in the coordinates where its Laplacian is diagonal, block by symmetry (:class:`Stability`).

    The state is axisymmetric, so L commutes with the reflections (circle) or rotations (S²) that fix its axis and
    is block-diagonal (``Domain.symmetry_blocks``): even/odd on the circle, azimuthal order m on S² (``orders``:
    which m; the higher ones hold the faster-decaying modes, −D l(l+1) with l >= m), the zonal block alone on the
    zonal sphere (its perturbations stay zonal). For the uniform law the eigenvalues are the closed-form rates of
    :func:`linear_rates`; a cluster's rotations give one zero eigenvalue (set aside in ``neutral``; not in the
    zonal block, which holds no rotation).
    """
    domain = grid.domain
    beta, c, normalized = _zonal(model, domain)
    D = model.noise if noise is None else checks.noise(noise)
    rho = np.full(grid.shape, 1.0 / domain.volume) if state is None else state.density(grid).values
    from ..kernels import strategies

    rhs = domain.continuity(model, grid, strategies.resolve("auto", domain.grid_strategies(model, grid), repr(grid)))
    op = grid.laplacian()
    z0 = op.encode(rho)
    h = epsilon * float(np.max(np.abs(rho)))

    def column(e):
        """L applied to the perturbation with coordinates e, in the same coordinates."""
        plus, minus = rhs.rate(op.decode(z0 + h * e)), rhs.rate(op.decode(z0 - h * e))
        return op.encode(plus - minus) / (2.0 * h) + D * op.eigenvalues * e

    units, rotation = domain.symmetry_blocks(grid, orders)  # the perturbations of each block, and how to read it
    blocks = {name: np.column_stack([read(column(e)) for e in es]) for name, (es, read) in units.items()}
    eig = {name: np.sort_complex(np.linalg.eigvals(J))[::-1] for name, J in blocks.items()}
    eig = {name: v[np.argsort(-v.real)] for name, v in eig.items()}
    neutral = {name: None for name in eig}
    rest = []
    for name, v in eig.items():
        if state is not None and name == rotation and v.size:
            i = int(np.argmin(np.abs(v)))
            neutral[name] = v[i]
            v = np.delete(v, i)
        rest.append(v.real)
    growth = float(np.max(np.concatenate(rest))) if rest else float("-inf")
    return Stability(eig, neutral, growth)
