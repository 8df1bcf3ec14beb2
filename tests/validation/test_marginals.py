r"""W_1 of the one-dimensional marginals of a product domain's density against particles (validation.marginals).

Error models. A cell law's W_1 is a sum over P pieces (the merged cell edges and points) of closed-form areas, each
from CDF values that are cumulative sums of at most P terms of size <= 1: its round-off is at most a few P·EPS
times the width of the support, so the checks against closed forms allow 8 P·EPS·width (measured: below P·EPS·width/10
in every case here). The quantised circle and zonal laws carry their own certified bound (π/M, π/(2M)), which the
checks add.
"""

import numpy as np
import pytest
from scipy.stats import wasserstein_distance

from meanfield.solvers.cylinder import CylinderGrid
from meanfield.density import Density
from meanfield.domains.marginals import CellLaw
from meanfield.solvers.zonal_cylinder import ZonalCylinderGrid
from particles import Snapshot
from tests.helpers import EPS
from validation import line_w1, marginal_distances, marginal_w1


def _law(n=8, rng=3, lo=0.0, hi=2.0):
    rng = np.random.default_rng(rng)
    masses = rng.random(n)
    return CellLaw(np.linspace(lo, hi, n + 1), masses / masses.sum())


def _point_mass(law, c):
    r"""W_1(law, δ_c) = Σ_i m_i E|U_i − c|, U_i uniform on [a, b]: |(a + b)/2 − c| for c outside, ((c − a)² + (b − c)²)
    / (2(b − a)) for c inside."""
    a, b = law.edges[:-1], law.edges[1:]
    inside = (a <= c) & (c <= b)
    e = np.where(inside, ((c - a) ** 2 + (b - c) ** 2) / (2 * (b - a)), np.abs(0.5 * (a + b) - c))
    return float(law.masses @ e)


def _round_off(*laws_or_points, width):
    """8 P·EPS·width, P the pieces (module docstring)."""
    pieces = sum(np.size(x.edges) if isinstance(x, CellLaw) else np.size(x) for x in laws_or_points)
    return 8 * pieces * EPS * width


# ---------------------------------------------------------------------------------------------------------- the line
def test_a_cell_law_is_at_distance_zero_from_itself_and_from_its_refinement():
    law = _law(16)
    assert line_w1(law, law) == 0.0
    # each cell split in three with a third of its mass: the same measure on other edges
    edges = np.concatenate([np.linspace(a, b, 4)[:-1] for a, b in zip(law.edges[:-1], law.edges[1:])] + [[2.0]])
    fine = CellLaw(edges, np.repeat(law.masses / 3, 3))
    assert line_w1(law, fine) <= _round_off(law, fine, width=2.0)


@pytest.mark.parametrize("c", [-0.7, 0.0, 0.3, 0.75, 1.0, 1.9, 2.0, 3.5])
def test_against_a_point_mass_is_the_closed_form(c):
    law = _law(8)
    exact = _point_mass(law, c)
    assert abs(line_w1(law, [c]) - exact) <= _round_off(law, [c], width=4.2)
    assert abs(line_w1(([c], [1.0]), law) - exact) <= _round_off(law, [c], width=4.2)  # symmetric, weighted form


@pytest.mark.parametrize("c", [-1.25, 0.5, 3.0])
def test_a_translation_by_c_is_at_distance_c(c):
    """W_1(μ, μ(· − c)) = |c| for any law: point sets (equal and unequal weights) and cell laws."""
    rng = np.random.default_rng(7)
    s = rng.normal(size=200)
    w = rng.random(200)
    w /= w.sum()
    assert abs(line_w1(s, s + c) - abs(c)) <= _round_off(s, s, width=np.ptp(s) + abs(c))
    assert abs(line_w1((s, w), (s + c, w)) - abs(c)) <= _round_off(s, s, width=np.ptp(s) + abs(c))
    law = _law(12)
    moved = CellLaw(law.edges + c, law.masses)
    assert abs(line_w1(law, moved) - abs(c)) <= _round_off(law, moved, width=2.0 + abs(c))


def test_agrees_with_scipy_on_fine_samples_within_their_error():
    """Against N points, the cell law's W_1 and scipy's W_1 between the points and M samples of the law differ by at
    most W_1(law, samples) (triangle inequality): <= width/M for the M quantiles (i + ½)/M (each moves its 1/M of mass
    within one quantile interval, and these tile the support), and for M iid draws E W_1 <= ∫√(F(1 − F))/√M
    (Bobkov & Ledoux 2019, Thm 3.5), allowed 10× (Markov: a failure with probability <= 1/10 for a random seed)."""
    law = _law(8)
    points = np.random.default_rng(5).uniform(-0.2, 2.2, 37)
    exact = line_w1(law, points)
    M = 200_000
    cum = np.concatenate([[0.0], np.cumsum(law.masses)])
    quantiles = np.interp((np.arange(M) + 0.5) / M, cum, law.edges)
    assert abs(exact - wasserstein_distance(points, quantiles)) <= 2.0 / M
    draws = np.interp(np.random.default_rng(11).random(M), cum, law.edges)
    x = np.linspace(0.0, 2.0, 20001)
    F = law.cdf(x)
    bobkov_ledoux = np.trapezoid(np.sqrt(np.clip(F * (1 - F), 0.0, None)), x) / np.sqrt(M)
    assert abs(exact - wasserstein_distance(points, draws)) <= 10 * bobkov_ledoux


def test_equals_the_cylinder_scripts_former_function_on_its_data():
    """The script's former ``log_radius_w1`` (an equal-weight formula, kept here as it was) and ``line_w1`` on the
    script's own data: its ρ0's law of log r on its grid (n_s = 256 on [−0.5, 4.5]) and log-radii of its sampler."""
    from scripts.cylinder_meanfield_limit import RADII, rho0, sample

    def former(edges, masses, s):
        s = np.sort(np.asarray(s, dtype=float))
        cdf_edges = np.concatenate([[0.0], np.cumsum(masses)])
        cdf_edges /= cdf_edges[-1]
        x = np.union1d(edges, s)
        F = np.interp(x, edges, cdf_edges)
        FN = np.searchsorted(s, x, side="right") / s.size
        a, b = F[:-1] - FN[:-1], F[1:] - FN[:-1]
        h = np.diff(x)
        same = a * b >= 0
        return float(np.sum(np.where(same, 0.5 * h * np.abs(a + b),
                                     0.5 * h * (a * a + b * b) / np.where(same, 1.0, np.abs(a) + np.abs(b)))))

    grid = CylinderGrid(128, 256, RADII)
    values = grid.cell_averages(rho0)
    values /= grid.mass(values)
    log_r = Density(grid, values).marginals()[1].law
    for n in (250, 4000):
        s = np.log(np.linalg.norm(sample(n, np.random.default_rng(n))[0], axis=-1))
        old, new = former(grid.s_edges, log_r.masses, s), line_w1(log_r, s)
        assert abs(new - old) <= _round_off(log_r, s, width=5.0), (old, new)


# ---------------------------------------------------------------------------------------------- product domains' frames
S0, SIG = 1.0, 0.3
RADII = (np.exp(-0.5), np.exp(2.5))
#: cells the circle density's law is quantised into (bound π/CELLS = 7.7e-4; the default 2^20 costs 0.25 s a call)
CELLS = 1 << 12


def _cylinder_density(n_theta=16, n_s=60):
    """Uniform directions × a normal law of s = log r, on the cylinder's grid (unit mass)."""
    grid = CylinderGrid(n_theta, n_s, RADII)
    values = grid.cell_averages(lambda th, s: np.exp(-0.5 * ((s - S0) / SIG) ** 2) + 0 * th)
    return Density(grid, values / grid.mass(values))


def test_a_cylinder_frame_against_particles_at_one_point():
    """Every token at x = e^c (cos φ, sin φ): the direction's W_1 is the uniform law's mean distance to φ on the
    circle, π/2 (within the quantisation bound π/M); log r's is the closed form against δ_c."""
    rho = _cylinder_density()
    c, phi = 1.2, 0.4
    x = np.exp(c) * np.tile([np.cos(phi), np.sin(phi)], (5, 1))
    d = marginal_distances(rho, Snapshot(x), cells=CELLS)
    assert set(d) == {"direction", "log r"}
    assert d["direction"].method == "circle" and d["log r"].method == "cells" and d["log r"].bound == 0.0
    assert abs(d["direction"].value - np.pi / 2) <= d["direction"].bound + 1e-12
    law = rho.marginals()[1].law
    assert abs(d["log r"].value - _point_mass(law, c)) <= _round_off(law, [c], width=3.0)
    # the same from the density's side b, from bare arrays, and for a batch of point sets
    assert marginal_w1(x, rho, cells=CELLS) == {k: v.value for k, v in d.items()}
    batch = marginal_w1(rho, np.stack([x, -x]), cells=CELLS)
    assert batch["log r"].shape == (2,) and np.all(batch["log r"] == d["log r"].value)
    assert np.allclose(batch["direction"], np.pi / 2, atol=d["direction"].bound + 1e-12)


def test_point_sets_compared_in_a_frames_marginals():
    """Two particle sets in the cylinder's coordinates: scaling every token by e^c moves log r by c (W_1 = |c|) and
    leaves the directions (W_1 = 0)."""
    rho = _cylinder_density()
    x = np.random.default_rng(2).normal(size=(300, 2)) * 3.0
    c = -0.45
    d = marginal_distances(Snapshot(x), Snapshot(np.exp(c) * x), marginals=rho, cells=CELLS)
    assert abs(d["log r"].value - abs(c)) <= _round_off(x[:, 0], x[:, 0], width=12.0)
    assert d["direction"].value <= 1e-12
    with pytest.raises(ValueError, match="`marginals`"):
        marginal_distances(x, np.exp(c) * x)


def test_the_zonal_cylinder_answers_through_the_same_function():
    """On the zonal S^15 × (0, ∞): uniform directions and every token at e^c e_d (the axis): the polar angle's W_1 is
    E θ = π/2 under the uniform law (symmetric about π/2), within its bound π/(2M); log r's the closed form."""
    d, c = 16, 0.8
    grid = ZonalCylinderGrid(d, 12, 60, RADII)
    values = grid.cell_averages(lambda u, s: np.exp(-0.5 * ((s - S0) / SIG) ** 2) + 0 * u)
    values /= grid.mass(values)
    marginals = grid.marginals(values)
    x = np.zeros((4, d))
    x[:, -1] = np.exp(c)
    out = marginal_distances(marginals, x, cells=CELLS)
    assert set(out) == {"polar angle", "log r"} and out["polar angle"].method == "polar-angle"
    assert abs(out["polar angle"].value - np.pi / 2) <= out["polar angle"].bound + 1e-12
    law = marginals[1].law
    assert abs(out["log r"].value - _point_mass(law, c)) <= _round_off(law, [c], width=3.0)
    # the same through a frame: the grid is a product grid, so its Density answers with the same marginals
    framed = marginal_distances(Density(grid, values), x, cells=CELLS)
    assert all(framed[k].value == out[k].value and framed[k].bound == out[k].bound for k in out)


def test_refusals():
    rho = _cylinder_density()
    x = np.ones((3, 2))
    with pytest.raises(ValueError, match="not 1"):
        line_w1(CellLaw([0.0, 1.0, 2.0], [0.5, 0.6]), [1.0])
    with pytest.raises(ValueError, match="no one-dimensional marginals"):
        from meanfield import CircleGrid
        marginal_distances(Density.uniform(CircleGrid(16)), x)
    with pytest.raises(ValueError, match="r > 0"):
        marginal_distances(rho, np.zeros((3, 2)))
    with pytest.raises(ValueError, match="strictly increasing"):
        CellLaw([0.0, 0.0, 1.0], [0.5, 0.5])
