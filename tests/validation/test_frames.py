"""One frame (issue 47, item 5): a grid density, its Lagrangian measure and a particle snapshot of the same points
answer one protocol (:class:`meanfield.density.Frame`), and :mod:`validation` compares any of them — or the raw arrays
of the same points — to the same distance.

Error models. The three frames of one measure hold the same points up to the Lagrangian chart's round trip
(``chart.to_points(chart.to_state(x))``, a few ulps), and W_1 is 1-Lipschitz in the points' positions:
|W_1(μ, ν) − W_1(μ', ν)| <= max_i d(x_i, x_i'), so the distances agree within that displacement (plus the last bits of
the solver's sums). E_β of the three is the one double sum Σ_ij w_i w_j e^{β⟨x_i,x_j⟩}, evaluated by the grid's
quadrature, by the domain's spectral point sums or pairwise, in different orders: a few EPS·|E| (≤ 5 EPS observed on
these grids), so 100 EPS·max(1, |E|) leaves a margin of 20× and more.
"""

import numpy as np
import pytest

import meanfield as mf
import particles as pt
from meanfield.density import Frame
from meanfield.domains import Measure
from meanfield.lagrangian import LagrangianMeasure, clusters, start
from particles import Snapshot
from tests.helpers import EPS
from validation import w1
from validation.wasserstein import prepare

GRIDS = {
    "circle": lambda: mf.CircleGrid(32),
    "sphere": lambda: mf.SphereGrid(12),
    "plane": lambda: mf.EuclideanGrid([(-2, 2), (-1.5, 1.5)], (12, 10)),
}


def _density(name):
    return mf.Density.from_function(GRIDS[name](), lambda x: np.exp(0.8 * x[..., 0] - 0.3 * x[..., 1] ** 2))


def _frames(rho):
    """The three frames of one measure: the density, its Lagrangian measure (the nodes with ρ_j w_j), the snapshot of
    the Lagrangian measure's points and weights."""
    lag = start(rho)
    return rho, lag, Snapshot(lag.points, lag.weights, lag.domain, t=lag.t)


@pytest.mark.parametrize("name", list(GRIDS))
def test_the_three_classes_are_frames(name):
    rho, lag, snap = _frames(_density(name))
    for f in (rho, lag, snap):
        assert isinstance(f, Frame), type(f).__name__
        assert f.domain is rho.domain
    # what each can do besides: a grid, points carrying their log-density, neither
    assert rho.grid is not None and not rho.lagrangian
    assert lag.grid is None and lag.lagrangian
    assert snap.grid is None and not snap.lagrangian
    # the domain layer's Measure and bare arrays are measures, not frames (no time, no energy)
    assert not isinstance(rho.as_measure(), Frame)
    assert not isinstance(np.zeros((3, 2)), Frame)


@pytest.mark.parametrize("name", list(GRIDS))
def test_w1_is_the_same_from_every_frame_and_from_raw_arrays(name):
    """W_1 against particles from the density (where it enters as its grid measure: S², R²; on the circle it enters
    through its interpolant's exact CDF, another measure), its Lagrangian measure, the snapshot of the same points and
    the raw (points, weights) arrays: equal within the chart's displacement of the points."""
    rho, lag, snap = _frames(rho0 := _density(name))
    pts, w = rho.as_measure()
    x = pt.sample(rho0, 40, rng=3)
    shift = float(np.max(np.linalg.norm(lag.points - pts, axis=-1)))
    assert shift <= 8 * EPS  # the chart's round trip: a few ulps of unit-size coordinates
    raw = w1((pts, w), x)
    values = [w1(lag, x), w1(snap, x), w1(Snapshot(pts, w, rho.domain), x), w1(x, snap)]
    if prepare(rho).coords.shape == pts.shape:  # the density enters as its grid measure (not the circle's CDF)
        values.append(w1(rho, x))
    for v in values:
        assert abs(v - raw) <= shift + 16 * EPS * max(1.0, raw), (v, raw)


@pytest.mark.parametrize("name", list(GRIDS))
def test_mass_mean_and_energy_agree_across_the_three_frames(name):
    rho, lag, snap = _frames(_density(name))
    for f in (lag, snap):
        assert abs(f.mass() - rho.mass()) <= 16 * EPS
        assert np.max(np.abs(f.mean() - rho.mean())) <= 16 * EPS
        np.testing.assert_array_equal(f.as_measure().weights, lag.weights)
    if rho.domain.name == "euclidean":  # E_β of grid densities: circle and S² only (Density.energy)
        return
    for beta in (0.0, 1.0, 4.0):
        e = rho.energy(beta)
        for f in (lag, snap):
            assert abs(f.energy(beta) - e) <= 100 * EPS * max(1.0, abs(e)), (beta, f.energy(beta), e)


def test_solution_and_trajectory_expose_their_states_as_frames():
    """Solution.frame(k) and Trajectory.frame(k) are frames at t[k]; W_1 between them is the one between the
    older spellings (densities[k], x[k]) exactly."""
    model = mf.SelfAttention(beta=1.0)
    rho0 = _density("circle")
    t_eval = [0.0, 0.5, 1.0]
    sol = mf.solve(model, rho0, (0.0, 1.0), t_eval=t_eval)
    lag = mf.solve(model, rho0, (0.0, 1.0), t_eval=t_eval, representation="nodes")
    traj = pt.simulate(model, pt.sample(rho0, 30, rng=1), t_eval)
    assert sol.densities is sol.frames and len(sol.frames) == 3
    for k, t in enumerate(t_eval):
        for s in (sol, lag):
            f = s.frame(k)
            assert isinstance(f, Frame) and f is s.frames[k] and f.t == s.t[k] == t
        snap = traj.frame(k)
        assert isinstance(snap, Snapshot) and snap.t == t and snap.domain is traj.domain
        np.testing.assert_array_equal(snap.points, traj.x[k])
        np.testing.assert_array_equal(traj.measure(k).points, traj.x[k])
        assert w1(sol.frame(k), snap) == w1(sol.densities[k], traj.x[k])
        assert w1(lag.frame(k), snap) == w1(lag.densities[k], traj.x[k])
    assert sol.frame() is sol.frames[-1]
    assert isinstance(lag.frame(-1), LagrangianMeasure) and lag.frame(-1).lagrangian
    with pytest.raises(IndexError, match="`k`"):
        sol.frame(3)


def test_a_density_carries_its_time_through_rescaling_and_resampling():
    rho = mf.Density(mf.CircleGrid(16), np.full(16, 2.0), t=0.25)
    assert rho.t == 0.25 and rho.unit_mass().t == 0.25 and rho.resampled(mf.CircleGrid(32)).t == 0.25
    assert mf.Density.uniform(mf.CircleGrid(16)).t is None


def test_frames_refused_where_a_grid_or_a_lagrangian_measure_is_needed():
    rho, lag, snap = _frames(_density("circle"))
    model = mf.SelfAttention(beta=1.0)
    with pytest.raises(TypeError, match="`mu0`"):
        mf.solve(model, snap, (0.0, 1.0))
    with pytest.raises(TypeError, match="`density`"):
        pt.sample(lag, 10, rng=0)
    with pytest.raises(TypeError, match="`frame`"):
        clusters(rho)
    with pytest.raises(TypeError, match="`a`"):
        w1(pt.simulate(model, pt.sample(rho, 5, rng=0), [0.0, 0.1]), snap)  # carries a domain, but is no measure


def test_snapshot_checks_its_arguments():
    with pytest.raises(ValueError, match="`points`"):
        Snapshot(np.zeros((0, 2)))
    with pytest.raises(ValueError, match="`weights`"):
        Snapshot(np.eye(2), [1.0])
    with pytest.raises(ValueError, match="`weights`"):
        Snapshot(np.eye(2), [1.5, -0.5])
    s = Snapshot(np.eye(2))  # unit rows in R²: the circle, weights 1/n
    assert s.domain.name == "circle" and s.t is None and s.mass() == 1.0
    assert isinstance(s.as_measure(), Measure)
