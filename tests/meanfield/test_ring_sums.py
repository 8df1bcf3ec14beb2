"""The rings' compiled spectral sums on S^{d-1} (issue 50, item 2: zonal models at 10⁶ rings): equal to the NumPy
table path to round-off (its error model stated per test), within their stated truncation bound of the direct sum
over the ring kernel, and independent of the thread count."""

import numba
import numpy as np
import pytest
from scipy.special import hyp0f1

from meanfield.core import pool
from meanfield.domains.gegenbauer import orthonormal
from meanfield.domains.zonal_sphere import point_sums as zs
from tests.helpers import EPS

DIMENSIONS = [3, 4, 16, 128]


def _rings(rng, n, m):
    """n rings of random polar angles and positive masses summing to 1, m query angles (both poles among them)."""
    theta = rng.uniform(0.0, np.pi, n)[:, None]
    w = rng.uniform(0.1, 1.0, n)
    q = np.concatenate([rng.uniform(0.0, np.pi, m - 4), [0.0, np.pi, 1e-9, np.pi - 1e-6]])[:, None]
    return theta, w / w.sum(), q


def _kappa(n, K):
    """The round-off factor of the error model: the recurrence's ~4 roundings per degree (carried along by the stable
    recurrence), the moments' lanes and chunks (2·LANES additions in another order than the BLAS's), and the
    BLAS's pairwise sums over n (log₂ n)."""
    return 4 * (K + 1) + 2 * zs.LANES + np.log2(n)


@pytest.mark.parametrize("d", DIMENSIONS)
def test_compiled_moments_equal_the_table_moments(rng, d):
    """ĝ_l = Σ_j w_j p̄_l(u_j) by the lane recurrences equals w @ orthonormal(...) to round-off: both compute p̄_l by
    the same recurrence (one with a multiplication by 1/b_{l+1}, FMAs), so |Δĝ_l| <= κε Σ_j|w_j p̄_l(u_j)|
    (:func:`_kappa`); 10× that. Signed masses: no cancellation hidden by positive terms."""
    theta, _, _ = _rings(rng, 5000, 8)
    w = rng.uniform(-1.0, 1.0, theta.shape[0])
    K = zs.ring_degree(d, 4.0)
    P = orthonormal(d, K, np.cos(theta[:, 0]), normalized=True)
    g = zs.ring_moments(theta, w, K, d)
    assert g.shape == (K + 1,)
    assert np.all(np.abs(g - w @ P) <= 10 * _kappa(len(w), K) * EPS * (np.abs(w) @ np.abs(P)))
    state = np.concatenate([theta, np.ones_like(theta)], axis=1)  # the Lagrangian state (θ, ℓ): a strided column
    assert np.array_equal(zs.ring_moments(state[:, :1], w, K, d), g)


def _magnitudes(d, K, beta, theta, w, q):
    """(A0, A1, A2, φ, φ′/β, φ″/β) at the queries: Σ_l |M_l||p̄_l(u)|, Σ_l |N_l||p̄_l′(u)|, Σ_l |N_l||p̄_l″(u)| with
    the multipliers applied to Σ_j|w_j p̄_l(u_j)| (the size of every term either path rounds), and the sums."""
    Pr = orthonormal(d, K, np.cos(theta[:, 0]), normalized=True)
    gabs, g = np.abs(w) @ np.abs(Pr), w @ Pr
    m, n = zs._multipliers(d, K, beta)
    P, P1, P2 = orthonormal(d, K, np.cos(q[:, 0]), derivatives=2, normalized=True)
    return (np.abs(P) @ (m * gabs), np.abs(P1) @ (n * gabs), np.abs(P2) @ (n * gabs), P @ (m * g), P1 @ (n * g),
            P2 @ (n * g))


@pytest.mark.parametrize("d", DIMENSIONS)
@pytest.mark.parametrize("normalized", [True, False])
def test_compiled_field_and_divergence_equal_the_table_path(rng, d, normalized):
    """SA and USA, β = 4, c = −1.3: θ̇, the divergence and the bound equal :func:`matrix_ring_sums` to round-off.
    Error model: the sums φ, φ′/β, φ″/β err by κε times the sums of their terms' sizes A0, A1, A2
    (:func:`_magnitudes`, :func:`_kappa`: the moments' and the series' roundings), so with r = φ′/(βφ):
    |Δψ′| <= |c|κε(A1 + |r|A0)/φ (SA; USA |c|e^β κε A1), θ̇ = −ψ′ sin θ; ψ″ = c(φ″/(βφ) − βr²) errs by
    |c|κε(A2 + |φ″/(βφ)|A0 + 2β|r|(A1 + |r|A0))/φ (USA |c|e^β κε A2), the divergence sin²θ ψ″ − (d − 1)uψ′ by
    sin²θ|Δψ″| + (d − 1)|u||Δψ′|. 10× that. The bound: the same formula of the same sums, relative κε."""
    beta, c = 4.0, -1.3
    theta, w, q = _rings(rng, 3000, 400)
    K = zs.ring_degree(d, beta)
    v, bound = zs.ring_field(theta, w, q, beta, normalized, c, d=d)
    v2, div = zs.ring_field_and_divergence(theta, w, q, beta, normalized, c, d=d)
    rv, rbound = zs.matrix_ring_sums(theta, w, q, beta, normalized, c, d=d)
    rv2, rdiv = zs.matrix_ring_sums(theta, w, q, beta, normalized, c, d=d, second=True)
    assert v.shape == (len(q), 1) and div.shape == (len(q),) and np.array_equal(v, v2)
    A0, A1, A2, phi, num, num2 = _magnitudes(d, K, beta, theta, w, q)
    tol = 10 * _kappa(len(w), K) * EPS
    u, s = np.cos(q[:, 0]), np.abs(np.sin(q[:, 0]))
    if normalized:
        r, r2 = num / phi, num2 / phi
        dpsi1 = abs(c) * tol * (A1 + np.abs(r) * A0) / phi
        dpsi2 = abs(c) * tol * (A2 + np.abs(r2) * A0 + 2 * beta * np.abs(r) * (A1 + np.abs(r) * A0)) / phi
    else:
        dpsi1 = abs(c) * np.exp(beta) * tol * A1
        dpsi2 = abs(c) * np.exp(beta) * tol * A2
    assert np.all(np.abs(v[:, 0] - rv) <= dpsi1 * s)
    assert np.all(np.abs(div - rdiv) <= s * s * dpsi2 + (d - 1) * np.abs(u) * dpsi1)
    assert np.all(np.abs(bound - rbound) <= tol * rbound)


def _ring_kernel_field(d, beta, theta, w, q):
    """θ̇ of SA (c = 1) summed directly over the rings by the ring kernel (no expansion, no multiplier):
    ∫_{ring θ_j} e^{β⟨x,y⟩} dσ̄ = e^{βuv} ₀F₁(; (d−1)/2; β²(1−u²)(1−v²)/4) (u = cos θ, v = cos θ_j) and
    θ̇ = (1/β)∂_θ log φ(θ), ∂_θ = −sin θ ∂_u (scipy's hyp0f1, its derivative ₀F₁(; b + 1; z)/b)."""
    u, v = np.cos(q[:, 0])[:, None], np.cos(theta[:, 0])[None, :]
    su, sv2 = np.sin(q[:, 0])[:, None], np.sin(theta[:, 0])[None, :] ** 2
    b = 0.5 * (d - 1)
    z = 0.25 * beta * beta * su * su * sv2
    e = np.exp(beta * (u * v - 1.0)) * w
    F0, F1 = hyp0f1(b, z), hyp0f1(b + 1.0, z) / b
    phi = (e * F0).sum(axis=1)
    dphi_du = (e * (beta * v * F0 - 0.5 * beta * beta * u * sv2 * F1)).sum(axis=1)
    return -su[:, 0] * dphi_du / (beta * phi)


@pytest.mark.parametrize("d", DIMENSIONS)
def test_ring_field_equals_the_direct_ring_kernel_sum_within_its_bound(rng, d):
    """SA β = 4 on S^{d−1}: the compiled θ̇ equals the direct sum over the ring kernel (:func:`_ring_kernel_field`)
    within the stated truncation bound (times sin θ) plus round-off: both sums err by ~(K + log₂ n)ε relative to their
    terms, the kernel's terms have |θ̇| <= 1 each after SA's division by φ, which is at least e^{−2β} of the mass
    (~e^{−β} for these spread rings: ≤ 60); scipy's ₀F₁ is good to ~1e-15 relative. Tolerance: 10 × 60 ×
    (4(K + 1) + log₂ n)ε on top of the bound."""
    beta = 4.0
    theta, w, q = _rings(rng, 400, 200)
    K = zs.ring_degree(d, beta)
    v, bound = zs.ring_field(theta, w, q, beta, d=d)
    ref = _ring_kernel_field(d, beta, theta, w, q)
    allowance = bound * np.abs(np.sin(q[:, 0])) + 10 * 60 * (4 * (K + 1) + np.log2(len(w))) * EPS
    assert np.all(np.isfinite(bound)) and np.all(np.abs(v[:, 0] - ref) <= allowance)
    assert np.max(np.abs(ref)) > 1e-3  # the field is not trivially small


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two threads")
@pytest.mark.parametrize("d", [3, 128])
def test_ring_sums_do_not_depend_on_the_thread_count(rng, monkeypatch, d):
    """The chunks of the moments and the blocks of the series are fixed by n and m, not by the threads: one and two
    threads give the same bits (every call handed to the pool here: no work threshold)."""
    monkeypatch.setattr(pool, "MIN_TASK_WORK", 1)
    theta, w, q = _rings(rng, 20000, 3000)
    threads = numba.get_num_threads()
    out = {}
    try:
        for k in (1, 2):
            numba.set_num_threads(k)
            out[k] = (zs.ring_moments(theta, w, 30, d), *zs.ring_field(theta, w, q, 4.0, d=d),
                      *zs.ring_field_and_divergence(theta, w, q, 4.0, d=d))
    finally:
        numba.set_num_threads(threads)
    assert all(np.array_equal(a, b) for a, b in zip(out[1], out[2]))


def test_bad_rings_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="weights"):
        zs.ring_moments(np.zeros((5, 1)), np.ones(4), 8, 3)
    with pytest.raises(ValueError, match="total mass"):  # SA's φ is 0: no field (not a silent NaN)
        zs.ring_field(np.zeros((0, 1)), np.zeros(0), np.ones((3, 1)), 4.0, d=3)


def test_compiled_sin_and_cos_are_within_an_ulp_or_two_of_libm(rng):
    """The passes' own sin θ, cos θ (vectorisable: Cody–Waite reduction to |r| <= π/4, Taylor polynomials) against
    numpy's on [0, π], near the poles and π/2 included: each is within ~1 ulp of the exact value (ulp <= ε|x|), so
    |Δ| <= 2ε|x|; 10× that. Off [0, π] (not a polar angle) within 10·|θ|ε absolute."""
    theta = np.concatenate([rng.uniform(0.0, np.pi, 20000), [0.0, 1e-300, 1e-9, np.pi / 4, np.pi / 2, 3 * np.pi / 4,
                                                             np.pi - 1e-12, np.nextafter(np.pi, 0.0), np.pi]])
    s, c = np.empty_like(theta), np.empty_like(theta)
    zs.sincos(theta, s, c)
    assert np.all(np.abs(s - np.sin(theta)) <= 20 * EPS * np.abs(np.sin(theta)))
    assert np.all(np.abs(c - np.cos(theta)) <= 20 * EPS * np.abs(np.cos(theta)))
    wide = np.linspace(-20.0, 20.0, 4001)
    s, c = np.empty_like(wide), np.empty_like(wide)
    zs.sincos(wide, s, c)
    assert np.all(np.abs(s - np.sin(wide)) <= 10 * EPS * (1 + np.abs(wide)))
    assert np.all(np.abs(c - np.cos(wide)) <= 10 * EPS * (1 + np.abs(wide)))
