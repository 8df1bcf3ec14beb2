r"""Compiled sums of the R^d attention models (MATH.md §3, §5), row by row.

Softmax, L2 and masked attention are one computation with different logits
(:mod:`meanfield.models.euclidean`):

    Γ(x_i) = Σ_j e^{s_ij} V y_j / Σ_j e^{s_ij},   s_ij = ⟨a_i, y_j⟩ + o_j  (j allowed for i),

- softmax: a_i = βAx_i, o_j = log w_j;
- L2:      a_i = Ax_i/τ, o_j = log w_j − |Ky_j|²/(2τ) (the −|Qx_i|²/(2τ) cancels);
- masked:  points (τ_j, y_j) and queries (s_i, x_i), a_i = βAx_i, o_j = log w_j,
           j allowed when τ_j <= s_i; Γ = (0, ·), and 0 where no point is allowed,

with A = KᵀQ. Each row is shifted by the bound |a_i| max_j |y_j| + max_j o_j
>= max_j s_ij (Cauchy–Schwarz), so nothing overflows; a row whose shifted
normaliser falls below 1e-200 (the bound loose by more than 460) is redone
with its exact maximum, as the models' NumPy sums shift every row. Terms
clamped by :func:`.fastexp.vexp` (more than 708 below the shift) are then
below e^{-248} of the row's largest, under round-off; points not allowed by
the mask count exactly 0. Sigmoid attention,
Γ(x_i) = Σ_j w_j σ(⟨Ax_i, y_j⟩ + b) V y_j, has its own loop. The loops are
generated with the sums over the d coordinates unrolled, as in
:mod:`.pairwise` (compiled once per process for each d).
Sinkhorn attention is not compiled: its potentials (the Sinkhorn iterations)
dominate its cost and stay in :meth:`Sinkhorn.potentials`.

Each is tested equal to the model's ``field`` to 1e-12 relative.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..models.base import heads
from .fastexp import FASTMATH, vexp
from .pairwise import UNROLL_MAX  # the same unrolling limit as the pairwise kernels
from .threads import run_tasks

__all__ = ["euclidean_field", "compiled_models"]

#: kinds of R^d heads :func:`euclidean_field` sums
compiled_models = ("softmax", "l2", "masked", "sigmoid")


@nb.njit(nogil=True, fastmath=FASTMATH, error_model="numpy", boundscheck=False, cache=True)
def _exact_row(ai, YT, VyT, offsets, tq, ty, out, i):
    """Row i shifted by its exact maximum over the allowed points (0 where none is allowed)."""
    d, n = YT.shape
    masked = tq.size > 0
    buf = np.empty(n)
    smax = -np.inf
    for j in range(n):
        s = offsets[j]
        for k in range(d):
            s += ai[k] * YT[k, j]
        if masked and ty[j] > tq[i]:
            s = -np.inf
        buf[j] = s
        smax = max(smax, s)
    for k in range(VyT.shape[0]):
        out[i, k] = 0.0
    if smax == -np.inf:
        return
    z = 0.0
    for j in range(n):
        e = vexp(buf[j] - smax) if buf[j] > -np.inf else 0.0
        buf[j] = e
        z += e
    for k in range(VyT.shape[0]):
        acc = 0.0
        for j in range(n):
            acc += buf[j] * VyT[k, j]
        out[i, k] = acc / z


#: rows whose shifted normaliser falls below this are redone with their exact maximum
UNDERFLOW = 1e-200


@nb.njit(nogil=True, fastmath=FASTMATH, error_model="numpy", boundscheck=False, cache=True)
def _softmax_rows(a, YT, VyT, offsets, tq, ty, bound, out, start, stop):
    """The softmax rows of :data:`_SOFTMAX_TEMPLATE` for any d: d + dv + 2 vectorised passes over a row buffer."""
    d, n = YT.shape
    dv = VyT.shape[0]
    masked = tq.size > 0
    buf = np.empty(n)
    for i in range(start, stop):
        sh = bound[i]
        for j in range(n):
            buf[j] = offsets[j] - sh
        for k in range(d):
            ak = a[i, k]
            row = YT[k]
            for j in range(n):
                buf[j] += ak * row[j]
        z = 0.0
        for j in range(n):
            e = vexp(buf[j])
            if masked and ty[j] > tq[i]:
                e = 0.0
            buf[j] = e
            z += e
        if z < UNDERFLOW:
            _exact_row(a[i], YT, VyT, offsets, tq, ty, out, i)
            continue
        for k in range(dv):
            row = VyT[k]
            acc = 0.0
            for j in range(n):
                acc += buf[j] * row[j]
            out[i, k] = acc / z

_SOFTMAX_TEMPLATE = """
@nb.njit(nogil=True, fastmath=FASTMATH, error_model="numpy", boundscheck=False, cache=False)
def kernel(a, YT, VyT, offsets, tq, ty, bound, out, start, stop):
    n = YT.shape[1]
{rows}
    for i in range(start, stop):
{loads}
        sh = bound[i]
        z = 0.0
{zeros}
        for j in range(n):
            e = vexp(offsets[j] + {dot} - sh){mask}
            z += e
{accumulate}
        if z < UNDERFLOW:
            exact_row(a[i], YT, VyT, offsets, tq, ty, out, i)
        else:
{stores_over_z}
"""

_SIGMOID_TEMPLATE = """
@nb.njit(nogil=True, fastmath=FASTMATH, error_model="numpy", boundscheck=False, cache=False)
def kernel(a, YT, VyT, w, b, out, start, stop):
    n = YT.shape[1]
{rows}
    for i in range(start, stop):
{loads}
{zeros}
        for j in range(n):
            s = b + {dot}
            e = vexp(-abs(s)) if abs(s) < 708.0 else 0.0  # exp(-|s|), 0 below round-off (no clamp)
            r = 1.0 / (1.0 + e)
            c = w[j] * (r if s >= 0.0 else e * r)
{accumulate_c}
{stores}
"""
_KERNELS = {}


def _kernel(kind: str, d: int, dv: int, masked: bool = False):
    """The row kernel of ``kind`` with the sums over the d coordinates and dv outputs unrolled (compiled once
    per process and key). "softmax": rows shifted by ``bound`` (an upper bound of the allowed logits), rows
    whose normaliser underflows redone by :func:`_exact_row`; "sigmoid": one pass."""
    key = (kind, d, dv, masked)
    if key not in _KERNELS:
        i4, i8, i12 = " " * 4, " " * 8, " " * 12
        fields = dict(
            rows="\n".join([f"{i4}y{k} = YT[{k}]" for k in range(d)] + [f"{i4}v{k} = VyT[{k}]" for k in range(dv)]),
            loads="\n".join(f"{i8}a{k} = a[i, {k}]" for k in range(d)),
            dot=" + ".join(f"a{k} * y{k}[j]" for k in range(d)),
            zeros="\n".join(f"{i8}acc{k} = 0.0" for k in range(dv)),
            zero_out="\n".join(f"{i12}out[i, {k}] = 0.0" for k in range(dv)),
            accumulate="\n".join(f"{i12}acc{k} += e * v{k}[j]" for k in range(dv)),
            accumulate_c="\n".join(f"{i12}acc{k} += c * v{k}[j]" for k in range(dv)),
            stores_over_z="\n".join(f"{i12}out[i, {k}] = acc{k} / z" for k in range(dv)),
            mask=" if ty[j] <= tq[i] else 0.0" if masked else "",
            stores="\n".join(f"{i8}out[i, {k}] = acc{k}" for k in range(dv)),
        )
        template = _SOFTMAX_TEMPLATE if kind == "softmax" else _SIGMOID_TEMPLATE
        scope = {"nb": nb, "np": np, "FASTMATH": FASTMATH, "vexp": vexp, "exact_row": _exact_row,
                 "UNDERFLOW": UNDERFLOW}
        exec(compile(template.format(**fields), f"<{kind} rows d={d} dv={dv}>", "exec"), scope)
        _KERNELS[key] = scope["kernel"]
    return _KERNELS[key]


def _log(w):
    with np.errstate(divide="ignore"):
        return np.log(w)


def _softmax(a, y, Vy, offsets, out, tq=None, ty=None):
    """Rows out[i] = Σ_j e^{s_ij} Vy_j / Σ_j e^{s_ij}, s_ij = ⟨a_i, y_j⟩ + offsets_j over the allowed j.

    Each row is shifted by |a_i| max_j |y_j| + max_j offsets_j >= max_j s_ij (Cauchy–Schwarz)."""
    finite = offsets[np.isfinite(offsets)]
    if finite.size == 0:  # no point carries weight
        out[:] = 0.0
        return out
    bound = np.linalg.norm(a, axis=1) * np.max(np.linalg.norm(y, axis=1)) + np.max(finite)
    masked = tq is not None
    empty = np.empty(0)
    args = (np.ascontiguousarray(a), np.ascontiguousarray(y.T), np.ascontiguousarray(Vy.T),
            np.ascontiguousarray(offsets), empty if tq is None else np.ascontiguousarray(tq),
            empty if ty is None else np.ascontiguousarray(ty), bound, out)
    d = y.shape[1]
    kernel = _kernel("softmax", d, Vy.shape[1], masked) if d <= UNROLL_MAX else _softmax_rows
    run_tasks(kernel, a.shape[0], *args)
    return out


def _head(h, y, w, x):
    """One head's field for one system: points y (n, d), weights w (n,), queries x (m, d)."""
    kind = h.kind
    if kind == "masked":
        d = y.shape[1] - 1
        A, V = h.A(d), h.matrices(d)[2]
        out = np.zeros((x.shape[0], d + 1))
        G = np.empty((x.shape[0], d))
        _softmax(h.beta * x[:, 1:] @ A.T, y[:, 1:], y[:, 1:] @ V.T, _log(w), G, x[:, 0], y[:, 0])
        out[:, 1:] = G
        return out
    d = y.shape[1]
    Q, K, V = h.matrices(d)
    A = K.T @ Q
    out = np.empty((x.shape[0], d))
    if kind == "sigmoid":
        run_tasks(_kernel("sigmoid", d, d), x.shape[0], np.ascontiguousarray(x @ A.T), np.ascontiguousarray(y.T),
                  np.ascontiguousarray((y @ V.T).T), w, float(h.b), out)
        return out
    if kind == "softmax":
        return _softmax(h.beta * x @ A.T, y, y @ V.T, _log(w), out)
    if kind == "l2":
        Ky = y @ K.T
        return _softmax(x @ A.T / h.tau, y, y @ V.T, _log(w) - np.sum(Ky * Ky, axis=1) / (2.0 * h.tau), out)
    raise ValueError(f"no compiled sum for {h!r}; the compiled R^d models are {compiled_models}.")


def euclidean_field(model, points, weights, queries) -> np.ndarray:
    """Γ[μ](queries) of an R^d model whose heads are all softmax, L2, masked or sigmoid attention.

    Same contract as ``model.field`` for points (..., n, d), weights (..., n) and queries (..., m, d)
    of one batch shape; no input checks beyond that (the caller's, as in :func:`particles.simulate`).
    """
    P = np.asarray(points, dtype=float)
    X = np.asarray(queries, dtype=float)
    lead = P.shape[:-2]
    if X.shape[:-2] != lead:
        raise ValueError(f"`points` and `queries` must share their batch shape, got {lead} and {X.shape[:-2]}.")
    W = np.broadcast_to(np.asarray(weights, dtype=float), P.shape[:-1])
    Pf, Wf, Xf = P.reshape((-1,) + P.shape[-2:]), W.reshape(-1, P.shape[-2]), X.reshape((-1,) + X.shape[-2:])
    total = 0.0
    for h in heads(model):
        if h.domain != "euclidean" or h.kind not in compiled_models:
            raise ValueError(f"no compiled sum for {h!r}; the compiled R^d models are {compiled_models}.")
        total = total + np.stack([_head(h, Pf[b], np.ascontiguousarray(Wf[b]), Xf[b]) for b in range(Pf.shape[0])])
    return np.asarray(total).reshape(X.shape)
