"""The layer map at chosen tokens (``at=``) and with sparse keys (meanfield.core.tokens; MATH.md §13): the same
layer as the dense one over all tokens, to round-off; β_n resolved with all n keys; the dense path as written, bit
for bit; what sparse keys cannot do refused with the reason."""

import numpy as np
import pytest
from scipy import sparse

import particles
from meanfield.analysis import exact
from meanfield.models import ContextScaling, Normalization, SelfAttention, Softmax, Transformer
from meanfield.models.normalization import NGPT, average
from meanfield.solvers.depth import layer_map
from tests.helpers import EPS
from validation import long_context as lc

#: (γ, ρ) of the three regimes a = γ(1 − ρ) = 0.8 < 1, = 1, 1.5 > 1 (limits 1, 4ρ/(1 + 3ρ), ρ)
REGIMES = ((1.6, 0.5), (2.0, 0.5), (3.0, 0.5))


def _ngpt(beta):
    return Transformer(SelfAttention(beta), normalization=Normalization("ngpt", alpha=1.0))


@pytest.mark.parametrize("n", [50, 200, 500])
@pytest.mark.parametrize("gamma, rho", REGIMES)
def test_sparse_keys_at_queries_equal_the_dense_layer_map(n, gamma, rho):
    """θ' = N(A(θ)) at five tokens from the sparse equiangular tokens (one_layer_at's route: layer_map with sparse
    keys and ``at``) against every token through particles.discrete_depth (dense, all n² pairs). Error model: A's
    0-th coordinate and its normaliser sum n positive terms in a different order in the two (a sparse product, BLAS),
    each within (n − 1)u relative (Higham §4.2, u = EPS/2), the other coordinates one term; N(·) and the inner
    products add O(10) u: |Δ| <= (2n + 20) EPS."""
    at = np.array([0, 1, n // 3, n // 2, n - 1])
    dense = particles.discrete_depth(lc.one_layer_model(gamma), lc.equiangular_tokens(n, rho), depth=1.0,
                                     layers=1).x[-1]
    out = layer_map(lc.one_layer_model(gamma), lc.equiangular_tokens(n, rho, sparse=True), np.full(n, 1.0 / n), 1.0,
                    at=at)
    bound = (2 * n + 20) * EPS
    assert out.shape == (len(at), n + 1)
    assert np.max(np.abs(out - dense[at])) < bound
    G, Gd = out @ out.T, dense[at] @ dense[at].T
    assert np.max(np.abs(G - Gd)) < bound
    assert np.max(np.abs(G[np.triu_indices(len(at), 1)] - exact.one_layer_equiangular(n, gamma, rho))) < bound


def test_beta_n_is_resolved_with_all_the_keys():
    """β_n = γ log n takes n = the number of keys (300), not of queries (2): the sparse layer at two tokens equals
    the layer of the fixed β = γ log 300 (dense, all tokens) to round-off ((2n + 20) EPS, as above) and differs from
    β = γ log 2's by far more."""
    n, gamma, rho = 300, 2.0, 0.5
    x, w = lc.equiangular_tokens(n, rho), np.full(n, 1.0 / n)
    out = layer_map(_ngpt(ContextScaling.log(gamma)), sparse.csr_array(x), w, 1.0, at=[0, 1])
    right = layer_map(_ngpt(gamma * np.log(n)), x, w, 1.0)[:2]
    wrong = layer_map(_ngpt(gamma * np.log(2)), x, w, 1.0)[:2]
    assert np.max(np.abs(out - right)) < (2 * n + 20) * EPS
    assert np.max(np.abs(out - wrong)) > 1e-2
    assert abs(out[0] @ out[1] - exact.one_layer_equiangular(n, gamma, rho)) < (2 * n + 20) * EPS


def _sa_average_as_written(beta, theta, w):
    """SelfAttention.average of Q = K = V = I as it was written before sparse keys (np.swapaxes; one chunk)."""
    s = beta * (theta @ np.swapaxes(theta, -1, -2))
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    return (e @ (w[:, None] * theta)) / (e @ w[:, None])


def test_dense_path_is_its_formula_bit_for_bit():
    """Dense tokens without ``at`` take the dense expression unchanged: nGPT's layer N(θ + hα(N(A) − θ)) from the
    softmax average written out is the layer map's output bit for bit. ``at`` = every index: the same to round-off
    only (100 EPS: θθᵀ of one array is NumPy's symmetric product, θ_q θᵀ of a copy a general one)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((60, 5))
    w = rng.random(60)
    w /= w.sum()
    model, beta, h = Transformer(SelfAttention(2.5), normalization=Normalization("ngpt", alpha=0.7)), 2.5, 0.3
    theta = x / np.linalg.norm(x, axis=-1, keepdims=True)
    ref = NGPT(alpha=0.7).layer(x, _sa_average_as_written(beta, theta, w), h)
    out = layer_map(model, x, w, h)
    assert np.array_equal(out, ref)
    assert np.max(np.abs(layer_map(model, x, w, h, at=np.arange(60)) - out)) < 100 * EPS


@pytest.mark.parametrize("case", ["post", "post-jacobian", "pre", "causal", "hardmax"])
def test_at_is_the_layer_at_those_tokens(case):
    """``at`` evaluates the layer of all the tokens at some of them: equal to the rows of the whole layer (and of
    its log-Jacobians) to round-off (row blocks of a product may differ in the last bits: 100 EPS)."""
    from meanfield.models import Hardmax

    rng = np.random.default_rng(1)
    n, d = 40, 3
    x = rng.standard_normal((n, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    w = np.full(n, 1.0 / n)
    kw = {}
    if case in ("post", "post-jacobian"):
        model = SelfAttention(3.0, Q=np.diag([1.0, 0.5, 2.0]))
        kw = {"jacobian": case == "post-jacobian"}
    elif case == "pre":
        model = Transformer(SelfAttention(3.0), normalization="pre")
        x = x * rng.uniform(0.5, 2.0, (n, 1))
    elif case == "causal":
        model = SelfAttention(3.0, causal=True)
        x = np.concatenate([np.linspace(0, 1, n)[:, None], x], axis=1)
    else:
        model = Hardmax()
    at = np.array([n - 1, 0, 7, 7])
    whole = layer_map(model, x, w, 0.2, **kw)
    some = layer_map(model, x, w, 0.2, at=at, **kw)
    if kw.get("jacobian"):
        assert np.max(np.abs(some[1] - whole[1][at])) < 100 * EPS
        whole, some = whole[0], some[0]
    assert some.shape == (len(at), x.shape[1])
    assert np.max(np.abs(some - whole[at])) < 100 * EPS


def test_particles_at_1e5_equal_the_finite_n_formula():
    """n = 10⁵ equiangular tokens (d = 10⁵ + 1: 80 GB dense) through the layer map at three tokens, sparse: the
    three inner products equal the exact finite-n formula. Error model (lc.one_layer_at): the softmax sums of n
    terms, (n − 1)u each, moving ρ' by at most ~2nu: bound 2n EPS = 4.4e-11 (observed ~1e-12: round-off, not a
    mistake of the layer, which would be ~|ρ'_n − lim| >= 3e-6 here)."""
    n = 10 ** 5
    for gamma, rho in REGIMES:
        g = lc.one_layer_at(n, gamma, rho)
        assert g["pairs"].shape == (3,)
        assert np.max(np.abs(g["pairs"] - exact.one_layer_equiangular(n, gamma, rho))) < 2 * n * EPS


@pytest.mark.slow
def test_particles_at_1e6_equal_the_finite_n_formula():
    """As above at n = 10⁶ (about a second and 0.3 GB a regime): bound 2n EPS = 4.4e-10."""
    n = 10 ** 6
    for gamma, rho in REGIMES:
        g = lc.one_layer_at(n, gamma, rho)
        assert np.max(np.abs(g["pairs"] - exact.one_layer_equiangular(n, gamma, rho))) < 2 * n * EPS


def test_what_sparse_keys_cannot_do_is_refused_with_why():
    n = 20
    x, w = lc.equiangular_tokens(n, 0.5, sparse=True), np.full(n, 1.0 / n)
    with pytest.raises(ValueError, match="sparse.*Q, K given as d×d matrices"):
        layer_map(Transformer(SelfAttention(2.0, Q=np.eye(n + 1), K=2 * np.eye(n + 1)), normalization="pre"), x, w,
                  0.5, at=[0])
    with pytest.raises(ValueError, match="sparse.*post-LN"):  # post-LN's layer sums the model's field
        layer_map(SelfAttention(2.0), x, w, 0.5, at=[0])
    with pytest.raises(ValueError, match="sparse.*Jacobian"):
        layer_map(_ngpt(2.0), x, w, 0.5, at=[0], jacobian=True)
    with pytest.raises(ValueError, match="dense points only"):  # a kind that does not say it takes sparse keys
        average(Softmax(Q=[[1.0]]), x, w, x[[0]].toarray())
    with pytest.raises(ValueError, match="`x0` is a sparse.*layer_map"):  # the particles carry dense rows
        particles.discrete_depth(_ngpt(2.0), x, 1.0, 1)
    for bad in ([n], [-1], [0.5], [], [[0, 1]]):
        with pytest.raises(ValueError, match="`at`"):
            layer_map(_ngpt(2.0), x, w, 0.5, at=bad)


def test_one_layer_table_rows_from_particles_to_their_limit():
    """The script's table: rows up to ``particle_max`` from particles (within 2n EPS of the formula, as above), the
    rest from the formula; the distance to the limit 4ρ/(1 + 3ρ) at a = 1 falls like n^{-1}: the local rate between
    n = 10³ and 10⁴ within 1e-3 of 1 (the formula's own is 1 − O(1/n))."""
    rows = lc.one_layer_table([10 ** 3, 10 ** 4, 10 ** 5], 2.0, 0.5, particle_max=10 ** 4)
    assert [r["how"] for r in rows] == ["particles", "particles", "formula"]
    for r in rows[:2]:
        assert r["formula_gap"] < 2 * r["n"] * EPS and r["seconds"] > 0 and r["peak_bytes"] > 0
    assert rows[2]["value"] == rows[2]["formula"] and rows[2]["seconds"] is None
    local = np.log(rows[0]["error"] / rows[1]["error"]) / np.log(10.0)
    assert abs(local - 1.0) < 1e-3


def test_sparse_directions_are_the_dense_ones():
    """core.tokens.directions on a sparse array: x/|x| row by row as the dense expression, to round-off (a row's
    norm sums its few stored squares: a few EPS), and a row of zeros refused (no direction; dense gives NaN)."""
    from meanfield.core.tokens import directions

    a = sparse.random_array((40, 60), density=0.1, format="csr", rng=np.random.default_rng(5))
    a = sparse.csr_array(a + sparse.eye_array(40, 60))  # every row has an entry
    dense = a.toarray()
    assert np.max(np.abs(directions(a).toarray() - dense / np.linalg.norm(dense, axis=1, keepdims=True))) < 8 * EPS
    b = a.tolil()
    b[7, :] = 0.0
    with pytest.raises(ValueError, match="token 7 has \\|x\\| = 0"):
        directions(sparse.csr_array(b))


def test_sparse_tokens_with_an_entry_stored_twice_are_their_sum():
    """A CSR array built from (data, indices, indptr) may store an entry twice; it stands for the sum (scipy's
    toarray). |x|² is then (a + b)², not a² + b²: the sparse layer at two tokens equals the dense layer of
    x.toarray() to round-off ((2n + 20) EPS, as above; summing the stored squares one by one was off by ~1e-2 here),
    and the caller's array is left as it was."""
    from meanfield.core.tokens import directions

    data, cols = np.array([0.3, 0.3, 0.8, 1.0, 0.6, 0.8]), np.array([0, 0, 1, 2, 0, 3])
    x = sparse.csr_array((data, cols, np.array([0, 3, 4, 6])), shape=(3, 4))  # row 0: 0.3 + 0.3 at column 0
    dense = x.toarray()
    assert np.max(np.abs(directions(x).toarray() - dense / np.linalg.norm(dense, axis=1, keepdims=True))) < 8 * EPS
    w = np.full(3, 1.0 / 3)
    out = layer_map(lc.one_layer_model(2.0), x, w, 1.0, at=[0, 1])
    assert np.max(np.abs(out - layer_map(lc.one_layer_model(2.0), dense, w, 1.0)[:2])) < (2 * 3 + 20) * EPS
    assert np.array_equal(x.data, data) and np.array_equal(x.indices, cols)


def test_sparse_tokens_too_large_to_be_dense_queries_ask_for_at():
    """10⁵ equiangular tokens in d = 10⁵ + 1 (2·10⁵ non-zeros) without ``at`` would be taken as 10¹⁰ dense floats
    (80 GB): refused before any allocation, naming ``at``; with ``at`` the same call is O(n)."""
    n = 100_000
    x, w = lc.equiangular_tokens(n, 0.5, sparse=True), np.full(n, 1.0 / n)
    with pytest.raises(ValueError, match="80 GB.*pass `at`"):
        layer_map(lc.one_layer_model(2.0), x, w, 1.0)
    assert layer_map(lc.one_layer_model(2.0), x, w, 1.0, at=[0, 1]).shape == (2, n + 1)
