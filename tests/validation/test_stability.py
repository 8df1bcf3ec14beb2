"""Dobrushin stability on every domain (MATH.md §4): the measured W_1 ratio of two nearby solutions stays below the
a priori, a posteriori and sharper bounds; the constants and their ingredients are checked against the mathematics."""

import numpy as np
import pytest

import meanfield as mf
from meanfield.domains import CIRCLE, EUCLIDEAN, SPHERE
from meanfield.domains.circle import points_to_angles
from meanfield.models import L2, MultiHeadAttention, Sigmoid, Sinkhorn, Softmax, head_constants
from meanfield.integrate.monitor import ResolutionMonitor
from validation.meanfield_limit import meanfield_limit
from validation.stability import lipschitz_constants, stability


def circle_density(n, shift=0.0):
    return mf.Density.from_function(
        mf.CircleGrid(n),
        lambda x: np.exp(np.cos(points_to_angles(x) - shift) + 0.5 * np.sin(2 * points_to_angles(x))),
    )


def sphere_density(lmax, angle=0.0):
    c, s = np.cos(angle), np.sin(angle)
    return mf.Density.from_function(mf.SphereGrid(lmax),
                                    lambda x: np.exp(x[..., 2] * c + x[..., 0] * s + 0.5 * x[..., 0] * x[..., 1]))


def bump(grid, centre):
    """(1 − |x − c|²)³ on the unit ball: compact support, as the R^d support-radius bound needs."""
    return mf.Density.from_function(grid, lambda x: np.clip(1 - np.sum((x - centre) ** 2, -1), 0, None) ** 3)


def check_bounds(r):
    later = r.t > r.t[0]
    assert r.ratio[0] == 1.0 and np.all(r.distance > 0)
    tol = 1 + 1e-12
    assert np.all(r.ratio <= r.bound_sharp * tol), r.table()
    assert np.all(r.bound_sharp <= r.bound_a_posteriori * tol), r.table()
    assert np.all(r.bound_a_posteriori <= r.bound * tol), r.table()
    assert np.all(r.rate_sharp <= r.rate_a_posteriori) and np.all(r.rate_a_posteriori <= r.rate)
    assert r.slack_sharp >= 1 and r.slack_a_posteriori >= r.slack_sharp * (1 - 1e-12)
    assert np.all(r.ratio[later] > 0.5)  # a non-trivial measurement: two solutions that stay apart


# ---------------------------------------------------------------------- constants
@pytest.mark.parametrize("beta", [0.5, 1.0, 3.0])
def test_identity_constants_reduce_to_math_section_4(beta):
    """Q = K = V = I on the sphere: L_x = 2 + β, L_μ = (1 + 2β)e^{2β}; R^d softmax on the unit ball: the same."""
    Lx, Lmu = lipschitz_constants(mf.SelfAttention(beta))
    assert Lx == pytest.approx(2 + beta) and Lmu == pytest.approx((1 + 2 * beta) * np.exp(2 * beta))
    c = head_constants(Softmax(beta=beta), radius=1.0)
    assert c.L_mu == pytest.approx(Lmu) and c.L_x == pytest.approx(beta) and c.L_x <= Lx
    two = MultiHeadAttention([mf.SelfAttention(beta), mf.SelfAttention(beta, V=-np.eye(3))])
    assert lipschitz_constants(two) == pytest.approx((2 * Lx, 2 * Lmu))
    with pytest.raises(ValueError, match="radius"):
        lipschitz_constants(Softmax(beta=beta))


def random_matrices(rng, d):
    return [rng.normal(size=(d, d)) / np.sqrt(d) for _ in range(3)]


@pytest.mark.parametrize("seed", range(4))
def test_measured_quantities_never_exceed_their_a_priori_bounds(seed):
    """The derivations: at random measures and random Q, K, V the measured one-sided Lipschitz number Λ(x) stays
    below L_x and log K_μ(x) = log sup_y k/Z below 2a_μ (sphere S², R¹, R²)."""
    rng = np.random.default_rng(seed)
    y = rng.normal(size=(300, 3))
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    y = y[y[:, 2] > 0.3]  # a cap: far from uniform, small normalisers on the other side
    w = rng.random(y.shape[0])
    w /= w.sum()
    q = SPHERE.retract(rng.normal(size=(400, 3)))
    Q, K, V = random_matrices(rng, 3)
    for model in (mf.SelfAttention(2.0, Q=Q, K=K, V=V), mf.SelfAttention(1.5, Q=Q, K=K, V=V, normalized=False)):
        c = head_constants(model)
        u, Du = model.average_and_jacobian(y, w, q)
        assert np.max(SPHERE.one_sided_lipschitz(q, u, Du)) <= c.L_x
        if c.a_mu is not None:
            assert np.max(model.log_kernel_excess(y, w, q)) <= 2 * c.a_mu
    for d in (1, 2):
        Q, K, V = random_matrices(rng, d)
        R = 1.5
        pts = rng.uniform(-1, 1, size=(200, d))
        pts *= R * rng.random((200, 1)) / np.linalg.norm(pts, axis=1, keepdims=True)
        pts[0] = R * np.eye(d)[0]  # one point on the sphere |y| = R
        wd = rng.random(200)
        wd /= wd.sum()
        qd = rng.uniform(-1, 1, size=(300, d))
        qd *= R * np.sqrt(rng.random((300, 1))) / np.linalg.norm(qd, axis=1, keepdims=True)
        for model in (Softmax(Q=Q, K=K, V=V, beta=2.0), L2(Q=Q, K=K, V=V, tau=0.5), Sigmoid(Q=Q, K=K, V=V, b=0.3),
                      Sinkhorn(Q=Q, K=K, V=V, tau=1.0, tol=1e-10)):
            c = head_constants(model, radius=R)
            G, DG = model.average_and_jacobian(pts, wd, qd)
            assert np.max(EUCLIDEAN.one_sided_lipschitz(qd, G, DG)) <= c.L_x, model
            assert np.max(np.linalg.norm(DG, ord=2, axis=(-2, -1))) <= c.L_x, model
            if c.a_mu is not None:
                assert np.max(model.log_kernel_excess(pts, wd, qd, R)) <= 2 * c.a_mu, model


def finite_difference(f, q, h=1e-6):
    J = np.empty(q.shape + (q.shape[-1],))
    for k in range(q.shape[-1]):
        e = np.zeros(q.shape[-1])
        e[k] = h
        J[..., k] = (f(q + e) - f(q - e)) / (2 * h)
    return J


def test_jacobians_match_finite_differences():
    rng = np.random.default_rng(5)
    for d in (2, 3):
        Q, K, V = random_matrices(rng, d)
        y = rng.normal(size=(40, d))
        w = rng.random(40)
        w /= w.sum()
        q = rng.normal(size=(6, d)) * 0.7
        for model in (Softmax(Q=Q, K=K, V=V, beta=0.7), L2(Q=Q, K=K, V=V, tau=2.0),
                      Sinkhorn(Q=Q, K=K, V=V, tau=3.0), Sigmoid(Q=Q, K=K, V=V, b=0.3)):
            G, DG = model.average_and_jacobian(y, w, q)
            np.testing.assert_allclose(G, model.field(y, w, q), atol=1e-14)
            np.testing.assert_allclose(DG, finite_difference(lambda z: model.field(y, w, z), q), atol=1e-8)
        ys, qs = SPHERE.retract(y), SPHERE.retract(q)
        for normalized in (True, False):
            model = mf.SelfAttention(1.3, Q=Q, K=K, V=V, normalized=normalized)
            u, Du = model.average_and_jacobian(ys, w, qs)
            np.testing.assert_allclose(u, model.average(ys, w, qs), atol=1e-14)
            np.testing.assert_allclose(Du, finite_difference(lambda z: model.average(ys, w, z), qs), atol=1e-8)


def test_one_sided_lipschitz_on_the_sphere():
    """A rotation field u = Ωx (Ω antisymmetric) is a Killing field: Λ ≡ 0; the gradient field X = P_x e of ⟨x, e⟩
    has covariant derivative −⟨x, e⟩ P_x: Λ(x) = −⟨x, e⟩."""
    rng = np.random.default_rng(0)
    x = SPHERE.retract(rng.normal(size=(50, 3)))
    B = rng.normal(size=(3, 3))
    Om = B - B.T
    lam = SPHERE.one_sided_lipschitz(x, x @ Om.T, np.broadcast_to(Om, (50, 3, 3)))
    np.testing.assert_allclose(lam, 0.0, atol=1e-13)
    e = np.array([0.3, -0.2, 0.9])
    lam = SPHERE.one_sided_lipschitz(x, np.broadcast_to(e, (50, 3)), np.zeros((50, 3, 3)))
    np.testing.assert_allclose(lam, -x @ e, atol=1e-14)
    theta = rng.uniform(0, 2 * np.pi, 20)  # the circle: Λ = ∂_θ v for X = v(θ) ∂_θ
    xc = np.stack([np.cos(theta), np.sin(theta)], -1)
    e2 = np.array([1.0, 0.0])  # X = P_x e: v(θ) = −sin θ, ∂_θ v = −cos θ
    np.testing.assert_allclose(CIRCLE.one_sided_lipschitz(xc, np.broadcast_to(e2, (20, 2)), np.zeros((20, 2, 2))),
                               -np.cos(theta), atol=1e-14)


@pytest.mark.parametrize("grid", [mf.CircleGrid(32), mf.SphereGrid(12), mf.EuclideanGrid([(-1, 2), (0, 1)], (8, 5))])
def test_covering_radius_bounds_the_distance_to_the_nearest_node(grid):
    rng = np.random.default_rng(1)
    dom = grid.domain
    nodes = grid.points.reshape(-1, grid.points.shape[-1])
    if dom is EUCLIDEAN:
        x = grid.bounds[:, 0] + rng.random((4000, 2)) * (grid.bounds[:, 1] - grid.bounds[:, 0])
    else:
        x = dom.retract(rng.normal(size=(4000, nodes.shape[1])))
        x[0] = np.eye(nodes.shape[1])[-1]  # a pole
    nearest = np.min(dom.distance(x, nodes), axis=1)
    assert np.max(nearest) <= grid.covering_radius
    assert np.max(nearest) > 0.5 * grid.covering_radius  # and it is not a vacuous radius


# ---------------------------------------------------------------------- the bounds hold
@pytest.mark.parametrize("beta", [0.5, 1.0, 3.0])
def test_stability_on_the_circle(beta):
    r = stability(mf.SelfAttention(beta), circle_density(128), circle_density(128, shift=0.05), np.linspace(0, 2, 11))
    check_bounds(r)
    assert r.L_x == pytest.approx(2 + beta) and r.slack >= 1 and r.domain == "circle"


@pytest.mark.parametrize("beta", [0.5, pytest.param(1.0, marks=pytest.mark.slow), pytest.param(3.0, marks=pytest.mark.slow)])
def test_stability_on_the_sphere(beta):
    kw = dict(monitor=ResolutionMonitor(tail_tol=1e-4), max_n=32)
    r = stability(mf.SelfAttention(beta), sphere_density(16), sphere_density(16, 0.02), np.linspace(0, 2, 6), **kw)
    check_bounds(r)
    assert r.domain == "sphere"


def test_stability_on_the_sphere_general_qkv_multihead():  # 3.6 s (30 s before the compiled quadrature sums)
    rng = np.random.default_rng(2)
    Q, K, V = random_matrices(rng, 3)
    model = MultiHeadAttention([mf.SelfAttention(1.0, Q=Q, K=K, V=V), mf.SelfAttention(0.5)])
    r = stability(model, sphere_density(16), sphere_density(16, 0.03), np.linspace(0, 0.6, 4),
                  monitor=ResolutionMonitor(tail_tol=1e-4), max_n=32)
    check_bounds(r)


@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("make", [lambda d: Softmax(V=0.25 * np.eye(d), beta=0.5),
                                  lambda d: Softmax(V=0.25 * np.eye(d), beta=1.0),
                                  lambda d: Softmax(V=0.25 * np.eye(d), beta=3.0),
                                  lambda d: L2(V=0.25 * np.eye(d), tau=1.0),
                                  lambda d: Sigmoid(V=0.25 * np.eye(d))],
                         ids=["softmax-0.5", "softmax-1", "softmax-3", "l2", "sigmoid"])
def test_stability_in_rd(d, make):
    grid = mf.EuclideanGrid([(-2.5, 2.5)] * d, 256 if d == 1 else 40)
    r = stability(make(d), bump(grid, np.zeros(d)), bump(grid, np.full(d, 0.02)), np.linspace(0, 2, 6))
    check_bounds(r)
    assert r.domain == "euclidean" and r.radius[-1] == pytest.approx(r.radius[0] * np.exp(0.5))


def test_vacuous_bounds_are_reported_as_such():
    """Sinkhorn's L_μ is not derived, and a support bound leaving the box is not covered: ∞ with a note."""
    g = mf.EuclideanGrid([(-3, 3)], 128)
    r = stability(Sinkhorn(V=0.25 * np.eye(1), tol=1e-10), bump(g, 0.0), bump(g, 0.02), [0.0, 0.5, 1.0])
    assert np.all(np.isinf(r.bound_a_posteriori[1:])) and np.all(np.isinf(r.bound[1:])) and r.note
    g = mf.EuclideanGrid([(-1.6, 1.6)], 128)
    r = stability(Softmax(beta=0.5), bump(g, 0.0), bump(g, 0.02), [0.0, 0.5, 1.0])
    assert np.isinf(r.bound_a_posteriori[-1]) and "box" in r.note


# ---------------------------------------------------------------------- bad input
def test_bad_input():
    sa = mf.SelfAttention(1.0)
    with pytest.raises(ValueError, match="ns"):
        meanfield_limit(sa, circle_density(32), [100], [0, 1])
    with pytest.raises(ValueError, match="coincide"):
        stability(sa, circle_density(64), circle_density(64), [0, 0.5])
    with pytest.raises(ValueError, match="same grid"):
        stability(sa, circle_density(64), circle_density(32, 0.1), [0, 0.5])
    with pytest.raises(ValueError, match="different domains"):
        stability(sa, circle_density(64), sphere_density(8), [0, 0.5])
    with pytest.raises(ValueError, match="t_eval"):
        stability(sa, circle_density(64), circle_density(64, 0.1), [0.5, 0.0])
    a = mf.solve(sa, circle_density(64), (0, 1), t_eval=[0, 0.5, 1], representation="grid")
    b = mf.solve(sa, circle_density(64, 0.1), (0, 1), t_eval=[0, 1], representation="grid")
    with pytest.raises(ValueError, match="different times"):
        stability(sa, a, b)
    with pytest.raises(TypeError, match="both"):
        stability(sa, a, circle_density(64))
    with pytest.raises(ValueError, match="coincide"):
        stability(sa, a, a)
