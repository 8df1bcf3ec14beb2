"""Particle systems against mathematics: exact reductions, invariants, orders, symmetries."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.stats import special_ortho_group

import meanfield as mf
import particles as pt
from meanfield.analysis import exact
from meanfield import kernels
from validation import observed_order


def pairwise_inner(x):
    G = np.einsum("...id,...jd->...ij", x, x)
    iu = np.triu_indices(x.shape[-2], 1)
    return G[..., iu[0], iu[1]]


# ------------------------------------------------------------------ orthogonal start (GLPR Thm 6.8)
@pytest.mark.parametrize("normalized", [True, False])
@pytest.mark.parametrize("beta", [1.0, 4.0])
def test_orthogonal_start_follows_equiangular_ode(normalized, beta):
    t = np.linspace(0, 10, 41)
    x0 = pt.orthogonal(8, 8, rng=7)
    tr = pt.simulate(mf.SelfAttention(beta, normalized=normalized), x0, t, method="dop853", rtol=1e-12, atol=1e-14)
    rho = pairwise_inner(tr.x)  # (T, 28)
    # all pairwise inner products stay equal ...
    assert np.max(np.ptp(rho, axis=1)) <= 1e-9
    # ... and follow (6.9) for SA, (6.10) for USA
    assert np.max(np.abs(rho - exact.equiangular(t, 8, beta, normalized)[:, None])) <= 1e-8


def test_orthogonal_start_rk4_default_step():
    t = np.linspace(0, 10, 11)
    tr = pt.simulate(mf.SelfAttention(2.0), pt.orthogonal(8, 8, rng=1), t)
    assert np.max(np.abs(pairwise_inner(tr.x) - exact.equiangular(t, 8, 2.0)[:, None])) <= 1e-8


# ------------------------------------------------------------------ β = 0 on the circle (Ott–Antonsen)
def first_moment(x):
    return x[..., 0].mean(-1) + 1j * x[..., 1].mean(-1)


def test_ngon_through_mobius_map_is_exact():
    """A regular N-gon pushed through the Möbius map is an exact discrete oracle (MATH.md §3)."""
    a0, N = 0.3 + 0.1j, 4000
    th = exact.wrapped_cauchy_sample(2 * np.pi * np.arange(N) / N, a0)
    t = np.linspace(0, 5, 6)
    tr = pt.simulate(mf.SelfAttention(0.0), np.stack([np.cos(th), np.sin(th)], -1), t, method="dop853", rtol=1e-12)
    assert np.max(np.abs(first_moment(tr.x) - exact.ott_antonsen(t, a0))) <= 1e-10


def test_iid_wrapped_cauchy_follows_ott_antonsen_within_monte_carlo_error():
    a0, R = 0.3, 6
    t = np.linspace(0, 5, 6)
    a = exact.ott_antonsen(t, a0)
    rms = {}
    for n in (10**4, 10**5):
        rng = np.random.default_rng(n)
        th = exact.wrapped_cauchy_sample(rng.uniform(0, 2 * np.pi, (R, n)), a0)
        tr = pt.simulate(mf.SelfAttention(0.0), np.stack([np.cos(th), np.sin(th)], -1), t, dt=0.1)
        dev = first_moment(tr.x) - a[:, None]  # (T, R)
        rms[n] = np.sqrt(np.mean(np.abs(dev) ** 2, axis=1))
        # no bias beyond Monte-Carlo error: the mean deviation is within 4 standard errors
        assert np.all(np.abs(dev.mean(axis=1)) <= 4 * rms[n] / np.sqrt(R))
        # at t = 0 the spread is the iid one, sqrt((1 - |a0|^2)/n), up to sampling of R runs
        assert rms[n][0] == pytest.approx(np.sqrt((1 - a0**2) / n), rel=0.6)
    # the deviation is Monte-Carlo error: it shrinks like n^{-1/2} (factor √10 ≈ 3.2)
    ratio = rms[10**4] / rms[10**5]
    assert np.all((ratio > 1.6) & (ratio < 6.5)), ratio


# ------------------------------------------------------------------ invariants
@pytest.mark.parametrize("normalized", [True, False])
def test_energy_non_decreasing_and_unit_norm(normalized, rng):
    beta = 3.0
    x0 = pt.uniform_sphere(40, 3, rng=rng, batch=3)
    t = np.linspace(0, 4, 81)
    tr = pt.simulate(mf.SelfAttention(beta, normalized=normalized), x0, t, dt=0.005)
    w = np.full((3, 40), 1 / 40)
    E = np.array([kernels.energy(x, w, beta) for x in tr.x])  # (T, 3)
    assert np.all(np.diff(E, axis=0) >= -1e-12 * E[1:])
    assert np.all(E[-1] > E[0])
    assert np.max(np.abs(np.linalg.norm(tr.x, axis=-1) - 1)) <= 1e-12


def test_v_minus_identity_decreases_energy(rng):
    x0 = pt.uniform_sphere(30, 3, rng=rng)
    t = np.linspace(0, 2, 41)
    tr = pt.simulate(mf.SelfAttention(2.0, V=-np.eye(3)), x0, t, dt=0.01)
    E = np.array([mf.SelfAttention(2.0).energy(x, np.full(30, 1 / 30)) for x in tr.x])
    assert np.all(np.diff(E) <= 1e-12 * E[1:])


def test_rk4_fourth_order(rng):
    model = mf.SelfAttention(3.0, Q=rng.standard_normal((3, 3)), K=rng.standard_normal((3, 3)))
    x0 = pt.uniform_sphere(20, 3, rng=rng)
    t = [0.0, 1.0]
    ref = pt.simulate(model, x0, t, method="dop853", rtol=1e-13, atol=1e-15).x[-1]
    hs = np.array([1 / 8, 1 / 16, 1 / 32, 1 / 64])
    errs = [np.max(np.abs(pt.simulate(model, x0, t, dt=h).x[-1] - ref)) for h in hs]
    assert abs(observed_order(hs, errs).order - 4) < 0.2


def test_general_multihead_runs_and_stays_on_sphere(rng):
    d = 4
    heads = [mf.SelfAttention(1.0, *(rng.standard_normal((d, d)) for _ in range(3))),
             mf.SelfAttention(0.5, normalized=False, V=rng.standard_normal((d, d)))]
    tr = pt.simulate(mf.MultiHeadAttention(heads), pt.uniform_sphere(16, d, rng=rng, batch=2), [0, 0.5, 1.0], dt=0.01)
    assert tr.x.shape == (3, 2, 16, d)
    assert np.max(np.abs(np.linalg.norm(tr.x, axis=-1) - 1)) <= 1e-12


def test_batch_equals_separate_runs(rng):
    x0 = pt.uniform_sphere(12, 3, rng=rng, batch=3)
    model = mf.SelfAttention(2.0)
    batched = pt.simulate(model, x0, [0, 1], dt=0.05).x[-1]
    for b in range(3):
        np.testing.assert_allclose(batched[b], pt.simulate(model, x0[b], [0, 1], dt=0.05).x[-1], atol=1e-14)


def test_spectral_and_pairwise_trajectories_agree(rng):
    th = rng.uniform(0, 2 * np.pi, 1500)
    x0 = np.stack([np.cos(th), np.sin(th)], -1)
    model = mf.SelfAttention(4.0)
    a = pt.simulate(model, x0, [0, 1], dt=0.02, strategy="spectral")
    b = pt.simulate(model, x0, [0, 1], dt=0.02, strategy="pairwise")
    assert a.strategy == "spectral" and b.strategy == "pairwise"
    assert np.max(np.abs(a.x - b.x)) <= 1e-12
    assert a.field_error_bound <= 1e-14


@pytest.mark.parametrize("beta, normalized, c", [(4.0, True, 1.0), (2.0, False, -0.5)])
def test_sphere_spectral_and_pairwise_trajectories_agree(rng, beta, normalized, c):
    """S² particles through the O(nL²) spectral sums follow the pairwise trajectories to round-off, with a
    certified truncation bound below 1e-14; 'auto' takes them from the measured crossover on."""
    from meanfield.domains.sphere.point_sums import sphere_degree
    from meanfield.domains.sphere import SPECTRAL_CROSSOVER

    x0 = pt.uniform_sphere(1500, 3, rng=rng)
    model = mf.SelfAttention(beta, V=c * np.eye(3), normalized=normalized)
    a = pt.simulate(model, x0, [0, 1], dt=0.02, strategy="spectral")
    b = pt.simulate(model, x0, [0, 1], dt=0.02, strategy="pairwise")
    assert a.strategy == "spectral" and b.strategy == "pairwise"
    assert np.max(np.abs(a.x - b.x)) <= 1e-12
    assert a.field_error_bound <= 1e-14
    n_auto = SPECTRAL_CROSSOVER.at(sphere_degree(1.0))
    assert pt.simulate(mf.SelfAttention(1.0), pt.uniform_sphere(n_auto, 3, rng=1), [0, 0.1]).strategy == "spectral"
    assert pt.simulate(mf.SelfAttention(1.0), pt.uniform_sphere(n_auto - 1, 3, rng=1), [0, 0.1]).strategy == "pairwise"
    with pytest.raises(ValueError, match="spectral"):
        pt.simulate(mf.SelfAttention(1.0), pt.uniform_sphere(50, 4, rng=1), [0, 0.1], strategy="spectral")


def _auto(domain, model, n, d):
    from meanfield.kernels import strategies

    offered = strategies.for_particles(model, domain, n, d, method="rk4", batched=False, weighted=False)
    return strategies.resolve("auto", offered, "particles")


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("beta", [1.0, 4.0, 16.0, 256.0])
def test_auto_takes_point_sums_from_the_measured_crossover(d, beta, monkeypatch):
    """'auto' asks the domain: the pairwise sums below the measured crossover max(floor, per_degree (L + 1))
    (``SPECTRAL_CROSSOVER``, S¹ and S² each their own), the point sums at it and above, and the pairwise sums again
    wherever the point sums' a-priori error bound at the particles exceeds ``POINT_SUMS_TOLERANCE``."""
    import meanfield.domains.base as base
    from meanfield.domains import CIRCLE, SPHERE
    from meanfield.domains import circle as circle_domain, sphere as sphere_domain

    domain, module = (CIRCLE, circle_domain) if d == 2 else (SPHERE, sphere_domain)
    sums = domain.point_sums(d)
    n_star = module.SPECTRAL_CROSSOVER.at(sums.degree(beta))
    assert n_star == max(module.SPECTRAL_CROSSOVER.floor,
                         int(np.ceil(module.SPECTRAL_CROSSOVER.per_degree * (sums.degree(beta) + 1))))
    model = mf.SelfAttention(beta)
    assert _auto(domain, model, n_star - 1, d) == "pairwise"
    assert _auto(domain, model, n_star, d) == "spectral"
    assert _auto(domain, model, 10**6, d) == "spectral"
    # the bound at a million particles of equal weights is within the stated tolerance (1e-9 relative to |c|) ...
    assert sums_bound(d)(10**6, beta) <= base.POINT_SUMS_TOLERANCE
    # ... and where it is not, 'auto' keeps the pairwise sums, however many particles
    monkeypatch.setattr(base, "POINT_SUMS_TOLERANCE", 0.5 * sums_bound(d)(n_star, beta))
    assert _auto(domain, model, n_star, d) == "pairwise"


def sums_bound(d):
    """The a-priori bound of the point sums at the particles (``self_query_bound``) on S¹ (d = 2) or S² (d = 3)."""
    from meanfield.domains.circle import point_sums as circle_sums
    from meanfield.domains.sphere import point_sums as sphere_sums

    return (circle_sums if d == 2 else sphere_sums).self_query_bound


@pytest.mark.parametrize("d", [2, 3])
def test_point_and_pair_fields_agree_within_the_bound_on_each_side_of_the_crossover(d, rng):
    """The SA β = 4 field at the particles by the point sums and by the pairwise sums, at a size below and above the
    crossover (on S² both evaluations of the point sums: the recurrences below 4096 points + queries, ducc0's
    non-uniform transforms above): their difference is within the run's own bound (the per-query truncation bound,
    itself within the a-priori bound ``self_query_bound``) plus round-off. Error model of the round-off: the pairwise
    sums ~n ε |X| with |X| <= 1 (≈ 1e-12 at n = 4000), ducc0's transforms ``NONUNIFORM_EPSILON`` = 1e-13 relative;
    allowed 1e-11 (a 10x margin)."""
    from meanfield import kernels
    from meanfield.domains import CIRCLE, SPHERE
    from meanfield.domains import circle as circle_domain, sphere as sphere_domain

    domain = CIRCLE if d == 2 else SPHERE
    sums = domain.point_sums(d)
    beta = 4.0
    model = mf.SelfAttention(beta)
    crossover = (circle_domain if d == 2 else sphere_domain).SPECTRAL_CROSSOVER
    n_star = crossover.at(sums.degree(beta))
    for n in (n_star // 2, 2 * n_star):
        x = pt.uniform_sphere(n, d, rng=rng)
        x[: n // 4] = x[0] + 0.05 * x[: n // 4]  # a cluster: the softmax weights far from uniform
        x /= np.linalg.norm(x, axis=-1, keepdims=True)
        w = np.full(n, 1.0 / n)
        v, bound = sums.field(x, w, x, beta, True, 1.0)
        exact = kernels.pairwise_field(model, x, w, x)
        assert np.all(np.isfinite(bound)) and np.max(bound) <= sums_bound(d)(n, beta)
        err = np.linalg.norm(v - exact, axis=-1)
        assert np.all(err <= bound + 1e-11), (n, float(np.max(err)))


def test_density_initial_condition_is_sampled_with_rng():
    d = mf.Density.from_function(mf.CircleGrid(64), lambda x: np.exp(2 * x[..., 0]))
    a = pt.simulate(mf.SelfAttention(1.0), (d, 50), [0, 0.1], rng=3)
    b = pt.simulate(mf.SelfAttention(1.0), (d, 50), [0, 0.1], rng=3)
    np.testing.assert_array_equal(a.x, b.x)
    assert a.x.shape == (2, 50, 2)


# ------------------------------------------------------------------ symmetries (property tests)
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), beta=st.floats(0, 8), normalized=st.booleans())
def test_permutation_equivariance(seed, beta, normalized):
    rng = np.random.default_rng(seed)
    x0 = pt.uniform_sphere(10, 3, rng=rng)
    p = rng.permutation(10)
    model = mf.SelfAttention(beta, normalized=normalized)
    dt = 0.02 / mf.models.rate_scale(model)  # USA runs e^β times faster
    a = pt.simulate(model, x0, [0, 25 * dt], dt=dt).x[-1]
    b = pt.simulate(model, x0[p], [0, 25 * dt], dt=dt).x[-1]
    np.testing.assert_allclose(b, a[p], atol=1e-12)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(2, 5), beta=st.floats(0, 8))
def test_rotation_equivariance(seed, d, beta):
    rng = np.random.default_rng(seed)
    x0 = pt.uniform_sphere(9, d, rng=rng)
    R = special_ortho_group.rvs(d, random_state=rng)
    model = mf.SelfAttention(beta)
    a = pt.simulate(model, x0, [0, 0.5], dt=0.05).x[-1]
    b = pt.simulate(model, x0 @ R.T, [0, 0.5], dt=0.05).x[-1]
    np.testing.assert_allclose(b, a @ R.T, atol=1e-12)


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    "x0, t_eval, kw, exc, match",
    [
        (np.array([[1.0, 2e-4], [0.0, 1.0]]), [0, 1], {}, ValueError, "unit vectors"),
        (np.array([[np.nan, 1.0], [0.0, 1.0]]), [0, 1], {}, ValueError, "non-finite"),
        (np.array([1.0, 0.0]), [0, 1], {}, ValueError, "shape"),
        (np.ones((2, 2, 2, 2)) / 2**0.5, [0, 1], {}, ValueError, "shape"),
        (np.eye(2), [0, 1, 0.5], {}, ValueError, "increasing"),
        (np.eye(2), [0], {}, ValueError, "t_eval"),
        (np.eye(2), [0, 1], {"method": "euler"}, ValueError, "method"),
        (np.eye(2), [0, 1], {"method": "rk45", "dt": 0.1}, ValueError, "dt"),
        (np.eye(2), [0, 1], {"dt": -1.0}, ValueError, "dt"),
        (np.eye(4), [0, 1], {"strategy": "spectral"}, ValueError, "spectral"),  # S^3: no spectral sums
    ],
)
def test_bad_input(x0, t_eval, kw, exc, match):
    with pytest.raises(exc, match=match):
        pt.simulate(mf.SelfAttention(1.0), x0, t_eval, **kw)


def test_model_dimension_mismatch():
    with pytest.raises(ValueError, match="3×3"):
        pt.simulate(mf.SelfAttention(1.0, Q=np.eye(3)), np.eye(2), [0, 1])
    with pytest.raises(TypeError, match="model"):
        pt.simulate("SA", np.eye(2), [0, 1])


def test_usa_overflow_is_an_error():
    x0 = pt.uniform_sphere(5, 3, rng=0)
    with pytest.raises(OverflowError, match="USA"):
        pt.simulate(mf.SelfAttention(800.0, normalized=False), x0, [0, 1], dt=0.1)
    with pytest.raises(ValueError, match="pass `dt`"):
        pt.simulate(mf.SelfAttention(800.0, normalized=False), x0, [0, 1])


def test_simulate_progress_defaults_to_on_exactly_where_stderr_is_a_terminal(monkeypatch, tqdm_bars):
    """simulate(progress=None), the default: a bar where sys.stderr.isatty(), none under pytest's captured stream;
    an explicit False wins."""
    import sys

    model, x0 = mf.SelfAttention(1.0), pt.uniform_sphere(8, 3, rng=0)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    pt.simulate(model, x0, [0.0, 0.1])
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    pt.simulate(model, x0, [0.0, 0.1])
    pt.simulate(model, x0, [0.0, 0.1], progress=False)
    assert [shown for shown, _ in tqdm_bars] == [False, True, False]


def test_a_batched_trajectory_gives_measures_and_frames_by_batch_index():
    """Trajectory.measure(k) without a batch index is the batch of measures (as before frames); frame(k) is one
    measure, so a batch needs its index (the error says so); frame(k, i).as_measure() is measure(k, i)."""
    import meanfield as mf

    x0 = np.stack([pt.uniform_sphere(6, 3, rng=s) for s in (0, 1)])
    tr = pt.simulate(mf.SelfAttention(1.0), x0, [0.0, 0.1], dt=0.05)
    assert tr.measure(-1).points.shape == (2, 6, 3)
    with pytest.raises(ValueError, match="batch index"):
        tr.frame(-1)
    a, b = tr.frame(-1, 1).as_measure(), tr.measure(-1, 1)
    assert np.array_equal(a.points, b.points) and np.array_equal(a.weights, b.weights)


def test_auto_bound_takes_the_smallest_weight():
    """The point sums' a-priori bound rests on S(x_i) >= w_i >= min|w| (the query's own term): 'auto' takes the
    effective count Σ|w|/min|w|. Circle, β = 16, n = 3000 (above the crossover): equal weights keep the point sums
    (n_eff = n, the choice at the crossover unchanged), one far particle of relative weight 1e-20 or a zero weight
    (n_eff = inf: its S may be tiny) gives the pairwise sums, in ``simulate`` too."""
    from meanfield.domains import CIRCLE
    from meanfield.domains.base import effective_count
    from meanfield.kernels import strategies

    n, beta = 3000, 16.0
    model = mf.SelfAttention(beta)
    th = np.linspace(0.0, 0.5, n)
    th[-1] = np.pi  # far from the others: its S is its own term
    x = np.stack([np.cos(th), np.sin(th)], axis=-1)
    w = np.ones(n)
    w[-1] = 1e-20
    zero = np.ones(n)
    zero[-1] = 0.0
    assert effective_count(n) == n and effective_count(n, np.full(n, 0.25)) == n
    assert effective_count(n, w) == pytest.approx((n - 1) * 1e20) and effective_count(n, zero) == np.inf

    def auto(weights):
        offered = strategies.for_particles(model, CIRCLE, n, 2, method="rk4", batched=False,
                                           weighted=weights is not None, weights=weights)
        return strategies.resolve("auto", offered, "particles")

    assert auto(None) == "spectral" and auto(np.full(n, 1.0 / n)) == "spectral"
    assert auto(w) == "pairwise" and auto(zero) == "pairwise"
    assert pt.simulate(model, x, [0, 0.01], dt=0.01, weights=w).strategy == "pairwise"


def test_auto_takes_the_point_sums_at_any_count_for_repulsion_on_the_circle():
    """β < 0 on S¹ (MATH.md §13): every scaled term e^{β(⟨x,y⟩−1)} >= 1, so S >= Σw at every query and the a-priori
    bound of the point sums is free of n (truncation and round-off per unit mass): 'auto' takes them at β = −4 for
    10⁶ particles (they were refused from 10⁶ on when the bound carried the factor n), and their field at 3000
    clustered particles (S near its least, Σw: the worst cancellation of the e^{2|β|}-sized multipliers) agrees with
    the pairwise sums within that bound plus the pairwise round-off (~n ε ≈ 1e-12; the bound at β = −4 is ≈ 3e-12,
    measured error ≈ 3e-13)."""
    from meanfield.domains import CIRCLE
    from meanfield.domains.circle import point_sums as circle_sums

    beta = -4.0
    model = mf.SelfAttention(beta)
    bound = circle_sums.self_query_bound(np.inf, beta)
    assert bound == circle_sums.self_query_bound(10, beta) <= 1e-9
    assert _auto(CIRCLE, model, 10**6, 2) == "spectral"
    n = 3000
    th = np.random.default_rng(5).uniform(0.0, 1.0, n)
    x = np.stack([np.cos(th), np.sin(th)], axis=-1)
    w = np.full(n, 1.0 / n)
    S = np.exp(beta * (x @ x.T - 1.0)) @ w
    assert np.min(S) >= np.sum(w) * (1 - 1e-12)  # the lower bound the n-free bound rests on
    v, _ = CIRCLE.point_sums(2).field(x, w, x, beta, True, 1.0)
    err = np.linalg.norm(v - kernels.pairwise_field(model, x, w, x), axis=-1)
    assert np.max(err) <= bound + 1e-11
