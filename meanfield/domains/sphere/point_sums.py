r"""S²'s spectral sums for weighted point sets: zonal fields in O((n + m)L²) instead of O(nm).

For Q = qI, K = kI, V = cI the kernel e^{β⟨x,y⟩} (β = βqk) is zonal; by the addition
theorem and Funk–Hecke (docs/MATH.md §2.1, §6)

    S(x) = e^{-β} Σ_j w_j e^{β⟨x,y_j⟩} = Σ_l D_l Σ_{|m|<=l} a_lm Y_l^m(x),   a_lm = Σ_j w_j conj(Y_l^m(y_j)),

with D_l = e^{-β} 4π i_l(β) (:func:`~meanfield.domains.sphere.continuity.funk_hecke`), which
fall below round-off past a degree L set by β alone (L = 26 at β = 4), however sharp the
measure. Writing S = S_0 + βU, S_0 = D_0 a_00 Y_0^0 and U = Σ_{l>=1} N_l a_lm Y_l^m (N_l = D_l/β,
finite as β → 0, where U = ⟨m, x⟩), the fields are

    SA:  X = c ∇_S U / S,     div_S X = c (Δ_S U / S − β |∇_S U|² / S²),
    USA: X = c e^β ∇_S U,     div_S X = c e^β Δ_S U.

The harmonics are evaluated without angles, as Y_l^m(x) = q_lm(z)(x + iy)^m with q_lm the
normalised derivatives of the Legendre polynomials (polynomials in z; the usual three-term
recurrence), so nothing is singular at the poles: ∇_S is the tangent part of the ambient
gradient of that extension, (m q_lm (x+iy)^{m−1}, i m q_lm (x+iy)^{m−1}, q'_lm (x+iy)^m),
and Δ_S Y_l^m = −l(l+1) Y_l^m. Moments and evaluation are compiled (numba): the moments in
chunks fixed by the number of points (not threads) and summed in a fixed order, the
evaluation one query per iteration, so results do not depend on the thread count. From
:data:`NONUNIFORM_FROM` points and queries the same sums go through ducc0's non-uniform spherical-harmonic
transforms (O(L² log L + n + m); 2e-14 relative to the recurrences). Tested against the model's reference sum
(``quadrature``) and finite differences.
"""

from __future__ import annotations

from functools import lru_cache

import numba as nb
import numpy as np

# modules, not names: the kernels are imported while the domain package may still be initialising
from ...core import checks
from ...core.numerics import EXP_MAX
from ...core.pool import map_ranges, map_tasks
from . import continuity as sphere_continuity, energy as sphere_energy

__all__ = ["sphere_degree", "harmonic_moments", "recurrence", "zonal_point", "zonal_points", "multipliers",
           "sphere_spectral_field", "sphere_spectral_divergence", "sphere_excess_energy", "zonal_scale", "angles",
           "assemble", "nonuniform_moments", "nonuniform_synthesis", "truncation_tails", "self_query_bound"]


def _refuse_negative(beta: float) -> float:
    """β as a float, refused below 0: for β < 0 the Funk–Hecke multipliers D_l = e^{-β}4π i_l(β) alternate in sign
    (i_l(−β) = (−1)^l i_l(β)), so the tails Σ_{l>L} that bound the truncation are no bound (they cancel, even
    go negative)."""
    beta = float(beta)
    if beta < 0.0:
        raise ValueError(f"beta = {beta:g} < 0: the S² point sums' truncation bound assumes positive Funk–Hecke "
                         "multipliers D_l = e^{-β}4π i_l(β), which alternate in sign for β < 0.")
    return beta


def sphere_degree(beta: float, tol: float = 1e-17) -> int:
    """Smallest L with Σ_{l>L} (2l + 1)(D_l + l(l+1) N_l) <= tol · D_0 (L >= 1).

    The degree-l part of the kernel is D_l (2l+1)/4π P_l(⟨x,y⟩) (addition theorem), and |P_l| <= 1,
    |∇_S P_l(⟨x,y⟩)| <= l(l+1)/2, Δ_S P_l = −l(l+1)P_l; so this bounds the truncation of S, ∇_S U and Δ_S U relative to S's scale D_0 Σ|w|/4π:
    the field and its divergence are exact to ``tol`` relative to it. β >= 0 (else ValueError)."""
    beta = _refuse_negative(beta)
    if beta == 0.0:
        return 1
    L = checks.harmonic_table(4 * int(beta) + 80, beta)
    D, N = sphere_continuity.funk_hecke(L, beta)
    l = np.arange(L + 1)
    r = (2 * l + 1) * (D + N * l * (l + 1.0)) / D[0]
    tail = np.cumsum(r[::-1])[::-1]  # tail[k] = Σ_{l>=k}
    ok = np.flatnonzero(tail[1:] <= tol)
    return int(max(1, ok[0])) if ok.size else L


@lru_cache(maxsize=16)
def recurrence(L: int):
    """Tables of the normalised Legendre recurrence up to degree L (m-major, shape (L+1, L+1) each).

    q_mm = q_{m−1,m−1} √((2m+1)/2m) (q_00 = 1/√4π), q_{m+1,m} = √(2m+3) z q_mm,
    q_lm = A_lm (z q_{l−1,m} − B_lm q_{l−2,m}) with A_lm = √((4l²−1)/(l²−m²)),
    B_lm = √(((l−1)²−m²)/(4(l−1)²−1)); Y_l^m(x) = q_lm(z)(x + iy)^m is orthonormal on S²."""
    L = int(L)
    m = np.arange(L + 1)[:, None]
    l = np.arange(L + 1)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        A = np.where(l >= m + 2, np.sqrt((4.0 * l * l - 1.0) / np.maximum(l * l - m * m, 1)), 0.0)
        B = np.where(l >= m + 2, np.sqrt(np.maximum((l - 1.0) ** 2 - m * m, 0) / np.maximum(4.0 * (l - 1.0) ** 2 - 1.0,
                                                                                            1)), 0.0)
    qmm = np.empty(L + 1)
    qmm[0] = 1.0 / np.sqrt(4.0 * np.pi)
    for k in range(1, L + 1):
        qmm[k] = qmm[k - 1] * np.sqrt((2.0 * k + 1.0) / (2.0 * k))
    c1 = np.sqrt(2.0 * np.arange(L + 1) + 3.0)
    tables = (np.ascontiguousarray(A), np.ascontiguousarray(B), qmm, c1)
    for t in tables:
        t.setflags(write=False)
    return tables


@nb.njit(parallel=True, cache=True)
def _moments(x, w, A, B, qmm, c1, nchunk):
    """a[m, l] = Σ_j w_j q_lm(z_j) (x_j − i y_j)^m for 0 <= m <= l <= L (m-major)."""
    n = x.shape[0]
    L = qmm.size - 1
    acc = np.zeros((nchunk, L + 1, L + 1), dtype=np.complex128)
    size = (n + nchunk - 1) // nchunk
    for c in nb.prange(nchunk):
        for j in range(c * size, min(n, (c + 1) * size)):
            z = x[j, 2]
            u = complex(x[j, 0], -x[j, 1])
            p = complex(w[j], 0.0)
            for m in range(L + 1):
                q1 = qmm[m]
                acc[c, m, m] += q1 * p
                if m < L:
                    q2 = q1
                    q1 = c1[m] * z * q2
                    acc[c, m, m + 1] += q1 * p
                    for l in range(m + 2, L + 1):
                        q = A[m, l] * (z * q1 - B[m, l] * q2)
                        acc[c, m, l] += q * p
                        q2 = q1
                        q1 = q
                p *= u
    out = np.zeros((L + 1, L + 1), dtype=np.complex128)
    for c in range(nchunk):
        out += acc[c]
    return out


def harmonic_moments(x, w, L: int) -> np.ndarray:
    """a_lm = Σ_j w_j conj(Y_l^m(x_j)) for 0 <= m <= l <= L, as an m-major array ``a[m, l]`` (zero for l < m).

    The points x (n, 3) are unit vectors; chunks of about 4096 points (at most 64) are summed in a fixed order."""
    A, B, qmm, c1 = recurrence(int(L))
    x = np.ascontiguousarray(x, dtype=float)
    w = np.ascontiguousarray(w, dtype=float)
    return _moments(x, w, A, B, qmm, c1, max(1, min(64, x.shape[0] // 4096 + 1)))


# error_model "numpy": S = 0 (signed weights) gives inf, which the callers refuse (checks.denominators); numba's
# "python" model raised ZeroDivisionError, a SystemError out of zonal_points' prange
@nb.njit(cache=True, error_model="numpy")
def zonal_point(x0, x1, x2, b, lap, A, B, qmm, c1, S0, beta, normalized, scale, out):
    r"""Velocity (out[0:3]) and surface divergence (out[3]) at the unit vector (x0, x1, x2) from the field
    coefficients ``b[m, l]`` = N_l a_lm of U (module docstring); ``lap[l]`` = −l(l+1), S0 = D_0 a_00 Y_0^0.

    Returns S (SA: S_0 + βU; USA: 1), whose truncation sets the error bound."""
    L = qmm.size - 1
    U = 0.0
    gx = 0.0
    gy = 0.0
    gz = 0.0
    dU = 0.0
    z = x2
    u = complex(x0, x1)
    pm1 = complex(0.0, 0.0)  # (x + iy)^(m−1)
    pm = complex(1.0, 0.0)  # (x + iy)^m
    for m in range(L + 1):
        q1 = qmm[m]
        d1 = 0.0
        s = b[m, m] * q1
        d = complex(0.0, 0.0)
        t = b[m, m] * (lap[m] * q1)
        if m < L:
            q2, d2 = q1, d1
            q1 = c1[m] * z * q2
            d1 = c1[m] * q2
            bb = b[m, m + 1]
            s += bb * q1
            d += bb * d1
            t += bb * (lap[m + 1] * q1)
            for l in range(m + 2, L + 1):
                a = A[m, l]
                bl = B[m, l]
                q = a * (z * q1 - bl * q2)
                dq = a * (q1 + z * d1 - bl * d2)
                bb = b[m, l]
                s += bb * q
                d += bb * dq
                t += bb * (lap[l] * q)
                q2, q1 = q1, q
                d2, d1 = d1, dq
        f = 1.0 if m == 0 else 2.0
        sp = s * pm
        U += f * sp.real
        gz += f * (d * pm).real
        dU += f * (t * pm).real
        if m >= 1:
            sm = s * pm1
            gx += f * m * sm.real
            gy -= f * m * sm.imag
        pm1 = pm
        pm = pm * u
    # the tangent part of the ambient gradient
    r = gx * x0 + gy * x1 + gz * x2
    gx -= r * x0
    gy -= r * x1
    gz -= r * x2
    if normalized:
        S = S0 + beta * U
        k = scale / S
        out[0] = k * gx
        out[1] = k * gy
        out[2] = k * gz
        out[3] = k * (dU - beta * (gx * gx + gy * gy + gz * gz) / S)
        return S
    out[0] = scale * gx
    out[1] = scale * gy
    out[2] = scale * gz
    out[3] = scale * dU
    return 1.0


@nb.njit(parallel=True, cache=True, error_model="numpy")
def zonal_points(q, b, lap, A, B, qmm, c1, S0, beta, normalized, scale):
    """:func:`zonal_point` at the rows of q (m, 3) (normalised first): (velocity (m, 3), divergence (m,), S (m,))."""
    m = q.shape[0]
    v = np.empty((m, 3))
    div = np.empty(m)
    S = np.empty(m)
    for i in nb.prange(m):
        out = np.empty(4)
        x0, x1, x2 = q[i, 0], q[i, 1], q[i, 2]
        r = np.sqrt(x0 * x0 + x1 * x1 + x2 * x2)
        x0, x1, x2 = x0 / r, x1 / r, x2 / r
        S[i] = zonal_point(x0, x1, x2, b, lap, A, B, qmm, c1, S0, beta, normalized, scale, out)
        v[i, 0], v[i, 1], v[i, 2], div[i] = out[0], out[1], out[2], out[3]
    return v, div, S


def zonal_scale(beta: float, normalized: bool, c: float) -> float:
    """c (SA) or c e^β (USA), refusing β past float64's exponent range."""
    if normalized:
        return float(c)
    if beta > EXP_MAX:
        raise OverflowError(f"USA on S² overflows float64 for β = {beta:g}.")
    return float(c * np.exp(beta))


@lru_cache(maxsize=32)
def multipliers(L: int, beta: float):
    """(D, N, lap): D_l = e^{-β}4π i_l(β), N_l = D_l/β (N_0 = 0; 4π/3 δ_l1 at β = 0) and −l(l+1), l <= L."""
    D, N = sphere_continuity.funk_hecke(int(L), float(beta))
    l = np.arange(L + 1)
    lap = -(l * (l + 1.0))
    for a in (D, N, lap):
        a.setflags(write=False)
    return D, N, lap


def field_coefficients(a, beta: float):
    """(b, S0): b[..., m, l] = N_l a[..., m, l], the coefficients of U, and S_0 = D_0 a_00 Y_0^0 (module
    docstring); a float for one set of moments (m, l), an array over the leading axes of a record of them."""
    L = a.shape[-1] - 1
    D, N, _ = multipliers(L, float(beta))
    S0 = D[0] * a[..., 0, 0].real / np.sqrt(4.0 * np.pi)
    return np.ascontiguousarray(a * N), (float(S0) if a.ndim == 2 else np.ascontiguousarray(S0))


#: From this many points and queries together the sums go through ducc0's non-uniform spherical-harmonic transforms
#: (:func:`_evaluate_nonuniform`): O(L² log L + (n + m)) instead of O((n + m)L²), 7-15× at n = m = 8·10³-6.6·10⁴.
NONUNIFORM_FROM = 4096

#: The accuracy asked of ducc0's non-uniform transforms (documented: > 2e-13 in float64): measured 1e-14 to 3e-13
#: relative to the largest velocity and divergence against the recurrences.
NONUNIFORM_EPSILON = 1e-13


#: From this many points (or queries) the non-uniform transforms are cut into :data:`NONUNIFORM_PARTS` contiguous parts
#: of the points (the adjoint: their moments summed in order) and of the queries (the syntheses: each query's value
#: is that of the whole call, bit for bit), each part one single-threaded ducc0 call, run side by side on up to
#: numba's thread count: both cores work, and the sums depend on n alone, not on the thread count.
NONUNIFORM_SPLIT_FROM = 65536
NONUNIFORM_PARTS = 2


#: Rows per task of the compiled loops over points (:func:`angles`, :func:`assemble`), pulled by the threads one at a
#: time (:func:`meanfield.core.pool.map_tasks`)
ROWS_PER_TASK = 65536


def _tasks(n: int):
    """Row ranges of :data:`ROWS_PER_TASK` covering n rows."""
    edges = list(range(0, n, ROWS_PER_TASK)) + [n]
    return [(edges[i], edges[i + 1]) for i in range(len(edges) - 1)] or [(0, 0)]


def angles(p):
    """(colatitude, longitude in [0, 2π)) of the rows of p (any non-zero vectors: their directions), the colatitude
    as atan2(ρ, z), ρ = √(x² + y²): accurate at the poles; compiled, in tasks of rows."""
    p = np.ascontiguousarray(p, dtype=float)
    out = np.empty((p.shape[0], 2))
    ranges = _tasks(p.shape[0])
    map_tasks(lambda k: _angle_rows(p, out, *ranges[k]), len(ranges))
    return out


@nb.njit(nogil=True, cache=True)
def _angle_rows(p, out, i0, i1):
    for i in range(i0, i1):
        out[i, 0] = np.arctan2(np.sqrt(p[i, 0] * p[i, 0] + p[i, 1] * p[i, 1]), p[i, 2])
        phi = np.arctan2(p[i, 1], p[i, 0])
        out[i, 1] = phi + 2.0 * np.pi if phi < 0.0 else phi
        if out[i, 1] >= 2.0 * np.pi:  # −tiny + 2π rounds up to 2π
            out[i, 1] = 0.0


def _angles(p) -> np.ndarray:
    """(colatitude, longitude in [0, 2π)) of unit vectors (:func:`angles`)."""
    return angles(np.ascontiguousarray(p, dtype=float))


def assemble(q, at, U, LU, g_theta, g_phi, S0, beta, normalized, scale, TN, TD, divergence, signed=False):
    r"""Velocity (m, 3), divergence (m,) (zeros unless ``divergence``), S (m,) and the truncation bound (m,) at the
    queries q from U, Δ_S U and the (θ, φ) components of ∇_S U at the angles ``at`` ducc0 was given:
    ∇_S U = g_θ e_θ + g_φ e_φ, e_θ = (cos θ cos φ, cos θ sin φ, −sin θ), e_φ = (−sin φ, cos φ, 0), with
    cos θ = z/|q|, sin θ = ρ/|q|, (cos φ, sin φ) = (x, y)/ρ (from φ itself where ρ = 0); then the fields and the
    bound of :func:`sphere_spectral_field` (module docstring; its margin |S| − T_D for ``signed`` weights)."""
    m = q.shape[0]
    v = np.empty((m, 3))
    div = np.zeros(m)
    S = np.empty(m)
    bound = np.empty(m)
    ranges = _tasks(m)
    map_tasks(lambda k: _assemble_rows(q, at, U, LU, g_theta, g_phi, S0, beta, normalized, scale, TN, TD, divergence,
                                       v, div, S, bound, *ranges[k], bool(signed)), len(ranges))
    return v, div, S, bound


@nb.njit(nogil=True, cache=True, error_model="numpy")  # S = 0 gives inf (refused by checks.denominators), not a raise
def _assemble_rows(q, at, U, LU, g_theta, g_phi, S0, beta, normalized, scale, TN, TD, divergence, v, div, S, bound,
                   i0, i1, signed):
    for i in range(i0, i1):
        x0, x1, x2 = q[i, 0], q[i, 1], q[i, 2]
        rho = np.sqrt(x0 * x0 + x1 * x1)
        r = np.sqrt(rho * rho + x2 * x2)
        ct, st = x2 / r, rho / r
        if rho > 0.0:
            cp, sp = x0 / rho, x1 / rho
        else:
            cp, sp = np.cos(at[i, 1]), np.sin(at[i, 1])
        gt, gp = g_theta[i], g_phi[i]
        gx = gt * ct * cp - gp * sp
        gy = gt * ct * sp + gp * cp
        gz = -gt * st
        if normalized:
            s = S0 + beta * U[i]
            k = scale / s
            v[i, 0], v[i, 1], v[i, 2] = gx * k, gy * k, gz * k
            if divergence:
                div[i] = scale * (LU[i] / s - beta * (gx * gx + gy * gy + gz * gz) / (s * s))
            S[i] = s
            margin = (abs(s) if signed else s) - TD  # S > 0 for non-negative weights: S̃ <= T_D guarantees nothing
            speed = np.sqrt(gx * gx + gy * gy + gz * gz) / abs(s)
            bound[i] = abs(scale) * (TN + speed * TD) / margin if margin > 0 else np.inf
        else:
            v[i, 0], v[i, 1], v[i, 2] = scale * gx, scale * gy, scale * gz
            if divergence:
                div[i] = scale * LU[i]
            S[i] = 1.0
            bound[i] = abs(scale) * TN


def _by_parts(fn, n: int) -> list:
    """``[fn(s) for s in slices]``, the slices cutting n rows into :data:`NONUNIFORM_PARTS` contiguous parts (one
    below :data:`NONUNIFORM_SPLIT_FROM`), side by side on up to numba's thread count (ducc0 releases the GIL)."""
    k = NONUNIFORM_PARTS if n >= NONUNIFORM_SPLIT_FROM else 1
    return map_ranges(lambda i0, i1: fn(slice(i0, i1)), n, k)


def nonuniform_moments(where, w, L: int):
    """a_lm = Σ_j w_j conj(Y_l^m(y_j)) in ducc0's order by its adjoint synthesis at the angles ``where``, part by
    part (:data:`NONUNIFORM_PARTS`), the parts' moments summed in order."""
    from ducc0.sht.experimental import adjoint_synthesis_general

    opts = dict(lmax=L, epsilon=NONUNIFORM_EPSILON, nthreads=1)
    parts = _by_parts(lambda s: adjoint_synthesis_general(map=w[None, s], spin=0, loc=where[s], **opts)[0],
                      len(w))
    a = parts[0]
    for extra in parts[1:]:
        a = a + extra
    return a


def nonuniform_synthesis(b, blap, at, L: int):
    """(U, Δ_S U or None, g_θ, g_φ) at the angles ``at`` from the coefficients b of U (and ``blap`` of Δ_S U, None
    where the divergence is not asked for): ducc0's scalar synthesis and its spin-1 gradient synthesis ("DERIV1"),
    part by part of the queries."""
    from ducc0.sht.experimental import synthesis_general

    opts = dict(lmax=L, epsilon=NONUNIFORM_EPSILON, nthreads=1)

    def part(s):
        U = synthesis_general(alm=b[None, :], spin=0, loc=at[s], **opts)[0]
        LU = None if blap is None else synthesis_general(alm=blap[None, :], spin=0, loc=at[s], **opts)[0]
        g = synthesis_general(alm=b[None, :], spin=1, loc=at[s], mode="DERIV1", **opts)
        return U, LU, g[0], g[1]

    parts = _by_parts(part, len(at))
    if len(parts) == 1:
        return parts[0]
    cat = [np.concatenate([p[i] for p in parts]) if parts[0][i] is not None else None for i in range(4)]
    return tuple(cat)


@lru_cache(maxsize=16)
def _degrees(L: int) -> np.ndarray:
    """The degree l of each coefficient in ducc0's (healpy) order, m-major."""
    out = np.concatenate([np.arange(m, L + 1) for m in range(L + 1)])
    out.setflags(write=False)
    return out


def _evaluate_nonuniform(x, w, q, beta, normalized, c, L, divergence=True, tails=(0.0, 0.0), signed=False):
    """:func:`_evaluate` by ducc0's non-uniform transforms: a_lm = Σ_j w_j conj(Y_l^m(y_j)) by the adjoint of the
    synthesis at the points, then U, Δ_S U (scalar synthesis of N_l a_lm and −l(l+1) N_l a_lm; only where
    ``divergence``) and ∇_S U (spin-1 synthesis, its (θ, φ) components) at the queries, the same fields as the
    recurrences (module docstring) in ducc0's phase convention, which cancels between moments and synthesis.
    Single-threaded ducc0 calls on fixed parts of the points and queries (:data:`NONUNIFORM_PARTS`): the sums do
    not depend on the thread count. ``tails`` = (T_D, T_N) for the bound (:func:`sphere_spectral_field`).

    Returns (velocity, divergence, S, weights, bound)."""
    where = _angles(x)
    at = where if q is x or (q.shape == x.shape and np.array_equal(q, x)) else _angles(q)  # nodes: queries = points
    a = nonuniform_moments(where, w, L)
    D, N, lap = multipliers(L, float(beta))
    degree = _degrees(L)
    b = a * N[degree]
    S0 = float(D[0] * a[0].real / np.sqrt(4.0 * np.pi))
    U, LU, g_theta, g_phi = nonuniform_synthesis(b, b * lap[degree] if divergence else None, at, L)
    scale = zonal_scale(beta, normalized, c)
    v, div, S, bound = assemble(q, at, U, U if LU is None else LU, g_theta, g_phi, S0, float(beta), bool(normalized),
                                scale, float(tails[1]), float(tails[0]), bool(divergence), signed)
    return v, div, S, w, bound


def _evaluate(points, weights, queries, beta, normalized, c, L, divergence=True, tails=(0.0, 0.0)):
    x = np.ascontiguousarray(points, dtype=float)
    w = np.ascontiguousarray(weights, dtype=float)
    q = np.ascontiguousarray(queries, dtype=float)
    signed = bool(np.any(w < 0.0))
    if x.shape[0] + q.shape[0] >= NONUNIFORM_FROM and L >= 2:
        out = _evaluate_nonuniform(x, w, q, beta, normalized, c, L, divergence, tails, signed)
        if normalized:
            checks.denominators(out[0], out[4], signed)
        return out
    a = harmonic_moments(x / np.linalg.norm(x, axis=-1, keepdims=True), w, L)  # the points' directions
    b, S0 = field_coefficients(a, beta)
    _, _, lap = multipliers(L, float(beta))
    A, B, qmm, c1 = recurrence(L)
    v, div, S = zonal_points(q, b, lap, A, B, qmm, c1, S0, float(beta), bool(normalized),
                             zonal_scale(beta, normalized, c))
    bound = _bound(v, S, beta, normalized, c, tails, signed)
    if normalized:
        checks.denominators(v, bound, signed)
    return v, div, S, w, bound


def truncation_tails(L: int, beta: float, mass: float):
    """(T_D, T_N) = (Σ_{l>L} D_l (2l+1)/4π, Σ_{l>L} N_l (2l+1)/4π · l(l+1)/2) · Σ|w|: the truncation errors of S
    and ∇_S U past degree L (:func:`sphere_spectral_field`). β >= 0 (else ValueError: the tails of alternating
    multipliers bound nothing)."""
    beta = _refuse_negative(beta)
    Lt = L + 200
    D, N, _ = multipliers(Lt, beta)
    l = np.arange(L + 1, Lt + 1)
    TD = float(np.sum(D[L + 1:] * (2 * l + 1))) / (4 * np.pi) * mass
    TN = float(np.sum(N[L + 1:] * (2 * l + 1) * l * (l + 1) / 2.0)) / (4 * np.pi) * mass
    return TD, TN


def _bound(v, S, beta, normalized, c, tails, signed=False):
    """The truncation bound of :func:`sphere_spectral_field` at the queries, from their velocity v and S (the margin
    |S| − T_D for ``signed`` weights, S − T_D otherwise)."""
    TD, TN = tails
    if normalized:
        speed = np.linalg.norm(v, axis=-1) / abs(c) if c != 0 else np.zeros(len(v))
        margin = (np.abs(S) if signed else S) - TD
        with np.errstate(divide="ignore"):
            return np.where(margin > 0, abs(c) * (TN + speed * TD) / np.where(margin > 0, margin, 1.0), np.inf)
    return np.full(len(v), abs(c) * np.exp(beta) * TN)


def sphere_spectral_field(points, weights, queries, beta: float, normalized: bool = True, c: float = 1.0,
                          degree: int | None = None):
    r"""The Q = K = I, V = cI field on S² in O((n + m)L²) operations (module docstring).

    Parameters
    ----------
    points : array_like, shape (n, 3)
        Points on S² (any non-zero vectors: their directions are taken).
    weights : array_like, shape (n,)
    queries : array_like, shape (m, 3)
        As ``points``.
    beta : float
    normalized : bool
        SA or USA.
    c : float
        V = cI.
    degree : int, optional
        Truncation degree L (default :func:`sphere_degree`).

    Returns
    -------
    velocity : ndarray, shape (m, 3)
        Tangent vectors.
    error_bound : ndarray, shape (m,)
        A bound on |velocity − exact|: with T_D = Σ_{l>L} D_l (2l+1)/4π Σ|w| and
        T_N = Σ_{l>L} N_l (2l+1)/4π · l(l+1)/2 · Σ|w| the truncation errors of S and ∇_S U, the SA
        error is |c|(T_N + |∇_S U|/S · T_D)/(S − T_D) (``inf`` where S <= T_D: no guarantee; |S| in place of S
        for signed weights) and the USA error |c| e^β T_N. It counts the truncation only, not round-off (Notes).

    Raises
    ------
    ValueError
        For β < 0 (the bound assumes positive Funk–Hecke multipliers). SA, naming ``weights`` and the query, where
        the field is not finite (S underflowed to 0) or, for signed weights, where |S| <= T_D: S may vanish there,
        a pole of the field (:func:`meanfield.core.checks.denominators`); never an inf or NaN returned.

    Notes
    -----
    Round-off, not in ``error_bound``: the moments and the recurrences are off by about L ε Σ|w| in absolute terms
    (ducc0's transforms from :data:`NONUNIFORM_FROM`: :data:`NONUNIFORM_EPSILON` Σ|w| in place of L ε Σ|w|), and SA
    divides by S(q) = Σ_j w_j e^{β(⟨q,y_j⟩−1)}, so

        |velocity − exact| ≲ error_bound + O(L ε |c| Σ|w| / S(q)),

    where S(q) is ~Σ|w| among crowded points but can be as small as e^{-2β}Σ|w| at a query far from all points
    (large β): there the round-off may exceed the stated bound. For signed weights, whose S may vanish (a pole of
    the SA field), twice that round-off estimate is added to T_D and T_N, and |S| <= T_D raises (Raises). USA's
    round-off is O(|c| e^β L ε Σ|w|), L ε relative to its field's scale |c| e^β Σ|w|.
    """
    beta = _refuse_negative(beta)
    L = sphere_degree(beta) if degree is None else int(degree)
    w = np.asarray(weights, dtype=float)
    mass = float(np.sum(np.abs(w)))
    TD, TN = truncation_tails(L, beta, mass)
    if np.any(w < 0.0):  # S may vanish: its round-off counts (Notes)
        R = _round_off(L, beta, np.shape(points)[0] + np.shape(queries)[0] >= NONUNIFORM_FROM) * mass
        TD, TN = TD + R, TN + R
    v, _, _, _, bound = _evaluate(points, weights, queries, beta, normalized, c, L, divergence=False, tails=(TD, TN))
    return v, bound


def _round_off(L: int, beta: float, nonuniform: bool) -> float:
    """An estimate of the round-off of S per unit mass: the recurrences lose about lε at degree l, ducc0's
    transforms :data:`NONUNIFORM_EPSILON`, of terms D_l (2l+1)/4π (|Σ_m a_lm Y_l^m| <= (2l+1)/4π Σ|w|); twice that."""
    D = multipliers(L, float(beta))[0]
    l = np.arange(L + 1)
    terms = np.abs(D[:L + 1]) * (2 * l + 1) / (4 * np.pi)
    eps = np.full(L + 1, NONUNIFORM_EPSILON) if nonuniform else (1.0 + l) * np.finfo(float).eps
    return 2.0 * float(np.sum(eps * terms))


def sphere_spectral_divergence(points, weights, queries, beta: float, normalized: bool = True, c: float = 1.0,
                               degree: int | None = None):
    r"""The Q = K = I, V = cI field on S² and its surface divergence, in O((n + m)L²) operations.

    SA: X = c ∇_S U/S, div_S X = c(Δ_S U/S − β|∇_S U|²/S²); USA: X = c e^β ∇_S U, div_S X = c e^β Δ_S U
    (module docstring; docs/MATH.md §6). At β = 0 these are X = c P_x^⊥ m and div_S X = −2c⟨m, x⟩.
    The degree defaults to :func:`sphere_degree`. β >= 0 (else ValueError, as :func:`sphere_spectral_field`).

    Returns
    -------
    velocity : ndarray, shape (m, 3)
    divergence : ndarray, shape (m,)
    """
    beta = _refuse_negative(beta)
    L = sphere_degree(beta) if degree is None else int(degree)
    v, div, _, _, _ = _evaluate(points, weights, queries, beta, normalized, c, L)
    return v, div


def sphere_excess_energy(points, weights, beta: float) -> float:
    r"""e^{-β}(E_β − m²/2β) of Σ_j w_j δ_{x_j} on S² from its harmonic moments, O(nL²).

    E_β = (1/2β) Σ_l λ_l Σ_{|m|<=l} |a_lm|² (λ_l = 4π i_l(β); :func:`meanfield.domains.sphere.energy.excess_from_power`,
    ½|Σ w_j x_j|² at β = 0); the degree is :func:`sphere_degree`. β >= 0 (else ValueError).
    """
    beta = _refuse_negative(beta)
    a = harmonic_moments(points, weights, sphere_degree(beta))
    # Σ_{|m|<=l} |a_lm|² per degree l (a_{l,−m} = (−1)^m conj(a_lm) for a real measure)
    return sphere_energy.excess_from_power(np.abs(a[0]) ** 2 + 2.0 * np.sum(np.abs(a[1:]) ** 2, axis=0), beta)


def self_query_bound(n: float, beta: float) -> float:
    r"""A bound on the SA field error of :func:`sphere_spectral_field` at the points themselves, relative to |c|,
    for any n points of equal weights, or of weights whose effective count Σ|w|/min|w| is n (the particles' use;
    ``inf`` at n = inf, a zero weight): with t_D, t_N the truncation errors T_D, T_N per unit
    mass (:func:`sphere_spectral_field`), S(x_i) >= w_i >= Σ|w|/n (the point's own term e^{β⟨x_i,x_i⟩−β} = 1;
    the others are positive) and |∇_S U|/S <= 1 (the SA speed over |c|), so |error| <= |c| n (t_N + t_D)/(1 − n t_D)
    (``inf`` where n t_D >= 1). USA's error |c| e^β T_N is smaller relative to its field's scale |c| e^β Σ|w|.
    ``inf`` for β < 0: the multipliers alternate in sign and the tails bound nothing (so ``pays_off`` is False).
    """
    beta = float(beta)
    if beta < 0.0:
        return float("inf")
    L = sphere_degree(beta)
    Lt = L + 200
    D, N, _ = multipliers(Lt, beta)
    l = np.arange(L + 1, Lt + 1)
    tD = float(np.sum(D[L + 1:] * (2 * l + 1))) / (4 * np.pi)
    tN = float(np.sum(N[L + 1:] * (2 * l + 1) * l * (l + 1) / 2.0)) / (4 * np.pi)
    return n * (tN + tD) / (1.0 - n * tD) if n * tD < 1.0 else float("inf")
