"""meanfield.laws: the study files' initial laws, public, on any domain that defines them (closed forms)."""

import numpy as np
import pytest

import meanfield as mf
from meanfield.analysis import exact
from meanfield import laws
from meanfield.domains import CIRCLE, EUCLIDEAN, SPHERE
from tests.helpers import EPS


def test_uniform_noise_on_the_circle_integrates_to_its_constant():
    """∫ (1 + Σ a_k cos(kθ + φ_k)) dθ = 2π: the trapezoid rule on n > m nodes is exact for the modes."""
    grid = mf.CircleGrid(64)
    f = laws.uniform_noise(grid, 0.3, 6, rng=7)
    values = f(grid.points)
    assert grid.integrate(values) == pytest.approx(2 * np.pi, rel=1e-14)
    same = [laws.uniform_noise(w, 0.3, 6, np.random.default_rng(7))(grid.points) for w in (CIRCLE, "circle")]
    assert all(np.array_equal(values, v) for v in same)  # a grid, its domain, its name: one law, one draw order
    c = np.abs(np.fft.rfft(values)) / 64  # |c_k| = a_k/2 for k = 1..m, a_k in [A/2, A]; nothing beyond m
    assert c[0] == pytest.approx(1.0) and np.all((c[1:7] >= 0.075 - 1e-15) & (c[1:7] <= 0.15 + 1e-15))
    assert np.all(c[7:] < 64 * EPS)  # the FFT's round-off of O(1) values: a few ulps of c_0 = 1


def test_uniform_noise_on_the_sphere_has_the_bumps_mass():
    """∫_{S²} e^{2(⟨x,u⟩−1)} dσ = π(1 − e^{−4}), so ∫ f = 4π + A π(1 − e^{−4}) Σ a_j, a_j drawn after the centres."""
    grid = mf.SphereGrid(32)
    rng = np.random.default_rng(3)
    f = laws.uniform_noise(grid, 0.5, 4, rng)
    ref = np.random.default_rng(3)
    ref.standard_normal((4, 3))
    a = ref.uniform(0.5, 1.0, 4)
    assert grid.integrate(f(grid.points)) == pytest.approx(4 * np.pi + 0.5 * np.pi * (1 - np.exp(-4)) * a.sum(),
                                                           rel=1e-12)


def test_poisson_laws_are_normalised_with_their_first_moment():
    """Circle: ∫ e^{iθ} f_a dθ = a; S²: ∫ x p_a dσ = g_3(|a|) a/|a| (MATH.md §3); exact samples agree."""
    grid = mf.CircleGrid(256)
    f = laws.poisson(CIRCLE, [0.3, -0.4])(grid.points)
    z = np.exp(1j * CIRCLE.coordinates(grid.points))
    assert grid.integrate(f) == pytest.approx(1.0, abs=1e-12)
    assert grid.integrate(f * z) == pytest.approx(0.3 - 0.4j, abs=1e-12)
    sg = mf.SphereGrid(64)
    a = np.array([0.0, 0.3, 0.4])
    p = laws.poisson(sg, a)(sg.points)
    g3 = float(exact.mobius_mean_factor(np.array([0.5]))[0])
    assert sg.integrate(p) == pytest.approx(1.0, abs=1e-9)
    assert np.allclose([sg.integrate(p * sg.points[..., k]) for k in range(3)], g3 * a / 0.5, atol=1e-9)
    x = laws.sample_poisson("sphere", a, (4, 5000), rng=1)
    assert x.shape == (4, 5000, 3) and np.allclose(np.linalg.norm(x, axis=-1), 1.0)
    assert np.allclose(x.mean(axis=(0, 1)), g3 * a / 0.5, atol=0.02)
    theta = CIRCLE.coordinates(laws.sample_poisson(CIRCLE, [0.3, -0.4], (20000,), rng=2))
    assert np.mean(np.exp(1j * theta)) == pytest.approx(0.3 - 0.4j, abs=0.02)


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="uniform-noise law is defined on the circle and the sphere, not on the "
                                         "euclidean"):
        laws.uniform_noise(EUCLIDEAN, 0.1, 3, 0)
    with pytest.raises(ValueError, match="Poisson-kernel law"):
        laws.poisson("euclidean", [0.1])
    with pytest.raises(TypeError, match="`domain` must be a Domain, a domain's name or a Grid, got list"):
        laws.poisson([0.1, 0.2], [0.1, 0.2])
    with pytest.raises(ValueError, match="`domain` must be one of"):
        laws.uniform_noise("torus", 0.1, 3, 0)
    with pytest.raises(ValueError, match="`amplitude` must be finite and >= 0, got -1"):
        laws.uniform_noise(SPHERE, -1, 3, 0)
    with pytest.raises(ValueError, match="`modes` must be a positive integer, got 0"):
        laws.uniform_noise(SPHERE, 0.1, 0, 0)
    with pytest.raises(ValueError, match=r"\|a\| < 1"):
        laws.poisson(CIRCLE, [0.8, 0.8])


def test_uniform_noise_refuses_an_amplitude_that_makes_a_negative_law():
    """Issue 46, finding 6: the error names `amplitude` (it named `f(grid.points)`, the density's check, before).
    Σ|a_k| < 1 is always positive; above it the drawn law is checked on a fine grid with its Bernstein margin."""
    from meanfield.domains.zonal_sphere import ZonalGrid

    with pytest.raises(ValueError, match=r"`amplitude` = 1\.5 with `modes` = 3"):
        laws.uniform_noise(mf.CircleGrid(64), 1.5, 3, rng=0)
    with pytest.raises(ValueError, match="`amplitude`"):
        laws.uniform_noise(ZonalGrid(16, 32), 0.9, 4, rng=1)
    f = laws.uniform_noise(mf.CircleGrid(64), 0.33, 3, rng=0)  # Σ a_k <= 0.99: positive for every draw
    assert np.min(f(mf.CircleGrid(4096).points)) > 0
