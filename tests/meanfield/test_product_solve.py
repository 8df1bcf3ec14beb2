"""The product domains through the one ``meanfield.solve`` (issue 47, item 4): pre/peri-LN densities on S¹ × (0, ∞)
and frequency densities on S¹ × R_ω are initial states of ``solve``, advanced by their representations on the one
integrator and monitor, returning the one ``Solution`` with its status.

Asserted: ``solve`` gives the numbers of the documented entry points (``solve_radial``, ``frequencies.solve``, now
views of its Solution) to round-off, with their status and message; the Ott–Antonsen solution to 1e-10 through
``solve``; a run that stops returns its status (no exception) with what the representation measured; the chain is
the product domain's one representation, and the others are refused naming why.
"""

import numpy as np
import pytest

import meanfield as mf
from meanfield.analysis import exact
from meanfield.solvers import frequencies as fq
from meanfield.solvers.cylinder import CylinderGrid, solve_radial
from meanfield.models import SelfAttention, Transformer
from tests.helpers import EPS

S0, SIGMA = 2.0, 0.25
RADII = (np.exp(-0.5), np.exp(4.5))


def turning(theta, s):
    """Von Mises directions whose sin 2θ part depends on the radius (tests/meanfield/test_cylinder.py)."""
    g = np.exp(-0.5 * ((s - S0) / SIGMA) ** 2) / (SIGMA * np.sqrt(2 * np.pi))
    return np.exp(2.0 * np.cos(theta - 1.0)) * g * (1.0 + 0.5 * np.sin(2 * theta) * np.tanh((s - S0) / SIGMA))


def cylinder_start(grid, f):
    y = grid.cell_averages(f)
    return mf.Density(grid, y / grid.mass(y))


# ------------------------------------------------------------------ the cylinder
@pytest.mark.parametrize("kind, beta", [("pre", 2.0), ("peri", 1.0)])  # peri at β = 1: test_cylinder.py says why
def test_solve_on_a_cylinder_density_is_solve_radial(kind, beta):
    """The same run by both entry points: solve_radial is a view of solve's Solution, so the states agree to
    round-off (the one code path: bit for bit here; asserted to 4 EPS of the largest value, a margin for a BLAS
    that sums in another order), and t, status, message are the Solution's."""
    model = Transformer(SelfAttention(beta), normalization=kind)
    grid = CylinderGrid(64, 128, RADII)
    t = [0.0, 0.5, 1.0]
    sol = mf.solve(model, cylinder_start(grid, turning), (0.0, 1.0), t)
    assert sol.status is mf.Status.SUCCESS, sol.message
    assert sol.representation == ("cylinder",) * 3 and sol.method == "rk4"
    old = solve_radial(model, turning, (0.0, 1.0), t, n_theta=64, n_s=128, radii=RADII)
    new = np.array([f.values for f in sol.densities])
    assert np.max(np.abs(new - old.values)) <= 4 * EPS * np.max(np.abs(old.values))
    assert old.status is sol.status and old.message == sol.message and np.array_equal(old.t, sol.t)
    assert np.max(np.abs(sol.mass - 1.0)) <= 1e-13  # conservative scheme: round-off (as test_cylinder.py)
    assert sol.diagnostics["mass_drift"] == old.mass_drift <= 1e-13


def test_a_cylinder_run_that_reaches_the_wall_returns_its_status():
    """Mass reaching the outer guard cells stops the run: solve returns RESOLUTION_LOST with the side and the mass
    (``diagnostics["edge"]``) and the frames up to the last state inside; solve_radial raises its RadiusRangeError
    from that Solution."""
    def narrow(theta, s):
        return (1 + 0.5 * np.sin(2 * theta) * np.tanh((s - 2.0) / 0.1)) * np.exp(-0.5 * ((s - 2.0) / 0.1) ** 2)

    model = Transformer(SelfAttention(1.0), normalization="peri")
    grid = CylinderGrid(16, 240, (np.exp(1.2), np.exp(2.8)))
    sol = mf.solve(model, cylinder_start(grid, narrow), (0.0, 20.0), [0.0, 1.0, 20.0])
    assert sol.status is mf.Status.RESOLUTION_LOST and "outer guard cells" in sol.message
    side, mass = sol.diagnostics["edge"]
    assert side == "outer" and mass > 1e-10 and sol.t[-1] == sol.t_reached < 20.0
    with pytest.raises(mf.ResolutionError, match="outer guard cells"):
        sol.raise_for_status()


def test_the_cylinder_is_advanced_by_its_own_representation_alone():
    """Another representation, a strategy, a post-LN model or a method it has not are refused naming why."""
    grid = CylinderGrid(16, 48, RADII)
    rho0 = cylinder_start(grid, turning)
    pre = Transformer(SelfAttention(1.0), normalization="pre")
    with pytest.raises(ValueError, match="cylinder representation alone"):
        mf.solve(pre, rho0, (0, 1), representation="grid")
    with pytest.raises(ValueError, match="post-LN"):
        mf.solve(SelfAttention(1.0), rho0, (0, 1))
    with pytest.raises(ValueError, match="`strategy`"):
        mf.solve(pre, rho0, (0, 1), strategy="quadrature")
    with pytest.raises(ValueError, match="`method`"):
        mf.solve(pre, rho0, (0, 1), method="rk45")
    with pytest.raises(ValueError, match="does not apply"):  # a circle density is not the cylinder's
        mf.solve(pre, mf.Density.uniform(mf.CircleGrid(16)), (0, 1), representation="cylinder")


# ------------------------------------------------------------------ natural frequencies
def test_solve_on_a_frequency_density_is_the_ott_antonsen_solution():
    """β = 0, Lorentzian pole (tests/meanfield/test_frequencies.py's first case) through meanfield.solve: z(t) of the
    marginal is the closed form to 1e-10, and frequencies.solve gives the same states to round-off (one code path)."""
    g = mf.CircleGrid(256)
    a0, T = 0.3 * np.exp(0.4j), 8.0
    t = np.linspace(0.0, T, 9)
    model = SelfAttention(0.0)
    rho0 = mf.Density(g, exact.wrapped_cauchy(g.angles, a0))
    start = fq.frequency_density(rho0, fq.Lorentzian(0.25))
    sol = mf.solve(model, start, (0.0, T), t, dt=0.01)
    assert sol.status is mf.Status.SUCCESS and sol.representation == ("frequencies",) * 9
    z = np.array([2 * np.pi * np.conj(f.grid.quadrature.weights @ f.coefficients[:, 1]) for f in sol.densities])
    assert np.max(np.abs(z - exact.lorentzian_ott_antonsen(t, a0, 0.25))) < 1e-10
    assert np.max(np.abs(sol.mass - 1.0)) < 1e-14
    old = fq.solve(model, rho0, fq.Lorentzian(0.25), (0.0, T), t, dt=0.01)
    assert np.max(np.abs(old.z - z)) <= 4 * EPS  # |z| <= 1: the same operations, at most a summation order apart
    assert old.status is sol.status and old.message == sol.message and np.array_equal(old.t, sol.t)


def test_real_nodes_through_solve_hand_over_as_frequencies_solve_does():
    """Identical frequencies lock into a point: the node is handed over to atoms (``refine``, default on) in
    meanfield.solve as in frequencies.solve, at the same time, with the same order parameter to round-off; with
    refine=False the run stops with RESOLUTION_LOST naming the node."""
    g = mf.CircleGrid(64)
    rho0 = mf.Density(g, exact.wrapped_cauchy(g.angles, 0.3))
    law = fq.Discrete([0.0])
    t = [0.0, 2.0, 6.0]
    model = SelfAttention(1.0)
    sol = mf.solve(model, fq.frequency_density(rho0, law), (0.0, 6.0), t)
    old = fq.solve(model, rho0, law, (0.0, 6.0), t)
    assert sol.status is old.status is mf.Status.SUCCESS, sol.message
    assert sol.diagnostics["handovers"] == old.handovers and len(old.handovers) == 1
    z = np.array([2 * np.pi * np.conj(f.grid.quadrature.weights @ f.coefficients[:, 1]) for f in sol.densities])
    assert np.max(np.abs(z - old.z)) <= 4 * EPS
    stopped = mf.solve(model, fq.frequency_density(rho0, law), (0.0, 6.0), t, refine=False)
    assert stopped.status is mf.Status.RESOLUTION_LOST and "node 0" in stopped.message


def test_the_frequency_density_is_advanced_by_its_own_representation_alone():
    g = mf.CircleGrid(32)
    start = fq.frequency_density(mf.Density.uniform(g), fq.Gaussian(1.0).quadrature(8))
    with pytest.raises(ValueError, match="frequencies representation alone"):
        mf.solve(SelfAttention(1.0), start, (0, 1), representation="nodes")
    with pytest.raises(ValueError, match="`method` does not apply"):
        mf.solve(SelfAttention(1.0), start, (0, 1), method="rk4")
    with pytest.raises(ValueError, match="does not apply"):
        mf.solve(SelfAttention(1.0), mf.Density.uniform(g), (0, 1), representation="frequencies")
    with pytest.raises(ValueError, match="first-harmonic"):
        mf.solve(SelfAttention(1.0), fq.frequency_density(mf.Density.uniform(g), fq.Lorentzian(0.5)), (0, 1))


# ------------------------------------------------------------------ the Lohe model on S²
def test_s2_rotation_densities_with_zero_omegas_are_the_s2_solver():
    """Every Ω = 0: each node of a RotationGrid is today's S² solution (the grid representation, quadrature
    strategy, the same RK4 steps), and the marginal's field is the one density's: equal to 4 EPS of the largest
    value (the same operations; measured 8e-17)."""
    g = mf.SphereGrid(16)
    rho = mf.Density.from_function(g, lambda x: np.exp(x[..., 0] + 0.5 * x[..., 2]))
    model = SelfAttention(1.0)
    t = [0.0, 0.25, 0.5]
    sphere = mf.solve(model, rho, (0.0, 0.5), t, dt=0.01, strategy="quadrature", representation="grid")
    assert sphere.status is mf.Status.SUCCESS and not sphere.refinements
    start = mf.Density(fq.RotationGrid(g, np.zeros((2, 3, 3)), [0.3, 0.7]), np.stack([rho.values] * 2))
    sol = mf.solve(model, start, (0.0, 0.5), t, dt=0.01)
    assert sol.status is mf.Status.SUCCESS and sol.representation == ("rotations",) * 3
    expected = np.array([d.values for d in sphere.densities])
    got = np.array([d.values for d in sol.densities])
    assert np.max(np.abs(got - expected[:, None])) <= 4 * EPS * np.max(expected)


def test_one_rotating_node_on_s2_is_the_s2_solution_turned():
    """One node Ω (a rotation about e_3 at rate 0.8): attention commutes with rotations, so ρ_Ω(x, t) =
    ρ(e^{−Ωt}x, t) with ρ today's S² solution; equal to 1e-8 (RK4's time error of the rotation at dt = 0.01,
    O(dt⁴): measured 3e-10; the interpolant of the band-limited solution is exact)."""
    from scipy.linalg import expm

    g = mf.SphereGrid(16)
    rho = mf.Density.from_function(g, lambda x: np.exp(x[..., 0] + 0.5 * x[..., 2]))
    model = SelfAttention(1.0)
    t = [0.0, 0.25, 0.5]
    sphere = mf.solve(model, rho, (0.0, 0.5), t, dt=0.01, strategy="quadrature", representation="grid")
    omega = np.array([[0.0, -0.8, 0.0], [0.8, 0.0, 0.0], [0.0, 0.0, 0.0]])
    sol = mf.solve(model, mf.Density(fq.RotationGrid(g, omega[None]), rho.values[None]), (0.0, 0.5), t, dt=0.01)
    assert sol.status is mf.Status.SUCCESS
    for k, s in enumerate(t):
        turned = sphere.densities[k](g.points @ expm(omega * s))  # ρ(R^T x) for the rows x of the points
        assert np.max(np.abs(sol.densities[k].values[0] - turned)) <= 1e-8


# ------------------------------------------------------------------ refusals and frames (review of issue 47)
@pytest.mark.parametrize("model, words", [(SelfAttention(1.0, causal=True), "non-causal"),
                                          ("hardmax", "hardmax"),
                                          ("softmax", "non-causal attention on S²")])
def test_the_lohe_densities_refuse_what_they_do_not_solve(model, words):
    """Causal attention (the tokens' positions are not part of a RotationGrid), hardmax (no density solver) and an
    R^d model are refused, naming why — a causal head ran to SUCCESS with another density before."""
    from meanfield.models import Hardmax, Softmax

    model = {"hardmax": Hardmax(), "softmax": Softmax()}.get(model, model) if isinstance(model, str) else model
    g = mf.SphereGrid(8)
    rho = mf.Density.from_function(g, lambda x: 1.0 + 0.3 * x[..., 2]).unit_mass()
    start = mf.Density(fq.RotationGrid(g, np.zeros((2, 3, 3)), [0.5, 0.5]), np.stack([rho.values] * 2))
    with pytest.raises(ValueError, match=words):
        mf.solve(model, start, (0.0, 0.1), dt=0.01)


def test_product_frames_carry_their_time_and_refuse_a_point_set():
    """Solution.frame(k) of a product domain is at t[k] (the Frame protocol); W1, sampling and energy need a point
    set in one ambient R^d, which a product density does not have yet: refused, naming it, not an AttributeError."""
    g = mf.SphereGrid(16)
    rho = mf.Density.from_function(g, lambda x: 1.0 + 0.3 * x[..., 2]).unit_mass()
    start = mf.Density(fq.RotationGrid(g, np.zeros((1, 3, 3))), rho.values[None])
    sol = mf.solve(SelfAttention(1.0), start, (0.0, 0.1), [0.0, 0.05, 0.1], dt=0.01)
    assert sol.status is mf.Status.SUCCESS
    assert [sol.frame(k).t for k in range(3)] == list(sol.t) == [0.0, 0.05, 0.1]
    for call in (lambda f: f.as_measure(), lambda f: f.mean(), lambda f: f.energy(1.0)):
        with pytest.raises(NotImplementedError, match="product|not built"):
            call(sol.frame(-1))


# ------------------------------------------------------------------ the zonal S^{d-1} × (0, ∞)
def zonal_turning(u, s):
    """Directions clustered about e whose u-profile depends on the radius (tests/meanfield/test_zonal_cylinder.py)."""
    g = np.exp(-0.5 * ((s - S0) / SIGMA) ** 2) / (SIGMA * np.sqrt(2 * np.pi))
    return np.exp(2.0 * u) * g * (1.0 + 0.5 * u * np.tanh((s - S0) / SIGMA))


@pytest.mark.parametrize("kind, beta, d", [("pre", 2.0, 3), ("peri", 1.0, 16)])
def test_solve_on_a_zonal_cylinder_density_returns_the_solution(kind, beta, d):
    """A density on a ZonalCylinderGrid is an initial state of meanfield.solve: its domain is the member of dimension
    d of the product family ZONAL_CYLINDER, the one "zonal-cylinder" representation advances it, and the Solution
    has its status and a frame per output (Solution.frame(k): a density on the grid at t[k]). The mass is conserved
    to round-off (the u-part's rate of c̄_0 is exactly zero and the s-fluxes telescope: error model n_steps × a few
    ulps, bound 1e4 EPS ≈ 2e-12), and solve_zonal_radial is a view of the same Solution (the one code path: equal
    to 4 EPS of the largest value, a margin for a BLAS that sums in another order)."""
    from meanfield.domains.products import ZONAL_CYLINDER
    from meanfield.solvers.zonal_cylinder import ZonalCylinderGrid, solve_zonal_radial

    model = Transformer(SelfAttention(beta), normalization=kind)
    grid = ZonalCylinderGrid(d, 24, 64, RADII)
    assert grid.domain is ZONAL_CYLINDER.of_dim(d) and grid.domain.dim == d and ZONAL_CYLINDER.dim is None
    t = [0.0, 0.25, 0.5]
    sol = mf.solve(model, cylinder_start(grid, zonal_turning), (0.0, 0.5), t)
    assert sol.status is mf.Status.SUCCESS, sol.message
    assert sol.representation == ("zonal-cylinder",) * 3 and sol.method == "rk4"
    frames = [sol.frame(k) for k in range(3)]
    assert [f.t for f in frames] == list(sol.t) == t and all(f.grid == grid for f in frames)
    assert np.max(np.abs(sol.mass - 1.0)) < 1e4 * EPS
    assert sol.diagnostics["mass_drift"] < 1e4 * EPS
    assert np.max(np.abs(frames[-1].values - frames[0].values)) > 1e-3  # it moved
    old = solve_zonal_radial(model, d, zonal_turning, 0.5, t, lmax=24, n_s=64, radii=RADII)
    new = np.array([f.values for f in sol.frames])
    assert np.max(np.abs(new - old.values)) <= 4 * EPS * np.max(np.abs(old.values))
    assert old.status is sol.status and old.message == sol.message and np.array_equal(old.t, sol.t)


def test_a_zonal_cylinder_run_that_reaches_the_wall_returns_its_status():
    """Peri-LN radii move at speed <= 1 and leave a narrow interval: solve returns RESOLUTION_LOST with the side and
    the mass in the guard cells (``diagnostics["edge"]``) and the frames up to the last state inside;
    solve_zonal_radial raises RadiusRangeError carrying that view; an initial law with mass at the walls is
    refused before any step."""
    from meanfield.solvers.zonal_cylinder import RadiusRangeError, ZonalCylinderGrid, solve_zonal_radial

    def narrow(u, s):
        return (1 + 0.5 * u * np.tanh((s - 2.0) / 0.1)) * np.exp(-0.5 * ((s - 2.0) / 0.1) ** 2)

    model = Transformer(SelfAttention(1.0), normalization="peri")
    radii = (np.exp(1.2), np.exp(2.8))
    grid = ZonalCylinderGrid(3, 8, 160, radii)
    sol = mf.solve(model, cylinder_start(grid, narrow), (0.0, 20.0), [0.0, 1.0, 20.0])
    assert sol.status is mf.Status.RESOLUTION_LOST and "outer guard cells" in sol.message
    side, mass = sol.diagnostics["edge"]
    assert side == "outer" and mass > 1e-10 and sol.t[-1] == sol.t_reached < 20.0
    assert list(sol.t[:2]) == [0.0, 1.0] and all(f.t == t for f, t in zip(sol.frames, sol.t))
    with pytest.raises(mf.ResolutionError, match="outer guard cells"):
        sol.raise_for_status()
    with pytest.raises(RadiusRangeError, match="outer guard cells") as e:
        solve_zonal_radial(model, 3, narrow, 20.0, [0.0, 1.0, 20.0], lmax=8, n_s=160, radii=radii)
    assert e.value.side == "outer" and e.value.solution.t[-1] == pytest.approx(sol.t_reached)
    with pytest.raises(RadiusRangeError, match="`rho0`.*inner guard cells"):
        mf.solve(model, cylinder_start(ZonalCylinderGrid(3, 8, 32, (np.exp(-1), 10.0)),
                                       lambda u, s: np.exp(-0.5 * (s / 0.5) ** 2)), (0.0, 1.0))


def test_a_zonal_cylinder_run_that_loses_resolution_returns_its_status():
    """Pre-LN radii of tokens facing away from the cluster shrink (ṙ = a(u) < 0), and the law of s = log r steepens at
    small r: the monitor stops the run where the negative undershoot of the centred face values passes neg_tol —
    status RESOLUTION_LOST naming it, no ``edge``, the frames up to then conserving the mass — instead of a wrong
    answer; solve_zonal_radial raises ResolutionError with the view attached."""
    from meanfield.solvers.zonal_cylinder import ZonalCylinderGrid, solve_zonal_radial

    def spread(u, s):
        return (1 + 0.5 * u) * np.exp(-0.5 * ((s - 2.0) / 0.6) ** 2)

    model = Transformer(SelfAttention(3.0), normalization="pre")
    radii = (np.exp(-2.5), np.exp(7.0))
    grid = ZonalCylinderGrid(3, 16, 128, radii)
    sol = mf.solve(model, cylinder_start(grid, spread), (0.0, 10.0), [0.0, 5.0, 10.0])
    assert sol.status is mf.Status.RESOLUTION_LOST and "negative part" in sol.message and "edge" not in sol.diagnostics
    assert 0.0 < sol.t_reached == sol.t[-1] < 5.0 and sol.hint and "lmax" in sol.hint
    assert np.max(np.abs(sol.mass - 1.0)) < 1e4 * EPS
    with pytest.raises(mf.ResolutionError, match="negative part") as e:
        solve_zonal_radial(model, 3, spread, 10.0, [0.0, 5.0, 10.0], lmax=16, n_s=128, radii=radii)
    assert e.value.solution.t[-1] == sol.t_reached


@pytest.mark.parametrize("change, error, words", [
    ({"model": SelfAttention(1.0)}, ValueError, "post-LN"),
    ({"model": Transformer(SelfAttention(1.0, Q=np.eye(4)), normalization="pre")}, ValueError, "R\\^4"),
    ({"representation": "grid"}, ValueError, "zonal-cylinder representation alone"),
    ({"method": "rk45"}, ValueError, "`method`"),
    ({"strategy": "quadrature"}, ValueError, "`strategy`"),
    ({"cfl": -1.0}, ValueError, "cfl"),
])
def test_the_zonal_cylinder_refuses_what_it_does_not_solve(change, error, words):
    """A post-LN model, heads on another R^d, another representation, a method or strategy it has not, a bad cfl:
    each refused by meanfield.solve naming it, before any step."""
    from meanfield.solvers.zonal_cylinder import ZonalCylinderGrid

    args = {"model": Transformer(SelfAttention(1.0), normalization="pre"),
            "mu0": cylinder_start(ZonalCylinderGrid(3, 8, 16, RADII), zonal_turning), "t_span": (0.0, 1.0)}
    args.update(change)
    with pytest.raises(error, match=words):
        mf.solve(**args)


def test_the_zonal_cylinder_family_and_grid_refuse_bad_input():
    """The family has members for 2 <= d only (naming d), a member of one dimension has no other; the grid refuses
    radii out of order and too few cells; a circle density is not the zonal cylinder's."""
    from meanfield.domains.products import CYLINDER, ZONAL_CYLINDER
    from meanfield.solvers.zonal_cylinder import ZonalCylinderGrid

    with pytest.raises(ValueError, match="`d`"):
        ZONAL_CYLINDER.of_dim(1)
    with pytest.raises(TypeError, match="`d`"):
        ZONAL_CYLINDER.of_dim(2.5)
    assert ZONAL_CYLINDER.of_dim(5) is ZONAL_CYLINDER.of_dim(5).of_dim(5) is ZONAL_CYLINDER.of_dim(5)
    with pytest.raises(ValueError, match="R\\^3"):
        CYLINDER.of_dim(3)
    with pytest.raises(ValueError, match="radii"):
        ZonalCylinderGrid(3, 8, 16, (2.0, 1.0))
    with pytest.raises(ValueError, match="n_s"):
        ZonalCylinderGrid(3, 8, 4, RADII)
    pre = Transformer(SelfAttention(1.0), normalization="pre")
    with pytest.raises(ValueError, match="does not apply"):
        mf.solve(pre, mf.Density.uniform(mf.CircleGrid(16)), (0, 1), representation="zonal-cylinder")


def test_a_long_zonal_cylinder_run_is_estimated_before_it_starts():
    """A fixed step known before the run gives its number of steps (what solve warns of past 10^5 steps), the
    method the product domain's representation takes by default: 2 outputs 0.5 apart, dt = 1e-6, so 5·10^5 steps."""
    from meanfield.solvers.solve import prepare, run_estimate
    from meanfield.solvers.zonal_cylinder import ZonalCylinderGrid

    p = prepare(Transformer(SelfAttention(1.0), normalization="pre"),
                cylinder_start(ZonalCylinderGrid(3, 8, 16, RADII), zonal_turning), (0.0, 0.5), dt=1e-6)
    estimate = run_estimate(p, timing=False)
    assert estimate.steps == 500_000 and estimate.method == "rk4"
