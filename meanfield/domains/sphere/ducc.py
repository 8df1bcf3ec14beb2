r"""The ducc0 backend: spherical-harmonic transforms on GLQ grids as Legendre transforms and batched ring FFTs.

A transform on a Gauss–Legendre grid is a Legendre transform per order m
(``alm2leg`` / ``leg2alm``) and an FFT per colatitude ring. ducc0's one-call
transforms (``synthesis_2d``) run their ring FFTs at 3–4× the cost of
:mod:`ducc0.fft` when the ring length is odd and has a large prime factor, as
the GLQ grid's 2L + 1 is for L = 63 or 127 (127, 191, 383 are prime); done
apart, the FFT of every ring is one batched call. The plans here also keep the
coefficients in ducc0's own layout (healpy-ordered complex a_lm, m >= 0), so
the spectral right-hand side never repacks them. Gradients and the divergence of
tangent fields (:meth:`RingPlan.gradient_legs`, :meth:`RingPlan.divergence_analysis`)
are scalar transforms too, through the ladder of sin θ ∂_θ: ducc0's spin-1
transforms cost 2.6 scalar ones.

Conventions (:mod:`.transforms`): ρ = Σ_l a_l0 Y_l0 + 2 Re Σ_{m>0} a_lm Y_lm,
Y_lm(θ, φ) = λ_lm(θ) e^{imφ}; the Legendre coefficients at ring θ are
Λ_m(θ) = Σ_l a_lm λ_lm(θ), and the ring values ρ(θ, φ_k) = Λ_0 + 2 Re Σ_{m>0}
Λ_m e^{imφ_k} — an unnormalised complex-to-real FFT. Analysis is the adjoint
with the Gauss weights w_θ and 2π/n_φ: a_lm = Σ_θ w_θ λ_lm(θ) (2π/n_φ) Σ_k
ρ(θ, φ_k) e^{−imφ_k}, exact for degree <= 2 n_θ − 1 in θ and < n_φ − L in φ.
"""

from __future__ import annotations

import threading
from functools import cached_property, lru_cache

import numba
import numpy as np

from .gauss import alm_layout, glq, ladder, pad_coefficients

__all__ = ["DuccBackend", "RingPlan", "ThreadScratch", "ring_plan", "sht_threads", "SHT_THREADS_FROM", "complex_alm",
           "real_cilm"]


#: The degree from which ducc0's transforms take more than one thread by default. Below it, handing a transform to
#: ducc0's threads costs more than the second thread gives back: one RK4 step of an S² density (SA β = 4) on two
#: threads took 5.9× as long as on one at L = 15, 3.9× at 31, 2.1× at 63, 1.5× at 95 and 1.1× at 127, and 0.88× at
#: 191, 0.77× at 255, 0.65× at 511 (benchmarks/bench_sht_threads.py, quiet 2-core Xeon, 2026-12-02; two runs agreed
#: within 10 %). The bits: ducc0 (0.42) gives the same bits on one and two threads at some sizes only — its r2c,
#: alm2leg and leg2alm agree at L = 15…127, 170, 191, 255 but differ in the last bits (<= 4e-15 relative to the
#: largest coefficient, an S² step 1.7e-16) at L = 128, 140, 160, 161, 200 (the review's check, 2026-12-02): below
#: this degree the default is thread-independent (one thread), from it a run's bits follow numba's thread count
#: unless :attr:`DuccBackend.nthreads` fixes it.
SHT_THREADS_FROM = 160


def sht_threads(lmax: int | None = None) -> int:
    """Threads for ducc0's transforms: :attr:`DuccBackend.nthreads` where set, else numba's thread count (one thread
    for transforms of degree ``lmax`` below :data:`SHT_THREADS_FROM`, where a second one costs more than it gives).

    numba's count follows ``NUMBA_NUM_THREADS`` and ``numba.set_num_threads``,
    the same setting the particle kernels use.
    """
    if DuccBackend.nthreads is not None:
        return int(DuccBackend.nthreads)
    if lmax is not None and lmax < SHT_THREADS_FROM:
        return 1
    import numba

    return int(numba.get_num_threads())


class ThreadScratch:
    """Per-thread work arrays of a transform plan (which sets ``self._local = threading.local()``)."""

    def scratch(self, key, shape, dtype=float) -> np.ndarray:
        """A work array of this thread, zeroed when first made and reused by every later call with ``key``.

        Arrays of a few MB allocated afresh in every right-hand side cost more
        in page faults than the FFTs that fill them; callers must not return
        them (their contents change at the next call) and must overwrite what
        they read, except parts they keep zero.
        """
        store = self._local.__dict__
        a = store.get(key)
        if a is None or a.shape != tuple(shape) or a.dtype != np.dtype(dtype):
            a = store[key] = np.zeros(shape, dtype=dtype)
        return a


class RingPlan(ThreadScratch):
    """Synthesis and analysis of degree-``lmax`` coefficients on the GLQ rings of degree ``grid_lmax``.

    Parameters
    ----------
    lmax : int
        Degree of the coefficients (healpy layout of :func:`alm_layout`).
    grid_lmax : int
        Degree of the GLQ grid: ``grid_lmax + 1`` Gauss–Legendre colatitudes.
    nphi : int
        Equispaced longitudes per ring, ``> 2 lmax``.

    Notes
    -----
    ``leg(alm, lmax)`` is the Legendre step alone (for coefficients of any
    degree <= lmax + 1 with orders <= lmax, as the surface gradient needs);
    ``rings(legs)`` batches the ring FFTs of several fields.
    """

    def __init__(self, lmax: int, grid_lmax: int, nphi: int):
        if nphi <= 2 * lmax:
            raise ValueError(f"`nphi` must exceed 2 lmax = {2 * lmax}, got {nphi}.")
        self.lmax, self.grid_lmax, self.nphi = int(lmax), int(grid_lmax), int(nphi)
        zero, w = glq(self.grid_lmax)
        self.theta = np.arccos(zero)
        self.sin_theta = np.sqrt(1.0 - zero**2)[:, None]
        self._weights = (w * (2.0 * np.pi / self.nphi))[:, None]
        self._im = 1j * np.arange(self.lmax + 1)
        #: per ring, 1/sin θ: what the ring values of :meth:`gradient_legs` are multiplied by (shtns' plans: 1)
        self.gradient_scale = 1.0 / self.sin_theta[:, 0]
        #: per ring, w_θ (2π/nphi)/sin θ: what :meth:`divergence_analysis` wants F multiplied by (the quadrature
        #: weight folded in, which saves a pass over the spectra; shtns' plans: 1)
        self.flux_scale = self._weights[:, 0] * self.gradient_scale
        self.mval = np.arange(self.lmax + 1, dtype=np.uintp)
        self.m = np.arange(self.lmax + 1)
        self.shape = (self.grid_lmax + 1, self.nphi)
        self._nfreq = self.nphi // 2 + 1
        self._local = threading.local()

    def __reduce__(self):  # the work arrays are per thread and per process: rebuild, do not copy
        return (type(self), (self.lmax, self.grid_lmax, self.nphi))

    def spectra(self, k: int, key=None) -> np.ndarray:
        """Ring spectra for ``k`` fields, shape (k, ntheta, nphi // 2 + 1), zero above order lmax: fill
        ``[..., :lmax + 1]``. With ``key``, this thread's :meth:`scratch` array (orders above lmax stay zero)."""
        shape = (k, self.grid_lmax + 1, self._nfreq)
        if key is None:
            return np.zeros(shape, dtype=complex)
        return self.scratch(("spectra", key), shape, complex)

    def leg(self, alm: np.ndarray, lmax: int | None = None, out: np.ndarray | None = None, orders: int | None = None,
            layout: int | None = None) -> np.ndarray:
        """Λ_m(θ) on the rings, shape (ntheta, orders + 1), of the degrees <= ``lmax`` and orders <= ``orders``
        (default min(lmax, the plan's lmax)) of healpy-ordered ``alm`` packed for degree ``layout`` (default lmax).

        ``out``: where to write them, e.g. ``spectra[j, :, :lmax + 1]`` (returned); its columns above
        ``orders`` are set to zero.
        """
        from ducc0.sht.experimental import alm2leg

        lmax = self.lmax if lmax is None else lmax
        orders = min(lmax, self.lmax) if orders is None else orders
        layout = lmax if layout is None else layout
        mstart = alm_layout(layout)[2][: orders + 1]
        if out is not None:
            out[:, orders + 1:] = 0.0
            out = out[:, : orders + 1]
        leg = alm2leg(alm=alm.reshape(1, -1), lmax=lmax, theta=self.theta, mval=self.mval[: orders + 1],
                      mstart=mstart, nthreads=sht_threads(self.grid_lmax), leg=None if out is None else out[None])
        return leg[0]

    @cached_property
    def _ladder(self):
        """:func:`.gauss.ladder` (l, m) for l <= lmax + 1, m <= lmax."""
        l, m = np.meshgrid(np.arange(self.lmax + 2), np.arange(self.lmax + 1), indexing="ij")
        return np.ascontiguousarray(ladder(l, m))

    def gradient_legs(self, alm: np.ndarray, out: np.ndarray, degree: int | None = None) -> np.ndarray:
        """Λ_m of f, sin θ ∂_θ f and ∂_φ f, f = Σ a_lm Y_lm of degree ``lmax``, into ``out`` (3, ntheta, lmax + 1).

        Scalar transforms only (a spin-1 Legendre transform costs 2.6 of them in ducc0):
        sin θ ∂_θ Y_lm = l a_{l+1,m} Y_{l+1,m} − (l+1) a_lm Y_{l−1,m} (a = :func:`.gauss.ladder`)
        is one synthesis of degree lmax + 1, and ∂_φ is i m on Λ_m. On the rings,
        :attr:`gradient_scale` (1/sin θ) turns them into (∂_θ f, ∂_φ f / sin θ).

        ``degree``: f truncated to degrees <= ``degree`` (default lmax; ``alm`` keeps the layout of degree lmax),
        which costs (degree/lmax)² of the full transforms; orders above it are zero in ``out``.
        """
        L = self.lmax
        degree = L if degree is None else int(degree)
        st = self.scratch("st", ((L + 2) * (L + 3) // 2,), complex)
        _sin_theta_derivative(alm, L, degree, self._ladder, st)
        self.leg(alm, degree, out=out[0], layout=L)
        self.leg(st, degree + 1, out=out[1], orders=degree, layout=L + 1)
        np.multiply(out[0], self._im, out=out[2])
        return out

    def rings(self, spectra: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Ring values (..., ntheta, nphi) of ring spectra (..., ntheta, nphi // 2 + 1) (:meth:`spectra`)."""
        from ducc0.fft import c2r

        return c2r(spectra, axes=(spectra.ndim - 1,), lastsize=self.nphi, forward=False,
                   nthreads=sht_threads(self.grid_lmax), out=out)

    def synthesis(self, alm: np.ndarray) -> np.ndarray:
        """Values on the grid (ntheta, nphi) of degree-``lmax`` coefficients (a new array)."""
        spectra = self.spectra(1, key="synthesis")
        self.leg(alm, out=spectra[0, :, : self.lmax + 1])
        return self.rings(spectra[0])

    def analysis(self, values: np.ndarray, nthreads: int | None = None) -> np.ndarray:
        """Degree-``lmax`` coefficients of grid values by Gauss–Legendre and trapezoidal quadrature (``nthreads``:
        default :func:`sht_threads`)."""
        from ducc0.fft import r2c
        from ducc0.sht.experimental import leg2alm

        if np.shape(values) != self.shape:
            raise ValueError(f"`values` must have the grid's shape {self.shape}, got {np.shape(values)}.")
        nthreads = sht_threads(self.grid_lmax) if nthreads is None else int(nthreads)
        spectrum = r2c(np.ascontiguousarray(values, dtype=float), axes=(1,), forward=True, nthreads=nthreads,
                       out=self.scratch("r2c", (self.grid_lmax + 1, self._nfreq), complex))
        leg = self.scratch("leg", (1, self.grid_lmax + 1, self.lmax + 1), complex)
        np.multiply(spectrum[:, : self.lmax + 1], self._weights, out=leg[0])
        return leg2alm(leg=leg, lmax=self.lmax, theta=self.theta, mval=self.mval,
                       mstart=alm_layout(self.lmax)[2], nthreads=nthreads)[0]

    def divergence_analysis(self, field: np.ndarray) -> np.ndarray:
        r"""Degree-``lmax`` coefficients of −div_S F of a tangent field F on the rings, from
        ``field`` = (F_θ, F_φ) × :attr:`flux_scale` (w_θ (2π/nphi)/sin θ per ring), shape (2, ntheta, nphi).

        The adjoint of :meth:`gradient_legs` under the grid's quadrature:

            (−div F)_lm = −∫ Ȳ_lm div F = ∫ F·∇Ȳ_lm = ∫ (F_θ/sin θ) sin θ ∂_θ Ȳ_lm − i m ∫ (F_φ/sin θ) Ȳ_lm
                        = l a_{l+1,m} A_{l+1,m} − (l+1) a_lm A_{l−1,m} − i m B_lm,

        A and B the analyses (degree lmax + 1 and lmax) of F_θ/sin θ and F_φ/sin θ.
        Exact where F·∇Y_lm is within the quadrature's degree (band-limited F of degree
        <= 2 grid_lmax + 1 − lmax); the l = 0 coefficient is exactly 0 (mass is conserved).
        """
        from ducc0.fft import r2c
        from ducc0.sht.experimental import leg2alm

        spectrum = r2c(field, axes=(2,), forward=True, nthreads=sht_threads(self.grid_lmax),
                       out=self.scratch("r2c-vector", (2, self.grid_lmax + 1, self._nfreq), complex))
        leg = spectrum[:, None, :, : self.lmax + 1]  # the weights are in the field already
        common = {"theta": self.theta, "mval": self.mval, "nthreads": sht_threads(self.grid_lmax)}
        A = leg2alm(leg=leg[0], lmax=self.lmax + 1, mstart=alm_layout(self.lmax + 1)[2][: self.lmax + 1], **common)
        B = leg2alm(leg=leg[1], lmax=self.lmax, mstart=alm_layout(self.lmax)[2], **common)
        return _divergence_adjoint(A[0], B[0], self.lmax, self._ladder, np.empty_like(B[0]))


@lru_cache(maxsize=32)
def ring_plan(lmax: int, grid_lmax: int | None = None, nphi: int | None = None) -> RingPlan:
    """A cached :class:`RingPlan`; defaults: the GLQ grid of degree ``lmax`` with 2 lmax + 1 longitudes."""
    grid_lmax = lmax if grid_lmax is None else grid_lmax
    return RingPlan(lmax, grid_lmax, 2 * grid_lmax + 1 if nphi is None else nphi)


@lru_cache(maxsize=64)
def _healpy_index(lmax):
    """(l, m, index of a_lm in healpy's m-major packing, s_m, −s_m [m > 0]) for m <= l <= lmax.

    s_m = (−1)^m/√2 for m > 0 and 1 for m = 0."""
    l, m = np.tril_indices(lmax + 1)
    sign = np.where(m % 2 == 1, -1.0, 1.0) * np.where(m > 0, 1.0 / np.sqrt(2.0), 1.0)
    out = l, m, m * (2 * lmax + 1 - m) // 2 + l, sign, np.where(m > 0, -sign, 0.0)
    for a in out:
        a.setflags(write=False)
    return out


def complex_alm(cilm: np.ndarray, lmax: int) -> np.ndarray:
    """healpy-ordered complex coefficients of real orthonormal ones: a_l0 = C_l0, a_lm = (−1)^m (C_lm − i S_lm)/√2."""
    lmax = int(lmax)
    cilm = np.asarray(cilm, dtype=float)
    if cilm.ndim != 3 or cilm.shape[0] != 2 or min(cilm.shape[1:]) <= lmax:
        raise ValueError(f"`cilm` must have shape (2, > lmax, > lmax) for lmax = {lmax}, got {cilm.shape}.")
    return _complex_alm(cilm, lmax)


@numba.njit(cache=True)
def _complex_alm(cilm, L):
    """:func:`complex_alm` compiled (a map in a run converts its spectrum every step; numpy's fancy indexing cost
    ~15 µs at lmax 31)."""
    alm = np.empty((L + 1) * (L + 2) // 2, dtype=np.complex128)
    for l in range(L + 1):
        alm[l] = cilm[0, l, 0] + 1j * (0.0 * cilm[1, l, 0])
    s = 1.0 / np.sqrt(2.0)
    for m in range(1, L + 1):
        s = -s  # (−1)^m/√2
        start = m * (2 * L + 1 - m) // 2
        for l in range(m, L + 1):
            alm[start + l] = s * cilm[0, l, m] + 1j * (-s * cilm[1, l, m])
    return alm


def real_cilm(alm: np.ndarray, lmax: int) -> np.ndarray:
    """The inverse of :func:`complex_alm`: C_lm = (−1)^m √2 Re a_lm, S_lm = −(−1)^m √2 Im a_lm (m > 0)."""
    l, m, idx, sign, _ = _healpy_index(lmax)
    a = alm[idx] / sign
    cilm = np.zeros((2, lmax + 1, lmax + 1))
    cilm[0, l, m] = a.real
    cilm[1, l, m] = np.where(m > 0, -a.imag, 0.0)
    return cilm


class DuccBackend:
    """The same transforms with ducc0: its Legendre transforms and batched ring FFTs (:class:`RingPlan`).

    Real orthonormal harmonics without the Condon–Shortley phase relate to
    healpy's complex ones by a_l0 = C_l0 and a_lm = (−1)^m (C_lm − i S_lm)/√2
    for m > 0.

    ``nthreads``: ``None`` (default) follows numba's thread count
    (``NUMBA_NUM_THREADS``, ``numba.set_num_threads``) for grids of degree :data:`SHT_THREADS_FROM` and above, and
    takes one thread below it (measured: faster there); an integer fixes it.
    """

    name = "ducc0"
    nthreads: int | None = None

    @classmethod
    def analysis(cls, values: np.ndarray, lmax: int) -> np.ndarray:
        return real_cilm(ring_plan(lmax).analysis(values), lmax)

    @classmethod
    def synthesis(cls, cilm: np.ndarray, lmax: int) -> np.ndarray:
        return ring_plan(lmax).synthesis(complex_alm(pad_coefficients(cilm, lmax), lmax))

    @classmethod
    def analysis_alm(cls, values: np.ndarray, lmax: int, nthreads: int | None = None) -> np.ndarray:
        """The healpy-ordered complex coefficients of :meth:`analysis` (ducc0's own layout: no repacking)."""
        return ring_plan(lmax).analysis(values, nthreads)


@numba.njit(cache=True, nogil=True)
def _sin_theta_derivative(alm, L, degree, a, out):
    """Healpy-ordered coefficients (layout of degree L + 1) of sin θ ∂_θ f from those of f (layout of degree L)
    truncated to degrees <= ``degree``, into ``out`` (its entries of orders <= ``degree`` and degrees
    <= ``degree`` + 1): sin θ ∂_θ Y_lm = l a_{l+1,m} Y_{l+1,m} − (l+1) a_lm Y_{l−1,m}, a = :func:`.gauss.ladder` (l, m)."""
    for m in range(degree + 1):
        src = m * (2 * L + 1 - m) // 2  # entry (l, m) at src + l
        dst = m * (2 * L + 3 - m) // 2  # in the layout of degree L + 1
        for l in range(m, degree + 2):
            out[dst + l] = 0.0
        for l in range(m, degree + 1):
            f = alm[src + l]
            out[dst + l + 1] += l * a[l + 1, m] * f
            if l > m:
                out[dst + l - 1] -= (l + 1) * a[l, m] * f
    return out


@numba.njit(cache=True, nogil=True)
def _divergence_adjoint(A, B, L, a, out):
    """(−div F)_lm = l a_{l+1,m} A_{l+1,m} − (l+1) a_lm A_{l−1,m} − i m B_lm into ``out`` (degree L):
    the transpose of :func:`_sin_theta_derivative` on A (degree L + 1) plus ∂_φ's −i m on B (degree L)."""
    for m in range(L + 1):
        src = m * (2 * L + 3 - m) // 2  # A's entry (l, m), layout of degree L + 1
        dst = m * (2 * L + 1 - m) // 2  # out's and B's, degree L
        for l in range(m, L + 1):
            v = l * a[l + 1, m] * A[src + l + 1] - 1j * m * B[dst + l]
            if l > m:
                v -= (l + 1) * a[l, m] * A[src + l - 1]
            out[dst + l] = v
    return out
