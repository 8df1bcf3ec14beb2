"""The mean-field limit rate (regression tests); the stability bounds are in test_stability.py."""

import numpy as np
import pytest

import meanfield as mf
from meanfield.domains.circle import points_to_angles
from validation.meanfield_limit import fit_exponent, meanfield_limit
from validation.stability import lipschitz_constants


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
    # the prefactor grows with t, but no faster than the stability bound allows
    growth = r.distances[:, :, -1].mean() / r.baseline.mean()
    Lx, Lmu = lipschitz_constants(mf.SelfAttention(1.0))
    assert 1.0 < growth < 0.5 * np.pi * np.exp((Lx + Lmu) * 2.0)


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
    from meanfield import gaussian as G
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
    from meanfield import gaussian as G
    from meanfield.models import Softmax

    g = mf.EuclideanGrid([(-6, 6)], 768)
    d = G.gaussian_density(g, [0.2], [[0.3]])
    ns = np.array([100, 316, 1000, 3162])
    r = meanfield_limit(Softmax(Q=[[1.0]]), d, ns, [0.0, 0.5], repeats=8, rng=0)
    for k in range(2):
        lo, hi = r.exponent_ci[k]
        assert abs(r.exponent[k] + 0.5) <= 0.15 and lo < -0.5 < hi, (k, r.exponent[k], lo, hi)
    assert r.discretisation < r.distances[-1].mean()
