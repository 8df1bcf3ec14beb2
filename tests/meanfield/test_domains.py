"""The domain protocol, for every domain: geometry, grids, measures that carry their domain, the circle's Fourier module."""

import warnings

import numpy as np
import pytest

import meanfield as mf
from meanfield import domains
from meanfield.analysis import gaussian
from meanfield.domains import CIRCLE, EUCLIDEAN, SEQUENCE, SPHERE, Measure
from meanfield.domains.circle import fourier
from meanfield.models import Softmax


def points(domain, rng, n=40):
    if domain is EUCLIDEAN:
        return rng.normal(size=(n, 3))
    d = 2 if domain is CIRCLE else 4
    x = rng.normal(size=(n, d))
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def density(domain):
    if domain is CIRCLE:
        return mf.Density.from_function(mf.CircleGrid(64), lambda x: np.exp(2 * x[..., 0] + x[..., 1] ** 2))
    if domain is SPHERE:
        return mf.Density.from_function(mf.SphereGrid(24), lambda x: np.exp(2 * x[..., 2] + x[..., 0] * x[..., 1]))
    if domain is SEQUENCE:
        return mf.Density.from_function(mf.SequenceGrid(64, 9), lambda x: np.exp(2 * x[..., 1] * (1 + x[..., 0])
                                                                                 + x[..., 2] ** 2))
    return gaussian.gaussian_density(mf.EuclideanGrid([(-4, 4), (-3, 3)], (48, 40)), [0.2, -0.1], [[0.4, 0.1], [0.1, 0.3]])


ALL = [CIRCLE, SPHERE, EUCLIDEAN]
#: the domains with grids that the tests of grids below hold for (the sequence's geometry: tests/meanfield/test_causal.py)
GRIDS = ALL + [SEQUENCE]


@pytest.mark.parametrize("domain", ALL, ids=lambda d: d.name)
def test_geometry(domain, rng):
    x, v = points(domain, rng), rng.normal(size=(40, 2 if domain is CIRCLE else (4 if domain is SPHERE else 3)))
    t = domain.project(x, v)
    assert domain.contains(x) and np.allclose(domain.check_points(x, "x"), x)
    if domain is EUCLIDEAN:
        assert np.array_equal(t, v) and np.array_equal(domain.retract(x + v), x + v)
    else:
        np.testing.assert_allclose(np.sum(t * x, axis=-1), 0, atol=1e-14)  # tangent at x
        np.testing.assert_allclose(domain.project(x, t), t, atol=1e-14)  # a projection
        np.testing.assert_allclose(np.linalg.norm(domain.retract(x + 0.3 * t), axis=-1), 1, atol=1e-15)
        assert not domain.contains(2 * x)
    D = domain.distance(x, x)
    np.testing.assert_allclose(np.diag(D), 0, atol=1e-7)
    np.testing.assert_allclose(D, D.T, atol=1e-15)
    assert np.all(D[:, :, None] <= D[:, None, :] + D.T[None, :, :] + 1e-12)  # triangle inequality
    if domain is not EUCLIDEAN:
        # the geodesic distance is the angle between the points
        np.testing.assert_allclose(D, np.arccos(np.clip(x @ x.T, -1, 1)), atol=1e-7)


def test_circle_coordinates_and_distance_are_the_angle(rng):
    theta = rng.uniform(0, 2 * np.pi, 30)
    x = CIRCLE.coordinates(np.stack([np.cos(theta), np.sin(theta)], -1))
    np.testing.assert_allclose(x, theta, atol=1e-14)
    gap = np.abs(theta[:, None] - theta[None, :])
    np.testing.assert_allclose(CIRCLE.distance(*(np.stack([np.cos(theta), np.sin(theta)], -1),) * 2),
                               np.minimum(gap, 2 * np.pi - gap), atol=1e-7)


def test_infer_reads_bare_points_and_measures_carry_their_domain(rng):
    assert domains.infer(points(CIRCLE, rng)) is CIRCLE
    assert domains.infer(points(SPHERE, rng)) is SPHERE
    assert domains.infer(3 * points(SPHERE, rng)) is EUCLIDEAN
    for domain in ALL:
        d = density(domain)
        assert d.domain is domain and d.grid.domain is domain
        m = d.as_measure()
        assert isinstance(m, Measure) and m.domain is domain
        pts, w = m  # unpacks as (points, weights)
        assert m.mass() == pytest.approx(d.mass(), rel=1e-14)
    with pytest.raises(ValueError, match="domain"):
        domains.get("torus")


@pytest.mark.parametrize("domain", GRIDS, ids=lambda d: d.name)
def test_grids_rebuild_from_their_coordinates_and_coarsen_keeping_mass(domain):
    d = density(domain)
    g = d.grid
    rebuilt = domain.grid_type.from_coordinates({k: v for k, (v, _) in g.coordinates().items()})
    assert rebuilt.shape == g.shape and np.allclose(rebuilt.points, g.points, rtol=0, atol=1e-13)
    assert rebuilt == g or domain is EUCLIDEAN  # a box rebuilt from its centres: bounds to round-off
    coarse = g.coarsened(d.values)
    assert coarse.domain is domain
    assert coarse.mass() == pytest.approx(d.mass(), rel=1e-12)
    assert coarse.points.shape[0] < g.points.reshape(-1, g.dim).shape[0]


@pytest.mark.parametrize("domain", GRIDS, ids=lambda d: d.name)
def test_sampling_dispatches_to_the_domain_and_lands_on_it(domain):
    import particles as pt

    d = density(domain)
    x = pt.sample(d, 500, rng=2, batch=2)
    assert x.shape == (2, 500, d.grid.dim) and domain.contains(x.reshape(-1, d.grid.dim))


def test_models_are_checked_against_the_domain():
    with pytest.raises(ValueError, match="moves points of"):
        EUCLIDEAN.check_model(mf.SelfAttention(1.0), density(EUCLIDEAN).grid)
    with pytest.raises(ValueError, match="moves points of"):
        CIRCLE.check_model(Softmax(), mf.CircleGrid(16))
    with pytest.raises(ValueError, match="3×3"):
        CIRCLE.check_model(mf.SelfAttention(1.0, Q=np.eye(3)), mf.CircleGrid(16))
    SPHERE.check_model(mf.SelfAttention(1.0, Q=np.eye(3)), mf.SphereGrid(4))


# ---------------------------------------------------------------------- the circle's Fourier module
def trig(theta):
    return 2.0 + np.cos(3 * theta) - 0.4 * np.sin(7 * theta) + 0.1 * np.cos(8 * theta)


@pytest.mark.parametrize("n", [16, 17, 40])
def test_the_two_cdf_evaluators_agree_and_integrate_the_interpolant(n):
    """F from the series at arbitrary angles and from one inverse FFT on an equispaced grid are the same
    function (one formula, two evaluators), and F' is the interpolant."""
    g = mf.CircleGrid(n)
    v = trig(g.angles)
    M = 256
    theta = np.linspace(0, 2 * np.pi, M + 1)
    F_series, rho = fourier.cdf_and_density(v, theta)
    F_fft = fourier.cdf_equispaced(v, M)
    np.testing.assert_allclose(F_series, F_fft, atol=2e-15)
    assert F_fft[0] == 0.0 and F_fft[-1] == pytest.approx(1.0, abs=1e-15)
    # F(θ) = (2θ + sin 3θ/3 + 0.4(cos 7θ − 1)/7 + 0.1 sin 8θ/8)/(4π) for n > 16 (degree 8 resolved)
    if n > 16:
        exact = (2 * theta + np.sin(3 * theta) / 3 + 0.4 * (np.cos(7 * theta) - 1) / 7 + 0.1 * np.sin(8 * theta) / 8)
        np.testing.assert_allclose(F_series, exact / (4 * np.pi), atol=1e-14)
        np.testing.assert_allclose(rho, trig(theta) / (4 * np.pi), atol=1e-14)
    np.testing.assert_allclose(fourier.evaluate(v, g.angles), v, atol=1e-13)  # the interpolant at its nodes


@pytest.mark.parametrize("n, m", [(16, 40), (17, 64), (40, 24), (40, 25)])
def test_pad_and_resample(n, m):
    """Zero-padding reproduces the interpolant exactly; truncation keeps the modes below m/2."""
    g = mf.CircleGrid(n)
    v = np.cos(3 * g.angles) + 0.5 * np.sin(5 * g.angles) + 1.0
    theta = 2 * np.pi * np.arange(m) / m
    np.testing.assert_allclose(fourier.resample(v, m), np.cos(3 * theta) + 0.5 * np.sin(5 * theta) + 1.0, atol=1e-13)
    P = fourier.pad(fourier.coefficients(v), n, 3 * n)
    assert P.shape == (3 * n,) and np.all(P[n // 2 + 1:] == 0)


@pytest.mark.parametrize("n", [16, 17, 24])
def test_nyquist_multiplicities_give_parseval(n):
    """∫ρ² dθ = 2π Σ_{k∈Z} |ρ̂_k|² for the interpolant, the Nyquist coefficient split between ±n/2:
    weights m_k²/2 (1 at k = 0), i.e. 2 inside, ½ at n/2 — the weights of the circle's energy."""
    g = mf.CircleGrid(n)
    v = trig(g.angles)  # carries cos 8θ: the Nyquist mode at n = 16
    c = fourier.coefficients(v)
    w = 0.5 * fourier.multiplicity(n) ** 2
    w[0] = 1.0
    fine = fourier.resample(v, 4 * n)  # the interpolant squared is a trigonometric polynomial of degree <= n
    exact = np.sum(fine**2) * 2 * np.pi / (4 * n)
    assert 2 * np.pi * np.sum(w * np.abs(c) ** 2) == pytest.approx(exact, rel=1e-13)


@pytest.mark.parametrize("n", [7, 64, 1024, 1536])
def test_circle_fft_entry_points_equal_scipy(n):
    """The right-hand sides' rfft/irfft (ducc0's where installed) are scipy.fft's transforms to round-off."""
    import scipy.fft as sfft

    rng = np.random.default_rng(n)
    x = rng.standard_normal(n)
    c = sfft.rfft(x)
    assert np.max(np.abs(fourier.rfft(x) - c)) <= 1e-14 * np.max(np.abs(c))
    assert np.max(np.abs(fourier.irfft(c, n) - x)) <= 1e-14 * np.max(np.abs(x))
    assert np.max(np.abs(fourier.irfft(c[: n // 2], n) - sfft.irfft(c[: n // 2], n))) <= 1e-14 * np.max(np.abs(x))
    X = rng.standard_normal((3, n))
    assert np.max(np.abs(fourier.rfft(X) - sfft.rfft(X, axis=-1))) <= 1e-14 * np.max(np.abs(sfft.rfft(X)))
    C = sfft.rfft(X, axis=-1)
    assert np.max(np.abs(fourier.irfft(C, n) - X)) <= 1e-14 * np.max(np.abs(X))


@pytest.mark.parametrize("domain", GRIDS, ids=lambda d: d.name)
def test_the_monitor_reads_one_spectrum_per_accepted_state(domain, monkeypatch):
    """The resolution check and the energy read the same spectrum of a state (``grid.spectrum``): given it, they
    equal their values-only forms exactly, and ``solve`` analyses each accepted state once for both (the number of
    spectra grows by one per step), not once per check."""
    d = density(domain)
    grid, tol = d.grid, 1e-10
    spectrum = grid.spectrum(d.values)
    assert (spectrum is None) == (domain is EUCLIDEAN)
    assert grid.resolution(d.values, tol, spectrum=spectrum) == grid.resolution(d.values, tol)
    assert grid.resolution(d.values, 1e-20, spectrum=spectrum) == grid.resolution(d.values, 1e-20)
    model = Softmax(np.eye(2)) if domain is EUCLIDEAN else mf.SelfAttention(2.0, causal=domain is SEQUENCE)
    beta = domain.energy_beta(model)
    if beta is not None:
        assert domain.excess_energy(grid, d.values, beta, spectrum) == domain.excess_energy(grid, d.values, beta)
    calls = []
    counted = "spectrum" if domain is EUCLIDEAN else "coefficients"  # the analyses themselves, where there are any
    original = getattr(type(grid), counted)
    monkeypatch.setattr(type(grid), counted, lambda self, v: calls.append(1) or original(self, v))
    counts = []
    for dt in (0.01, 0.005):
        calls.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # mass leaving R^d's box: not this test's subject
            sol = mf.solve(model, d, (0.0, 0.04), dt=dt, method="rk4")
        counts.append((len(calls), sol.nsteps))
    (c1, n1), (c2, n2) = counts
    assert n2 > n1 and c2 - c1 == n2 - n1
