r"""The push-forward of a density on S² by φ(u) = Bu/|Bu| at given nodes, by local interpolation of its expansion
on the double Fourier sphere (the general-Σ common-noise map, MATH.md §13).

(φ_#ρ)(x) = ρ(φ^{-1}(x)) J(x) with φ^{-1}(x) = B^{-1}x/|B^{-1}x| and J(x) = det B^{-1}/|B^{-1}x|³. The expansion
ρ = Σ_{l<=L} c_lm Y_lm at the preimages:

1. ρ on the equiangular grid θ_i = ih (i = 0..M/2, poles included), φ_k = kh (k < M), h = 2π/M, by one exact
   synthesis, M = 2σ(L + 1): ducc0's ``synthesis_2d`` on Clenshaw–Curtis rings (:func:`equiangular`), or in a
   run (:func:`pushforward`) its two halves — the Legendre sums on the rings (``alm2leg``) and one batched
   inverse real FFT along φ (``c2r``) — writing the rows the stencils read (step 2's) straight into their array;
2. on the double Fourier sphere — θ extended to [0, 2π) by ρ(2π − θ, φ) = ρ(θ, φ + π) — every Y_lm is a
   trigonometric polynomial of degree <= l in θ and in φ (P_l^m(cos θ) is sin^m θ times a polynomial of degree
   l − m in cos θ, and sin^m(−θ) e^{im(φ+π)} = sin^m θ e^{imφ}), so the tensor product of two p-node Lagrange
   stencils in θ and φ around the preimage interpolates it;
3. error: along φ (θ fixed) the degree-l part is a trigonometric polynomial of degree <= l, its sup over the torus
   that over the sphere, at most U_l = √(p_l(2l + 1)/4π) (p_l = Σ_m c_lm², the addition theorem); Bernstein's
   inequality bounds its p-th derivative by l^p U_l, and Cauchy's remainder gives W_p (lh)^p U_l
   (:mod:`meanfield.core.stencils`). The same along θ; the tensor product is off by at most E_φ + Λ_p E_θ:

       |I ρ − ρ| <= (1 + Λ_p) W_p Σ_l U_l (lh)^p,

   Λ_p <= 1.75 (p <= 16) the stencils' Lebesgue constant. :func:`pushforward_stencil` picks the smallest
   σ ∈ {2, 3, 4} and even p <= 16 with this below ``tol`` Σ_l U_l (Σ_l U_l >= sup|ρ|), and none (the caller's
   route by ducc0's non-uniform synthesis) if no p <= 16 does (at σ = 4, p = 16 a degree-L part above ~1e-7 of
   Σ_l U_l). Round-off adds ~p ε Λ_p sup|ρ| (the Lagrange weights as products) and the synthesis' own.
"""

from __future__ import annotations

import threading
from functools import lru_cache

import numba as nb
import numpy as np

from ...core import stencils

__all__ = ["PUSHFORWARD_TOL", "pushforward_stencil", "pushforward_bound", "equiangular", "interpolate_pushforward",
           "pushforward", "determinant_and_gram_defect"]

#: The tolerance of the interpolation relative to Σ_l U_l (>= sup|ρ|): the accuracy ducc0's non-uniform synthesis
#: was asked for (1e-14), now an a-priori bound.
PUSHFORWARD_TOL = 1e-14

_WIDTH = 16  # the largest stencil; the φ stencil runs in fixed-width vector lanes (zero weights past p)
_TENSOR = 1.0 + max(stencils.lebesgue_constant(p) for p in range(4, _WIDTH + 1, 2))  # 1 + Λ_p, every p <= 16
_WEIGHTS = {p: stencils.barycentric_weights(p) for p in range(4, _WIDTH + 1, 2)}


def pushforward_stencil(alm: np.ndarray, lmax: int, tol: float = PUSHFORWARD_TOL) -> tuple[int, int, float]:
    """(σ, p, bound) for the expansion of healpy-ordered ``alm`` of degree ``lmax`` (module docstring, 3.): the
    equiangular grid's M = 2σ(L + 1) and the stencil size, and the bound (1 + max_{p<=16} Λ_p) W_p Σ_l U_l (lh)^p
    relative to Σ_l U_l; (0, 0, inf) where no σ ∈ {2, 3, 4} with p <= 16 meets ``tol``."""
    sigma, p, bound = _stencil(np.ascontiguousarray(alm, dtype=complex), int(lmax), float(tol), stencils.remainders(),
                               _TENSOR)
    return int(sigma), int(p), float(bound)


@nb.njit(cache=True)
def _stencil(alm, L, tol, W, factor):
    U = np.zeros(L + 1)  # U_l = √(p_l (2l + 1)/4π), p_l = |a_l0|² + 2 Σ_{m>0} |a_lm|² (= Σ_m c_lm², real basis)
    for m in range(L + 1):
        start = m * (2 * L + 1 - m) // 2
        for l in range(m, L + 1):
            a = alm[start + l]
            U[l] += (1.0 if m == 0 else 2.0) * (a.real * a.real + a.imag * a.imag)
    total = 0.0
    for l in range(L + 1):
        U[l] = np.sqrt(U[l] * (2 * l + 1) / (4 * np.pi))
        total += U[l]
    total = max(total, 1e-300)
    for sigma in (2, 3, 4):
        p, bound = stencils.stencil_search(U, 2 * np.pi / (2 * sigma * (L + 1)), W, factor, tol * total, 4, _WIDTH)
        if p > 0:
            return sigma, p, bound / total
    return 0, 0, np.inf


def pushforward_bound(alm: np.ndarray, lmax: int, sigma: int, p: int) -> float:
    """The bound of :func:`pushforward_stencil` relative to Σ_l U_l at a given σ and even p (any stencil)."""
    L = int(lmax)
    U = np.zeros(L + 1)
    for m in range(L + 1):
        a = np.abs(alm[m * (2 * L + 1 - m) // 2 + m: m * (2 * L + 1 - m) // 2 + L + 1]) ** 2
        U[m:] += (1.0 if m == 0 else 2.0) * a
    l = np.arange(L + 1)
    U = np.sqrt(U * (2 * l + 1) / (4 * np.pi))
    h = 2 * np.pi / (2 * sigma * (L + 1))
    return float(_TENSOR * stencils.remainder_constant(p) * np.sum(U * (l * h) ** p) / max(np.sum(U), 1e-300))


def equiangular(alm: np.ndarray, lmax: int, M: int) -> np.ndarray:
    """ρ on the rings θ_i = 2πi/M (i = 0..M/2, poles included) at φ_k = 2πk/M, shape (M/2 + 1, M), from ducc0's
    healpy-ordered ``alm`` of degree ``lmax`` (exact: Clenshaw–Curtis rings, M >= 2 lmax + 2)."""
    from ducc0.sht.experimental import synthesis_2d

    return synthesis_2d(alm=alm[None], spin=0, lmax=lmax, geometry="CC", ntheta=M // 2 + 1, nphi=M, nthreads=1)[0]


def interpolate_pushforward(fine: np.ndarray, points: np.ndarray, B, p: int) -> np.ndarray:
    """(φ_#ρ)(x) at unit vectors ``points`` (N, 3) from ρ on the equiangular grid ``fine`` (:func:`equiangular`),
    by p × p Lagrange stencils on the double Fourier sphere (module docstring; even p <= 16), times the Jacobian."""
    _check_stencil(p)
    M = fine.shape[1]
    E = _scratch("E", (M // 2 + _WIDTH, M + _WIDTH))  # the rows the stencils of θ ∈ [0, π] read
    _extended(np.ascontiguousarray(fine), M, p // 2 - 1, p, E)
    return _stencils(E, M, points, B, p)


def pushforward(alm: np.ndarray, lmax: int, points: np.ndarray, B, sigma: int, p: int) -> np.ndarray:
    """:func:`interpolate_pushforward` of :func:`equiangular` (M = 2σ(lmax + 1)) with the double Fourier sphere's
    rows made straight from the expansion: ducc0's Legendre sums on the rings θ_i = ih (i <= M/2) and one batched
    inverse real FFT along φ written into the stencils' array, then the rows past a pole (θ-index −i is ring i half
    a turn round) and the columns past a full turn copied in place (module docstring, 1.-2.; the same values as the
    two-step route to round-off)."""
    from ducc0.fft import c2r
    from ducc0.sht.experimental import alm2leg

    _check_stencil(p)
    L = int(lmax)
    M = 2 * int(sigma) * (L + 1)
    half = p // 2 - 1
    theta, mval, mstart = _rings(L, M)
    spec = _scratch("spec", (M // 2 + 1, M // 2 + 1), complex, zero=True, tag=L)  # the φ-spectra, zero past m = L
    alm2leg(alm=np.asarray(alm, dtype=complex)[None], lmax=L, theta=theta, spin=0, mval=mval, mstart=mstart,
            nthreads=1, leg=spec[None, :, :L + 1])
    E = _scratch("E", (M // 2 + _WIDTH, M + _WIDTH))
    c2r(spec, axes=[1], lastsize=M, forward=False, out=E[half:half + M // 2 + 1, half:half + M])
    _wrap(E, M, half, M // 2 + p)
    return _stencils(E, M, points, B, p)


def _check_stencil(p):
    if not (4 <= p <= _WIDTH and p % 2 == 0):
        raise ValueError(f"`p` must be an even stencil size in [4, {_WIDTH}], got {p}.")


@lru_cache(maxsize=16)
def _rings(L: int, M: int):
    """The rings θ_i = 2πi/M (i <= M/2), ducc0's m values and their starts in healpy order."""
    m = np.arange(L + 1)
    return 2 * np.pi / M * np.arange(M // 2 + 1), m.astype(np.uintp), (m * (2 * L + 1 - m) // 2).astype(np.uintp)


@nb.njit(cache=True)
def _wrap(E, M, half, rows):
    """E[r, c] (θ-index r − half, φ-index c − half, r < ``rows``) where the rings fill r − half ∈ [0, M/2] and
    c ∈ [half, half + M): the rows past a pole from the ring as far the other side of it, half a turn round
    (ρ(−θ, φ) = ρ(θ, φ + π), module docstring 2.), then the columns past a full turn (periodic in φ)."""
    H = M // 2
    for r in range(rows):
        i = r - half
        if 0 <= i <= H:
            continue
        src = half + (-i if i < 0 else M - i)
        for c in range(half, half + M):
            k = c + H
            if k >= half + M:
                k -= M
            E[r, c] = E[src, k]
    for r in range(rows):
        for c in range(half):
            E[r, c] = E[r, c + M]
        for c in range(half + M, M + _WIDTH):
            E[r, c] = E[r, c - M]


def _stencils(E, M, points, B, p):
    """The stencils' sums at the preimages of ``points`` from the double Fourier sphere's rows ``E``, times the
    Jacobian."""
    B = np.ascontiguousarray(B, dtype=float)
    points = np.asarray(points, dtype=float)
    n = points.shape[0]
    q = _scratch("q", (5, n))  # work arrays kept between maps: a map's ~1 MB of fresh pages cost more than its sums
    det = _preimages(points, B, q)
    st = np.arctan2(q[3], q[2], out=q[3])  # numpy's arctan2 runs in vector lanes, numba's scalar one at ~25 ns a call
    sp = np.arctan2(q[1], q[0], out=q[1])
    return _tensor(E, M, p // 2 - 1, p, st, sp, q[4], 1.0 / det, _WEIGHTS[p])


_LOCAL = threading.local()


#: The largest work array :func:`_scratch` keeps between calls (64 MiB): larger ones (L >~ 1000) are made per call,
#: so that a map at a large degree leaves no gigabyte behind in its thread
SCRATCH_MAX_BYTES = 2**26


def _scratch(name: str, shape: tuple, dtype=float, zero: bool = False, tag=None) -> np.ndarray:
    """A work array of ``shape`` kept per thread between calls (contents undefined, or zero when made if ``zero``:
    for parts its user never writes; ``tag``: what else those parts depend on, a new array where it changes). One
    array per name and thread, replaced when the shape or tag changes; none kept above :data:`SCRATCH_MAX_BYTES`."""
    make = np.zeros if zero else np.empty
    if int(np.prod(shape)) * np.dtype(dtype).itemsize > SCRATCH_MAX_BYTES:
        return make(shape, dtype)
    store = getattr(_LOCAL, "arrays", None)
    if store is None:
        store = _LOCAL.arrays = {}
    kept = store.get(name)
    if kept is None or kept[0].shape != shape or kept[1] != tag:
        kept = store[name] = (make(shape, dtype), tag)
    return kept[0]


@nb.njit(cache=True)
def determinant_and_gram_defect(B):
    """(det B, max |BᵀB − I|) of a 3×3 matrix."""
    det = (B[0, 0] * (B[1, 1] * B[2, 2] - B[1, 2] * B[2, 1]) - B[0, 1] * (B[1, 0] * B[2, 2] - B[1, 2] * B[2, 0])
           + B[0, 2] * (B[1, 0] * B[2, 1] - B[1, 1] * B[2, 0]))
    defect = 0.0
    for i in range(3):
        for j in range(3):
            g = B[0, i] * B[0, j] + B[1, i] * B[1, j] + B[2, i] * B[2, j] - (1.0 if i == j else 0.0)
            defect = max(defect, abs(g))
    return det, defect


@nb.njit(cache=True)
def _preimages(points, B, out):
    """out = (q_x, q_y, q_z, |q_xy|, |q|²) of q = B^{-1}x at each point (vector lanes); returns det B.
    B^{-1} = adj(B)/det B, the cofactors in closed form."""
    det, _ = determinant_and_gram_defect(B)
    Binv = np.empty((3, 3))
    for i in range(3):
        for j in range(3):  # (B^{-1})_ij = C_ji / det, C the cofactor matrix
            a, b = (j + 1) % 3, (j + 2) % 3
            c, d = (i + 1) % 3, (i + 2) % 3
            Binv[i, j] = (B[a, c] * B[b, d] - B[a, d] * B[b, c]) / det
    n = points.shape[0]
    qx, qy, qz, rho, r2 = out[0], out[1], out[2], out[3], out[4]
    for i in range(n):
        x, y, z = points[i, 0], points[i, 1], points[i, 2]
        a = Binv[0, 0] * x + Binv[0, 1] * y + Binv[0, 2] * z
        b = Binv[1, 0] * x + Binv[1, 1] * y + Binv[1, 2] * z
        c = Binv[2, 0] * x + Binv[2, 1] * y + Binv[2, 2] * z
        qx[i], qy[i], qz[i] = a, b, c
        rho[i] = np.sqrt(a * a + b * b)
        r2[i] = a * a + b * b + c * c
    return det


@nb.njit(cache=True)
def _extended(fine, M, half, p, E):
    """E[r, c] = ρ on the double Fourier sphere at θ-index r − half and φ-index c − half (both mod M), r < M/2 + p
    (the rows a stencil around θ ∈ [0, π] reads), c < M + :data:`_WIDTH`: θ-index i <= M/2 is ring i, M/2 < i < M
    is ring M − i half a turn round."""
    for r in range(M // 2 + p):
        i = r - half
        if i < 0:
            i += M
        elif i >= M:
            i -= M
        start = M - half  # column c holds φ-index (c + start) mod M, + M/2 on the far half
        if i > M // 2:
            i = M - i
            start += M // 2
        start %= M
        c = 0
        while c < M + _WIDTH:  # runs of contiguous longitudes
            k = (c + start) % M
            run = min(M - k, M + _WIDTH - c)
            E[r, c:c + run] = fine[i, k:k + run]
            c += run


@nb.njit(cache=True, fastmath={"contract"})
def _lagrange_rows(x, w, p, S, P, out):
    """out[j, i] = ℓ_j(x_i) = w_j Π_{k≠j}(x_i − k), j < p, by suffix and prefix products (no division: exact 0/1 on
    a node), each pass over all points in vector lanes (S: work rows, P: a work row)."""
    n = x.size
    S[p - 1, :] = 1.0
    for j in range(p - 1, 0, -1):
        src, dst = S[j], S[j - 1]
        for i in range(n):
            dst[i] = src[i] * (x[i] - j)
    P[:] = 1.0
    for j in range(p):
        wj, o, sj = w[j], out[j], S[j]
        for i in range(n):
            o[i] = wj * P[i] * sj[i]
            P[i] *= x[i] - j


_CHUNK = 128  # points whose weights are made together: their work rows (~40 kB) stay in the L1 cache


@nb.njit(cache=True, fastmath={"reassoc", "contract"})  # the stencil's sums in vector lanes
def _tensor(E, M, half, p, st, sp, r2, inv_det, w):
    """Σ_b ℓ_b(φ) Σ_a ℓ_a(θ) E[it + a, ip + b] times the Jacobian inv_det / r³ at each point (θ ∈ [0, π],
    φ ∈ [−π, π]), :data:`_CHUNK` points at a time: their weights in vector lanes over the points, then their sums
    (a map's work arrays over all points, ~1 MB, were evicted between maps by the rest of the step). The θ sum runs
    down the 16 columns of a stencil at once in 16 named accumulators s0..s15 (which the compiler keeps in vector
    registers; an array there is reloaded and stored every row, and a sum along each row costs a horizontal
    reduction per row), weights past p being 0."""
    n = st.size
    cols = E.shape[1]
    flat = E.ravel()
    scale = M / (2.0 * np.pi)
    base = np.empty(_CHUNK, np.uint64)
    work = np.zeros((2 * _WIDTH + 3 + _WIDTH, _CHUNK))  # zeros: the φ weights past p and a partial chunk's lanes
    xt, xp, P = work[0], work[1], work[2]
    S, lt, rows = work[3:3 + p], work[3 + _WIDTH:3 + _WIDTH + p], work[3 + 2 * _WIDTH:3 + 3 * _WIDTH]
    out = np.empty(n)
    for c0 in range(0, n, _CHUNK):
        m = min(_CHUNK, n - c0)
        for k in range(m):
            s = st[c0 + k] * scale  # in [0, M/2]
            it = int(s)
            xt[k] = s - it + half
            s = sp[c0 + k] * scale  # in [−M/2, M/2]
            if s < 0.0:
                s += M  # may round to M
            ip = int(s)
            xp[k] = s - ip + half
            if ip >= M:
                ip -= M
            base[k] = it * cols + ip
        _lagrange_rows(xt, w, p, S, P, lt)  # (p, chunk)
        _lagrange_rows(xp, w, p, S, P, rows)  # (16, chunk), zero past p
        for k in range(m):
            s0 = 0.0
            s1 = 0.0
            s2 = 0.0
            s3 = 0.0
            s4 = 0.0
            s5 = 0.0
            s6 = 0.0
            s7 = 0.0
            s8 = 0.0
            s9 = 0.0
            s10 = 0.0
            s11 = 0.0
            s12 = 0.0
            s13 = 0.0
            s14 = 0.0
            s15 = 0.0
            off = base[k]
            for a in range(p):
                la = lt[a, k]
                s0 += la * flat[off + np.uint64(0)]
                s1 += la * flat[off + np.uint64(1)]
                s2 += la * flat[off + np.uint64(2)]
                s3 += la * flat[off + np.uint64(3)]
                s4 += la * flat[off + np.uint64(4)]
                s5 += la * flat[off + np.uint64(5)]
                s6 += la * flat[off + np.uint64(6)]
                s7 += la * flat[off + np.uint64(7)]
                s8 += la * flat[off + np.uint64(8)]
                s9 += la * flat[off + np.uint64(9)]
                s10 += la * flat[off + np.uint64(10)]
                s11 += la * flat[off + np.uint64(11)]
                s12 += la * flat[off + np.uint64(12)]
                s13 += la * flat[off + np.uint64(13)]
                s14 += la * flat[off + np.uint64(14)]
                s15 += la * flat[off + np.uint64(15)]
                off += np.uint64(cols)
            acc = (rows[0, k] * s0 + rows[1, k] * s1 + rows[2, k] * s2 + rows[3, k] * s3 + rows[4, k] * s4 +
                   rows[5, k] * s5 + rows[6, k] * s6 + rows[7, k] * s7 + rows[8, k] * s8 + rows[9, k] * s9 +
                   rows[10, k] * s10 + rows[11, k] * s11 + rows[12, k] * s12 + rows[13, k] * s13 +
                   rows[14, k] * s14 + rows[15, k] * s15)
            r = r2[c0 + k]
            out[c0 + k] = acc * inv_det / (r * np.sqrt(r))
    return out
