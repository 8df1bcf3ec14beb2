r"""Closed-form and exactly reduced solutions used as oracles (MATH.md §3).

- :func:`wrapped_cauchy`, :func:`ott_antonsen`: the circle at β = 0
  (Ott & Antonsen, Chaos 18, 037113, 2008).
- :func:`equiangular`: n pairwise orthogonal particles stay equiangular
  (GLPR Theorem 6.8, ODEs (6.9) and (6.10)).
- :func:`normalized_equiangular`: the same reduction for every normalisation of the Transformer — post-, pre-,
  peri-, Mix-LN and nGPT (docs/MATH.md §10): 1 − ρ(t) and the tokens' common radius r(t).
- :func:`ngpt_rates`: the growth rates of the zonal modes about the uniform law under nGPT's α P_θA/|A| on
  S^{d-1}: post-LN's divided by |A| of the uniform law, the same for SA and USA (docs/MATH.md §10).
- :func:`wendel`: the probability that n iid uniform points on S^{d-1} lie in an
  open hemisphere (Wendel 1962; GLPR Theorem 6.7), the hypothesis of GLPR Theorem 6.3.
- :func:`mobius_density`, :func:`mobius_mean_factor`, :func:`mobius_radius`,
  :func:`mobius_characteristics`: S² at β = 0, the Möbius-invariant family p_w (Lipton, Mirollo & Strogatz,
  Chaos 31, 2021; Chandra, Girvan & Ott, Chaos 29, 2019).
- :func:`lorentzian_ott_antonsen`, :func:`lorentzian_order_limit`, :func:`lorentzian_rates`,
  :func:`lorentzian_critical_width`: natural frequencies with a Lorentzian law (docs/MATH.md §11): the
  Ott–Antonsen reduction at β = 0, the incoherent state's rates and the critical width for β >= 0.
- :func:`equiangular_time`, :func:`equiangular_closed_form`: the equiangular ODEs (6.9), (6.10) in closed form with
  exponential integrals, any real β (β < 0 repulsive) and any ρ(0); n = 2 is two tokens on S¹ (MATH.md §13).
- :func:`one_layer_equiangular`, :func:`one_layer_limit`, :func:`one_layer_rate`, :func:`self_weight`: one attention
  layer θ' = N(A(θ)) on n equiangular tokens at β_n = γ log n, exactly for every n, its limit and rate (MATH.md §13).
- :func:`causal_pair`: the first two tokens of causal SA (docs/MATH.md §8.4): the first never moves, the angle of
  the second to it solves a scalar ODE integrated in closed form with exponential integrals.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.integrate import solve_ivp

# the two densities are the domains' Poisson-kernel laws (their one definition); the oracles built on them are here
from ..domains.circle.laws import check_poisson_parameter, wrapped_cauchy, wrapped_cauchy_sample
from ..domains.sphere.laws import check_ball_point, mobius_density

__all__ = ["wrapped_cauchy", "ott_antonsen", "ott_antonsen_characteristics", "wrapped_cauchy_sample", "equiangular", "mobius_density",
           "mobius_mean_factor", "mobius_radius", "mobius_rapidity", "mobius_characteristics", "causal_pair",
           "positional_pair", "retrieval_profile", "retrieval_rate", "retrieval_threshold", "retrieval_window",
           "equiangular_time", "equiangular_closed_form", "one_layer_limit", "one_layer_equiangular",
           "self_weight", "one_layer_rate", "one_layer_gap",
           "wendel", "normalized_equiangular", "Equiangular", "lorentzian_ott_antonsen", "lorentzian_order_limit",
           "lorentzian_rates", "lorentzian_critical_width", "CriticalWidth", "ngpt_rates"]


def ott_antonsen(t, a0) -> np.ndarray:
    r"""Parameter a(t) of the wrapped Cauchy solution at β = 0 (SA and USA, mass 1).

    With X(θ) = Im(z e^{-iθ}), z = ∫ e^{iθ} dμ (MATH.md §2.1), the family f_a
    is invariant and ȧ = ½ a (1 − |a|²): arg a is constant and

    .. math:: |a(t)|^2 = \frac{|a_0|^2 e^{t}}{1 - |a_0|^2 + |a_0|^2 e^{t}}.

    Returns complex a(t) with the shape of ``t``.

    Examples
    --------
    The family starts at a_0 and tends to the Dirac mass at arg a_0 (|a| → 1):

    >>> from meanfield import exact
    >>> a = exact.ott_antonsen([0.0, 50.0], 0.3j)
    >>> bool(abs(a[0] - 0.3j) < 1e-15), bool(abs(a[1] - 1j) < 1e-15)
    (True, True)
    """
    a0 = check_poisson_parameter(a0)
    t = np.asarray(t, dtype=float)
    r2 = abs(a0) ** 2
    if r2 == 0.0:
        return np.zeros(t.shape, dtype=complex)
    mod2 = r2 / (r2 + (1.0 - r2) * np.exp(-t))
    return (a0 / abs(a0)) * np.sqrt(mod2)


def ott_antonsen_characteristics(theta0, t, a0) -> tuple[np.ndarray, np.ndarray]:
    r"""Where the wrapped Cauchy solution carries the point θ_0 by time t, and the log-Jacobian of its flow map.

    With a(t) of :func:`ott_antonsen` the field is X(θ) = Im(a e^{-iθ}) = −|a| sin ψ, ψ = θ − arg a_0, so
    tan(ψ/2) = tan(ψ_0/2) e^{-R(t)} with

    .. math:: R(t) = \int_0^t |a(s)|\,ds = 2\big[\operatorname{asinh}\sqrt{r_0^2e^t/(1-r_0^2)}
              - \operatorname{asinh}\sqrt{r_0^2/(1-r_0^2)}\big],\qquad r_0 = |a_0|,

    and the Jacobian of θ_0 ↦ θ(t) is ∂θ/∂θ_0 = e^{-R}/(cos²(ψ_0/2) + sin²(ψ_0/2)e^{-2R}), so that
    log ρ(θ(t), t) = log ρ_0(θ_0) − log ∂θ/∂θ_0 exactly (docs/MATH.md §6): an oracle for the Lagrangian
    measure that does not depend on where a computed point lies inside a cluster narrower than float64's
    resolution of the angle.

    Returns
    -------
    theta : ndarray
        θ(t), continuous in t from θ_0 (not wrapped).
    log_jacobian : ndarray
        log ∂θ/∂θ_0.
    """
    a0 = check_poisson_parameter(a0)
    theta0 = np.asarray(theta0, dtype=float)
    r2 = abs(a0) ** 2
    if r2 == 0.0:
        return theta0.copy(), np.zeros_like(theta0)
    R = 2.0 * (np.arcsinh(np.sqrt(r2 * np.exp(float(t)) / (1.0 - r2))) - np.arcsinh(np.sqrt(r2 / (1.0 - r2))))
    phase = np.angle(a0)
    psi0 = theta0 - phase
    turns = np.round(psi0 / (2.0 * np.pi))
    half = 0.5 * (psi0 - 2.0 * np.pi * turns)  # in [−π/2, π/2]: tan is monotone there
    psi = 2.0 * np.arctan(np.tan(half) * np.exp(-R))
    log_jacobian = -R - np.log(np.cos(half) ** 2 + np.sin(half) ** 2 * np.exp(-2.0 * R))
    return psi + 2.0 * np.pi * turns + phase, log_jacobian


def equiangular(t, n: int, beta: float, normalized: bool = True) -> np.ndarray:
    r"""Common inner product ρ(t) = ⟨x_i(t), x_j(t)⟩ of n particles started orthogonal.

    For n pairwise orthogonal particles in d >= n (GLPR Theorem 6.8) the
    inner products stay equal and, with Q = K = V = I,

    .. math::

        \text{SA (6.9):}\quad ρ' = \frac{2(1-ρ)((n-1)ρ + 1)}{e^{β(1-ρ)} + n - 1},\qquad
        \text{USA (6.10):}\quad ρ' = \frac{2}{n} e^{βρ}(1-ρ)((n-1)ρ + 1),

    ρ(0) = 0. (Derivation: y = Σ_j e^{β⟨x_i,x_j⟩}x_j has
    ⟨P_{x_i}^⊥ y, x_k⟩ = e^{βρ}(1 − ρ)(1 + (n − 1)ρ), and ρ' = 2⟨ẋ_i, x_k⟩;
    Z_i = e^β + (n−1)e^{βρ} for SA and n for USA.) Solved with DOP853 at
    rtol = 1e-13. Any real β (β < 0 repulsive, MATH.md §13); :func:`equiangular_closed_form` is the same solution
    in closed form, from any ρ(0).
    """
    if int(n) != n or n < 2:
        raise ValueError(f"`n` must be an integer >= 2, got {n!r}.")
    if not np.isfinite(beta):
        raise ValueError(f"`beta` must be finite (any sign: β < 0 is repulsive, MATH.md §13), got {beta!r}.")
    t = np.asarray(t, dtype=float)

    def rhs(_, r):
        g = (1.0 - r) * ((n - 1) * r + 1.0)
        if normalized:
            return 2.0 * g / (np.exp(beta * (1.0 - r)) + n - 1)
        return 2.0 / n * np.exp(beta * r) * g

    tt = np.atleast_1d(t)
    if np.any(tt < 0):
        raise ValueError("`t` must be >= 0.")
    order = np.argsort(tt)
    sol = solve_ivp(rhs, (0.0, max(float(tt.max()), 0.0)), [0.0], method="DOP853",
                    t_eval=tt[order], rtol=1e-13, atol=1e-15)
    out = np.empty(tt.shape)
    out[order] = sol.y[0]
    return out.reshape(t.shape)


def _equiangular_primitive(rho, n: int, beta: float, normalized: bool):
    r"""F(ρ) with dt/dρ = F'(ρ) for the equiangular ODEs (:func:`equiangular_time` states it)."""
    from scipy.special import expi

    v = (n - 1) * rho + 1.0  # 1 + (n − 1)ρ > 0
    s = 1.0 - rho
    if beta == 0.0:
        return 0.5 * (np.log(v) - np.log(s))
    if normalized:
        return ((n - 1) * (np.log(v) - np.log(s)) - expi(beta * s)
                + np.exp(beta * n / (n - 1)) * expi(-beta * v / (n - 1))) / (2.0 * n)
    return 0.5 * (np.exp(beta / (n - 1)) * expi(-beta * v / (n - 1)) - np.exp(-beta) * expi(beta * s))


def _check_equiangular(n, beta, rho0):
    if int(n) != n or n < 2:
        raise ValueError(f"`n` must be an integer >= 2, got {n!r}.")
    beta = float(beta)
    if not np.isfinite(beta):
        raise ValueError(f"`beta` must be finite (any sign: β < 0 is repulsive, MATH.md §13), got {beta!r}.")
    rho0 = float(rho0)
    if not (-1.0 / (n - 1) < rho0 < 1.0):
        raise ValueError(f"`rho0` must lie in (−1/(n − 1), 1) = ({-1.0 / (n - 1):g}, 1) for n = {n} equiangular unit "
                         f"vectors that are not yet one point, got {rho0!r}.")
    return int(n), beta, rho0


def equiangular_time(rho, n: int, beta: float, rho0: float = 0.0, normalized: bool = True) -> np.ndarray:
    r"""The time at which the equiangular inner product of :func:`equiangular` reaches ρ from ρ_0, in closed form.

    The ODEs (6.9) (SA) and (6.10) (USA) separate. With v = 1 + (n − 1)ρ, 1/((1 − ρ)v) = (1/n)(1/(1 − ρ) +
    (n − 1)/v), ∫e^{β(1−ρ)}dρ/(1 − ρ) = −Ei(β(1 − ρ)) and ∫e^{β(1−ρ)}(n − 1)dρ/v = e^{βn/(n−1)} Ei(−βv/(n − 1)),
    so t(ρ) = F(ρ) − F(ρ_0) with

    .. math::

        \text{SA:}\ F = \frac{1}{2n}\Big[(n-1)\log\frac{v}{1-ρ} - \mathrm{Ei}(β(1-ρ))
              + e^{βn/(n-1)}\mathrm{Ei}\Big(-\frac{βv}{n-1}\Big)\Big],\qquad
        \text{USA:}\ F = \frac12\Big[e^{β/(n-1)}\mathrm{Ei}\Big(-\frac{βv}{n-1}\Big) - e^{-β}\mathrm{Ei}(β(1-ρ))\Big],

    and F = ½ log(v/(1 − ρ)) at β = 0 (both). Any real β (β < 0 repulsive, MATH.md §13). For n = 2 this is two
    tokens on S¹ at the angle φ, ρ = cos φ: MATH.md §13's φ̇ = −2e^{β cos φ} sin φ/(e^β + e^{β cos φ}) for SA.

    Parameters
    ----------
    rho : array_like
        Inner products in [ρ_0, 1).
    n : int
        n >= 2 tokens.
    beta : float
    rho0 : float
        ρ(0) in (−1/(n − 1), 1) (0: GLPR's orthogonal start).
    normalized : bool
        SA (True) or USA.
    """
    n, beta, rho0 = _check_equiangular(n, beta, rho0)
    rho = np.asarray(rho, dtype=float)
    if np.any(rho < rho0) or np.any(rho >= 1.0):
        raise ValueError(f"`rho` must lie in [rho0, 1) = [{rho0:g}, 1): ρ increases from ρ_0 towards 1.")
    return _equiangular_primitive(rho, n, beta, normalized) - _equiangular_primitive(rho0, n, beta, normalized)


def equiangular_closed_form(t, n: int, beta: float, rho0: float = 0.0, normalized: bool = True) -> np.ndarray:
    r"""ρ(t) of :func:`equiangular` from ρ(0) = ``rho0``, by inverting the closed form :func:`equiangular_time`
    (t(ρ) increases from 0 to ∞ on [ρ_0, 1)); Brent's method on u = −log(1 − ρ) to xtol 1e-14 (so 1 − ρ to
    a relative 1e-14)."""
    from scipy.optimize import brentq

    n, beta, rho0 = _check_equiangular(n, beta, rho0)
    t = np.asarray(t, dtype=float)
    if np.any(t < 0) or not np.all(np.isfinite(t)):
        raise ValueError("`t` must be finite and >= 0.")
    f0 = _equiangular_primitive(rho0, n, beta, normalized)
    u0 = -np.log1p(-rho0)
    out = np.empty(t.shape)
    for i, ti in np.ndenumerate(t):
        if ti == 0.0:
            out[i] = rho0
            continue
        g = lambda u: _equiangular_primitive(-np.expm1(-u), n, beta, normalized) - f0 - ti  # noqa: E731
        hi = u0 + 1.0
        while g(hi) < 0.0:
            hi = u0 + 2.0 * (hi - u0)
        out[i] = -np.expm1(-brentq(g, u0, hi, xtol=1e-14, rtol=1e-15, maxiter=500))
    return out


def _check_long_context(gamma, rho):
    gamma, rho = float(gamma), float(rho)
    if not np.isfinite(gamma) or gamma <= 0:
        raise ValueError(f"`gamma` must be positive and finite (β_n = γ log n), got {gamma!r}.")
    if not (0.0 < rho < 1.0):
        raise ValueError(f"`rho` must lie in (0, 1) (the tokens' common inner product; Chen, Lin, Polyanskiy & "
                         f"Rigollet state the limit there), got {rho!r}.")
    return gamma, rho


def self_weight(n, gamma: float, rho: float) -> np.ndarray:
    r"""p_n = n^γ/(n^γ + (n − 1)n^{γρ}) = 1/(1 + (n − 1)n^{−γ(1−ρ)}): the softmax weight a token gives itself among n
    equiangular tokens (inner product ρ) at β_n = γ log n (MATH.md §13), computed in logs (n up to 10^300)."""
    gamma, rho = _check_long_context(gamma, rho)
    n = np.asarray(n, dtype=float)
    if np.any(n < 2) or not np.all(np.isfinite(n)):
        raise ValueError(f"`n` must be finite and >= 2, got {n!r}.")
    return 1.0 / (1.0 + np.exp(np.log(n - 1.0) - gamma * (1.0 - rho) * np.log(n)))


def one_layer_equiangular(n, gamma: float, rho: float) -> np.ndarray:
    r"""⟨θ_i', θ_j'⟩ after one attention layer θ' = N(A(θ)) on n equiangular tokens, exactly, at β_n = γ log n.

    A_i = Σ_j softmax_j(β_n⟨θ_i, θ_j⟩)θ_j = (p − q)θ_i + qS with p = :func:`self_weight`, q = (1 − p)/(n − 1) the
    weight of each other token, S = Σ_j θ_j. With s = ⟨θ_i, S⟩ = 1 + (n − 1)ρ and |S|² = ns,

    .. math::

        |A_i|^2 = (p-q)^2 + 2(p-q)qs + q^2ns,\qquad
        ⟨A_i, A_j⟩ = |A_i|^2 - (p-q)^2(1-ρ),\qquad
        ρ' = 1 - \frac{(p-q)^2(1-ρ)}{|A_i|^2}

    (MATH.md §13; the finite-n form of Chen, Lin, Polyanskiy & Rigollet, arXiv 2510.05554). Any n >= 2 (a real
    number: n up to 10^300); ``1 − ρ'`` is what the formula computes, so ρ' near 1 keeps its relative accuracy in
    1 − ρ' (:func:`one_layer_gap`).
    """
    return 1.0 - one_layer_gap(n, gamma, rho)


def one_layer_gap(n, gamma: float, rho: float) -> np.ndarray:
    """1 − ρ' of :func:`one_layer_equiangular`, without cancellation."""
    p = self_weight(n, gamma, rho)
    n = np.asarray(n, dtype=float)
    q = (1.0 - p) / (n - 1.0)
    s = 1.0 + (n - 1.0) * rho
    pq = p - q
    norm2 = pq * pq + 2.0 * pq * q * s + q * q * n * s
    return pq * pq * (1.0 - rho) / norm2


def one_layer_limit(gamma: float, rho: float) -> float:
    r"""lim_{n→∞} ⟨θ_i', θ_j'⟩ after one layer θ' = N(A(θ)) at β_n = γ log n from equiangular tokens (MATH.md §13;
    Chen, Lin, Polyanskiy & Rigollet, arXiv 2510.05554): with a = γ(1 − ρ),

    1 if a < 1 (p_n → 0: every token averages all), ρ if a > 1 (p_n → 1: each keeps itself), 4ρ/(1 + 3ρ) at a = 1
    (p_n → ½: |A|² → (1 + 3ρ)/4, 1 − ρ' → (1 − ρ)/(1 + 3ρ)). The critical γ is 1/(1 − ρ); a is compared with 1
    exactly (γ = 1/(1 − ρ) computed in floating point lands on a = 1 to round-off: pass it so, or use
    :func:`one_layer_rate`'s regimes)."""
    gamma, rho = _check_long_context(gamma, rho)
    a = gamma * (1.0 - rho)
    if abs(a - 1.0) <= 4 * np.finfo(float).eps:
        return 4.0 * rho / (1.0 + 3.0 * rho)
    return 1.0 if a < 1.0 else rho


def one_layer_rate(gamma: float, rho: float) -> float:
    r"""The exponent r of |ρ'_n − lim| ~ C n^{−r} (:func:`one_layer_equiangular`, :func:`one_layer_limit`),
    a = γ(1 − ρ):

    - a < 1: p_n ~ n^{a−1} and 1 − ρ' = (p − q)²(1 − ρ)/|A|² ~ p_n²(1 − ρ)/ρ, so r = 2(1 − a);
    - a > 1: 1 − p_n ~ n^{1−a} and ρ' − ρ = 2ρ(1 − ρ)(1 − p_n) + O((1 − p_n)² + n^{−a}), so r = a − 1;
    - a = 1: p_n = n/(2n − 1) = ½ + O(1/n) and q = O(1/n), so r = 1.

    MATH.md §13's "governed by n^{1 − γ(1 − ρ)}": p_n (or 1 − p_n) ~ n^{∓(1−a)}; the inner product moves by its
    square below the threshold, linearly above."""
    gamma, rho = _check_long_context(gamma, rho)
    a = gamma * (1.0 - rho)
    if abs(a - 1.0) <= 4 * np.finfo(float).eps:
        return 1.0
    return 2.0 * (1.0 - a) if a < 1.0 else a - 1.0


class Equiangular(NamedTuple):
    """The equiangular state of :func:`normalized_equiangular` at the times asked: 1 − ρ(t) and r(t), each of the
    shape of t."""

    one_minus_rho: np.ndarray
    r: np.ndarray


def normalized_equiangular(t, n: int, beta: float, normalization="post", r0: float = 1.0) -> Equiangular:
    r"""n orthonormal tokens under each normalisation (docs/MATH.md §10): their common 1 − ρ(t) and radius r(t).

    Tokens x_i = rθ_i started orthonormal, x_i(0) = r_0 e_i (d >= n), Q = K = V = I, softmax (SA) attention computed
    on the directions, stay equiangular with one radius: ⟨θ_i, θ_j⟩ = ρ for i ≠ j, |x_i| = r. With
    A_i = pθ_i + qΣ_{j≠i}θ_j,

    .. math::

        Z = e^β + (n-1)e^{βρ},\quad p = e^β/Z,\quad q = e^{βρ}/Z,\quad
        F = 2q(1-ρ)(1+(n-1)ρ),\quad a = ⟨θ_i, A_i⟩ = p + (1-p)ρ,

        |A|^2 = p^2 + 2pq(n-1)ρ + q^2(n-1)(1+(n-2)ρ),

    (F = 2⟨P_{θ_i}A_i, θ_j⟩, whence ρ̇ = 2⟨θ̇_i, θ_j⟩) and, ρ(0) = 0, r(0) = r_0:

    ==========  =====================  ===================
    post-LN     ρ̇ = F                  r = 1
    pre-LN      ρ̇ = F/r                ṙ = a
    peri-LN     ρ̇ = F/(r|A|)           ṙ = a/|A|
    nGPT        ρ̇ = αF/|A|             r = 1
    Mix-LN      post-LN's for t < t_0  pre-LN's after, from r(t_0) = 1
    ==========  =====================  ===================

    Hence 1 − ρ ~ e^{−2t} (post), ~ t^{−2} (pre, peri: a, |A| → 1, r ~ t), ~ e^{−2αt} (nGPT). Integrated in
    u = log(1 − ρ) and log r, u̇ = −(F/(1 − ρ))·(1, 1/r, 1/(r|A|), α/|A|), with
    F/(1 − ρ) = 2(1 + (n−1)ρ)/(e^{βe^u} + n − 1), by DOP853 at rtol = 1e-13: 1 − ρ to a relative error of about
    1e-12 however small it is (e^{−40} for post-LN at t = 20).
    Check (n = 8, β = 1, α = 0.2, r_0 = 1): 1 − ρ(1) = 0.6374131 (post), 0.7035699 (pre), 0.4677936 (peri),
    0.8763024 (nGPT). Post-LN is GLPR (6.9) (:func:`equiangular`).

    Parameters
    ----------
    t : array_like
        Times >= 0.
    n : int
        Tokens, >= 2.
    beta : float
        β >= 0.
    normalization : str or meanfield.models.Normalization
        "post", "pre", "peri", ``Normalization("ngpt", alpha=α)``, ``Normalization("mix", switch=t_0)``.
    r0 : float
        The tokens' initial radius r_0 > 0 (pre- and peri-LN; 1 for the unit tokens of post-LN and nGPT; Mix-LN's
        post-LN stretch normalises them, so r_0 matters there only where t_0 <= 0).

    Returns
    -------
    Equiangular
        ``one_minus_rho`` and ``r``, each of the shape of ``t``.
    """
    from ..models.normalization import as_normalization

    norm = as_normalization(normalization)
    if isinstance(n, bool) or int(n) != n or n < 2:
        raise ValueError(f"`n` must be an integer >= 2, got {n!r}.")
    n = int(n)
    if not np.isfinite(beta) or beta < 0:
        raise ValueError(f"`beta` must be finite and >= 0, got {beta!r}.")
    r0 = float(r0)
    if not (np.isfinite(r0) and r0 > 0):
        raise ValueError(f"`r0` must be finite and > 0 (tokens x = rθ, r > 0), got {r0!r}.")
    if not norm.radial and r0 != 1.0:
        raise ValueError(f"normalization {norm!r} keeps unit tokens: `r0` is 1, got {r0!r}.")
    t = np.asarray(t, dtype=float)
    tt = np.atleast_1d(t)
    if np.any(tt < 0) or not np.all(np.isfinite(tt)):
        raise ValueError("`t` must be finite and >= 0.")

    def rhs(variant):
        def f(_, z):
            u, logr = z
            s = np.exp(u)  # 1 − ρ
            rho = 1.0 - s
            E = np.exp(beta * s)  # e^{β(1−ρ)}: p = E/(E + n − 1), q = 1/(E + n − 1)
            p, q = E / (E + n - 1), 1.0 / (E + n - 1)
            g = 2.0 * q * (1.0 + (n - 1) * rho)  # F/(1 − ρ)
            a = p + (1.0 - p) * rho
            length = np.sqrt(p * p + 2.0 * p * q * (n - 1) * rho + q * q * (n - 1) * (1.0 + (n - 2) * rho))
            return variant.equiangular_rates(g, a, length, np.exp(logr))  # the table above, the variant's row
        return f

    order = np.argsort(tt)
    times = tt[order]
    # the stretches of a variant that changes with depth (Mix-LN: post-LN, then pre-LN from t_0), each its variant;
    # a stream that starts on unit vectors (Mix-LN before t_0) starts at r = 1
    starts = [0.0] + [float(b) for b in norm.breakpoints(0.0, float(times[-1]))]
    pieces = [(start, norm.at(start)) for start in starts]
    z = np.array([0.0, np.log(r0) if norm.at(0.0).radial else 0.0])
    values = np.empty((times.size, 2))
    for k, (start, kind) in enumerate(pieces):
        last = k + 1 == len(pieces)
        stop = max(float(times[-1]), start) if last else pieces[k + 1][0]
        inside = (times >= start) & ((times <= stop) if last else (times < stop))
        if stop == start:
            values[inside] = z
            continue
        grid = np.unique(np.append(times[inside], stop))  # the outputs of the stretch and its end
        sol = solve_ivp(rhs(kind), (start, stop), z, method="DOP853", t_eval=grid, rtol=1e-13, atol=1e-15)
        if not sol.success:
            raise RuntimeError(f"the equiangular reduction failed at t = {sol.t[-1]:g}: {sol.message}")
        values[inside] = sol.y[:, np.searchsorted(grid, times[inside])].T
        z = sol.y[:, -1]
    out = np.empty((tt.size, 2))
    out[order] = values
    return Equiangular(np.exp(out[:, 0]).reshape(t.shape), np.exp(out[:, 1]).reshape(t.shape))


#: ``wendel`` sums exact integers up to this n (0.25 s at n = 5·10⁴, d = n/2), Boost's incomplete beta beyond
WENDEL_EXACT_MAX = 50000


def wendel(n: int, d: int) -> float:
    r"""Probability that n iid uniform points on S^{d-1} all lie in some open hemisphere (Wendel 1962).

    .. math:: p_{n,d} = 2^{-(n-1)} \sum_{k=0}^{d-1} \binom{n-1}{k} = P\big(\mathrm{Bin}(n-1, \tfrac12) \le d-1\big)

    (GLPR Theorem 6.7, MATH.md §9): 1 for n <= d, ½ for n = 2d, 11/16 = 0.6875 for (n, d) = (5, 3), 2^{-(n-1)}
    on S^0 (d = 1). Under this event the SA tokens collapse to one point (GLPR Theorem 6.3); the statistic is
    :func:`particles.clusters.in_hemisphere`.

    Exact for n <= :data:`WENDEL_EXACT_MAX`: the shorter tail of the binomial sum in Python integers, then one
    correctly rounded division (values down to 1e-300 keep their relative precision; below, 0). Beyond, the
    binomial distribution function by Boost's regularised incomplete beta function (``scipy.stats.binom.cdf``),
    which agrees with the exact sums to 3e-13 relative (measured at n = 2·10⁴ … 5·10⁴), for any n.

    Parameters
    ----------
    n : int >= 1
        Number of points.
    d : int >= 1
        Dimension of the ambient space (points on S^{d-1}).

    Returns
    -------
    float

    Examples
    --------
    The binomial tail is ½ at n = 2d by symmetry, and 11/16 at (n, d) = (5, 3), exactly (one correctly rounded
    division of integers):

    >>> from meanfield import exact
    >>> exact.wendel(32, 16), exact.wendel(5, 3), exact.wendel(3, 3)
    (0.5, 0.6875, 1.0)
    """
    from fractions import Fraction

    for name, v in (("n", n), ("d", d)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"`{name}` must be an integer >= 1, got {v!r}.")
    n, d = int(n), int(d)
    if d >= n:
        return 1.0
    m = n - 1
    if n > WENDEL_EXACT_MAX:
        from scipy.stats import binom

        return float(binom.cdf(d - 1, m, 0.5))
    # P(Bin(m, ½) <= d − 1) = 1 − P(Bin(m, ½) <= m − d) by symmetry: sum the shorter tail Σ_{k <= last} C(m, k)
    lower = d - 1 < m - d + 1
    last = d - 1 if lower else m - d
    term, total = 1, 1
    for k in range(last):
        term = term * (m - k) // (k + 1)
        total += term
    tail = Fraction(total, 1 << m)
    return float(tail if lower else 1 - tail)


# ---------------------------------------------------------------------- S^{D-1} at β = 0 (Möbius family)
def mobius_mean_factor(s) -> np.ndarray:
    r"""g_3(s): the first moment of p_w on S² is g_3(|w|) w/|w| (MATH.md §3).

    g_3(s) = (1 + s²)/(2s) + ((1 − s²)²/(4s²)) ln((1 − s)/(1 + s)), by its series
    4s/3 − 4s³/15 − … below s = 0.1, where the closed form cancels.
    """
    s = np.asarray(s, dtype=float)
    if np.any((s < 0) | (s >= 1)):
        raise ValueError("`s` must lie in [0, 1).")
    out = np.empty(s.shape)
    small = s < 0.1
    ss = s[small]
    # g = Σ_{j>=1} e_j s^{2j-1}, e_1 = 4/3, e_j = −c_j/2 with c_j = 1/(2j+1) − 2/(2j−1) + 1/(2j−3) for j >= 2
    series = 4.0 / 3.0 * ss
    for j in range(2, 16):
        c = 1.0 / (2 * j + 1) - 2.0 / (2 * j - 1) + 1.0 / (2 * j - 3)
        series = series - 0.5 * c * ss ** (2 * j - 1)
    out[small] = series
    sb = s[~small]
    out[~small] = (1 + sb**2) / (2 * sb) + ((1 - sb**2) ** 2 / (4 * sb**2)) * np.log((1 - sb) / (1 + sb))
    return out


def mobius_radius(t, s0: float) -> np.ndarray:
    r"""s(t) = |w(t)| of the Möbius family on S² at β = 0 (SA and USA, mass 1).

    The direction of w is fixed and ṡ = ½ g_3(s)(1 − s²) (MATH.md §3); solved
    with DOP853 at rtol 1e-13.
    """
    if not 0 <= s0 < 1:
        raise ValueError(f"`s0` must lie in [0, 1), got {s0!r}.")
    t = np.atleast_1d(np.asarray(t, dtype=float))
    if np.any(t < 0):
        raise ValueError("`t` must be >= 0.")
    if s0 == 0 or t.max() == 0:
        return np.full(t.shape, float(s0))
    order = np.argsort(t)
    rhs = lambda _, s: 0.5 * mobius_mean_factor(np.clip(s, 0, 1 - 1e-16)) * (1 - s**2)
    sol = solve_ivp(rhs, (0.0, float(t.max())), [s0], method="DOP853", t_eval=t[order], rtol=1e-13, atol=1e-15)
    out = np.empty(t.shape)
    out[order] = sol.y[0]
    return out


def mobius_rapidity(t, s0: float) -> np.ndarray:
    r"""u(t) = artanh s(t) of the Möbius family on S² at β = 0, which grows without bound (s → 1 saturates float64).

    From ṡ = ½ g_3(s)(1 − s²): u̇ = ½ g_3(tanh u), with
    g_3 = (1 + s²)/(2s) − u sech⁴u/(2s²) (s = tanh u; ln((1−s)/(1+s)) = −2u) computed without cancellation;
    DOP853 at rtol 1e-13. At β = 0 the flow map is tan(ψ/2) ↦ e^{−R} tan(ψ/2), R = 2(u(t) − u(0))
    (:func:`mobius_characteristics`).
    """
    if not 0 <= s0 < 1:
        raise ValueError(f"`s0` must lie in [0, 1), got {s0!r}.")
    t = np.atleast_1d(np.asarray(t, dtype=float))
    if np.any(t < 0):
        raise ValueError("`t` must be >= 0.")
    u0 = float(np.arctanh(s0))
    if s0 == 0 or t.max() == 0:
        return np.full(t.shape, u0)

    def g3(u):
        s = np.tanh(u)
        if s < 0.1:
            return float(mobius_mean_factor(np.array([s]))[0])
        sech2 = 1.0 / np.cosh(u) ** 2
        return (1.0 + s * s) / (2.0 * s) - u * sech2 * sech2 / (2.0 * s * s)

    order = np.argsort(t)
    sol = solve_ivp(lambda _, u: [0.5 * g3(u[0])], (0.0, float(t.max())), [u0], method="DOP853", t_eval=t[order],
                    rtol=1e-13, atol=1e-15)
    out = np.empty(t.shape)
    out[order] = sol.y[0]
    return out


def mobius_characteristics(x0, t: float, w0) -> tuple[np.ndarray, np.ndarray]:
    r"""Where the Möbius solution on S² (β = 0) carries the points x_0 by time t, and the log-Jacobian of its flow.

    With ŵ = w_0/|w_0| and ψ the angle from ŵ, p_w σ is the image of σ under the dilation
    tan(ψ/2) ↦ ((1 − s)/(1 + s)) tan(ψ/2) of the stereographic coordinate from −ŵ, so the flow map from 0 to t
    (axisymmetric, monotone along each meridian) is tan(ψ/2) ↦ e^{−R} tan(ψ/2) with
    R = 2(artanh s(t) − artanh s_0) (:func:`mobius_rapidity`), and its area Jacobian is

    .. math:: J = \frac{e^{-2R}}{\big(\cos^2(ψ_0/2) + e^{-2R}\sin^2(ψ_0/2)\big)^2},

    so log ρ(X(t), t) = log ρ_0(x_0) − log J exactly (docs/MATH.md §6): the oracle of the Lagrangian measure
    through collapse, where s(t) itself rounds to 1.

    Parameters
    ----------
    x0 : array_like, shape (..., 3)
        Unit vectors.
    t : float
    w0 : array_like, shape (3,)
        The initial point of the family, 0 < |w_0| < 1.

    Returns
    -------
    x : ndarray, shape (..., 3)
    log_jacobian : ndarray, shape (...)
    """
    x0 = np.asarray(x0, dtype=float)
    w0 = check_ball_point(w0, 3)
    s0 = float(np.linalg.norm(w0))
    if s0 == 0.0:
        return x0.copy(), np.zeros(x0.shape[:-1])
    e = w0 / s0
    R = 2.0 * (float(mobius_rapidity(t, s0)[0]) - np.arctanh(s0))
    c = np.clip(x0 @ e, -1.0, 1.0)
    perp = x0 - c[..., None] * e
    sin_psi = np.linalg.norm(perp, axis=-1)
    u = np.where(sin_psi[..., None] > 0, perp / np.where(sin_psi > 0, sin_psi, 1.0)[..., None], 0.0)
    half = 0.5 * np.arctan2(sin_psi, c)  # ψ_0/2 in [0, π/2]
    psi = 2.0 * np.arctan(np.tan(half) * np.exp(-R))
    x = np.cos(psi)[..., None] * e + np.sin(psi)[..., None] * u
    log_jacobian = -2.0 * R - 2.0 * np.log(np.cos(half) ** 2 + np.exp(-2.0 * R) * np.sin(half) ** 2)
    return x, log_jacobian


def _causal_pair_time(u, beta: float):
    r"""G at u = log tan(θ/2): G = u + ½ Ei(β(1 − cos θ)) + ½ e^{2β} E1(β(1 + cos θ)), so that t = G(θ_0) − G(θ)."""
    from scipy.special import exp1, expi

    theta = 2.0 * np.arctan(np.exp(u))
    c = np.cos(theta)
    one_minus = 2.0 * np.sin(0.5 * theta) ** 2  # 1 − cos θ without cancellation
    return u + 0.5 * expi(beta * one_minus) + 0.5 * np.exp(2.0 * beta) * exp1(beta * (1.0 + c))


def causal_pair(t, theta0: float, beta: float) -> np.ndarray:
    r"""The angle θ(t) between the second token and the first under causal SA with Q = K = V = I (any S^{d-1}).

    The first token sees only itself and never moves; the second sees both (equal weights), so
    u = (e^{β cos θ} x_1 + e^β x_2)/(e^{β cos θ} + e^β) and, the pair spanning a fixed plane,

    .. math:: \dot\theta = -\frac{\sin\theta}{1 + e^{\beta(1 - \cos\theta)}}.

    With dθ/sin θ = d log tan(θ/2) and, for u = cos θ, e^{β(1−u)}/(1 − u²) = ½ e^{β(1−u)}(1/(1 − u) + 1/(1 + u)),

    .. math:: t = G(\theta_0) - G(\theta),\quad
        G(\theta) = \log\tan\frac{\theta}{2} + \tfrac12\operatorname{Ei}(\beta(1 - \cos\theta))
        + \tfrac12 e^{2\beta} E_1(\beta(1 + \cos\theta))

    (docs/MATH.md §8.4); G is increasing in u = log tan(θ/2) with slope >= 1, so θ(t) is the root of
    G(u) = G(u_0) − t in [u_0 − t, u_0], found by Brent's method to round-off in u.

    Parameters
    ----------
    t : array_like
        Times >= 0.
    theta0 : float
        The initial angle, in (0, π).
    beta : float
        β > 0 (up to about 350, where e^{2β} overflows).
    """
    from scipy.optimize import brentq

    theta0, beta = float(theta0), float(beta)
    if not 0.0 < theta0 < np.pi:
        raise ValueError(f"`theta0` must lie in (0, π), got {theta0!r}.")
    if not 0.0 < beta <= 350.0:
        raise ValueError(f"`beta` must lie in (0, 350], got {beta!r}.")
    t = np.asarray(t, dtype=float)
    if np.any(t < 0) or not np.all(np.isfinite(t)):
        raise ValueError("`t` must be finite and >= 0.")
    u0 = np.log(np.tan(0.5 * theta0))
    g0 = _causal_pair_time(u0, beta)
    out = np.empty(t.shape)
    for i, ti in np.ndenumerate(t):
        if ti == 0.0:
            out[i] = theta0
            continue
        u = brentq(lambda v: _causal_pair_time(v, beta) - (g0 - ti), u0 - ti, u0, xtol=1e-300, rtol=8.9e-16,
                   maxiter=400)
        out[i] = 2.0 * np.arctan(np.exp(u))
    return out


def positional_pair(t, theta0: float, beta: float, decay_gap: float = 0.0, rope_gap: float = 0.0) -> np.ndarray:
    r"""The signed angle φ(t) = θ_2 − θ_1 of the second token to the first under causal SA with Q = K = V = I, a decay
    mask and RoPE phases (docs/MATH.md §13): on S¹ for RoPE, on any S^{d-1} (φ the angle between them) without.

    The first token sees only itself and never moves. The second, at the gap Δs = s_2 − s_1 > 0 after it, weighs
    the first by e^{β⟨R(ωs_2)x_2, R(ωs_1)x_1⟩ − λΔs} = e^{β cos(φ + ωΔs) − λΔs} and itself by e^β, so its velocity
    is p sin(θ_1 − θ_2) with p the first token's softmax weight:

    .. math:: \dot\varphi = -\sin\varphi\; p(\varphi),\qquad
        p(\varphi) = \frac{1}{1 + e^{\beta(1 - \cos(\varphi + \alpha)) + L}},\quad L = \lambda\Delta s,\
        \alpha = \omega\Delta s .

    For φ_0 in (0, π), φ decreases to 0 without reaching it, and separating the variables, with
    c = 1 + e^{L + β(1 − cos α)} (the rate of the linearisation at φ = 0 is 1/c),

    .. math:: t = c\,\log\frac{\tan(\varphi_0/2)}{\tan(\varphi/2)}
        + e^{L}\int_\varphi^{\varphi_0} \frac{e^{\beta(1 - \cos(\psi + \alpha))} - e^{\beta(1 - \cos\alpha)}}
        {\sin\psi}\,d\psi ,

    whose integrand is bounded (it vanishes like ψ at 0); it is integrated by adaptive Gauss–Kronrod quadrature
    (``scipy.integrate.quad``, tolerances 1e-12 relative, 1e-13 absolute: the error in t) and t(φ) inverted by
    Brent's method in u = log tan(φ/2) (dt/du = −(1 + e^{β(1 − cos(φ + α)) + L}), so |dt/du| >= 1 and the root lies
    in [u_0 − t, u_0]). β = 0: φ(t) = 2 arctan(tan(φ_0/2) e^{−t/(1 + e^L)}) exactly (the integral vanishes).

    Parameters
    ----------
    t : array_like
        Times >= 0.
    theta0 : float
        φ_0 in (0, π).
    beta : float
        β >= 0.
    decay_gap : float
        L = λ(s_2 − s_1), finite (the library's two tokens in array order sit at s = ¼, ¾: Δs = ½).
    rope_gap : float
        α = ω(s_2 − s_1), finite.
    """
    from scipy.integrate import quad
    from scipy.optimize import brentq

    theta0, beta = float(theta0), float(beta)
    if not 0.0 < theta0 < np.pi:
        raise ValueError(f"`theta0` must lie in (0, π), got {theta0!r}.")
    if not 0.0 <= beta <= 350.0:
        raise ValueError(f"`beta` must lie in [0, 350], got {beta!r}.")
    L, alpha = float(decay_gap), float(rope_gap)
    if not (np.isfinite(L) and np.isfinite(alpha)):
        raise ValueError(f"`decay_gap` and `rope_gap` must be finite, got {decay_gap!r} and {rope_gap!r}.")
    if L > 700.0:  # e^L of the time scale c = 1 + e^L e0 overflows (the second token is then frozen to round-off)
        raise ValueError(f"`decay_gap` must be <= 700 (e^decay_gap overflows; beyond it the second token moves by less "
                         f"than e^-700 of its angle), got {decay_gap!r}.")
    t = np.asarray(t, dtype=float)
    if np.any(t < 0) or not np.all(np.isfinite(t)):
        raise ValueError("`t` must be finite and >= 0.")
    e0 = np.exp(beta * (1.0 - np.cos(alpha)))
    c = 1.0 + np.exp(L) * e0
    u0 = np.log(np.tan(0.5 * theta0))

    def rest(psi):  # e^{β(1 − cos(ψ + α))} − e^{β(1 − cos α)}, with cos α − cos(ψ + α) = 2 sin(α + ψ/2) sin(ψ/2)
        return e0 * np.expm1(2.0 * beta * np.sin(alpha + 0.5 * psi) * np.sin(0.5 * psi)) / np.sin(psi)

    def time(u):
        phi = 2.0 * np.arctan(np.exp(u))
        integral = 0.0 if beta == 0.0 else quad(rest, phi, theta0, epsabs=1e-13, epsrel=1e-12, limit=200)[0]
        return c * (u0 - u) + np.exp(L) * integral

    out = np.empty(t.shape)
    for i, ti in np.ndenumerate(t):
        if ti == 0.0:
            out[i] = theta0
        elif beta == 0.0:
            out[i] = 2.0 * np.arctan(np.tan(0.5 * theta0) * np.exp(-ti / c))
        else:
            u = brentq(lambda v: time(v) - ti, u0 - ti, u0, xtol=1e-300, rtol=8.9e-16, maxiter=400)
            out[i] = 2.0 * np.arctan(np.exp(u))
    return out


def retrieval_rate(beta: float, mode: int) -> float:
    r"""a_k = k² I_k(β)/(β I_0(β)): the rate of the Fourier mode k of causal SA (Q = K = V = I) linearised about the
    uniform law on [0, 1] × S¹ (:func:`retrieval_profile`); as β → 0, I_k(β)/β ~ (β/2)^k/(β k!), so a_1 → ½ and
    a_k → 0 for k >= 2 (at β = 0 SA averages the seen tokens: only the mean, the mode 1, moves)."""
    from scipy.special import ive

    beta, k = float(beta), int(mode)
    if not (np.isfinite(beta) and beta >= 0):
        raise ValueError(f"`beta` must be finite and >= 0, got {beta!r}.")
    if k < 1:
        raise ValueError(f"`mode` must be a positive integer, got {mode!r}.")
    if beta == 0.0:
        return 0.5 if k == 1 else 0.0
    return k * k * float(ive(k, beta) / ive(0, beta)) / beta


def retrieval_profile(sigma, t, beta: float, decay: float, modes=(1,), weights=None, position: float = 1.0):
    r"""The retrieval profile of causal SA with a decay mask: the linear response at time t of the token at
    ``position`` s (default 1, the last) to the tokens at the source position σ < s (Duerinckx, Geshkovski & Rossi,
    arXiv 2605.09213, the kinetic theory of lost-in-the-middle; docs/MATH.md §13).

    Linearise causal SA (Q = K = V = I) with the decay mask e^{−λ(s − τ)} about the uniform law 1/2π on
    [0, 1] × S¹: the field is (1/β)∂_θ log Z, Z(s, θ) = ∫_0^s e^{−λ(s − τ)} ∫ e^{β cos(θ − φ)} f(τ, φ) dφ dτ, so a
    perturbation f = 1/2π + ε g has Fourier modes obeying a Volterra equation in s,

    .. math:: \partial_t \hat g_k(s) = a_k \int_0^s \kappa(s, \tau)\,\hat g_k(\tau)\,d\tau,\qquad
        a_k = \frac{k^2 I_k(\beta)}{\beta I_0(\beta)},\quad
        \kappa(s, \tau) = \frac{\lambda e^{\lambda\tau}}{e^{\lambda s} - 1}

    (the decay weights normalised over [0, s], as SA's Z normalises them; κ = 1/s at λ = 0). The iterated kernels
    are κ^{(j)}(s, σ) = κ(s, σ) Y^{j−1}/(j − 1)! with Y = log((e^{λs} − 1)/(e^{λσ} − 1)) (u = log(e^{λτ} − 1) makes
    κ dτ = du), so the solution from a source ĝ_k(0, ·) = δ_σ is δ_σ + G_k with

    .. math:: G_k(t, s; \sigma) = \kappa(s, \sigma)\,\psi_{a_k t}(Y),\qquad
        \psi_c(y) = \sum_{j \ge 0}\frac{c^{j+1} y^j}{j!\,(j+1)!} = \sqrt{c/y}\, I_1(2\sqrt{c y}),

    the closed form of arXiv 2605.09213 (their a_k = k² I_k(β) is the kernel e^{β cos} without SA's normaliser: the
    same profile at the time t/(β I_0(β))). Returned: Σ_k w_k G_k(t, s; σ) (the δ at σ = s left out). For
    0 < λ and small t it is U-shaped in σ: primacy (G → ∞ like exp(2√(a t log(1/σ))) as σ → 0), recency (κ grows
    with σ) and one interior minimum; the profile increases at σ → s (recency) iff
    t < t_crit = 2(1 − e^{−λs}) Σ w_k a_k / Σ w_k a_k² (:func:`retrieval_threshold`).

    Parameters
    ----------
    sigma : array_like
        Source positions in (0, s).
    t : float
        Time >= 0.
    beta : float
        β >= 0.
    decay : float
        λ, finite (0: the plain causal model, κ = 1/s; no recency).
    modes : sequence of int
        The Fourier modes k >= 1.
    weights : sequence of float, optional
        w_k (default 1 each): the source's mode content (arXiv 2605.09213 weighs k by e^{−π²k²/2M²}).
    position : float
        s in (0, 1].
    """
    from scipy.special import ive

    sigma = np.asarray(sigma, dtype=float)
    s, lam, t = float(position), float(decay), float(t)
    if not 0.0 < s <= 1.0:
        raise ValueError(f"`position` must lie in (0, 1], got {position!r}.")
    if not np.all((sigma > 0) & (sigma < s)):
        raise ValueError(f"`sigma` must lie in (0, position) = (0, {s:g}): the sources before the token.")
    if not np.isfinite(lam):
        raise ValueError(f"`decay` must be finite, got {decay!r}.")
    if not (np.isfinite(t) and t >= 0):
        raise ValueError(f"`t` must be finite and >= 0, got {t!r}.")
    modes = [int(k) for k in np.atleast_1d(modes)]
    w = np.ones(len(modes)) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (len(modes),):
        raise ValueError(f"`weights` must hold one weight per mode ({len(modes)}), got shape {w.shape}.")
    if lam == 0.0:
        kappa, Y = np.full(sigma.shape, 1.0 / s), np.log(s / sigma)
    elif lam < 0.0:  # λe^{λσ}/(e^{λs} − 1) and log((e^{λs} − 1)/(e^{λσ} − 1)) through expm1 (no cancellation at small λσ)
        kappa = lam * np.exp(lam * sigma) / np.expm1(lam * s)
        Y = np.log(np.expm1(lam * s) / np.expm1(lam * sigma))
    else:  # the same divided through by e^{λs} and e^{λσ}: no overflow at large λ
        kappa = lam * np.exp(lam * (sigma - s)) / -np.expm1(-lam * s)
        Y = lam * (s - sigma) + np.log(-np.expm1(-lam * s)) - np.log(-np.expm1(-lam * sigma))
    out = np.zeros(sigma.shape)
    for k, wk in zip(modes, w):
        c = retrieval_rate(beta, k) * t
        if c == 0.0:
            continue
        z = 2.0 * np.sqrt(c * Y)
        # √(c/y) I_1(2√(cy)) = (c/√(cy)) I_1(z), scaled: ive(1, z) e^z; at Y = 0 its limit c
        psi = np.where(Y > 0, c * ive(1, z) * np.exp(z) / np.where(Y > 0, 0.5 * z, 1.0), c)
        out += wk * kappa * psi
    return out


def retrieval_window(sigma: float, width: float, t: float, beta: float, decay: float, last: float) -> float:
    r"""∫_{σ−w}^{σ+w} G(t, s; τ) dτ averaged over s in [1 − ``last``, 1]: the response of the last tokens to a source
    spread over a window of half-width ``width`` = w about ``sigma`` (mode 1; :func:`retrieval_profile`), what
    particles measure (a source must carry tokens). Gauss–Legendre (8 nodes) in s, adaptive quadrature in τ."""
    from scipy.integrate import quad

    if not (0.0 < sigma - width and sigma + width < 1.0 - last and last > 0):
        raise ValueError(f"the source window [{sigma - width:g}, {sigma + width:g}] must lie in (0, 1 − last) = "
                         f"(0, {1.0 - last:g}), before the last tokens.")
    nodes, weights = np.polynomial.legendre.leggauss(8)
    total = 0.0
    for x, wk in zip(nodes, weights):
        s = 1.0 - 0.5 * last + 0.5 * last * x
        total += wk * quad(lambda tau: float(retrieval_profile(np.array([tau]), t, beta, decay, position=s)[0]),
                           sigma - width, sigma + width, epsabs=1e-13, epsrel=1e-11)[0]
    return 0.5 * total


def retrieval_threshold(beta: float, decay: float, modes=(1,), weights=None, position: float = 1.0) -> float:
    r"""t_crit = 2(1 − e^{−λs}) Σ_k w_k a_k / Σ_k w_k a_k²: the time before which the retrieval profile
    (:func:`retrieval_profile`) increases at its end σ → s (recency). From ∂_σ[κ ψ_c(Y)] at σ = s: κ' = λκ,
    ψ_c(0) = c, ψ_c'(0) = c²/2, ∂_σY = −λe^{λs}/(e^{λs} − 1), so the slope is λκ Σ_k w_k c_k (1 − c_k/(2(1 − e^{−λs}))),
    c_k = a_k t, positive iff t < t_crit (arXiv 2605.09213, their t_crit with a_k = k² I_k(β)). λ <= 0: 0 (no
    recency)."""
    lam, s = float(decay), float(position)
    if not 0.0 < s <= 1.0:
        raise ValueError(f"`position` must lie in (0, 1], got {position!r}.")
    if not np.isfinite(lam):
        raise ValueError(f"`decay` must be finite, got {decay!r}.")
    modes = [int(k) for k in np.atleast_1d(modes)]
    w = np.ones(len(modes)) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (len(modes),):
        raise ValueError(f"`weights` must hold one weight per mode ({len(modes)}), got shape {w.shape}.")
    if lam <= 0:
        return 0.0
    a = np.array([retrieval_rate(beta, k) for k in modes])
    den = np.sum(w * a * a)
    if not den > 0:
        raise ValueError(f"no mode moves: Σ w_k a_k² = {den:g} (β = {beta!r}, modes {modes}, weights {w.tolist()}); "
                         "t_crit needs a mode with a_k > 0 and weight > 0.")
    return float(2.0 * -np.expm1(-lam * s) * np.sum(w * a) / den)


# --------------------------------------------------------------------- natural frequencies (docs/MATH.md §11)
def _width(gamma) -> float:
    g = float(gamma)
    if not np.isfinite(g) or g < 0:
        raise ValueError(f"`gamma` (the Lorentzian's half-width γ) must be finite and >= 0, got {gamma!r}.")
    return g


def lorentzian_ott_antonsen(t, z0, gamma: float, c: float = 1.0, center: float = 0.0) -> np.ndarray:
    r"""z(t) = ∫ e^{iθ} dρ̄ at β = 0 with Lorentzian frequencies (half-width γ, centre ω_0) and V = cI (SA = USA).

    On the Ott–Antonsen manifold (Ott & Antonsen, Chaos 18, 037113, 2008; GLPR §7; docs/MATH.md §11) — every
    ρ(·, ω) a Poisson kernel whose parameter a(ω, t) is analytic and bounded in the upper half ω-plane, e.g. a start
    independent of ω — the marginal is the Poisson kernel of z = a(ω_0 + iγ, t) and

    .. math:: \dot z = (iω_0 − γ) z + \tfrac{c}{2}(z − |z|^2 z).

    The phase turns at ω_0; u = |z|² solves the logistic equation u̇ = αu − c u², α = c − 2γ:

    .. math:: u(t) = \frac{u_0}{e^{−αt} − c\,u_0\,\mathrm{expm1}(−αt)/α}\quad(α >= 0;\ α = 0: u_0/(1 + c u_0 t)),
        \qquad u(t) = \frac{u_0 e^{αt}}{1 + c\,u_0\,\mathrm{expm1}(αt)/α}\quad(α < 0),

    written so that nothing overflows. r_∞ = :func:`lorentzian_order_limit`.

    Parameters
    ----------
    t : array_like
        Times >= 0.
    z0 : complex
        z(0), |z0| < 1 (the Poisson parameter of the start).
    gamma : float
        γ >= 0.
    c : float
        V = cI.
    center : float
        ω_0.
    """
    z0 = check_poisson_parameter(z0)
    gamma, c, center = _width(gamma), float(c), float(center)
    t = np.asarray(t, dtype=float)
    if np.any(t < 0) or not np.all(np.isfinite(t)):
        raise ValueError("`t` must be finite and >= 0.")
    u0 = abs(z0) ** 2
    if u0 == 0.0:
        return np.zeros(t.shape, dtype=complex)
    alpha = c - 2.0 * gamma
    if alpha == 0.0:
        u = u0 / (1.0 + c * u0 * t)
    elif alpha > 0:
        u = u0 / (np.exp(-alpha * t) - c * u0 * np.expm1(-alpha * t) / alpha)
    else:
        u = u0 * np.exp(alpha * t) / (1.0 + c * u0 * np.expm1(alpha * t) / alpha)
    return np.sqrt(u) * np.exp(1j * (np.angle(z0) + center * t))


def lorentzian_order_limit(gamma: float, c: float = 1.0) -> float:
    """r_∞ = √(1 − 2γ/c) for 0 <= γ < c/2, else 0 (:func:`lorentzian_ott_antonsen` from any z0 ≠ 0)."""
    gamma, c = _width(gamma), float(c)
    return float(np.sqrt(1.0 - 2.0 * gamma / c)) if c > 0 and gamma < 0.5 * c else 0.0


def _identical_rates(k, beta: float, c: float, normalized: bool) -> np.ndarray:
    """c I_k(β)/(β s) for k >= 1 (s = 1 USA, I_0(β) SA): the rate of mode k of identical oscillators over k², with
    exponentially scaled Bessel functions (the β → 0 limit ½δ_{k1})."""
    from scipy.special import ive

    from ..core.numerics import check_usa_beta

    k = np.asarray(k)
    if beta == 0.0:
        return np.where(k == 1, 0.5 * c, 0.0)
    check_usa_beta(beta, normalized, "the circle")
    scaled = ive(k, beta) / beta  # e^{-β} I_k(β)/β
    return c * (scaled / ive(0, beta) if normalized else scaled * np.exp(beta))


def _check_beta_degrees(beta, degrees):
    beta = float(beta)
    if not np.isfinite(beta) or beta < 0:
        raise ValueError(f"`beta` must be finite and >= 0, got {beta!r}.")
    k = np.asarray(degrees)
    if k.dtype.kind not in "iu" or np.any(k < 1):
        raise ValueError(f"`degrees` must be integers >= 1 (mode 0 is the mass, conserved), got {degrees!r}.")
    return beta, k


def lorentzian_rates(degrees, beta: float, gamma: float, c: float = 1.0, normalized: bool = True) -> np.ndarray:
    r"""Growth rates of the modes k of the incoherent (uniform) state with Lorentzian frequencies (docs/MATH.md §11):

    .. math:: λ_k = k^2\,\frac{c\,I_k(β)}{β\,s} − kγ,\qquad s = 1 \text{ (USA)},\ I_0(β) \text{ (SA)}.

    About the uniform law the mode k of the frequency ω obeys ∂_t ρ̂_k(ω) = −ikω ρ̂_k(ω) + a_k ρ̄̂_k, with
    a_k = k² c I_k(β)/(βs) the identical oscillators' rate and ρ̄̂_k = ∫ g ρ̂_k dω; the dispersion relation
    1 = a_k ∫ g(ω)/(λ + ikω) dω = a_k/(λ + kγ) for Re λ > −kγ (the Lorentzian's residue) gives the identical
    oscillators' rate shifted by −kγ. Exponentially scaled Bessel functions; the β → 0 limit
    (λ_1 = c/2 − γ, λ_k = −kγ for k >= 2, the Ott–Antonsen linearisation) at β = 0.

    Parameters
    ----------
    degrees : array_like of int >= 1
    beta : float >= 0
    gamma : float >= 0
    c : float
        V = cI.
    normalized : bool
        SA (True) or USA.
    """
    beta, k = _check_beta_degrees(beta, degrees)
    gamma = _width(gamma)
    return k * k * _identical_rates(k, beta, float(c), bool(normalized)) - k * gamma


class CriticalWidth(NamedTuple):
    """γ_c and the mode k that goes unstable first (:func:`lorentzian_critical_width`); ``float(w)`` is γ_c."""

    width: float
    mode: int

    def __float__(self) -> float:
        return self.width


def lorentzian_critical_width(beta: float, c: float = 1.0, normalized: bool = True) -> CriticalWidth:
    r"""γ_c = max_k k c I_k(β)/(β s) and the mode k that attains it, as ``CriticalWidth(width, mode)`` (a named
    tuple: ``.width`` is the number, and it unpacks as ``gamma_c, k``): the incoherent state is linearly unstable for
    Lorentzian widths γ < γ_c (:func:`lorentzian_rates`; docs/MATH.md §11: β = 1, c = 1: 0.565159 USA, 0.446390 SA;
    β = 5 USA: 7.002246 at k = 2). k I_k(β) is unimodal in k with its maximum near √β; the search runs to
    k = 2⌈β⌉ + 8, past which the ratio of successive terms is below ½. (0, 1) for c <= 0: never unstable.
    """
    beta, _ = _check_beta_degrees(beta, [1])
    c = float(c)
    if c <= 0:
        return CriticalWidth(0.0, 1)
    k = np.arange(1, 2 * int(np.ceil(beta)) + 9)
    widths = k * _identical_rates(k, beta, c, bool(normalized))
    j = int(np.argmax(widths))
    return CriticalWidth(float(widths[j]), int(k[j]))


def ngpt_rates(degrees, beta: float, alpha: float, d: int = 2, c: float = 1.0, noise: float = 0.0) -> np.ndarray:
    r"""Growth rates of the zonal modes of degree l about the uniform law on S^{d-1} under nGPT's field
    X = α P_θA/|A| (docs/MATH.md §10), Q = qI, K = kI (β = βqk), V = cI, noise D:

    .. math:: σ_l = l(l + d − 2)\Big(\operatorname{sign}(c)\,α\,\frac{I_{l+ν}(β)}{β\,I_{1+ν}(β)} − D\Big),
              \qquad ν = d/2 − 1.

    Derivation: at the uniform law the average is radial, A_0(θ) = a_0 θ with a_0 = c λ_1/λ_0 (SA) or c λ_1 ρ_0
    (USA) — λ_l the Funk–Hecke eigenvalues of e^{β⟨x,y⟩}, ∫ e^{β⟨θ,y⟩}⟨θ,y⟩dσ(y) = λ_1 — so P_θA_0 = 0 and, for
    ρ = ρ_0 + εY_l, X = (α/|a_0|) P_θA_1 ε + O(ε²): nGPT's linearisation is post-LN's, σ_l = l(l + d − 2)(cλ_l/(βλ_0)
    − D) (SA; cλ_lρ_0/β USA), with the drift divided by |a_0|. SA and USA give the same rates; λ_l/λ_1 =
    I_{l+ν}(β)/I_{1+ν}(β). On the circle (d = 2) σ_k = k²(α I_k(β)/(β I_1(β)) − D). At β = 0 the average of the
    uniform law vanishes and the field is undefined (``ValueError``).

    Parameters
    ----------
    degrees : array_like of int >= 1
    beta : float > 0
    alpha : float > 0
        nGPT's α.
    d : int >= 2
        The sphere S^{d-1} (2: the circle; 3: S²).
    c : float
        V = cI (its sign only enters).
    noise : float >= 0
        D.
    """
    from scipy.special import ive

    beta, k = _check_beta_degrees(beta, degrees)
    if not beta > 0:
        raise ValueError("`beta` must be > 0: at β = 0 the uniform law's average A vanishes and nGPT's A/|A| is "
                         "undefined there.")
    alpha, noise = float(alpha), float(noise)
    if not (np.isfinite(alpha) and alpha > 0):
        raise ValueError(f"`alpha` (nGPT's speed of the direction) must be finite and > 0, got {alpha!r}.")
    if not (np.isfinite(noise) and noise >= 0):
        raise ValueError(f"`noise` must be finite and >= 0, got {noise!r}.")
    if isinstance(d, bool) or int(d) != d or d < 2:
        raise ValueError(f"`d` must be an integer >= 2, got {d!r}.")
    if float(c) == 0.0:
        raise ValueError("`c` must be non-zero: with V = 0 the average vanishes and A/|A| is undefined.")
    nu = 0.5 * d - 1.0
    ratio = ive(k + nu, beta) / ive(1.0 + nu, beta)  # I_{l+ν}/I_{1+ν}: the e^{-β} scalings cancel
    return k * (k + d - 2) * (np.sign(c) * alpha * ratio / beta - noise)
