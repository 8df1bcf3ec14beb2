"""The first moment ∫ x dμ ∈ R^d on every domain (issue 46, finding 1: on the zonal sphere ``mean()`` returned the
mean polar angle, shape (1,)).

Oracle: the von Mises–Fisher law ρ ∝ e^{κ⟨x, e⟩} on S^{d-1} has ∫ x dμ = A_d(κ) e with A_d(κ) = I_{d/2}(κ)/I_{d/2−1}(κ)
(Mardia & Jupp, Directional Statistics, §9.3.2). Every grid below resolves the density to round-off (its spectral
tail < 1e-15), so the quadrature's error is round-off of sums over the nodes: up to 1.4e-14 measured (S², 2178
nodes, NumPy 1.26); the limits keep 10x over it.
"""

import numpy as np
import pytest
from scipy import integrate
from scipy.special import ive

import meanfield as mf
from meanfield.domains.zonal_sphere import ZonalGrid, axis
from meanfield.lagrangian.transport import start


def _resultant(d, kappa):
    return ive(d / 2, kappa) / ive(d / 2 - 1, kappa)


@pytest.mark.parametrize("grid, e", [
    (mf.CircleGrid(64), np.array([1.0, 0.0])),
    (mf.SphereGrid(32), np.array([0.0, 0.0, 1.0])),
    (ZonalGrid(2, 48), axis(2)),
    (ZonalGrid(16, 48), axis(16)),
    (ZonalGrid(128, 64), axis(128)),
])
def test_mean_is_the_ambient_first_moment_on_every_domain(grid, e):
    kappa = 3.0
    rho = mf.Density.from_function(grid, lambda x: np.exp(kappa * (x @ e)))
    d = grid.dim
    m = rho.mean()
    assert m.shape == (d,)
    assert np.max(np.abs(m - _resultant(d, kappa) * e)) <= 2e-13  # sums over 2178 nodes on S²: 1.4e-14 seen
    # the Lagrangian measure of the same density (the grid's nodes as atoms) has the same first moment
    assert np.max(np.abs(start(rho).mean() - m)) <= 2e-13


@pytest.mark.parametrize("d", [2, 3, 16, 128])
def test_mean_polar_angle_is_the_law_of_theta(d):
    """∫ θ dμ of the zonal vMF law against adaptive quadrature of its polar-angle law ∝ e^{κ cos θ} sin^{d−2}θ (both
    to ~1e-15; limit 1e-12); the other domains refuse it by name."""
    kappa = 2.0
    grid = ZonalGrid(d, 48)
    rho = mf.Density.from_function(grid, lambda x: np.exp(kappa * (x @ axis(d))))
    log_q = lambda t: kappa * (np.cos(t) - 1) + (d - 2) * np.log(np.sin(t))  # noqa: E731
    q = lambda t: np.exp(log_q(t))  # noqa: E731
    ref = integrate.quad(lambda t: t * q(t), 0, np.pi, epsrel=1e-14)[0] / integrate.quad(q, 0, np.pi,
                                                                                         epsrel=1e-14)[0]
    assert abs(rho.mean_polar_angle() - ref) <= 1e-12
    with pytest.raises(ValueError, match="not polar angles"):
        mf.Density.uniform(mf.CircleGrid(16)).mean_polar_angle()


def test_mean_polar_angle_of_a_concentrated_law_in_high_dimension():
    """d = 128, κ = 200: ρ spans hundreds of decades, and an interpolant's round-off ε·max ρ times sin^{126}θ swamps
    q away from the pole (the Gauss–Legendre rule in θ gave 0.759, and 1.56 on a grid still resolved to 2.5e-8): the
    rings' own rule against adaptive quadrature of the polar law in log form (tol. 1e-12), on grids of lmax 128 and
    512."""
    d, kappa = 128, 200.0
    log_q = lambda t: kappa * (np.cos(t) - 1) + (d - 2) * np.log(np.sin(t))  # noqa: E731
    top = np.max(log_q(np.linspace(0.01, 3.13, 4001)))  # q is ~1e-45: scaled to 1 (quad's absolute tolerance)
    q = lambda t: np.exp(log_q(t) - top)  # noqa: E731
    ref = (integrate.quad(lambda t: t * q(t), 0, np.pi, epsrel=1e-14, limit=400)[0]
           / integrate.quad(q, 0, np.pi, epsrel=1e-14, limit=400)[0])
    for lmax in (128, 512):
        grid = ZonalGrid(d, lmax)
        rho = mf.Density.from_function(grid, lambda x: np.exp(kappa * (x @ axis(d) - 1)))
        assert abs(rho.mean_polar_angle() - ref) <= 1e-12, (lmax, rho.mean_polar_angle(), ref)


def test_order_parameter_of_a_zonal_solve_is_the_norm_of_the_mean():
    """docs/tour.md's event pattern |frame.mean()| on a zonal frame is the order parameter r = |∫ cos θ dμ|."""
    from meanfield.solvers.transitions import order_parameter

    grid = ZonalGrid(16, 32)
    rho = mf.Density.from_function(grid, lambda x: np.exp(1.5 * x[..., -1]))
    assert np.linalg.norm(rho.mean()) == pytest.approx(_resultant(16, 1.5), abs=2e-13)
    assert order_parameter(rho) == pytest.approx(_resultant(16, 1.5), abs=2e-13)


def test_the_zonal_domain_sums_unit_vectors_as_they_are():
    """Found in review: points of S^{d-1} given to the zonal domain's mean lost their components off the axis."""
    from meanfield.domains.zonal_sphere import zonal_domain

    x = np.array([[1.0, 0.0, 0.0], [0.0, 0.6, 0.8]])
    w = np.array([0.25, 0.75])
    assert np.allclose(zonal_domain(3).mean(x, w), w @ x, rtol=0, atol=1e-16)
    theta = np.array([[0.3], [2.0]])  # rings: (∫ cos θ dμ) e
    assert np.allclose(zonal_domain(3).mean(theta, w), [0.0, 0.0, w @ np.cos(theta[:, 0])], rtol=0, atol=1e-16)
