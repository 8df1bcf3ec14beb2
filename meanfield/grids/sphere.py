r"""The sphere S² ⊂ R³: Gauss–Legendre (GLQ) grid, quadrature and spherical harmonics.

Conventions (MATH.md §2.1, STYLE.md 5): a density integrates to 1 against
surface area; it is expanded in real spherical harmonics *orthonormal* on
S² (pyshtools ``norm=4``, no Condon–Shortley phase), ρ = Σ c_lm Y_lm, stored
as pyshtools arrays ``cilm[0, l, m]`` (cos mφ) and ``cilm[1, l, m]`` (sin mφ).
The grid of degree L has L + 1 Gauss–Legendre colatitudes (north to south)
and 2L + 1 equispaced longitudes: it integrates exactly every polynomial of
degree <= 2L, so analysis is exact for band-limited data.

Transforms go through a small backend interface: ``analysis(values, L) ->
cilm`` and ``synthesis(cilm, L) -> values`` on the GLQ grid of degree L.
Two backends: :class:`PyshtoolsBackend` (always installed) and
:class:`DuccBackend` (ducc0, a pure wheel: ``pip install ducc0`` or the
``fast`` extra), chosen automatically when importable; both are
cross-checked to 1e-12 in the tests.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..geometry import check_on_sphere

__all__ = ["SphereGrid", "PyshtoolsBackend", "DuccBackend", "BACKENDS", "default_backend", "pad_coefficients",
           "degree_power"]


@lru_cache(maxsize=32)
def _glq(lmax: int):
    """Gauss–Legendre nodes cos θ_i (north to south) and weights for degree lmax."""
    from pyshtools.backends.shtools import SHGLQ

    zero, w = SHGLQ(lmax)
    zero.setflags(write=False)
    w.setflags(write=False)
    return zero, w


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

        zero, w = _glq(lmax)
        return SHExpandGLQ(np.ascontiguousarray(values), w, zero, norm=4, csphase=1)

    @staticmethod
    def synthesis(cilm: np.ndarray, lmax: int) -> np.ndarray:
        from pyshtools.backends.shtools import MakeGridGLQ

        zero, _ = _glq(lmax)
        return MakeGridGLQ(pad_coefficients(cilm, lmax), zero, lmax=lmax, norm=4, csphase=1, extend=False)


class DuccBackend:
    """The same transforms with ducc0 (healpy-ordered complex coefficients, both cores).

    Real orthonormal harmonics without the Condon–Shortley phase relate to
    healpy's complex ones by a_l0 = C_l0 and a_lm = (−1)^m (C_lm − i S_lm)/√2
    for m > 0.
    """

    name = "ducc0"
    nthreads = 2

    @staticmethod
    def _index(lmax):
        l, m = np.tril_indices(lmax + 1)
        return l, m, m * (2 * lmax + 1 - m) // 2 + l

    @classmethod
    def analysis(cls, values: np.ndarray, lmax: int) -> np.ndarray:
        from ducc0.sht import analysis_2d

        alm = analysis_2d(map=np.ascontiguousarray(values, dtype=float)[None], spin=0, lmax=lmax, geometry="GL",
                          nthreads=cls.nthreads)[0]
        l, m, idx = cls._index(lmax)
        a = alm[idx]
        sign = np.where(m % 2 == 1, -1.0, 1.0) * np.where(m > 0, np.sqrt(2.0), 1.0)
        cilm = np.zeros((2, lmax + 1, lmax + 1))
        cilm[0, l, m] = sign * a.real
        cilm[1, l, m] = np.where(m > 0, -sign * a.imag, 0.0)
        return cilm

    @classmethod
    def synthesis(cls, cilm: np.ndarray, lmax: int) -> np.ndarray:
        from ducc0.sht import synthesis_2d

        c = pad_coefficients(cilm, lmax)
        l, m, idx = cls._index(lmax)
        sign = np.where(m % 2 == 1, -1.0, 1.0) * np.where(m > 0, 1.0 / np.sqrt(2.0), 1.0)
        alm = np.zeros(idx.size, dtype=complex)
        alm[idx] = sign * (c[0, l, m] - 1j * np.where(m > 0, c[1, l, m], 0.0))
        return synthesis_2d(alm=alm[None], spin=0, lmax=lmax, geometry="GL", ntheta=lmax + 1, nphi=2 * lmax + 1,
                            nthreads=cls.nthreads)[0]


BACKENDS = {"pyshtools": PyshtoolsBackend, "ducc0": DuccBackend}


def default_backend() -> str:
    """"ducc0" where it is importable, else "pyshtools"."""
    try:
        import ducc0  # noqa: F401

        return "ducc0"
    except ImportError:
        return "pyshtools"


def pad_coefficients(cilm: np.ndarray, lmax: int) -> np.ndarray:
    """Coefficients zero-padded or truncated to degree lmax."""
    out = np.zeros((2, lmax + 1, lmax + 1))
    k = min(lmax, cilm.shape[1] - 1) + 1
    out[:, :k, :k] = cilm[:, :k, :k]
    return out


def degree_power(cilm: np.ndarray) -> np.ndarray:
    """Σ_m c_lm² for each degree l."""
    return np.sum(cilm**2, axis=(0, 2))


class SphereGrid:
    """Gauss–Legendre grid of degree lmax on S².

    Parameters
    ----------
    lmax : int
        Spherical-harmonic degree, >= 2.
    backend : {"ducc0", "pyshtools"}, optional
        Transform library; default ducc0 where importable (:func:`default_backend`).

    Attributes
    ----------
    lmax : int
    colatitudes, longitudes : ndarray, shapes (lmax + 1,) and (2 lmax + 1,)
    points : ndarray, shape (lmax + 1, 2 lmax + 1, 3)
        Unit vectors of the nodes.
    weights : ndarray, shape (lmax + 1, 2 lmax + 1)
        Quadrature weights w_i 2π/(2 lmax + 1), exact for degree <= 2 lmax.
    """

    dim = 3
    domain = "sphere"

    def __init__(self, lmax: int, backend: str | None = None):
        if isinstance(lmax, bool) or not isinstance(lmax, (int, np.integer)):
            raise TypeError(f"`lmax` must be an integer, got {lmax!r}.")
        if lmax < 2:
            raise ValueError(f"`lmax` must be at least 2, got {lmax}.")
        name = default_backend() if backend is None else backend
        if name not in BACKENDS:
            raise ValueError(f"`backend` must be one of {sorted(BACKENDS)}, got {backend!r}.")
        self.backend = BACKENDS[name]
        self.lmax = int(lmax)
        zero, w = _glq(self.lmax)
        nlon = 2 * self.lmax + 1
        self.colatitudes = np.arccos(zero)
        self.longitudes = 2.0 * np.pi * np.arange(nlon) / nlon
        st, ct = np.sqrt(1.0 - zero**2), zero
        self.points = np.stack(
            [np.outer(st, np.cos(self.longitudes)), np.outer(st, np.sin(self.longitudes)), np.outer(ct, np.ones(nlon))],
            axis=-1,
        )
        self.weights = np.outer(w, np.full(nlon, 2.0 * np.pi / nlon))
        for a in (self.colatitudes, self.longitudes, self.points, self.weights):
            a.setflags(write=False)

    @property
    def shape(self) -> tuple[int, int]:
        return (self.lmax + 1, 2 * self.lmax + 1)

    @property
    def n(self) -> int:
        """The resolution parameter refinement doubles (here lmax)."""
        return self.lmax

    @property
    def spacing(self) -> float:
        """π / lmax, the shortest resolved half-wavelength (for the CFL step)."""
        return np.pi / self.lmax

    def __eq__(self, other) -> bool:
        return isinstance(other, SphereGrid) and other.lmax == self.lmax

    def __hash__(self) -> int:
        return hash(("sphere", self.lmax))

    def __repr__(self) -> str:
        return f"SphereGrid(lmax={self.lmax})"

    def refined(self, factor: int = 2) -> "SphereGrid":
        return SphereGrid(self.lmax * int(factor), backend=self.backend.name)

    def integrate(self, values: np.ndarray) -> float:
        return float(np.sum(np.asarray(values) * self.weights))

    # ----------------------------------------------------------- spectra
    def coefficients(self, values: np.ndarray) -> np.ndarray:
        """Orthonormal coefficients c_lm, shape (2, lmax + 1, lmax + 1)."""
        return self.backend.analysis(values, self.lmax)

    def from_coefficients(self, cilm: np.ndarray) -> np.ndarray:
        return self.backend.synthesis(cilm, self.lmax)

    def resample(self, values: np.ndarray, lmax: int) -> np.ndarray:
        """The expansion on the grid of degree lmax (zero-padding is exact)."""
        return self.backend.synthesis(self.coefficients(values), int(lmax))

    def interpolate(self, values: np.ndarray, points) -> np.ndarray:
        """Evaluate the spherical-harmonic expansion at unit vectors of shape (..., 3)."""
        x = check_on_sphere(points, "points")
        if x.shape[-1] != 3:
            raise ValueError(f"`points` must be unit vectors in R^3 for a sphere grid, got shape {x.shape}.")
        return evaluate(self.coefficients(values), x)

    def spectral_tail(self, values: np.ndarray) -> float:
        """sqrt(max power per degree) over the top 1/16 of degrees, relative to |c_00|."""
        p = degree_power(self.coefficients(values))
        width = max(2, self.lmax // 16)
        return float(np.sqrt(np.max(p[-width:])) / abs(np.sqrt(p[0])))


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
    l, m, idx = DuccBackend._index(lmax)
    sign = np.where(m % 2 == 1, -1.0, 1.0) * np.where(m > 0, 1.0 / np.sqrt(2.0), 1.0)
    alm = np.zeros(idx.size, dtype=complex)
    alm[idx] = sign * (cilm[0, l, m] - 1j * np.where(m > 0, cilm[1, l, m], 0.0))
    loc = np.stack([np.arccos(np.clip(flat[:, 2], -1, 1)), np.mod(np.arctan2(flat[:, 1], flat[:, 0]), 2 * np.pi)], -1)
    out = synthesis_general(alm=alm[None], spin=0, lmax=lmax, loc=np.ascontiguousarray(loc), epsilon=1e-14,
                            nthreads=DuccBackend.nthreads)[0]
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
