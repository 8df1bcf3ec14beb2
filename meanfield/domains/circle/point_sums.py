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

import functools

import numba as nb
import numpy as np
from scipy.special import ive

# modules, not names: the kernels are imported while the domain package may still be initialising
from ...core import checks
from ...core.numerics import EXP_MAX
from ...core.pool import map_ranges
from ...core.vectors import wide_vectors
from . import continuity, energy as circle_energy, geometry
from .bessel import scaled_bessel

__all__ = ["circle_degree", "moment_chunks", "circle_spectral_field", "circle_spectral_divergence", "circle_excess_energy",
           "spectral_coefficients", "series_multipliers", "fourier_moments", "zonal_rate", "zonal_rates",
           "zonal_scale", "lane_moments", "lane_field", "truncation_tails", "self_query_bound", "repulsive_round_off"]


def circle_degree(beta: float, tol: float = 1e-17, order: int = 1) -> int:
    """Smallest L with 2 Σ_{k>L} (1 + k/|β|)^order |e^{-β}I_k(β)| <= tol · e^{-|β|}I_0(|β|) (L >= 1).

    ``order = 1`` bounds the truncation of the scaled K_β*μ and of its first derivative, ``order = 2`` also the
    second (the divergence of the field). β >= 0: the tail relative to I_0(β). β < 0 (MATH.md §13): |I_k(β)| =
    I_k(|β|) but the scaling e^{-β} = e^{|β|} makes the scaled multipliers e^{2|β|} times those of |β|, so the same
    absolute tail asks the ratio I_k(|β|)/I_0(|β|) below tol e^{-2|β|}; relative to the scaled K_β*μ, which is
    >= Σw for β < 0 (every term e^{β(⟨x,y⟩−1)} >= 1), the truncation is then within tol (the degree of |β| alone
    left 2e-5 at β = −16). Remembered per (β, tol, order): particles ask it at every stage (it was a quarter of a
    field of 10⁴ points)."""
    return _circle_degree(float(beta), float(tol), int(order))


@functools.lru_cache(maxsize=1024)
def _circle_degree(beta: float, tol: float, order: int) -> int:
    b = abs(beta)
    k = np.arange(0, checks.harmonic_table(4 * int(b) + 80, beta))
    if 0 < b < 1e-290:  # k/b overflows: (1 + k/b)^order I_k(b)/I_0(b) by logarithms (I_k(b) ~ (b/2)^k/k! underflows)
        with np.errstate(divide="ignore"):
            s = np.exp(order * (np.log(b + k) - np.log(b)) + np.log(ive(k, b)) - np.log(ive(0, b)))
    else:
        s = ive(k, b) / ive(0, b) * (1.0 + (k / b if b > 0 else 0.0)) ** order
    tail = 2.0 * (np.cumsum(s[::-1])[::-1] - s)  # tail[L] = 2 Σ_{k>L}
    ok = tail <= (tol * np.exp(-2.0 * b) if beta < 0 else tol)
    return int(max(1, np.argmax(ok) if ok.any() else k.size - 1))


def fourier_moments(x, w, L: int):
    """c_k = Σ_j w_j e^{-ikθ_j}, k = 0..L, of the directions of the points x (n, 2) (:func:`lane_moments` in
    chunks of about 4096 points, at most 64)."""
    x = np.asarray(x, dtype=float)
    return lane_moments(x, w, L, moment_chunks(x.shape[0]))


def moment_chunks(n: int) -> int:
    """The chunks of :func:`lane_moments` for n points: about 4096 points each, at most 64 (fixed by n, not by the
    threads: the chunks' sums are added in their order)."""
    return max(1, min(64, n // 4096 + 1))


#: Points per block of :func:`lane_moments` and queries per block of :func:`lane_field`: a block's state, 4 to 6
#: rows of this many doubles, stays in L1 cache, and the loop over a row is long enough for 512-bit vectors.
LANES = 256
BLOCK = 256

#: Tasks per call of the lane sums, pulled by the threads one at a time (:func:`meanfield.core.pool.map_ranges`): a
#: thread that other work holds up takes fewer of them.
TASKS = 16

# The compiled sums below keep a block's state in the rows of one array, with the loop over the block innermost and
# two degrees per pass over it (half the loads and stores per degree): the compiler turns it into 512-bit vector
# instructions (:func:`meanfield.core.vectors.wide_vectors`; numba proves nothing about separate arrays not
# aliasing, and vectorises none of them). What else the vectoriser needs: error_model "numpy" (Python's model
# checks every division for a zero divisor, a branch that keeps the loop scalar), points and queries read from the
# flat arrays x.ravel() (2-D indexing goes through the arrays' run-time strides, which the vectoriser turns into
# gathers and then declines). Plain nogil kernels over a range of chunks or blocks, run as tasks on a thread pool
# (:mod:`meanfield.core.pool`: numba's static prange shares wait for the slowest thread on a loaded machine);
# "contract" fuses a·b + c into one rounding (FMA) and, in the moments, "reassoc" lets a block's sum over its
# points run in vector lanes (a fixed order for a given machine code, whatever the threads), safe in a plain
# kernel (not in a prange one: meanfield.kernels.threads). Measured at n = 10⁶, L = 24, one thread (AVX-512 Xeon,
# under load, CPU time): moments 30 → 7 ms, series 20 → 9 ms.
_REDUCE = {"reassoc", "contract", "nsz"}


@nb.njit(nogil=True, cache=True, fastmath=_REDUCE, error_model="numpy")
def _lane_chunks(xf, w, L, nchunk, c0, c1, acc, mass):
    """Chunks c0..c1−1 of :func:`lane_moments` into acc[c] (Re, Im of c_k) and mass[c] = Σ|w_j|; returns the number
    of points whose direction is undefined (zero or non-finite). One task; no GIL."""
    wide_vectors()
    n = w.shape[0]
    size = (n + nchunk - 1) // nchunk
    st = np.empty((4, LANES))
    zr, zi, pr, pi = st[0], st[1], st[2], st[3]
    bad = 0
    for c in range(c0, c1):
        for k in range(L + 1):
            acc[c, k, 0] = 0.0
            acc[c, k, 1] = 0.0
        m = 0.0
        stop = min(n, (c + 1) * size)
        for j0 in range(c * size, stop, LANES):
            cnt = min(LANES, stop - j0)
            xb, wb = xf[2 * j0:2 * (j0 + cnt)], w[j0:j0 + cnt]  # indices from 0: no negative-index wrap to test
            for s in range(cnt):
                a = xb[2 * s]
                b = xb[2 * s + 1]
                r2 = a * a + b * b
                bad += 0 if (r2 > 0.0) & (r2 < np.inf) else 1
                r = 1.0 / np.sqrt(r2)
                zr[s] = a * r
                zi[s] = -b * r
                pr[s] = wb[s]
                pi[s] = 0.0
                m += abs(wb[s])
            for s in range(cnt, LANES):
                zr[s] = 1.0
                zi[s] = 0.0
                pr[s] = 0.0
                pi[s] = 0.0
            k = 0
            while k < L:  # degrees k and k + 1 in one pass: p_k, then p_{k+1} = p_k z, and p ← p_{k+1} z
                s0r = 0.0
                s0i = 0.0
                s1r = 0.0
                s1i = 0.0
                for s in range(LANES):
                    a = pr[s]
                    b = pi[s]
                    u = zr[s]
                    v = zi[s]
                    s0r += a
                    s0i += b
                    a1 = a * u - b * v
                    b1 = a * v + b * u
                    s1r += a1
                    s1i += b1
                    pr[s] = a1 * u - b1 * v
                    pi[s] = a1 * v + b1 * u
                acc[c, k, 0] += s0r
                acc[c, k, 1] += s0i
                acc[c, k + 1, 0] += s1r
                acc[c, k + 1, 1] += s1i
                k += 2
            if k == L:
                s0r = 0.0
                s0i = 0.0
                for s in range(LANES):
                    s0r += pr[s]
                    s0i += pi[s]
                acc[c, k, 0] += s0r
                acc[c, k, 1] += s0i
        mass[c] = m
    return bad


def lane_moments(x, w, L: int, nchunk: int, with_mass: bool = False):
    """c_k = Σ_j w_j e^{-ikθ_j}, k = 0..L, with e^{iθ_j} = (x_j0 + i x_j1)/|x_j| (rows normalised here); with
    ``with_mass`` also Σ_j |w_j| (the bounds' mass, in the same pass).

    Blocks of :data:`LANES` points side by side, each point carrying its power recurrence p ← p·conj(z) (the
    rows of one array, the lane loop innermost: vector instructions), two degrees per pass; a block's sum over its
    points in the vector lanes, the blocks of a chunk in order, then the chunks (fixed by n, not by the thread
    count) in their order, so the result does not depend on the thread count. Round-off: a term of c_k carries k
    rounded multiplications (≲ 2kε relative), the sums ≲ (n/(LANES·nchunk) + LANES + nchunk)ε Σ|w| in all.
    ``ValueError`` where a point is zero or not finite (no direction) or a weight not finite."""
    x = np.ascontiguousarray(x, dtype=float)
    w = np.ascontiguousarray(w, dtype=float)
    if x.ndim != 2 or x.shape[1] != 2 or w.shape != (x.shape[0],):
        raise ValueError(f"`x` must have shape (n, 2) and `w` shape (n,), got {x.shape} and {w.shape}.")
    xf = x.reshape(-1)
    acc = np.empty((nchunk, L + 1, 2))
    mass = np.empty(nchunk)
    bad = map_ranges(lambda c0, c1: _lane_chunks(xf, w, L, nchunk, c0, c1, acc, mass), nchunk, TASKS,
                     work=x.shape[0] * (L + 1))
    if sum(bad):
        raise ValueError(f"`points`: {sum(bad)} of the {x.shape[0]} points are zero or not finite: they have no "
                         "direction on the circle.")
    if not np.isfinite(mass.sum()):  # NaN or infinite weights would give NaN moments silently
        raise ValueError(f"`weights` must be finite, got Σ|w| = {mass.sum()}.")
    total = acc.sum(axis=0)  # over the chunks in their order
    c = total[:, 0] + 1j * total[:, 1]
    return (c, float(mass.sum())) if with_mass else c


@nb.njit(nogil=True, cache=True, fastmath={"contract"}, error_model="numpy")
def _lane_blocks(qf, A, D, normalized, scale, TN, TD, vf, bound, b0, b1, signed):
    """Blocks b0..b1−1 of :func:`lane_field` (one task; no GIL); returns the number of queries whose direction is
    undefined (zero or non-finite). The SA bound's margin is |D̃| − T_D for ``signed`` weights (D may be negative),
    D̃ − T_D otherwise (D > 0: a computed D̃ <= T_D guarantees nothing)."""
    wide_vectors()
    m = bound.shape[0]
    L = A.size - 1
    st = np.empty((6, BLOCK))
    zr, zi, pr, pi, num, den = st[0], st[1], st[2], st[3], st[4], st[5]
    d0 = D[0].real
    bad = 0
    for b in range(b0, b1):
        i0 = b * BLOCK
        cnt = min(BLOCK, m - i0)
        qb, vb, bb = qf[2 * i0:2 * (i0 + cnt)], vf[2 * i0:2 * (i0 + cnt)], bound[i0:i0 + cnt]  # indices from 0
        for s in range(cnt):
            x = qb[2 * s]
            y = qb[2 * s + 1]
            r2 = x * x + y * y
            bad += 0 if (r2 > 0.0) & (r2 < np.inf) else 1
            r = 1.0 / np.sqrt(r2)
            zr[s] = x * r
            zi[s] = y * r
        for s in range(cnt, BLOCK):
            zr[s] = 1.0
            zi[s] = 0.0
        for s in range(BLOCK):
            pr[s] = zr[s]
            pi[s] = zi[s]
            num[s] = 0.0
            den[s] = d0
        k = 1
        while k < L:  # degrees k and k + 1 in one pass (p = z^k; 2Re(A_k p) = 2A_k.re p.re − 2A_k.im p.im)
            a0r, a0i = 2.0 * A[k].real, -2.0 * A[k].imag
            d0r, d0i = 2.0 * D[k].real, -2.0 * D[k].imag
            a1r, a1i = 2.0 * A[k + 1].real, -2.0 * A[k + 1].imag
            d1r, d1i = 2.0 * D[k + 1].real, -2.0 * D[k + 1].imag
            for s in range(BLOCK):
                x = pr[s]
                y = pi[s]
                u = zr[s]
                v = zi[s]
                x1 = x * u - y * v
                y1 = x * v + y * u
                num[s] = num[s] + a0r * x + a0i * y + a1r * x1 + a1i * y1
                den[s] = den[s] + d0r * x + d0i * y + d1r * x1 + d1i * y1
                pr[s] = x1 * u - y1 * v
                pi[s] = x1 * v + y1 * u
            k += 2
        if k == L:
            a0r, a0i = 2.0 * A[k].real, -2.0 * A[k].imag
            d0r, d0i = 2.0 * D[k].real, -2.0 * D[k].imag
            for s in range(BLOCK):
                num[s] = num[s] + a0r * pr[s] + a0i * pi[s]
                den[s] = den[s] + d0r * pr[s] + d0i * pi[s]
        if normalized:
            for s in range(cnt):
                ratio = num[s] / den[s]
                val = scale * ratio
                margin = (abs(den[s]) if signed else den[s]) - TD
                bb[s] = abs(scale) * (TN + abs(ratio) * TD) / margin if margin > 0 else np.inf
                vb[2 * s] = -val * zi[s]
                vb[2 * s + 1] = val * zr[s]
        else:
            for s in range(cnt):
                val = scale * num[s]
                bb[s] = abs(scale) * TN
                vb[2 * s] = -val * zi[s]
                vb[2 * s + 1] = val * zr[s]
    return bad


def lane_field(q, A, D, normalized: bool, scale: float, TN: float, TD: float, v, bound, signed: bool = False) -> None:
    """The field v (m, 2) and its truncation bound (m,) at the queries q (rows normalised here) from the series
    coefficients A (of (1/β)S') and D (of S), k = 0..L: num = Σ_{k>=1} 2Re(A_k z^k), den = D_0 + Σ_{k>=1}
    2Re(D_k z^k) (:func:`meanfield.domains.circle.fourier.series`, :data:`BLOCK` queries side by side with the
    k-loop outside, two degrees per pass: vector instructions), then SA v = scale·num/den, USA v = scale·num,
    times the unit tangent (−sin θ, cos θ); the bound as :func:`circle_spectral_field` states it. One query's
    value does not depend on the others or on the thread count. ``ValueError`` where a query is zero or not
    finite (no direction). ``v`` and ``bound`` are C-contiguous float arrays (written in place). ``signed``: the
    moments are of signed weights, the SA margin is |D̃| − T_D (:func:`meanfield.core.checks.denominators`)."""
    q = np.ascontiguousarray(q, dtype=float)
    if not (v.flags.c_contiguous and bound.flags.c_contiguous and v.shape == q.shape and bound.shape == q.shape[:1]):
        raise ValueError(f"`v` and `bound` must be C-contiguous of shapes {q.shape} and {q.shape[:1]}, got "
                         f"{v.shape} and {bound.shape}.")
    qf, vf = q.reshape(-1), v.reshape(-1)
    nblock = (q.shape[0] + BLOCK - 1) // BLOCK
    A = np.ascontiguousarray(A, dtype=complex)
    D = np.ascontiguousarray(D, dtype=complex)
    bad = map_ranges(lambda b0, b1: _lane_blocks(qf, A, D, normalized, scale, TN, TD, vf, bound, b0, b1,
                                                 bool(signed)), nblock, TASKS, work=q.shape[0] * A.shape[0])
    if sum(bad):
        raise ValueError(f"`queries`: {sum(bad)} of the {q.shape[0]} queries are zero or not finite: they have no "
                         "direction on the circle.")


def truncation_tails(L: int, beta: float, mass: float):
    """(T_D, T_N) = (2Σ_{k>L} e^{-β}I_k(β), 2Σ_{k>L} (k/|β|) e^{-β}I_k(β)) · Σ|w|: the truncation errors of the
    scaled K_β*μ and of (1/β)∂_θK_β*μ past degree L (:func:`circle_spectral_field`; T_N = 0 at β = 0)."""
    k = np.arange(L + 1, L + 200)
    Ik = np.abs(scaled_bessel(k, beta))
    TD = 2.0 * float(np.sum(Ik)) * mass
    TN = (2.0 * float(np.sum(k * Ik)) / abs(beta) * mass) if beta != 0 else 0.0
    return TD, TN


def circle_spectral_field(points, weights, queries, beta: float, normalized: bool = True, c: float = 1.0,
                          degree: int | None = None):
    r"""The Q = K = I, V = cI field on the circle in O((n + m)L) operations.

    Parameters
    ----------
    points : array_like, shape (n, 2)
        Points on the circle (any non-zero vectors: their directions are taken).
    weights : array_like, shape (n,)
    queries : array_like, shape (m, 2)
        As ``points``.
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
        |c| (T_N + |v/c| T_D)/(D − T_D) (``inf`` where D <= T_D: no guarantee; |D| in place of D for signed
        weights) and the USA error |c| e^β T_N. It counts the truncation only, not round-off (Notes).

    Raises
    ------
    ValueError
        SA, naming ``weights`` and the query, where the field is not finite (D underflowed to 0) or, for signed
        weights, where |D| <= T_D: D may vanish there, a pole of the field (:func:`meanfield.core.checks.denominators`);
        never an inf or NaN returned.

    Notes
    -----
    Compiled in two passes over the points (:func:`lane_moments`, :func:`lane_field`): the moments, then the series
    and the field at the queries, nothing of size n × L allocated. Round-off on top of the truncation, which
    ``error_bound`` does not include for β >= 0: the power recurrence z^k loses about k·ε, so the series are off by
    about L ε Σ|w| in absolute terms, and SA divides them by D = S(q) = Σ_j w_j e^{β(⟨q,y_j⟩−1)}:

        |v − exact| ≲ |c|(T_N + |v/c|T_D)/(D − T_D) + O(L ε |c| Σ|w| / S(q)).

    S(q) is ~Σ|w| where the points crowd near q but can be as small as e^{-2β}Σ|w| at a query far from all of them
    (large β), where the round-off term grows by that factor and may exceed the stated bound. USA's round-off is
    O(|c| e^β L ε Σ|w|), L ε relative to its field's scale |c| e^β Σ|w|. For β < 0 the multipliers reach
    e^{2|β|}/√(2π|β|) while D may be as small as Σ|w| (a cluster): there the round-off
    (:func:`repulsive_round_off`) times Σ|w| is added to T_D and T_N in the returned bound. So it is for signed
    weights, whose D may vanish (a pole of the SA field): |D| <= T_D then raises (Raises).
    """
    x = np.ascontiguousarray(points, dtype=float)
    q = np.ascontiguousarray(queries, dtype=float)
    w = np.ascontiguousarray(weights, dtype=float)
    L = circle_degree(beta) if degree is None else int(degree)
    ck, mass = lane_moments(x, w, L, moment_chunks(x.shape[0]), with_mass=True)  # mass = Σ|w|
    Dm, Nm = continuity.bessel_multipliers(L, beta)  # 2π e^{-β} I_k and 2π i k e^{-β} I_k / β
    TD, TN = truncation_tails(L, beta, mass)
    signed = bool(np.any(w < 0.0))
    if beta < 0 or signed:  # the round-off of the e^{2|β|}-sized multipliers, no longer O(Lε) of the field, or of a
        R = repulsive_round_off(L, beta) * mass  # D that may vanish (signed weights): in the bound (docstring)
        TD, TN = TD + R, TN + R
    scale = zonal_scale(beta, normalized, c)
    v = np.empty((q.shape[0], 2))
    bound = np.empty(q.shape[0])
    lane_field(q, Nm * ck / (2 * np.pi), Dm * ck / (2 * np.pi), bool(normalized), scale, TN, TD, v, bound, signed)
    if normalized:
        checks.denominators(v, bound, signed)
    return v, bound


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
        c1 = fourier_moments(x, w, 1)[1]
        return 0.5 * abs(c1) ** 2
    L = circle_degree(beta)
    a2 = np.abs(fourier_moments(x, w, L)) ** 2
    head = np.exp(-beta) * circle_energy.i0_minus_one(beta) if beta < EXP_MAX else ive(0, beta)  # e^{-β}(I_0(β) − 1)
    return float((head * a2[0] + 2.0 * scaled_bessel(np.arange(1, L + 1), beta) @ a2[1:]) / (2.0 * beta))


def self_query_bound(n: float, beta: float) -> float:
    r"""A bound on the SA field error of :func:`circle_spectral_field` at the points themselves, relative to |c|,
    for points of non-negative weights whose effective count is n = Σ|w|/min|w| (n points of equal weights: n; a
    zero weight: n = inf), the particles' use.

    With t_D, t_N the truncation errors T_D, T_N per unit mass (:func:`circle_spectral_field`) and |v/c| <= 1
    (the SA speed over |c|): β >= 0: the scaled K_β*μ at x_i is >= w_i >= Σ|w|/n (the point's own term e^0 = 1;
    the others are positive), so |error| <= |c| n (t_N + t_D)/(1 − n t_D) (``inf`` where n t_D >= 1; at n = inf
    ``inf``). β < 0 (MATH.md §13): every scaled term e^{β(⟨x,y⟩−1)} = e^{|β|(1−⟨x,y⟩)} >= 1, so the scaled K_β*μ
    is >= Σ|w| at any query (a zero-weight particle's too) and |error| <= |c| (t_N + t_D + r)/(1 − t_D − r),
    free of n, where r (:func:`repulsive_round_off`) bounds the round-off per unit mass: the
    multipliers reach e^{2|β|}/√(2π|β|) while the sum they make may be as small as Σ|w| (a cluster), and the power
    recurrence loses about kε per moment (measured on clusters of 2000 points at β = −4 … −16: 10x to 70x under
    r). USA's error |c| e^β T_N is smaller relative to its field's scale |c| e^β Σ|w|.
    """
    tD, tN = truncation_tails(circle_degree(beta), beta, 1.0)
    if beta < 0:
        r = repulsive_round_off(circle_degree(beta), beta)
        return (tN + tD + r) / (1.0 - tD - r) if tD + r < 1.0 else float("inf")
    if not np.isfinite(n):
        return float("inf")
    return n * (tN + tD) / (1.0 - n * tD) if n * tD < 1.0 else float("inf")


def repulsive_round_off(L: int, beta: float) -> float:
    """r = 2ε Σ_{k<=L} (1 + k)(1 + k/|β|) |e^{-β}I_k(β)|: a bound on the round-off per unit mass of the scaled
    K_β*μ and (1/β)∂_θK_β*μ of degree L (the power recurrence loses about kε per moment, the series ε per term),
    for β < 0, where the multipliers reach e^{2|β|}/√(2π|β|) (:func:`self_query_bound`)."""
    k = np.arange(L + 1)
    Ik = np.abs(scaled_bessel(np.arange(-1, L + 2), beta))  # |e^{-β}I_j(β)|, j = −1..L+1
    # (1 + k/|β|)|I_k| = |I_k| + |I_{k−1} − I_{k+1}|/2 (I_{k−1}(x) − I_{k+1}(x) = (2k/x)I_k(x)): no k/|β| to overflow
    # at a subnormal β
    scaled = Ik[1:-1] + np.where(k > 0, 0.5 * np.abs(Ik[:-2] - Ik[2:]), 0.0)
    return 2.0 * np.finfo(float).eps * float(np.sum((1.0 + k) * scaled))
