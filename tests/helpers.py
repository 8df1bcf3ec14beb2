"""Shared constructors for the tests (densities with known properties)."""

import numpy as np

import meanfield as mf
from meanfield.analysis import exact
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


def smooth_positive_sphere(L: int, seed: int) -> np.ndarray:
    """Values on SphereGrid(L) of a positive density of degree L: exp of a random expansion with coefficients
    ~ e^{−l/2}, projected to degree L (pyshtools)."""
    from meanfield.domains.sphere import PyshtoolsBackend as B

    rng = np.random.default_rng(seed)
    l = np.arange(L + 1)[:, None]
    c = rng.standard_normal((2, L + 1, L + 1)) * np.exp(-l / 2.0)
    c = np.stack([np.tril(c[0]), np.tril(c[1], -1) + 0.0])
    c[1, :, 0] = 0.0
    return B.synthesis(B.analysis(np.exp(B.synthesis(c, L)), L), L)


def rhs(domain, model, grid, strategy: str = "auto", field=None):
    """The domain's continuity right-hand side of ``model`` on ``grid`` for ``strategy`` ("auto" resolved as solve
    resolves it)."""
    from meanfield.kernels import strategies

    return domain.continuity(model, grid, strategies.resolve(strategy, domain.grid_strategies(model, grid), repr(grid)),
                             field)


#: float64's machine epsilon, 2^-52 ≈ 2.2e-16 (the unit round-off is EPS/2). Round-off limits in the tests are written
#: in it — a number of ulps times the scale of the quantity, with at least 10x over the worst value measured on two
#: CPUs (AVX-512 and AVX2) and on the oldest and newest supported NumPy/SciPy/numba (scripts/tolerance_margins.py).
EPS = float(np.finfo(float).eps)


def docs_generators():
    """docs/_ext/meanfield_api.py, the Sphinx extension that generates the site's API and study-reference pages,
    imported by path (docs/_ext is no package). It imports Sphinx: a test that calls this is skipped, saying so,
    where the docs extra is not installed (it is part of the test extra)."""
    import importlib.util
    from pathlib import Path

    import pytest

    pytest.importorskip("sphinx", reason="the docs extra is not installed: pip install -e '.[docs]'")
    path = Path(__file__).resolve().parents[1] / "docs" / "_ext" / "meanfield_api.py"
    spec = importlib.util.spec_from_file_location("meanfield_api", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
