"""Hardmax attention, β = ∞ (docs/MATH.md §11; Alcalde, Fantuzzi & Zuazua 2024).

Asserted: the cells of a regular polygon's tokens in closed form — the vertices are leaders fixed by the map, each
interior token reaches its cell's vertex with ratio (1 − γ)^k, and in continuous depth x_i(t) = e^t v + (x_i(0) − v);
ties share equally; on the circle with B = diag(1, 0) the flow tan(θ/2) = tan(θ_0/2)e^{−t} and the normalised map's
angle recursion; softmax trajectories at β = 10, 100, 1000 converging to hardmax — at the exponential rate e^{−βΔ}/β
set by the smallest score gap Δ where no tokens merge, at β^{−1/2} where they cluster; bad input named.
"""

import numpy as np
import pytest

import meanfield as mf
import particles as pt
from meanfield.models import Hardmax, SelfAttention, Softmax
from tests.helpers import EPS


def polygon(m=5, rng=None):
    """A regular m-gon's vertices and, in each cell k (the cone of directions within π/m of vertex k), one interior
    token at radius 0.3-0.6 and angle offset within 0.7π/m; returns (tokens, vertex of each interior token)."""
    rng = np.random.default_rng(4) if rng is None else rng
    ang = 2 * np.pi * np.arange(m) / m
    vertices = np.stack([np.cos(ang), np.sin(ang)], -1)
    phi = ang + rng.uniform(-0.7, 0.7, m) * np.pi / m
    rad = rng.uniform(0.3, 0.6, m)
    inner = np.stack([rad * np.cos(phi), rad * np.sin(phi)], -1)
    return np.concatenate([vertices, inner]), vertices


def test_leaders_stay_and_interior_tokens_reach_their_vertex_at_ratio_one_minus_gamma():
    """Pentagon, B = I (positive semidefinite): vertices fixed exactly by AFZ's map; |x_i^k − v| = (1 − γ)^k |x_i^0 − v|
    for every interior token and k <= 12, to round-off (1.6e-14 relative at k = 12, γ = 0.3)."""
    X, V = polygon()
    gamma, m = 0.3, len(V)
    tr = pt.discrete_depth(Hardmax(manifold="euclidean"), X, gamma, 12)
    assert np.array_equal(tr.x[:, :m], np.broadcast_to(V, tr.x[:, :m].shape))
    d0 = np.linalg.norm(X[m:] - V, axis=-1)
    dk = np.linalg.norm(tr.x[:, m:] - V, axis=-1)
    ratio = (1 - gamma) ** np.arange(13)[:, None]
    # each map x + γ(v − x) rounds at the scale of |v|, so the distance's relative error grows like
    # |v|/|x_k − v| = 1/((1 − γ)^k d_0): 72 EPS at k = 12 measured
    assert np.max(np.abs(dk / d0 - ratio) / ratio) <= 1e-12
    # straight to the vertex: x_i^k − v stays parallel to x_i^0 − v
    a, b = tr.x[:, m:] - V, X[m:] - V
    cross = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    assert np.max(np.abs(cross)) <= 1e-15


def test_continuous_depth_in_the_plane_is_exact():
    """ẋ_i = mean_{C_i} x_j in R² (V = I): leaders grow as e^t v, interior tokens x_i(t) = e^t v + (x_i(0) − v)
    (their cells are kept: the score gaps grow); RK4 and DOP853 both to 1e-9."""
    X, V = polygon()
    m, t = len(V), np.linspace(0, 2, 5)
    exact = np.exp(t)[:, None, None] * np.concatenate([V, V])[None] + np.concatenate([0 * V, X[m:] - V])[None]
    for method, opts in (("rk4", {"dt": 0.002}), ("dop853", {"rtol": 1e-12, "atol": 1e-12})):
        tr = pt.simulate(Hardmax(manifold="euclidean"), X, t, method=method, **opts)
        assert tr.strategy == "quadrature"
        assert np.max(np.abs(tr.x - exact)) <= 1e-9, method


def test_ties_share_equally():
    """A token on the bisector of two vertices attends to both (its step goes to their midpoint); the centre of the
    polygon ties with every token (the mean of all); weights share a tie by weight."""
    X, V = polygon(4)
    bisector = 0.5 * np.array([np.cos(np.pi / 4), np.sin(np.pi / 4)])  # between vertices (1, 0) and (0, 1)
    tokens = np.concatenate([V, [bisector, [0.0, 0.0]]])
    hm = Hardmax(manifold="euclidean")
    w = np.full(len(tokens), 1 / len(tokens))
    u = hm.average(tokens, w, tokens)
    assert np.max(np.abs(u[4] - 0.5 * (V[0] + V[1]))) <= 16 * EPS  # averages of O(1) points: ulps
    assert np.max(np.abs(u[5] - tokens.mean(axis=0))) <= 16 * EPS
    w2 = w.copy()
    w2[1] *= 3  # vertex (0, 1) weighs three times (1, 0) in the tie
    assert np.max(np.abs(hm.average(tokens, w2, tokens)[4] - 0.25 * V[0] - 0.75 * V[1])) <= 16 * EPS
    assert np.allclose(hm.cells(tokens, w, tokens).sum(axis=-1), 1.0, rtol=0, atol=16 * EPS)  # ulps of 1


def test_general_matrices_against_the_definition(rng):
    """General Q, K, V in R³ and on S², weighted tokens: u_i = V Σ_{j∈C_i} w_j x_j / Σ_{j∈C_i} w_j with C_i the argmax
    of ⟨Qx_i, Kx_j⟩, written out; the sphere's field its tangent part."""
    d, n = 3, 15
    Q, K, V = (rng.standard_normal((d, d)) for _ in range(3))
    w = rng.uniform(0.5, 1.5, n)
    for manifold in ("euclidean", "sphere"):
        x = rng.standard_normal((n, d))
        if manifold == "sphere":
            x /= np.linalg.norm(x, axis=1, keepdims=True)
        u = np.array([V @ x[np.argmax([(Q @ xi) @ (K @ xj) for xj in x])] for xi in x])  # no ties here (generic)
        X = Hardmax(Q, K, V, manifold).field(x, w, x)
        expected = u if manifold == "euclidean" else u - np.sum(x * u, axis=1, keepdims=True) * x
        assert np.max(np.abs(X - expected)) <= 1e-13, manifold


def circle_tokens():
    th = np.array([0.0, 0.3, -0.5, 0.9, 1.2, np.pi, 2.5, -2.2, 2.0])
    return th, np.stack([np.cos(th), np.sin(th)], -1)


def test_two_leaders_on_the_circle():
    """S¹ with K = diag(1, 0): scores x_{i,1}x_{j,1}, so the tokens of x_1 > 0 follow the leader (1, 0) and the others
    (−1, 0). Continuous: θ̇ = −sin θ about the leader, tan(θ/2) = tan(θ_0/2)e^{−t} (1e-10). AFZ's normalised map
    N(x + γ(v − x)): the angle to the leader obeys tan θ' = (1 − γ) sin θ / ((1 − γ) cos θ + γ) (1e-14)."""
    th, X = circle_tokens()
    hm = Hardmax(K=np.diag([1.0, 0.0]))
    psi = np.where(np.cos(th) > 0, th, np.angle(-np.exp(1j * th)))  # the angle from each token's leader
    lead = np.where(np.cos(th) > 0, 0.0, np.pi)
    t = np.array([0.0, 1.0, 3.0])
    tr = pt.simulate(hm, X, t, method="dop853", rtol=1e-12, atol=1e-13)
    psi_t = 2 * np.arctan(np.tan(psi / 2)[None] * np.exp(-t)[:, None])
    got = np.angle(np.exp(1j * (np.arctan2(tr.x[..., 1], tr.x[..., 0]) - lead)))
    assert np.max(np.abs(got - psi_t)) <= 1e-10
    gamma = 0.4
    layers = pt.discrete_depth(hm, X, gamma, 6)
    a = psi.copy()
    for k in range(1, 7):
        a = np.arctan2((1 - gamma) * np.sin(a), (1 - gamma) * np.cos(a) + gamma)
        got = np.angle(np.exp(1j * (np.arctan2(layers.x[k, :, 1], layers.x[k, :, 0]) - lead)))
        assert np.max(np.abs(got - a)) <= 1e-14


def test_softmax_converges_to_hardmax_at_the_rate_of_the_smallest_gap():
    """R², the pentagon, T = 1 (no two tokens merge: the score gaps only grow): max |x^β(T) − x^∞(T)| is 1e-2 or more
    at β = 10 and at round-off at β = 1000; in between it falls like e^{−βΔ}/β with Δ = min_i (largest − second
    largest score of token i) at t = 0, the gap the softmax weights e^{−β·gap} resolve first: the measured rate
    −d log(β·err)/dβ between β = 100 and 200 is Δ to 3%."""
    X, _ = polygon()
    G = X @ X.T
    top2 = np.sort(G, axis=1)[:, -2:]
    gap = float(np.min(top2[:, 1] - top2[:, 0]))
    ref = pt.simulate(Hardmax(manifold="euclidean"), X, [0, 1.0], method="dop853", rtol=1e-13, atol=1e-14).x[-1]

    def err(beta):
        s = pt.simulate(Softmax(Q=beta * np.eye(2)), X, [0, 1.0], method="dop853", rtol=1e-13, atol=1e-14).x[-1]
        return float(np.max(np.abs(s - ref)))

    e10, e100, e200, e1000 = (err(b) for b in (10.0, 100.0, 200.0, 1000.0))
    assert e10 >= 1e-2 and e1000 <= 1e-13 and e10 > e100 > e200 > e1000
    rate = -(np.log(200 * e200) - np.log(100 * e100)) / 100
    assert abs(rate / gap - 1) <= 0.03, (rate, gap)


def test_softmax_converges_to_hardmax_as_beta_to_the_minus_half_where_tokens_cluster():
    """The two leaders of the circle, T = 10: hardmax tokens approach their leader like e^{−t} and never reach it,
    while softmax stops telling the leader from tokens within β^{−1/2} of it (β(1 − cos θ) ~ 1) and the cluster then
    contracts onto its own mean: max |x^β(T) − x^∞(T)| ~ β^{−1/2}, measured slope in log-log over β = 10, 100, 1000,
    10 000 within 0.02 of −½ on the last two decades."""
    _, X = circle_tokens()
    K = np.diag([1.0, 0.0])
    ref = pt.simulate(Hardmax(K=K), X, [0, 10.0], method="dop853", rtol=1e-12, atol=1e-13).x[-1]
    betas = np.array([10.0, 100.0, 1000.0, 10000.0])
    errs = np.array([np.max(np.linalg.norm(pt.simulate(SelfAttention(b, K=K), X, [0, 10.0], method="dop853",
                                                         rtol=1e-12, atol=1e-13).x[-1] - ref, axis=-1))
                     for b in betas])
    slopes = np.diff(np.log(errs)) / np.diff(np.log(betas))
    assert np.all(np.diff(errs) < 0) and np.all(np.abs(slopes[1:] + 0.5) <= 0.02), (errs, slopes)


def test_bad_input():
    X, _ = polygon()
    hm = Hardmax(manifold="euclidean")
    with pytest.raises(ValueError, match=r"`gamma`.*\(0, 1\]"):
        pt.discrete_depth(hm, X, 1.5, 2)
    with pytest.raises(ValueError, match="pass 'auto'"):
        pt.discrete_depth(hm, X, 0.5, 2, projection="none")
    with pytest.raises(ValueError, match="`manifold` must be one of"):
        Hardmax(manifold="torus")
    with pytest.raises(ValueError, match="`tie_tol`"):
        Hardmax(tie_tol=-1.0)
    with pytest.raises(ValueError, match="no density solver"):
        grid = mf.CircleGrid(16)
        mf.solve(Hardmax(), mf.Density(grid, np.full(grid.angles.shape, 1 / (2 * np.pi))), (0, 0.1))
    with pytest.raises(ValueError, match="does not apply"):
        pt.simulate(hm, X, [0, 1], strategy="pairwise")
    with pytest.raises(ValueError, match="no divergence"):
        hm.field_and_divergence(X, np.full(len(X), 0.1), X)
