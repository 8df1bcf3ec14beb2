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
Γ(x_i) = Σ_j w_j σ(⟨Ax_i, y_j⟩ + b) V y_j, has its own loop.

Up to d = 8 (``UNROLL_MAX``) each row is one loop, generated with the sums
over the d coordinates unrolled as in :mod:`.pairwise` (compiled once per
process for each d). Beyond, a block of rows at a time has its logits computed
by one matrix product, their exponentials in compiled rows and the values by a
second product (:func:`_blocked_softmax`, :func:`_blocked_sigmoid`). Those
products are BLAS's: numba's thread count leaves their bits alone, BLAS's own
(``OPENBLAS_NUM_THREADS``) may change the last ones, as in NumPy's sums.

Sinkhorn attention is softmax attention with logits ⟨Ax_i, y_j⟩/τ and offsets
o_j = log w_j + g_j, g its potentials (:meth:`Sinkhorn.potentials`); these come
from :func:`sinkhorn_potentials`, the same log-domain iteration with each
half-step f_i = −log Σ_j e^{⟨a_i, y_j⟩ + o_j} one pass of compiled rows
(:func:`log_normalisers`, shifted and redone like the softmax rows; for d > 8
in blocks of rows like the softmax sums), no n×n array in memory (for d > 8 and
n <= 4096, S and Sᵀ are stored instead: each pass then reads rows).

Each is tested equal to the model's ``field`` to 1e-12 relative.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..core import checks
from ..models.base import heads
from ..models.euclidean import sinkhorn_log_weights, sinkhorn_marginal_error
from .fastexp import FASTMATH, vexp
from .layout import aligned
from .pairwise import UNROLL_MAX
from .threads import run_tasks

__all__ = ["euclidean_field", "compiled_models", "ROWS", "log_normalisers", "sinkhorn_potentials"]

#: the R^d heads :func:`euclidean_field` sums, by their rows' keys (:data:`ROWS`; a head states its ``compiled_rows``)
compiled_models = ("softmax", "l2", "masked", "sigmoid", "sinkhorn")


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
#: log-normaliser rows shifted by an estimate (not a bound) are redone where their sum exceeds this
OVERFLOW = 1e300
#: Sinkhorn's potentials store S and Sᵀ (d > 8) up to this many entries each (n = 4096: 128 MiB)
SINKHORN_MATRIX_MAX = 4096 * 4096


@nb.njit(inline="always", fastmath=FASTMATH, error_model="numpy", boundscheck=False)
def _shifted_logits(ai, YT, offsets, sh, buf):
    """buf_j = ⟨a_i, y_j⟩ + o_j − sh: d + 1 vectorised passes."""
    d, n = YT.shape
    for j in range(n):
        buf[j] = offsets[j] - sh
    for k in range(d):
        ak = ai[k]
        row = YT[k]
        for j in range(n):
            buf[j] += ak * row[j]


@nb.njit(nogil=True, fastmath=FASTMATH, error_model="numpy", boundscheck=False, cache=True)
def _exp_rows(S, offsets, tq, ty, bound, i0, z, start, stop):
    """In place, rows r of a block of logits (queries i0 + r): S_rj ← e^{S_rj + o_j − b_r} over the allowed j
    (0 elsewhere), b_r = bound[i0 + r] an upper bound of the row's logits; z_r = Σ_j S_rj, or −1 where that
    sum falls below UNDERFLOW (the caller redoes the row with its exact maximum)."""
    n = S.shape[1]
    masked = tq.size > 0
    for r in range(start, stop):
        row = S[r]
        sh = bound[i0 + r]
        acc = 0.0
        for j in range(n):
            e = vexp(row[j] + offsets[j] - sh)
            if masked and ty[j] > tq[i0 + r]:
                e = 0.0
            row[j] = e
            acc += e
        z[r] = acc if acc >= UNDERFLOW else -1.0


@nb.njit(inline="always", fastmath=FASTMATH, error_model="numpy", boundscheck=False)
def _sigmoid(s):
    """σ(s) = 1/(1 + e^{−s}) without overflow: from e^{−|s|} (0 below round-off, no clamp)."""
    e = vexp(-abs(s)) if abs(s) < 708.0 else 0.0
    r = 1.0 / (1.0 + e)
    return r if s >= 0.0 else e * r


@nb.njit(nogil=True, fastmath=FASTMATH, error_model="numpy", boundscheck=False, cache=True)
def _sigmoid_rows(S, w, b, start, stop):
    """In place, rows of a block of logits: S_rj ← w_j σ(S_rj + b)."""
    n = S.shape[1]
    for r in range(start, stop):
        row = S[r]
        for j in range(n):
            row[j] = w[j] * _sigmoid(b + row[j])


#: entries of one block of logits in the d > UNROLL_MAX softmax path (4 MiB: 128 rows at n = 4096)
BLOCK_ENTRIES = 2**19


def _logit_blocks(a, y):
    """The logits a yᵀ a block of rows at a time (at most :data:`BLOCK_ENTRIES` entries, one buffer): yields
    (i0, i1, block), block = a[i0:i1] yᵀ by one matrix product, which the caller may overwrite."""
    m, n = a.shape[0], y.shape[0]
    y = np.ascontiguousarray(y)  # once (masked attention passes a column slice), not a copy per product
    rows = min(m, max(8, BLOCK_ENTRIES // max(n, 1)))
    S = aligned(np.empty((rows, n)))
    for i0 in range(0, m, rows):
        i1 = min(m, i0 + rows)
        block = S[: i1 - i0]
        np.matmul(a[i0:i1], y.T, out=block)
        yield i0, i1, block


def _blocked_sigmoid(a, y, Vy, w, b, out):
    """Sigmoid rows for d > UNROLL_MAX: per block of rows the logits by one matrix product, w_j σ(s_ij + b) in
    compiled rows (:func:`_sigmoid_rows`), the values by a second product."""
    w = aligned(w)
    for i0, i1, block in _logit_blocks(a, y):
        run_tasks(_sigmoid_rows, i1 - i0, block, w, b)
        np.matmul(block, Vy, out=out[i0:i1])
    return out


def _blocked_softmax(a, y, Vy, offsets, bound, out, tq=None, ty=None):
    """The softmax rows for d > UNROLL_MAX, a block of rows at a time: the logits ⟨a_i, y_j⟩ by one matrix
    product, their shifted exponentials in compiled rows (:func:`_exp_rows`), the values by a second product;
    rows whose normaliser underflows are redone with their exact maximum (:func:`_exact_row`).
    1.9× faster than rows of d + dv + 2 passes over a buffer at n = 4096, d = 16 (28 against 57 ms)."""
    offsets = aligned(offsets)
    empty = np.empty(0)
    tq = empty if tq is None else np.ascontiguousarray(tq, dtype=float)
    ty = empty if ty is None else aligned(ty)
    redo = []
    for i0, i1, block in _logit_blocks(a, y):
        zb = np.empty(i1 - i0)
        run_tasks(_exp_rows, i1 - i0, block, offsets, tq, ty, bound, i0, zb)
        np.matmul(block, Vy, out=out[i0:i1])
        out[i0:i1] /= zb[:, None]
        redo.extend(i0 + np.flatnonzero(zb < 0.0))
    if redo:
        YT, VyT = np.ascontiguousarray(y.T), np.ascontiguousarray(Vy.T)
        for i in redo:
            _exact_row(a[i], YT, VyT, offsets, tq, ty, out, i)
    return out


@nb.njit(inline="always", fastmath=FASTMATH, error_model="numpy", boundscheck=False)
def _log_sum_exp(buf):
    """log Σ_j e^{buf_j}, shifted by the exact maximum."""
    smax = np.max(buf)
    z = 0.0
    for j in range(buf.size):
        z += vexp(buf[j] - smax)
    return smax + np.log(z)


@nb.njit(nogil=True, fastmath=FASTMATH, error_model="numpy", boundscheck=False, cache=True)
def _exact_log_normaliser(ai, YT, offsets):
    """log Σ_j e^{⟨a_i, y_j⟩ + o_j}, shifted by the row's exact maximum."""
    buf = np.empty(YT.shape[1])
    _shifted_logits(ai, YT, offsets, 0.0, buf)
    return _log_sum_exp(buf)


@nb.njit(nogil=True, fastmath=FASTMATH, error_model="numpy", boundscheck=False, cache=True)
def _matrix_log_normaliser_rows(S, offsets, shift, out, start, stop):
    """out_i = log Σ_j e^{S_ij + o_j} from a stored matrix (or block of rows) S, shifted by ``shift`` (redone
    exactly where the shifted sum leaves [UNDERFLOW, OVERFLOW])."""
    n = S.shape[1]
    buf = np.empty(n)
    for i in range(start, stop):
        sh = shift[i]
        z = 0.0
        for j in range(n):
            z += vexp(S[i, j] + offsets[j] - sh)
        if UNDERFLOW <= z <= OVERFLOW:
            out[i] = sh + np.log(z)
            continue
        for j in range(n):
            buf[j] = S[i, j] + offsets[j]
        out[i] = _log_sum_exp(buf)


_LOG_NORMALISER_TEMPLATE = """
@nb.njit(nogil=True, fastmath=FASTMATH, error_model="numpy", boundscheck=False, cache=False)
def kernel(a, YT, offsets, bound, out, start, stop):
    n = YT.shape[1]
{rows}
    for i in range(start, stop):
{loads}
        sh = bound[i]
        z = 0.0
        for j in range(n):
            z += vexp(offsets[j] + {dot} - sh)
        out[i] = sh + np.log(z) if UNDERFLOW <= z <= OVERFLOW else exact_log_normaliser(a[i], YT, offsets)
"""

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
            c = w[j] * sigmoid(b + {dot})
{accumulate_c}
{stores}
"""
_KERNELS = {}


def _kernel(kind: str, d: int, dv: int, masked: bool = False):
    """The row kernel of ``kind`` with the sums over the d coordinates and dv outputs unrolled (compiled once
    per process and key). "softmax": rows shifted by ``bound`` (an upper bound of the allowed logits), rows
    whose normaliser underflows redone by :func:`_exact_row`; "log_normaliser": the same rows' log Σ_j e^{s_ij}
    (dv = 0); "sigmoid": one pass."""
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
        template = {"softmax": _SOFTMAX_TEMPLATE, "sigmoid": _SIGMOID_TEMPLATE,
                    "log_normaliser": _LOG_NORMALISER_TEMPLATE}[kind]
        scope = {"nb": nb, "np": np, "FASTMATH": FASTMATH, "vexp": vexp, "sigmoid": _sigmoid, "exact_row": _exact_row,
                 "exact_log_normaliser": _exact_log_normaliser, "UNDERFLOW": UNDERFLOW,
                 "OVERFLOW": OVERFLOW}
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
    if y.shape[1] > UNROLL_MAX:
        return _blocked_softmax(a, y, Vy, offsets, bound, out, tq, ty)
    masked = tq is not None
    empty = np.empty(0)
    args = (np.ascontiguousarray(a), aligned(y.T), aligned(Vy.T), aligned(offsets),  # streamed: aligned
            empty if tq is None else np.ascontiguousarray(tq), empty if ty is None else aligned(ty), bound, out)
    run_tasks(_kernel("softmax", y.shape[1], Vy.shape[1], masked), a.shape[0], *args)
    return out


def log_normalisers(a, y, offsets, ynorm=None, shift=None):
    """out_i = log Σ_j e^{⟨a_i, y_j⟩ + offsets_j} for a (m, d), y (n, d) and finite offsets (n,), compiled rows.

    Row i is summed as shift_i + log Σ_j e^{s_ij − shift_i}. The default shift is
    |a_i| max_j |y_j| + max_j offsets_j >= max_j s_ij (Cauchy–Schwarz); a closer
    estimate of the result (``shift``, e.g. its value at the previous Sinkhorn
    iteration) loses less to round-off (the error is of the order of ulp(|shift_i − out_i|)),
    need not be a bound. Rows whose shifted sum leaves [1e-200, 1e300] are redone
    with their exact maximum. ``ynorm`` (max_j |y_j|) may be passed when known.
    For d > 8 the logits of a block of rows come from one matrix product.
    """
    a = np.ascontiguousarray(a, dtype=float)
    out = np.empty(a.shape[0])
    if shift is None:
        ynorm = np.max(np.linalg.norm(y, axis=1)) if ynorm is None else ynorm
        shift = np.linalg.norm(a, axis=1) * ynorm + np.max(offsets)
    shift = np.ascontiguousarray(shift, dtype=float)
    if y.shape[1] <= UNROLL_MAX:
        run_tasks(_kernel("log_normaliser", y.shape[1], 0), a.shape[0], a, aligned(y.T), aligned(offsets), shift, out)
        return out
    offsets = aligned(offsets)
    for i0, i1, block in _logit_blocks(a, y):
        run_tasks(_matrix_log_normaliser_rows, i1 - i0, block, offsets, shift[i0:i1], out[i0:i1])
    return out


def sinkhorn_potentials(model, points, weights) -> np.ndarray:
    r"""The potentials g of :meth:`meanfield.models.Sinkhorn.potentials` for one system, in compiled rows.

    The same iteration, stopping rule and errors: from f = −log Σ_j w_j e^{S_ij},
    S_ij = ⟨Ax_i, x_j⟩/τ, each iteration sets

        g_j = −log Σ_i e^{⟨Aᵀx_j/τ, x_i⟩ + f_i + ℓ_i},   f'_i = −log Σ_j e^{⟨Ax_i/τ, x_j⟩ + g_j + ℓ_j}

    (ℓ = :func:`~meanfield.models.euclidean.sinkhorn_log_weights`) and returns g once
    max_i |e^{f_i − f'_i} − 1| <= ``model.tol`` or its round-off floor
    (:func:`~meanfield.models.euclidean.sinkhorn_marginal_error`); ``RuntimeError`` after ``model.max_iter``
    iterations.
    Two passes of :func:`log_normalisers` per iteration, O(n) memory; for d > 8 (where the products
    ⟨a_i, y_j⟩ cost more than the exponentials) and n² <= :data:`SINKHORN_MATRIX_MAX`, S and Sᵀ are stored
    instead (one matrix product each, 2n² doubles: 268 MB at n = 4096) and each pass reads their rows.
    Each row is shifted by its value at the previous iteration rounded to an integer (rows the estimate
    misses by more than ~460 are redone exactly): once the potentials settle, within log n + 1 of the
    row's maximum, so its error is ulp-sized as with the exact maxima of the NumPy iteration, and the same
    from one iteration to the next, so that the iteration reaches a fixed point in floating point (shifted by the unrounded previous value, it can cycle by one ulp, above ``tol``
    where |S| ~ 10³).

    Parameters
    ----------
    model : Sinkhorn
    points : ndarray, shape (n, d)
    weights : ndarray, shape (n,)

    Returns
    -------
    ndarray, shape (n,)
    """
    n, d = points.shape
    A = model.A(d) / model.tau
    rows, cols = points @ A.T, points @ A  # ⟨rows_i, x_j⟩ = S_ij = ⟨x_i, cols_j⟩
    logw = sinkhorn_log_weights(weights)
    if d > UNROLL_MAX and n * n <= SINKHORN_MATRIX_MAX:  # S and Sᵀ stored: each pass reads a row, no products

        def stored(M):
            row_max = np.max(M, axis=1)

            def log_sums(offsets, shift):
                out = np.empty(n)
                shift = row_max + np.max(offsets) if shift is None else shift
                run_tasks(_matrix_log_normaliser_rows, n, M, aligned(offsets), shift, out)
                return out

            return log_sums

        f_pass, g_pass = stored(rows @ points.T), stored(cols @ points.T)  # S, and Sᵀ by a product (faster)
    else:
        ynorm = np.max(np.linalg.norm(points, axis=1))

        def products(a):
            return lambda offsets, shift: log_normalisers(a, points, offsets, ynorm=ynorm, shift=shift)

        f_pass, g_pass = products(rows), products(cols)

    f = -f_pass(logw, None)
    g = None
    for _ in range(model.max_iter):  # each half-step shifted by its previous value, rounded (the first: the bound)
        g = -g_pass(f + logw, None if g is None else np.rint(-g))
        f_next = -f_pass(g + logw, np.rint(-f))
        err, floor = sinkhorn_marginal_error(f, f_next, g)
        if err <= max(model.tol, floor):
            return g
        f = f_next
    raise RuntimeError(f"Sinkhorn did not reach tol = {model.tol:g} in {model.max_iter} iterations.")


def _masked_head(h, y, w, x):
    """Masked softmax: rows (τ, y) of [0, 1] × R^d, the mask τ_j <= s_i (:class:`~meanfield.models.Masked`)."""
    d = y.shape[1] - 1
    A, V = h.A(d), h.matrices(d)[2]
    out = np.zeros((x.shape[0], d + 1))
    G = np.empty((x.shape[0], d))
    _softmax(h.beta * x[:, 1:] @ A.T, y[:, 1:], y[:, 1:] @ V.T, _log(w), G, x[:, 0], y[:, 0])
    out[:, 1:] = G
    return out


def _sigmoid_head(h, y, w, x):
    """Σ_j w_j σ(⟨Ax_i, y_j⟩ + b) V y_j (:class:`~meanfield.models.Sigmoid`)."""
    d = y.shape[1]
    A, V = h.A(d), h.matrices(d)[2]
    out = np.empty((x.shape[0], d))
    if d > UNROLL_MAX:
        return _blocked_sigmoid(x @ A.T, y, y @ V.T, w, float(h.b), out)
    run_tasks(_kernel("sigmoid", d, d), x.shape[0], np.ascontiguousarray(x @ A.T), aligned(y.T),
              aligned((y @ V.T).T), aligned(w), float(h.b), out)
    return out


def _softmax_head(h, y, w, x):
    """The softmax of β⟨Ax_i, y_j⟩ (:class:`~meanfield.models.Softmax`)."""
    d = y.shape[1]
    A, V = h.A(d), h.matrices(d)[2]
    return _softmax(h.beta * x @ A.T, y, y @ V.T, _log(w), np.empty((x.shape[0], d)))


def _sinkhorn_head(h, y, w, x):
    """The softmax of ⟨Ax_i, y_j⟩/τ + g_j, g the Sinkhorn potentials (:class:`~meanfield.models.Sinkhorn`)."""
    d = y.shape[1]
    A, V = h.A(d), h.matrices(d)[2]
    g = sinkhorn_potentials(h, y, w)
    return _softmax(x @ A.T / h.tau, y, y @ V.T, _log(w) + (g - np.max(g)), np.empty((x.shape[0], d)))


def _l2_head(h, y, w, x):
    """The softmax of ⟨Ax_i, y_j⟩/τ − |Ky_j|²/(2τ) (:class:`~meanfield.models.L2`)."""
    d = y.shape[1]
    Q, K, V = h.matrices(d)
    A = K.T @ Q
    Ky = y @ K.T
    return _softmax(x @ A.T / h.tau, y, y @ V.T, _log(w) - np.sum(Ky * Ky, axis=1) / (2.0 * h.tau),
                    np.empty((x.shape[0], d)))


#: The compiled rows by the key an R^d head states (its class's ``compiled_rows``): a kind offers these sums by
#: naming one of them; one with ``compiled_rows = None`` runs by its own ``field``.
ROWS = {"masked": _masked_head, "sigmoid": _sigmoid_head, "softmax": _softmax_head, "sinkhorn": _sinkhorn_head,
        "l2": _l2_head}


def _head(h, y, w, x):
    """One head's field for one system: points y (n, d), weights w (n,), queries x (m, d)."""
    rows = ROWS.get(h.compiled_rows)
    if rows is None:
        raise ValueError(f"no compiled sum for {h!r}; the compiled R^d models are {compiled_models}.")
    return rows(h, y, w, x)


def euclidean_field(model, points, weights, queries) -> np.ndarray:
    """Γ[μ](queries) of an R^d model whose heads are all softmax, L2, masked, sigmoid or Sinkhorn attention.

    Same contract as ``model.field`` for points (..., n, d), weights (..., n) and queries (..., m, d)
    of one batch shape; no input checks beyond that (the caller's, as in :func:`particles.simulate`).
    """
    P = np.asarray(points, dtype=float)
    X = np.asarray(queries, dtype=float)
    lead = P.shape[:-2]
    if X.shape[:-2] != lead:
        raise ValueError(f"`points` and `queries` must share their batch shape, got {lead} and {X.shape[:-2]}.")
    W = np.broadcast_to(np.asarray(weights, dtype=float), checks.weights_fit(weights, P.shape[:-1]))
    Pf, Wf, Xf = P.reshape((-1,) + P.shape[-2:]), W.reshape(-1, P.shape[-2]), X.reshape((-1,) + X.shape[-2:])
    total = 0.0
    for h in heads(model):
        if h.compiled_rows not in ROWS:
            raise ValueError(f"no compiled sum for {h!r}; the compiled R^d models are {compiled_models}.")
        total = total + np.stack([_head(h, Pf[b], np.ascontiguousarray(Wf[b]), Xf[b]) for b in range(Pf.shape[0])])
    return np.asarray(total).reshape(X.shape)
