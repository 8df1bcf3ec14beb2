"""CircleGrid and Density: quadrature, spectral interpolation, measures, input checks."""

import numpy as np
import pytest

import meanfield as mf
from meanfield.analysis import exact
from meanfield.domains.circle import angles_to_points
from tests.helpers import EPS


def trig_poly(theta):
    return 2.0 + np.cos(3 * theta) - 0.4 * np.sin(7 * theta) + 0.1 * np.cos(11 * theta + 0.3)


@pytest.mark.parametrize("n", [24, 25, 64])
def test_interpolation_exact_for_trig_polynomials(rng, n):
    g = mf.CircleGrid(n)
    theta = rng.uniform(0, 2 * np.pi, 100)
    np.testing.assert_allclose(g.interpolate(trig_poly(g.angles), angles_to_points(theta)), trig_poly(theta), atol=1e-13)


def test_interpolation_reproduces_nodes_and_nyquist():
    g = mf.CircleGrid(16)
    v = np.cos(8 * g.angles) + 2.0  # the Nyquist mode (−1)^j
    np.testing.assert_allclose(g.interpolate_angles(v, g.angles), v, atol=1e-14)
    assert g.interpolate_angles(v, np.pi / 16) == pytest.approx(2.0, abs=1e-14)  # cos(8θ) between nodes


@pytest.mark.parametrize("n_new", [64, 96, 31])
def test_resample_exact_for_band_limited(n_new):
    g = mf.CircleGrid(30)
    v = trig_poly(g.angles)
    np.testing.assert_allclose(g.resample(v, n_new), trig_poly(mf.CircleGrid(n_new).angles), atol=1e-13)


def test_quadrature_is_spectral():
    # ∫ e^{κ cos θ} dθ = 2π I_0(κ)
    from scipy.special import i0

    g = mf.CircleGrid(40)
    assert g.integrate(np.exp(3 * np.cos(g.angles))) == pytest.approx(2 * np.pi * i0(3.0), rel=1e-15)


def test_density_from_function_normalises_and_measures():
    g = mf.CircleGrid(128)
    a = 0.4 + 0.2j
    d = mf.Density.from_function(g, lambda x: 5 * exact.wrapped_cauchy(np.arctan2(x[..., 1], x[..., 0]), a))
    assert d.mass() == pytest.approx(1.0, abs=1e-15)
    pts, w = d.as_measure()
    assert pts.shape == (128, 2) and w.shape == (128,)
    assert w.sum() == pytest.approx(1.0, abs=16 * EPS)  # a sum of 128 weights: a few ulps (EPS/2 measured)
    m = d.mean()  # first moment of f_a is a
    assert m[0] + 1j * m[1] == pytest.approx(a, abs=1e-14)
    # spectral interpolation of the density at arbitrary points
    th = np.linspace(0.05, 6.2, 17)
    np.testing.assert_allclose(d(angles_to_points(th)), exact.wrapped_cauchy(th, a), rtol=1e-12)


def test_grid_input_checks():
    with pytest.raises(ValueError, match="`n` must be at least 4"):
        mf.CircleGrid(3)
    with pytest.raises(TypeError, match="`n`"):
        mf.CircleGrid(8.0)


@pytest.mark.parametrize(
    "values, match",
    [
        (np.r_[np.ones(7), -0.5], "non-negative"),
        (np.r_[np.ones(7), np.nan], "non-finite"),
        (np.r_[np.ones(7), np.inf], "non-finite"),
        (np.zeros(8), "positive mass"),
        (np.ones(9), "shape"),
    ],
)
def test_density_rejects_bad_values(values, match):
    with pytest.raises(ValueError, match=match):
        mf.Density(mf.CircleGrid(8), values)


def test_from_function_checks():
    g = mf.CircleGrid(8)
    with pytest.raises(TypeError, match="callable"):
        mf.Density.from_function(g, np.ones(8))
    with pytest.raises(ValueError, match="one value per node"):
        mf.Density.from_function(g, lambda x: np.ones(3))
    with pytest.raises(ValueError, match="non-negative"):
        mf.Density.from_function(g, lambda x: x[..., 0])


def test_points_off_the_circle_are_refused():
    d = mf.Density.uniform(mf.CircleGrid(8))
    with pytest.raises(ValueError, match="unit vectors"):
        d(np.array([[1.0, 0.1]]))
