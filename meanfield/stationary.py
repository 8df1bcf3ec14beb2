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
in the order parameter r = |∫x dρ| (monotone along it, so the continuation goes round folds in D without
pseudo-arclength), solving for (f, D) by Newton's method on the self-consistency equation with r fixed, in the
domain's zonal basis (``Domain.zonal_basis``, :mod:`meanfield.domains.gegenbauer`: the Gauss nodes of the
Jacobi weight (1 − u²)^{(d−3)/2} in u = ⟨x, e⟩ — midpoints in the angle on the circle, Gauss–Legendre on S²),
refined until the expansion's tail is below round-off; the same code for S¹, S² and the zonal S^{d−1} of any d. :func:`stationary_states` picks the states on the branch at a given D; :func:`stability` takes the
spectrum of the linearised continuity equation (its right-hand side on a grid, by central differences, block by
azimuthal order) to say which are stable. For USA on S^{d-1} the transition is continuous for β below
β_* (I_{d/2+1}(β_*)/I_{d/2}(β_*) = 1/d: 2.4469 on S¹, 1.8162 on S², 1.0157 on S^{127}; :func:`critical_beta`) and
discontinuous above it, where the branch
leaves D_c towards larger D and folds back (Mun & Rosenzweig 2026): a window of D above D_c with both the stable
uniform law and a stable clustered state.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.special import ive

from . import checks
from .density import Density
from .domains.gegenbauer import multipliers, orthonormal
from .domains.zonal import zonal_refusal

#: The expansion of a state is refined until its top eighth holds less than this of its L² norm.
TAIL = 1e-13  # ~ 500 ε: the projection by Gauss quadrature leaves ~ 10 ε per coefficient

__all__ = ["critical_noise", "linear_rates", "most_unstable_degree", "critical_beta", "AxisymmetricState", "Branch",
           "branch", "stationary_state", "stationary_states", "stability", "Stability"]


def _zonal(model, domain):
    """(β, c, normalized) of a zonal model on a domain with zonal functions; ValueError otherwise."""
    why = zonal_refusal(model)
    if why is not None:
        raise ValueError(f"stationary states are derived for zonal models, where the field is a gradient: {why}.")
    if _dimension(domain) is None:
        raise ValueError(f"stationary states are computed on domains with zonal functions (the circle, S², the zonal "
                         f"S^(d-1)), not on the {domain.name}.")
    z = model.zonal
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
        The circle, S², or a zonal sphere S^{d-1} (``meanfield.domains.zonal_sphere(d)``).
    degrees : array_like of int >= 1
    noise : float, optional
        D (default ``model.noise``).
    """
    beta, c, normalized = _zonal(model, domain)
    D = model.noise if noise is None else checks.noise(noise)
    k = np.asarray(degrees)
    if np.any(k < 1):
        raise ValueError(f"`degrees` must be >= 1 (degree 0 is the mass, conserved), got {degrees!r}.")
    Dk, Nk = _multipliers(domain, int(np.max(k)), beta)
    # λ_k ρ_0/(β s): SA e^{-β}λ_k/(β e^{-β}λ_0) = N_k/D_0; USA λ_k/(β|S|) = e^β N_k/|S|
    ratio = Nk[k] / (Dk[0] if normalized else domain.volume * np.exp(-beta))
    return k * (k + _dimension(domain) - 2) * (c * ratio - D)


def critical_noise(model, domain) -> float:
    """D_c, the noise below which the uniform law is linearly unstable (module docstring): the degree-1 rate's zero."""
    beta, c, normalized = _zonal(model, domain)
    Dk, Nk = _multipliers(domain, 1, beta)
    return float(c * Nk[1] / (Dk[0] if normalized else domain.volume * np.exp(-beta)))


def most_unstable_degree(model, domain, noise: float | None = None, max_degree: int = 4096) -> int:
    r"""ℓ* = argmax_l σ_l, the zonal degree that grows fastest from the uniform law (without noise
    argmax_l l(l + d − 2) I_{l+d/2−1}(β): MATH.md §9); ``ValueError`` where no degree grows (σ_l <= 0 for all l)."""
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
    g = lambda b: ive(d / 2 + 1, b) / ive(d / 2, b) - 1.0 / d
    hi = 1.0
    while g(hi) < 0:
        hi *= 2.0
    return float(brentq(g, 1e-12, hi, xtol=1e-15, rtol=1e-15))


# ---------------------------------------------------------------------- the axisymmetric discretisation
@dataclass(frozen=True)
class AxisymmetricState:
    """A stationary state ρ(x) = f(⟨x, e⟩) (e the axis of its cluster; uniform where r = 0).

    Attributes
    ----------
    noise : float
        D.
    r : float
        The order parameter |∫ x dρ| (= ∫⟨x, e⟩ dρ).
    coefficients : ndarray
        f = Σ_l c̄_l p̄_l(⟨x, e⟩) in the domain's zonal basis (``Domain.zonal_basis``: the polynomials orthonormal for
        the normalised surface measure, :mod:`meanfield.domains.gegenbauer`; cos(lθ)·√2 on the circle, √(2l + 1)
        P_l on S²), degree <= len − 1.
    residual : float
        max|f − T(f)| / max f of the self-consistency map at the nodes.
    domain : Domain
    """

    noise: float
    r: float
    coefficients: np.ndarray
    residual: float
    domain: object

    def __call__(self, points, axis=None) -> np.ndarray:
        """ρ at points of the domain (shape (..., d); polar angles (..., 1) on the zonal sphere), its cluster
        centred at ``axis`` (default the domain's: (1, 0) on the circle, the north pole on S^{d-1})."""
        u = self.domain.polar_cosine(points, axis)
        return orthonormal(_dimension(self.domain), self.coefficients.size - 1, u, normalized=True) @ self.coefficients

    def density(self, grid, axis=None) -> Density:
        """The state on a grid of its domain (its cluster centred at ``axis``)."""
        return Density(grid, self(grid.points, axis))


class _Equation:
    """The self-consistency map T(f; D) on the nodes, its Jacobian, and the order parameter."""

    def __init__(self, model, domain, M: int):
        self.beta, self.c, self.normalized = _zonal(model, domain)
        self.ax = domain.zonal_basis(M)
        self.Dk, self.Nk = _multipliers(domain, M - 1, self.beta)
        B, A = self.ax.P, self.ax.analysis
        self.MU = B[:, 1:] @ (self.Nk[1:, None] * A[1:])  # f ↦ U = Σ_{k>=1} N_k a_k b_k at the nodes
        self.a0 = A[0]

    def potential(self, f, D):
        """g = log of the unnormalised T(f) (up to a constant) and its derivative matrix in f (and the vector
        ∂g/∂D = −g/D)."""
        U = self.MU @ f
        if not self.normalized:
            scale = self.c * np.exp(self.beta) / D
            return scale * U, scale * self.MU
        s0 = self.Dk[0] * (self.a0 @ f)
        s = self.beta * U / s0
        if np.any(s <= -1.0):  # φ = e^β s0 (1 + s) must stay positive: a step past the admissible states
            raise FloatingPointError("the kernel sum of an iterate is not positive")
        g = (self.c / D) * (np.log1p(s) / self.beta if self.beta else U / s0)
        dg = (self.c / D) / (1.0 + s)[:, None] * (self.MU / s0 - np.outer(U, self.a0) * self.Dk[0] / s0**2)
        return g, dg

    def map(self, f, D):
        g, dg = self.potential(f, D)
        e = np.exp(g - np.max(g))
        T = e / (self.ax.weights @ e)
        wT = self.ax.weights * T
        dT = T[:, None] * (dg - wT @ dg)  # T(dg − ∫T dg)
        dTdD = T * (-g / D + (wT @ g) / D)
        return T, dT, dTdD

    def r(self, f):
        return float(self.ax.weights @ (self.ax.u * f))


def _newton(eq, f, D, r_target=None, tol=1e-13, maxiter=60):
    """(f, D) solving f = T(f; D) (and r(f) = r_target, D free, where given) by Newton's method.

    With r fixed, T depends on D only through the cluster (∂T/∂D = O(r)), so D is determined to round-off / r:
    its step is converged at max(tol, 100ε/r) relative."""
    M, w_mu = f.size, eq.ax.weights * eq.ax.u
    d_tol = tol if r_target is None else max(tol, 100.0 * np.finfo(float).eps / r_target)
    for _ in range(maxiter):
        T, dT, dTdD = eq.map(f, D)
        res = f - T
        step_D = 0.0
        if r_target is None:
            step = np.linalg.solve(np.eye(M) - dT, -res)
            f = f + step
        else:
            J = np.zeros((M + 1, M + 1))
            J[:M, :M] = np.eye(M) - dT
            J[:M, M] = -dTdD
            J[M, :M] = w_mu
            rhs = -np.concatenate([res, [w_mu @ f - r_target]])
            full = np.linalg.solve(J, rhs)
            step, step_D = full[:M], full[M]
            f, D = f + step, D + step_D
        if not (np.all(np.isfinite(f)) and np.isfinite(D) and D > 0):
            raise FloatingPointError("Newton's method left the admissible states (non-finite or D <= 0)")
        if np.max(np.abs(step)) <= tol * np.max(np.abs(f)) and abs(step_D) <= d_tol * D:
            T = eq.map(f, D)[0]
            return f, D, float(np.max(np.abs(f - T)) / np.max(np.abs(f)))
    raise RuntimeError(f"Newton's method did not converge in {maxiter} iterations (r = {r_target}, D = {D:.6g})")


def _tail(eq, f) -> float:
    """The largest orthonormal coefficient in the top eighth of the expansion, relative to the L² norm of f."""
    a = np.abs(eq.ax.coefficients(f))
    return float(np.max(a[-max(2, a.size // 8):]) / np.linalg.norm(a))


@dataclass(frozen=True)
class Branch:
    """The single-cluster branch of ``model``: ``r`` (increasing), ``noise`` D(r), ``states`` and ``folds``, the indices
    where dD/dr changes sign (the branch turns back in D). ``critical`` is D_c, where it leaves the uniform law."""

    r: np.ndarray
    noise: np.ndarray
    states: tuple
    folds: np.ndarray
    critical: float
    model: object

    @property
    def continuous(self) -> bool:
        """Whether the transition is continuous: the branch leaves D_c towards smaller D (supercritical)."""
        return bool(self.noise[0] < self.critical)


def branch(model, domain, r, *, nodes: int = 64, max_nodes: int = 4096) -> Branch:
    r"""The branch of single-cluster stationary states bifurcating from the uniform law, at the order parameters
    ``r`` (increasing, in (0, 1)), by Newton's method on (f, D) with r fixed, each from the previous one
    (module docstring). ``nodes`` doubles where the expansion's top eighth holds more than :data:`TAIL` of its L²
    norm, while that halves it at least (past it, the projection's round-off), up to ``max_nodes``."""
    beta, c, normalized = _zonal(model, domain)
    if c <= 0:
        raise ValueError(f"clusters form for V = cI with c > 0; got c = {c:g} (the uniform law is stable for every D).")
    r = np.asarray(r, dtype=float)
    if r.ndim != 1 or r.size < 1 or np.any(np.diff(r) <= 0) or r[0] <= 0 or r[-1] >= 1:
        raise ValueError(f"`r` must increase strictly inside (0, 1), got {r!r}.")
    Dc = critical_noise(model, domain)
    eq = _Equation(model, domain, int(nodes))
    history = []  # (r, f, D) of the last two states on eq's nodes, for the secant predictor in r

    def predict(rk):
        if len(history) == 2:
            (r1, f1, D1), (r2, f2, D2) = history
            s = (rk - r2) / (r2 - r1)
            return f2 + s * (f2 - f1), D2 + s * (D2 - D1)
        ax = eq.ax
        psi = ax.P[:, 1] / (ax.weights @ (ax.u * ax.P[:, 1]))  # the degree-1 mode with r(ψ) = 1
        if history:
            return history[-1][1] + (rk - history[-1][0]) * psi, history[-1][2]
        return 1.0 / domain.volume + rk * psi, Dc  # from the uniform law along the mode unstable below D_c

    def solve(rk, depth=0):
        """The state at rk, from the last ones; where Newton's method fails, through the midpoint in r first."""
        nonlocal eq, history
        try:
            f, D = predict(rk)
            last = np.inf
            while True:
                f, D, resid = _newton(eq, f, D, rk)
                tail = _tail(eq, f)
                # resolved, or at the round-off floor of the projection (refining no longer halves the tail)
                if tail <= TAIL or tail > 0.5 * last or eq.ax.M >= max_nodes:
                    return f, D, resid
                last = tail
                new = _Equation(model, domain, 2 * eq.ax.M)  # refine; the history moves to the new nodes
                history = [(h[0], _resample(h[1], eq.ax, new.ax), h[2]) for h in history]
                f, eq = _resample(f, eq.ax, new.ax), new
        except (RuntimeError, FloatingPointError, np.linalg.LinAlgError):
            if depth >= 12 or not history:
                raise
            mid = 0.5 * (history[-1][0] + rk)
            f, D, _ = solve(mid, depth + 1)
            history = (history + [(mid, f, D)])[-2:]
            return solve(rk, depth + 1)

    states = []
    for rk in r:
        f, D, resid = solve(rk)
        states.append(AxisymmetricState(float(D), float(rk), eq.ax.coefficients(f), resid, domain))
        history = (history + [(rk, f, D)])[-2:]
    Ds = np.array([s.noise for s in states])
    slope = np.sign(np.diff(Ds))
    folds = np.flatnonzero(slope[1:] != slope[:-1]) + 1
    return Branch(r.copy(), Ds, tuple(states), folds, Dc, model)


def _resample(f, old, new):
    """Values of f (nodes of the basis ``old``) at the nodes of ``new``, through its expansion."""
    return new.values(old.coefficients(f))


def stationary_state(model, domain, noise: float | None = None, *, r_guess: float = 0.5, nodes: int = 64):
    """The single-cluster stationary state at noise D (default ``model.noise``) whose order parameter is nearest
    ``r_guess``: the branch (:func:`branch`, from ``nodes`` nodes, refined where its states need more) is followed in
    r from the uniform law to r = 0.99 and each crossing of D(r) = D is refined by Newton's method with D fixed
    (:func:`stationary_states`). ``ValueError`` where there is none: above the branch's largest D only the uniform
    law is stationary (SA, and USA below β_*: above D_c); below D(0.99) the cluster is sharper than this follows
    (a branch to larger r, :func:`branch`, then :func:`stationary_states`)."""
    D = model.noise if noise is None else checks.noise(noise)
    if not D > 0:
        raise ValueError("stationary states of the noisy model need `noise` > 0 (without noise, clusters collapse).")
    b = branch(model, domain, np.linspace(0.01, 0.99, 50), nodes=nodes)
    states = stationary_states(b, D)
    if not states:
        if D > float(np.max(b.noise)):
            why = f"the branch's largest D is {float(np.max(b.noise)):g}: only the uniform law is stationary there"
        else:
            why = (f"D(r = 0.99) = {float(b.noise[-1]):g}: the cluster is sharper than r = 0.99 (compute the branch to "
                   "larger r with `branch` and refine with `stationary_states`)")
        raise ValueError(f"no single-cluster stationary state at noise D = {D:g} on r in (0.01, 0.99): {why}.")
    return min(states, key=lambda state: abs(state.r - r_guess))


def stationary_states(b: Branch, noise: float) -> list[AxisymmetricState]:
    """The states of branch ``b`` at noise D: every crossing of D(r) = D, refined by Newton's method with D fixed
    (the uniform law, always stationary, is not listed)."""
    D = checks.noise(noise)
    out = []
    s = b.noise - D
    for i in np.flatnonzero(np.sign(s[1:]) != np.sign(s[:-1])):
        near = b.states[i] if abs(s[i]) < abs(s[i + 1]) else b.states[i + 1]
        eq = _Equation(b.model, near.domain, near.coefficients.size)
        f, _, resid = _newton(eq, eq.ax.values(near.coefficients), D)
        state = AxisymmetricState(D, eq.r(f), eq.ax.coefficients(f), resid, near.domain)
        out.append(_oriented(state))
    return out


def _oriented(state: AxisymmetricState) -> AxisymmetricState:
    """The state with its cluster at +axis (r >= 0): where Newton's method landed on the reflected cluster, the
    reflection μ ↦ −μ (coefficient k times (−1)^k in both zonal bases)."""
    if state.r >= 0:
        return state
    sign = (-1.0) ** np.arange(state.coefficients.size)
    return AxisymmetricState(state.noise, -state.r, sign * state.coefficients, state.residual, state.domain)


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
    from . import strategies

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
