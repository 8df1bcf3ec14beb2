"""Gauss–Legendre nodes of S², the ladder coefficients of cos θ, and the layouts of coefficient arrays.

Two layouts of the real orthonormal expansion ρ = Σ c_lm Y_lm (MATH.md §2.1):
pyshtools' ``cilm[0 | 1, l, m]`` (cos mφ | sin mφ), and healpy's m-major
packing of the complex a_lm, m >= 0, which ducc0 uses (:func:`alm_layout`).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

__all__ = ["glq", "ladder", "alm_layout", "pad_coefficients"]


@lru_cache(maxsize=32)
def glq(lmax: int):
    """Gauss–Legendre nodes cos θ_i (north to south) and weights for degree lmax."""
    from pyshtools.backends.shtools import SHGLQ

    zero, w = SHGLQ(lmax)
    zero.setflags(write=False)
    w.setflags(write=False)
    return zero, w


def ladder(l, m):
    """a_lm = √((l² − m²)/(4l² − 1)) (0 at l = 0): cos θ Y_lm = a_{l+1,m} Y_{l+1,m} + a_lm Y_{l−1,m}."""
    l = np.asarray(l, dtype=float)
    m = np.asarray(m, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.sqrt(np.maximum(l * l - m * m, 0.0) / (4.0 * l * l - 1.0))
    return np.where(l > 0, r, 0.0)


@lru_cache(maxsize=64)
def alm_layout(lmax: int):
    """(l, m, mstart) of healpy's m-major packing of degrees <= lmax: entry (l, m) sits at ``mstart[m] + l``.

    ``l`` and ``m`` list the entries in storage order.
    """
    m_all = np.arange(lmax + 1)
    mstart = (m_all * (2 * lmax + 1 - m_all) // 2).astype(np.uintp)
    m = np.repeat(m_all, lmax + 1 - m_all)
    l = np.concatenate([np.arange(k, lmax + 1) for k in m_all])
    for a in (l, m, mstart):
        a.setflags(write=False)
    return l, m, mstart


def pad_coefficients(cilm: np.ndarray, lmax: int) -> np.ndarray:
    """Coefficients zero-padded or truncated to degree lmax."""
    out = np.zeros((2, lmax + 1, lmax + 1))
    k = min(lmax, cilm.shape[1] - 1) + 1
    out[:, :k, :k] = cilm[:, :k, :k]
    return out
