"""Causal (masked) attention on [0, 1] × S^{d-1} (CACP; docs/MATH.md §8.4).

Asserted: the first token of causal SA with V = cI never moves (to round-off, any Q, K, S² and S^7); the second
against the closed form of its angle (:func:`meanfield.analysis.exact.causal_pair`) to 1e-10 for several β, S² and S^7; the
compiled causal sums (half the pairs) equal to the model's masked sum, whatever the thread count; on the
[0, 1] × S¹ grid, the rows up to s unchanged bit for bit when the law beyond s changes, the first row (which sees
only itself) equal to the ordinary circle equation of its own density, a law constant in s evolving as the circle
equation in every row (the cumulative sums are exact there), the spectral and quadrature right-hand sides equal,
second order in the row spacing, and each row's mass conserved; N particles against the density (W1 decreasing in
N; the rate with its interval in the slow test); and the errors for bad input.
"""

import numpy as np
import pytest

import meanfield as mf
import particles
from meanfield import kernels
from meanfield.density import Density
from meanfield.domains.sequence import SEQUENCE, SequenceGrid, with_positions
from meanfield.analysis.exact import causal_pair
from meanfield.kernels.threads import run_tasks
from meanfield.models import FeedForward, MultiHeadAttention, SelfAttention
from tests.helpers import EPS


def _tokens(n, d, rng):
    x = rng.standard_normal((n, d))
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _angle(a, b):
    """The angle between unit rows, well conditioned at 0 and π."""
    c = np.sum(a * b, axis=-1)
    return np.arctan2(np.linalg.norm(b - c[..., None] * a, axis=-1), c)


def _law(grid, tilt=1.0):
    """A smooth positive density on [0, 1] × S¹ whose rows depend on s."""
    s, th = grid.positions[:, None], grid.angles[None, :]
    return (1.0 + 0.4 * np.cos(th - tilt * s) + 0.2 * np.sin(2 * th) * s) / (2 * np.pi)


@pytest.mark.parametrize("d", [3, 8])
@pytest.mark.parametrize("normalized", [True, False])
def test_first_token_never_moves(d, normalized, rng):
    """Token 0 sees only itself: u = V x_1 = c x_1, whose tangent part is 0 (any Q, K)."""
    model = SelfAttention(1.5, Q=np.eye(d) + 0.3 * rng.standard_normal((d, d)), K=rng.standard_normal((d, d)),
                          V=-0.7 * np.eye(d), normalized=normalized, causal=True)
    x0 = with_positions(_tokens(32, d, rng))
    traj = particles.simulate(model, x0, np.linspace(0.0, 4.0, 5), dt=0.01)
    assert traj.strategy == "pairwise"
    assert np.max(np.abs(traj.x[:, 0] - traj.x[0, 0])) <= 4e-16  # 400 steps: a few ulps in all
    assert np.max(np.abs(traj.x[:, :, 0] - x0[None, :, 0])) == 0.0  # positions never move
    assert np.max(np.abs(traj.x[-1, 1:] - x0[1:])) > 1e-3  # the others do


@pytest.mark.parametrize("d", [3, 8])
@pytest.mark.parametrize("beta,theta0", [(0.5, 2.5), (2.0, 1.8), (9.0, 0.9)])
def test_second_token_follows_its_closed_form(d, beta, theta0, rng):
    """The angle of token 1 to token 0 against t = G(θ_0) − G(θ) (exponential integrals), to 1e-10."""
    x = _tokens(8, d, rng)
    u = x[1] - (x[1] @ x[0]) * x[0]
    x[1] = np.cos(theta0) * x[0] + np.sin(theta0) * u / np.linalg.norm(u)
    t = np.linspace(0.0, 6.0, 7)
    traj = particles.simulate(SelfAttention(beta, causal=True), with_positions(x), t, dt=0.004)
    got = _angle(traj.x[:, 0, 1:], traj.x[:, 1, 1:])
    expected = causal_pair(t, theta0, beta)
    assert np.max(np.abs(got - expected)) <= 1e-10
    assert abs(expected[-1] - theta0) > 1e-3 * theta0  # it moved


def test_closed_form_against_the_ode():
    """causal_pair against a DOP853 solve of θ' = −sin θ/(1 + e^{β(1 − cos θ)}) (the derivation, checked)."""
    from scipy.integrate import solve_ivp

    t = np.array([0.1, 1.0, 5.0, 20.0])
    for beta in (0.5, 2.0, 9.0):
        sol = solve_ivp(lambda _, th: -np.sin(th) / (1 + np.exp(beta * (1 - np.cos(th)))), (0, 20), [2.5],
                        method="DOP853", rtol=1e-13, atol=1e-300, t_eval=t)
        assert np.max(np.abs(causal_pair(t, 2.5, beta) - sol.y[0]) / sol.y[0]) <= 1e-12


@pytest.mark.parametrize("d", [3, 5, 10])
def test_compiled_causal_sums_equal_the_masked_sum(d, rng):
    """kernels.field (points sorted by position, row i over the first #{τ_j <= s_i}) against the model's masked
    NumPy sum: ties, queries before every point (field 0), a batch, SA/USA, two heads; bit-identical for 1 and 2
    threads."""
    import numba

    B, n = 2, 60
    y = _tokens(B * n, d, rng).reshape(B, n, d)
    tau = rng.uniform(size=(B, n))
    tau[:, :4] = tau[:, 4:5]  # ties see each other
    pts = np.concatenate([tau[..., None], y], axis=-1)
    w = rng.uniform(0.5, 1.5, size=(B, n))
    queries = pts.copy()
    queries[:, ::3, 0] -= 0.3  # some see nothing
    heads = (SelfAttention(3.0, causal=True), SelfAttention(1.0, normalized=False, causal=True,
                                                            Q=rng.standard_normal((d, d)), V=rng.standard_normal((d, d))))
    for model in heads + (MultiHeadAttention(heads),):
        ref = model.field(pts, w, queries)
        assert np.all(ref[..., 0] == 0.0)
        threads = numba.get_num_threads()
        try:
            numba.set_num_threads(1)
            one = kernels.field(model, pts, w, queries)
            numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
            two = kernels.field(model, pts, w, queries)
        finally:
            numba.set_num_threads(threads)
        assert np.array_equal(one, two)
        assert np.max(np.abs(one - ref)) <= 1e-14 * np.max(np.abs(ref))
        none = queries[..., 0] < np.min(tau, axis=-1, keepdims=True)
        assert np.any(none) and np.all(one[none] == 0.0)


def test_cost_balanced_chunks_cover_every_task_once():
    """run_tasks with costs: contiguous chunks, every task exactly once, for any costs."""
    seen = np.zeros(1000, dtype=int)

    def kernel(out, start, stop):
        out[start:stop] += 1

    for costs in (np.arange(1000), np.ones(1000), np.r_[np.zeros(999), 1.0]):
        seen[:] = 0
        run_tasks(kernel, 1000, seen, nthreads=2, costs=costs)
        assert np.all(seen == 1)


def test_claimed_chunks_cover_every_task_once_even_from_inside_the_pool():
    """run_tasks' chunks (CHUNKS_PER_THREAD per thread, claimed by the calling thread and the pool's) cover every task
    exactly once; a call made from a task on the pool itself completes (its caller works through the chunks the
    busy pool does not take)."""
    from meanfield.core.pool import executor

    def kernel(out, start, stop):
        out[start:stop] += 1

    seen = np.zeros(1001, dtype=int)
    run_tasks(kernel, 1001, seen, nthreads=2)
    assert np.all(seen == 1)
    inner = np.zeros((2, 333), dtype=int)

    def task(k):
        run_tasks(kernel, 333, inner[k], nthreads=2)

    for f in [executor(2).submit(task, k) for k in range(2)]:  # both pool threads busy with calls of their own
        f.result(timeout=60)
    assert np.all(inner == 1)


def test_an_exception_in_one_thread_stops_the_others_claiming_chunks():
    """A Ctrl-C raised in the calling thread (outside :func:`meanfield.core.interrupts.deferred` Python raises it there,
    between two chunks) or an error in a pool thread ends the call once the chunks already claimed are done: no
    thread claims a chunk after it (before, the other threads worked through every remaining chunk first — 7 of
    the 8 here, a whole pairwise sum for a notebook's Ctrl-C)."""
    import threading
    import time

    main = threading.get_ident()
    raised = threading.Event()
    ran = {"caller": 0, "helper": 0}

    def caller_interrupted(out, start, stop):  # the caller's first chunk raises; a helper's waits for that, then works
        if threading.get_ident() == main:
            ran["caller"] += 1
            raised.set()
            raise KeyboardInterrupt
        raised.wait(10.0)
        time.sleep(0.05)  # the caller's exception is on its way out meanwhile (microseconds)
        ran["helper"] += 1

    with pytest.raises(KeyboardInterrupt):
        run_tasks(caller_interrupted, 800, None, nthreads=2)  # 8 chunks
    assert ran["caller"] == 1 and ran["helper"] <= 2
    raised.clear()
    ran.update(caller=0, helper=0)

    def helper_fails(out, start, stop):
        if threading.get_ident() != main:
            ran["helper"] += 1
            raised.set()
            raise ValueError("a chunk failed")
        raised.wait(10.0)
        time.sleep(0.05)
        ran["caller"] += 1

    with pytest.raises(ValueError, match="a chunk failed"):
        run_tasks(helper_fails, 800, None, nthreads=2)
    assert ran["caller"] <= 2 or ran["helper"] == 0  # (the helper never started: the caller ran every chunk)


def test_density_rows_do_not_see_what_lies_beyond_them():
    """Changing the law at positions s > s_8 leaves the rows s_0..s_8 unchanged bit for bit (fixed steps)."""
    g = SequenceGrid(64, 17)
    f = _law(g)
    f2 = f.copy()
    f2[9:] = (1.0 + 0.3 * np.cos(2 * g.angles)) / (2 * np.pi)
    a, b = (mf.solve(SelfAttention(3.0, causal=True), Density(g, v), (0.0, 2.0), dt=0.01, refine=False)
            for v in (f, f2))
    assert a.status is mf.Status.SUCCESS and b.status is mf.Status.SUCCESS
    assert np.array_equal(a.densities[-1].values[:9], b.densities[-1].values[:9])
    assert np.max(np.abs(a.densities[-1].values[9:] - b.densities[-1].values[9:])) > 1e-2


def test_first_row_is_the_circle_equation_of_its_own_density():
    """The token at s = 0 sees only the tokens at s = 0: row 0 solves ∂_t f = −∂_θ(f X[f]) of the circle."""
    g = SequenceGrid(64, 9)
    f = _law(g, tilt=2.0)
    model = SelfAttention(4.0, causal=True)
    seq = mf.solve(model, Density(g, f), (0.0, 1.5), dt=0.01, refine=False)
    circle = mf.solve(SelfAttention(4.0), Density(mf.CircleGrid(64), f[0]), (0.0, 1.5), dt=0.01, refine=False)
    assert np.max(np.abs(seq.densities[-1].values[0] - circle.densities[-1].values)) <= 1e-13


def test_law_constant_in_position_evolves_as_the_circle_in_every_row():
    """SA from f_0(s, θ) = g(θ): R(s) = s g and SA's field is invariant under scaling, so every row has the field of
    g and the rows stay equal (the cumulative sums are exact for rows that are equal): each is the circle's
    solution from g. (USA's rows move at speeds s times it, so they part: no such reduction.)"""
    g = SequenceGrid(64, 5)
    row = (1.0 + 0.5 * np.cos(g.angles) + 0.2 * np.sin(3 * g.angles)) / (2 * np.pi)
    seq = mf.solve(SelfAttention(2.0, causal=True), Density(g, np.tile(row, (5, 1))), (0.0, 1.0), dt=0.01,
                   refine=False)
    ref = mf.solve(SelfAttention(2.0), Density(mf.CircleGrid(64), row), (0.0, 1.0), dt=0.01, refine=False,
                   representation="grid")
    assert seq.status is mf.Status.SUCCESS and ref.status is mf.Status.SUCCESS
    assert np.max(np.abs(seq.densities[-1].values - ref.densities[-1].values[None, :])) <= 1e-13


def test_spectral_and_quadrature_right_hand_sides_agree_and_conserve_each_row():
    g = SequenceGrid(96, 9)
    f = _law(g)
    model = SelfAttention(3.0, causal=True)
    spec = SEQUENCE.continuity(model, g, "spectral")
    quad = SEQUENCE.continuity(model, g, "quadrature")
    a, b = spec.rate(f), quad.rate(f)
    # two sums of the same field, each to a few ulps of the flux ρv per node, differentiated spectrally (×n/2 = 48):
    # the flux's round-off, EPS·(n/2)·max|ρv|, is 1.2e-13 of max|a| here (measured: 1.2e-13 on AVX2, 1.0e-13)
    assert np.max(np.abs(a - b)) <= 2e-12 * np.max(np.abs(a))
    assert np.max(np.abs(g.marginal(a))) <= 1e-15
    # any Q, K, V by quadrature: its rows' masses too
    general = SelfAttention(2.0, Q=np.array([[1.0, 0.4], [0.0, 0.8]]), V=np.array([[0.5, -1.0], [1.0, 0.3]]),
                            causal=True)
    assert np.max(np.abs(g.marginal(SEQUENCE.continuity(general, g, "quadrature").rate(f)))) <= 1e-15


def test_second_order_in_the_row_spacing():
    """Rows at s = 0, ½, 1 with 5, 9, …, 129 rows: the differences between successive halvings fall 4× each."""
    def final(m):
        g = SequenceGrid(64, m)
        sol = mf.solve(SelfAttention(3.0, causal=True), Density(g, _law(g, tilt=3.0)), (0.0, 1.0), dt=0.01,
                       refine=False)
        assert sol.status is mf.Status.SUCCESS
        v = sol.densities[-1].values
        return v[[0, (m - 1) // 2, m - 1]]

    rows = [final(m) for m in (5, 9, 17, 33, 65, 129)]
    differences = np.array([np.max(np.abs(a - b)) for a, b in zip(rows, rows[1:])])
    orders = np.log2(differences[:-1] / differences[1:])
    assert np.all(orders > 1.9) and np.all(orders < 2.1), orders


def test_particles_approach_the_density():
    """W1 of N iid tokens, run causally, to the density at t = 1 decreases with N (the rate: the slow test)."""
    from validation.wasserstein import distance

    g = SequenceGrid(64, 33)
    rho0 = Density(g, _law(g))
    model = SelfAttention(2.0, causal=True)
    sol = mf.solve(model, rho0, (0.0, 1.0))
    w = []
    for n in (100, 1600):
        x0 = particles.sample(rho0, n, rng=np.random.default_rng(n))
        x = particles.simulate(model, x0, [0.0, 1.0], dt=0.01).x[-1]
        w.append(distance(sol.densities[-1], x, p=1).value)
    assert w[1] < 0.55 * w[0]


@pytest.mark.slow
def test_meanfield_limit_rate_on_positions_times_circle():
    """W1(μ^N_t, f_t) at N = 100…6400 (5 repeats) on [0, 1] × S¹ (intrinsic dimension 2): W1/√(log N) ~ N^α with
    α's 95% interval within [−0.65, −0.35] at t = 0 and t = 1 (MATH.md §4: −1/2)."""
    from validation.meanfield_limit import fit_exponent
    from validation.wasserstein import distance

    g = SequenceGrid(128, 65)
    rho0 = Density(g, _law(g))
    model = SelfAttention(2.0, causal=True)
    sol = mf.solve(model, rho0, (0.0, 1.0), [0.0, 1.0])
    ns = np.array([100, 400, 1600, 6400])
    rng = np.random.default_rng(7)
    W = np.empty((2, ns.size, 5))
    for i, n in enumerate(ns):
        x0 = particles.sample(rho0, n, rng=rng, batch=5)
        x = particles.simulate(model, x0, [0.0, 1.0], dt=0.01).x
        for k in range(2):
            W[k, i] = distance(sol.densities[k], x[k], p=1).value
    for k in range(2):
        slope, (lo, hi) = fit_exponent(ns, W[k] / np.sqrt(np.log(ns))[:, None])
        assert -0.65 <= lo and hi <= -0.35, (k, slope, lo, hi)


def test_geometry_of_positions_times_sphere(rng):
    """Projection and retraction act on the x part only; the distance is the product's √(Δs² + angle²), a metric;
    ``chord_distance`` bounds it from above given the chord in R^{1+d} (what certified coarsening needs), and is
    attained with Δs = 0."""
    x = with_positions(_tokens(30, 3, rng), rng.uniform(size=30))
    v = rng.normal(size=x.shape)
    t = SEQUENCE.project(x, v)
    assert np.all(t[:, 0] == 0) and np.allclose(np.sum(t[:, 1:] * x[:, 1:], -1), 0, atol=16 * EPS * np.max(np.abs(v)))
    y = SEQUENCE.retract(x + 0.3 * t)
    assert np.array_equal(y[:, 0], x[:, 0]) and SEQUENCE.contains(y)
    D = SEQUENCE.distance(x, x)
    expected = np.sqrt((x[:, None, 0] - x[None, :, 0]) ** 2 + _angle(x[:, None, 1:], x[None, :, 1:]) ** 2)
    np.testing.assert_allclose(D, expected, atol=1e-7)
    assert np.all(D[:, :, None] <= D[:, None, :] + D.T[None, :, :] + 1e-12)
    chord = np.linalg.norm(x[:, None] - x[None, :], axis=-1)
    assert np.all(SEQUENCE.chord_distance(chord) >= D - 1e-12)
    same = x.copy()
    same[:, 0] = 0.3
    np.testing.assert_allclose(SEQUENCE.chord_distance(np.linalg.norm(same[:, None] - same[None, :], axis=-1)),
                               SEQUENCE.distance(same, same), atol=1e-7)


def test_samples_follow_the_density_read_linearly_in_position():
    """iid tokens from the grid density: the positions' law (its marginal, linear between rows) and the angles' first
    Fourier moment given s in a cell, within 5 standard errors; interpolation is exact at the nodes."""
    g = SequenceGrid(64, 5)
    f = _law(g) * (1.0 + g.positions[:, None])  # a marginal that grows with s
    rho = Density(g, f)
    x = particles.sample(rho, 200_000, rng=np.random.default_rng(3))
    s = x[:, 0]
    m = g.marginal(rho.values)
    # P(s <= 1/2): the linear marginal's integral over [0, 1/2], against its total
    cells = 0.5 * g.h * (m[:-1] + m[1:])
    assert abs(np.mean(s <= 0.5) - cells[:2].sum() / cells.sum()) < 5 * np.sqrt(0.25 / s.size)
    np.testing.assert_allclose(g.interpolate(rho.values, g.points), rho.values, atol=1e-13)
    assert SEQUENCE.contains(x)


def test_bad_input():
    g = SequenceGrid(32, 5)
    rho = Density(g, _law(g))
    with pytest.raises(ValueError, match="positions"):  # a causal model on a domain without positions
        mf.solve(SelfAttention(1.0, causal=True), mf.Density.from_function(mf.CircleGrid(32), lambda x: 1 + 0 * x[:, 0]),
                 (0, 1))
    with pytest.raises(ValueError, match="causal"):  # tokens with positions need a causal model
        mf.solve(SelfAttention(1.0), rho, (0, 1))
    with pytest.raises(ValueError, match="chart"):
        mf.solve(SelfAttention(1.0, causal=True), rho, (0, 1), representation="nodes")
    with pytest.raises(TypeError, match="causal"):
        SelfAttention(1.0, causal="yes")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        particles.simulate(SelfAttention(1.0, causal=True), np.array([[1.5, 1.0, 0.0, 0.0]] * 3), [0, 1])
    with pytest.raises(ValueError, match="different domains"):
        SelfAttention(1.0, causal=True) + SelfAttention(1.0)
    with pytest.raises(ValueError, match="feed-forward blocks beside causal attention are not implemented"):
        SelfAttention(1.0, causal=True) + FeedForward(np.eye(2), np.eye(2))
    with pytest.raises(ValueError, match="energy"):
        SelfAttention(1.0, causal=True).energy(np.eye(3), np.ones(3) / 3)
    with pytest.raises(ValueError, match="positions"):
        SequenceGrid(32, 1)
