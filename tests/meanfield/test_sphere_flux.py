"""The S² spectral tendency against an exact one computed in extended precision, independent of every transform library.

For self-attention at β = 0 the field is X = c P_x^⊥ m̄, m̄ = ∫ y dμ / ∫ dμ (MATH.md §2), so

    ∂_t ρ = −div_S(ρ c P^⊥ m̄) = −c (∇_S ρ · m̄ − 2 ρ ⟨x, m̄⟩),

of degree L + 1 for ρ of degree L. Here it is evaluated with long-double associated Legendre
functions (64-bit mantissa), analysed to degree L on a finer Gauss grid and synthesized at
the grid's nodes. Both the fast path (the flux form, ring plans) and the reference path (the
scalar form, cilm arrays) must be within a small multiple of the tendency's own conditioning:
its change when every coefficient of ρ is perturbed by ε ρ_00, which no float64 computation
can avoid (the state itself carries that much round-off). Measured at L = 63, in units of that
conditioning: the fast path 7.2 (of which about half is ducc0's analysis at degree L, which the
cilm path shares), the cilm path on ducc0 4.2, on pyshtools 2.1; the bound is 16.
"""

import numpy as np
import pytest

import meanfield as mf
from meanfield.domains.sphere import PyshtoolsBackend as PB
from meanfield.domains.sphere import SphereSpectral
from meanfield.domains.sphere.gauss import glq
from tests.helpers import smooth_positive_sphere

LD = np.longdouble


def _legendre(L, x):
    """p[l, m, i]: the θ-part of the real orthonormal harmonics (√2 included for m > 0, no Condon–Shortley phase)."""
    x = np.asarray(x, dtype=LD)
    s = np.sqrt(1 - x * x)
    p = np.zeros((L + 2, L + 2, x.size), LD)
    pmm = np.full(x.size, 1 / np.sqrt(4 * LD(np.pi)), LD)
    for m in range(L + 2):
        if m > 0:
            pmm = pmm * np.sqrt(LD(2 * m + 1) / LD(2 * m)) * s
        p[m, m] = pmm * (np.sqrt(LD(2)) if m > 0 else 1)
        if m + 1 <= L + 1:
            p[m + 1, m] = np.sqrt(LD(2 * m + 3)) * x * p[m, m]
        for l in range(m + 2, L + 2):
            a = np.sqrt(LD(4 * l * l - 1) / LD(l * l - m * m))
            a_prev = np.sqrt(LD(4 * (l - 1) ** 2 - 1) / LD((l - 1) ** 2 - m * m))
            p[l, m] = a * (x * p[l - 1, m] - p[l - 2, m] / a_prev)
    return p


def _exact_tendency(cilm, L, c):
    """−c(∇ρ·m̄ − 2ρ⟨x, m̄⟩) truncated to degree L, at the nodes of SphereGrid(L), in long double."""
    lad = lambda l, m: np.sqrt(LD(l * l - m * m) / LD(4 * l * l - 1)) if l > 0 else LD(0)  # noqa: E731
    C = cilm.astype(LD)
    mass = C[0, 0, 0] * np.sqrt(4 * LD(np.pi))
    mbar = np.array([C[0, 1, 1], C[1, 1, 1], C[0, 1, 0]]) * np.sqrt(4 * LD(np.pi) / 3) / mass
    Lq = L + 2  # a Gauss grid exact for the analysis of degree-(L + 1) values against degree L
    x, w = glq(Lq)
    nphi = 2 * Lq + 2
    phi = 2 * LD(np.pi) * np.arange(nphi) / nphi
    p = _legendre(L + 1, x)
    s = np.sqrt(1 - x.astype(LD) ** 2)
    rho, r_t, r_p = (np.zeros((x.size, nphi), LD) for _ in range(3))
    for m in range(L + 1):
        cm, sm = np.cos(m * phi), np.sin(m * phi)
        A, B, At, Bt = (np.zeros(x.size, LD) for _ in range(4))
        for l in range(m, L + 1):
            # sin θ ∂_θ p_lm = l a_{l+1,m} p_{l+1,m} − (l+1) a_lm p_{l−1,m}
            d = l * lad(l + 1, m) * p[l + 1, m] - ((l + 1) * lad(l, m) * p[l - 1, m] if l > m else 0)
            A += C[0, l, m] * p[l, m]
            B += C[1, l, m] * p[l, m]
            At += C[0, l, m] * d
            Bt += C[1, l, m] * d
        rho += np.outer(A, cm) + np.outer(B, sm)
        r_t += np.outer(At / s, cm) + np.outer(Bt / s, sm)
        r_p += np.outer(m * B / s, cm) - np.outer(m * A / s, sm)
    th = np.arccos(x.astype(LD))[:, None]
    ct, st, cp, sp = np.cos(th), np.sin(th), np.cos(phi)[None], np.sin(phi)[None]
    m_t = mbar[0] * ct * cp + mbar[1] * ct * sp - mbar[2] * st
    m_p = -mbar[0] * sp + mbar[1] * cp
    m_x = mbar[0] * st * cp + mbar[1] * st * sp + mbar[2] * ct
    T = -c * (r_t * m_t + r_p * m_p - 2 * rho * m_x)
    W = w.astype(LD) * 2 * LD(np.pi) / nphi
    xg = glq(L)[0]
    pg = _legendre(L, xg)
    phig = 2 * LD(np.pi) * np.arange(2 * L + 1) / (2 * L + 1)
    out = np.zeros((L + 1, 2 * L + 1), LD)
    for m in range(L + 1):
        fc, fs = (T * np.cos(m * phi)).sum(1) * W, (T * np.sin(m * phi)).sum(1) * W
        a = (p[: L + 1, m] @ fc)[:, None] * pg[: L + 1, m]  # Σ_l c_lm p_lm at the grid's colatitudes
        b = (p[: L + 1, m] @ fs)[:, None] * pg[: L + 1, m]
        out += np.outer(a[m:].sum(0), np.cos(m * phig)) + np.outer(b[m:].sum(0), np.sin(m * phig))
    return out


@pytest.mark.parametrize("L", [24, 63])
def test_spectral_tendency_is_exact_to_its_conditioning(L):
    c = 0.7
    cilm = PB.analysis(smooth_positive_sphere(L, seed=L), L)
    v = PB.synthesis(cilm, L)
    exact = _exact_tendency(cilm, L, c)
    scale = float(np.max(np.abs(exact)))
    reference = SphereSpectral(mf.SphereGrid(L, backend="pyshtools"), 0.0, c, True)
    # the conditioning: the largest change of the tendency over 3 perturbations ε ρ_00 N(0, 1) of every coefficient
    rng = np.random.default_rng(0)
    kappa = 0.0
    for _ in range(3):
        d = rng.standard_normal(cilm.shape) * np.finfo(float).eps * abs(cilm[0, 0, 0])
        d = np.stack([np.tril(d[0]), np.tril(d[1], -1)])
        kappa = max(kappa, float(np.max(np.abs(reference.rate(PB.synthesis(cilm + d, L)) - reference.rate(v)))))
    assert kappa < 1e-11 * scale  # a test of round-off, not of truncation
    for grid in (mf.SphereGrid(L), mf.SphereGrid(L, backend="pyshtools")):
        for fast in ((True, False) if grid.backend.name == "ducc0" else (False,)):
            rate = SphereSpectral(grid, 0.0, c, True, fast=fast)
            err = float(np.max(np.abs(rate.rate(v) - exact)))
            assert err <= 16.0 * kappa, (grid.backend.name, fast, err / kappa)
