"""Context-length scaling β_n (MATH.md §13): the rule read in one place, the one-layer limit and its finite-n formula,
the iid-keys critical exponent."""

import numpy as np
import pytest

import meanfield as mf
import particles
from meanfield.analysis import exact
from meanfield.models import (
    ContextScaling, MultiHeadAttention, SelfAttention, Transformer, at_context, context_dependent, parse_scaling,
)
from tests.helpers import EPS
from validation import long_context as lc


# ------------------------------------------------------------------ the rule, read in one place
def test_rule_values_and_resolution():
    """β_n = γ log n and γ n^a at n; at_context replaces the rule in a head, heads and a Transformer's attention."""
    assert ContextScaling.log(2.0).at(100) == 2.0 * np.log(100)
    assert ContextScaling.power(0.5, 1.5).at(16) == 0.5 * 16 ** 1.5
    assert ContextScaling.of(lambda n: 3.0 + n).at(7) == 10.0
    rule = ContextScaling.log(1.5)
    head = SelfAttention(rule, V=-np.eye(3))
    assert at_context(head, 40).beta == 1.5 * np.log(40)
    assert np.array_equal(at_context(head, 40).V, -np.eye(3))
    multi = MultiHeadAttention((head, SelfAttention(2.0)))
    assert [h.beta for h in at_context(multi, 40).heads] == [1.5 * np.log(40), 2.0]
    T = Transformer(head, normalization="pre")
    assert not context_dependent(at_context(T, 40)) and at_context(T, 40).attention.beta == 1.5 * np.log(40)
    assert at_context(SelfAttention(2.0), 40) is not None and not context_dependent(SelfAttention(2.0))


def test_study_text():
    for text, value in (("2*log(n)", 2 * np.log(50)), ("log(n)", np.log(50)), ("0.5*n^0.5", 0.5 * 50 ** 0.5),
                        ("3 * n**2", 3 * 2500.0)):
        assert parse_scaling(text).at(50) == pytest.approx(value, rel=4 * EPS)
    for bad in ("2*log(m)", "gamma*log(n)", "-1*log(n)", "exp(n)"):
        with pytest.raises(ValueError, match="beta_scaling|gamma"):
            parse_scaling(bad)


def test_particles_resolve_with_their_n():
    """simulate with the rule equals simulate with the number β_n, bit for bit, for two n (one place reads n)."""
    rng = np.random.default_rng(3)
    for n in (7, 20):
        x = rng.normal(size=(n, 3))
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        run = dict(dt=0.05, strategy="quadrature")
        a = particles.simulate(SelfAttention(ContextScaling.log(0.7)), x, [0.0, 0.5], **run).x
        b = particles.simulate(SelfAttention(0.7 * np.log(n)), x, [0.0, 0.5], **run).x
        assert np.array_equal(a, b)


def test_bad_beta_n_is_refused_naming_it():
    x = np.eye(3)
    for rule, words in ((ContextScaling.of(lambda n: float("nan")), "nan"), (ContextScaling.of(lambda n: -1.0), "-1"),
                        (ContextScaling.of(lambda n: np.inf), "inf")):
        with pytest.raises(ValueError, match=rf"`beta`: β_n = .* at n = 3 must be positive and finite, got {words}"):
            particles.simulate(SelfAttention(rule), x, [0.0, 0.1])
    with pytest.raises(ValueError, match="at n = 1 must be positive"):  # γ log 1 = 0: one token has no context
        particles.discrete_depth(SelfAttention(ContextScaling.log(1.0)), x[:1], 0.1, 1)
    for bad in (0.0, -1.0, np.nan, np.inf):
        with pytest.raises(ValueError, match="`gamma` must be positive and finite"):
            ContextScaling.log(bad)


def test_unresolved_rule_is_not_a_number():
    """A density has no n: solve refuses it with the reason; any use of the rule as a number says how to resolve."""
    model = SelfAttention(ContextScaling.log(2.0))
    with pytest.raises(ValueError, match="depends on the number of tokens n"):
        mf.solve(model, mf.Density.uniform(mf.CircleGrid(16)), (0.0, 1.0))
    with pytest.raises(ValueError, match="at_context"):
        model.average(np.eye(2), np.full(2, 0.5), np.eye(2))
    with pytest.raises(ValueError, match="at_context"):
        float(model.beta)
    assert model.zonal is None and "2 log n" in model.describe()


# ------------------------------------------------------------------ one layer on equiangular tokens
@pytest.mark.parametrize("gamma", [1.2, 2.0, 3.0])
def test_layer_map_matches_finite_n_formula(gamma):
    """Particles through the library's layer map θ' = N(A(θ)) (nGPT at hα = 1) on n = 150 equiangular tokens
    (d = 151) against the exact finite-n formula. Error model: the formula and the layer each round O(10) operations
    on O(1) numbers, the Gram matrix sums 151 products: |Δ| <= ~200 EPS; bound 2000 EPS."""
    g = lc.one_layer_particles(150, gamma, 0.5)
    assert np.max(np.abs(g - exact.one_layer_equiangular(150, gamma, 0.5))) < 2000 * EPS


def test_pair_stats_summarise_the_same_layer():
    """one_layer_pair_stats (the script's rows: no list of pairs) gives the mean, min and max of the pairs that
    one_layer_particles lists, from the same layer map: equal to round-off (the mean of ~n² terms by pairwise
    summation)."""
    g = lc.one_layer_particles(120, 2.0, 0.5)
    s = lc.one_layer_pair_stats(120, 2.0, 0.5)
    assert s["min"] == np.min(g) and s["max"] == np.max(g)
    assert abs(s["mean"] - np.mean(g)) < 1e4 * EPS
    assert s["layer_seconds"] > 0 and s["gram_seconds"] >= 0


@pytest.mark.parametrize("d", [2, 3])
def test_one_layer_by_point_sums_is_the_layer_map(d):
    """The long-context benchmark's one layer at large n: θ' = N(θ + h X[μ^n](θ)) with the field from the point sums
    (particles.velocity, strategy 'spectral', β_n = 1.5 log n) equals the library's layer map (particles.discrete_depth,
    all pairs) on n = 1500 iid tokens. Error model: the point sums' truncation <= 1e-17 of the field's scale
    (circle_degree/sphere_degree) and round-off of sums of 1500 terms, ~1e-15; bound 1e-13."""
    rng = np.random.default_rng(d)
    x = rng.standard_normal((1500, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    model = SelfAttention(ContextScaling.log(1.5))
    y = x + particles.velocity(model, x, strategy="spectral")
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    ref = particles.discrete_depth(model, x, depth=1.0, layers=1).x[-1]
    assert np.max(np.abs(y - ref)) < 1e-13
    assert np.max(np.abs(ref - x)) > 1e-3  # the layer moves the tokens (iid: a field of order n^(-1/2))


def test_formula_limit_and_rates():
    """The exact formula tends to 1, 4ρ/(1 + 3ρ), ρ (a = γ(1 − ρ) <, =, > 1) at the predicted rates: local slopes
    of |ρ'_n − lim| between n = 1e10 and 1e12 within 2 % of 2(1 − a), 1, a − 1."""
    rho = 0.4
    for gamma, limit, rate in ((1.0, 1.0, 2 * (1 - 0.6)), (1 / 0.6, 4 * rho / (1 + 3 * rho), 1.0),
                               (2.5, rho, 2.5 * 0.6 - 1)):
        assert exact.one_layer_limit(gamma, rho) == pytest.approx(limit, abs=4 * EPS)
        assert exact.one_layer_rate(gamma, rho) == pytest.approx(rate, abs=4 * EPS)
        n = np.array([1e10, 1e12])
        e = np.abs(exact.one_layer_equiangular(n, gamma, rho) - limit)
        local = -np.diff(np.log(e))[0] / np.log(100.0)
        assert abs(local - rate) < 0.02 * rate


def test_formula_small_n_by_hand():
    """n = 2 equiangular tokens: A_1 = pθ_1 + (1 − p)θ_2 with p = 2^γ/(2^γ + 2^{γρ}), so ⟨A_1, A_2⟩ = 2p(1 − p) +
    (p² + (1 − p)²)ρ and |A|² = p² + (1 − p)² + 2p(1 − p)ρ."""
    gamma, rho = 1.7, 0.3
    p = 2 ** gamma / (2 ** gamma + 2 ** (gamma * rho))
    num = 2 * p * (1 - p) + (p * p + (1 - p) ** 2) * rho
    den = p * p + (1 - p) ** 2 + 2 * p * (1 - p) * rho
    assert exact.one_layer_equiangular(2, gamma, rho) == pytest.approx(num / den, abs=20 * EPS)


def test_long_context_bad_input():
    for gamma in (0.0, -1.0, np.nan):
        with pytest.raises(ValueError, match="`gamma`"):
            exact.one_layer_limit(gamma, 0.5)
    with pytest.raises(ValueError, match="`rho`"):
        exact.one_layer_equiangular(10, 1.0, 1.0)
    with pytest.raises(ValueError, match="`n`"):
        exact.self_weight(1, 1.0, 0.5)


# ------------------------------------------------------------------ iid keys: the critical exponent
def test_nearest_gaps_law():
    """The exact order-statistics draw of the nearest gap against brute force at n = 500, d = 3 (s = 1 − ⟨q, k⟩ is
    uniform on [0, 2] there, so s_(1) ~ 2 Beta(1, n): mean 2/(n + 1)); 4000 draws: within 4 standard errors."""
    g = lc.nearest_gaps(500, 3, 8, 4000, np.random.default_rng(0))
    assert np.all(np.diff(g, axis=1) >= 0)
    mean, se = g[:, 0].mean(), g[:, 0].std() / np.sqrt(4000)
    assert abs(mean - 2 / 501) < 4 * se


@pytest.mark.parametrize("d", [2, 4])
def test_critical_exponent(d):
    """β*(n) ~ n^{2/(d−1)} (arXiv 2605.08505): the exponent fitted over n = 10²…10⁵ has 2/(d − 1) in its interval
    (95 %, 10 independent groups of 60 draws), and the interval is narrower than 0.1."""
    f = lc.critical_exponent(np.round(np.logspace(2, 5, 4)).astype(np.int64), d, draws=600, groups=10, rng=1)
    lo, hi = f.interval
    assert lo <= 2 / (d - 1) <= hi and hi - lo < 0.1


def test_the_zonal_linearisation_refuses_repulsive_attention_instead_of_a_nan():
    """Its multipliers are β >= 0's (a log(2/β) and e^{−β} scaling): at β < 0 they would be NaN, read as "stable"."""
    from meanfield.analysis import stationary as st
    from meanfield.domains import CIRCLE

    for f in (lambda m: st.linear_rates(m, CIRCLE, [1, 2]), lambda m: st.critical_noise(m, CIRCLE)):
        with pytest.raises(ValueError, match="β = -1.5 < 0"):
            f(mf.SelfAttention(-1.5))
