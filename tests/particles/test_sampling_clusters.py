"""Sampling laws; cluster statistics on known configurations (the kernels are tested in tests/meanfield/test_kernels.py)."""

import numpy as np
import pytest
from scipy import stats

import meanfield as mf
import particles as pt
from meanfield.analysis import exact
from particles import clusters, sampling


# ------------------------------------------------------------------ sampling
def test_uniform_sphere_and_orthogonal(rng):
    x = pt.uniform_sphere(20000, 3, rng=rng)
    np.testing.assert_allclose(np.linalg.norm(x, axis=-1), 1, atol=1e-15)
    assert np.all(np.abs(x.mean(0)) < 4 / np.sqrt(20000))
    # Archimedes: the z coordinate of a uniform point on S² is uniform on [-1, 1]
    assert stats.kstest(x[:, 2], stats.uniform(-1, 2).cdf).pvalue > 1e-3
    o = pt.orthogonal(5, 7, rng=rng, batch=4)
    np.testing.assert_allclose(o @ np.swapaxes(o, -1, -2), np.broadcast_to(np.eye(5), (4, 5, 5)), atol=1e-14)
    with pytest.raises(ValueError, match="orthogonal"):
        pt.orthogonal(4, 3)
    with pytest.raises(ValueError, match="`n`"):
        pt.uniform_sphere(0, 3)


def test_sample_from_circle_density_follows_its_law():
    a = 0.5 + 0.2j
    d = mf.Density.from_function(mf.CircleGrid(256), lambda x: exact.wrapped_cauchy(np.arctan2(x[..., 1], x[..., 0]), a))
    x = pt.sample(d, 50000, rng=5)
    th = np.mod(np.arctan2(x[:, 1], x[:, 0]), 2 * np.pi)
    cdf = lambda t: sampling.circle_cdf(d, t)
    assert stats.kstest(th, cdf).pvalue > 1e-3
    z = np.mean(x[:, 0] + 1j * x[:, 1])
    assert abs(z - a) < 4 * np.sqrt((1 - abs(a) ** 2) / 50000)


def test_circle_cdf_is_the_integral_of_the_interpolant():
    from scipy.integrate import quad

    a = 0.4 - 0.3j
    d = mf.Density.from_function(mf.CircleGrid(128), lambda x: exact.wrapped_cauchy(np.arctan2(x[..., 1], x[..., 0]), a))
    for t in (0.3, 2.0, 5.5):
        assert sampling.circle_cdf(d, t) == pytest.approx(quad(lambda s: exact.wrapped_cauchy(s, a), 0, t, epsabs=1e-14)[0], abs=1e-12)
    assert sampling.circle_cdf(d, 2 * np.pi) == pytest.approx(1.0, abs=1e-14)


def test_sample_rejects_non_density():
    with pytest.raises(TypeError, match="Density"):
        pt.sample(np.ones(8), 10)


# ------------------------------------------------------------------ clusters
def test_cluster_statistics_on_known_configurations():
    e = np.eye(3)
    # 4 particles at e0, 3 at -e0, 1 at e1
    x = np.array([e[0]] * 4 + [-e[0]] * 3 + [e[1]])
    assert clusters.pair_fraction(x, 1e-3) == pytest.approx((4 * 3 + 3 * 2) / (8 * 7))
    assert clusters.cluster_count(x, 1e-3) == 3
    assert clusters.span_dimension(x) == 2
    assert clusters.cluster_count(np.array([e[0]] * 5), 1e-3) == 1
    assert clusters.pair_fraction(np.array([e[0]] * 5), 0.0) == 1.0
    # orthogonal frames span their dimension
    assert clusters.span_dimension(pt.orthogonal(5, 8, rng=0)) == 5


def test_batched_cluster_statistics_and_collapse_time():
    # particles i at angle φ_i e^{-t}: all pairs within δ once the spread is small enough
    t = np.linspace(0, 10, 101)
    phi = np.array([0.0, 0.5, -0.7, 1.0])
    ang = phi[None, :] * np.exp(-t)[:, None]
    x = np.stack([np.cos(ang), np.sin(ang)], -1)
    delta = 1e-3
    # max pair angle 1.7 e^{-t}: collapsed when 1 - cos(1.7 e^{-t}) <= δ
    t_exact = np.log(1.7 / np.arccos(1 - delta))
    got = clusters.collapse_time(t, x, delta)
    assert t_exact <= got <= t_exact + 0.1
    assert clusters.collapse_time(t[:5], x[:5], delta) == np.inf
    frac = clusters.pair_fraction(x, delta)
    assert frac.shape == (101,) and frac[0] == 0 and frac[-1] == 1
    assert clusters.cluster_count(np.stack([x[0], x[-1]]), delta).tolist() == [4, 1]


def test_cluster_input_checks():
    with pytest.raises(ValueError, match="delta"):
        clusters.pair_fraction(np.eye(3), 3.0)
    with pytest.raises(ValueError, match="non-finite"):
        clusters.cluster_count(np.full((3, 3), np.nan), 0.1)


def test_sample_from_a_euclidean_density():
    from meanfield.analysis import gaussian as G

    g = mf.EuclideanGrid([(-4, 4), (-3, 3)], (64, 48))
    d = G.gaussian_density(g, [0.5, -0.2], [[0.4, 0.1], [0.1, 0.3]])
    x = pt.sample(d, 40000, rng=3)
    assert x.shape == (40000, 2)
    assert np.all((x >= g.bounds[:, 0]) & (x <= g.bounds[:, 1]))
    _, mean, cov = g.moments(d.values)
    # the cell-uniform law has the grid measure's mean and its covariance plus h²/12 per axis
    assert np.all(np.abs(x.mean(0) - mean) < 4 * np.sqrt(np.diag(cov) / 40000))
    np.testing.assert_allclose(np.cov(x.T), cov + np.diag(g.widths**2 / 12), atol=0.02)


def test_sample_documents_its_parameters_and_what_it_returns_and_does_it():
    """pt.sample has numpy-style Parameters / Returns sections naming every argument, and does what they say: the
    shape (*batch, n, d), a density of any mass (normalised), the same points for the same seed, its example."""
    import doctest
    import inspect

    doc = inspect.getdoc(pt.sample)
    for section in ("Parameters\n----------", "Returns\n-------", "Raises\n------"):
        assert section in doc
    params = doc.split("Parameters\n----------")[1].split("Returns\n-------")[0]
    for name in inspect.signature(pt.sample).parameters:
        assert f"\n{name} : " in "\n" + params, name
    assert "(*batch, n, d)" in doc.split("Returns\n-------")[1]
    grid = mf.CircleGrid(64)
    law = mf.Density.from_function(grid, lambda x: np.exp(2 * x[..., 0]))
    triple = mf.Density(grid, 3 * law.values)
    assert pt.sample(law, 7, rng=3, batch=(2, 5)).shape == (2, 5, 7, 2)
    np.testing.assert_allclose(pt.sample(triple, 50, rng=4), pt.sample(law, 50, rng=4), rtol=0, atol=1e-12)
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner()
    for test in finder.find(pt.sample, "sample", globs={}):
        assert runner.run(test).failed == 0
    assert runner.summarize(verbose=False).attempted >= 2
