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
- :func:`causal_pair`: the first two tokens of causal SA (docs/MATH.md §8.4): the first never moves, the angle of
  the second to it solves a scalar ODE integrated in closed form with exponential integrals.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.integrate import solve_ivp

# the two densities are the domains' Poisson-kernel laws (their one definition); the oracles built on them are here
from .domains.circle.laws import check_poisson_parameter, wrapped_cauchy, wrapped_cauchy_sample
from .domains.sphere.laws import check_ball_point, mobius_density

__all__ = ["wrapped_cauchy", "ott_antonsen", "ott_antonsen_characteristics", "wrapped_cauchy_sample", "equiangular", "mobius_density",
           "mobius_mean_factor", "mobius_radius", "mobius_rapidity", "mobius_characteristics", "causal_pair",
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
    rtol = 1e-13.
    """
    if int(n) != n or n < 2:
        raise ValueError(f"`n` must be an integer >= 2, got {n!r}.")
    if not np.isfinite(beta) or beta < 0:
        raise ValueError(f"`beta` must be finite and >= 0, got {beta!r}.")
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
    from .models.normalization import as_normalization

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

    from .numerics import check_usa_beta

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
