"""Position-dependent causal attention: the decay mask e^{−λ(s − τ)} and RoPE phases (docs/MATH.md §13).

Asserted: λ = ω = 0 given explicitly runs today's causal model bit for bit (particles and densities), and a small λ
moves the SA field by at most |λ|/2 (the derivative bound of a softmax average in its logits' offset); the head's
field against a direct sum of the defining formula, the compiled sums against the head's (and bit-identical for 1
and 2 threads); the first token never moves and the second follows the closed form of
:func:`meanfield.analysis.exact.positional_pair` to 1e-10 (decay on S² and S⁷, decay and RoPE on S¹), the closed form itself
against a DOP853 solve of its ODE; on [0, 1] × S¹ with a decay mask: rows up to s unchanged bit for bit when the law
beyond s changes, a law constant in s evolving as the circle equation in every row (SA), spectral and quadrature
right-hand sides equal with each row's mass conserved, the decayed cumulative sums second order in the row spacing;
N particles against the density (W1 decreasing; the rate −½ with its interval in the slow test); and the refusals
(masks on non-causal heads, λ or ω not finite, RoPE densities, RoPE divergences, a decay beyond the compiled sums).
"""

import numpy as np
import pytest

import meanfield as mf
import particles
from meanfield import kernels
from meanfield.density import Density
from meanfield.domains.sequence import (
    SEQUENCE, SequenceGrid, SequencePairs, SequenceQuadrature, cumulative, with_positions,
)
from meanfield.analysis.exact import causal_pair, positional_pair
from meanfield.models import MultiHeadAttention, SelfAttention
from meanfield.models.positions import rotate_planes


def _tokens(n, d, rng):
    x = rng.standard_normal((n, d))
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _law(grid, tilt=1.0):
    s, th = grid.positions[:, None], grid.angles[None, :]
    return (1.0 + 0.4 * np.cos(th - tilt * s) + 0.2 * np.sin(2 * th) * s) / (2 * np.pi)


# ------------------------------------------------------------------ λ = 0: today's model
def test_zero_decay_and_rope_run_todays_causal_model_bit_for_bit(rng):
    """decay = 0, rope = 0 given explicitly (an int, a float, −0.0): the same particles and densities, bit for bit
    (λ = 0 adds nothing to the logits, the cumulative sums are the plain ones)."""
    x0 = with_positions(_tokens(40, 3, rng))
    base = SelfAttention(2.0, causal=True)
    ref = particles.simulate(base, x0, [0.0, 0.5], dt=0.02).x
    g = SequenceGrid(16, 5)
    sol = mf.solve(base, Density(g, _law(g)), (0.0, 0.2), dt=0.01, refine=False).densities[-1].values
    for zero in (0, 0.0, -0.0):
        model = SelfAttention(2.0, causal=True, decay=zero, rope=zero)
        assert not model.weighs_positions
        assert np.array_equal(particles.simulate(model, x0, [0.0, 0.5], dt=0.02).x, ref)
        got = mf.solve(model, Density(g, _law(g)), (0.0, 0.2), dt=0.01, refine=False).densities[-1].values
        assert np.array_equal(got, sol)


def test_small_decay_moves_the_field_by_at_most_half_of_it(rng):
    """∂_λ u = −Cov_π(Vy, s − τ) with s − τ in [0, 1] and |Vy| = 1: |∂_λ u| <= ½, so |X_λ − X_0| <= |λ|/2 (SA),
    and the bound is approached (> |λ|/100 here: the decay does act)."""
    pts = with_positions(_tokens(50, 3, rng), np.sort(rng.uniform(size=50)))
    w = np.full(50, 1 / 50)
    X0 = SelfAttention(3.0, causal=True).field(pts, w, pts)
    for lam in (1e-6, -1e-3, 0.05):
        X = SelfAttention(3.0, causal=True, decay=lam).field(pts, w, pts)
        diff = np.max(np.linalg.norm(X - X0, axis=-1))
        assert abs(lam) / 100 < diff <= 0.5 * abs(lam) + 1e-15


# ------------------------------------------------------------------ the field against its definition
def _direct(model, pts, w, queries):
    """u(s, x) = Σ_{τ_j <= s} w_j e^{β⟨R(ωs)Qx, R(ωτ_j)Ky_j⟩ − λ(s − τ_j)} V y_j (/ Z for SA), projected: the formula
    of docs/MATH.md §13 written out point by point."""
    d = pts.shape[-1] - 1
    Q, K, V = model.matrices(d)
    out = np.zeros_like(queries)
    for i, (s, *x) in enumerate(queries):
        x = np.array(x)
        num, Z = np.zeros(d), 0.0
        for (tau, *y), wj in zip(pts, w):
            if tau <= s:
                y = np.array(y)
                qx = rotate_planes(Q @ x, model.rope * s)
                ky = rotate_planes(K @ y, model.rope * tau)
                e = wj * np.exp(model.beta * qx @ ky - model.decay * (s - tau))
                num += e * (V @ y)
                Z += e
        u = num / Z if model.normalized and Z > 0 else num  # a query before every point: 0
        out[i, 1:] = u - (u @ x) * x
    return out


@pytest.mark.parametrize("d", [2, 3, 4])
def test_field_against_the_direct_sum_and_the_compiled_sums(d, rng):
    import numba

    n = 16
    pts = with_positions(_tokens(n, d, rng), rng.uniform(size=n))
    pts[:3, 0] = pts[3, 0]  # ties see each other
    w = rng.uniform(0.5, 1.5, size=n)
    queries = pts.copy()
    queries[::4, 0] -= 0.2  # queries between the points
    queries[:, 0] = np.clip(queries[:, 0], 0, 1)
    M = np.eye(d) + 0.3 * rng.standard_normal((d, d))
    models = (SelfAttention(2.0, causal=True, decay=3.0),
              SelfAttention(1.5, causal=True, decay=-2.0, normalized=False, V=M),
              SelfAttention(2.0, causal=True, rope=5.0, Q=M),
              SelfAttention(1.0, causal=True, decay=4.0, rope=-3.0, K=M.T, normalized=False))
    for model in models:
        ref = model.field(pts, w, queries)
        # the same sums in another order: a few ulps of the largest term (e^{|logit|} <= e^{β|Q||K| + |λ|})
        np.testing.assert_allclose(ref, _direct(model, pts, w, queries), rtol=0, atol=1e-13 * np.max(np.abs(ref)))
        threads = numba.get_num_threads()
        try:
            numba.set_num_threads(1)
            one = kernels.field(model, pts, w, queries)
            numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
            two = kernels.field(model, pts, w, queries)
        finally:
            numba.set_num_threads(threads)
        assert np.array_equal(one, two)
        # the key weights e^{λτ − c} and the row factor e^{c − λs} round once each: a few ulps more than the head's
        assert np.max(np.abs(one - ref)) <= 1e-14 * np.max(np.abs(ref))
    heads = MultiHeadAttention(models[:1] + models[2:3])
    np.testing.assert_allclose(kernels.field(heads, pts, w, queries), heads.field(pts, w, queries), rtol=0,
                               atol=1e-14 * np.max(np.abs(heads.field(pts, w, queries))))


# ------------------------------------------------------------------ exact solutions
@pytest.mark.parametrize("d,decay,rope", [(3, 2.0, 0.0), (8, -3.0, 0.0), (2, 2.0, 5.0), (2, 0.0, -4.0)])
def test_first_token_rests_and_the_second_follows_its_closed_form(d, decay, rope, rng):
    """Tokens at s = ¼, ¾ (Δs = ½): the first sees itself only (u = x_1: never moves), the second φ(t) of
    :func:`positional_pair` with L = λ/2, α = ω/2, to 1e-10 (RK4 at dt = 0.004: error ~ dt⁴)."""
    x = _tokens(2, d, rng)
    theta0 = 2.2
    if d == 2:
        a = np.arctan2(x[0, 1], x[0, 0]) + theta0
        x[1] = [np.cos(a), np.sin(a)]
    else:
        u = x[1] - (x[1] @ x[0]) * x[0]
        x[1] = np.cos(theta0) * x[0] + np.sin(theta0) * u / np.linalg.norm(u)
    t = np.linspace(0.0, 3.0, 4)
    traj = particles.simulate(SelfAttention(1.0, causal=True, decay=decay, rope=rope), with_positions(x), t, dt=0.004)
    assert np.max(np.abs(traj.x[:, 0] - traj.x[0, 0])) <= 1e-15
    a, b = traj.x[:, 0, 1:], traj.x[:, 1, 1:]
    if d == 2:
        got = np.arctan2(a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0], np.sum(a * b, -1))  # signed θ_2 − θ_1
    else:
        c = np.sum(a * b, -1)
        got = np.arctan2(np.linalg.norm(b - c[:, None] * a, axis=-1), c)
    expected = positional_pair(t, theta0, 1.0, decay / 2, rope / 2)
    assert np.max(np.abs(got - expected)) <= 1e-10
    assert abs(expected[-1] - theta0) > 0.1  # it moved


def test_positional_pair_closed_forms_and_ode():
    """β = 0: tan(φ/2) = tan(φ_0/2) e^{−t/(1 + e^L)}; ω = 0, L = 0: :func:`causal_pair`; any β, L, α: a DOP853 solve
    of φ' = −sin φ/(1 + e^{β(1 − cos(φ + α)) + L}) (the derivation checked)."""
    from scipy.integrate import solve_ivp

    t = np.array([0.1, 1.0, 5.0, 20.0])
    closed = 2 * np.arctan(np.tan(1.25) * np.exp(-t / (1 + np.exp(1.3))))
    np.testing.assert_allclose(positional_pair(t, 2.5, 0.0, 1.3), closed, rtol=1e-15)
    np.testing.assert_allclose(positional_pair(t, 2.5, 3.0), causal_pair(t, 2.5, 3.0), rtol=1e-13)
    for beta, L, alpha in ((2.0, 1.5, 0.0), (2.0, 1.5, 0.7), (5.0, -1.0, 2.0)):
        sol = solve_ivp(lambda _, p: -np.sin(p) / (1 + np.exp(beta * (1 - np.cos(p + alpha)) + L)), (0, 20), [2.5],
                        method="DOP853", rtol=1e-13, atol=1e-300, t_eval=t)
        assert np.max(np.abs(positional_pair(t, 2.5, beta, L, alpha) - sol.y[0]) / sol.y[0]) <= 1e-12


# ------------------------------------------------------------------ densities on [0, 1] × S¹
def test_decayed_cumulative_sums_are_the_trapezoidal_rule_of_the_decayed_integrand(rng):
    """R_k against the trapezoidal rule of e^{−λ(s_k − τ)} f(τ) summed directly (to round-off), and against the
    exact integral of f(τ) = e^{κτ}: error / h² converging (second order)."""
    lam, kappa = 2.5, -1.2
    f = rng.standard_normal((9, 4))
    h = 1 / 8
    s = np.arange(9) * h
    R = cumulative(f, h, lam)
    for k in range(9):
        g = np.exp(-lam * (s[k] - s[: k + 1]))[:, None] * f[: k + 1]
        direct = h * (g.sum(0) - 0.5 * (g[0] + g[-1])) if k else 0 * g[0]
        assert np.max(np.abs(R[k] - direct)) <= 1e-14
    errors = []
    for m in (9, 17, 33, 65):
        s = np.linspace(0, 1, m)
        exact = (np.exp(kappa * s) - np.exp(-lam * s)) / (kappa + lam)
        errors.append(np.max(np.abs(cumulative(np.exp(kappa * s), 1 / (m - 1), lam) - exact)))
    orders = np.log2(np.array(errors[:-1]) / errors[1:])
    assert np.all(orders > 1.95) and np.all(orders < 2.05), orders


def test_density_rows_with_decay_do_not_see_beyond_them():
    g = SequenceGrid(64, 17)
    f = _law(g)
    f2 = f.copy()
    f2[9:] = (1.0 + 0.3 * np.cos(2 * g.angles)) / (2 * np.pi)
    model = SelfAttention(3.0, causal=True, decay=4.0)
    a, b = (mf.solve(model, Density(g, v), (0.0, 1.0), dt=0.01, refine=False) for v in (f, f2))
    assert a.status is mf.Status.SUCCESS and b.status is mf.Status.SUCCESS
    assert np.array_equal(a.densities[-1].values[:9], b.densities[-1].values[:9])
    assert np.max(np.abs(a.densities[-1].values[9:] - b.densities[-1].values[9:])) > 1e-2


def test_law_constant_in_position_evolves_as_the_circle_in_every_row_with_decay():
    """SA from f_0(s, θ) = g(θ): the decayed seen measure is (1 − e^{−λs})/λ · g, SA's field is invariant under
    scaling, so every row follows the circle's equation from g, whatever λ (the decay changes nothing here: the
    mask weighs the rows, which are all alike)."""
    g = SequenceGrid(64, 5)
    row = (1.0 + 0.5 * np.cos(g.angles) + 0.2 * np.sin(3 * g.angles)) / (2 * np.pi)
    ref = mf.solve(SelfAttention(2.0), Density(mf.CircleGrid(64), row), (0.0, 1.0), dt=0.01, refine=False,
                   representation="grid")
    for lam in (5.0, -3.0):
        seq = mf.solve(SelfAttention(2.0, causal=True, decay=lam), Density(g, np.tile(row, (5, 1))), (0.0, 1.0),
                       dt=0.01, refine=False)
        assert seq.status is mf.Status.SUCCESS
        # the rows' seen measures are multiples of g up to the recursion's rounding (a few ulps per row): the same
        # 1e-13 as the plain causal model's test over 100 steps
        assert np.max(np.abs(seq.densities[-1].values - ref.densities[-1].values[None, :])) <= 1e-13


def test_spectral_and_quadrature_agree_with_decay_and_conserve_each_row():
    g = SequenceGrid(96, 9)
    f = _law(g)
    model = SelfAttention(3.0, causal=True, decay=2.5)
    a, b = SEQUENCE.continuity(model, g, "spectral").rate(f), SEQUENCE.continuity(model, g, "quadrature").rate(f)
    # as in test_causal: the flux's round-off EPS·(n/2)·max|ρv| is ~1e-13 of max|a|
    assert np.max(np.abs(a - b)) <= 2e-12 * np.max(np.abs(a))
    assert np.max(np.abs(g.marginal(a))) <= 1e-15
    plain = SEQUENCE.continuity(SelfAttention(3.0, causal=True), g, "spectral").rate(f)
    assert np.max(np.abs(a - plain)) > 1e-2 * np.max(np.abs(a))  # the decay acts
    # two heads with their own decays, by quadrature: each head's seen measure
    two = MultiHeadAttention((model, SelfAttention(1.0, causal=True, decay=-1.0)))
    r = SEQUENCE.continuity(two, g, "quadrature").rate(f)
    assert np.max(np.abs(g.marginal(r))) <= 1e-15


def test_particles_with_decay_approach_the_density():
    """W1 of N iid tokens, run causally with the decay mask, to the density at t = 1 decreases with N (the rate:
    the slow test)."""
    from validation.wasserstein import distance

    g = SequenceGrid(64, 17)
    rho0 = Density(g, _law(g))
    model = SelfAttention(2.0, causal=True, decay=3.0)
    sol = mf.solve(model, rho0, (0.0, 1.0))
    w = []
    for n in (100, 1600):
        x0 = particles.sample(rho0, n, rng=np.random.default_rng(n))
        x = particles.simulate(model, x0, [0.0, 1.0], dt=0.02).x[-1]
        w.append(distance(sol.densities[-1], x, p=1).value)
    assert w[1] < 0.55 * w[0]


def test_pair_sums_equal_the_seen_measure_sums_and_rope_at_beta_zero_does_nothing():
    """SequencePairs (every row against every earlier node, the model's own causal field) against the decayed
    cumulative sums of SequenceQuadrature, for models without RoPE where both apply: the same trapezoidal rule in τ
    summed in another order (to 1e-13 of the rate; measured 8e-15). At β = 0 RoPE's logits vanish: its rate is the
    plain causal model's."""
    g = SequenceGrid(32, 9)
    f = _law(g)
    Q = np.array([[1.0, 0.3], [0.0, 0.8]])
    for model in (SelfAttention(3.0, causal=True, decay=2.5), SelfAttention(1.0, causal=True, normalized=False,
                                                                            decay=-1.0),
                  SelfAttention(2.0, causal=True, Q=Q, decay=1.0)):
        a, b = SEQUENCE.continuity(model, g, "quadrature").rate(f), SequencePairs(g, model).rate(f)
        assert np.max(np.abs(a - b)) <= 1e-13 * np.max(np.abs(a))
    rope = SEQUENCE.continuity(SelfAttention(0.0, causal=True, rope=5.0, decay=1.0), g, "quadrature")
    assert isinstance(rope, SequencePairs)
    plain = SEQUENCE.continuity(SelfAttention(0.0, causal=True, decay=1.0), g, "quadrature").rate(f)
    assert np.max(np.abs(rope.rate(f) - plain)) <= 1e-13 * np.max(np.abs(plain))
    with_rope = SEQUENCE.continuity(SelfAttention(2.0, causal=True, rope=5.0), g, "quadrature").rate(f)
    assert np.max(np.abs(g.marginal(with_rope))) <= 1e-15  # each row's mass conserved


def test_particles_with_rope_approach_the_density():
    """RoPE densities on [0, 1] × S¹ (SequencePairs) against N iid tokens run with RoPE: W1 decreases with N
    (measured to N = 6400 at t = 1 with 17 rows: 0.217, 0.064, 0.037 for N = 100, 1600, 6400)."""
    from validation.wasserstein import distance

    g = SequenceGrid(32, 9)
    rho0 = Density(g, _law(g))
    model = SelfAttention(2.0, causal=True, rope=4.0)
    sol = mf.solve(model, rho0, (0.0, 0.3), dt=0.02, refine=False)
    assert sol.status is mf.Status.SUCCESS
    w = []
    for n in (100, 1600):
        x0 = particles.sample(rho0, n, rng=np.random.default_rng(n))
        x = particles.simulate(model, x0, [0.0, 0.3], dt=0.02).x[-1]
        w.append(distance(sol.densities[-1], x, p=1).value)
    assert w[1] < 0.55 * w[0]


@pytest.mark.slow
def test_meanfield_limit_rate_with_decay():
    """W1(μ^N_t, f_t) at N = 100…6400 (5 repeats) with the decay mask λ = 3: W1/√(log N) ~ N^α with α's 95%
    interval within [−0.65, −0.35] at t = 0 and t = 1 (MATH.md §4: −½; scripts/causal_meanfield_limit.py --decay 3)."""
    from validation.meanfield_limit import fit_exponent
    from validation.wasserstein import distance

    g = SequenceGrid(128, 65)
    rho0 = Density(g, _law(g))
    model = SelfAttention(2.0, causal=True, decay=3.0)
    sol = mf.solve(model, rho0, (0.0, 1.0), [0.0, 1.0])
    ns = np.array([100, 400, 1600, 6400])
    rng = np.random.default_rng(7)
    W = np.empty((2, ns.size, 5))
    for i, n in enumerate(ns):
        x = particles.simulate(model, particles.sample(rho0, n, rng=rng, batch=5), [0.0, 1.0], dt=0.01).x
        for k in range(2):
            W[k, i] = distance(sol.densities[k], x[k], p=1).value
    for k in range(2):
        slope, (lo, hi) = fit_exponent(ns, W[k] / np.sqrt(np.log(ns))[:, None])
        assert -0.65 <= lo and hi <= -0.35, (k, slope, lo, hi)


# ------------------------------------------------------------------ bad input
def test_bad_input():
    for name in ("decay", "rope"):
        with pytest.raises(ValueError, match=f"`{name}` = 2.0 weighs the tokens by their positions.*causal=True"):
            SelfAttention(1.0, **{name: 2.0})
        for bad in (np.inf, -np.inf, np.nan):
            with pytest.raises(ValueError, match=f"`{name}` must be finite"):
                SelfAttention(1.0, causal=True, **{name: bad})
        with pytest.raises(TypeError, match=f"`{name}` must be a real number"):
            SelfAttention(1.0, causal=True, **{name: "1"})
        with pytest.raises(TypeError, match=f"`{name}` must be a real number"):
            SelfAttention(1.0, causal=True, **{name: True})
    g = SequenceGrid(16, 5)
    rope = SelfAttention(1.0, causal=True, rope=2.0)
    with pytest.raises(ValueError, match="does not hold RoPE phases"):
        SequenceQuadrature(g, rope)
    assert "Q = qI" in SEQUENCE.grid_strategies(rope, g)["spectral"]  # RoPE's kernel is not zonal
    with pytest.raises(ValueError, match="spectral"):
        mf.solve(rope, Density(g, _law(g)), (0.0, 1.0), strategy="spectral")
    pts = with_positions(np.eye(3))
    with pytest.raises(ValueError, match="divergence of the field with RoPE"):
        SelfAttention(1.0, causal=True, rope=2.0).field_and_divergence(pts, np.ones(3) / 3, pts)
    far = SelfAttention(1.0, causal=True, decay=500.0)
    assert "underflow" in kernels.pairwise_refusal(far)
    with pytest.raises(ValueError, match="underflow"):
        particles.simulate(far, pts, [0, 1], strategy="pairwise")
    traj = particles.simulate(far, pts, [0, 1])  # the model's own sums take it
    assert traj.strategy == "quadrature" and np.all(np.isfinite(traj.x))


# ------------------------------------------------------------------ the retrieval profile (lost in the middle)
def _response(model, m, rows, t, eps=1e-6):
    """The density solver's linear response at s = 1 to a source δ_σ(s) cos θ at each of ``rows``: the cos θ
    coefficient of (f(t, 1, ·) − 1/2π)/ε from f_0 = 1/2π + ε δ_σ cos θ (row k divided by its trapezoidal weight)."""
    g = SequenceGrid(16, m)
    out = []
    for k in rows:
        f = np.full(g.shape, 1 / (2 * np.pi))
        f[k] += eps * np.cos(g.angles) / g.position_weights[k]
        sol = mf.solve(model, Density(g, f), (0.0, t), dt=0.01, refine=False)
        assert sol.status is mf.Status.SUCCESS
        out.append(np.sum((sol.densities[-1].values[-1] - 1 / (2 * np.pi)) * np.cos(g.angles)) * (2 / g.n) / eps)
    return np.array(out)


def test_retrieval_profile_against_the_density_solver():
    """The closed form G(t, 1; σ) = κ(1, σ) ψ_{a t}(Y) (:func:`meanfield.analysis.exact.retrieval_profile`) against the
    linear response of the [0, 1] × S¹ solver at σ = ¼, ½, ¾ with 9 and 17 rows: the error falls like the rows'
    trapezoidal sums, h² (order in [1.6, 2.4]; ε = 1e-6 leaves an O(ε) nonlinear error, 1e-6 relative)."""
    from meanfield.analysis.exact import retrieval_profile

    model, t = SelfAttention(1.0, causal=True, decay=2.0), 1.0
    sigma = np.array([0.25, 0.5, 0.75])
    exact = retrieval_profile(sigma, t, 1.0, 2.0)
    errors = [np.max(np.abs(_response(model, m, np.rint((m - 1) * sigma).astype(int), t) - exact) / exact) for m in (9, 17)]
    assert errors[1] <= 3e-3, errors
    assert 1.6 <= np.log2(errors[0] / errors[1]) <= 2.4, errors


def test_retrieval_profile_is_u_shaped_before_its_threshold():
    """The closed form: its series Σ c^{j+1}Y^j/(j!(j+1)!) equals the Bessel form; for λ > 0 and t < t_crit the
    profile has primacy (decreasing from σ → 0), recency (increasing into σ → 1) and one interior minimum; past
    t_crit the end slope turns negative (the threshold derived in :func:`retrieval_threshold`); λ = 0: no recency."""
    from scipy.special import factorial

    from meanfield.analysis.exact import retrieval_profile, retrieval_rate, retrieval_threshold

    beta, lam = 1.0, 2.0
    s = np.linspace(0.005, 0.995, 199)
    c, Y = retrieval_rate(beta, 1) * 1.5, np.log(np.expm1(lam) / np.expm1(lam * s))
    series = lam * np.exp(lam * s) / np.expm1(lam) * sum(c ** (j + 1) * Y ** j / (factorial(j) * factorial(j + 1))
                                                         for j in range(80))
    np.testing.assert_allclose(retrieval_profile(s, 1.5, beta, lam), series, rtol=1e-13)
    tc = retrieval_threshold(beta, lam, modes=(1, 2), weights=(1.0, 0.5))
    for t, recency in ((0.9 * tc, True), (1.1 * tc, False)):
        p = retrieval_profile(s, t, beta, lam, modes=(1, 2), weights=(1.0, 0.5))
        slopes = np.sign(np.diff(p))
        assert slopes[0] < 0  # primacy
        if recency:
            assert slopes[-1] > 0 and np.count_nonzero(np.diff(slopes)) == 1  # one interior minimum: U
        else:
            assert slopes[-1] < 0
    assert np.all(np.diff(retrieval_profile(s, 1.0, beta, 0.0)) < 0)  # λ = 0: decreasing, no recency


def _particle_response(model, n, sigma, width, t, seed, eps=1e-5):
    """Tokens at s_i = (i + ½)/n with iid uniform angles; those within ``width`` of ``sigma`` turned by ε sin θ (the
    density's source −(ε/2π) cos θ on the window): the sin θ coefficient of the last tokens' (s > 1 − width)
    displacement against the unperturbed run, over ε."""
    s = (np.arange(n) + 0.5) / n
    theta0 = np.random.default_rng(seed).uniform(0, 2 * np.pi, n)

    def run(theta):
        x = with_positions(np.stack([np.cos(theta), np.sin(theta)], -1))
        y = particles.simulate(model, x, [0.0, t], dt=0.02).x[-1]
        return np.arctan2(y[:, 2], y[:, 1])

    base = run(theta0)
    moved = run(theta0 + eps * np.sin(theta0) * (np.abs(s - sigma) < width))
    last = s > 1 - width
    d, S = np.angle(np.exp(1j * (moved - base)))[last], np.sin(base[last])
    return (d @ S) / (S @ S) / eps


def test_retrieval_profile_against_particles():
    """The last tokens' linear response to tokens turned in a window about σ = 0.75, against the closed form
    integrated over the window (:func:`meanfield.analysis.exact.retrieval_window`): within 10 % at N = 4000. The error is the
    sampling of iid angles (the regression over ~200 last tokens): measured −5.4, +5.6, +1.6, −4.3 % for four seeds
    at N = 2000 (sd ≈ 5 %, falling like N^{-1/2}: ≈ 3.5 % at N = 4000, where two seeds gave −0.4 and +2.2 %), so
    10 % is about 3 sd."""
    from meanfield.analysis.exact import retrieval_window

    model = SelfAttention(1.0, causal=True, decay=2.0)
    got = _particle_response(model, 4000, 0.75, 0.05, 1.0, seed=1)
    expected = retrieval_window(0.75, 0.05, 1.0, 1.0, 2.0, 0.05)
    assert abs(got / expected - 1) <= 0.1, (got, expected)


def test_usa_speed_bound_holds_with_a_growing_weight(rng):
    """USA with λ < 0 weighs the far past by up to e^{|λ|} (τ = 0 seen from s = 1): the speed bound v(1 + a)e^a
    gains exactly that factor, and bounds |X| of tokens at τ = 0 seen from s = 1 (the weight e^{|λ|} attained)."""
    pts = with_positions(_tokens(40, 3, rng), np.r_[np.zeros(39), 1.0])
    w = np.full(40, 1 / 40)
    plain = SelfAttention(1.0, causal=True, normalized=False).speed_bound()
    model = SelfAttention(1.0, causal=True, decay=-3.0, normalized=False)
    assert model.speed_bound() == pytest.approx(np.exp(3.0) * plain, rel=1e-15)
    assert np.max(np.linalg.norm(model.field(pts, w, pts), axis=-1)) <= model.speed_bound()


def test_the_retrieval_profile_at_a_large_decay_is_the_unscaled_formula():
    """λ = 800: κ = λe^{λσ}/(e^{λs} − 1) overflows in double as written; the profile is computed divided through by
    e^{λs}. Against the formula as written, in 50-digit arithmetic (mpmath): relative 1e-12 (the double form's
    round-off: a few ulps of λ(s − σ) ~ 700 in an exponent, 700·2e-16 ≈ 1.5e-13, with a 10× margin)."""
    import mpmath

    from meanfield.analysis.exact import retrieval_profile, retrieval_rate

    lam, beta, t, sigma = 800.0, 1.0, 0.5, np.array([0.2, 0.5, 0.9, 0.999])
    got = retrieval_profile(sigma, t, beta, lam)
    mpmath.mp.dps = 50
    c = mpmath.mpf(retrieval_rate(beta, 1) * t)
    for g, s in zip(got, sigma):
        s = mpmath.mpf(float(s))
        kappa = lam * mpmath.e ** (lam * s) / (mpmath.e ** lam - 1)
        Y = mpmath.log((mpmath.e ** lam - 1) / (mpmath.e ** (lam * s) - 1))
        want = kappa * mpmath.sqrt(c / Y) * mpmath.besseli(1, 2 * mpmath.sqrt(c * Y))
        assert np.isfinite(g) and abs(g - float(want)) <= 1e-12 * float(want)
