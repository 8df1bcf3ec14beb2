"""Shared constructors for the tests (densities with known properties)."""

import numpy as np

import meanfield as mf
from meanfield import exact
from meanfield.domains.circle import points_to_angles


def cauchy_density(n: int, a0: complex) -> mf.Density:
    """Wrapped Cauchy density f_{a0} sampled on n nodes, normalised."""
    return mf.Density.from_function(mf.CircleGrid(n), lambda x: exact.wrapped_cauchy(points_to_angles(x), a0))


def smooth_density(n: int) -> mf.Density:
    """A smooth, asymmetric, entire density: exp(cos θ + ½ sin 2θ)."""
    def f(x):
        th = points_to_angles(x)
        return np.exp(np.cos(th) + 0.5 * np.sin(2 * th))

    return mf.Density.from_function(mf.CircleGrid(n), f)


def l1_error(density: mf.Density, exact_values: np.ndarray) -> float:
    return float(density.grid.integrate(np.abs(density.values - exact_values)))
