r"""The circle's Fourier conventions, each written once (MATH.md §2.1).

A density on n equispaced nodes θ_j = 2πj/n is the trigonometric polynomial with
coefficients ρ̂_k = (1/2π)∫ρ e^{-ikθ} dθ, which on the nodes are ``rfft(ρ)/n``
(k = 0..n//2; exact for degree < n/2). For even n the Nyquist coefficient is
split evenly between k = ±n/2, so the interpolant is real and exact at the
nodes:

    ρ(θ) = Σ_{k=0}^{n//2} m_k Re(ρ̂_k e^{ikθ}),   m_0 = 1, m_k = 2, m_{n/2} = 1 (even n)

(:func:`multiplicity`). Everything on the circle that pads, truncates,
evaluates or integrates this series goes through this module:

- :func:`pad` — zero-padding with the Nyquist split (refinement, dealiased products);
- :func:`resample` — the interpolant on another number of nodes;
- :func:`series` — Σ_{k>=1} 2Re(A_k z^k) and D_0 + Σ_{k>=1} 2Re(D_k z^k) at points z = e^{iθ}
  (power recurrence, compiled): the interpolant (:func:`evaluate`) and its CDF;
- :func:`cdf_coefficients` — F(θ) = ∫_0^θ ρ / mass of the interpolant,
  F(θ) = [ρ̂_0 θ + Σ_{k>=1} m_k Re(ρ̂_k (e^{ikθ} − 1)/(ik))] / (2π ρ̂_0),
  evaluated at any angles (:func:`cdf_and_density`) or, by one inverse FFT, on
  an equispaced grid (:func:`cdf_equispaced`).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np
import scipy.fft as sfft

from ...core import stencils

__all__ = ["rfft", "irfft", "coefficients", "from_coefficients", "multiplicity", "padded_size", "pad", "resample",
           "series",
           "interpolant_coefficients", "evaluate", "evaluate_many", "lagrange_bound", "oversampled",
           "linear_pushforward", "pushforward_stencil", "pushforward_bound", "PUSHFORWARD_TOL", "cdf_coefficients",
           "cdf_and_density", "cdf_equispaced"]

TWO_PI = 2.0 * np.pi

try:  # the same pocketfft transforms at less than half of scipy.fft's per-call cost at n ~ 10³
    from ducc0.fft import c2r as _c2r
    from ducc0.fft import r2c as _r2c
except ImportError:  # pragma: no cover - ducc0 is a dependency; scipy.fft stays the fallback
    _c2r = _r2c = None

#: :func:`evaluate_many`'s oversampling σ (the interpolant on σn nodes by one FFT) and its stencil of p nodes
#: (local Lagrange interpolation); :func:`lagrange_bound` (σ, p) = 1.4e-14 relative to Σ_k m_k |ρ̂_k|.
OVERSAMPLE, STENCIL = 4, 32


def rfft(values: np.ndarray) -> np.ndarray:
    """``scipy.fft.rfft`` along the last axis (ducc0's r2c where installed: the right-hand sides' hot path)."""
    values = np.ascontiguousarray(values, dtype=float)
    if _r2c is None:
        return sfft.rfft(values, axis=-1)
    return _r2c(values, axes=(values.ndim - 1,))


def irfft(coeffs: np.ndarray, n: int) -> np.ndarray:
    """``scipy.fft.irfft(coeffs, n)`` along the last axis (ducc0's c2r where installed and the last axis has
    n//2 + 1 coefficients; scipy pads or truncates otherwise)."""
    coeffs = np.asarray(coeffs)
    if _c2r is None or coeffs.shape[-1] != n // 2 + 1:
        return sfft.irfft(coeffs, n, axis=-1)
    coeffs = np.ascontiguousarray(coeffs, dtype=complex)
    return _c2r(coeffs, axes=(coeffs.ndim - 1,), lastsize=n, forward=False, inorm=2)


def coefficients(values: np.ndarray) -> np.ndarray:
    """ρ̂_k for k = 0..n//2 (last axis), ``rfft(values)/n``."""
    n = np.shape(values)[-1]
    return rfft(values) / n


def from_coefficients(coeffs: np.ndarray, n: int) -> np.ndarray:
    """Nodal values on n nodes from ρ̂_k, k = 0..n//2 (inverse of :func:`coefficients`)."""
    return sfft.irfft(coeffs * n, n, axis=-1)


def multiplicity(n: int) -> np.ndarray:
    """m_k, k = 0..n//2: how often ρ̂_k counts in the real series (1, 2, ..., 2[, 1 at n/2 for even n])."""
    m = np.full(n // 2 + 1, 2.0)
    m[0] = 1.0
    if n % 2 == 0:
        m[-1] = 1.0
    return m


def padded_size(n: int) -> int:
    """Smallest even FFT-friendly size M >= 3n/2: products of two degree-n/2 series on M nodes are exact."""
    m = sfft.next_fast_len(-(-3 * n // 2), real=True)
    return m + (m % 2)


def pad(c: np.ndarray, n: int, size: int) -> np.ndarray:
    """The rfft coefficients ``c`` of an n-node grid in a complex array of ``size`` >= n//2 + 1 (last axis).

    Modes above n//2 are zero; for even n the Nyquist coefficient is halved (split between ±n/2).
    """
    c = np.asarray(c)
    out = np.zeros(c.shape[:-1] + (size,), dtype=complex)
    if c.ndim == 1:  # the right-hand sides' hot path: plain indices (an Ellipsis index costs ~5 µs at n = 1024)
        out[: c.size] = c
        if n % 2 == 0:
            out[n // 2] *= 0.5
        return out
    out[..., : c.shape[-1]] = c
    if n % 2 == 0:
        out[..., n // 2] *= 0.5
    return out


def resample(values: np.ndarray, n: int) -> np.ndarray:
    """Values of the trigonometric interpolant on ``n`` nodes (last axis).

    Zero-padding (n > current) is exact; truncation drops the modes above n/2
    (the Nyquist mode of the result is the symmetric one).
    """
    old = np.shape(values)[-1]
    c = coefficients(values)
    if n >= old:
        out = pad(c, old, n // 2 + 1)
    else:
        out = np.array(c[..., : n // 2 + 1], dtype=complex)
        if n % 2 == 0:
            out[..., n // 2] = 2.0 * out[..., n // 2].real
    return sfft.irfft(out * n, n, axis=-1)


@nb.njit(parallel=True, cache=True)
def series(x, A, D):
    """Σ_{k>=1} 2Re(A_k z^k) and D_0 + Σ_{k>=1} 2Re(D_k z^k) at z = x_0 + i x_1, for points x of shape (m, 2)."""
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


def _series_at_angles(theta, A, D):
    theta = np.ascontiguousarray(np.asarray(theta, dtype=float).ravel())
    return series(np.stack([np.cos(theta), np.sin(theta)], axis=-1), A, D)


def interpolant_coefficients(c: np.ndarray, n: int) -> np.ndarray:
    """D with D_0 + Σ_{k>=1} 2Re(D_k e^{ikθ}) the interpolant: D_k = m_k ρ̂_k / 2, D_0 = ρ̂_0."""
    D = multiplicity(n) * c / 2.0
    D[0] = c[0]
    return D


def evaluate(values: np.ndarray, theta) -> np.ndarray:
    """The trigonometric interpolant of nodal ``values`` (shape (n,)) at angles θ (any shape)."""
    values = np.asarray(values, dtype=float)
    D = interpolant_coefficients(coefficients(values), values.shape[-1])
    return _series_at_angles(theta, np.zeros_like(D), D)[1].reshape(np.shape(theta))


def lagrange_bound(sigma: float = OVERSAMPLE, p: int = STENCIL) -> float:
    r"""The error bound of :func:`evaluate_many` relative to Σ_k m_k |ρ̂_k|: a mode cos(kθ + φ), |k| <= n/2,
    sampled on σn equispaced nodes (spacing h, kh <= π/σ) and interpolated by the Lagrange polynomial of the p nodes
    around θ (θ in the middle interval) is off by at most (kh)^p max|ω|/p! (Cauchy's remainder, |cos^{(p)}| <= k^p),
    ω(x) = Π_{j<p} (x − j) over x in [p/2 − 1, p/2] in units of h:

        E(σ, p) = (π/σ)^p max_{x ∈ [p/2−1, p/2]} |ω(x)| / p!.
    """
    x = np.linspace(p / 2 - 1, p / 2, 1025)
    w = np.ones_like(x)
    for j in range(p):
        w *= np.abs(x - j)
    return float((np.pi / sigma) ** p * np.max(w) / math.factorial(p))


def _stencil_weights(p: int) -> np.ndarray:
    """Barycentric weights of p equispaced nodes 0..p−1: 1/Π_{j≠i}(i − j) = (−1)^{p−1−i} / (i! (p−1−i)!)."""
    return np.array([(-1.0) ** (p - 1 - i) / (math.factorial(i) * math.factorial(p - 1 - i)) for i in range(p)])


_WEIGHTS = _stencil_weights(STENCIL)


@nb.njit(cache=True, fastmath={"reassoc", "contract", "arcp", "nsz"}, error_model="numpy")  # sums in vector lanes
def _barycentric(g, first, x, w):
    """Σ_j t_j g[first_i + j] / Σ_j t_j, t_j = w_j/(x_i − j), for each point i (x_i off the nodes 0..p−1)."""
    p = w.size
    out = np.empty(x.size)
    for i in range(x.size):
        xi = x[i]
        f = first[i]
        num = 0.0
        den = 0.0
        for j in range(p):
            t = w[j] / (xi - j)
            num += t * g[f + j]
            den += t
        out[i] = num / den
    return out


@nb.njit(cache=True)
def _lagrange(fine, s, w):
    """The Lagrange interpolant of the p = w.size nodes around each s (in node units, any real) of the periodic
    values ``fine`` (M nodes), by the barycentric formula of the second kind (Σ_j t_j f_j / Σ_j t_j with
    t_j = w_j/(x − j): exact on constants); a point on a node takes the node's value. No libm call (floor, fmod)
    here: they ran ~3× slower after vector code."""
    p = w.size
    M = fine.size
    half = p // 2 - 1
    g = np.empty(M + p)  # fine, periodically extended: g[k] = fine[(k − half) mod M]
    g[:half] = fine[M - half:]
    g[half:half + M] = fine
    g[half + M:] = fine[:p - half]
    m = s.size
    first = np.empty(m, np.int64)
    x = np.empty(m)
    node = np.empty(m, np.int64)  # the node a point lies on after the shift, −1 if none
    on_node = False
    for i in range(m):
        si = s[i]
        if si < 0.0 or si >= M:
            si -= int(si / M) * M  # truncation toward zero
            if si < 0.0:
                si += M  # may round to M (si = −1e-17): wrapped below
        i0 = int(si)
        xi = si - i0  # in [0, 1)
        if i0 >= M:  # si at or past M by rounding
            i0 -= M
        first[i] = i0
        # "on a node" decided after the shift: x + half rounds onto the node half (or half + 1) when x is below
        # ulp(half)/2 (or above 1 − ulp/2), where t_j = w_j/(x − j) would divide by zero (inf/inf = NaN)
        xi += half
        node[i] = -1
        if xi == half:
            node[i] = i0
        elif xi == half + 1.0:
            node[i] = i0 + 1 if i0 + 1 < M else 0
        if node[i] >= 0:
            on_node = True
            xi = half + 0.5  # computed below, then replaced by the node's value
        x[i] = xi
    out = _barycentric(g, first, x, w)
    if on_node:
        for i in range(m):
            if node[i] >= 0:
                out[i] = fine[node[i]]
    return out


@nb.njit(cache=True)
def _preimages(cos, sin, a, b, c, d):
    """The preimages' directions adj(B)u = (det B) B^{-1}u at the nodes u = (cos, sin) and the Jacobian
    det B / |adj(B)u|² (vector lanes; the angles by numpy's arctan2, which vectorises where numba's loop does not)."""
    m = cos.size
    px, py, jac = np.empty(m), np.empty(m), np.empty(m)
    det = a * d - b * c
    for i in range(m):
        x = d * cos[i] - b * sin[i]
        y = a * sin[i] - c * cos[i]
        px[i], py[i] = x, y
        jac[i] = det / (x * x + y * y)
    return px, py, jac


def _pushforward(fine, cos, sin, a, b, c, d, w):
    """:func:`linear_pushforward` at the nodes (cos, sin) from the interpolant on M = fine.size nodes: the
    preimages' angles and the Jacobian, the interpolant there by :func:`_lagrange` on the stencil of ``w``."""
    px, py, jac = _preimages(cos, sin, a, b, c, d)
    s = np.arctan2(py, px)
    s *= fine.size / TWO_PI
    out = _lagrange(fine, s, w)
    out *= jac
    return out


def oversampled(values: np.ndarray, sigma: int = OVERSAMPLE) -> np.ndarray:
    """The interpolant of nodal ``values`` (shape (n,)) on σn equispaced nodes, by one inverse FFT of the
    zero-padded spectrum (as :func:`pad`: exact)."""
    n = values.shape[-1]
    M = sigma * n
    spectrum = np.zeros(M // 2 + 1, dtype=complex)
    spectrum[: n // 2 + 1] = rfft(values)
    spectrum *= sigma  # rfft/n are ρ̂_k; the inverse on M nodes wants M ρ̂_k
    if n % 2 == 0:
        spectrum[n // 2] *= 0.5  # the Nyquist coefficient split between ±n/2 (:func:`pad`)
    return irfft(spectrum, M)


def evaluate_many(values: np.ndarray, theta: np.ndarray) -> np.ndarray:
    r"""The interpolant of nodal ``values`` (shape (n,)) at as many angles θ (shape (m,)) as nodes or more, in
    O(n log n + pm): the interpolant on M = σn equispaced nodes by one inverse FFT (:func:`oversampled`, exact),
    then at each θ the Lagrange polynomial of the p = :data:`STENCIL` nodes around it; off by at most
    :func:`lagrange_bound` (σ = :data:`OVERSAMPLE`, p) = 1.4e-14 times Σ_k m_k |ρ̂_k| plus round-off (measured
    ~1e-15 of max ρ on a smooth density). A non-uniform FFT (ducc0, 2.5e-13) took 40-70 µs a call at
    n = 256-1024, which made a common noise's density step 1.2-1.7× the noiseless one."""
    values = np.asarray(values, dtype=float)
    theta = np.ascontiguousarray(np.asarray(theta, dtype=float).ravel())
    n = values.shape[-1]
    return _lagrange(oversampled(values), theta * (OVERSAMPLE * n / TWO_PI), _WEIGHTS)


#: The general-Σ map's tolerance relative to Σ_k m_k|ρ̂_k|: :func:`lagrange_bound` at (σ, p) = (4, 32), the bound
#: of the fixed stencil it used before; :func:`pushforward_stencil` picks the cheapest (σ, p) within it.
PUSHFORWARD_TOL = _FIXED_BOUND = lagrange_bound(OVERSAMPLE, STENCIL)
_PUSHFORWARD_WEIGHTS = {p: _stencil_weights(p) for p in range(4, STENCIL + 1, 2)}


def pushforward_stencil(spectrum: np.ndarray, n: int, tol: float = PUSHFORWARD_TOL) -> tuple[int, int, float]:
    r"""(σ, p, bound): the oversampling and the even stencil size of :func:`linear_pushforward` for the density of
    ``spectrum`` = rfft(values) (n nodes), and the a-priori bound of its interpolation error.

    The mode k (amplitude a_k = m_k |ρ̂_k|) on σn nodes (h = 2π/(σn)) is off by at most a_k (kh)^p W_p
    (:mod:`meanfield.core.stencils`: Cauchy's remainder), so the interpolant is off by at most

        E(σ, p) = W_p Σ_k a_k (2πk/(σn))^p <= lagrange_bound(σ, p) Σ_k a_k     (kh <= π/σ).

    The smallest p <= 16 with E(1, p) <= tol Σ_k a_k is taken (the n nodes themselves: no FFT back), else the
    smallest p <= 16 with E(2, p) <= tol Σ_k a_k (an FFT onto 2n nodes), else the smallest p <= 32 with
    E(4, p) <= tol Σ_k a_k, which exists for tol >= lagrange_bound(4, 32) (:data:`PUSHFORWARD_TOL`, the fixed
    stencil's bound): never a larger bound than the fixed (4, 32). A density resolved well inside its grid (the
    spectrum at round-off beyond k <= n/8, say) takes σ = 1 and 6-12 nodes."""
    return _circle_stencil(np.ascontiguousarray(spectrum, dtype=complex), int(n), stencils.remainders(), float(tol),
                           _FIXED_BOUND)


@nb.njit(cache=True)
def _circle_stencil(spectrum, n, W, tol, fixed):
    K = spectrum.size
    a = np.empty(K)
    total = 0.0
    for k in range(K):
        a[k] = (1.0 if k == 0 or 2 * k == n else 2.0) * abs(spectrum[k]) / n  # m_k |ρ̂_k|
        total += a[k]
    total = max(total, 1e-300)
    for sigma, p_max in ((1, 16), (2, 16), (OVERSAMPLE, STENCIL)):
        p, bound = stencils.stencil_search(a, 2.0 * np.pi / (sigma * n), W, 1.0, tol * total, 4, p_max)
        if p > 0:
            return sigma, p, bound / total
    return OVERSAMPLE, STENCIL, fixed  # only for a tol below lagrange_bound(4, 32): the fixed stencil's a_k-free bound


def _oversampled_spectrum(spectrum: np.ndarray, n: int, sigma: int) -> np.ndarray:
    """:func:`oversampled` from rfft(values)."""
    M = sigma * n
    padded = np.zeros(M // 2 + 1, dtype=complex)
    padded[: n // 2 + 1] = spectrum
    padded *= sigma
    if n % 2 == 0:
        padded[n // 2] *= 0.5
    return irfft(padded, M)


def pushforward_bound(spectrum: np.ndarray, n: int, sigma: int, p: int) -> float:
    """E(σ, p) / Σ_k m_k|ρ̂_k| of :func:`pushforward_stencil` at a given σ and even p (the bound of any stencil)."""
    a = np.abs(spectrum) * multiplicity(n)
    k = np.arange(a.size)
    return float(stencils.remainder_constant(p) * np.sum(a * (k * (TWO_PI / (sigma * n))) ** p)
                 / max(float(np.sum(a)), np.finfo(float).tiny))


def linear_pushforward(values: np.ndarray, B, cos: np.ndarray, sin: np.ndarray,
                       tol: float = PUSHFORWARD_TOL, stencil: tuple[int, int] | None = None,
                       rfft_values: np.ndarray | None = None) -> np.ndarray:
    r"""The density of nodal ``values`` pushed forward by φ(u) = Bu/|Bu| (B = [[a, b], [c, d]], det B > 0), at the
    nodes u_j = (cos θ_j, sin θ_j): (φ_#ρ)(θ) = ρ(φ^{-1}θ) det B / |adj(B) u|² with φ^{-1}(u) = adj(B)u/|adj(B)u|
    (MATH.md §13), ρ at the preimages by local Lagrange interpolation of its interpolant on σn nodes (one FFT):
    σ and the stencil p from the spectrum's a-priori bound (:func:`pushforward_stencil`), off by at most
    ``tol`` Σ_k m_k|ρ̂_k| (default :data:`PUSHFORWARD_TOL` = 1.4e-14, the bound of the fixed (σ, p) = (4, 32)) plus
    round-off, times the Jacobian. ``stencil`` = (σ, p) imposes them instead (its bound:
    :func:`pushforward_bound`); ``rfft_values``: rfft(values), if known."""
    (a, b), (c, d) = B
    values = np.asarray(values, dtype=float)
    n = values.shape[-1]
    spectrum = rfft(values) if rfft_values is None else rfft_values
    sigma, p = pushforward_stencil(spectrum, n, tol)[:2] if stencil is None else stencil
    if p not in _PUSHFORWARD_WEIGHTS or sigma < 1:
        raise ValueError(f"`stencil` must be (σ >= 1, even p in [4, {STENCIL}]), got {stencil!r}.")
    fine = values if sigma == 1 else _oversampled_spectrum(spectrum, n, sigma)
    return _pushforward(fine, cos, sin, float(a), float(b), float(c), float(d), _PUSHFORWARD_WEIGHTS[p])


def cdf_coefficients(c: np.ndarray, n: int) -> tuple[np.ndarray, float, float]:
    """(A, ρ̂_0, offset) with F(θ) = (ρ̂_0 θ + Σ_{k>=1} 2Re(A_k e^{ikθ}) − offset) / (2π ρ̂_0).

    A_k = m_k ρ̂_k / (2ik) and offset = 2 Σ_k Re A_k (the "− 1" terms)."""
    m = multiplicity(n)
    k = np.arange(c.size)
    A = np.zeros(c.size, dtype=complex)
    A[1:] = m[1:] * c[1:] / (2j * k[1:])
    return A, float(c[0].real), float(2.0 * np.sum(A.real))


def cdf_and_density(values: np.ndarray, theta) -> tuple[np.ndarray, np.ndarray]:
    """(F(θ), ρ(θ)/mass) of the interpolant of nodal ``values`` at angles θ (:func:`cdf_coefficients`)."""
    values = np.asarray(values, dtype=float)
    c = coefficients(values)
    A, c0, offset = cdf_coefficients(c, values.shape[-1])
    D = interpolant_coefficients(c, values.shape[-1])
    flat = np.ascontiguousarray(np.asarray(theta, dtype=float).ravel())
    osc, rho = _series_at_angles(flat, A, D)
    F = (c0 * flat + osc - offset) / (TWO_PI * c0)
    return F.reshape(np.shape(theta)), (rho / (TWO_PI * c0)).reshape(np.shape(theta))


def cdf_equispaced(values: np.ndarray, M: int) -> np.ndarray:
    """F(2πm/M), m = 0..M, of the interpolant of nodal ``values``, by one inverse FFT.

    ``irfft(2A, M)[m] (M/2) = Σ_k 2Re(A_k e^{ikθ_m})`` for modes below M/2 (``ValueError`` otherwise)."""
    values = np.asarray(values, dtype=float)
    c = coefficients(values)
    if c.size > M // 2:
        raise ValueError(f"`cells` = {M} is too few for a density on {values.shape[-1]} nodes: use at least {2 * c.size}.")
    A, c0, _ = cdf_coefficients(c, values.shape[-1])
    full = np.zeros(M // 2 + 1, dtype=complex)
    full[1 : c.size] = 2.0 * A[1:]
    osc = sfft.irfft(full, M) * (M / 2.0)
    osc = np.append(osc, osc[0]) - osc[0]  # Σ_k 2Re(A_k(e^{ikθ} − 1)): exactly 0 at θ = 0
    theta = np.linspace(0.0, TWO_PI, M + 1)
    return (c0 * theta + osc) / (TWO_PI * c0)
