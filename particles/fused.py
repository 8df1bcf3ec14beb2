r"""Batches of small particle systems advanced by whole RK4 step sequences in compiled code: the ``fused`` strategy.

The strategy for Monte-Carlo studies (many realisations of a few dozen
particles, e.g. the phase diagram of GLPR Figure 3): one task per realisation
runs its whole step sequence, so no interpreter work is done per step. Same
scheme as :func:`particles.simulate` with ``method="rk4"`` (stages retracted to
the sphere) and the same field, summed in the layout (d, n) so that every inner
loop runs over particles and vectorises; tested against the ``pairwise`` path.
Runs on :func:`meanfield.kernels.threads.run_tasks` (same bits for any thread
count).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from meanfield.kernels.fastexp import FASTMATH, vexp
from meanfield.kernels.pairwise import UNDERFLOW
from meanfield.kernels.threads import run_tasks
from meanfield.models import SelfAttention
from meanfield.numerics import EXP_MAX

__all__ = ["rk4_small_systems"]


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
    if not model.normalized and np.linalg.norm(A, 2) > EXP_MAX:
        raise OverflowError(f"USA with ‖βQᵀK‖ = {np.linalg.norm(A, 2):.1f} overflows float64 (MATH.md §2.1).")
    status = np.zeros(x.shape[0], dtype=np.int64)
    xT = np.ascontiguousarray(np.swapaxes(x, -1, -2))
    run_tasks(_rk4_small, xT.shape[0], xT, np.ascontiguousarray(A), np.ascontiguousarray(V, dtype=float),
              bool(model.normalized), float(h), int(nsteps), status)
    if status.any():
        raise FloatingPointError(
            f"{int(status.sum())} system(s) had a softmax row underflow; use strategy='pairwise' (exact max-shift)."
        )
    return np.ascontiguousarray(np.swapaxes(xT, -1, -2))
