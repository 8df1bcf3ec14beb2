r"""The optional shtns backend: SHTns' transforms (Schaeffer 2013) on the same Gauss–Legendre grids.

shtns needs FFTW from the system (``apt install libfftw3-dev && pip install shtns``), so it is
optional: ``SphereGrid(L, backend="shtns")`` uses it where it is importable and raises an
``ImportError`` saying how to install it otherwise; ducc0 (a pure wheel) stays the default.
On a machine with AVX-512 its Legendre transforms and FFTW ring transforms are about 1.7× faster
than ducc0's at L = 127–255.

Conventions: shtns' orthonormal harmonics without the Condon–Shortley phase, coefficients in the
same m-major packing as ducc0's (healpy's), so a_lm = (C_lm − i S_lm)/√2 for m > 0 and a_l0 = C_l0
(ducc0 carries the extra (−1)^m of the phase). Grids with fewer than 32 colatitudes, which shtns
refuses, are transformed by ducc0.

Threads: each plan runs on :func:`.ducc.sht_threads` OpenMP threads and keeps its work arrays per
Python thread; calling one plan from several Python threads at once is not tested (the ducc0 plans
are, in ``tests/meanfield/test_sphere.py``).
"""

from __future__ import annotations

import threading
from functools import lru_cache

import numpy as np

from .ducc import DuccBackend, ThreadScratch, complex_alm, real_cilm, sht_threads
from .gauss import alm_layout, pad_coefficients

__all__ = ["ShtnsBackend", "ShtnsPlan", "shtns_plan", "require", "phase", "MIN_NLAT"]

#: shtns refuses Gauss grids of fewer colatitudes.
MIN_NLAT = 32


def require():
    """The shtns module, or an ``ImportError`` saying how to install it."""
    try:
        import shtns
    except ImportError as err:
        raise ImportError(
            "the 'shtns' backend needs SHTns, which needs FFTW from the system: "
            "`apt install libfftw3-dev && pip install shtns` (the default backend, ducc0, needs nothing)."
        ) from err
    return shtns


class ShtnsPlan(ThreadScratch):
    """A ``shtns.sht`` on one grid (its methods pass through) with per-thread work arrays; pickles by rebuilding.

    Parameters: as :func:`shtns_plan`, and ``nthreads`` for shtns' OpenMP threads.
    """

    def __init__(self, lmax: int, grid_lmax: int, nphi: int, nthreads: int):
        shtns = require()
        self.args = (int(lmax), int(grid_lmax), int(nphi), int(nthreads))
        sh = shtns.sht(lmax, lmax, 1, shtns.sht_orthonormal + shtns.SHT_NO_CS_PHASE, nthreads)
        # polar_opt=0: no Legendre values are dropped near the poles (the default drops those below 1e-10)
        sh.set_grid(nlat=grid_lmax + 1, nphi=nphi, flags=shtns.sht_gauss + shtns.SHT_PHI_CONTIGUOUS, polar_opt=0.0)
        if tuple(sh.spat_shape) != (grid_lmax + 1, nphi):
            raise RuntimeError(f"shtns laid the grid out as {sh.spat_shape}, not {(grid_lmax + 1, nphi)}.")
        self.sh = sh
        self._local = threading.local()
        self._ll1 = sh.l * (sh.l + 1.0)
        self.gradient_scale = self.flux_scale = np.ones(grid_lmax + 1)  # shtns' gradients are ∂_θ, ∂_φ / sin θ

    def __getattr__(self, name):  # analys, synth, SH_to_spat, SHsph_to_spat, l, spat_shape, cos_theta, ...
        if name in ("sh", "_local", "args", "_ll1", "gradient_scale", "flux_scale"):
            raise AttributeError(name)
        return getattr(self.sh, name)

    def __reduce__(self):
        return (type(self), self.args)

    def analysis(self, values: np.ndarray) -> np.ndarray:
        """Coefficients (shtns' layout) of values on the grid, as :meth:`.ducc.RingPlan.analysis`."""
        return self.sh.analys(np.ascontiguousarray(values, dtype=float))

    def synthesis(self, alm: np.ndarray) -> np.ndarray:
        """Values on the grid of coefficients in shtns' layout (a new array)."""
        return self.sh.synth(alm)

    def divergence_analysis(self, field: np.ndarray) -> np.ndarray:
        """Coefficients of −div_S F of a tangent field F = (F_θ, F_φ) on the grid, as
        :meth:`.ducc.RingPlan.divergence_analysis`: F = ∇S + curl T gives −div F = l(l + 1) S."""
        return self._ll1 * self.sh.analys(field[0], field[1])[0]


@lru_cache(maxsize=32)
def _plan(lmax: int, grid_lmax: int, nphi: int, nthreads: int) -> ShtnsPlan:
    return ShtnsPlan(lmax, grid_lmax, nphi, nthreads)


def shtns_plan(lmax: int, grid_lmax: int | None = None, nphi: int | None = None) -> ShtnsPlan:
    """A cached :class:`ShtnsPlan` for coefficients of degree ``lmax`` on the GLQ grid of degree ``grid_lmax``
    (default ``lmax``) with ``nphi`` longitudes (default 2 grid_lmax + 1), rows = colatitudes north to south,
    on :func:`.ducc.sht_threads` threads."""
    grid_lmax = lmax if grid_lmax is None else grid_lmax
    if grid_lmax + 1 < MIN_NLAT:
        raise ValueError(f"shtns needs at least {MIN_NLAT} colatitudes, got {grid_lmax + 1}.")
    return _plan(int(lmax), int(grid_lmax), 2 * grid_lmax + 1 if nphi is None else int(nphi),
                 sht_threads(grid_lmax))


@lru_cache(maxsize=64)
def phase(lmax: int) -> np.ndarray:
    """(−1)^m per coefficient of the m-major packing: shtns' a_lm = (−1)^m × ducc0's."""
    out = np.where(alm_layout(lmax)[1] % 2 == 1, -1.0, 1.0)
    out.setflags(write=False)
    return out


class ShtnsBackend:
    """Transforms on GLQ grids with shtns (optional; module docstring). Same interface as :class:`DuccBackend`."""

    name = "shtns"

    @classmethod
    def analysis(cls, values: np.ndarray, lmax: int) -> np.ndarray:
        if lmax + 1 < MIN_NLAT:
            return DuccBackend.analysis(values, lmax)
        return real_cilm(shtns_plan(lmax).analysis(values) * phase(lmax), lmax)

    @classmethod
    def synthesis(cls, cilm: np.ndarray, lmax: int) -> np.ndarray:
        if lmax + 1 < MIN_NLAT:
            return DuccBackend.synthesis(cilm, lmax)
        alm = complex_alm(pad_coefficients(cilm, lmax), lmax) * phase(lmax)
        return shtns_plan(lmax).synthesis(alm)
