"""Every domain knows its dimension ``dim``; the unit spheres are one family (the circle, S², S^{d-1}); and the
capabilities the layers above ask (issue 47 item 3) answer on every domain instead of a comparison of names."""

import pickle

import numpy as np
import pytest

import meanfield as mf
from meanfield.solvers import depth
from meanfield import domains, kernels
from meanfield.analysis import gaussian
from meanfield.domains import CIRCLE, EUCLIDEAN, SEQUENCE, SPHERE, ZONAL, sphere_of_dim, zonal_domain
from meanfield.domains.sphere.plotting import sphere_map
from meanfield.models import Softmax, registry


def unit(rng, n, d):
    x = rng.normal(size=(n, d))
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


#: (domain, d of its ambient R^d where the object has one, a d of a member where it is a family)
DIMS = [(CIRCLE, 2, 2), (SPHERE, None, 5), (EUCLIDEAN, None, 3), (SEQUENCE, None, 3), (ZONAL, None, 6)]


def test_every_registered_domain_has_a_dim_and_members_of_each_d():
    assert {d.name for d, _, _ in DIMS} == {d.name for d in domains.DOMAINS}
    for domain, dim, d in DIMS:
        assert domain.dim == dim, domain
        member = domain.of_dim(d)
        assert member.dim == d and member.name == domain.name
        assert member.of_dim(d) is member and domain.of_dim(d) is member  # one instance per d
        assert pickle.loads(pickle.dumps(member)) is member
    assert zonal_domain(7).dim == 7 and ZONAL.of_dim(7) is zonal_domain(7)
    assert domains.ZonalGrid(7, 8).domain.dim == 7
    assert EUCLIDEAN.of_dim(1).dim == 1 and SEQUENCE.of_dim(4).dim == 4
    assert pickle.loads(pickle.dumps(SPHERE)) is SPHERE  # a registered domain stays the registry's


def test_the_unit_spheres_are_one_family():
    assert sphere_of_dim(2) is CIRCLE and CIRCLE.of_dim(2) is CIRCLE and SPHERE.of_dim(2) is CIRCLE
    for d in (3, 4, 8):
        s = sphere_of_dim(d)
        assert s is CIRCLE.of_dim(d) is SPHERE.of_dim(d) is domains.for_manifold("sphere", d).of_dim(d)
        assert s.dim == d and s.name == "sphere" and s.unit_vectors and s.on_sphere
        assert s.of_dim(2) is CIRCLE  # from a member back to the circle
    s2 = SPHERE.of_dim(3)  # where the sphere's densities live: its grids are S²'s
    assert s2.holds(mf.SphereGrid(8)) and not SPHERE.of_dim(4).holds(mf.SphereGrid(8))
    for d in (0, 1):
        with pytest.raises(ValueError, match="d >= 2"):
            sphere_of_dim(d)
    assert not SPHERE.has_dim(1) and SPHERE.has_dim(2) and SPHERE.has_dim(9)
    assert not SEQUENCE.has_dim(2) and not CIRCLE.has_dim(1) and not EUCLIDEAN.has_dim(0)
    with pytest.raises(ValueError, match="integer"):
        SPHERE.of_dim(3.0)


def test_a_member_is_its_family_in_one_dimension(rng):
    """A member moves, measures and retracts points exactly as its family (the same functions), and checks that
    particles are of its dimension; the family reads d from them."""
    x, y = unit(rng, 20, 5), rng.normal(size=(20, 5))
    s5 = SPHERE.of_dim(5)
    np.testing.assert_array_equal(s5.distance(x, x[:7]), SPHERE.distance(x, x[:7]))
    np.testing.assert_array_equal(s5.project(x, y), SPHERE.project(x, y))
    np.testing.assert_array_equal(s5.check_particles(x, "x0"), SPHERE.check_particles(x, "x0"))
    with pytest.raises(ValueError, match="x0.*R\\^5"):
        s5.check_particles(unit(rng, 20, 4), "x0")
    assert SPHERE.check_particles(unit(rng, 20, 4), "x0").shape == (20, 4)
    with pytest.raises(ValueError, match="x0.*R\\^2"):
        CIRCLE.check_particles(unit(rng, 20, 3), "x0")
    with pytest.raises(ValueError, match="x0.*R\\^3"):
        EUCLIDEAN.of_dim(3).check_particles(y, "x0")
    assert EUCLIDEAN.check_particles(y, "x0").shape == (20, 5)
    rows = np.concatenate([rng.uniform(size=(20, 1)), unit(rng, 20, 3)], axis=-1)
    assert SEQUENCE.of_dim(4).check_particles(rows, "x0").shape == (20, 4)
    with pytest.raises(ValueError, match="x0"):
        SEQUENCE.of_dim(5).check_particles(rows, "x0")


GRIDS = {"circle": lambda: mf.CircleGrid(16), "sphere": lambda: mf.SphereGrid(8),
         "euclidean": lambda: mf.EuclideanGrid([(-1, 1), (-2, 2)], (8, 10)), "sequence": lambda: domains.SequenceGrid(16, 5),
         "zonal": lambda: domains.ZonalGrid(5, 8)}


@pytest.mark.parametrize("domain", domains.DOMAINS, ids=lambda d: d.name)
def test_capabilities_the_layers_above_ask(domain):
    """on_sphere (depth's projection, the compiled kernels), moved_by (the study's kind check), holds (the
    frequency and Gaussian solvers' grid check), plane, colorbar_orientation and map_values (the figures)."""
    grid = GRIDS[domain.name]()
    assert domain.holds(grid) and domain.of_dim(grid.dim).holds(grid)
    assert not any(domain.holds(GRIDS[other.name]()) for other in domains.DOMAINS
                   if other.grid_type is not domain.grid_type)
    assert domain.on_sphere == (domain.name != "euclidean")
    assert domain.of_dim(grid.dim).plane == (domain.name == "euclidean" and grid.dim == 2)
    assert domain.colorbar_orientation == ("horizontal" if domain.projection else "vertical")
    for kind in registry.kinds():
        assert domain.moved_by(kind) == (kind.manifold == domain.manifold)
    rho = mf.Density(grid, np.ones(grid.shape), check=False)
    shown = domain.map_values(rho)
    if domain.projection:  # the sphere: the synthesis on its map's longitude–latitude grid
        np.testing.assert_array_equal(shown, sphere_map(rho)[2])
    else:
        np.testing.assert_array_equal(shown, rho.values)
    assert not domain.has_dim(0)


def test_the_layers_above_read_the_models_domain():
    """depth's default projection, the compiled kernels' choice and the Gaussian closure follow the domain the model
    moves (of_model), not its manifold's name."""
    sa, causal, sm = mf.SelfAttention(1.0), mf.SelfAttention(1.0, causal=True), Softmax(np.eye(2))
    assert domains.of_model(sa, 2) is CIRCLE and domains.of_model(sa) is SPHERE
    assert domains.of_model(causal).has_positions and not domains.of_model(sa).has_positions
    assert domains.of_model(sm) is EUCLIDEAN and not EUCLIDEAN.on_sphere
    assert [depth.default_projection(m) for m in (sa, causal, sm)] == ["sphere", "sphere", "none"]
    assert kernels.single_precision_refusal(sa) is None and "double" in kernels.single_precision_refusal(sm)
    with pytest.raises(ValueError, match="R\\^d models"):
        gaussian.solve_gaussian(sa, [1.0, 0.0], np.eye(2), [0.0, 1.0])
    with pytest.raises(ValueError, match="EuclideanGrid in R\\^3"):
        gaussian.gaussian_density(mf.EuclideanGrid([(-1, 1), (-1, 1)], (8, 8)), np.zeros(3), np.eye(3))
