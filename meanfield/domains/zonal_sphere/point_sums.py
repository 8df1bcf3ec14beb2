r"""The spectral sums of rings: the field of a zonal measure Σ_j w_j σ_{θ_j} (w_j on the ring of polar angle θ_j,
uniform on it) at the polar angles of other rings — the ``spectral`` strategy of the zonal Lagrangian measure.

With the ring moments ĝ_l = Σ_j w_j p̄_l(cos θ_j) (ĝ_0 the mass) Funk–Hecke gives the kernel sum

    φ(u) = ∫ e^{β⟨x,y⟩} dμ(y) = Σ_l m_l ĝ_l p̄_l(u),    m_l = λ_l/|S^{d−1}|,

exactly (MATH.md §9; :mod:`.basis`), truncated at the degree K past which the terms are below 1e-17 of the first for
any probability measure (:func:`.basis.degree`): O((n + m)K) for n rings and m queries, K set by β and d alone,
however sharp the rings' clusters. From φ (the velocity potential ψ of :mod:`.continuity`):

    θ̇ = −ψ′(cos θ) sin θ,      div_S X = Δψ = (1 − u²)ψ″ − (d − 1)uψ′,

the second the log-Jacobian rate of the Lagrangian measure (docs/MATH.md §6), and the energy
E_β = (1/2β) Σ_l λ_l |μ_l|² = (1/2β) Σ_l m_l ĝ_l².

Two compiled passes (issue 50: 10⁶ rings), nothing of size n × K: the moments, each ring running the three-term
recurrence of p̄_l (:mod:`..gegenbauer`) in a lane with its own accumulators, then the series at the queries, each
running the recurrences of p̄_l, p̄_l′, p̄_l″ — O((n + m)K) operations and O(K) memory per thread, results
independent of the thread count. :func:`matrix_ring_sums`, the same series through NumPy tables (n × (K + 1)), is
their reference. ``benchmarks/bench_million_zonal.py`` times a step of 10⁶ rings.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ...core import checks
from ...core.numerics import EXP_MAX
from ...core.pool import map_ranges
from ..gegenbauer import degree, harmonic_dimension, orthonormal, recurrence, scaled_multipliers

__all__ = ["ring_degree", "ring_moments", "ring_field", "ring_field_and_divergence", "matrix_ring_sums",
           "ring_excess_energy", "excess_from_moments", "mean_excess"]


def ring_degree(d: int, beta: float) -> int:
    """K of :func:`.basis.degree`: the ring sums' truncation degree."""
    return degree(d, beta)


def _angles(points) -> np.ndarray:
    x = np.asarray(points, dtype=float)
    return x[..., 0] if x.ndim >= 1 and x.shape[-1] == 1 else x


#: Rings per lane block of the moments pass (their recurrences and per-lane accumulators, K + 4 rows of this many
#: doubles, ~20 kB at K ~ 38, stay in L1 cache) and query rings per block of the field pass (ten rows).
LANES = 64
BLOCK = 256

#: Parts per call of the compiled sums, pulled by the threads one at a time (:func:`meanfield.core.pool.map_ranges`).
TASKS = 16

#: Rings per chunk of the moments: the chunks (at most 64) are fixed by n, summed in their order.
CHUNK = 4096


def _chunks(n: int) -> int:
    return max(1, min(64, n // CHUNK + 1))


def _steps(d: int, K: int):
    """(a, c) with a_l = 1/b_{l+1}, c_l = b_l/b_{l+1} (l = 0..K): the recurrence p̄_{l+1} = a_l u p̄_l − c_l p̄_{l−1}
    (:func:`.gegenbauer.recurrence`), a multiplication for the matrix path's division by b_{l+1}."""
    b = recurrence(d, K + 1)
    return np.ascontiguousarray(1.0 / b[1:]), np.ascontiguousarray(b[:-1] / b[1:])


# The compiled sums keep a block's state in the rows of one array, with the loop over the block innermost (vector
# instructions; the pattern of the circle's lane sums, meanfield.domains.circle.point_sums): plain nogil kernels over
# a range of chunks or blocks, run as tasks on the library's thread pool (meanfield.core.pool); "contract" fuses
# a·b + c into one rounding (FMA). Each task writes its own rows of the output: the result does not depend on the
# thread count.


# sin and cos on [0, π] for the compiled passes, vectorisable (libm's, a call per ring, cost more than the
# recurrences: 25 ms per 10⁶ angles against 3 ms for both here): θ = kπ/2 + r, k = 0, 1, 2, |r| <= π/4 (Cody–Waite:
# θ − kπ/2_hi is exact by Sterbenz's lemma for k = 1, 2 on [π/4, π]), then the Taylor polynomials of sin r to r¹⁷ and
# cos r to r¹⁸ (truncation below 1e-19), selected and signed by k without branches: within ~1 ulp relative of the
# correctly rounded values (tests/meanfield/test_ring_sums.py), sin θ relative near both poles.
_PIO2_HI = 1.5707963267948966
_PIO2_LO = 6.123233995736766e-17
_S3, _S5, _S7, _S9 = -1 / 6, 1 / 120, -1 / 5040, 1 / 362880
_S11, _S13, _S15, _S17 = -1 / 39916800, 1 / 6227020800, -1 / 1307674368000, 1 / 355687428096000
_C2, _C4, _C6, _C8, _C10 = -1 / 2, 1 / 24, -1 / 720, 1 / 40320, -1 / 3628800
_C12, _C14, _C16, _C18 = 1 / 479001600, -1 / 87178291200, 1 / 20922789888000, -1 / 6402373705728000


@nb.njit(inline="always", fastmath={"contract"})
def _sincos(t):
    """(sin θ, cos θ): to ~1 ulp on [0, π] (the comment above), to ~|θ|ε elsewhere."""
    k = np.floor(t * 0.6366197723675814 + 0.5)  # the nearest multiple of π/2: 0, 1 or 2
    r = (t - k * _PIO2_HI) - k * _PIO2_LO
    z = r * r
    s = r + r * z * (_S3 + z * (_S5 + z * (_S7 + z * (_S9 + z * (_S11 + z * (_S13 + z * (_S15 + z * _S17)))))))
    c = 1.0 + z * (_C2 + z * (_C4 + z * (_C6 + z * (_C8 + z * (_C10 + z * (_C12 + z * (_C14 + z * (_C16
                                                                                                 + z * _C18))))))))
    q = k - 4.0 * np.floor(0.25 * k)  # the quadrant, 0..3 (any θ; accurate to ~|θ|ε off [0, π])
    odd = q == 1.0 or q == 3.0
    return (c if odd else s) * (-1.0 if q >= 2.0 else 1.0), (s if odd else c) * (-1.0 if q == 1.0 or q == 2.0 else 1.0)


@nb.njit(cache=True, fastmath={"contract"})
def sincos(theta, sin_out, cos_out):
    """sin θ and cos θ of the angles θ in [0, π] into the two arrays: the compiled passes' own (the comment above)."""
    for i in range(theta.shape[0]):
        sin_out[i], cos_out[i] = _sincos(theta[i])


@nb.njit(nogil=True, cache=True, fastmath={"contract"}, error_model="numpy")
def _moment_chunks(theta, w, a, c, nchunk, c0, c1, acc):
    """Chunks c0..c1−1 of :func:`ring_moments` into acc[chunk]: ĝ_0..ĝ_K, then Σ|w_j| (one task; no GIL)."""
    n = theta.shape[0]
    K = acc.shape[1] - 2
    size = (n + nchunk - 1) // nchunk
    for ch in range(c0, c1):
        st = np.zeros((5 + K, LANES))  # u, p̄_{l−1}, p̄_l (weighted), Σ|w|, then the accumulators of l = 0..K
        stop = min(n, (ch + 1) * size)
        for j0 in range(ch * size, stop, LANES):
            cnt = min(LANES, stop - j0)
            for s in range(LANES):
                if s < cnt:
                    st[0, s] = _sincos(theta[j0 + s])[1]
                    st[1, s] = w[j0 + s]
                else:
                    st[0, s] = 0.0
                    st[1, s] = 0.0
            u, q, p, mass, r = st[0], st[1], st[2], st[3], st[4]
            a0 = a[0]
            for s in range(LANES):  # l = 0: w p̄_0 = w; p̄_1 = a_0 u
                mass[s] += abs(q[s])
                r[s] += q[s]
                p[s] = a0 * u[s] * q[s]
            for l in range(1, K + 1):
                r = st[4 + l]
                al = a[l]
                cl = c[l]
                for s in range(LANES):
                    x = p[s]
                    r[s] += x
                    p[s] = al * u[s] * x - cl * q[s]
                    q[s] = x
        for l in range(K + 2):  # ĝ_l in column l, Σ|w| in column K + 1
            total = 0.0
            row = 4 + l if l <= K else 3
            for s in range(LANES):
                total += st[row, s]
            acc[ch, l] = total


@nb.njit(nogil=True, cache=True, fastmath={"contract"}, error_model="numpy")
def _field_blocks(theta, a, c, M, N, second, normalized, scale, beta, dm1, TN, TD, vel, out, b0, b1, signed=False):
    """Blocks b0..b1−1 of :func:`_ring_sums` (one task; no GIL): ψ′ (and ψ″) from the series, then θ̇ into ``vel``
    and the divergence (``second``) or the truncation bound into ``out`` (its margin |φ| − T_D for ``signed``
    weights, φ − T_D otherwise: φ > 0 for non-negative ones)."""
    m = theta.shape[0]
    K = M.size - 1
    for blk in range(b0, b1):
        i0 = blk * BLOCK
        cnt = min(BLOCK, m - i0)
        st = np.zeros((11, BLOCK))  # u, p̄_{l−1}, p̄_l, p̄′_{l−1}, p̄′_l, p̄″_{l−1}, p̄″_l, φ, φ′/β, φ″/β, sin θ
        for s in range(cnt):
            st[10, s], st[0, s] = _sincos(theta[i0 + s])
        u, q, p, dq, dp, sq, sp, den, num, num2 = st[0], st[1], st[2], st[3], st[4], st[5], st[6], st[7], st[8], st[9]
        a0 = a[0]
        for s in range(BLOCK):  # l = 0: p̄_0 = 1; p̄_1 = a_0 u, p̄_1′ = a_0
            q[s] = 1.0
            p[s] = a0 * u[s]
            dp[s] = a0
            den[s] = M[0]
        for l in range(1, K + 1):
            Ml = M[l]
            Nl = N[l]
            al = a[l]
            cl = c[l]
            if second:
                for s in range(BLOCK):
                    x = p[s]
                    dx = dp[s]
                    sx = sp[s]
                    den[s] += Ml * x
                    num[s] += Nl * dx
                    num2[s] += Nl * sx
                    p[s] = al * u[s] * x - cl * q[s]
                    dp[s] = al * (x + u[s] * dx) - cl * dq[s]
                    sp[s] = al * (2.0 * dx + u[s] * sx) - cl * sq[s]
                    q[s] = x
                    dq[s] = dx
                    sq[s] = sx
            else:
                for s in range(BLOCK):
                    x = p[s]
                    dx = dp[s]
                    den[s] += Ml * x
                    num[s] += Nl * dx
                    p[s] = al * u[s] * x - cl * q[s]
                    dp[s] = al * (x + u[s] * dx) - cl * dq[s]
                    q[s] = x
                    dq[s] = dx
        for s in range(cnt):
            i = i0 + s
            us = u[s]
            sn = abs(st[10, s])  # not √(1 − u²): that loses ε/sin²θ of sin²θ near the poles
            sin2 = sn * sn
            if normalized:
                ratio = num[s] / den[s]
                psi1 = scale * ratio
                if second:
                    out[i] = sin2 * (scale * (num2[s] / den[s] - beta * ratio * ratio)) - dm1 * us * psi1
                else:
                    margin = (abs(den[s]) if signed else den[s]) - TD
                    out[i] = abs(scale) * (TN + abs(ratio) * TD) / margin if margin > 0 else np.inf
            else:
                psi1 = scale * num[s]
                if second:
                    out[i] = sin2 * (scale * num2[s]) - dm1 * us * psi1
                else:
                    out[i] = abs(scale) * TN
            vel[i] = -psi1 * sn


def ring_moments(points, weights, K: int, d: int) -> np.ndarray:
    """ĝ_l = Σ_j w_j p̄_l(cos θ_j), l = 0..K, of rings at polar angles ``points`` (n, 1) with masses ``weights``.

    Compiled, nothing of size n × K: each ring runs the three-term recurrence of p̄_l (:mod:`..gegenbauer`) in one of
    :data:`LANES` lanes with its own accumulators; the lanes, then the chunks of :data:`CHUNK` rings (fixed by n,
    not by the thread count), are summed in a fixed order: the same bits on any thread count. Round-off: p̄_l(u)
    carries the recurrence's rounding (a few ε per step, relative to the terms a_l u p̄_l and c_l p̄_{l−1}, carried
    along by the stable recurrence), the sum over n rings (n/LANES/nchunk + LANES + nchunk)ε Σ_j|w_j p̄_l(u_j)|."""
    return _moments(_contiguous_angles(points), weights, K, d)[0]


def _contiguous_angles(points) -> np.ndarray:
    """The polar angles as one contiguous float64 vector: a copy of a strided column (the Lagrangian state's θ) costs
    less than the compiled passes reading it strided (their loads no longer vectorise: 39 against 32 ms with the copy,
    10⁶ rings, one thread)."""
    return np.ascontiguousarray(_angles(points), dtype=float).reshape(-1)


def _moments(theta, weights, K: int, d: int):
    """(ĝ_0..ĝ_K, Σ_j|w_j|) in one compiled pass (:func:`ring_moments`) of the contiguous angles ``theta``."""
    w = np.ascontiguousarray(weights, dtype=float).reshape(-1)
    if w.shape != theta.shape:
        raise ValueError(f"`weights` must hold one mass per ring: {w.size} masses for {theta.size} rings.")
    K = int(K)
    a, c = _steps(d, K)
    nchunk = _chunks(theta.size)
    acc = np.zeros((nchunk, K + 2))
    map_ranges(lambda c0, c1: _moment_chunks(theta, w, a, c, nchunk, c0, c1, acc), nchunk, TASKS,
               work=theta.size * (K + 1))
    total = acc.sum(axis=0)  # over the chunks in their order
    return total[:-1], float(total[-1])


def _multipliers(d, K, beta):
    m = scaled_multipliers(d, K, beta)
    n = np.zeros(K + 1)
    if beta == 0.0:
        if K >= 1:
            n[1] = 1.0 / d
    else:
        n[1:] = m[1:] / beta
    return m, n


def _tails(d, K, beta, mass):
    """(T_D, T_N): the truncation errors of the scaled φ and φ′/β past degree K for rings of total mass ``mass``:
    |ĝ_l| <= mass N^{1/2}, |p̄_l| <= N^{1/2}, |p̄_l′| <= N^{1/2} l(l+d−2)/(d−1) (the Gegenbauer maxima at ±1)."""
    l = np.arange(K + 1, K + 65, dtype=float)
    mt, nt = _multipliers(d, K + 64, beta)
    Nl = harmonic_dimension(d, l)
    return mass * float(np.sum(mt[K + 1:] * Nl)), mass * float(np.sum(nt[K + 1:] * Nl * l * (l + d - 2.0) / (d - 1.0)))


def _ring_sums(points, weights, queries, beta, normalized, c, d, second):
    """(θ̇ (m,), divergence (m,) if ``second`` else the bound on |ψ′ − exact| (m,)): the two compiled passes,
    the moments of the rings and the series at the queries (module docstring)."""
    beta = float(beta)
    if not normalized and beta > EXP_MAX:
        raise OverflowError(f"USA on S^{d - 1} overflows float64 for β = {beta:g} (it keeps e^β unscaled).")
    K = ring_degree(d, beta)
    theta = _contiguous_angles(points)
    g, mass = _moments(theta, weights, K, d)
    if normalized and not mass > 0:
        raise ValueError(f"`weights`: SA divides by the kernel sum φ, which is 0 for rings of total mass "
                         f"Σ|w| = {mass:g} ({np.size(weights)} rings).")
    m, n = _multipliers(d, K, beta)
    TD, TN = _tails(d, K, beta, mass)
    signed = bool(np.any(np.asarray(weights) < 0.0))
    if signed:  # φ may vanish: the series' round-off counts, ~lε of its terms |m_l ĝ_l p̄_l| <= m_l N_l Σ|w| (φ′'s)
        l = np.arange(K + 1, dtype=float)
        R = 2.0 * np.finfo(float).eps * mass * float(np.sum((1.0 + l) * harmonic_dimension(d, l) * (
            np.abs(m) + np.abs(n) * l * (l + d - 2.0) / (d - 1.0))))
        TD, TN = TD + R, TN + R
    if queries is not points:  # the Lagrangian measure's field at its own rings: one copy of the angles
        theta = _contiguous_angles(queries)
    a, cc = _steps(d, K)
    scale = float(c) if normalized else float(c) * np.exp(beta)
    # both results as the rows of one (2, m) array: a caller that stores rates by rows (the Lagrangian problem,
    # meanfield.lagrangian.transport) takes it whole instead of copying the two into one
    vel, out = np.empty((2, theta.size))
    nblock = (theta.size + BLOCK - 1) // BLOCK
    M, N = np.ascontiguousarray(m * g), np.ascontiguousarray(n * g)
    map_ranges(lambda b0, b1: _field_blocks(theta, a, cc, M, N, bool(second), bool(normalized), scale, beta,
                                            float(d - 1), TN, TD, vel, out, b0, b1, signed), nblock, TASKS,
               work=theta.size * (K + 1) * (3 if second else 2))
    if normalized:  # the divergence has no bound: an inf marks a non-finite field alike (ValueError for both)
        checks.denominators(vel, out if not second else np.where(np.isfinite(vel) & np.isfinite(out), 0.0, np.inf),
                            signed and not second)
    return vel, out


def matrix_ring_sums(points, weights, queries, beta: float, normalized: bool = True, c: float = 1.0, *, d: int,
                     second: bool = False):
    """The reference of the compiled ring sums (:func:`ring_field`, :func:`ring_field_and_divergence`): the same
    series through NumPy tables of p̄_l(cos θ) (and p̄_l′, p̄_l″) from :func:`.gegenbauer.orthonormal`, n × (K + 1)
    for the rings and m × (K + 1) each for the queries — the library's path before the compiled one, memory O((n +
    m)K). Returns (θ̇ (m,), divergence (m,) if ``second`` else the bound of :func:`ring_field`)."""
    beta = float(beta)
    K = ring_degree(d, beta)
    g = np.asarray(weights, dtype=float) @ orthonormal(d, K, np.cos(_angles(points)), normalized=True)
    m, n = _multipliers(d, K, beta)
    TD, TN = _tails(d, K, beta, float(np.sum(np.abs(weights))))
    u = np.cos(_angles(queries))
    tables = orthonormal(d, K, u, derivatives=2 if second else 1, normalized=True)
    num, den = tables[1] @ (n * g), tables[0] @ (m * g)
    scale = float(c) if normalized else float(c) * np.exp(beta)
    sn = np.abs(np.sin(_angles(queries)))
    psi1 = scale * (num / den if normalized else num)
    if second:
        num2 = tables[2] @ (n * g)
        psi2 = scale * (num2 / den - beta * (num / den) ** 2 if normalized else num2)
        return -psi1 * sn, sn * sn * psi2 - (d - 1) * u * psi1
    if normalized:
        margin = den - TD
        with np.errstate(divide="ignore", invalid="ignore"):
            bound = np.where(margin > 0, abs(scale) * (TN + np.abs(num / den) * TD) / np.where(margin > 0, margin, 1.0),
                             np.inf)
    else:
        bound = np.full(u.shape, abs(scale) * TN)
    return -psi1 * sn, bound


def ring_field(points, weights, queries, beta: float, normalized: bool = True, c: float = 1.0, *, d: int):
    r"""θ̇ at the polar angles ``queries`` (m, 1) for rings at ``points`` (n, 1) with masses ``weights`` on S^{d-1}
    (module docstring). Returns ``(velocity (m, 1), bound (m,))``, the bound on the truncation error of ψ′: SA
    |c|(T_N + |ψ′/c| T_D)/(φ − T_D) (``inf`` where φ <= T_D; |φ| for signed weights), USA |c| e^β T_N, with T_D,
    T_N the tails of φ and φ′/β past the degree K for the rings' total mass Σ|w| (:func:`_tails`). SA raises
    ``ValueError`` naming ``weights`` and the query where ψ′ is not finite, or where signed weights leave |φ| <= T_D
    (a possible pole: :func:`meanfield.core.checks.denominators`): never an inf or NaN returned.

    O((n + m)K) in two compiled passes (:func:`ring_moments`, then the series at :data:`BLOCK` queries side by
    side, the recurrences of p̄_l and p̄_l′ run per query), nothing of size n × K allocated; one query's value does
    not depend on the others or on the thread count. Round-off: ~Kε relative to Σ_l|N_l p̄_l′(u)| and
    Σ_l|M_l p̄_l(u)| (the series' terms), on top of the moments'."""
    vel, bound = _ring_sums(points, weights, queries, beta, normalized, c, d, False)
    return vel[:, None], bound


def ring_field_and_divergence(points, weights, queries, beta: float, normalized: bool = True, c: float = 1.0, *,
                              d: int):
    """``(θ̇ (m, 1), div_S X (m,))`` at the queries (module docstring): :func:`ring_field`'s passes with the
    recurrence of p̄_l″ beside (div_S X = (1 − u²)ψ″ − (d − 1)uψ′)."""
    vel, div = _ring_sums(points, weights, queries, beta, normalized, c, d, True)
    return vel[:, None], div


def mean_excess(d: int, beta: float) -> float:
    """e^{−β}(m_0 − 1)/β, m_0 = ₀F₁(; d/2; β²/4) the kernel's mean over the sphere (its β → 0 limit 0): by its
    series where β < 1 (no cancellation), else directly."""
    if beta == 0.0:
        return 0.0
    if beta < 1.0:
        x, b, term, total = 0.25 * beta * beta, 0.5 * d, 1.0, 0.0
        for k in range(1, 60):
            term *= x / ((b + k - 1.0) * k)
            total += term
            if term < 1e-18 * total:
                break
        return float(np.exp(-beta) * total / beta)
    return float((scaled_multipliers(d, 0, beta)[0] - np.exp(-beta)) / beta)


def excess_from_moments(g, d: int, beta: float) -> float:
    """e^{−β}(E_β − m²/2β) = ½[Σ_{l>=1} e^{−β}m_l ĝ_l²/β + e^{−β}(m_0 − 1)/β · ĝ_0²] from the moments ĝ_l (the
    β → 0 limit ½|∫x dμ|²); ĝ_0 is the mass m."""
    g = np.asarray(g, dtype=float)
    _, n = _multipliers(d, g.size - 1, beta)
    return 0.5 * float(np.sum(n[1:] * g[1:] ** 2) + mean_excess(d, beta) * g[0] ** 2)


def ring_excess_energy(points, weights, beta: float, *, d: int) -> float:
    """e^{−β}(E_β − m²/2β) of the rings (module docstring)."""
    return excess_from_moments(ring_moments(points, weights, ring_degree(d, float(beta)), d), d, float(beta))
