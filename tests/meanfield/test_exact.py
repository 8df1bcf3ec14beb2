"""The oracles themselves, checked against independent computations."""

import numpy as np
import pytest
from scipy.integrate import quad

from meanfield.analysis import exact


def test_wrapped_cauchy_moments():
    a = 0.5 * np.exp(0.4j)
    for n in range(4):
        re = quad(lambda t: np.cos(n * t) * exact.wrapped_cauchy(t, a), 0, 2 * np.pi, epsabs=1e-14)[0]
        im = quad(lambda t: np.sin(n * t) * exact.wrapped_cauchy(t, a), 0, 2 * np.pi, epsabs=1e-14)[0]
        assert re + 1j * im == pytest.approx(a**n, abs=1e-12)


def test_wrapped_cauchy_sampling_of_an_ngon(rng):
    """A regular N-gon pushed through the Möbius map has first moment a to ~1e-13 (MATH.md §3)."""
    a = 0.3 - 0.2j
    theta = exact.wrapped_cauchy_sample(2 * np.pi * np.arange(4000) / 4000, a)
    assert np.mean(np.exp(1j * theta)) == pytest.approx(a, abs=1e-12)


def test_equiangular_initial_slope_and_limit():
    n, beta = 8, 3.0
    h = 1e-6
    # ρ'(0) = 2/(e^β + n − 1) for SA and 2/n for USA
    assert exact.equiangular(h, n, beta) / h == pytest.approx(2 / (np.exp(beta) + n - 1), rel=1e-5)
    assert exact.equiangular(h, n, beta, normalized=False) / h == pytest.approx(2 / n, rel=1e-5)
    # ρ → 1 (a single cluster)
    assert exact.equiangular(200.0, n, beta) == pytest.approx(1.0, abs=1e-10)


def test_oracle_input_checks():
    with pytest.raises(ValueError, match="`a`"):
        exact.wrapped_cauchy(0.0, 1.0)
    with pytest.raises(ValueError, match="`n`"):
        exact.equiangular(1.0, 1, 1.0)
    with pytest.raises(ValueError, match="`beta`"):  # any finite real β (β < 0 repulsive, MATH.md §13)
        exact.equiangular(1.0, 3, np.nan)
