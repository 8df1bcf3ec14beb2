r"""The circle's spectral sums for empirical measures: the ``spectral`` strategy of particles on S¹.

For Q = K = I, V = cI on the circle: the empirical measure's Fourier moments
c_k = Σ_j w_j e^{-ikθ_j} up to the degree L where the Bessel multipliers fall
below round-off, then K_β*μ(θ) = Σ_{|k|<=L} I_k(β) c_k e^{ikθ} and its derivative
at the queries (MATH.md §2.1), evaluated by the circle's one series evaluator
(:func:`meanfield.domains.circle.fourier.series`). Cost O((n + m) L) instead of
O(nm); the truncation error is bounded per query and returned. Tested against
the ``pairwise`` and ``quadrature`` sums.
"""

from __future__ import annotations

import numba as nb
import numpy as np
from scipy.special import ive

# modules, not names: the kernels are imported while the domain package may still be initialising
from ...core.numerics import EXP_MAX
from . import continuity, energy as circle_energy, fourier, geometry
from .bessel import scaled_bessel

__all__ = ["circle_degree", "moments", "circle_spectral_field", "circle_spectral_divergence", "circle_excess_energy",
           "spectral_coefficients", "series_multipliers", "fourier_moments", "zonal_rate", "zonal_rates",
           "zonal_scale", "self_query_bound"]


def circle_degree(beta: float, tol: float = 1e-17, order: int = 1) -> int:
    """Smallest L with 2 Σ_{k>L} (1 + k/β)^order I_k(β) <= tol · I_0(β) (L >= 1).

    ``order = 1`` bounds the truncation of K_β*μ and its first derivative, ``order = 2`` also the second
    (the divergence of the field). β < 0: that of |β| (|I_k(β)| = I_k(|β|), MATH.md §13)."""
    beta = abs(beta)
    k = np.arange(0, 4 * int(beta) + 80)
    s = ive(k, beta) / ive(0, beta) * (1.0 + (k / beta if beta > 0 else 0.0)) ** order
    tail = 2.0 * (np.cumsum(s[::-1])[::-1] - s)  # tail[L] = 2 Σ_{k>L}
    return int(max(1, np.argmax(tail <= tol)))


@nb.njit(parallel=True, cache=True)
def moments(x, w, L, nchunk):
    """c_k = Σ_j w_j e^{-ikθ_j}, k = 0..L, with e^{iθ_j} = x_j0 + i x_j1 (power recurrence)."""
    n = x.shape[0]
    acc = np.zeros((nchunk, L + 1), dtype=np.complex128)
    size = (n + nchunk - 1) // nchunk
    for c in nb.prange(nchunk):
        for j in range(c * size, min(n, (c + 1) * size)):
            z = complex(x[j, 0], -x[j, 1])
            p = complex(w[j], 0.0)
            for k in range(L + 1):
                acc[c, k] += p
                p *= z
    return acc.sum(axis=0)


def fourier_moments(x, w, L: int):
    """:func:`moments` of the points x (n, 2) with weights w, in chunks of about 4096 points (at most 64)."""
    return moments(x, w, L, max(1, min(64, x.shape[0] // 4096 + 1)))


def circle_spectral_field(points, weights, queries, beta: float, normalized: bool = True, c: float = 1.0,
                          degree: int | None = None):
    r"""The Q = K = I, V = cI field on the circle in O((n + m)L) operations.

    Parameters
    ----------
    points : array_like, shape (n, 2)
    weights : array_like, shape (n,)
    queries : array_like, shape (m, 2)
    beta : float
    normalized : bool
        SA or USA.
    c : float
        V = cI.
    degree : int, optional
        Truncation degree L (default :func:`circle_degree`, multipliers below 1e-17).

    Returns
    -------
    velocity : ndarray, shape (m, 2)
    error_bound : ndarray, shape (m,)
        A bound on |velocity − exact|: with T_D = 2Σ_{k>L} e^{-β}I_k(β) Σ|w| and
        T_N = 2Σ_{k>L} (k/β) e^{-β}I_k(β) Σ|w| the truncation errors of the
        (scaled) K_β*μ and (1/β)∂_θK_β*μ, the SA error is
        |c| (T_N + |v/c| T_D)/(D − T_D) (``inf`` where D <= T_D: no guarantee)
        and the USA error |c| e^β T_N.
    """
    x = np.ascontiguousarray(points, dtype=float)
    q = np.ascontiguousarray(queries, dtype=float)
    w = np.asarray(weights, dtype=float)
    L = circle_degree(beta) if degree is None else int(degree)
    ck = fourier_moments(x, w, L)
    Dm, Nm = continuity.bessel_multipliers(L, beta)  # 2π e^{-β} I_k and 2π i k e^{-β} I_k / β
    num, den = fourier.series(q, Nm * ck / (2 * np.pi), Dm * ck / (2 * np.pi))
    # truncation bounds
    k = np.arange(L + 1, L + 200)
    Ik = np.abs(scaled_bessel(k, beta))
    mass = np.sum(np.abs(w))
    TD = 2.0 * np.sum(Ik) * mass
    TN = (2.0 * np.sum(k * Ik) / abs(beta) * mass) if beta != 0 else 0.0
    if normalized:
        v = c * num / den
        margin = den - TD
        with np.errstate(divide="ignore"):
            bound = np.where(margin > 0, abs(c) * (TN + np.abs(num / den) * TD) / np.where(margin > 0, margin, 1.0), np.inf)
    else:
        if beta > EXP_MAX:
            raise OverflowError(f"USA on the circle overflows float64 for β = {beta:g}.")
        v = c * np.exp(beta) * num
        bound = np.full(num.shape, abs(c) * np.exp(beta) * TN)
    tangent = geometry.tangents(q)
    return v[:, None] * tangent, bound


def series_multipliers(L: int, beta: float):
    """(N, D, N2): the multipliers taking moments c_k/2π (k = 0..L) to the series coefficients of (1/β)S', S and
    (1/β)S'' — 2πik e^{-β}I_k/β, 2π e^{-β}I_k and −2πk² e^{-β}I_k/β (:func:`continuity.bessel_multipliers`)."""
    Dm, Nm = continuity.bessel_multipliers(L, beta)
    return Nm, Dm, 1j * np.arange(L + 1) * Nm


def spectral_coefficients(ck, beta: float):
    """(A, D, A2): the series coefficients of (1/β)S', S and (1/β)S'' for moments ``ck`` = c_k/2π, k = 0..L."""
    Nm, Dm, N2 = series_multipliers(ck.size - 1, beta)
    return Nm * ck, Dm * ck, N2 * ck


@nb.njit(cache=True)
def zonal_rate(z, A, D, A2, beta, normalized, scale):
    r"""(v, ∂_θ v) at one point z = e^{iθ} from the series coefficients of :func:`spectral_coefficients`.

    SA: v = scale·S'/(βS), ∂_θ v = scale·(S''/(βS) − β(S'/(βS))²); USA: v = scale·S'/β, ∂_θ v = scale·S''/β
    (``scale`` = c for SA, c e^β for USA; docs/MATH.md §6).
    """
    p = z
    num = 0.0
    den = D[0].real
    num2 = 0.0
    for k in range(1, A.size):
        num += 2.0 * (A[k] * p).real
        den += 2.0 * (D[k] * p).real
        num2 += 2.0 * (A2[k] * p).real
        p *= z
    if normalized:
        r = num / den
        return scale * r, scale * (num2 / den - beta * r * r)
    return scale * num, scale * num2


@nb.njit(parallel=True, cache=True)
def zonal_rates(x, A, D, A2, beta, normalized, scale):
    """:func:`zonal_rate` at points x of shape (m, 2): arrays v and ∂_θ v."""
    m = x.shape[0]
    v = np.empty(m)
    div = np.empty(m)
    for i in nb.prange(m):
        v[i], div[i] = zonal_rate(complex(x[i, 0], x[i, 1]), A, D, A2, beta, normalized, scale)
    return v, div


def zonal_scale(beta: float, normalized: bool, c: float) -> float:
    """c (SA) or c e^β (USA), refusing β past float64's exponent range."""
    if normalized:
        return float(c)
    if beta > EXP_MAX:
        raise OverflowError(f"USA on the circle overflows float64 for β = {beta:g}.")
    return float(c * np.exp(beta))


def circle_spectral_divergence(points, weights, queries, beta: float, normalized: bool = True, c: float = 1.0,
                               degree: int | None = None):
    r"""The Q = K = I, V = cI field on the circle and its divergence ∂_θ v, in O((n + m)L) operations.

    With S = K_β*μ (scaled by e^{-β}) and v = c S'/(βS) (SA) or c e^β S'/β (USA),

    .. math:: \partial_\theta v = c\Big(\frac{S''}{\beta S} - \beta\Big(\frac{S'}{\beta S}\Big)^2\Big)
        \ \ (\text{SA}),\qquad \partial_\theta v = c\,e^\beta S''/\beta\ \ (\text{USA}),

    S'' having the multipliers −k² e^{-β}I_k(β) (docs/MATH.md §6); at β = 0 the
    Kuramoto limits v = c Im(z e^{-iθ}), ∂_θ v = −c Re(z e^{-iθ}). The degree
    defaults to :func:`circle_degree` with ``order = 2``.

    Returns
    -------
    velocity : ndarray, shape (m, 2)
        The tangent vectors v(θ) (−sin θ, cos θ).
    divergence : ndarray, shape (m,)
        ∂_θ v at the queries.
    """
    x = np.ascontiguousarray(points, dtype=float)
    q = np.ascontiguousarray(queries, dtype=float)
    w = np.asarray(weights, dtype=float)
    L = circle_degree(beta, order=2) if degree is None else int(degree)
    ck = fourier_moments(x, w, L) / (2 * np.pi)
    A, D, A2 = spectral_coefficients(ck, beta)
    v, div = zonal_rates(q, A, D, A2, float(beta), bool(normalized), zonal_scale(beta, normalized, c))
    return v[:, None] * geometry.tangents(q), div


def circle_excess_energy(points, weights, beta: float) -> float:
    r"""e^{-β}(E_β − m²/2β) of Σ_j w_j δ_{θ_j} on the circle from its Fourier moments, O(nL).

    E_β = (1/2β) Σ_{k∈Z} I_k(β)|c_k|² with c_k = Σ_j w_j e^{-ikθ_j} and m = c_0, so the
    excess is (1/2β)[(e^{-β}I_0(β) − e^{-β})|c_0|² + 2Σ_{k>=1} e^{-β}I_k(β)|c_k|²] (½|c_1|² at β = 0);
    the degree L is :func:`circle_degree` (multipliers below 1e-17).
    """
    x = np.ascontiguousarray(points, dtype=float)
    w = np.asarray(weights, dtype=float)
    if beta == 0.0:
        c1 = moments(x, w, 1, 1)[1]
        return 0.5 * abs(c1) ** 2
    L = circle_degree(beta)
    a2 = np.abs(fourier_moments(x, w, L)) ** 2
    head = np.exp(-beta) * circle_energy.i0_minus_one(beta) if beta < EXP_MAX else ive(0, beta)  # e^{-β}(I_0(β) − 1)
    return float((head * a2[0] + 2.0 * scaled_bessel(np.arange(1, L + 1), beta) @ a2[1:]) / (2.0 * beta))


def self_query_bound(n: int, beta: float) -> float:
    r"""A bound on the SA field error of :func:`circle_spectral_field` at the points themselves, relative to |c|,
    for any n points of equal weights (the particles' use): with t_D, t_N the truncation errors T_D, T_N per unit
    mass (:func:`circle_spectral_field`), the scaled K_β*μ at x_i is >= w_i = Σ|w|/n (the point's own term; the
    others are positive) and |v/c| <= 1 (the SA speed over |c|), so |error| <= |c| n (t_N + t_D)/(1 − n t_D)
    (``inf`` where n t_D >= 1). USA's error |c| e^β T_N is smaller relative to its field's scale |c| e^β Σ|w|.
    """
    L = circle_degree(beta)
    k = np.arange(L + 1, L + 200)
    Ik = np.abs(scaled_bessel(k, beta))
    tD = 2.0 * float(np.sum(Ik))
    tN = 2.0 * float(np.sum(k * Ik)) / abs(beta) if beta != 0 else 0.0
    return n * (tN + tD) / (1.0 - n * tD) if n * tD < 1.0 else float("inf")
