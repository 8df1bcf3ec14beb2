"""The kernel layer (meanfield.kernels) against the model's definition: fused pairwise sums, energy, circle spectral sums."""

import numpy as np
import pytest

import meanfield as mf
import particles as pt
from meanfield import kernels
from tests.helpers import EPS


# ------------------------------------------------------------------ kernels
@pytest.mark.parametrize("d", [2, 3, 5, 12])
@pytest.mark.parametrize("normalized", [True, False])
def test_pairwise_field_matches_model_field(rng, d, normalized):
    x, q = pt.uniform_sphere(150, d, rng=rng), pt.uniform_sphere(40, d, rng=rng)
    w = rng.uniform(0, 1, 150)
    w /= w.sum()
    model = mf.SelfAttention(2.5, *(rng.standard_normal((d, d)) for _ in range(3)), normalized=normalized)
    ref = model.field(x, w, q)
    assert np.max(np.abs(kernels.field(model, x, w, q) - ref)) <= 1e-13 * np.max(np.abs(ref))
    # equal weights take the kernel that multiplies by the weight once per row, not per pair
    u = np.full(150, 1 / 150)
    ref = model.field(x, u, q)
    assert np.max(np.abs(kernels.field(model, x, u, q) - ref)) <= 1e-13 * np.max(np.abs(ref))


@pytest.mark.parametrize("d", [9, 13])  # above UNROLL_MAX: the blocked kernel; 13: a coordinate past the 4-wide sweeps
def test_blocked_rows_across_key_blocks_match_the_model_field(rng, d):
    """The kernel for d > UNROLL_MAX sweeps blocks of queries over blocks of keys: n = 600 points cross two key-block
    boundaries (256 keys a block), m = 37 queries leave a partial query block, and causal rows stop inside, at and
    before key blocks (a query before every point: field 0). Error model: each of a row's n positive terms carries
    ~1 ulp from vexp and the blocked reassociation ≲ n u ≈ 1.3e-13 of Σ|terms| against NumPy's sum; the values are
    O(1) unit vectors, so 1e-12 of max |X| keeps a 10x margin. Identical bits for 1 and 2 threads."""
    import numba

    from meanfield.kernels import pairwise

    assert d > pairwise.UNROLL_MAX and 600 > 2 * pairwise._KEYS and 37 % pairwise._ROWS
    x, q = pt.uniform_sphere(600, d, rng=rng), pt.uniform_sphere(37, d, rng=rng)
    w = rng.uniform(0.5, 1.5, 600)
    w /= w.sum()
    for model in (mf.SelfAttention(3.0), mf.SelfAttention(1.5, *(rng.standard_normal((d, d)) for _ in range(3)),
                                                          normalized=False)):
        ref = model.field(x, w, q)
        assert np.max(np.abs(kernels.field(model, x, w, q) - ref)) <= 1e-12 * np.max(np.abs(ref))
    # causal rows: positions τ_j = j, query s_i anywhere in [−1, 600]: stops at 0, inside and at block edges
    model = mf.SelfAttention(3.0, causal=True)
    pts = np.concatenate([np.arange(600.0)[:, None], x], axis=1)
    s = np.concatenate([[-1.0, 255.0, 256.0, 511.0, 599.0], rng.uniform(0, 600, 32)])
    qs = np.concatenate([s[:, None], q], axis=1)
    ref = model.field(pts, w, qs)
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = kernels.field(model, pts, w, qs)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = kernels.field(model, pts, w, qs)
    finally:
        numba.set_num_threads(threads)
    assert np.array_equal(one, two)
    assert np.all(one[0] == 0.0)
    assert np.max(np.abs(one - ref)) <= 1e-12 * np.max(np.abs(ref))


def test_loose_shift_falls_back_to_exact_maximum(rng):
    """Large β with a K that makes the Cauchy–Schwarz bound loose by far more than 708."""
    d = 3
    x = pt.uniform_sphere(60, d, rng=rng)
    w = np.full(60, 1 / 60)
    K = np.diag([1.0, 1e-3, 1e-3])
    Q = np.diag([1e-3, 1.0, 1.0])
    model = mf.SelfAttention(5e4, Q=Q, K=K)
    ref = model.field(x, w, x)
    got = kernels.field(model, x, w, x)
    assert np.all(np.isfinite(got))
    assert np.max(np.abs(got - ref)) <= 1e-10 * max(np.max(np.abs(ref)), 1e-300)


def test_query_blocked_kernel_equals_one_row_per_pass_to_round_off(rng, monkeypatch, block=4):
    """pairwise.QUERY_BLOCK > 1 (benchmarks/bench_pairs.py's candidate: one pass over the keys serves a block of
    queries) computes the same sums as the one-row kernel, for equal and unequal weights, a batch, a last partial
    block (m = 41 queries), single precision, and the exact-maximum fallback of rows whose Cauchy–Schwarz shift is
    loose enough to underflow. Error model: the same positive-weighted terms (each within one ulp of vexp) summed in
    orders that fast-math reassociation may split into different vector lanes: each sum differs by at most
    n·u·Σ_j|terms| (n = 70; u = 1.1e-16 in double, 6e-8 in single), bounded here through the row's largest entry;
    10× margin."""
    from meanfield.kernels import pairwise

    x = pt.uniform_sphere(70, 3, rng=rng, batch=2)
    q = pt.uniform_sphere(41, 3, rng=rng, batch=2)
    w = rng.uniform(0.5, 1.5, (2, 70))
    Q, K = np.diag([1e-3, 1.0, 1.0]), np.diag([1.0, 1e-3, 1e-3])
    cases = [(x, w, q, 2.5, None, None, "double"), (x, np.full((2, 70), 1 / 70), q, 2.5, None, None, "double"),
             (x, w, q, 2.5, None, None, "single"), (x[0], w[0], x[0], 5e4, Q, K, "double")]
    for points, weights, queries, beta, QQ, KK, precision in cases:
        one = pairwise.pairwise_sums(points, weights, queries, beta, QQ, KK, precision=precision)
        monkeypatch.setattr(pairwise, "QUERY_BLOCK", block)
        blocked = pairwise.pairwise_sums(points, weights, queries, beta, QQ, KK, precision=precision)
        monkeypatch.setattr(pairwise, "QUERY_BLOCK", 1)
        u = 6e-8 if precision == "single" else 1.1e-16
        num, den, shift = one
        assert np.array_equal(shift, blocked[2])  # the same shift per row (the bound, or the fallback's maximum)
        # Σ_j |terms| <= den · max|v| (|v| <= ‖V‖ |x_j| = 1 here): the sums' scale
        tol = 10 * 70 * u * den[..., None]
        assert np.all(np.abs(blocked[0] - num) <= tol) and np.all(np.abs(blocked[1] - den) <= tol[..., 0])
    assert np.all(np.isfinite(one[0]))  # the fallback case: finite sums


def test_batched_pairwise_sums(rng):
    x = pt.uniform_sphere(30, 3, rng=rng, batch=(2, 3))
    w = np.full((2, 3, 30), 1 / 30)
    model = mf.SelfAttention(1.0)
    np.testing.assert_allclose(kernels.field(model, x, w, x), model.field(x, w, x), atol=1e-15)


@pytest.mark.parametrize("n", [20, 80])  # the one-pass small-system kernel (n <= 64) and the fused sums
def test_fused_energy(rng, n):
    x = pt.uniform_sphere(n, 4, rng=rng, batch=3)
    w = rng.uniform(0, 1, (3, n))
    w /= w.sum(axis=1, keepdims=True)
    for beta in (0.0, 0.3, 7.0, 300.0):
        e = kernels.energy(x, w, beta)
        ref = [mf.SelfAttention(beta).energy(x[b], w[b]) for b in range(3)]
        np.testing.assert_allclose(e, ref, rtol=1e-13)


@pytest.mark.parametrize(
    "beta, normalized",
    [(0.0, True), (1.0, True), (10.0, True), (100.0, True), (0.0, False), (1.0, False), (10.0, False)],
)
@pytest.mark.parametrize("c", [1.0, -0.5])
def test_circle_spectral_matches_pairwise_within_its_bound(rng, beta, normalized, c):
    th = rng.uniform(0, 2 * np.pi, 3000)
    x = np.stack([np.cos(th), np.sin(th)], -1)
    w = np.full(3000, 1 / 3000)
    model = mf.SelfAttention(beta, V=c * np.eye(2), normalized=normalized)
    v, bound = kernels.circle_spectral_field(x, w, x, beta, normalized, c)
    ref = kernels.field(model, x, w, x)
    scale = np.max(np.abs(ref))
    assert np.max(np.abs(v - ref)) <= 1e-12 * max(scale, 1.0)
    assert np.max(bound) <= 1e-14 * max(scale, 1.0)


def test_circle_spectral_bound_is_a_bound(rng):
    """Truncated on purpose: the reported bound must dominate the actual error."""
    th = rng.uniform(0, 2 * np.pi, 500)
    x = np.stack([np.cos(th), np.sin(th)], -1)
    w = np.full(500, 1 / 500)
    ref = kernels.field(mf.SelfAttention(10.0), x, w, x)
    for L in (2, 4, 8, 12, 16, 20):
        v, bound = kernels.circle_spectral_field(x, w, x, 10.0, degree=L)
        err = np.linalg.norm(v - ref, axis=-1)
        assert np.all(err <= bound * (1 + 1e-8) + 1e-15)
        if L >= 8:  # once the truncation is below the denominator the bound is informative
            assert np.all(np.isfinite(bound)) and np.max(bound) < 100 * np.max(err) + 1e-13


def test_circle_degree_matches_math_md():
    # multipliers below 1e-16 of λ_0 past l ≈ 15, 32, 88 for β = 1, 10, 100 (MATH.md §2.1)
    for beta, L in ((1.0, 15), (10.0, 32), (100.0, 88)):
        assert abs(kernels.circle_degree(beta) - L) <= 6


# ------------------------------------------------------------------ S² spectral sums (zonal models)
@pytest.mark.parametrize("beta, normalized", [(0.0, True), (0.7, True), (4.0, True), (30.0, True), (0.0, False),
                                              (4.0, False)])
@pytest.mark.parametrize("c", [1.0, -1.5])
def test_sphere_spectral_matches_pairwise_within_its_bound(rng, beta, normalized, c):
    """The O((n + m)L²) harmonic sums on 2000 points against the pairwise field: equal to 1e-12 relative, with a
    truncation bound below 1e-14; the divergence against the model's own (docs/MATH.md §6); the poles included."""
    from meanfield.domains.sphere.point_sums import sphere_spectral_divergence, sphere_spectral_field

    x = pt.uniform_sphere(2000, 3, rng=rng)
    x[:2] = [[0, 0, 1], [0, 0, -1]]
    w = rng.uniform(0, 1, 2000)
    w /= w.sum()
    model = mf.SelfAttention(beta, V=c * np.eye(3), normalized=normalized)
    ref = kernels.field(model, x, w, x)
    scale = np.max(np.abs(ref))
    v, bound = sphere_spectral_field(x, w, x, beta, normalized, c)
    assert np.max(np.abs(v - ref)) <= 1e-12 * scale
    assert np.max(bound) <= 1e-14 * scale
    assert np.max(np.abs(np.sum(v * x, axis=-1))) <= 1e-14 * scale  # tangent
    q = x[:50]
    X, div = model.field_and_divergence(x, w, q)
    X2, div2 = sphere_spectral_divergence(x, w, q, beta, normalized, c)
    assert np.max(np.abs(X2 - X)) <= 1e-12 * scale
    assert np.max(np.abs(div2 - div)) <= 1e-12 * np.max(np.abs(div))


def test_sphere_spectral_bound_is_a_bound(rng):
    """Truncated on purpose: the reported bound dominates the actual error and is informative once the truncation
    is below the normaliser."""
    from meanfield.domains.sphere.point_sums import sphere_spectral_field

    x = pt.uniform_sphere(500, 3, rng=rng)
    w = np.full(500, 1 / 500)
    ref = kernels.field(mf.SelfAttention(10.0), x, w, x)
    for L in (2, 4, 8, 12, 16, 24):
        v, bound = sphere_spectral_field(x, w, x, 10.0, degree=L)
        err = np.linalg.norm(v - ref, axis=-1)
        assert np.all(err <= bound * (1 + 1e-8) + 1e-15)
        if L >= 12:
            assert np.all(np.isfinite(bound)) and np.max(bound) < 1e4 * np.max(err) + 1e-13  # |P_l| <= 1: loose


def test_sphere_harmonic_moments_are_orthonormal_and_give_the_energy(rng):
    """a_lm of a quadrature of the uniform measure vanish for l >= 1 (orthogonality), a_00 = 1/√4π; E_β from the
    moments equals the pairwise energy."""
    from meanfield.domains.sphere.point_sums import harmonic_moments, sphere_excess_energy
    from meanfield.lagrangian.measure import LagrangianMeasure

    g = mf.SphereGrid(20)
    a = harmonic_moments(g.points.reshape(-1, 3), g.weights.ravel() / (4 * np.pi), 20)
    # a sum of 882 positive terms (total 0.28): log₂(882) ulps of it by pairwise summation; 5.8 EPS seen
    assert abs(a[0, 0] - 1 / np.sqrt(4 * np.pi)) <= 512 * EPS / np.sqrt(4 * np.pi)
    a[0, 0] = 0
    assert np.max(np.abs(a)) <= 512 * EPS  # the same sums of |w Y_lm| <= 1.8: 7.4 EPS seen
    x = pt.uniform_sphere(300, 3, rng=rng)
    w = rng.uniform(0, 1, 300)
    w /= w.sum()
    for beta in (0.0, 0.4, 5.0, 60.0):
        e = LagrangianMeasure(x, w, np.zeros(300), mf.domains.SPHERE).energy(beta)
        assert e == pytest.approx(kernels.energy(x[None], w[None], beta)[0], rel=1e-13)
    assert sphere_excess_energy(x, w, 0.0) == pytest.approx(0.5 * np.sum((w @ x) ** 2), rel=1e-14)


def test_sphere_spectral_field_for_a_million_points_equals_the_pairwise_sum():
    """One field of 10⁶ points (β = 4) by the harmonic sums (ducc0's non-uniform transforms at this size) equals,
    at 200 of them, the pairwise sum to 1e-14 of the terms' scale: SA's field is a convex combination of tangent
    vectors of norm <= 1, which cancel here to 2e-3 (uniform points), and the pairwise sum of 10⁶ terms itself
    carries about ε log₂(10⁶) ≈ 4e-15."""
    from meanfield.domains.sphere.point_sums import sphere_spectral_field

    x = pt.uniform_sphere(10 ** 6, 3, rng=3)
    w = np.full(10 ** 6, 1e-6)
    v, _ = sphere_spectral_field(x, w, x, 4.0)
    ref = kernels.field(mf.SelfAttention(4.0), x, w, x[:200])
    # the transforms' requested accuracy NONUNIFORM_EPSILON = 1e-13 of the terms' scale 1 (3.2e-15 measured)
    assert np.max(np.abs(v[:200] - ref)) <= 1e-13


@pytest.mark.parametrize("normalized", [True, False])
@pytest.mark.parametrize("beta", [0.5, 4.0, 20.0])
def test_sphere_sums_by_nonuniform_transforms_equal_the_recurrences(beta, normalized):
    """From NONUNIFORM_FROM points the field and divergence go through ducc0's non-uniform transforms: equal to the
    exact recurrences to 1e-12 of their largest values, for clustered points (three von Mises–Fisher caps) and at
    the poles and next to them (where colatitude and longitude are ill-conditioned)."""
    from meanfield.domains.sphere import point_sums as ps

    rng = np.random.default_rng(4)
    centres = pt.uniform_sphere(3, 3, rng=rng)
    x = np.concatenate([c + 0.3 * rng.normal(size=(3000, 3)) for c in centres])
    x[:4] = [[0, 0, 1], [0, 0, -1], [1e-9, 0, 1], [0, -1e-12, -1]]
    x /= np.linalg.norm(x, axis=1)[:, None]
    w = rng.uniform(0.5, 1.0, len(x))
    w /= w.sum()
    assert len(x) >= ps.NONUNIFORM_FROM
    L = ps.sphere_degree(beta)
    v, div, S, _, _ = ps._evaluate(x, w, x, beta, normalized, 1.3, L)
    a = ps.harmonic_moments(x, w, L)
    b, S0 = ps.field_coefficients(a, beta)
    _, _, lap = ps.multipliers(L, beta)
    A, B, qmm, c1 = ps.recurrence(L)
    v0, div0, S_0 = ps.zonal_points(x, b, lap, A, B, qmm, c1, S0, beta, normalized, ps.zonal_scale(beta, normalized, 1.3))
    # the transforms' accuracy 1e-13 (NONUNIFORM_EPSILON) of the sums' terms, which SA divides (β = 20: 4.7e-13 of
    # the largest value measured)
    assert np.max(np.abs(v - v0)) <= 1e-11 * np.max(np.abs(v0))
    assert np.max(np.abs(div - div0)) <= 1e-11 * np.max(np.abs(div0))
    assert np.max(np.abs(S - S_0)) <= 1e-11 * np.max(np.abs(S_0))



def test_sphere_spectral_field_cost_grows_linearly_in_the_points():
    """The harmonic sums cost O((n + m)L²), L fixed by β (MATH.md §6, S² spectral sums): the fitted exponent of
    the time against n = m = 2·10⁴ … 2·10⁵ (β = 4) is near 1 (measured 0.98), far below the pairwise sums' 2.

    Robust on a loaded machine: one thread, the sizes interleaved in each of five rounds (a burst of load slows
    all sizes alike) and the best time per size; a spurious failure needs the largest size alone slowed 3×."""
    import time

    import numba

    from meanfield.domains.sphere.point_sums import sphere_spectral_field

    ns = np.array([20_000, 63_000, 200_000])
    sets = [(x, np.full(n, 1.0 / n)) for n, x in zip(ns, (pt.uniform_sphere(int(n), 3, rng=5) for n in ns))]
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        sphere_spectral_field(*sets[0], sets[0][0], 4.0)  # compile
        best = np.full(ns.size, np.inf)
        for _ in range(5):
            for i, (x, w) in enumerate(sets):
                t0 = time.perf_counter()
                sphere_spectral_field(x, w, x, 4.0)
                best[i] = min(best[i], time.perf_counter() - t0)
    finally:
        numba.set_num_threads(threads)
    exponent = np.polyfit(np.log(ns), np.log(best), 1)[0]
    assert exponent < 1.4, (exponent, best)

def _rd_models(d, rng):
    from meanfield.models import L2, Masked, Sigmoid, Softmax

    def mats(k):
        return [rng.standard_normal((k, k)) / np.sqrt(k) for _ in range(3)]

    return [Softmax(*mats(d), beta=1.3), L2(*mats(d), tau=0.7), Sigmoid(*mats(d), b=0.4),
            Masked(*mats(d - 1), beta=2.0), mf.MultiHeadAttention([Softmax(*mats(d), beta=0.5), L2(tau=2.0)])]


@pytest.mark.parametrize("d", [2, 5, 16])
def test_compiled_rd_fields_equal_the_models_sums(d, monkeypatch):
    """Softmax, L2, sigmoid, masked and multi-head attention in R^d through the compiled rows equal the
    models' NumPy sums (exact row maxima) to round-off, with random Q, K, V and weights (some zero), for a
    cloud at the origin and one far from it (where the Cauchy–Schwarz row shift underflows and rows are
    redone with their exact maximum), and a batch. 150 queries: for d > 8, blocks of 64 rows, the last one
    partial."""
    rng = np.random.default_rng(d)
    monkeypatch.setattr("meanfield.kernels.euclidean.BLOCK_ENTRIES", 64 * 300)
    for model in _rd_models(d, rng):
        for shift in (0.0, 40.0):
            x = rng.standard_normal((2, 300, d)) + shift
            q = rng.standard_normal((2, 150, d)) + shift
            if model.kind == "masked":  # positions in [0, 1]: some queries see no point at all
                x[..., 0] = rng.uniform(0.0, 1.0, x.shape[:-1])
                q[..., 0] = rng.uniform(-0.1, 1.0, q.shape[:-1])
            w = rng.uniform(0.5, 1.5, (2, 300))
            w[:, :7] = 0.0
            w /= w.sum(-1, keepdims=True)
            ref = model.field(x, w, q)
            got = kernels.euclidean_field(model, x, w, q)
            assert got.shape == ref.shape
            assert np.max(np.abs(got - ref)) <= 1e-12 * np.max(np.abs(ref)), (model, shift)
    with pytest.raises(ValueError, match="compiled"):
        kernels.euclidean_field(mf.SelfAttention(beta=1.0), x, w, q)


@pytest.mark.parametrize("d", [2, 16])
def test_log_normalisers_equal_logsumexp(d, monkeypatch):
    """log Σ_j e^{⟨a_i, y_j⟩ + o_j} in compiled rows equals scipy's logsumexp to round-off of its terms, with the
    Cauchy–Schwarz shift (loose by more than 460 for a far cloud: those rows are redone exactly) and with given
    shifts above or more than 709 below the result (the rows whose sum overflows are redone exactly). d = 16:
    blocks of 16 rows, the last one partial."""
    from scipy.special import logsumexp

    monkeypatch.setattr("meanfield.kernels.euclidean.BLOCK_ENTRIES", 16 * 500)

    from meanfield.kernels.euclidean import log_normalisers

    rng = np.random.default_rng(d)
    for spread in (1.0, 30.0):
        a = rng.standard_normal((40, d)) * spread
        y = rng.standard_normal((500, d)) * spread
        o = rng.standard_normal(500)
        ref = logsumexp(a @ y.T + o, axis=1)
        scale = np.max(np.abs(a @ y.T)) + 1.0
        for shift in (None, ref + 3.0, ref - rng.choice([0.5, 800.0], ref.size)):
            got = log_normalisers(a, y, o, shift=shift)
            assert np.max(np.abs(got - ref)) <= 1e-14 * scale, (spread, shift is None)


@pytest.mark.parametrize("d", [2, 5, 16])
def test_compiled_sinkhorn_equals_the_models_iteration(d, monkeypatch):
    """Sinkhorn attention through compiled log-sum-exp rows equals the model's NumPy iteration to round-off
    (identity and random Q, K, V, a multi-head sum, weights some zero, a batch, and a cloud far from the origin
    where |S_ij| ~ 10³: there the potentials' round-off exceeds tol = 1e-13, so both stop at its floor), and
    its potentials meet both marginals: Σ_j w_j e^{S_ij + f_i + g_j} = 1 = Σ_i w_i e^{S_ij + f_i + g_j}."""
    from scipy.special import logsumexp

    from meanfield.kernels.euclidean import sinkhorn_potentials
    from meanfield.models import Sinkhorn, Softmax

    rng = np.random.default_rng(10 + d)
    mats = [rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(3)]
    models = [Sinkhorn(), Sinkhorn(*mats, tau=0.7), mf.MultiHeadAttention([Sinkhorn(tau=2.0), Softmax(beta=0.5)])]
    for model in models:
        for shift in (0.0, 40.0):
            x = rng.standard_normal((2, 300, d)) / np.sqrt(d) + shift
            q = rng.standard_normal((2, 50, d)) / np.sqrt(d) + shift
            w = rng.uniform(0.5, 1.5, (2, 300))
            w[:, :7] = 0.0
            w /= w.sum(-1, keepdims=True)
            ref = model.field(x, w, q)
            got = kernels.euclidean_field(model, x, w, q)
            assert np.max(np.abs(got - ref)) <= 1e-12 * np.max(np.abs(ref)), (model, shift)
            if d > 8 and model is models[1]:  # stored S (the default here) and the row products agree
                monkeypatch.setattr(kernels.euclidean, "SINKHORN_MATRIX_MAX", 0)
                rows = kernels.euclidean_field(model, x, w, q)
                monkeypatch.undo()
                assert np.max(np.abs(rows - ref)) <= 1e-12 * np.max(np.abs(ref)), shift
    sk = models[1]
    for shift in (0.0, 40.0):
        x = rng.standard_normal((300, d)) / np.sqrt(d) + shift
        w = rng.uniform(0.5, 1.5, 300)
        w /= w.sum()
        g = sinkhorn_potentials(sk, x, w)
        S = (x @ sk.A(d).T) @ x.T / sk.tau
        f = -logsumexp(S + g + np.log(w), axis=1)  # f from g: the rows' marginals hold by construction
        cols = logsumexp(S + f[:, None] + np.log(w)[:, None], axis=0) + g
        floor = 8 * np.finfo(float).eps * (np.max(np.abs(f)) + np.max(np.abs(g)) + np.max(np.abs(S)))
        assert np.max(np.abs(cols)) <= max(10 * sk.tol, floor), shift  # and so the columns', to tol
    with pytest.raises(RuntimeError, match="did not reach"):
        sinkhorn_potentials(Sinkhorn(max_iter=2), x, w)


def test_rd_particles_take_the_compiled_path():
    from meanfield.models import L2, Sinkhorn, Softmax
    from particles import simulate

    x = np.random.default_rng(0).standard_normal((40, 3))
    for model in (Softmax(beta=1.5), L2(tau=0.8)):
        a = simulate(model, x, [0.0, 0.5], dt=0.05)
        b = simulate(model, x, [0.0, 0.5], dt=0.05, strategy="quadrature")
        assert a.strategy == "pairwise" and b.strategy == "quadrature"
        assert np.max(np.abs(a.x - b.x)) <= 1e-12 * np.max(np.abs(b.x))
    assert simulate(Softmax(), np.zeros((10, 16)), [0.0, 0.1]).strategy == "pairwise"  # blocked products at d = 16
    assert simulate(Sinkhorn(), np.zeros((10, 16)), [0.0, 0.1]).strategy == "pairwise"
    a = simulate(Sinkhorn(tau=1.3), x, [0.0, 0.3], dt=0.05)
    b = simulate(Sinkhorn(tau=1.3), x, [0.0, 0.3], dt=0.05, strategy="quadrature")
    assert a.strategy == "pairwise" and np.max(np.abs(a.x - b.x)) <= 1e-12 * np.max(np.abs(b.x))


def test_float64_exponential_is_accurate_to_one_ulp(rng):
    """vexp against 30-digit e^x over its whole range: within one ulp relative. The two-constant Cody–Waite
    reduction must survive the kernels' fast-math flags: folded by reassociation into x − k(c₁ + c₂) it errs
    like |x|·3e-17 (2.4e-14 at x = −700), which this test catches."""
    import mpmath
    import numba

    from meanfield.kernels.fastexp import FASTMATH, vexp

    @numba.njit(fastmath=FASTMATH)
    def apply(x, out):
        for i in range(x.size):
            out[i] = vexp(x[i])

    half = np.log(2.0) / 2  # the ends of the reduced range |r| <= ln2/2
    k = rng.integers(-1020, 1021, 5000)
    x = np.concatenate([rng.uniform(-708.0, 709.0, 30000), rng.uniform(-2.0, 2.0, 5000),
                        k * np.log(2.0) + half * rng.choice([-1.0, 1.0], k.size), [-708.0, 709.0, 0.0, -1e-300]])
    x = x[(x >= -708.0) & (x <= 709.0)]
    out = np.empty_like(x)
    apply(x, out)
    with mpmath.workdps(30):
        err = max(abs(mpmath.mpf(float(o)) / mpmath.exp(mpmath.mpf(float(v))) - 1) for o, v in zip(out, x))
    assert float(err) <= np.finfo(float).eps


def test_float32_exponential_is_accurate_to_one_ulp():
    import numba

    from meanfield.kernels.fastexp import FASTMATH, vexp32

    @numba.njit(fastmath=FASTMATH)
    def apply(x, out):
        for i in range(x.size):
            out[i] = vexp32(x[i])

    x = np.linspace(-87.0, 88.0, 200_001).astype(np.float32)
    out = np.empty_like(x)
    apply(x, out)
    assert out.dtype == np.float32
    assert np.max(np.abs(out / np.exp(x.astype(float)) - 1.0)) <= np.finfo(np.float32).eps  # one ulp


def _single_precision_model(model, x, w):
    """The error model of single precision (pairwise.SINGLE_PRECISION_ERROR) at the points x themselves: per row the
    first-order bound B_i = u Σ_j c_ij (|s_ij| + 2) |P_i⊥ r_ij| and the random-walk size σ_i = u (Σ_j (c_ij (|s_ij| + 2)
    |P_i⊥ r_ij|)²)^{1/2}, u = 2^-24, s_ij = β⟨Qx_i, Kx_j⟩ − s_i the shifted score (s_i the kernel's row shift), and
    c_ij = p_ij, r_ij = Vx_j − A_i (SA: the softmax weights and A_i = Σ_j p_ij Vx_j) or c_ij = w_j e^{β⟨Qx_i, Kx_j⟩},
    r_ij = Vx_j (USA). Rows in chunks (memory)."""
    from meanfield.kernels import pairwise

    eye = np.eye(x.shape[1])
    Q, K, V = (eye if a is None else np.asarray(a) for a in (model.Q, model.K, model.V))
    shift = pairwise.pairwise_sums(x, w, x, model.beta, model.Q, model.K, model.V)[2]
    v = x @ V.T
    B, sigma = np.empty(len(x)), np.empty(len(x))
    for i0 in range(0, len(x), 200):
        xi = x[i0:i0 + 200]
        s = model.beta * (xi @ Q.T) @ (x @ K.T).T - shift[i0:i0 + 200, None]
        c = w * np.exp(s)
        if model.normalized:
            c /= c.sum(axis=1, keepdims=True)
            r = v[None] - (c @ v)[:, None]
        else:
            c *= np.exp(shift[i0:i0 + 200, None])
            r = np.broadcast_to(v[None], (len(xi),) + v.shape)
        r = r - np.sum(r * xi[:, None], axis=-1, keepdims=True) * xi[:, None]  # P_{x_i}⊥
        t = c * (np.abs(s) + 2.0) * np.linalg.norm(r, axis=-1) * 2.0 ** -24
        B[i0:i0 + 200], sigma[i0:i0 + 200] = t.sum(axis=1), np.sqrt(np.sum(t * t, axis=1))
    return B, sigma


def _clustered(n, d, rng, k=5, width=0.15):
    """n points around k random centres on S^{d-1} (a field that does not cancel)."""
    y = pt.uniform_sphere(k, d, rng=rng)[rng.integers(0, k, n)] + width * rng.standard_normal((n, d))
    return y / np.linalg.norm(y, axis=1, keepdims=True)


@pytest.mark.parametrize("d, beta, normalized, points", [(3, 4.0, True, "uniform"), (3, 10.0, True, "clustered"),
                                                         (2, 1.0, True, "uniform"), (2, 10.0, False, "uniform"),
                                                         (5, 3.0, False, "clustered"), (8, 10.0, True, "uniform"),
                                                         (16, 4.0, True, "uniform")])
def test_single_precision_field_errs_by_at_most_its_stated_bound(rng, d, beta, normalized, points):
    """Single precision (float32 exponentials of float64 scores, float64 sums; pairwise.SINGLE_PRECISION_ERROR):
    each term carries a relative error |δ_ij| <= u(|s_ij| + 2) (the score rounded to float32, vexp32's ulp), so
    to first order ΔX_i = P_i⊥ Σ_j c_ij δ_ij r_ij (_single_precision_model): |ΔX_i| <= B_i, and as the δ_ij vary
    pseudo-randomly with j, |ΔX_i| is of the size σ_i (an upper estimate of its RMS: the model's ratio is <= 1;
    measured <= 1.3 as the max over rows here, 1.53 by the review at d = 4, β = 30, clustered; asserted <= 10).
    For independent random points X_i is itself such a sum of independent terms, so max |ΔX| / max |X| does not
    grow with n: <= SINGLE_PRECISION_ERROR = 1e-6 (measured
    <= 1.1e-7 at n = 1500 and 4096, d = 2…16, β = 1…10). Not round-off: the double field is 1e-15, so the test
    would catch a kernel silently in double."""
    from meanfield.kernels.pairwise import SINGLE_PRECISION_ERROR

    x = pt.uniform_sphere(1500, d, rng=rng) if points == "uniform" else _clustered(1500, d, rng)
    w = rng.uniform(0.5, 1.5, 1500)
    w /= w.sum()
    for model in (mf.SelfAttention(beta, normalized=normalized),
                  mf.SelfAttention(beta, *(rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(3)),
                                   normalized=normalized)):
        ref = model.field(x, w, x)
        err = np.linalg.norm(kernels.field(model, x, w, x, precision="single") - ref, axis=-1)
        B, sigma = _single_precision_model(model, x, w)
        assert np.max(err) > 1e-11 * np.max(np.abs(ref))
        assert np.all(err <= B)
        assert np.max(err / sigma) <= 10.0
        assert np.max(err) <= SINGLE_PRECISION_ERROR * np.max(np.linalg.norm(ref, axis=-1))
    with pytest.raises(ValueError, match="precision"):
        kernels.field(model, x, w, x, precision="half")


def test_simulate_in_single_precision():
    x = pt.uniform_sphere(300, 3, rng=1)
    model = mf.SelfAttention(4.0)
    a = pt.simulate(model, x, [0.0, 1.0], dt=0.05)
    b = pt.simulate(model, x, [0.0, 1.0], dt=0.05, precision="single")
    assert b.strategy == "pairwise" and b.x.dtype == np.float64
    assert np.allclose(np.linalg.norm(b.x, axis=-1), 1.0, atol=1e-14)
    assert 1e-10 < np.max(np.abs(a.x - b.x)) <= 1e-4  # the field's float32 error (1e-6 of |x| = 1), integrated to t = 1
    with pytest.raises(ValueError, match="single precision"):
        pt.simulate(model, x, [0.0, 1.0], strategy="quadrature", precision="single")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_aligned_arrays_equal_their_input_and_start_on_a_cache_line(rng, dtype):
    from meanfield.kernels.layout import ALIGNMENT, aligned

    for a in (rng.standard_normal((3, 1001)).T, rng.standard_normal(7)[1:], np.empty((0, 3))):
        b = aligned(a, dtype)
        assert b.dtype == dtype and b.flags.c_contiguous and b.shape == a.shape
        assert b.ctypes.data % ALIGNMENT == 0 or b.size == 0
        assert np.array_equal(b, a.astype(dtype))
        assert aligned(b, dtype) is b or b.size == 0  # no second copy
