"""Finite volumes in R^d against the exact Gaussian closures: order, positivity, mass, input checks."""

import warnings

import numpy as np
import pytest

import meanfield as mf
from meanfield import gaussian as G
from meanfield.domains.euclidean import FiniteVolume
from meanfield.models import L2, Softmax
from validation import gaussian_w2, observed_order

CASES = {
    # (dimension, model, sizes, box half-width)
    "softmax-1d": (1, Softmax(Q=[[0.6]], V=[[0.8]]), (64, 128, 256), 4.0),
    "l2-1d": (1, L2(Q=[[1.0]], K=[[1.0]], V=[[0.7]]), (64, 128, 256), 4.0),
    "softmax-2d": (2, Softmax(Q=np.array([[0.5, 0.2], [0.0, 0.3]]), V=np.array([[1.0, 0.3], [-0.2, 0.8]])), (36, 72), 3.5),
    "l2-2d": (2, L2(Q=np.diag([1.0, 0.7]), K=np.diag([1.0, 0.7]), V=0.5 * np.eye(2)), (48, 96, 192), 4.0),
}


def gaussian0(d):
    if d == 1:
        return np.array([0.2]), np.array([[0.3]])
    return np.array([0.2, -0.1]), np.array([[0.3, 0.05], [0.05, 0.2]])


@pytest.mark.parametrize("name", sorted(CASES))
def test_grid_solution_matches_gaussian_closure_at_second_order(name):
    d, model, sizes, half = CASES[name]
    m0, S0 = gaussian0(d)
    T = 0.5
    exact = G.solve_gaussian(model, m0, S0, [0, T])
    errs = []
    for n in sizes:
        g = mf.EuclideanGrid([(-half, half)] * d, n)
        rho0 = mf.Density.from_function(g, lambda x: G.gaussian_pdf(x, m0, S0))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # ~1e-7 of the mass leaves these boxes; tested below
            sol = mf.solve(model, rho0, (0, T))
        _, mean, cov = g.moments(sol.densities[-1].values)
        errs.append(gaussian_w2(mean, cov, exact.mean[-1], exact.cov[-1]))
        assert np.min(sol.densities[-1].values) >= 0  # positivity
    h = 2 * half / np.array(sizes)
    assert 1.8 <= observed_order(h, errs).order <= 2.3, errs


def test_mass_exact_in_a_large_box_and_outflow_reported():
    model = L2(Q=np.diag([1.0, 0.7]), K=np.diag([1.0, 0.7]))
    m0, S0 = gaussian0(2)
    big = mf.EuclideanGrid([(-7, 7)] * 2, 96)
    sol = mf.solve(model, mf.Density.from_function(big, lambda x: G.gaussian_pdf(x, m0, S0)), (0, 0.5))
    assert np.max(np.abs(sol.mass_steps - sol.mass_steps[0])) <= 1e-12
    assert all(np.min(d.values) >= 0 for d in sol.densities)
    # a box the flow leaves: the loss is reported, and mass only ever decreases
    small = mf.EuclideanGrid([(-3.2, 3.2)] * 2, 48)
    rho0 = mf.Density.from_function(small, lambda x: G.gaussian_pdf(x, m0, S0))
    with pytest.warns(RuntimeWarning, match="left the box"):
        sol = mf.solve(L2(V=3 * np.eye(2)), rho0, (0, 1.0))
    assert np.all(np.diff(sol.mass_steps) <= 1e-15)


def test_fft_and_direct_sums_agree():
    for d, n in ((1, 64), (2, 40)):
        g = mf.EuclideanGrid([(-4, 4)] * d, n)
        m0, S0 = gaussian0(d)
        v = G.gaussian_pdf(g.points, m0, S0)
        model = L2(Q=0.8 * np.eye(d), K=0.8 * np.eye(d), V=np.eye(d), tau=0.6)
        a = FiniteVolume(g, model, "spectral").rate_and_speeds(v)[0]
        b = FiniteVolume(g, model, "quadrature").rate_and_speeds(v)[0]
        assert np.max(np.abs(a - b)) <= 1e-12 * np.max(np.abs(b))
    with pytest.raises(ValueError, match="Q = K"):
        FiniteVolume(g, L2(Q=np.eye(2), K=2 * np.eye(2)), "spectral")


@pytest.mark.parametrize("d", [1, 2])
def test_separable_softmax_equals_direct_sum(d):
    g = mf.EuclideanGrid([(-4, 4)] * d, 40)
    m0, S0 = gaussian0(d)
    v = G.gaussian_pdf(g.points, m0, S0)
    rng = np.random.default_rng(7)
    model = Softmax(Q=rng.normal(size=(d, d)), K=rng.normal(size=(d, d)), V=rng.normal(size=(d, d)), beta=2.0)
    a = FiniteVolume(g, model, "separable")
    b = FiniteVolume(g, model, "quadrature")
    assert a.strategy == "separable" and b.strategy == "quadrature"
    np.testing.assert_allclose(a.velocity(v), b.velocity(v), rtol=1e-11, atol=1e-13)
    with pytest.raises(ValueError, match="separable"):
        FiniteVolume(g, L2(), "separable")


def test_bad_input():
    with pytest.raises(ValueError, match="bounds"):
        mf.EuclideanGrid([(1, 0)], 8)
    with pytest.raises(ValueError, match="shape"):
        mf.EuclideanGrid([(0, 1), (0, 1)], (8, 2))
    g = mf.EuclideanGrid([(-1, 1)] * 2, 32)
    wide = mf.Density.from_function(g, lambda x: G.gaussian_pdf(x, [0, 0], np.eye(2)))
    with pytest.raises(ValueError, match="too small"):
        mf.solve(Softmax(), wide, (0, 1))
    with pytest.raises(ValueError, match="lives on"):
        mf.solve(mf.SelfAttention(1.0), wide, (0, 1))
    with pytest.raises(ValueError, match="not refined"):
        mf.solve(Softmax(), wide, (0, 1), refine=True)
    bad = np.ones(g.shape)
    bad[3, 3] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        mf.Density(g, bad)


def test_gaussian_density_on_a_grid():
    g = mf.EuclideanGrid([(-5, 5)] * 2, 80)
    m0, S0 = gaussian0(2)
    d = G.gaussian_density(g, m0, S0)
    mass, mean, cov = g.moments(d.values)
    assert mass == pytest.approx(1.0, abs=1e-14)
    np.testing.assert_allclose(mean, m0, atol=1e-12)
    # the midpoint rule on a smooth, decaying integrand is spectrally accurate
    np.testing.assert_allclose(cov, S0, atol=1e-10)
    with pytest.raises(ValueError, match="EuclideanGrid"):
        G.gaussian_density(mf.CircleGrid(16), m0, S0)
