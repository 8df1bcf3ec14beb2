r"""Fused pairwise sums of the attention kernel: Σ_j w_j e^{β⟨Qx_i, Ky_j⟩} (V y_j, 1), compiled.

The ``pairwise`` strategy (:mod:`meanfield.kernels.strategies`), an optimisation of
:meth:`meanfield.models.SelfAttention.field` tested against it: for d <= 8 one pass
per query (numba, threads over queries and batch members, SIMD over j, no n×n array
in memory), for larger d blocks of queries over blocks of keys that stay in cache
(:func:`_pairwise_rows`); the loops vectorised at the machine's widest vectors
(:func:`meanfield.core.vectors.wide_vectors`). Each row is shifted by an upper bound s_i of its exponents
β⟨Qx_i, Ky_j⟩ (the Cauchy–Schwarz bound, exact for Q = K = I on the sphere; the
exact maximum for rows where the bound is loose enough to underflow) and the
shift is returned, so SA is safe for any β and USA overflows only where its
true value does.

Reproducibility: the fast-math kernels run on :func:`meanfield.kernels.threads.run_tasks`
(not numba's ``parallel=True``, whose cached and freshly compiled code differ in
the last bits); each output is computed by one task in a fixed order, so results
are identical bit for bit whatever the number of threads, the process, or
whether numba compiled the kernel or loaded it from its cache.
"""

from __future__ import annotations

import types

import numba as nb
import numpy as np

from ..domains.sphere.geometry import project_tangent
from ..models.base import heads
from ..models.normalization import normalization_of
from ..core import checks
from ..core.numerics import EXP_MAX
from ..core.vectors import default_vectors, wide_vectors
from .fastexp import FASTMATH, vexp, vexp32
from .layout import aligned, borrowed
from .threads import run_tasks

__all__ = ["pairwise_sums", "field", "average", "NGPTField", "exact_row", "UNDERFLOW", "SINGLE_PRECISION_ERROR",
           "UNROLL_MAX"]

#: d > UNROLL_MAX: queries per parallel task and keys per block (:func:`_pairwise_rows`: the block's scores, 16 × 256
#: doubles = 32 kB, stay in L1). Against one query per pass over all n keys (the kernel before): 2.1-2.3x at
#: d = 9 and 16, 5x at d = 128, n = 4096, one thread (interleaved, under load; 8 × 512 and 32 × 256 no better)
_ROWS, _KEYS = 16, 256


#: Rows whose shifted sum falls below this are recomputed with their exact maximum.
UNDERFLOW = 1e-200
#: the same in single precision (float32 underflows below ~1e-38)
UNDERFLOW_SINGLE = 1e-30
#: the single-precision field's error relative to the field's own size: max_i |ΔX_i| <= SINGLE_PRECISION_ERROR ·
#: max_i |X_i| for points in general position (independent random points, uniform or clustered). Single precision
#: rounds each pair's shifted score s_ij = β⟨Qq_i, Kx_j⟩ − s_i, computed in float64, to float32 and takes its
#: exponential in float32 (:func:`.fastexp.vexp32`, within one ulp); weights and sums stay float64. Error model:
#: each term carries a relative error |δ_ij| <= u(|s_ij| + 2), u = 2⁻²⁴ (the score's rounding, the exponential's
#: ulp), so to first order ΔX_i = P_i⊥ Σ_j c_ij δ_ij r_ij (SA: c_ij = p_ij the softmax weights, r_ij = Vx_j − A_i,
#: A_i = Σ_j p_ij Vx_j; USA: c_ij = w_j e^{β⟨Qq_i, Kx_j⟩}, r_ij = Vx_j), bounded by B_i = u Σ_j c_ij (|s_ij| + 2)
#: |P_i⊥ r_ij| and, the δ_ij varying pseudo-randomly with j, of the size σ_i = u (Σ_j (c_ij (|s_ij| + 2)
#: |P_i⊥ r_ij|)²)^{1/2}. For independent random points X_i is itself a sum of ~1/Σ_j p_ij² independent terms, so
#: |ΔX| / |X| does not grow with n. Measured (n = 1500 and 4096; d = 2, 3, 5, 8, 16; uniform and clustered points;
#: β = 1, 4, 10; SA and USA, identity and random Q, K, V, random weights): max_i |ΔX_i| / σ_i <= 1.3, |ΔX_i| <=
#: 0.16 B_i, max |ΔX| / max |X| <= 1.1e-7 (tests/meanfield/test_kernels.py asserts all three). Where the field
#: cancels further than the random fluctuation of independent points (near an equilibrium; symmetric arrangements,
#: X = 0) no bound relative to |X| holds; B_i, relative to the terms' scale, holds there. The float32 kernel before
#: it (scores and sums in float32: :data:`SINGLE_SUMS_IN_DOUBLE` off) erred by up to 1.1e-5 of max |X| (d = 2)
SINGLE_PRECISION_ERROR = 1e-6


@nb.njit(fastmath=FASTMATH, error_model="numpy", boundscheck=False, cache=True)
def exact_row(q, KxT, VxT, wb, out_num, b, i, n):
    """One row over the points j < n with the exact max-shift (the rare fallback); returns (den, shift)."""
    d, dv = KxT.shape[1], VxT.shape[1]
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
def _pairwise_rows(Qx, KxT, VxT, w, bound, stops, out_num, out_den, out_shift, start, stop):
    """Any d: a task is a block of _ROWS queries, swept over blocks of _KEYS keys in three vectorised passes.

    Per key block: the shifted scores S[r, j] = β⟨Qx_r, Kx_j⟩ − s_r of the block's queries (the key block, d × _KEYS,
    loaded once for all _ROWS queries: it stays in L1/L2 where one query per pass streamed all n·d keys from memory
    at large d; four coordinates per sweep of S), their exponentials in place (w_j e^S, zero past a row's stop),
    then the value sums (four coordinates per sweep). Each row's sums run over the key blocks in order, so a row's
    result does not depend on the thread count. Tasks ``start..stop-1`` of the B·⌈m/_ROWS⌉ blocks of rows (see
    :func:`.threads.run_tasks`). The key blocks are views (as below), but of the arrays :func:`.layout.borrowed`:
    a view of a shared array otherwise touches its reference count atomically, which two threads contend for
    (:func:`_fused_kernel` indexes its arrays directly instead); these views skip it. The exponential is
    :func:`.fastexp.vexp`; :func:`_rows_kernel` compiles the same code with :func:`_vexp_single` for single
    precision."""
    wide_vectors()
    KxT, VxT, w = borrowed(KxT), borrowed(VxT), borrowed(w)
    m, d = Qx.shape[1], Qx.shape[2]
    dv = VxT.shape[1]
    nblk = (m + _ROWS - 1) // _ROWS
    S = np.empty((_ROWS, _KEYS))
    num = np.empty((_ROWS, dv))
    den = np.empty(_ROWS)
    d4, dv4 = d - d % 4, dv - dv % 4
    for task in range(start, stop):
        b = task // nblk
        i0 = (task % nblk) * _ROWS
        rows = min(m, i0 + _ROWS) - i0
        wb = w[b]
        K = KxT[b]
        V = VxT[b]
        nmax = 0
        for r in range(rows):
            nmax = max(nmax, stops[b, i0 + r])
        num[:] = 0.0
        den[:] = 0.0
        for j0 in range(0, nmax, _KEYS):
            J = min(nmax - j0, _KEYS)
            for r in range(rows):
                sh = bound[b, i0 + r]
                Sr = S[r]
                for j in range(J):
                    Sr[j] = -sh
            for a in range(0, d4, 4):
                k0, k1, k2, k3 = K[a, j0:j0 + J], K[a + 1, j0:j0 + J], K[a + 2, j0:j0 + J], K[a + 3, j0:j0 + J]
                for r in range(rows):
                    q0, q1, q2, q3 = Qx[b, i0 + r, a], Qx[b, i0 + r, a + 1], Qx[b, i0 + r, a + 2], Qx[b, i0 + r, a + 3]
                    Sr = S[r]
                    for j in range(J):
                        Sr[j] += q0 * k0[j] + q1 * k1[j] + q2 * k2[j] + q3 * k3[j]
            for a in range(d4, d):
                k0 = K[a, j0:j0 + J]
                for r in range(rows):
                    q0 = Qx[b, i0 + r, a]
                    Sr = S[r]
                    for j in range(J):
                        Sr[j] += q0 * k0[j]
            wj = wb[j0:j0 + J]
            for r in range(rows):
                nr = max(0, min(J, stops[b, i0 + r] - j0))
                Sr = S[r]
                z = 0.0
                for j in range(nr):
                    e = wj[j] * vexp(Sr[j])
                    Sr[j] = e
                    z += e
                for j in range(nr, J):
                    Sr[j] = 0.0
                den[r] += z
            for a in range(0, dv4, 4):
                v0, v1, v2, v3 = V[a, j0:j0 + J], V[a + 1, j0:j0 + J], V[a + 2, j0:j0 + J], V[a + 3, j0:j0 + J]
                for r in range(rows):
                    Sr = S[r]
                    c0 = c1 = c2 = c3 = 0.0
                    for j in range(J):
                        e = Sr[j]
                        c0 += e * v0[j]
                        c1 += e * v1[j]
                        c2 += e * v2[j]
                        c3 += e * v3[j]
                    num[r, a] += c0
                    num[r, a + 1] += c1
                    num[r, a + 2] += c2
                    num[r, a + 3] += c3
            for a in range(dv4, dv):
                v0 = V[a, j0:j0 + J]
                for r in range(rows):
                    Sr = S[r]
                    c0 = 0.0
                    for j in range(J):
                        c0 += Sr[j] * v0[j]
                    num[r, a] += c0
        for r in range(rows):
            i = i0 + r
            for a in range(dv):
                out_num[b, i, a] = num[r, a]
            out_den[b, i] = den[r]
            out_shift[b, i] = bound[b, i]
            n = stops[b, i]
            if den[r] < UNDERFLOW and n > 0:
                out_den[b, i], out_shift[b, i] = exact_row(Qx[b, i], KxT, VxT, wb, out_num, b, i, n)


def _exp_source(score: str, single: bool) -> str:
    """The source of a pair's exponential e^{score} in the generated kernels: :func:`.fastexp.vexp` in double;
    in single precision the score (computed in float64) rounded to float32, :func:`.fastexp.vexp32`, and the
    result widened back to float64 for the sums (:data:`SINGLE_PRECISION_ERROR`), or with
    :data:`SINGLE_SUMS_IN_DOUBLE` off the float32 kernel before it (float32 arrays, scores and sums)."""
    if not single:
        return f"vexp({score})"
    if not SINGLE_SUMS_IN_DOUBLE:
        return f"vexp32({score})"
    return f"nb.float64(vexp32(nb.float32({score})))"


def _kernel_scope(single: bool) -> dict:
    """The names a generated kernel's source refers to."""
    return {"nb": nb, "np": np, "FASTMATH": FASTMATH, "vexp": vexp, "vexp32": vexp32, "exact_row": exact_row,
            "UNDERFLOW": UNDERFLOW_SINGLE if single else UNDERFLOW,
            "vectors": wide_vectors if WIDE_VECTORS else default_vectors}


# The kernel indexes KxT, VxT and w directly: a view per query (KxT[b, a], w[b]) touches the shared array's reference
# count atomically, which two threads contend for (two threads were 1.61x one at d = 3, now 1.85-1.90x; same bits)
_FUSED_TEMPLATE = """
@nb.njit(nogil=True, fastmath=FASTMATH, error_model="numpy", boundscheck=False, cache=False)
def kernel(Qx, KxT, VxT, w, bound, stops, out_num, out_den, out_shift, start, stop):
    vectors()
    m = Qx.shape[1]
    for task in range(start, stop):
        b = task // m
        i = task % m
        sh = bound[b, i]
        n = stops[b, i]
{loads}
        z = {zero}
{zeros}
        for j in range(n):
            e = {weight}{exp}
            z += e
{accumulate}
{scale}
{stores}
        out_den[b, i] = z
        out_shift[b, i] = sh
        if z < UNDERFLOW and n > 0:
            out_den[b, i], out_shift[b, i] = exact_row(Qx[b, i], KxT, VxT, w[b], out_num, b, i, n)
"""
_FUSED = {}


def _fused_kernel(d: int, dv: int, uniform: bool = False, single: bool = False):
    """A single-pass kernel with the dot product unrolled for dimension d (compiled once per key).

    ``uniform``: all weights of a system equal w[b, 0], multiplied once after the sums (one multiplication
    per pair less: 73 → 83 % of the throughput of the exponentials alone at d = 3). ``single``: the
    exponential in float32 (:func:`_exp_source`)."""
    key = (d, dv, uniform, single, SINGLE_SUMS_IN_DOUBLE, WIDE_VECTORS)
    if key not in _FUSED:
        ind = " " * 8
        zero = "nb.float32(0.0)" if single and not SINGLE_SUMS_IN_DOUBLE else "0.0"
        src = _FUSED_TEMPLATE.format(
            loads="\n".join(f"{ind}q{a} = Qx[b, i, {a}]" for a in range(d)),
            zeros="\n".join(f"{ind}s{a} = {zero}" for a in range(dv)) or f"{ind}pass",
            zero=zero,
            exp=_exp_source(" + ".join(f"q{a} * KxT[b, {a}, j]" for a in range(d)) + " - sh", single),
            accumulate="\n".join(f"{ind}    s{a} += e * VxT[b, {a}, j]" for a in range(dv)) or f"{ind}    pass",
            stores="\n".join(f"{ind}out_num[b, i, {a}] = s{a}" for a in range(dv)) or f"{ind}pass",
            weight="" if uniform else "w[b, j] * ",
            scale="\n".join([f"{ind}z *= w[b, 0]"] + [f"{ind}s{a} *= w[b, 0]" for a in range(dv)]) if uniform
            else f"{ind}pass",
        )
        scope = _kernel_scope(single)
        exec(compile(src, f"<fused kernel d={d} dv={dv}>", "exec"), scope)
        _FUSED[key] = scope["kernel"]
    return _FUSED[key]


_BLOCKED_TEMPLATE = """
@nb.njit(nogil=True, fastmath=FASTMATH, error_model="numpy", boundscheck=False, cache=False)
def kernel(Qx, KxT, VxT, w, bound, stops, out_num, out_den, out_shift, start, stop):
    vectors()
    m = Qx.shape[1]
    nblk = (m + {R} - 1) // {R}
    for task in range(start, stop):
        b = task // nblk
        i0 = (task % nblk) * {R}
        wb = w[b]
{keys}
        if i0 + {R} <= m:
            n = stops[b, i0]
{loads}
{zeros}
            for j in range(n):
{pair}
{stores}
            for i in range(i0, i0 + {R}):
                if out_den[b, i] < UNDERFLOW and n > 0:
                    out_den[b, i], out_shift[b, i] = exact_row(Qx[b, i], KxT, VxT, wb, out_num, b, i, n)
        else:
            for i in range(i0, m):
                n = stops[b, i]
                sh = bound[b, i]
{rowloads}
                z = {zero}
{rowzeros}
                for j in range(n):
                    e = {weight}{rowexp}
                    z += e
{rowacc}
{rowscale}
{rowstores}
                out_den[b, i] = z
                out_shift[b, i] = sh
                if z < UNDERFLOW and n > 0:
                    out_den[b, i], out_shift[b, i] = exact_row(Qx[b, i], KxT, VxT, wb, out_num, b, i, n)
"""


def _blocked_kernel(d: int, dv: int, uniform: bool, single: bool, rows: int):
    """:func:`_fused_kernel` over blocks of ``rows`` queries: one pass over the keys serves ``rows`` rows (each key,
    value and weight loaded once for all of them, ``rows`` independent exponentials in flight), the rows of a block
    sharing their stop (full rows: no causal mask). A task is a block; the last, partial, block runs row by row.
    Each row's sums run over j in the same order as in :func:`_fused_kernel`."""
    key = ("blocked", d, dv, uniform, single, SINGLE_SUMS_IN_DOUBLE, rows, WIDE_VECTORS)
    if key not in _FUSED:
        i12, i16, i20 = " " * 12, " " * 16, " " * 20
        zero = "nb.float32(0.0)" if single and not SINGLE_SUMS_IN_DOUBLE else "0.0"
        weight = "" if uniform else "wb[j] * "
        R = range(rows)
        pair = [f"{i16}k{a}j = k{a}[j]" for a in range(d)] + [f"{i16}v{a}j = v{a}[j]" for a in range(dv)]
        if not uniform:
            pair.append(f"{i16}wj = wb[j]")
        for r in R:
            dot = " + ".join(f"q{r}_{a} * k{a}j" for a in range(d))
            pair.append(f"{i16}e{r} = {'' if uniform else 'wj * '}{_exp_source(f'{dot} - sh{r}', single)}")
            pair.append(f"{i16}z{r} += e{r}")
            pair += [f"{i16}s{r}_{a} += e{r} * v{a}j" for a in range(dv)]
        stores = []
        for r in R:
            if uniform:
                stores.append(f"{i12}z{r} *= wb[0]")
                stores += [f"{i12}s{r}_{a} *= wb[0]" for a in range(dv)]
            stores += [f"{i12}out_num[b, i0 + {r}, {a}] = s{r}_{a}" for a in range(dv)]
            stores += [f"{i12}out_den[b, i0 + {r}] = z{r}", f"{i12}out_shift[b, i0 + {r}] = sh{r}"]
        src = _BLOCKED_TEMPLATE.format(
            R=rows, zero=zero, weight=weight,
            rowexp=_exp_source(" + ".join(f"q{a} * k{a}[j]" for a in range(d)) + " - sh", single),
            keys="\n".join([f"{' ' * 8}k{a} = KxT[b, {a}]" for a in range(d)]
                           + [f"{' ' * 8}v{a} = VxT[b, {a}]" for a in range(dv)]),
            loads="\n".join([f"{i12}q{r}_{a} = Qx[b, i0 + {r}, {a}]" for r in R for a in range(d)]
                            + [f"{i12}sh{r} = bound[b, i0 + {r}]" for r in R]),
            zeros="\n".join([f"{i12}z{r} = {zero}" for r in R] + [f"{i12}s{r}_{a} = {zero}" for r in R
                                                                     for a in range(dv)]),
            pair="\n".join(pair),
            stores="\n".join(stores),
            rowloads="\n".join(f"{i16}q{a} = Qx[b, i, {a}]" for a in range(d)),
            rowzeros="\n".join(f"{i16}s{a} = {zero}" for a in range(dv)) or f"{i16}pass",
            rowacc="\n".join(f"{i20}s{a} += e * v{a}[j]" for a in range(dv)) or f"{i20}pass",
            rowscale="\n".join([f"{i16}z *= wb[0]"] + [f"{i16}s{a} *= wb[0]" for a in range(dv)]) if uniform
            else f"{i16}pass",
            rowstores="\n".join(f"{i16}out_num[b, i, {a}] = s{a}" for a in range(dv)) or f"{i16}pass",
        )
        scope = _kernel_scope(single)
        exec(compile(src, f"<blocked kernel d={d} dv={dv} rows={rows}>", "exec"), scope)
        _FUSED[key] = scope["kernel"]
    return _FUSED[key]


#: the compiled sums ask LLVM for the machine's widest vectors (:func:`meanfield.core.vectors.wide_vectors`: 512 bits on AVX-512,
#: where LLVM's own choice is 256). False: LLVM's choice (the benchmark's comparison; results equal to round-off).
WIDE_VECTORS = True

#: single precision computes each pair's exponential in float32 and everything else — the scores β⟨Qq_i, Kx_j⟩ − s_i,
#: the weights and the sums — in float64 (:data:`SINGLE_PRECISION_ERROR`). False: the float32 kernel before it
#: (float32 arrays, scores and sums: 2.3-2.5x double's speed against 1.1-1.2x at d = 2, 3, but 1e-5 of max |X| at
#: d = 2: the benchmark's comparison row)
SINGLE_SUMS_IN_DOUBLE = True


@nb.njit(inline="always", fastmath=FASTMATH)
def _vexp_single(x):
    """e^x of a float64 x in single precision: x rounded to float32, :func:`.fastexp.vexp32`, widened to float64."""
    return nb.float64(vexp32(nb.float32(x)))


def _rows_kernel(single: bool = False):
    """:func:`_pairwise_rows` (any d), or the same code with ``WIDE_VECTORS`` off at LLVM's own vector width, or in
    single precision with :func:`_vexp_single` for its exponentials (scores and sums in float64, as the unrolled
    kernels: :data:`SINGLE_PRECISION_ERROR`; or the float32 exponentials alone with ``SINGLE_SUMS_IN_DOUBLE`` off:
    this kernel has no float32 sums)."""
    if WIDE_VECTORS and not single:
        return _pairwise_rows
    key = ("rows", WIDE_VECTORS, single)
    if key not in _FUSED:
        fn = _pairwise_rows.py_func
        scope = dict(fn.__globals__, wide_vectors=wide_vectors if WIDE_VECTORS else default_vectors)
        if single:
            scope.update(vexp=_vexp_single, UNDERFLOW=UNDERFLOW_SINGLE)
        plain = types.FunctionType(fn.__code__, scope, fn.__name__)
        _FUSED[key] = nb.njit(nogil=True, fastmath=FASTMATH, error_model="numpy", boundscheck=False)(plain)
    return _FUSED[key]


#: dimensions up to which the unrolled single-pass kernel is used
UNROLL_MAX = 8
#: queries per pass over the keys in the unrolled kernel (full rows; 1: one row per pass, :func:`_fused_kernel`).
#: Blocks of 2 and 4 (:func:`_blocked_kernel`) measured 0.94-1.06× the one-row kernel at n = 2048, d = 2, 3, one and
#: two threads (benchmarks/bench_pairs.py, interleaved, on a 2-core machine at load average ~17): no gain within
#: the noise, so 1 until a quiet machine says otherwise — the exponential's arithmetic, not the loads, bounds the loop.
#: Again with 512-bit vectors (n = 4096, load ~11): blocks of 2 0.86-1.06x, of 4 0.78-0.89x at d = 2, 3
QUERY_BLOCK = 1


def _as_batch(x, name):
    x = np.asarray(x, dtype=float)
    if x.ndim < 2:
        raise ValueError(f"`{name}` must have shape (..., n, d), got {x.shape}.")
    return x.reshape((-1,) + x.shape[-2:])


def pairwise_sums(points, weights, queries, beta: float, Q=None, K=None, V=None, precision: str = "double",
                  stops=None, keys=None, query_vectors=None):
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
    precision : {"double", "single"}
        "single": each pair's exponential in float32 (its score and the sums
        in float64); the field then errs by up to :data:`SINGLE_PRECISION_ERROR`
        relative to max |X| for points in general position (its error model
        there; measured, and asserted in the tests), instead of ~1e-15.
    stops : array_like of int, shape (..., m), optional
        Row i sums over the points j < stops_i only (the causal mask of points sorted by position, each row
        costing stops_i; the threads get equal shares of Σ stops_i). Default: every point.
    keys, query_vectors : array_like, shape of ``points`` and of ``queries``, optional
        The keys Kx_j and the query vectors Qq_i themselves, in place of ``K`` and ``Q`` (RoPE's R(ωτ_j)Kx_j and
        R(ωs_i)Qq_i, docs/MATH.md §13: a rotation per point); ``V`` still acts on ``points``.

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
    vectorised :func:`meanfield.kernels.fastexp.vexp`, within one ulp.
    """
    P, Xq = _as_batch(points, "points"), _as_batch(queries, "queries")
    lead = np.shape(points)[:-2]
    if np.shape(queries)[:-2] != lead:
        raise ValueError(f"`points` and `queries` must share their batch shape, got {lead} and {np.shape(queries)[:-2]}.")
    if precision not in ("double", "single"):
        raise ValueError(f"`precision` must be 'double' or 'single', got {precision!r}.")
    single = precision == "single"
    W = np.asarray(weights, dtype=float).reshape(P.shape[0], P.shape[1])
    if keys is not None:
        Kx = _as_batch(keys, "keys")
    else:
        Kx = P if K is None else P @ np.asarray(K, dtype=float).T
    if query_vectors is not None:
        Qx = beta * _as_batch(query_vectors, "query_vectors")
    else:
        Qx = beta * (Xq if Q is None else Xq @ np.asarray(Q, dtype=float).T)
    if isinstance(V, str):
        VxT = np.empty((P.shape[0], 0, P.shape[1]))
    else:
        VxT = np.swapaxes(P if V is None else P @ np.asarray(V, dtype=float).T, 1, 2)
    KxT = np.swapaxes(Kx, 1, 2)
    B, m = Xq.shape[0], Xq.shape[1]
    n = P.shape[1]
    if stops is None:
        stops, costs = np.full((B, m), n, dtype=np.int64), None
    else:
        stops = np.clip(np.asarray(stops, dtype=np.int64).reshape(B, m), 0, n)
        costs = stops.ravel() + 1  # a row's work: its points and its fixed overhead
    num = np.empty((B, m, VxT.shape[1]))
    den = np.empty((B, m))
    shift = np.empty((B, m))
    # shift each row by the Cauchy–Schwarz bound max_j β⟨Qq_i, Kx_j⟩ <= |βQq_i| max_j |Kx_j|:
    # exact (attained) for Q = K = I on the sphere with queries among the points; rows
    # where it is loose enough to underflow are redone with their exact maximum
    bound = np.linalg.norm(Qx, axis=-1) * np.max(np.linalg.norm(Kx, axis=-1), axis=-1, keepdims=True)
    d = P.shape[-1]
    # the float32 unrolled kernel (the benchmark's comparison; d > UNROLL_MAX: float32 exponentials, float64 sums)
    float32 = single and not SINGLE_SUMS_IN_DOUBLE and P.shape[-1] <= UNROLL_MAX
    dtype = np.float32 if float32 else np.float64
    # the streamed arrays (keys, values, weights) aligned for the SIMD loop over j
    args = tuple(aligned(a, dtype) for a in (Qx, KxT, VxT, W, bound)) + (stops, num, den, shift)
    if float32:
        args = args[:6] + tuple(np.empty(a.shape, np.float32) for a in args[6:])
    if d <= UNROLL_MAX:
        uniform = bool(W.shape[1] > 0 and np.all(W == W[:, :1]))
        if costs is None and QUERY_BLOCK > 1:  # full rows: blocks of QUERY_BLOCK queries per pass over the keys
            run_tasks(_blocked_kernel(d, VxT.shape[1], uniform, single, QUERY_BLOCK), B * -(-m // QUERY_BLOCK),
                      *args)
        else:
            run_tasks(_fused_kernel(d, VxT.shape[1], uniform, single), B * m, *args, costs=costs)
        if float32:
            num, den, shift = (a.astype(float) for a in args[-3:])
    else:
        if costs is not None:  # a task is a block of _ROWS rows: its cost, theirs summed
            blocks = np.zeros((B, -(-m // _ROWS) * _ROWS), dtype=np.int64)
            blocks[:, :m] = costs.reshape(B, m)
            costs = blocks.reshape(-1, _ROWS).sum(axis=1)
        run_tasks(_rows_kernel(single), B * ((m + _ROWS - 1) // _ROWS), *args, costs=costs)
    return num.reshape(lead + (m, VxT.shape[1])), den.reshape(lead + (m,)), shift.reshape(lead + (m,))


def _position_terms(h, points, weights, queries, positions):
    r"""A causal head's decay and RoPE (docs/MATH.md §13) as the compiled sums take them: the key weights
    w_j e^{λτ_j − c} (c = max_j λτ_j, so they are <= w_j), the row log-factor c − λs_i that turns the sums back into
    Σ_j w_j e^{−λ(s_i − τ_j)}(…) (SA's ratio cancels it; USA multiplies by it), and RoPE's keys R(ωτ_j)Kx_j and query
    vectors R(ωs_i)Qq_i (None where ω = 0). λ = ω = 0: the weights themselves and no factor (today's sums)."""
    from ..models.positions import rope_turn

    keys = qv = row = None
    if positions is None:
        return weights, keys, qv, row
    tau, s = positions
    if h.decay:
        lt = h.decay * tau
        c = np.max(lt, axis=-1, keepdims=True)
        weights = weights * np.exp(lt - c)
        row = c - h.decay * s
    if h.rotary:
        w = h.rope_frequencies(points.shape[-1])
        keys = rope_turn(points if h.K is None else points @ np.asarray(h.K, dtype=float).T, tau, w)
        qv = rope_turn(queries if h.Q is None else queries @ np.asarray(h.Q, dtype=float).T, s, w)
    return weights, keys, qv, row


def _sums(hs, points, weights, queries, precision, stops, positions=None):
    """Σ_h u_h: each head's pairwise sums, divided by its normaliser (SA) or scaled back by its shift (USA);
    ``positions`` = (τ, s) of causal heads, for their decay and RoPE (:func:`_position_terms`)."""
    for h in hs:
        if not h.exp_kernel:
            raise TypeError(f"the compiled pairwise sums are softmax self-attention's (a finite β); got {h!r}.")
    total = 0.0
    for h in hs:
        w, keys, qv, row = _position_terms(h, points, weights, queries, positions)
        num, den, shift = pairwise_sums(points, w, queries, h.beta, h.Q, h.K, h.V, precision, stops, keys, qv)
        if row is not None and not h.normalized:
            shift = shift + row
        if h.normalized:
            total = total + num / (den if stops is None else np.where(stops > 0, den, 1.0))[..., None]
        else:
            if np.max(shift, initial=-np.inf) > EXP_MAX:
                raise OverflowError(
                    f"USA field overflows float64: β⟨Qx,Ky⟩ reaches {np.max(shift):.1f} > {EXP_MAX:.1f}; "
                    "USA keeps the unscaled kernel (MATH.md §2.1), so use a smaller β or SA."
                )
            total = total + num * np.exp(shift)[..., None]
    return total


def average(model, points, weights, queries, precision: str = "double") -> np.ndarray:
    r"""A = Σ_h u_h(queries), the heads' averages before the tangent projection, through :func:`pairwise_sums`.

    What the normalisation variants move tokens by (docs/MATH.md §10; :mod:`meanfield.models.normalization`, whose
    ``average`` is the reference sum): pre-LN ẋ = A, peri-LN A/|A|, nGPT α P_θ A/|A|. The points and queries are the
    tokens' directions θ (unit vectors: the callers normalise them; the kernel's row shift bounds scores of unit
    vectors). Non-causal heads; no input checks beyond shapes (the inner loop of :func:`particles.simulate`).
    """
    hs = heads(model)
    if hs[0].causal:
        raise ValueError("the averages of causal heads are summed under their mask by `field`; the normalisation "
                         "variants take non-causal heads.")
    return _sums(hs, points, weights, queries, precision, None)


def field(model, points, weights, queries, precision: str = "double") -> np.ndarray:
    """X[μ](queries) through :func:`pairwise_sums`; same contract as ``model.field``.

    No input checks beyond shapes: this is the inner loop of
    :func:`particles.simulate`, which checks its inputs once. ``precision``:
    see :func:`pairwise_sums` ("single": error up to :data:`SINGLE_PRECISION_ERROR` relative to max |X|, points in
    general position). Causal heads: points and queries are rows (τ, y), (s, x); the points are
    sorted by position once and row i sums over the first ``stops_i`` = #{j: τ_j <= s_i} of them (half the work
    of the full sums for queries at the points). The projection P_x^⊥ makes this post-LN's field; the other
    normalisations move tokens by the averages themselves (:func:`average`).
    """
    norm = normalization_of(model)
    if not norm.heads_field:
        raise ValueError(f"the projected field P_x^⊥ A is post-LN's; {model!r} has normalization {norm!r}, which "
                         "moves its tokens by the average itself: meanfield.kernels.average.")
    hs = heads(model)
    # the shapes only (numpy's reshape error names neither); causal rows broadcast theirs
    checks.weights_fit(weights, np.shape(points)[:-1], exact=not hs[0].causal)
    stops = None
    if hs[0].causal:
        points, weights, queries = (np.asarray(a, dtype=float) for a in (points, weights, queries))
        tau = points[..., 0]
        if np.all(tau[..., 1:] >= tau[..., :-1]):  # already in order (tokens in their sequence): no copies
            points, weights = points[..., 1:], np.broadcast_to(weights, tau.shape)
        else:
            order = np.argsort(tau, axis=-1, kind="stable")
            tau = np.take_along_axis(tau, order, axis=-1)
            points = np.take_along_axis(points[..., 1:], order[..., None], axis=-2)
            weights = np.take_along_axis(np.broadcast_to(weights, tau.shape), order, axis=-1)
        s, queries = queries[..., 0], queries[..., 1:]
        stops = np.stack([np.searchsorted(a, b, side="right") for a, b in
                          zip(tau.reshape(-1, tau.shape[-1]), s.reshape(-1, s.shape[-1]))]).reshape(s.shape)
    positions = (tau, s) if any(h.weighs_positions for h in hs) else None
    total = _sums(hs, points, weights, queries, precision, stops, positions)
    X = project_tangent(np.asarray(queries, dtype=float), total)
    return X if stops is None else np.concatenate([np.zeros(X.shape[:-1] + (1,)), X], axis=-1)


class NGPTField:
    r"""nGPT's field α P_θ A/|A| (docs/MATH.md §10) at unit vectors through the compiled averages (:func:`average`):
    the same contract as ``Transformer.field`` for normalization 'ngpt' (its reference sum), no input checks — the
    grids' quadrature sums of an nGPT density (:func:`meanfield.kernels.grid_field`). Each call records
    ``smallest_length``, min |A| over its queries: the field's strain grows like α/|A| where |A| is small, which the
    grids' step bound reads (:class:`meanfield.representations.grid.GridProblem`). ``FloatingPointError`` where
    A = 0 (no direction to go)."""

    def __init__(self, model):
        self.model, self.normalization = model, normalization_of(model)
        if self.normalization.heads_field or self.normalization.radial:
            raise ValueError(f"NGPTField is the field of a variant on the sphere other than post-LN (nGPT's); {model!r} "
                             f"has normalization {self.normalization!r}.")
        self.smallest_length = np.inf

    def __call__(self, points, weights, queries, precision: str = "double") -> np.ndarray:
        A = average(self.model, points, weights, queries, precision)
        self.smallest_length = float(np.min(np.linalg.norm(A, axis=-1)))
        return self.normalization.velocity(queries, A)
