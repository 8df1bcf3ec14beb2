"""R^d attention models and their exact Gaussian closures (MATH.md §3, §5; CACP)."""

import numpy as np
import pytest

import particles as pt
from meanfield.analysis import gaussian as G
from meanfield.models import L2, Masked, MultiHeadAttention, Sigmoid, Sinkhorn, Softmax

M0 = np.array([0.3, -0.2])
S0 = np.array([[0.5, 0.1], [0.1, 0.3]])


def matrices(seed, d=2, scale=0.5):
    rng = np.random.default_rng(seed)
    return tuple(scale * rng.normal(size=(d, d)) for _ in range(3))


def weighted_moments(x, w):
    mean = np.einsum("n,...nd->...d", w, x)
    dev = x - mean[..., None, :]
    return mean, np.einsum("n,...nd,...ne->...de", w, dev, dev)


MODELS = {
    "softmax": lambda Q, K, V: Softmax(Q, K, V, beta=0.8),
    "l2": lambda Q, K, V: L2(Q, K, V, tau=0.7),
    "sinkhorn": lambda Q, K, V: Sinkhorn(Q, K, V, tau=1.3),
    "multihead-softmax": lambda Q, K, V: MultiHeadAttention([Softmax(Q, K, V), Softmax(K, Q, np.eye(2), beta=0.5)]),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_gauss_hermite_particles_follow_the_gaussian_odes(name):
    """An affine flow maps a Gauss–Hermite rule onto the rule of N(α_t, Σ_t): weighted particles follow the closure."""
    model = MODELS[name](*matrices(1))
    x0, w = G.gauss_hermite(M0, S0, 12)
    t = np.linspace(0, 1, 5)
    traj = pt.simulate(model, x0, t, method="dop853", weights=w, rtol=1e-13, atol=1e-15)
    gs = G.solve_gaussian(model, M0, S0, t)
    mean, cov = weighted_moments(traj.x, w)
    assert np.max(np.abs(mean - gs.mean)) <= 1e-9
    assert np.max(np.abs(cov - gs.cov)) <= 1e-9
    # the flow is affine: x_t = m_t + Φ_t (x_0 − m_0) for one matrix Φ_t, with Φ_t Σ_0 Φ_tᵀ = Σ_t
    X0 = x0 - M0
    Phi, *_ = np.linalg.lstsq(X0, traj.x[-1] - gs.mean[-1], rcond=None)
    assert np.max(np.abs(X0 @ Phi - (traj.x[-1] - gs.mean[-1]))) <= 1e-9
    np.testing.assert_allclose(Phi.T @ S0 @ Phi, gs.cov[-1], atol=1e-9)
    assert gs.blowup_time is None


def test_softmax_closed_form_and_blowup():
    """V = I: Σ(t) = (Σ_0⁻¹ − (A + Aᵀ)t)⁻¹, blowing up at t* = 1/λ_max(Σ_0^{1/2}(A + Aᵀ)Σ_0^{1/2})."""
    Q = np.array([[1.0, 0.2], [0.0, 0.5]])
    model = Softmax(Q=Q)
    A = Q  # K = I
    S = np.linalg.cholesky(S0)
    t_star = 1.0 / np.max(np.linalg.eigvalsh(S.T @ (A + A.T) @ S))
    t = np.linspace(0, 0.9 * t_star, 5)
    gs = G.solve_gaussian(model, M0, S0, t)
    for tk, C in zip(t, gs.cov):
        np.testing.assert_allclose(C, np.linalg.inv(np.linalg.inv(S0) - (A + A.T) * tk), rtol=1e-9)
    late = G.solve_gaussian(model, M0, S0, [0.0, 2 * t_star])
    assert late.blowup_time is not None and abs(late.blowup_time - t_star) < 1e-3 * t_star


def test_masked_reduces_to_softmax_when_all_positions_equal(rng):
    Q, K, V = matrices(2)
    x = rng.normal(size=(20, 2))
    w = rng.dirichlet(np.ones(20))
    xt = np.concatenate([np.full((20, 1), 0.4), x], axis=1)
    np.testing.assert_allclose(Masked(Q, K, V).field(xt, w, xt)[:, 1:], Softmax(Q, K, V).field(x, w, x), atol=1e-15)
    # causal: a query at s only sees points with τ <= s
    tau = np.linspace(0, 1, 20)[:, None]
    xs = np.concatenate([tau, x], axis=1)
    out = Masked(Q, K, V).field(xs, w, xs)
    first = Softmax(Q, K, V).field(x[:1], w[:1] / w[0], x[:1])
    np.testing.assert_allclose(out[0, 1:], first[0], atol=1e-15)
    assert np.all(out[:, 0] == 0)


def test_sinkhorn_coupling_has_both_marginals(rng):
    Q, K, V = matrices(3)
    x = rng.normal(size=(25, 2))
    w = rng.dirichlet(np.ones(25))
    sk = Sinkhorn(Q, K, V)
    g = sk.potentials(x, w)
    S = (x @ sk.A(2).T) @ x.T
    P = np.exp(S + g[None, :])
    P = P / (P @ w)[:, None]  # normalise rows against μ (the x-scaling f)
    np.testing.assert_allclose(P @ w, 1.0, atol=1e-12)
    np.testing.assert_allclose(w @ P, 1.0, atol=1e-11)


@pytest.mark.parametrize("chunk", [None, 60])
def test_sinkhorn_potentials_by_blocks_of_rows_have_both_marginals(rng, monkeypatch, chunk):
    """The potentials' log-sum-exps form S by blocks of rows (never n × n at once): with blocks of 2 rows (a
    CHUNK of 60 entries against 25 points, the last block 1 row) and a batch of 3 systems, each coupling
    e^{S_ij + f_i + g_j} has both marginals against its μ. Tolerance: the iteration stops at marginal error
    tol = 1e-13 on the rows; the columns carry the row error plus n·ε-sized sums, 1e-11 as above."""
    import meanfield.models.base as base

    if chunk is not None:
        monkeypatch.setattr(base, "CHUNK", chunk)
        assert len(base.row_chunks(25, 25)) == 13  # the blocks are really used
    Q, K, V = matrices(3)
    x = rng.normal(size=(3, 25, 2))
    w = rng.dirichlet(np.ones(25), size=3)
    sk = Sinkhorn(Q, K, V)
    g = sk.potentials(x, w)
    assert g.shape == (3, 25)
    for b in range(3):
        S = (x[b] @ sk.A(2).T) @ x[b].T
        P = np.exp(S + g[b][None, :])
        P = P / (P @ w[b])[:, None]  # normalise rows against μ (the x-scaling f)
        np.testing.assert_allclose(P @ w[b], 1.0, atol=1e-12)
        np.testing.assert_allclose(w[b] @ P, 1.0, atol=1e-11)


def test_sigmoid_definition(rng):
    from scipy.special import expit

    Q, K, V = matrices(4)
    x = rng.normal(size=(6, 2))
    w = np.full(6, 1 / 6)
    expect = np.array([sum(w[j] * expit((K.T @ Q @ xi) @ x[j] + 0.3) * (V @ x[j]) for j in range(6)) for xi in x])
    np.testing.assert_allclose(Sigmoid(Q, K, V, b=0.3).field(x, w, x), expect, atol=1e-15)


def test_bad_input():
    with pytest.raises(ValueError, match="symmetric"):
        G.solve_gaussian(Softmax(), [0, 0], [[1, 0.5], [0, 1]], [0, 1])
    with pytest.raises(ValueError, match="positive definite"):
        G.solve_gaussian(Softmax(), [0, 0], [[1, 0], [0, 0]], [0, 1])
    with pytest.raises(ValueError, match="non-finite"):
        Softmax().field(np.array([[np.nan, 0.0]]), np.ones(1), np.zeros((1, 2)))
    with pytest.raises(TypeError, match="closure"):
        G.affine_field(Sigmoid(), np.zeros(2), np.eye(2))
    with pytest.raises(ValueError, match="tau"):
        L2(tau=0.0)
    with pytest.raises(ValueError, match="tau"):
        Sinkhorn(tau=-1.0)
    with pytest.raises(ValueError, match="tol"):
        Sinkhorn(tol=0.0)
    with pytest.raises(ValueError, match="max_iter"):
        Sinkhorn(max_iter=0)
    with pytest.raises(ValueError, match="mix tokens of different domains"):
        from meanfield import SelfAttention

        MultiHeadAttention([SelfAttention(1.0), Softmax()])


@pytest.mark.parametrize("name", ["softmax", "l2", "sinkhorn", "sigmoid", "multihead"])
def test_support_radius_never_exceeds_its_bound(name, rng):
    from validation.stability import support_radius, support_radius_bound

    Q, K, V = matrices(5, scale=1.0)
    model = {"softmax": Softmax(Q, K, V), "l2": L2(Q, K, V), "sinkhorn": Sinkhorn(Q, K, V), "sigmoid": Sigmoid(Q, K, V),
             "multihead": MultiHeadAttention([Softmax(Q, K, V), L2(K, Q, V.T)])}[name]
    x0 = rng.uniform(-1, 1, size=(40, 2))
    t = np.linspace(0, 2, 21)
    traj = pt.simulate(model, x0, t, dt=0.01)
    R = support_radius(traj.x)
    assert np.all(R <= support_radius_bound(model, t, R[0]) * (1 + 1e-12))


def test_rescaled_frame_undoes_the_linear_part():
    """With a field V x (all tokens equal), x(t) = e^{tV} x_0, so z(t) = x_0 exactly."""
    V = np.array([[0.3, 1.0], [-0.5, 0.2]])
    x0 = np.array([[0.4, -0.7]])
    t = np.linspace(0, 2, 5)
    traj = pt.simulate(Softmax(V=V), x0, t, method="dop853", rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(pt.rescaled(t, traj.x, V), np.broadcast_to(x0, (5, 1, 2)), atol=1e-9)


def test_gaussian_study_script(tmp_path):
    from scripts.gaussian_study import main

    main(["--d", "3", "--draws", "12", "--t-max", "3", "--output", str(tmp_path)])
    data = np.load(tmp_path / "gaussian_study.npz")
    assert data["ranks"].shape == (12,) and np.all((1 <= data["ranks"]) & (data["ranks"] <= 3))
    assert (tmp_path / "gaussian_study.png").stat().st_size > 10_000


def test_rescaled_particle_plot():
    import matplotlib

    matplotlib.use("Agg")
    from meanfield.plotting import plot_particles_2d

    V = np.array([[1.0, 0.0], [0.0, 0.5]])
    t = np.linspace(0, 1, 6)
    x = pt.simulate(Softmax(V=V), np.random.default_rng(0).normal(size=(10, 2)), t).x
    ax = plot_particles_2d(t, x, V=V)
    # the plotted final points are the rescaled ones
    np.testing.assert_allclose(ax.collections[-1].get_offsets(), pt.rescaled(t, x, V)[-1])
