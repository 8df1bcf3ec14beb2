r"""Spherical-harmonic transforms on Gauss–Legendre (GLQ) grids of S² (MATH.md §2.1, docs/STYLE.md, 5).

Conventions: a density integrates to 1 against surface area; it is expanded in
real spherical harmonics *orthonormal* on S² (pyshtools ``norm=4``, no
Condon–Shortley phase), ρ = Σ c_lm Y_lm, stored as pyshtools arrays
``cilm[0, l, m]`` (cos mφ) and ``cilm[1, l, m]`` (sin mφ). The grid of degree L
has L + 1 Gauss–Legendre colatitudes (north to south) and 2L + 1 equispaced
longitudes: it integrates exactly every polynomial of degree <= 2L, so
analysis is exact for band-limited data.

Transforms go through a small backend interface: ``analysis(values, L) ->
cilm`` and ``synthesis(cilm, L) -> values`` on the GLQ grid of degree L.
Three backends, in a name → class table (:data:`BACKENDS`):
:class:`PyshtoolsBackend` (SHTOOLS), :class:`DuccBackend` (ducc0, a pure
wheel and a dependency; its ring plans in :mod:`.ducc`), the default where
importable, and the optional :class:`ShtnsBackend` (SHTns, which needs FFTW
from the system; :mod:`.shtns_plans`); they are cross-checked to 1e-12 in the tests.
"""

from __future__ import annotations

import numpy as np

from .ducc import DuccBackend, complex_alm, sht_threads
from .gauss import glq, ladder, pad_coefficients
from .geometry import spherical
from .shtns_plans import ShtnsBackend

__all__ = ["glq", "nodes", "frames", "PyshtoolsBackend", "DuccBackend", "ShtnsBackend", "BACKENDS", "default_backend",
           "pad_coefficients", "degree_power", "dealiased_degree", "laplacian", "surface_gradient", "evaluate",
           "upper_bound"]


def nodes(lmax: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(colatitudes (L+1,), longitudes (2L+1,), unit vectors (L+1, 2L+1, 3)) of the GLQ grid of degree L."""
    zero, _ = glq(lmax)
    nlon = 2 * lmax + 1
    colatitudes = np.arccos(zero)
    longitudes = 2.0 * np.pi * np.arange(nlon) / nlon
    st, ct = np.sqrt(1.0 - zero**2), zero
    points = np.stack(
        [np.outer(st, np.cos(longitudes)), np.outer(st, np.sin(longitudes)), np.outer(ct, np.ones(nlon))], axis=-1
    )
    return colatitudes, longitudes, points


def frames(lmax: int) -> tuple[np.ndarray, np.ndarray]:
    """θ̂ and φ̂ at the nodes of the GLQ grid of degree lmax, shape (nlat, nlon, 3) each."""
    colatitudes, longitudes, _ = nodes(lmax)
    ct = np.cos(colatitudes)[:, None]
    st = np.sin(colatitudes)[:, None]
    cp, sp = np.cos(longitudes)[None, :], np.sin(longitudes)[None, :]
    theta_hat = np.stack(np.broadcast_arrays(ct * cp, ct * sp, -st), axis=-1)
    phi_hat = np.stack(np.broadcast_arrays(-sp + 0 * ct, cp + 0 * ct, 0 * (ct * cp)), axis=-1)
    return theta_hat, phi_hat


class PyshtoolsBackend:
    """Spherical-harmonic transforms on GLQ grids with SHTOOLS' Fortran routines (always installed).

    Called through ``pyshtools.backends.shtools`` explicitly: pyshtools'
    own front end silently switches to ducc0 when ducc0 is installed, which
    would make the two backends one and their cross-check empty.
    """

    name = "pyshtools"

    @staticmethod
    def analysis(values: np.ndarray, lmax: int) -> np.ndarray:
        from pyshtools.backends.shtools import SHExpandGLQ

        zero, w = glq(lmax)
        return SHExpandGLQ(np.ascontiguousarray(values), w, zero, norm=4, csphase=1)

    @staticmethod
    def synthesis(cilm: np.ndarray, lmax: int) -> np.ndarray:
        from pyshtools.backends.shtools import MakeGridGLQ

        zero, _ = glq(lmax)
        return MakeGridGLQ(pad_coefficients(cilm, lmax), zero, lmax=lmax, norm=4, csphase=1, extend=False)


BACKENDS = {"pyshtools": PyshtoolsBackend, "ducc0": DuccBackend, "shtns": ShtnsBackend}  # shtns: optional


def default_backend() -> str:
    """"ducc0" where it is importable, else "pyshtools"."""
    try:
        import ducc0  # noqa: F401

        return "ducc0"
    except ImportError:
        return "pyshtools"


def degree_power(cilm: np.ndarray) -> np.ndarray:
    """Σ_m c_lm² for each degree l."""
    return np.sum(cilm**2, axis=(0, 2))


def dealiased_degree(lmax: int) -> int:
    """⌈3L/2⌉: products of two degree-L expansions are exact on its grid."""
    return -(-3 * lmax // 2)


def laplacian(lmax: int) -> np.ndarray:
    """−l(l + 1), the eigenvalues of Δ_S on degree l, shaped to multiply a cilm array."""
    l = np.arange(lmax + 1)
    return -(l * (l + 1.0))[None, :, None]


def surface_gradient(cilm: np.ndarray, lmax_grid: int, backend):
    """(∂_θ f, (1/sin θ) ∂_φ f) of f = Σ c_lm Y_lm on the GLQ grid of degree ``lmax_grid``.

    From sin θ ∂_θ Y_lm = l a_{l+1,m} Y_{l+1,m} − (l+1) a_{lm} Y_{l−1,m},
    a_lm = √((l² − m²)/(4l² − 1)), and ∂_φ(C cos mφ + S sin mφ) = m(S cos mφ − C sin mφ).
    """
    L = cilm.shape[1] - 1
    l = np.arange(L + 1)[:, None]
    m = np.arange(L + 1)[None, :]
    st = np.zeros((2, L + 2, L + 2))
    st[:, 1 : L + 2, : L + 1] += (l * ladder(l + 1, m))[None] * cilm  # l a_{l+1,m} → degree l + 1
    st[:, : L, : L + 1] -= ((l + 1) * ladder(l, m))[None, 1:] * cilm[:, 1:]  # (l+1) a_{lm} → degree l − 1
    dphi = np.empty_like(cilm)
    dphi[0] = m * cilm[1]
    dphi[1] = -m * cilm[0]
    zero, _ = glq(lmax_grid)
    sin_t = np.sqrt(1.0 - zero**2)[:, None]
    return backend.synthesis(st, lmax_grid) / sin_t, backend.synthesis(dphi, lmax_grid) / sin_t


def evaluate(cilm: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Σ c_lm Y_lm(x) at unit vectors x (..., 3).

    With ducc0: its non-uniform synthesis at accuracy 1e-14 (relative to the
    coefficients' l¹ size); otherwise the orthonormal Legendre recurrence
    point by point (exact, slower)."""
    lmax = cilm.shape[1] - 1
    flat = x.reshape(-1, 3)
    try:
        from ducc0.sht import synthesis_general
    except ImportError:
        return _evaluate_legendre(cilm, flat).reshape(x.shape[:-1])
    loc = spherical(flat)
    out = synthesis_general(alm=complex_alm(cilm, lmax)[None], spin=0, lmax=lmax, loc=np.ascontiguousarray(loc),
                            epsilon=1e-14, nthreads=sht_threads(lmax))[0]
    return out.reshape(x.shape[:-1])


def _evaluate_legendre(cilm: np.ndarray, flat: np.ndarray) -> np.ndarray:
    from pyshtools.legendre import PlmON

    lmax = cilm.shape[1] - 1
    z = np.clip(flat[:, 2], -1.0, 1.0)
    phi = np.arctan2(flat[:, 1], flat[:, 0])
    m = np.arange(lmax + 1)
    cos_m, sin_m = np.cos(np.outer(phi, m)), np.sin(np.outer(phi, m))
    l_idx, m_idx = np.tril_indices(lmax + 1)
    index = l_idx * (l_idx + 1) // 2 + m_idx  # pyshtools' packing of P_lm
    C, S = cilm[0][l_idx, m_idx], cilm[1][l_idx, m_idx]
    out = np.empty(flat.shape[0])
    for i in range(flat.shape[0]):
        P = PlmON(lmax, z[i], csphase=1)[index]
        out[i] = np.sum(P * (C * cos_m[i, m_idx] + S * sin_m[i, m_idx]))
    return out


def upper_bound(cilm: np.ndarray) -> float:
    """sup_x |Σ c_lm Y_lm(x)| <= Σ_l √(p_l (2l + 1)/4π), p_l = Σ_m c_lm² (addition theorem)."""
    p = degree_power(cilm)
    l = np.arange(p.size)
    return float(np.sum(np.sqrt(p * (2 * l + 1) / (4 * np.pi))))
