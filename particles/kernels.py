r"""Fast evaluations of the attention field for particles.

Two strategies, both optimisations of :meth:`meanfield.models.SelfAttention.field`
and tested against it:

- :func:`pairwise_sums` — the fused pairwise sum
  Σ_j w_j e^{β⟨Qx_i, Ky_j⟩} (V y_j, 1) in one pass per query (numba, threads
  over queries and batch members, SIMD over j, no n×n array in memory). Each
  row is shifted by an upper bound s_i of its exponents β⟨Qx_i, Ky_j⟩ (the
  Cauchy–Schwarz bound, exact for Q = K = I on the sphere; the exact maximum
  for rows where the bound is loose enough to underflow) and the shift is
  returned, so SA is safe for any β and USA overflows only where its true
  value does.
- :func:`circle_spectral_field` — for Q = K = I, V = cI on the circle: the
  empirical measure's Fourier coefficients c_k = Σ_j w_j e^{-ikθ_j} up to the
  degree L where the Bessel multipliers fall below round-off, then
  K_β*μ(θ) = Σ_{|k|<=L} I_k(β) c_k e^{ikθ} and its derivative at the queries
  (MATH.md §2.1). Cost O((n + m) L) instead of O(nm); the truncation error is
  bounded per query and returned.

Reproducibility: the fast-math kernels run on :func:`particles._threads.run_tasks`
(not numba's ``parallel=True``, whose cached and freshly compiled code differ in
the last bits); each output is computed by one task in a fixed order, so results
are identical bit for bit whatever the number of threads, the process, or
whether numba compiled the kernel or loaded it from its cache.
"""

from __future__ import annotations

import numba as nb
import numpy as np
from scipy.special import ive

from meanfield.continuity import bessel_multipliers
from meanfield.geometry import project_tangent
from meanfield.models import _EXP_MAX, SelfAttention, heads

from ._exp import FASTMATH, vexp
from ._threads import run_tasks

__all__ = [
    "pairwise_sums",
    "field",
    "energy",
    "circle_degree",
    "circle_spectral_field",
]

_ROWS = 8  # queries per parallel task (they share one work buffer)


#: Rows whose shifted sum falls below this are recomputed with their exact maximum.
_UNDERFLOW = 1e-200


@nb.njit(fastmath=FASTMATH, error_model="numpy", boundscheck=False, cache=True)
def _exact_row(q, KxT, VxT, wb, out_num, b, i):
    """One row with the exact max-shift (the rare fallback); returns (den, shift)."""
    n, d, dv = KxT.shape[2], KxT.shape[1], VxT.shape[1]
    s = np.zeros(n)
    for a in range(d):
        for j in range(n):
            s[j] += q[a] * KxT[b, a, j]
    smax = np.max(s)
    z = 0.0
    for a in range(dv):
        out_num[b, i, a] = 0.0
    for j in range(n):
        e = wb[j] * vexp(s[j] - smax)
        z += e
        for a in range(dv):
            out_num[b, i, a] += e * VxT[b, a, j]
    return z, smax


@nb.njit(nogil=True, fastmath=FASTMATH, error_model="numpy", boundscheck=False, cache=True)
def _pairwise_rows(Qx, KxT, VxT, w, bound, out_num, out_den, out_shift, start, stop):
    """Any d: per row a work buffer (d + dv + 2 vectorised passes over j).

    Tasks ``start..stop-1`` of the B·⌈m/_ROWS⌉ blocks of rows (see :func:`_threads.run_tasks`)."""
    m, d = Qx.shape[1], Qx.shape[2]
    n = KxT.shape[2]
    dv = VxT.shape[1]
    nblk = (m + _ROWS - 1) // _ROWS
    for task in range(start, stop):
        b = task // nblk
        i0 = (task % nblk) * _ROWS
        buf = np.empty(n)
        wb = w[b]
        for i in range(i0, min(m, i0 + _ROWS)):
            sh = bound[b, i]
            for j in range(n):
                buf[j] = -sh
            for a in range(d):
                qa = Qx[b, i, a]
                row = KxT[b, a]
                for j in range(n):
                    buf[j] += qa * row[j]
            z = 0.0
            for j in range(n):
                e = wb[j] * vexp(buf[j])
                buf[j] = e
                z += e
            for a in range(dv):
                row = VxT[b, a]
                acc = 0.0
                for j in range(n):
                    acc += buf[j] * row[j]
                out_num[b, i, a] = acc
            out_den[b, i] = z
            out_shift[b, i] = sh
            if z < _UNDERFLOW:
                out_den[b, i], out_shift[b, i] = _exact_row(Qx[b, i], KxT, VxT, wb, out_num, b, i)


_FUSED_TEMPLATE = """
@nb.njit(nogil=True, fastmath=FASTMATH, error_model="numpy", boundscheck=False, cache=False)
def kernel(Qx, KxT, VxT, w, bound, out_num, out_den, out_shift, start, stop):
    m = Qx.shape[1]
    n = KxT.shape[2]
    for task in range(start, stop):
        b = task // m
        i = task % m
        wb = w[b]
        sh = bound[b, i]
{loads}
        z = 0.0
{zeros}
        for j in range(n):
            e = wb[j] * vexp({dot} - sh)
            z += e
{accumulate}
{stores}
        out_den[b, i] = z
        out_shift[b, i] = sh
        if z < _UNDERFLOW:
            out_den[b, i], out_shift[b, i] = _exact_row(Qx[b, i], KxT, VxT, wb, out_num, b, i)
"""
_FUSED = {}


def _fused_kernel(d: int, dv: int):
    """A single-pass kernel with the dot product unrolled for dimension d (compiled once per (d, dv))."""
    key = (d, dv)
    if key not in _FUSED:
        ind = " " * 8
        src = _FUSED_TEMPLATE.format(
            loads="\n".join(
                [f"{ind}q{a} = Qx[b, i, {a}]\n{ind}k{a} = KxT[b, {a}]" for a in range(d)]
                + [f"{ind}v{a} = VxT[b, {a}]" for a in range(dv)]
            ),
            zeros="\n".join(f"{ind}s{a} = 0.0" for a in range(dv)) or f"{ind}pass",
            dot=" + ".join(f"q{a} * k{a}[j]" for a in range(d)),
            accumulate="\n".join(f"{ind}    s{a} += e * v{a}[j]" for a in range(dv)) or f"{ind}    pass",
            stores="\n".join(f"{ind}out_num[b, i, {a}] = s{a}" for a in range(dv)) or f"{ind}pass",
        )
        scope = {"nb": nb, "np": np, "FASTMATH": FASTMATH, "vexp": vexp, "_exact_row": _exact_row,
                 "_UNDERFLOW": _UNDERFLOW}
        exec(compile(src, f"<fused kernel d={d} dv={dv}>", "exec"), scope)
        _FUSED[key] = scope["kernel"]
    return _FUSED[key]


#: dimensions up to which the unrolled single-pass kernel is used
_UNROLL_MAX = 8


def _as_batch(x, name):
    x = np.asarray(x, dtype=float)
    if x.ndim < 2:
        raise ValueError(f"`{name}` must have shape (..., n, d), got {x.shape}.")
    return x.reshape((-1,) + x.shape[-2:])


def pairwise_sums(points, weights, queries, beta: float, Q=None, K=None, V=None):
    r"""Fused sums Σ_j w_j e^{β⟨Q q_i, K x_j⟩} (V x_j, 1), returned with their row shift.

    Parameters
    ----------
    points : array_like, shape (..., n, d)
    weights : array_like, shape (..., n)
    queries : array_like, shape (..., m, d)
        Same leading (batch) shape as ``points``.
    beta : float
    Q, K, V : array_like (d, d) or None (identity). ``V`` may also be the
        string ``"none"`` to skip the vector sum (energy only).

    Returns
    -------
    num : ndarray, shape (..., m, d)
        e^{-s_i} Σ_j w_j e^{β⟨Qq_i, Kx_j⟩} V x_j.
    den : ndarray, shape (..., m)
        e^{-s_i} Σ_j w_j e^{β⟨Qq_i, Kx_j⟩}.
    shift : ndarray, shape (..., m)
        The row shift s_i, an upper bound of max_j β⟨Qq_i, Kx_j⟩ (the
        Cauchy–Schwarz bound, or the exact maximum where the bound is loose
        enough to underflow), so the sums are e^{s_i}(num, den).

    Notes
    -----
    Inputs must be finite (the public callers check). The exponential is the
    vectorised :func:`particles._exp.vexp`, exact to 1 ulp.
    """
    P, Xq = _as_batch(points, "points"), _as_batch(queries, "queries")
    lead = np.shape(points)[:-2]
    if np.shape(queries)[:-2] != lead:
        raise ValueError(f"`points` and `queries` must share their batch shape, got {lead} and {np.shape(queries)[:-2]}.")
    W = np.asarray(weights, dtype=float).reshape(P.shape[0], P.shape[1])
    Kx = P if K is None else P @ np.asarray(K, dtype=float).T
    Qx = beta * (Xq if Q is None else Xq @ np.asarray(Q, dtype=float).T)
    if isinstance(V, str):
        VxT = np.empty((P.shape[0], 0, P.shape[1]))
    else:
        VxT = np.ascontiguousarray(np.swapaxes(P if V is None else P @ np.asarray(V, dtype=float).T, 1, 2))
    KxT = np.ascontiguousarray(np.swapaxes(Kx, 1, 2))
    B, m = Xq.shape[0], Xq.shape[1]
    num = np.empty((B, m, VxT.shape[1]))
    den = np.empty((B, m))
    shift = np.empty((B, m))
    # shift each row by the Cauchy–Schwarz bound max_j β⟨Qq_i, Kx_j⟩ <= |βQq_i| max_j |Kx_j|:
    # exact (attained) for Q = K = I on the sphere with queries among the points; rows
    # where it is loose enough to underflow are redone with their exact maximum
    bound = np.linalg.norm(Qx, axis=-1) * np.max(np.linalg.norm(Kx, axis=-1), axis=-1, keepdims=True)
    d = P.shape[-1]
    args = (np.ascontiguousarray(Qx), KxT, VxT, np.ascontiguousarray(W), np.ascontiguousarray(bound), num, den, shift)
    if d <= _UNROLL_MAX:
        run_tasks(_fused_kernel(d, VxT.shape[1]), B * m, *args)
    else:
        run_tasks(_pairwise_rows, B * ((m + _ROWS - 1) // _ROWS), *args)
    return num.reshape(lead + (m, VxT.shape[1])), den.reshape(lead + (m,)), shift.reshape(lead + (m,))


def field(model, points, weights, queries) -> np.ndarray:
    """X[μ](queries) through :func:`pairwise_sums`; same contract as ``model.field``.

    No input checks beyond shapes: this is the inner loop of
    :func:`particles.simulate`, which checks its inputs once.
    """
    total = 0.0
    for h in heads(model):
        num, den, shift = pairwise_sums(points, weights, queries, h.beta, h.Q, h.K, h.V)
        if h.normalized:
            total = total + num / den[..., None]
        else:
            if np.max(shift, initial=-np.inf) > _EXP_MAX:
                raise OverflowError(
                    f"USA field overflows float64: β⟨Qx,Ky⟩ reaches {np.max(shift):.1f} > {_EXP_MAX:.1f}; "
                    "USA keeps the unscaled kernel (MATH.md §2.1), so use a smaller β or SA."
                )
            total = total + num * np.exp(shift)[..., None]
    return project_tangent(np.asarray(queries, dtype=float), total)


@nb.njit(nogil=True, fastmath=FASTMATH, error_model="numpy", boundscheck=False, cache=True)
def _small_energy_sums(x, w, beta, out, start, stop):
    """out[b] = Σ_ij w_i w_j e^{β(⟨x_i,x_j⟩ − 1)} for the small systems b = start..stop-1 (one pass over i <= j)."""
    n, d = x.shape[1], x.shape[2]
    for b in range(start, stop):
        s = 0.0
        for i in range(n):
            for j in range(i, n):
                dot = 0.0
                for k in range(d):
                    dot += x[b, i, k] * x[b, j, k]
                term = w[b, i] * w[b, j] * np.exp(beta * (dot - 1.0))
                s += term if i == j else 2.0 * term
        out[b] = s


#: Systems of at most this many points take the one-pass kernel (many small systems: phase diagrams).
_SMALL_ENERGY = 64


def energy(points, weights, beta: float) -> np.ndarray:
    r"""E_β = (1/2β) Σ_ij w_i w_j e^{β⟨x_i,x_j⟩} by the fused kernel (no n×n array).

    ½|Σ w_i x_i|² at β = 0 (see :meth:`SelfAttention.energy`). Works on batches
    (..., n, d) → (...). ``OverflowError`` where e^β overflows. Batches of
    small systems (n <= 64, points on the sphere) are summed in one pass per
    system with the exponents shifted by β (⟨x_i, x_j⟩ <= 1).
    """
    points = np.asarray(points, dtype=float)
    weights = np.asarray(weights, dtype=float)
    if beta == 0.0:
        m = np.einsum("...n,...nd->...d", weights, points)
        return 0.5 * np.sum(m * m, axis=-1)
    if beta > _EXP_MAX:
        raise OverflowError(f"E_β overflows float64 for β = {beta:g}.")
    n, d = points.shape[-2:]
    if n <= _SMALL_ENERGY and weights.shape == points.shape[:-1]:
        x = np.ascontiguousarray(points.reshape(-1, n, d))
        sums = np.empty(x.shape[0])
        run_tasks(_small_energy_sums, x.shape[0], x, np.ascontiguousarray(weights.reshape(-1, n)), float(beta), sums)
        return (np.exp(beta) * sums / (2.0 * beta)).reshape(points.shape[:-2])
    _, den, shift = pairwise_sums(points, weights, points, beta, V="none")
    return np.sum(weights * den * np.exp(shift), axis=-1) / (2.0 * beta)


# ---------------------------------------------------------------------- the circle, spectrally
def circle_degree(beta: float, tol: float = 1e-17) -> int:
    """Smallest L with 2 Σ_{k>L} (1 + k/β) I_k(β) <= tol · I_0(β) (L >= 1)."""
    k = np.arange(0, 4 * int(beta) + 80)
    s = ive(k, beta) / ive(0, beta) * (1.0 + (k / beta if beta > 0 else 0.0))
    tail = 2.0 * (np.cumsum(s[::-1])[::-1] - s)  # tail[L] = 2 Σ_{k>L}
    return int(max(1, np.argmax(tail <= tol)))


@nb.njit(parallel=True, cache=True)
def _circle_moments(x, w, L, nchunk):
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


@nb.njit(parallel=True, cache=True)
def _circle_evaluate_points(x, A, D):
    """Σ_{k>=1} 2Re(A_k z^k) and D_0 + Σ_{k>=1} 2Re(D_k z^k) at z = x_0 + i x_1."""
    m = x.shape[0]
    L = A.size - 1
    num = np.empty(m)
    den = np.empty(m)
    for i in nb.prange(m):
        z = complex(x[i, 0], x[i, 1])
        p = z
        sn = 0.0
        sd = D[0].real
        for k in range(1, L + 1):
            sn += 2.0 * (A[k] * p).real
            sd += 2.0 * (D[k] * p).real
            p *= z
        num[i] = sn
        den[i] = sd
    return num, den


def _circle_evaluate(theta, A, D):
    """The same at angles θ (used for the CDF of circle densities)."""
    theta = np.asarray(theta, dtype=float)
    return _circle_evaluate_points(np.stack([np.cos(theta), np.sin(theta)], axis=-1), A, D)


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
    ck = _circle_moments(x, w, L, max(1, min(64, x.shape[0] // 4096 + 1)))
    Dm, Nm = bessel_multipliers(L, beta)  # 2π e^{-β} I_k and 2π i k e^{-β} I_k / β
    num, den = _circle_evaluate_points(q, Nm * ck / (2 * np.pi), Dm * ck / (2 * np.pi))
    # truncation bounds
    k = np.arange(L + 1, L + 200)
    Ik = ive(k, beta)
    mass = np.sum(np.abs(w))
    TD = 2.0 * np.sum(Ik) * mass
    TN = (2.0 * np.sum(k * Ik) / beta * mass) if beta > 0 else 0.0
    if normalized:
        v = c * num / den
        margin = den - TD
        with np.errstate(divide="ignore"):
            bound = np.where(margin > 0, abs(c) * (TN + np.abs(num / den) * TD) / np.where(margin > 0, margin, 1.0), np.inf)
    else:
        if beta > _EXP_MAX:
            raise OverflowError(f"USA on the circle overflows float64 for β = {beta:g}.")
        v = c * np.exp(beta) * num
        bound = np.full(num.shape, abs(c) * np.exp(beta) * TN)
    tangent = np.stack([-q[:, 1], q[:, 0]], axis=-1)
    return v[:, None] * tangent, bound


# ---------------------------------------------------------------------- small systems, fused RK4
@nb.njit(inline="always", fastmath=FASTMATH, error_model="numpy", boundscheck=False)
def _small_field(y, A, V, normalized, out, u, vy, e):
    """X at the unit vectors y (d, n) of one system, into ``out`` (d, n).

    Layout (d, n) so that every inner loop runs over particles j and
    vectorises. s_ij = β⟨Qy_i, Ky_j⟩ = ⟨u_i, y_j⟩ with u = βAᵀy, A = QᵀK
    (β folded into A). Returns False if a row underflowed."""
    d, n = y.shape
    for a in range(d):
        for j in range(n):
            u[a, j] = 0.0
            vy[a, j] = 0.0
        for c in range(d):
            acol = A[c, a]
            vrow = V[a, c]
            for j in range(n):
                u[a, j] += acol * y[c, j]
                vy[a, j] += vrow * y[c, j]
    ok = True
    inv_n = 1.0 / n
    for i in range(n):
        sh = 0.0
        for a in range(d):
            sh += u[a, i] * u[a, i]
        sh = np.sqrt(sh)  # Cauchy–Schwarz: max_j ⟨u_i, y_j⟩ <= |u_i| since |y_j| = 1
        for j in range(n):
            e[j] = -sh
        for a in range(d):
            ua = u[a, i]
            for j in range(n):
                e[j] += ua * y[a, j]
        z = 0.0
        for j in range(n):
            e[j] = vexp(e[j]) * inv_n
            z += e[j]
        if z < _UNDERFLOW:
            ok = False
        scale = 1.0 / z if normalized else np.exp(sh)
        dot = 0.0
        for a in range(d):
            acc = 0.0
            for j in range(n):
                acc += e[j] * vy[a, j]
            out[a, i] = acc * scale
            dot += out[a, i] * y[a, i]
        for a in range(d):
            out[a, i] -= dot * y[a, i]
    return ok


@nb.njit(inline="always", fastmath=FASTMATH, error_model="numpy", boundscheck=False)
def _retract_into(dst, y, k, frac):
    """dst = (y + frac k) normalised column-wise (layout (d, n))."""
    d, n = y.shape
    for j in range(n):
        dst[0, j] = 0.0
    nrm = np.zeros(n)
    for a in range(d):
        for j in range(n):
            v = y[a, j] + frac * k[a, j]
            dst[a, j] = v
            nrm[j] += v * v
    for j in range(n):
        nrm[j] = 1.0 / np.sqrt(nrm[j])
    for a in range(d):
        for j in range(n):
            dst[a, j] *= nrm[j]


@nb.njit(nogil=True, fastmath=FASTMATH, error_model="numpy", boundscheck=False, cache=True)
def _rk4_small(xT, A, V, normalized, h, nsteps, status, start, stop):
    """Advance the systems xT[b] (d, n), b = start..stop-1, by ``nsteps`` RK4 steps of size h, in place.

    Stages are retracted to the sphere before each field evaluation (the
    0-homogeneous extension of :mod:`particles.system`); status[b] = 1 if a
    softmax row underflowed."""
    d, n = xT.shape[1], xT.shape[2]
    for b in range(start, stop):
        y = xT[b].copy()
        st = np.empty((d, n))
        k1 = np.empty((d, n))
        k2 = np.empty((d, n))
        k3 = np.empty((d, n))
        k4 = np.empty((d, n))
        acc = np.empty((d, n))
        u = np.empty((d, n))
        vy = np.empty((d, n))
        e = np.empty(n)
        ok = True
        for _ in range(nsteps):
            ok &= _small_field(y, A, V, normalized, k1, u, vy, e)
            _retract_into(st, y, k1, 0.5 * h)
            ok &= _small_field(st, A, V, normalized, k2, u, vy, e)
            _retract_into(st, y, k2, 0.5 * h)
            ok &= _small_field(st, A, V, normalized, k3, u, vy, e)
            _retract_into(st, y, k3, h)
            ok &= _small_field(st, A, V, normalized, k4, u, vy, e)
            for a in range(d):
                for j in range(n):
                    acc[a, j] = k1[a, j] + 2.0 * k2[a, j] + 2.0 * k3[a, j] + k4[a, j]
            _retract_into(st, y, acc, h / 6.0)
            y[:, :] = st
        xT[b] = y
        status[b] = 0 if ok else 1


def rk4_small_systems(model, x, h: float, nsteps: int) -> np.ndarray:
    """``nsteps`` RK4 steps of size h for a batch of small systems, fused in compiled code.

    The strategy for Monte-Carlo studies (many realisations of a few dozen
    particles): one task per realisation runs its whole step
    sequence, so no interpreter work is done per step. Same scheme as
    :func:`particles.simulate` with ``method="rk4"`` (stages retracted to the
    sphere) and the same field; single-head :class:`SelfAttention` only.

    Parameters
    ----------
    model : SelfAttention
    x : ndarray, shape (batch, n, d)
        Unit vectors; not modified.
    h : float
    nsteps : int

    Returns
    -------
    ndarray, shape (batch, n, d)

    Raises
    ------
    OverflowError
        For USA where e^{β⟨Qx,Ky⟩} overflows.
    FloatingPointError
        If a softmax row underflowed (a Cauchy–Schwarz shift too loose by
        more than ~460; only possible for ill-conditioned Q, K at huge β).
    """
    if not isinstance(model, SelfAttention):
        raise TypeError(f"`model` must be a single-head SelfAttention, got {type(model).__name__}.")
    x = np.array(x, dtype=float)
    d = x.shape[-1]
    I = np.eye(d)
    Q = I if model.Q is None else model.Q
    K = I if model.K is None else model.K
    V = I if model.V is None else model.V
    A = model.beta * (Q.T @ K)
    if not model.normalized and np.linalg.norm(A, 2) > _EXP_MAX:
        raise OverflowError(f"USA with ‖βQᵀK‖ = {np.linalg.norm(A, 2):.1f} overflows float64 (MATH.md §2.1).")
    status = np.zeros(x.shape[0], dtype=np.int64)
    xT = np.ascontiguousarray(np.swapaxes(x, -1, -2))
    run_tasks(_rk4_small, xT.shape[0], xT, np.ascontiguousarray(A), np.ascontiguousarray(V, dtype=float),
              bool(model.normalized), float(h), int(nsteps), status)
    if status.any():
        raise FloatingPointError(
            f"{int(status.sum())} system(s) had a softmax row underflow; use path='pairwise' (exact max-shift)."
        )
    return np.ascontiguousarray(np.swapaxes(xT, -1, -2))
