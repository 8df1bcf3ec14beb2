"""The general-Σ noise maps (MATH.md §13): the push-forward by φ(u) = Bu/|Bu| at the nodes by local Lagrange
interpolation, on S¹ (fourier.linear_pushforward) and S² (sphere.pushforward), against exact push-forwards of
band-limited densities (trigonometric and spherical polynomials, evaluated in closed form at the preimages) and
within the a-priori bounds that choose the stencils (meanfield.core.stencils)."""

import math

import numpy as np
import pytest
from scipy.linalg import expm

import meanfield as mf
from meanfield.core import stencils
from meanfield.domains.circle import fourier
from meanfield.domains.sphere import pushforward as s2
from meanfield.domains.sphere.ducc import complex_alm

EPS = np.finfo(float).eps


def test_remainder_constant_is_the_maximum_of_the_node_polynomial():
    """W_p = max over the middle interval of |Π_j (x − j)| / p!, sampled densely (the closed form is the maximum,
    at the centre), and fourier.lagrange_bound (σ, p) = (π/σ)^p W_p."""
    for p in (4, 8, 16, 32):
        x = np.linspace(p / 2 - 1, p / 2, 4001)
        w = np.prod(np.abs(x[:, None] - np.arange(p)[None, :]), axis=1) / math.factorial(p)
        assert stencils.remainder_constant(p) == pytest.approx(np.max(w), rel=1e-12)
        assert fourier.lagrange_bound(4, p) == pytest.approx((np.pi / 4) ** p * stencils.remainder_constant(p),
                                                             rel=1e-6)  # lagrange_bound samples 1025 points
    for p in (4, 16):  # the Lebesgue constant bounds Σ|ℓ_j| at random points of the middle interval
        x = np.random.default_rng(p).uniform(p / 2 - 1, p / 2, 20000)
        t = stencils.barycentric_weights(p)[None, :] / (x[:, None] - np.arange(p)[None, :])
        assert np.max(np.abs(t).sum(1) / np.abs(t.sum(1))) <= stencils.lebesgue_constant(p)


# ----------------------------------------------------------------------------- S¹
def circle_case(n, K, decay, seed=0):
    """Nodal values of a random real trigonometric polynomial of degree K < n/2 (|ρ̂_k| ~ decay^k) and its
    exact evaluation at any angle."""
    rng = np.random.default_rng(seed)
    c = (rng.standard_normal(K + 1) + 1j * rng.standard_normal(K + 1)) * decay ** np.arange(K + 1)
    c[0] = 3.0
    k = np.arange(K + 1)

    def exact(theta):
        return c[0].real + 2 * np.real(np.exp(1j * np.outer(theta, k[1:])) @ c[1:])

    theta = 2 * np.pi * np.arange(n) / n
    return exact(theta), exact, theta


def circle_pushforward_exact(exact, theta, B):
    (a, b), (c, d) = B
    px, py = d * np.cos(theta) - b * np.sin(theta), a * np.sin(theta) - c * np.cos(theta)
    jac = (a * d - b * c) / (px * px + py * py)
    return exact(np.arctan2(py, px)) * jac, jac


@pytest.mark.parametrize("B", [expm(np.array([[0.04, -0.3], [0.2, -0.04]])),  # a general map
                               np.array([[np.cos(0.7), -np.sin(0.7)], [np.sin(0.7), np.cos(0.7)]])])  # a rotation
def test_circle_pushforward_within_its_bound_for_every_stencil(B):
    """φ_#ρ of a trigonometric polynomial of degree 40 on 256 nodes, exact in closed form (a rotation: the shifted
    polynomial), at each imposed (σ, p) and at the automatic choice: within pushforward_bound(σ, p) Σ_k m_k|ρ̂_k|
    times max J, plus round-off 1e-15 n Σ m_k|ρ̂_k| max J (as the interpolation tests of test_common_noise.py).
    Small stencils are far from round-off (the bound is then what is tested)."""
    n = 256
    values, exact, theta = circle_case(n, 40, 0.9)
    ref, jac = circle_pushforward_exact(exact, theta, B)
    spectrum = fourier.rfft(values)
    scale = np.sum(np.abs(spectrum) * fourier.multiplicity(n)) / n * np.max(jac)
    for sigma, p in [(1, 4), (1, 8), (2, 6), (2, 12), (4, 8), (4, 32)]:
        got = fourier.linear_pushforward(values, B, np.cos(theta), np.sin(theta), stencil=(sigma, p))
        bound = fourier.pushforward_bound(spectrum, n, sigma, p)
        assert np.max(np.abs(got - ref)) <= bound * scale + 1e-15 * n * scale, (sigma, p, bound)
    sigma, p, bound = fourier.pushforward_stencil(spectrum, n)
    assert bound <= fourier.PUSHFORWARD_TOL
    assert bound == pytest.approx(fourier.pushforward_bound(spectrum, n, sigma, p), rel=1e-10)
    got = fourier.linear_pushforward(values, B, np.cos(theta), np.sin(theta))
    assert np.max(np.abs(got - ref)) <= fourier.PUSHFORWARD_TOL * scale + 1e-15 * n * scale


def test_circle_stencil_follows_the_spectrum():
    """A density resolved well inside its grid takes the nodes themselves (σ = 1) and few of them; one with modes
    of size 1 up to n/2 − 1 needs the 4n nodes (where p = 32 meets the tolerance for any spectrum); each within the
    tolerance."""
    smooth, _, _ = circle_case(1024, 20, 0.5)
    sigma, p, bound = fourier.pushforward_stencil(fourier.rfft(smooth), 1024)
    assert sigma == 1 and p <= 12 and bound <= fourier.PUSHFORWARD_TOL
    rough, exact, theta = circle_case(64, 31, 1.0)
    spectrum = fourier.rfft(rough)
    sigma, p, bound = fourier.pushforward_stencil(spectrum, 64)
    assert sigma == 4 and p <= 32 and bound <= fourier.PUSHFORWARD_TOL
    B = expm(np.array([[0.1, -0.5], [0.3, -0.1]]))
    ref, jac = circle_pushforward_exact(exact, theta, B)
    scale = np.sum(np.abs(spectrum) * fourier.multiplicity(64)) / 64 * np.max(jac)
    got = fourier.linear_pushforward(rough, B, np.cos(theta), np.sin(theta))
    assert np.max(np.abs(got - ref)) <= fourier.PUSHFORWARD_TOL * scale + 1e-15 * 64 * scale


# ----------------------------------------------------------------------------- S²
A = np.array([0.3, -0.4, 0.5])


def sphere_case(lmax=16, degree=10):
    """(1.2 + a·x)^degree on the Gauss–Legendre grid: a spherical polynomial of that degree (<= lmax: the analysis
    is exact), known in closed form at any point."""
    def f(x):
        return (1.2 + x @ A) ** degree

    g = mf.SphereGrid(lmax)
    return g, f(g.points), f


def sphere_pushforward_exact(f, points, B):
    q = points @ np.linalg.inv(B).T
    r = np.linalg.norm(q, axis=-1)
    jac = 1.0 / (np.linalg.det(B) * r ** 3)
    return f(q / r[..., None]) * jac, jac


def _sum_U(alm, lmax):
    """Σ_l U_l, U_l = √(p_l (2l + 1)/4π) >= sup of the degree-l part: the bound's unit."""
    L = lmax
    p = np.zeros(L + 1)
    for m in range(L + 1):
        start = m * (2 * L + 1 - m) // 2
        p[m:] += (1.0 if m == 0 else 2.0) * np.abs(alm[start + m: start + L + 1]) ** 2
    return float(np.sum(np.sqrt(p * (2 * np.arange(L + 1) + 1) / (4 * np.pi))))


@pytest.mark.parametrize("B", [expm(np.array([[0.05, -0.3, 0.1], [0.25, -0.02, 0.0], [-0.1, 0.15, -0.03]])),
                               expm(np.array([[0.0, -0.6, 0.2], [0.6, 0.0, -0.4], [-0.2, 0.4, 0.0]]))])  # rotation
def test_sphere_pushforward_within_its_bound_for_every_stencil(B):
    """φ_#ρ of a spherical polynomial of degree 10 (lmax 16), exact in closed form at the preimages (for the
    rotation: ρ(Rᵀx), which the grid itself would get from the Wigner rotation), by p × p stencils on the
    equiangular grids σ = 2, 3, 4 and by the automatic choice: within the bound (1 + Λ) W_p Σ_l U_l (lh)^p times
    max J, plus round-off 3e-15 (L + 1)² Σ_l U_l max J (the synthesis sums (L + 1)² terms at ε each, the stencils
    p² <= 256 weighted ones with Σ|ℓ| <= 1.75² — 10× under it)."""
    g, values, f = sphere_case()
    L = g.lmax
    points = g.points.reshape(-1, 3)
    ref, jac = sphere_pushforward_exact(f, points, B)
    alm = complex_alm(g.coefficients(values), L)
    scale = _sum_U(alm, L) * np.max(jac)
    roundoff = 3e-15 * (L + 1) ** 2 * scale
    for sigma, p in [(2, 4), (2, 8), (3, 10), (4, 6), (4, 12)]:
        bound = s2.pushforward_bound(alm, L, sigma, p)
        got = s2.interpolate_pushforward(s2.equiangular(alm, L, 2 * sigma * (L + 1)), points, B, p)
        assert np.max(np.abs(got - ref)) <= bound * scale + roundoff, (sigma, p, bound)
        got = s2.pushforward(alm, L, points, B, sigma, p)  # the grid's route: the rows straight from the expansion
        assert np.max(np.abs(got - ref)) <= bound * scale + roundoff, (sigma, p, bound)
    sigma, p, bound = s2.pushforward_stencil(alm, L)
    assert sigma in (2, 3, 4) and bound <= s2.PUSHFORWARD_TOL
    assert bound == pytest.approx(s2.pushforward_bound(alm, L, sigma, p), rel=1e-10)
    if not np.allclose(B.T @ B, np.eye(3), atol=1e-13):  # the grid's own map (a rotation takes the Wigner route)
        got = g.linear_transport(values, B).ravel()
        assert np.max(np.abs(got - ref)) <= s2.PUSHFORWARD_TOL * scale + roundoff


def test_sphere_pushforward_on_the_poles_and_nodes():
    """Points on the poles, on equiangular nodes (where a stencil weight is exactly 0 or 1) and a hair off them
    (B = I, preimages the points themselves): finite and exact to round-off."""
    g, values, f = sphere_case(12, 8)
    alm = complex_alm(g.coefficients(values), 12)
    M = 2 * 2 * 13
    th = np.array([0.0, np.pi, 2 * np.pi / M * 3, 2 * np.pi / M * 3 + 1e-16, 1.0, 1.0])
    ph = np.array([0.3, 1.1, 2 * np.pi / M * 5, -1e-17, -np.pi, np.pi])
    pts = np.stack([np.sin(th) * np.cos(ph), np.sin(th) * np.sin(ph), np.cos(th)], -1)
    scale = _sum_U(alm, 12)
    for got in (s2.interpolate_pushforward(s2.equiangular(alm, 12, M), pts, np.eye(3), 12),
                s2.pushforward(alm, 12, pts, np.eye(3), 2, 12)):
        assert np.all(np.isfinite(got))
        assert np.max(np.abs(got - f(pts))) <= s2.pushforward_bound(alm, 12, 2, 12) * scale + 3e-15 * 13 ** 2 * scale


def test_sphere_map_without_a_stencil_takes_the_nonuniform_synthesis():
    """Random coefficients of size 1 at every degree up to lmax 8: no stencil p <= 16 meets the tolerance (σ = 0),
    and the grid's map takes ducc0's non-uniform synthesis; exact against the expansion summed at the preimages."""
    from meanfield.domains.sphere.transforms import _evaluate_legendre

    rng = np.random.default_rng(3)
    g = mf.SphereGrid(8)
    cilm = rng.standard_normal((2, 9, 9)) * np.tri(9)[None]
    cilm[1, :, 0] = 0.0
    cilm[0, 0, 0] = 10.0
    values = g.from_coefficients(cilm)
    alm = complex_alm(cilm, 8)
    assert s2.pushforward_stencil(alm, 8)[0] == 0
    B = expm(np.array([[0.05, -0.3, 0.1], [0.25, -0.02, 0.0], [-0.1, 0.15, -0.03]]))
    points = g.points.reshape(-1, 3)
    q = points @ np.linalg.inv(B).T
    r = np.linalg.norm(q, axis=-1)
    ref = _evaluate_legendre(cilm, q / r[:, None]) / (np.linalg.det(B) * r ** 3)
    assert np.max(np.abs(g.linear_transport(values, B).ravel() - ref)) <= 1e-12 * np.max(np.abs(ref))


def _in_fresh_thread(fn):
    """fn() in a new thread (its own work arrays: pushforward's scratch is per thread)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(fn).result()


def test_sphere_work_arrays_kept_between_degrees_of_one_grid_size_give_the_same_bits():
    """(L, σ) = (47, 2) and (31, 3) share the equiangular grid M = 2σ(L + 1) = 192, so the same work arrays; the
    φ-spectra past m = L must be zero for the second degree, not the first's: the map at (31, 3) after one at (47, 2)
    equals, bit for bit, the same map in a thread that made no other (no kept state may change a result)."""
    rng = np.random.default_rng(5)
    B = np.eye(3) + 0.1 * rng.standard_normal((3, 3))
    points = rng.standard_normal((200, 3))
    points /= np.linalg.norm(points, axis=1, keepdims=True)

    def alm(L):
        a = rng.standard_normal((L + 1) * (L + 2) // 2) + 1j * rng.standard_normal((L + 1) * (L + 2) // 2)
        a[: L + 1] = a[: L + 1].real  # m = 0: real
        return a

    a47, a31 = alm(47), alm(31)
    alone = _in_fresh_thread(lambda: s2.pushforward(a31, 31, points, B, 3, 8))
    after = _in_fresh_thread(lambda: (s2.pushforward(a47, 47, points, B, 2, 8),
                                      s2.pushforward(a31, 31, points, B, 3, 8))[1])
    assert np.array_equal(alone, after)


def test_sphere_work_arrays_above_the_limit_are_not_kept():
    """A work array above SCRATCH_MAX_BYTES is made per call and not held by the thread afterwards."""
    def probe():
        big = s2._scratch("probe", (s2.SCRATCH_MAX_BYTES // 8 + 1,))
        small = s2._scratch("probe-small", (8,))
        return big is s2._scratch("probe", big.shape), small is s2._scratch("probe-small", (8,))

    big_kept, small_kept = _in_fresh_thread(probe)
    assert not big_kept and small_kept
