"""Feed-forward blocks and whole Transformer layers (GLPR §2.3.2, (2.8); docs/MATH.md §8.2).

Asserted: the block's divergence formula against central differences (R^d and S^{d-1}, every activation); the
block alone on S¹ and S² (a non-interacting transport) against the method of characteristics — the backward flow
and the determinant of its tangent Jacobian from the variational equation, written out here — to 1e-10; the S²
right-hand sides with a drift (fast ring path, reference cilm path, moments, quadrature) agreeing to round-off;
attention plus feed-forward against the Lagrangian measure, and the Lagrangian nodes against weighted particles;
the Gaussian closure of an affine block; the Lie and Strang splittings at orders 1 and 2 in the layer depth; and
the errors for bad blocks.
"""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import meanfield as mf
import particles
from meanfield.analysis import gaussian
from meanfield.lagrangian import start as lagrangian_start, start_gaussian
from meanfield.models import ACTIVATIONS, FeedForward, SelfAttention, Softmax, Transformer, layers
from tests.helpers import EPS


def _block(d, rng, scale=0.6, activation="tanh", manifold="sphere", m=4):
    return FeedForward(scale * rng.standard_normal((d, m)), rng.standard_normal((m, d)), 0.3 * rng.standard_normal(m),
                       activation, manifold)


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
@pytest.mark.parametrize("manifold,d", [("sphere", 2), ("sphere", 3), ("sphere", 6), ("euclidean", 2)])
def test_divergence_against_central_differences(activation, manifold, d, rng):
    """div X of the formula (module docstring of meanfield.models.feedforward) against central differences of the
    0-homogeneous extension X(x/|x|) on the sphere (whose ambient divergence on |x| = 1 is the surface divergence of
    a tangent field), of X itself in R^d."""
    ff = _block(d, rng, activation=activation, manifold=manifold)
    x = rng.standard_normal((5, d))
    if manifold == "sphere":
        x /= np.linalg.norm(x, axis=1, keepdims=True)
    X, div = ff.velocity_and_divergence(x)
    ext = (lambda y: ff.velocity(y / np.linalg.norm(y, axis=-1, keepdims=True))) if manifold == "sphere" else ff.velocity
    h = 1e-5
    fd = sum((ext(x + h * e) - ext(x - h * e))[:, i] for i, e in enumerate(np.eye(d))) / (2 * h)
    assert np.allclose(X, ff.velocity(x), atol=0, rtol=0)
    assert np.max(np.abs(div - fd)) <= 1e-7 * (1 + np.max(np.abs(div)))
    if manifold == "sphere":
        # ⟨P_x v, x⟩ = ⟨v, x⟩(1 − |x|²) + rounding: a few ulps of |v| (2.5 EPS measured)
        assert np.max(np.abs(np.sum(X * x, axis=1))) <= 64 * EPS * (1 + np.max(np.abs(X)))


def _characteristics(ff, rho0, x, T):
    """ρ_T(x) = ρ_0(Φ_{−T} x) |det DΦ_{−T}(x)|: the backward flow of ẋ = P_x F(x), F = Wσ(Ax + b) (tanh), with the
    variational equation Ṁ = D(P_z F(z)) M, D(P_z F) = P_z DF − z Fᵀ − ⟨z, F⟩ I, and the determinant taken between
    orthonormal bases of the tangent spaces at x and at Φ_{−T} x."""
    d = x.size
    W, A, b = ff.W, ff.A, ff.b

    def rhs(_, y):
        z, M = y[:d], y[d:].reshape(d, d)
        s = np.tanh(A @ z + b)
        F, DF = W @ s, W @ ((1 - s * s)[:, None] * A)
        P = np.eye(d) - np.outer(z, z)
        J = P @ DF - np.outer(z, F) - (z @ F) * np.eye(d)
        return -np.concatenate([P @ F, (J @ M).ravel()])

    y = solve_ivp(rhs, (0, T), np.concatenate([x, np.eye(d).ravel()]), method="DOP853", rtol=1e-13, atol=1e-14).y[:, -1]
    z, M = y[:d], y[d:].reshape(d, d)

    def basis(p):
        return np.linalg.qr(np.column_stack([p, np.eye(d)]))[0][:, 1:d]

    return rho0(z) * abs(np.linalg.det(basis(z).T @ M @ basis(x)))


@pytest.mark.parametrize("domain", ["circle", "sphere"])
def test_block_alone_against_the_characteristics(domain, rng):
    """The feed-forward block alone moves every token on its own: the grid's density at T against the method of
    characteristics at 30 nodes, to 1e-10 (S¹ at n = 256, S² refined from degree 48 as its monitor asks)."""
    if domain == "circle":
        d, grid, scale = 2, mf.CircleGrid(256), 0.6
        rho0 = lambda x: (1 + 0.5 * x[..., 0] + 0.3 * x[..., 0] * x[..., 1]) / (2 * np.pi)  # noqa: E731
    else:
        d, grid, scale = 3, mf.SphereGrid(48), 0.4
        rho0 = lambda x: (1 + 0.5 * x[..., 0] + 0.3 * x[..., 1] * x[..., 2]) / (4 * np.pi)  # noqa: E731
    ff = _block(d, rng, scale)
    T = 0.5
    sol = mf.solve(ff, mf.Density.from_function(grid, rho0), (0, T), t_eval=[T], representation="grid",
                   method="dop853", rtol=1e-13, atol=1e-15, max_n=max(128, grid.n))
    assert sol.status == mf.Status.SUCCESS
    f = sol.densities[-1]
    pts = f.grid.points.reshape(-1, d)
    idx = rng.choice(len(pts), 30, replace=False)
    ref = np.array([_characteristics(ff, rho0, pts[i], T) for i in idx])
    assert np.max(np.abs(f.values.reshape(-1)[idx] - ref)) <= 1e-10


def test_sphere_right_hand_sides_with_a_drift_agree(rng):
    """SA + feed-forward on S²: the fast ring path (the drift laid on ducc0's rings), the reference cilm path
    (pyshtools), the moment path and the quadrature sums give one tendency, to round-off relative to its size."""
    from meanfield.representations.grid import continuity

    model = SelfAttention(1.5) + _block(3, rng)
    rates = {}
    for backend, strategy in [(None, "spectral"), ("pyshtools", "spectral"), (None, "moments"), (None, "quadrature")]:
        grid = mf.SphereGrid(32, backend=backend)
        mu = mf.Density.from_function(grid, lambda x: 1 + 0.5 * x[..., 0] + 0.3 * x[..., 1] * x[..., 2])
        rhs = continuity(grid.domain, model, grid, strategy)
        rates[(backend, strategy)] = rhs.rate(mu.values)
    ref = rates[(None, "quadrature")]
    for key, r in rates.items():
        assert np.max(np.abs(r - ref)) <= 1e-12 * np.max(np.abs(ref)), key


def test_circle_and_plane_right_hand_sides_with_a_drift_agree(rng):
    from meanfield.representations.grid import continuity

    model = SelfAttention(2.0) + _block(2, rng)
    grid = mf.CircleGrid(64)
    mu = mf.Density.from_function(grid, lambda x: np.exp(x[..., 0] + 0.5 * x[..., 1] ** 2))
    a, b = (continuity(grid.domain, model, grid, s).rate(mu.values) for s in ("spectral", "quadrature"))
    assert np.max(np.abs(a - b)) <= 1e-12 * np.max(np.abs(b))
    model = Softmax(Q=np.array([[0.5, 0.2], [-0.1, 0.3]])) + _block(2, rng, manifold="euclidean")
    grid = mf.EuclideanGrid([(-5, 5)] * 2, 32)
    mu = gaussian.gaussian_density(grid, np.zeros(2), np.eye(2))
    a, b = (continuity(grid.domain, model, grid, s).rate(mu.values) for s in ("separable", "quadrature"))
    assert np.max(np.abs(a - b)) <= 1e-12 * np.max(np.abs(b))


@pytest.mark.parametrize("domain", ["circle", "sphere"])
def test_attention_plus_block_grid_against_the_lagrangian_measure(domain, rng):
    """SA + feed-forward: the grid's density against the Lagrangian measure's (its nodes carry log ρ along the
    characteristics, with the field and divergence summed over attention and block) at the nodes, to 1e-8."""
    if domain == "circle":
        grid, d = mf.CircleGrid(256), 2
        f0 = lambda x: 1 + 0.5 * x[..., 0] + 0.3 * x[..., 0] * x[..., 1]  # noqa: E731
    else:
        grid, d = mf.SphereGrid(48), 3
        f0 = lambda x: 1 + 0.5 * x[..., 0] + 0.3 * x[..., 1] * x[..., 2]  # noqa: E731
    model = SelfAttention(1.0) + _block(d, rng, 0.4)
    mu0 = mf.Density.from_function(grid, f0)
    T = 0.5
    opts = dict(method="dop853", rtol=1e-12, atol=1e-14)
    g = mf.solve(model, mu0, (0, T), t_eval=[T], representation="grid", max_n=max(128, grid.n), **opts).densities[-1]
    lag = mf.solve(model, mu0, (0, T), t_eval=[T], representation="lagrangian", **opts).densities[-1]
    assert np.max(np.abs(g(lag.points) - np.exp(lag.log_density))) <= 1e-8


def test_lagrangian_nodes_are_weighted_particles(rng):
    """The Lagrangian measure's points follow the field of the measure they carry: weighted particles started at its
    nodes with its weights land on its points (attention + feed-forward on S²), to the integrators' tolerance."""
    model = SelfAttention(2.0) + _block(3, rng)
    start = lagrangian_start(mf.Density.from_function(mf.SphereGrid(12), lambda x: 1 + 0.5 * x[..., 0]))
    end = mf.solve(model, start, (0, 0.8), t_eval=[0.8], rtol=1e-12, atol=1e-14).densities[-1]
    traj = particles.simulate(model, start.points, [0, 0.8], method="dop853", rtol=1e-12, atol=1e-14,
                              weights=start.weights)
    assert np.max(np.abs(traj.x[-1] - end.points)) <= 1e-9


@pytest.mark.filterwarnings("ignore:.*has left the box")  # ~1e-8 of the mass through the far edge: below the errors
def test_affine_block_gaussian_closure(rng):
    """σ = identity: softmax + W(Ax + b) is affine on Gaussians (M += WA, c += Wb): the Lagrangian measure on
    Gauss–Hermite nodes against the closure to 1e-10, and the R² grid converging to it (order >= 3.5, the WENO5
    scheme's); a non-affine block has no closure."""
    A = rng.standard_normal((3, 2))
    ff = FeedForward(-0.3 * A.T, A, rng.standard_normal(3), "identity", "euclidean")
    model = Softmax(Q=np.array([[0.5, 0.2], [-0.1, 0.3]])) + ff
    m0, C0 = np.array([0.5, -0.3]), np.array([[0.5, 0.1], [0.1, 0.3]])
    ref = gaussian.solve_gaussian(model, m0, C0, [0, 0.5, 1.0])
    sol = mf.solve(model, start_gaussian(m0, C0, 24), (0, 1), t_eval=[0.5, 1.0], rtol=1e-13, atol=1e-14)
    for f, mean, cov in zip(sol.densities, ref.mean[1:], ref.cov[1:]):
        m = f.mean()
        C = (f.weights[:, None] * (f.points - m)).T @ (f.points - m)
        assert np.max(np.abs(m - mean)) <= 1e-10 and np.max(np.abs(C - cov)) <= 1e-10
    errors = []
    for n in (48, 96):
        grid = mf.EuclideanGrid([(-6, 6)] * 2, n)
        f = mf.solve(model, gaussian.gaussian_density(grid, m0, C0), (0, 1), t_eval=[1.0]).densities[-1]
        _, m, C = grid.moments(f.values)
        errors.append(max(np.max(np.abs(m - ref.mean[-1])), np.max(np.abs(C - ref.cov[-1]))))
    assert np.log2(errors[0] / errors[1]) >= 3.5, errors
    with pytest.raises(TypeError, match="activation 'tanh'"):
        gaussian.solve_gaussian(Softmax() + _block(2, rng, manifold="euclidean"), m0, C0, [0, 1])


@pytest.mark.parametrize("splitting,order", [("lie", 1), ("strang", 2)])
def test_splitting_order_in_the_layer_depth(splitting, order):
    """Layers of depth h composing the flows of attention and feed-forward (GLPR (2.8)) converge to the summed
    model at order 1 (Lie) and 2 (Strang) in h: 64 particles on S², h = 1/4 … 1/16, RK4 steps of h/8."""
    rng = np.random.default_rng(0)
    att, ff = SelfAttention(2.0), _block(3, rng, 0.8, "gelu")
    x0 = particles.uniform_sphere(64, 3, rng=np.random.default_rng(1))
    ref = particles.simulate(att + ff, x0, [0, 1.0], dt=1e-3).x[-1]
    errors = [np.max(np.abs(particles.simulate(Transformer(att, ff, splitting, depth=1 / k), x0, [0, 1.0],
                                               dt=1 / (8 * k)).x[-1] - ref)) for k in (4, 8, 16)]
    rates = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(np.abs(rates - order) <= 0.15), (errors, rates)


def test_split_layers_from_schedules():
    """Without ``depth``, the layers of the splitting are the schedules': a two-layer schedule split by Lie has the
    sub-steps at the quarter points of each layer (its halves), and each half runs one block at twice its speed."""
    rng = np.random.default_rng(2)
    ff = FeedForward(layers([rng.standard_normal((3, 2)), rng.standard_normal((3, 2))], [0.5, 1.0]),
                     rng.standard_normal((2, 3)))
    model = Transformer(SelfAttention(1.0), ff, "lie")
    assert np.allclose(model.breakpoints(0, 1.5), [0.25, 0.5, 1.0])
    first, second = model.at(0.1, 0.1), model.at(0.3, 0.25)
    assert first.weights == (2.0, 0.0) and second.weights == (0.0, 2.0)


# ------------------------------------------------------------------ bad input
def test_bad_blocks_are_refused(rng):
    with pytest.raises(ValueError, match="W's columns"):
        FeedForward(np.ones((3, 4)), np.ones((5, 3)))
    with pytest.raises(ValueError, match="A.*columns"):
        FeedForward(np.ones((3, 4)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="`b` has 3 entries"):
        FeedForward(np.ones((3, 4)), np.ones((4, 3)), np.ones(3))
    with pytest.raises(ValueError, match="activation"):
        FeedForward(np.ones((3, 4)), np.ones((4, 3)), activation="softplus")
    with pytest.raises(ValueError, match="manifold"):
        FeedForward(np.ones((3, 4)), np.ones((4, 3)), manifold="torus")
    with pytest.raises(ValueError, match="non-finite"):
        FeedForward(np.full((3, 4), np.nan), np.ones((4, 3)))
    with pytest.raises(ValueError, match="different manifolds"):
        SelfAttention(1.0) + FeedForward(np.ones((3, 4)), np.ones((4, 3)), manifold="euclidean")
    with pytest.raises(ValueError, match="different dimensions"):
        SelfAttention(1.0, Q=np.eye(2)) + FeedForward(np.ones((3, 4)), np.ones((4, 3)))
    with pytest.raises(ValueError, match="needs the depth"):
        Transformer(SelfAttention(1.0), _block(3, rng), "lie")
    with pytest.raises(ValueError, match="depth"):
        Transformer(SelfAttention(1.0), _block(3, rng), "strang", depth=0.0)
    with pytest.raises(ValueError, match="splitting"):
        Transformer(SelfAttention(1.0), _block(3, rng), "trotter", depth=0.1)
    with pytest.raises(ValueError, match="t = 0.5.*`W`"):
        FeedForward(lambda t: np.ones((3, 4)) if t < 0.5 else np.ones((3, 5)), np.ones((4, 3))).at(0.5)
