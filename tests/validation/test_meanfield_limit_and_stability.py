"""The mean-field limit rate (regression tests); the stability bounds are in test_stability.py."""

import numpy as np
import pytest

import meanfield as mf
import particles
from meanfield.domains.circle import points_to_angles
from validation.meanfield_limit import fit_exponent, meanfield_limit
from validation.stability import stability
from validation.wasserstein import wasserstein


def smooth(n, shift=0.0):
    return mf.Density.from_function(
        mf.CircleGrid(n),
        lambda x: np.exp(np.cos(points_to_angles(x) - shift) + 0.5 * np.sin(2 * points_to_angles(x))),
    )


def test_meanfield_limit_rate_on_the_circle():
    """SA, β = 1: W1(μ^N_t, μ_t) ~ N^{-1/2} over N = 10²..10⁴ at t = 2 (MATH.md §4)."""
    r = meanfield_limit(mf.SelfAttention(1.0), smooth(128), [100, 316, 1000, 3162, 10000], [0.0, 1.0, 2.0],
                        repeats=8, rng=0)
    assert r.distances.shape == (5, 8, 3) and r.baseline.shape == (5, 8)
    assert abs(r.exponent[-1] + 0.5) <= 0.1
    lo, hi = r.exponent_ci[-1]
    assert lo < -0.5 < hi
    # how the prefactor grows with t: test_meanfield_gap_below_its_a_posteriori_bound


def test_meanfield_gap_below_its_a_posteriori_bound():
    r"""SA β = 1 on the circle, N = 1024 particles iid from μ_0, 8 realisations, t ≤ 2: the gap W_1(μ^N_t, μ_t)
    lies below a Grönwall bound measured along the computed μ_t, and that bound is within a factor 10 of it.

    Couple μ_0 and μ^N_0 optimally, x ~ μ_0 moved by X[μ_t], y a particle moved by X[μ^N_t]. Along a pair,
    d/dt d(x_t, y_t) <= Λ(t) d(x_t, y_t) + |X[μ_t](y_t) − X[μ^N_t](y_t)|, Λ(t) the one-sided Lipschitz number of
    X[μ_t] (validation.stability's sharper bound; from its rates, Λ = rate_sharp − rate_a_posteriori + L_x).
    Integrated against the coupling (D(t) >= W_1(μ^N_t, μ_t), D(0) = W_1(μ^N_0, μ_0)):

        W_1(μ^N_t, μ_t) <= B(t),  B' = Λ B + δ,  B(0) = W_1(μ^N_0, μ_0),  δ(t) = ∫|X[μ_t] − X[μ^N_t]| dμ^N_t,

    both rates measured at the output times and each interval taken at its larger endpoint (as stability does).
    Unlike the Dobrushin bounds (e^{∫ Λ + L_μ}: sharper 1.3e12 at t = 2 here, a priori 1e22) it measures the field
    difference instead of bounding it by L_μ W_1, so it is tight: B/W_1 is about e^{∫Λ} (Λ ≈ 0.6..0.9)."""
    model, mu0 = mf.SelfAttention(1.0), smooth(128)
    t = np.linspace(0.0, 2.0, 11)
    s = stability(model, mu0, smooth(128, 0.1), t)  # its rates are measured along the first solution, μ_t
    lam = s.rate_sharp - s.rate_a_posteriori + s.L_x
    assert np.all(lam <= s.L_x)
    sol = mf.solve(model, mu0, (t[0], t[-1]), t_eval=t, representation="grid")
    n, repeats = 1024, 8
    traj = particles.simulate(model, particles.sample(mu0, n, rng=np.random.default_rng(1), batch=repeats), t)
    cells = 2**16  # quantised circle CDF: W_1 to π/cells
    gap = np.array([wasserstein(traj.x[k], d, 1, cells=cells) for k, d in enumerate(sol.densities)])  # (T, R)
    delta = np.empty_like(gap)
    uniform = np.full(n, 1.0 / n)
    for k, d in enumerate(sol.densities):
        pts, w = d.as_measure()
        for r in range(repeats):
            y = traj.x[k, r]
            delta[k, r] = np.mean(np.linalg.norm(model.field(pts, w, y) - model.field(y, uniform, y), axis=-1))
    B = np.empty_like(gap)
    B[0] = gap[0]
    for k in range(t.size - 1):
        h = t[k + 1] - t[k]
        B[k + 1] = np.exp(h * max(lam[k], lam[k + 1])) * (B[k] + h * np.maximum(delta[k], delta[k + 1]))
    # each W_1 is within π/cells of the exact one, and B carries B(0)'s error times at most e^{L_x t}
    assert np.all(gap[1:] <= B[1:] + (1 + np.exp(s.L_x * t[1:, None])) * np.pi / cells), B / gap
    assert np.all(B <= 10 * gap), B / gap


def test_fit_exponent_recovers_a_power_law():
    ns = np.array([10, 100, 1000])
    D = np.outer(ns**-0.5, [0.9, 1.0, 1.1])
    b, (lo, hi) = fit_exponent(ns, D)
    assert b == pytest.approx(-0.5, abs=1e-12) and lo < b < hi


@pytest.mark.slow
def test_meanfield_limit_rate_on_the_sphere():
    """SA β = 1 on S², N = 10²..4·10³: W1 ~ √(log N / N) (MATH.md §4), so W1/√(log N) ~ N^{-1/2}.

    About two minutes (exact OT against the lmax = 48 grid measure)."""
    mu0 = mf.Density.from_function(mf.SphereGrid(48), lambda x: np.exp(2 * x[..., 2] + x[..., 0]))
    ns = np.array([100, 300, 1000, 4000])
    r = meanfield_limit(mf.SelfAttention(1.0), mu0, ns, [0.0, 1.0], repeats=4, rng=0)
    for k in range(2):
        b, (lo, hi) = fit_exponent(ns, r.distances[:, :, k] / np.sqrt(np.log(ns))[:, None])
        assert abs(b + 0.5) <= 0.1, (k, b)
    # the grid measure's own discretisation error stays below the smallest gap measured
    assert r.discretisation < r.distances[-1].mean()


def test_meanfield_limit_in_r1_runs_and_reports_its_discretisation():
    from meanfield.analysis import gaussian as G
    from meanfield.models import L2

    g = mf.EuclideanGrid([(-4, 4)], 128)
    d = G.gaussian_density(g, [0.2], [[0.3]])
    r = meanfield_limit(L2(Q=[[1.0]], K=[[1.0]], V=[[0.5]]), d, [50, 200, 800], [0.0, 0.2], repeats=3, rng=1)
    assert r.distances.shape == (3, 3, 2) and np.all(r.distances > 0)
    assert 0 < r.discretisation < r.distances.mean()
    assert r.exponent[0] < -0.2  # W1 decays with N (the full rate study is slow in R^d: O(N²) fields)


@pytest.mark.slow
def test_meanfield_limit_rate_in_r1():
    """Softmax in R¹ from a Gaussian, N = 10²..3·10³: W1 ~ N^{-1/2} (MATH.md §4) at t = 0 and t = 0.5, the 95%
    interval holding −1/2; the grid measure's own discretisation error below the smallest gap measured."""
    from meanfield.analysis import gaussian as G
    from meanfield.models import Softmax

    g = mf.EuclideanGrid([(-6, 6)], 768)
    d = G.gaussian_density(g, [0.2], [[0.3]])
    ns = np.array([100, 316, 1000, 3162])
    r = meanfield_limit(Softmax(Q=[[1.0]]), d, ns, [0.0, 0.5], repeats=8, rng=0)
    for k in range(2):
        lo, hi = r.exponent_ci[k]
        assert abs(r.exponent[k] + 0.5) <= 0.15 and lo < -0.5 < hi, (k, r.exponent[k], lo, hi)
    assert r.discretisation < r.distances[-1].mean()
