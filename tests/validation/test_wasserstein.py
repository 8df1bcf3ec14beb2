"""Wasserstein distances: exact cases, metric properties, independent cross-checks, bad input."""

import importlib

import numpy as np
import ot
import pytest
from hypothesis import given, settings, strategies as st
from scipy.optimize import linear_sum_assignment

import meanfield as mf
import particles as pt
from meanfield import exact
from validation import gaussian_w2, sliced_wasserstein_sphere, w1, w2, wasserstein

W = importlib.import_module("validation.wasserstein")


def on_circle(theta):
    theta = np.asarray(theta, dtype=float)
    return np.stack([np.cos(theta), np.sin(theta)], -1)


def circle_lp(ta, wa, tb, wb, p):
    """Exact OT on the circle by linear programming with the geodesic cost (POT network simplex)."""
    d = np.abs(np.subtract.outer(ta, tb))
    d = np.minimum(d, 2 * np.pi - d)
    return ot.emd2(wa, wb, d**p) ** (1 / p)


# ------------------------------------------------------------------ circle
@pytest.mark.parametrize("p", [1, 2, 3])
def test_circle_matches_linear_programming(rng, p):
    for _ in range(40):
        n, m = rng.integers(1, 15, 2)
        ta, tb = rng.uniform(0, 2 * np.pi, n), rng.uniform(0, 2 * np.pi, m)
        wa, wb = rng.dirichlet(np.ones(n)), rng.dirichlet(np.ones(m))
        assert wasserstein((on_circle(ta), wa), (on_circle(tb), wb), p) == pytest.approx(circle_lp(ta, wa, tb, wb, p), abs=1e-12)


def test_circle_w1_is_the_cdf_formula(rng):
    """W1 = min_c ∫|F − G − c| dθ, the minimum found here by brute force over c."""
    ta, tb = rng.uniform(0, 2 * np.pi, 7), rng.uniform(0, 2 * np.pi, 5)
    wa, wb = rng.dirichlet(np.ones(7)), rng.dirichlet(np.ones(5))
    th = np.linspace(0, 2 * np.pi, 200001)[:-1] + np.pi / 200000
    F = (wa[None, :] * (ta[None, :] <= th[:, None])).sum(1)
    G = (wb[None, :] * (tb[None, :] <= th[:, None])).sum(1)
    cs = np.unique(F - G)
    brute = min(np.mean(np.abs(F - G - c)) * 2 * np.pi for c in cs)
    assert w1((on_circle(ta), wa), (on_circle(tb), wb)) == pytest.approx(brute, abs=1e-4)  # quadrature of the brute force


def test_two_diracs_and_rotations():
    for a, b in ((0.1, 6.0), (1.0, 1.0 + np.pi), (2.0, 2.5)):
        d = abs(a - b)
        geo = min(d, 2 * np.pi - d)
        for p in (1, 2, 3):
            assert wasserstein(on_circle([a]), on_circle([b]), p) == pytest.approx(geo, abs=1e-12)
    # a measure supported on an arc, rotated by φ without wrapping around: W_p = φ for every p
    rng = np.random.default_rng(1)
    th = rng.uniform(0, 1, 50)
    for p in (1, 2):
        assert wasserstein(on_circle(th), on_circle(th + 0.3), p) == pytest.approx(0.3, abs=1e-12)
    # the uniform measure is rotation invariant: a regular N-gon rotated by a whole step
    ngon = 2 * np.pi * np.arange(12) / 12
    assert w2(on_circle(ngon), on_circle(ngon + 2 * np.pi / 12)) == pytest.approx(0.0, abs=1e-12)


def test_measure_against_itself_is_zero(rng):
    d = mf.Density.from_function(mf.CircleGrid(64), lambda x: np.exp(2 * x[..., 0]))
    assert w1(d, d) == 0.0 and w2(d, d) == 0.0
    x = pt.uniform_sphere(30, 2, rng=rng)
    assert w1(x, x) == 0.0 and w2(x, x) == pytest.approx(0.0, abs=1e-12)
    y = pt.uniform_sphere(20, 3, rng=rng)
    assert w1(y, y) == 0.0 and w2(y, y) == 0.0


def test_density_against_its_samples_and_resampling():
    a = 0.5 + 0.2j
    d = mf.Density.from_function(mf.CircleGrid(256), lambda x: exact.wrapped_cauchy(np.arctan2(x[..., 1], x[..., 0]), a))
    # the same law on a finer grid is the same measure (zero-padding is exact for the interpolant)
    fine = d.resampled(mf.CircleGrid(1024))
    assert w1(d, fine) <= 2 * W.circle_density_resolution()
    # iid samples: W1 ~ N^{-1/2}
    x = pt.sample(d, 40000, rng=4)
    assert 1e-4 < w1(d, x) < 2e-2
    # density against the Dirac at the mean direction: W1 = ∫ |θ − θ_0| ρ dθ, an integral we can do by quadrature
    th0 = np.angle(a)
    from scipy.integrate import quad

    dist = lambda t: min(abs(t - th0 % (2 * np.pi)), 2 * np.pi - abs(t - th0 % (2 * np.pi)))
    ref = quad(lambda t: dist(t) * exact.wrapped_cauchy(t, a), 0, 2 * np.pi, points=[th0 % (2 * np.pi)], limit=200)[0]
    assert w1(d, on_circle([th0])) == pytest.approx(ref, abs=2 * W.circle_density_resolution())


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), p=st.sampled_from([1, 2]))
def test_metric_properties_on_the_circle(seed, p):
    rng = np.random.default_rng(seed)
    ms = [(on_circle(rng.uniform(0, 2 * np.pi, k)), rng.dirichlet(np.ones(k))) for k in rng.integers(1, 20, 3)]
    dab, dba = wasserstein(ms[0], ms[1], p), wasserstein(ms[1], ms[0], p)
    assert dab == pytest.approx(dba, abs=1e-12)
    assert dab <= wasserstein(ms[0], ms[2], p) + wasserstein(ms[2], ms[1], p) + 1e-12
    assert w1(ms[0], ms[1]) <= w2(ms[0], ms[1]) + 1e-12


# ------------------------------------------------------------------ sphere and R^d
def test_sphere_exact_ot_matches_assignment(rng):
    x, y = pt.uniform_sphere(25, 3, rng=rng), pt.uniform_sphere(25, 3, rng=rng)
    C = np.arccos(np.clip(x @ y.T, -1, 1))
    for p in (1, 2):
        r, c = linear_sum_assignment(C**p)
        assert wasserstein(x, y, p) == pytest.approx(np.mean(C[r, c] ** p) ** (1 / p), abs=1e-12)
    e = np.eye(3)
    assert w2(e[:1], e[1:2]) == pytest.approx(np.pi / 2, abs=1e-12)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_metric_properties_on_the_sphere(seed):
    rng = np.random.default_rng(seed)
    a, b, c = (pt.uniform_sphere(int(k), 3, rng=rng) for k in rng.integers(2, 15, 3))
    assert w1(a, b) == pytest.approx(w1(b, a), abs=1e-12)
    assert w2(a, b) <= w2(a, c) + w2(c, b) + 1e-12
    assert w1(a, b) <= w2(a, b) + 1e-12


def test_euclidean_point_sets(rng):
    x, y = rng.normal(size=(30, 2)), rng.normal(size=(30, 2)) + 1.0
    D = np.linalg.norm(x[:, None] - y[None], axis=-1)
    r, c = linear_sum_assignment(D**2)
    assert w2(x, y) == pytest.approx(np.sqrt(np.mean(D[r, c] ** 2)), abs=1e-12)
    # translation: W_p(μ, μ + v) = |v|
    assert w2(x, x + np.array([0.3, -0.4])) == pytest.approx(0.5, abs=1e-12)
    # d = 1 by quantiles equals the LP
    u, v = rng.normal(size=40), rng.normal(size=25) * 2
    wa, wb = rng.dirichlet(np.ones(40)), rng.dirichlet(np.ones(25))
    lp = ot.emd2(wa, wb, np.abs(np.subtract.outer(u, v)) ** 2) ** 0.5
    assert w2((u, wa), (v, wb)) == pytest.approx(lp, abs=1e-12)


def test_gaussian_bures():
    assert gaussian_w2([0, 0], np.eye(2), [0, 0], np.eye(2)) == pytest.approx(0.0, abs=1e-12)
    # 1-D: W2² = (m1 − m2)² + (s1 − s2)²
    assert gaussian_w2([1.0], [[4.0]], [-2.0], [[9.0]]) == pytest.approx(np.hypot(3.0, 1.0), abs=1e-12)
    # commuting covariances: W2² = |Δm|² + Σ(√a_i − √b_i)²
    A, B = np.diag([1.0, 4.0, 9.0]), np.diag([4.0, 1.0, 0.25])
    expect = np.sqrt(1.0 + (1 - 2) ** 2 + (2 - 1) ** 2 + (3 - 0.5) ** 2)
    assert gaussian_w2([1, 0, 0], A, [0, 0, 0], B) == pytest.approx(expect, abs=1e-12)
    # rotation invariance: W2(N(0, RARᵀ), N(0, RBRᵀ)) = W2(N(0, A), N(0, B))
    R = np.linalg.qr(np.random.default_rng(0).normal(size=(3, 3)))[0]
    assert gaussian_w2([0] * 3, R @ A @ R.T, [0] * 3, R @ B @ R.T) == pytest.approx(np.sqrt(expect**2 - 1.0), abs=1e-10)
    with pytest.raises(ValueError, match="symmetric"):
        gaussian_w2([0, 0], [[1, 0.5], [0, 1]], [0, 0], np.eye(2))
    with pytest.raises(ValueError, match="semi-definite"):
        gaussian_w2([0, 0], [[1, 0], [0, -1]], [0, 0], np.eye(2))


def test_sliced_is_an_estimate_of_its_own(rng):
    x, y = pt.uniform_sphere(200, 3, rng=rng), pt.uniform_sphere(200, 3, rng=rng)
    s = sliced_wasserstein_sphere(x, y, p=2, projections=100, rng=0)
    assert 0 < s < np.pi
    assert sliced_wasserstein_sphere(x, x, p=2, projections=20, rng=0) == pytest.approx(0.0, abs=1e-12)


# ------------------------------------------------------------------ bad input
def test_bad_input(rng):
    d = mf.Density.uniform(mf.CircleGrid(16))
    x3 = pt.uniform_sphere(5, 3, rng=rng)
    with pytest.raises(ValueError, match="different domains|on the circle"):
        w1(d, x3)
    with pytest.raises(ValueError, match="different domains"):
        w1(on_circle([0.1, 0.2]), rng.normal(size=(4, 2)) * 3)
    sphere_density = mf.Density.from_function(mf.SphereGrid(8), lambda x: np.exp(x[..., 2]))
    with pytest.raises(ValueError, match="different domains"):
        w1(sphere_density, rng.normal(size=(5, 3)) * 3)
    with pytest.raises(ValueError, match="different domains"):
        w1(on_circle([0.1]), rng.normal(size=(5, 2)) * 3, domain="circle")
    with pytest.raises(ValueError, match="non-negative"):
        w1((x3, np.array([0.5, 0.5, 0.5, -0.5, 0.0])), x3)
    with pytest.raises(ValueError, match="sum to"):
        w1((x3, np.full(5, 0.3)), x3)
    with pytest.raises(ValueError, match="empty"):
        w1(np.empty((0, 3)), x3)
    with pytest.raises(ValueError, match="`p`"):
        wasserstein(x3, x3, 0.5)
    with pytest.raises(ValueError, match="different dimensions"):
        w1(rng.normal(size=(3, 2)) * 3, rng.normal(size=(3, 4)) * 3)


def test_batched_point_sets_give_one_distance_per_set():
    """(R, n, d) sets against a density, a set or another batch: each entry is the unbatched distance, the
    batch broadcasts, and W_p is symmetric."""
    import meanfield as mf
    from validation.wasserstein import w1, w2

    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 40, 3))
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    y = x[0, ::-1] @ np.linalg.qr(rng.standard_normal((3, 3)))[0]
    one = w1(x, y)
    assert one.shape == (3,)
    np.testing.assert_allclose(one, [w1(xi, y) for xi in x], rtol=0, atol=0)
    np.testing.assert_allclose(w1(y, x), one, rtol=1e-12)
    th = rng.uniform(0, 2 * np.pi, (2, 4, 30))
    c = np.stack([np.cos(th), np.sin(th)], axis=-1)
    rho = mf.Density(mf.CircleGrid(32), np.full(32, 1 / (2 * np.pi)))
    batch = w2(rho, c)
    assert batch.shape == (2, 4) and batch[1, 2] == w2(rho, c[1, 2])
    pairs = w1(c[:, None, 0], c[None, :, 1])  # (2, 1) against (1, 2): a 2 × 2 table
    assert pairs.shape == (2, 2) and pairs[0, 1] == w1(c[0, 0], c[1, 1])
    with pytest.raises(ValueError, match="do not broadcast"):
        w1(c[:, 0], np.concatenate([c[:, 0], c[:1, 0]]))  # batches of 2 and 3
