"""Coarsening a measure: the bound is the cost of an explicit transport, so it dominates the exact W_p it moves."""

import numpy as np
import ot
import pytest

import particles as pt
from meanfield.domains import EUCLIDEAN, SPHERE
from validation.coarsening import coarsen
from tests.helpers import EPS


def exact_wp(x, wx, y, wy, geodesic, p):
    """W_p by linear programming (POT's network simplex) with the geodesic cost."""
    C = np.arccos(np.clip(x @ y.T, -1, 1)) if geodesic else np.linalg.norm(x[:, None] - y[None], axis=-1)
    return ot.emd2(wx, wy, C**p, numItermax=10**7) ** (1 / p)


def measures(rng):
    """A weighted point set on S² and one in R²."""
    x = pt.uniform_sphere(600, 3, rng=rng)
    yield "sphere", SPHERE, x, rng.dirichlet(np.ones(600))
    z = rng.normal(size=(600, 2)) * [1.0, 0.3]
    yield "euclidean", EUCLIDEAN, z, rng.dirichlet(np.ones(600))


@pytest.mark.parametrize("p", [1, 2])
def test_the_bound_is_the_cost_of_the_map_and_dominates_the_distance(rng, p):
    """W_p(μ, μ') <= b_p = (Σ w_i d(x_i, r_k(i))^p)^{1/p} <= max_i d(x_i, r_k(i)), with W_p by linear
    programming and b_p recomputed here from the labels (atan2(|x × r|, ⟨x, r⟩) on S², not the module's chord
    formula; arccos would err by √ε ≈ 1.5e-8 on the atoms left in place)."""
    for name, dom, x, w in measures(rng):
        for atoms in (1, 7, 60, 300):
            c = coarsen(x, w, atoms, dom, p)
            r = c.points[c.labels]
            moved = np.arctan2(np.linalg.norm(np.cross(x, r), axis=-1), np.sum(x * r, -1)) if dom is SPHERE \
                else np.linalg.norm(x - r, axis=-1)
            assert c.bound == pytest.approx(np.sum(w * moved**p) ** (1 / p), rel=1e-12, abs=1e-15)
            w_exact = exact_wp(x, w, c.points, c.weights, dom is SPHERE, p)
            assert w_exact <= c.bound + 1e-12, (name, atoms)
            assert c.bound <= moved.max() + 1e-12


def test_a_bound_for_p_is_a_bound_for_every_smaller_order(rng):
    x = pt.uniform_sphere(500, 3, rng=rng)
    w = np.full(500, 1 / 500)
    c = coarsen(x, w, 40, SPHERE, p=3)
    for q in (1, 2, 3):
        assert exact_wp(x, w, c.points, c.weights, True, q) <= c.bound + 1e-12


def test_mass_atoms_and_the_domain_are_kept(rng):
    for _, dom, x, w in measures(rng):
        c = coarsen(x, w, 50, dom)
        assert c.weights.size <= 50 and np.all(c.weights > 0)
        assert c.weights.sum() == pytest.approx(1.0, abs=64 * EPS)  # merged masses re-summed: 4.5 EPS seen
        np.testing.assert_allclose(np.bincount(c.labels, w), c.weights, rtol=1e-13)
        assert dom.contains(c.points)


def test_nothing_to_merge_is_the_measure_itself(rng):
    x = pt.uniform_sphere(30, 3, rng=rng)
    w = rng.dirichlet(np.ones(30))
    w[[3, 17]] = 0.0
    w /= w.sum()
    c = coarsen(x, w, 28, SPHERE)
    assert c.bound == 0.0 and c.weights.size == 28  # the atoms of weight 0 dropped, nothing moved
    np.testing.assert_array_equal(c.points, x[w > 0])
    np.testing.assert_array_equal(c.labels[[3, 17]], [-1, -1])


def test_clusters_are_found_and_merged_for_the_price_of_their_spread(rng):
    """Points in 5 tight clusters (radius 1e-7) on S²: 5 atoms cost at most the clusters' spread (a partition that
    cut a cluster would have to join two others, at a cost of order 1)."""
    centres = pt.uniform_sphere(5, 3, rng=rng)
    x = SPHERE.retract(np.repeat(centres, 400, axis=0) + 1e-7 * rng.normal(size=(2000, 3)))
    w = rng.dirichlet(np.ones(2000))
    c = coarsen(x, w, 5, SPHERE)
    assert c.weights.size == 5 and c.bound < 1e-6


def test_bad_input(rng):
    x = pt.uniform_sphere(10, 3, rng=rng)
    w = np.full(10, 0.1)
    for atoms in (0, 2.5, True):
        with pytest.raises(ValueError, match="`atoms`"):
            coarsen(x, w, atoms, SPHERE)
    with pytest.raises(ValueError, match="`p`"):
        coarsen(x, w, 3, SPHERE, p=0.5)
