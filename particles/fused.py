r"""Batches of small particle systems advanced by whole RK4 step sequences in compiled code: the ``fused`` strategy.

The strategy for Monte-Carlo studies (many realisations of a few dozen
particles, e.g. the phase diagram of GLPR Figure 3): one task per realisation
runs its whole step sequence, so no interpreter work is done per step. Same
scheme as :func:`particles.simulate` with ``method="rk4"`` (stages retracted to
the sphere) and the same field, summed in the layout (d, n) so that every inner
loop runs over particles and vectorises; tested against the ``pairwise`` path.
Runs on :func:`meanfield.kernels.threads.run_tasks` (same bits for any thread
count).

Two kernels:

- any Q, K, V (:func:`_rk4_small`): u = βAᵀy and Vy cost O(d²n) per field, the pairs O(n²d);
- zonal models, Q = qI, K = kI, V = cI, in d >= :data:`ZONAL_FROM` (:func:`_rk4_zonal`): the kernel is
  e^{β'⟨x_i, x_j⟩} with β' = βqk, so a field is two products of n × d and n × n matrices and n² exponentials,

      G = YᵀY,   E_ij = e^{β'G_ij − |β'|},   X_i = s_i (Σ_j E_ij y_j − (Σ_j E_ij G_ij) y_i),

  with s_i = c/Σ_j E_ij (SA) or c e^{|β'|}/n (USA) — the tangent projection P_{y_i}⊥ taken through G. The two
  products go to BLAS (``np.dot``; taken where n²d <= :data:`BLAS_SINGLE_THREAD`, a single-threaded call, so
  that the bits do not depend on any thread count): at n = d = 32 a field costs 2 × 32³ multiply-adds and 1024
  exponentials, about 4 µs, against 20 µs for the generic loops. With :func:`particles.simulate`'s span
  reduction (:mod:`particles.span`) a zonal system in d > n runs here in n dimensions.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from meanfield.kernels.fastexp import FASTMATH, vexp
from meanfield.kernels.pairwise import UNDERFLOW
from meanfield.kernels.threads import run_tasks
from meanfield.models.base import identity_multiple
from meanfield.core.numerics import EXP_MAX

__all__ = ["rk4_small_systems", "ZONAL_FROM", "BLAS_SINGLE_THREAD"]

#: OpenBLAS runs a product of m·n·k <= 2^18 multiply-adds on the calling thread (GEMM_MULTITHREAD_THRESHOLD 4 ×
#: 65536): the zonal kernel takes systems whose products are that small (n²·d), so that its bits and its speed do
#: not depend on BLAS's threads inside numba's
BLAS_SINGLE_THREAD = 1 << 18

#: zonal models in this dimension and above run the two-product kernel (an RK4 step of n = 32 tokens, one thread:
#: as fast as the generic loops in S², d = 3, which keep d = 2, 3 as they were; 1.4× faster at d = 4, 5× at d = 32,
#: 13× at d = 128)
ZONAL_FROM = 4


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
        if z < UNDERFLOW:
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
def _retract_into(dst, y, k, frac, nrm):
    """dst = (y + frac k) normalised column-wise (layout (d, n)); ``nrm`` (n,) is work space."""
    d, n = y.shape
    for j in range(n):
        nrm[j] = 0.0
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
        nrm = np.empty(n)
        ok = True
        for _ in range(nsteps):
            ok &= _small_field(y, A, V, normalized, k1, u, vy, e)
            _retract_into(st, y, k1, 0.5 * h, nrm)
            ok &= _small_field(st, A, V, normalized, k2, u, vy, e)
            _retract_into(st, y, k2, 0.5 * h, nrm)
            ok &= _small_field(st, A, V, normalized, k3, u, vy, e)
            _retract_into(st, y, k3, h, nrm)
            ok &= _small_field(st, A, V, normalized, k4, u, vy, e)
            for a in range(d):
                for j in range(n):
                    acc[a, j] = k1[a, j] + 2.0 * k2[a, j] + 2.0 * k3[a, j] + k4[a, j]
            _retract_into(st, y, acc, h / 6.0, nrm)
            y[:, :] = st
        xT[b] = y
        status[b] = 0 if ok else 1


@nb.njit(inline="always", fastmath=FASTMATH, error_model="numpy", boundscheck=False)
def _zonal_field(y, beta, c, normalized, out, G, E, s):
    """X at the unit vectors y (d, n) of one system of a zonal model (module docstring), into ``out`` (d, n).

    β' = ``beta`` (= βqk, either sign), V = ``c``·I. The exponents β'G_ij are shifted by |β'| >= max_j β'G_ij
    (|G_ij| <= 1), exact for β' >= 0 (j = i). All n² exponentials and the row sums in one vectorised pass
    (1.7× faster than the n(n+1)/2 of the triangle and its mirror), stored so that the second product is
    y·E (BLAS's y·Eᵀ was 1.7× slower); ``s`` (2n,) is work space. Returns False if a row underflowed."""
    d, n = y.shape
    sh = abs(beta)
    np.dot(y.T, y, G)  # G_ij = ⟨y_i, y_j⟩
    for i in range(2 * n):
        s[i] = 0.0
    for j in range(n):  # E[j, i] = e^{β'G_ji − |β'|}, the weight of y_j in row i: out = y E below
        for i in range(n):
            e = vexp(beta * G[j, i] - sh)
            E[j, i] = e
            s[i] += e
            s[n + i] += e * G[j, i]
    inv_n = 1.0 / n
    ok = True
    for i in range(n):
        z = s[i] * inv_n
        if z < UNDERFLOW:
            ok = False
        scale = c * inv_n / z if normalized else c * inv_n * np.exp(sh)
        s[n + i] *= scale  # ⟨Σ_j E_ij y_j, y_i⟩ scaled: the radial part P_{y_i}⊥ removes
        s[i] = scale
    np.dot(y, E, out)  # out[:, i] = Σ_j E_ji y_j
    for a in range(d):
        for i in range(n):
            out[a, i] = s[i] * out[a, i] - s[n + i] * y[a, i]
    return ok


@nb.njit(nogil=True, fastmath=FASTMATH, error_model="numpy", boundscheck=False, cache=True)
def _rk4_zonal(x, out, beta, c, normalized, h, nsteps, status, start, stop):
    """:func:`_rk4_small` for a zonal model (β' = ``beta``, V = ``c``·I) through :func:`_zonal_field`, from the
    systems x[b] (n, d) into out[b]: each is transposed to the kernel's layout (d, n) here, in cache, rather than
    the whole batch by NumPy around the call (three strided passes over memory per output interval)."""
    n, d = x.shape[1], x.shape[2]
    y = np.empty((d, n))
    for b in range(start, stop):
        for j in range(n):
            for a in range(d):
                y[a, j] = x[b, j, a]
        st = np.empty((d, n))
        k1 = np.empty((d, n))
        k2 = np.empty((d, n))
        k3 = np.empty((d, n))
        k4 = np.empty((d, n))
        G = np.empty((n, n))
        E = np.empty((n, n))
        s = np.empty(2 * n)
        nrm = np.empty(n)
        ok = True
        for _ in range(nsteps):
            ok &= _zonal_field(y, beta, c, normalized, k1, G, E, s)
            _retract_into(st, y, k1, 0.5 * h, nrm)
            ok &= _zonal_field(st, beta, c, normalized, k2, G, E, s)
            _retract_into(st, y, k2, 0.5 * h, nrm)
            ok &= _zonal_field(st, beta, c, normalized, k3, G, E, s)
            _retract_into(st, y, k3, h, nrm)
            ok &= _zonal_field(st, beta, c, normalized, k4, G, E, s)
            for a in range(d):
                for j in range(n):
                    k1[a, j] = k1[a, j] + 2.0 * k2[a, j] + 2.0 * k3[a, j] + k4[a, j]
            _retract_into(st, y, k1, h / 6.0, nrm)
            y[:, :] = st
        for j in range(n):
            for a in range(d):
                out[b, j, a] = y[a, j]
        status[b] = 0 if ok else 1


def rk4_small_systems(model, x, h: float, nsteps: int) -> np.ndarray:
    """``nsteps`` RK4 steps of size h for a batch of small systems, fused in compiled code.

    The strategy for Monte-Carlo studies (many realisations of a few dozen
    particles): one task per realisation runs its whole step
    sequence, so no interpreter work is done per step. Same scheme as
    :func:`particles.simulate` with ``method="rk4"`` (stages retracted to the
    sphere) and the same field; single-head :class:`meanfield.SelfAttention` only. Zonal
    models (Q = qI, K = kI, V = cI) in d >= :data:`ZONAL_FROM` with n²d <=
    :data:`BLAS_SINGLE_THREAD` take the two-product kernel of the module
    docstring (the same sums to round-off).

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
        more than ~460; only possible for ill-conditioned Q, K at huge β), or a
        system's positions became non-finite (a step blew up: a stage at the
        origin has no direction), naming the first such system.
    """
    if not getattr(model, "exp_kernel", False):
        raise TypeError(f"`model` must be a single-head SelfAttention, got {type(model).__name__}.")
    x = np.ascontiguousarray(x, dtype=float)  # read only
    d = x.shape[-1]
    q, k, c = (identity_multiple(M) for M in (model.Q, model.K, model.V))
    zonal = d >= ZONAL_FROM and x.shape[-2] ** 2 * d <= BLAS_SINGLE_THREAD and None not in (q, k, c)
    if zonal:
        norm = abs(model.beta * q * k)  # ‖βQᵀK‖₂ of multiples of I, without a d × d SVD per call
    else:
        I = np.eye(d)
        Q = I if model.Q is None else model.Q
        K = I if model.K is None else model.K
        V = I if model.V is None else model.V
        A = model.beta * (Q.T @ K)
        norm = np.linalg.norm(A, 2)
    if not model.normalized and norm > EXP_MAX:
        raise OverflowError(f"USA with ‖βQᵀK‖ = {norm:.1f} overflows float64 (MATH.md §2.1).")
    status = np.zeros(x.shape[0], dtype=np.int64)
    if zonal:
        out = np.empty_like(x)
        run_tasks(_rk4_zonal, x.shape[0], x, out, float(model.beta * q * k), float(c), bool(model.normalized),
                  float(h), int(nsteps), status)
    else:
        xT = np.ascontiguousarray(np.swapaxes(x, -1, -2))
        run_tasks(_rk4_small, xT.shape[0], xT, np.ascontiguousarray(A), np.ascontiguousarray(V, dtype=float),
                  bool(model.normalized), float(h), int(nsteps), status)
        out = np.ascontiguousarray(np.swapaxes(xT, -1, -2))
    if status.any():
        raise FloatingPointError(
            f"{int(status.sum())} system(s) had a softmax row underflow; use strategy='pairwise' (exact max-shift)."
        )
    blown = ~np.isfinite(out).reshape(out.shape[0], -1).all(axis=1)  # one pass over the result, not per step
    if blown.any():  # a stage reached the origin (its retraction 0/0) or overflowed: never NaN returned silently
        raise FloatingPointError(f"{int(blown.sum())} system(s) became non-finite (the first: system "
                                 f"{int(np.argmax(blown))}): a step blew up; reduce `h`.")
    return out
