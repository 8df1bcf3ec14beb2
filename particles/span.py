r"""Zonal systems in d > n integrated in the span of their initial tokens: exact, d/n times fewer coordinates.

For a zonal head (Q = qI, K = kI, V = cI) the field of n tokens (GLPR (2.3), (USA); MATH.md §1) is

.. math:: \dot x_i = c\,P_{x_i}^\perp\Big(\sum_j a_{ij} x_j\Big),\qquad
          a_{ij} = \frac{e^{βqk⟨x_i, x_j⟩}}{Z_i},\quad Z_i = \sum_k e^{βqk⟨x_i, x_k⟩}\ \text{(SA) or } n\ \text{(USA)},

a combination of the tokens themselves (P_{x_i}^⊥ y = y − ⟨x_i, y⟩x_i) whose weights depend on the inner
products only. Hence every x_i(t) stays in S = span{x_1(0), …, x_n(0)}, and for any d × r matrix B with
orthonormal columns whose range contains S the coordinates c_i = Bᵀx_i (x_i = B c_i, ⟨x_i, x_j⟩ = ⟨c_i, c_j⟩)
follow the same equation in R^r. The discrete schemes agree too: an RK4 step with retracted stages
(:mod:`particles.system`) is built from linear combinations, inner products and normalisations, all of which
commute with the isometry c ↦ Bc, so integrating c and mapping back gives the trajectory of the direct
integration in R^d up to round-off (measured: 6e-16 at d = 128, n = 32, β = 4, t = 10;
tests/particles/test_high_dimension.py).

B comes from the reduced QR factorisation X_0ᵀ = BR (r = n; Householder, so B has orthonormal columns and
contains S even when the tokens are linearly dependent). A field then costs O(n²·n) instead of O(n²d): four times
fewer coordinates at GLPR's d = 128, n = 32 (§6.3, Figure 3 in high dimension).

What leaves the span, and is therefore never reduced: Brownian increments (noise moves every direction of R^d),
feed-forward blocks, general V (Vx_j leaves S), several heads or time-dependent weights (not handled here).
"""

from __future__ import annotations

import dataclasses

import numba as nb
import numpy as np

from meanfield.kernels.threads import run_tasks
from meanfield.models import SelfAttention
from meanfield.models.base import identity_multiple

__all__ = ["refusal", "basis", "in_dimension", "lift"]


def refusal(model, n: int, d: int, *, method: str, noisy: bool) -> str | None:
    """None where ``model``'s n tokens in R^d may be integrated in their span (module docstring), else why not."""
    if not model.exp_kernel or model.causal or model.time_dependent:
        return f"the span reduction takes one zonal SelfAttention head with constant weights, got {model!r}"
    if any(identity_multiple(M) is None for M in (model.Q, model.K, model.V)):
        return f"the span reduction needs Q = qI, K = kI, V = cI (a zonal model), got {model!r}"
    if noisy:
        return "noise moves the tokens out of their span"
    if method != "rk4":
        return f"the adaptive methods' error norms count coordinates (method {method!r}): only RK4 is reduced exactly"
    if not 2 <= n < d:
        return f"nothing to gain: n = {n} tokens span all of R^{d}" if n >= d else "a single token does not move"
    return None


def basis(x) -> np.ndarray:
    """An orthonormal basis of a subspace containing span{x_1, …, x_n}: B, shape (..., d, n), BᵀB = I.

    The Q factor of the reduced QR factorisation of xᵀ (numpy's Householder QR, batched over the leading
    axes), so x_i = B Bᵀ x_i to round-off whatever the rank of x.
    """
    x = np.asarray(x, dtype=float)
    if x.ndim < 2 or x.shape[-2] > x.shape[-1]:
        raise ValueError(f"`x` must have shape (..., n, d) with n <= d, got {x.shape}.")
    return np.linalg.qr(np.swapaxes(x, -1, -2), mode="reduced")[0]


def in_dimension(model: SelfAttention, r: int) -> SelfAttention:
    """The same zonal head acting on R^r: each of Q, K, V given as m·I_d becomes m·I_r (``None``, the identity of
    any size, stays ``None``)."""
    def scaled(M):
        return None if M is None else identity_multiple(M) * np.eye(r)

    return dataclasses.replace(model, Q=scaled(model.Q), K=scaled(model.K), V=scaled(model.V))


@nb.njit(nogil=True, error_model="numpy", boundscheck=False, cache=True)
def _lift_systems(C, Bt, out, start, stop):
    """out[b, k] = C[k, b] Bt[b] for the systems b = start..stop-1 and every output k: C (T, B, n, r) as the
    integrator stacked it, Bt (B, r, d), out (B, T, n, d). One BLAS call per (b, k), n·r·d multiply-adds (131 072
    at n = r = 32, d = 128: below OpenBLAS's threading threshold 2^18, so one thread whatever the caller's; a
    threaded call per system ran 2-4× slower beside other work)."""
    T = C.shape[0]
    for b in range(start, stop):
        for k in range(T):
            np.dot(C[k, b], Bt[b], out[b, k])


def lift(coordinates, B, first=None) -> np.ndarray:
    """x = c Bᵀ for a history of coordinates c, T arrays of shape (..., n, r), and the basis B, shape (..., d, r).

    Returns shape (T, ..., n, d), stored system-major: a view, time first, of memory laid out (..., T, n, d),
    the layout in which per-system statistics read it (``np.moveaxis(x, 0, -3)`` is contiguous, no copy). One
    (n × r)(r × d) product per system and output, on numba's threads. ``first``, if given, is stored as output 0
    as it is (the initial tokens exactly, rather than through B Bᵀ).
    """
    C = np.stack(coordinates)  # (T, ..., n, r)
    T, n, r = C.shape[0], C.shape[-2], C.shape[-1]
    batch = C.shape[1:-2]
    Bt = np.ascontiguousarray(np.swapaxes(np.asarray(B, dtype=float), -1, -2))  # (..., r, d)
    d = Bt.shape[-1]
    out = np.empty(batch + (T, n, d))
    flat = out.reshape(-1, T, n, d)
    run_tasks(_lift_systems, flat.shape[0], C.reshape(T, -1, n, r), Bt.reshape(-1, r, d), flat)
    x = np.moveaxis(out, -3, 0)
    if first is not None:
        x[0] = first
    return x
