"""Discrete depth: the layer map x ↦ N(x + h X[μ](x)) against the continuous flow (docs/MATH.md §8.3).

Asserted: the tokens after T/h layers differ from the continuous-depth solution by h e(T) + O(h²), e the solution
of ė = DF e − ½ P ÿ written out here (the global error's leading term); first order in R^d without normalisation;
the Lagrangian measure's pushes (points and log-density) converge at first order to the continuous Lagrangian
solution; the push's log-Jacobian against central differences of the map; a Lie-split layer is GLPR (2.8)'s
composition of two normalised maps; a schedule's layer k has layer k's weights; bad input.
"""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import meanfield as mf
import particles
from meanfield.solvers import depth
from meanfield.lagrangian import start
from meanfield.models import FeedForward, SelfAttention, Softmax, Transformer, layers
from tests.helpers import EPS


def _model(d, rng, beta=2.0):
    ff = FeedForward(0.5 * rng.standard_normal((d, 4)), rng.standard_normal((4, d)), 0.3 * rng.standard_normal(4),
                     "tanh")
    return SelfAttention(beta) + ff


def test_first_order_with_the_derived_constant():
    """16 tokens on S² (attention + feed-forward), T = 1: (x_K − x(T))/h → e(T) with an O(h) remainder, e from the
    variational equation with source −½ P ÿ (ÿ = DF·F by central differences of the tokens' velocity F)."""
    rng = np.random.default_rng(0)
    d, n, T = 3, 16, 1.0
    model = _model(d, rng)
    x0 = particles.uniform_sphere(n, d, rng=np.random.default_rng(1))
    w = np.full(n, 1 / n)

    def F(y):
        x = y.reshape(n, d)
        x = x / np.linalg.norm(x, axis=1, keepdims=True)
        return model.field(x, w, x).ravel()

    def DF(y, v, eps=1e-6):
        return (F(y + eps * v) - F(y - eps * v)) / (2 * eps)

    def tangential(y, v):
        x, v = y.reshape(n, d), v.reshape(n, d)
        return (v - np.sum(v * x, axis=1, keepdims=True) * x).ravel()

    def rhs(_, z):
        y, e = z[: n * d], z[n * d:]
        f = F(y)
        return np.concatenate([f, DF(y, e) - 0.5 * tangential(y, DF(y, f))])

    sol = solve_ivp(rhs, (0, T), np.concatenate([x0.ravel(), np.zeros(n * d)]), method="DOP853", rtol=1e-11,
                    atol=1e-12)
    xT, e = sol.y[: n * d, -1].reshape(n, d), sol.y[n * d:, -1].reshape(n, d)
    remainders = []
    for K in (32, 64, 128):
        h = T / K
        xK = particles.discrete_depth(model, x0, h, K).x[-1]
        remainders.append(np.max(np.abs((xK - xT) / h - e)))
        assert np.max(np.abs(xK - xT)) >= 0.5 * h * np.max(np.abs(e))  # the leading term is there
    ratios = np.array(remainders[:-1]) / np.array(remainders[1:])
    assert np.all(np.abs(ratios - 2) <= 0.1), (remainders, ratios)


def test_first_order_in_the_plane_without_normalisation(rng):
    """R² softmax with the residual stream alone (normalization 'none'): first order against the ODE."""
    model = Softmax(Q=np.array([[0.5, 0.2], [-0.1, 0.3]]), V=np.array([[-1.0, 0.3], [0.0, -0.8]]))
    x0 = rng.standard_normal((20, 2))
    ref = particles.simulate(model, x0, [0, 1.0], method="dop853", rtol=1e-12, atol=1e-13).x[-1]
    err = [np.max(np.abs(particles.discrete_depth(model, x0, 1 / K, K).x[-1] - ref)) for K in (20, 40, 80)]
    assert np.all(np.abs(np.log2(np.array(err[:-1]) / np.array(err[1:])) - 1) <= 0.1), err
    rms = particles.discrete_depth(model, x0, 0.1, 3, projection="rms").x
    assert np.allclose(np.linalg.norm(rms[1:], axis=-1), np.sqrt(2), rtol=0, atol=1e-14)


def test_causal_layer_map_is_first_order_and_keeps_the_first_token(rng):
    """Causal SA on [0, 1] × S²: the layer map moves x by the masked field and normalises it, positions carried;
    first order against the continuous flow, the first token (s = 0) fixed to round-off in every layer."""
    model = mf.SelfAttention(2.0, causal=True)
    x = rng.standard_normal((12, 3))
    x0 = np.hstack([np.linspace(0, 1, 12)[:, None], x / np.linalg.norm(x, axis=1, keepdims=True)])
    ref = particles.simulate(model, x0, [0, 1.0], method="dop853", rtol=1e-12, atol=1e-13).x[-1]
    runs = [particles.discrete_depth(model, x0, 1 / K, K).x for K in (20, 40, 80)]
    err = [np.max(np.abs(r[-1] - ref)) for r in runs]
    assert np.all(np.abs(np.log2(np.array(err[:-1]) / np.array(err[1:])) - 1) <= 0.1), err
    for r in runs:
        assert np.max(np.abs(r[:, 0] - x0[0])) <= 1e-15 and np.array_equal(r[:, :, 0], np.broadcast_to(x0[:, 0], r.shape[:2]))
        assert np.allclose(np.linalg.norm(r[:, :, 1:], axis=-1), 1, rtol=0, atol=1e-14)


@pytest.mark.parametrize("domain", ["circle", "sphere"])
def test_pushed_lagrangian_measure_converges_at_first_order(domain):
    """The Lagrangian measure pushed through T/h layers (log ρ by the map's Jacobian) against the continuous
    Lagrangian solution: points and log-density errors halve with h."""
    rng = np.random.default_rng(3)
    grid, d = (mf.CircleGrid(64), 2) if domain == "circle" else (mf.SphereGrid(12), 3)
    model = _model(d, rng, 1.5)
    m0 = start(mf.Density.from_function(grid, lambda x: 1 + 0.5 * x[..., 0]))
    T = 0.5
    ref = mf.solve(model, m0, (0, T), t_eval=[T], rtol=1e-12, atol=1e-14).densities[-1]
    errors = []
    for K in (16, 32, 64):
        f = depth.push(model, m0, T / K, K)[-1]
        errors.append([np.max(np.abs(f.points - ref.points)), np.max(np.abs(f.log_density - ref.log_density))])
        assert abs(f.t - T) <= 1e-14
    rates = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(np.abs(rates - 1) <= 0.1), (errors, rates)


def test_push_jacobian_against_central_differences(rng):
    """log |det DT| of the layer map at fixed μ (attention + feed-forward on S²) against the tangent Jacobian of
    central differences of T (in orthonormal tangent bases), to 1e-8."""
    d, h = 3, 0.3
    model = _model(d, rng)
    pts = particles.uniform_sphere(40, d, rng=rng)
    w = np.full(40, 1 / 40)
    q = particles.uniform_sphere(5, d, rng=rng)

    def T_of(x):  # the layer map at fixed μ = Σ w δ_pts, extended 0-homogeneously
        x = x[None] / np.linalg.norm(x)
        y = x + h * model.field(pts, w, x)
        return (y / np.linalg.norm(y))[0]

    X = np.vstack([pts, q])
    W = np.concatenate([w, np.zeros(5)])  # zero-weight queries: the measure stays μ
    _, logdet = depth.layer_map(model, X, W, h, jacobian=True)
    for i, x in enumerate(q):
        eps = 1e-6
        J = np.column_stack([(T_of(x + eps * e) - T_of(x - eps * e)) / (2 * eps) for e in np.eye(d)])
        Ex = np.linalg.qr(np.column_stack([x, np.eye(d)]))[0][:, 1:]
        Tx = T_of(x)
        Ey = np.linalg.qr(np.column_stack([Tx, np.eye(d)]))[0][:, 1:]
        assert abs(np.linalg.slogdet(Ey.T @ J @ Ex)[1] - logdet[40 + i]) <= 1e-8


def test_lie_layer_is_the_composition_of_two_normalised_maps(rng):
    """GLPR (2.8): a Lie-split layer of depth h is N(· + h FF) ∘ N(· + h Att[μ]), μ the layer's input."""
    att = SelfAttention(2.0)
    ff = FeedForward(0.5 * rng.standard_normal((3, 4)), rng.standard_normal((4, 3)), activation="gelu")
    x0 = particles.uniform_sphere(30, 3, rng=rng)
    h, w = 0.1, np.full(30, 1 / 30)
    x = particles.discrete_depth(Transformer(att, ff, "lie", depth=h), x0, h, 2).x
    manual = x0
    for _ in range(2):
        y = manual + h * att.field(manual, w, manual)
        y /= np.linalg.norm(y, axis=1, keepdims=True)
        z = y + h * ff.velocity(y)
        manual = z / np.linalg.norm(z, axis=1, keepdims=True)
    assert np.max(np.abs(x[-1] - manual)) <= 16 * EPS  # the same operations in another order: ulps (1.5 EPS seen)


def test_schedule_layers_are_the_layers_weights(rng):
    V = [np.eye(3), -0.5 * np.eye(3), 2.0 * np.eye(3)]
    model = SelfAttention(1.0, V=layers(V, 0.2))
    x0 = particles.uniform_sphere(10, 3, rng=rng)
    x = particles.discrete_depth(model, x0, 0.2, 3).x
    manual, w = x0, np.full(10, 0.1)
    for Vk in V:
        y = manual + 0.2 * SelfAttention(1.0, V=Vk).field(manual, w, manual)
        manual = y / np.linalg.norm(y, axis=1, keepdims=True)
    assert np.max(np.abs(x[-1] - manual)) <= 16 * EPS  # the same operations in another order: ulps (EPS/2 seen)


def test_bad_input(rng):
    x0 = particles.uniform_sphere(5, 3, rng=rng)
    with pytest.raises(ValueError, match="projection"):
        particles.discrete_depth(SelfAttention(1.0), x0, 0.1, 2, projection="rms")
    with pytest.raises(ValueError, match="projection"):
        particles.discrete_depth(SelfAttention(1.0), x0, 0.1, 2, projection="layer")
    for run in (lambda: particles.discrete_depth(SelfAttention(1.0), x0, 0.1, 2, normalization="sphere"),
                lambda: depth.layer_map(SelfAttention(1.0), x0, np.full(5, 0.2), 0.1, normalization="sphere")):
        with pytest.raises(TypeError, match=r"`normalization=` is now `projection=`"):  # the old keyword, renamed
            run()
    with pytest.raises(ValueError, match="depth"):
        particles.discrete_depth(SelfAttention(1.0), x0, 0.0, 2)
    with pytest.raises(ValueError, match="layers"):
        particles.discrete_depth(SelfAttention(1.0), x0, 0.1, 2.5)
    with pytest.raises(ValueError, match="noise"):
        particles.discrete_depth(SelfAttention(1.0, noise=0.1), x0, 0.1, 2)
    with pytest.raises(TypeError, match="LagrangianMeasure"):
        depth.push(SelfAttention(1.0), x0, 0.1, 2)
