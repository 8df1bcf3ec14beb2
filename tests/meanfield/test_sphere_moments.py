"""The S² moment path (any Q, K, V, several heads) against the quadrature sums, Funk–Hecke, and its two bounds."""

import numpy as np
import pytest

import meanfield as mf
from tests.helpers import rhs
from meanfield.domains import SPHERE
from meanfield.domains.sphere.continuity import SphereQuadrature
from meanfield.domains.sphere.ducc import ring_plan
from meanfield.domains.sphere.moments import TRUNCATION, SphereMoments, moment_degree, moment_matrix, truncation_tail
from meanfield.domains.sphere.transforms import nodes


def random_heads(seed, scale=1.0, usa=True):
    rng = np.random.default_rng(seed)
    heads = [mf.SelfAttention(1.5, *(scale * rng.standard_normal((3, 3)) / np.sqrt(3) for _ in range(3)))]
    if usa:
        heads.append(mf.SelfAttention(0.7, *(rng.standard_normal((3, 3)) / np.sqrt(3) for _ in range(3)),
                                      normalized=False))
    return mf.MultiHeadAttention(heads)


def smooth(L):
    return mf.Density.from_function(mf.SphereGrid(L), lambda x: np.exp(x[..., 2] + 0.5 * x[..., 0] * x[..., 1]
                                                                       - 0.4 * x[..., 1])).values


def relative(a, b):
    return np.max(np.abs(a - b)) / np.max(np.abs(b))


@pytest.mark.parametrize("L", [16, 48])
@pytest.mark.parametrize("seed", [0, 1])
def test_moment_path_equals_the_quadrature_path(L, seed):
    """Field and tendency of SA + USA heads with random Q, K, V: the moment path against the models' own sums."""
    model, g = random_heads(seed), mf.SphereGrid(L)
    y = smooth(L)
    fast = rhs(SPHERE, model, g)
    assert fast.strategy == "moments"
    ref = SphereQuadrature(g, model.field)
    # the moments truncated below round-off (fast.tol) against the quadrature's sums over ~2L² nodes: round-off of
    # the kernel's sums, 2.6e-13 relative measured (AVX2)
    assert relative(fast._field(y), ref._field(y)) <= 5e-12
    assert relative(fast.rate(y), ref.rate(y)) <= 5e-12
    assert fast.fallbacks == 0 and fast.roundoff <= fast.tol
    assert fast.speeds(y)[0] == pytest.approx(ref.speeds(y)[0], rel=1e-12)


@pytest.mark.parametrize("beta, V", [(3.0, None), (0.5, -np.eye(3))])
def test_moment_path_on_a_zonal_model_equals_funk_hecke(beta, V):
    """Q = K = I: the moment matrix must reproduce the spectral path's Funk–Hecke multipliers."""
    g, y = mf.SphereGrid(24), smooth(24)
    model = mf.SelfAttention(beta, V=V)
    a = rhs(SPHERE, model, g, "moments").rate(y)
    b = rhs(SPHERE, model, g, "spectral").rate(y)
    assert relative(a, b) <= 1e-12


@pytest.mark.parametrize("s", [1.0, 3.0, 6.0])
def test_truncation_bound_holds_and_the_degree_is_the_smallest(s):
    """Z truncated at degree D errs by at most (L + 2) e^s T_D(s) relative to Z, and moment_degree is minimal."""
    L = 24
    D = moment_degree(s, L)
    assert (L + 2) * np.exp(s) * truncation_tail(s, D) <= TRUNCATION < (L + 2) * np.exp(s) * truncation_tail(s, D - 1)
    rng = np.random.default_rng(7)
    A = rng.standard_normal((3, 3))
    A *= s / np.linalg.norm(A, 2)
    g, y = mf.SphereGrid(L), smooth(L)
    x = nodes(36)[2]
    Z = (np.exp(x.reshape(-1, 3) @ A.T @ g.points.reshape(-1, 3).T) @ (y * g.weights).ravel()).reshape(x.shape[:2])
    for Dt in (3, 5, 8):
        K = moment_matrix(A.tobytes(), Dt, Dt)
        Zt = ring_plan(Dt, 36).synthesis((K @ ring_plan(Dt, L).analysis(y).view(float)).view(complex))
        err = np.max(np.abs(Zt - Z) / Z)
        bound = (L + 2) * np.exp(s) * truncation_tail(s, Dt)
        assert err <= bound
        assert err >= 1e-6 * bound  # the bound is not vacuous


def test_roundoff_estimate_bounds_the_error_and_falls_back_past_tol():
    """A collapsed density and ‖βKᵀQ‖ = 6: κ = max Z/min Z is large; the a-posteriori estimate bounds the
    field's error, and past ``tol`` the evaluation is the quadrature sums'."""
    rng = np.random.default_rng(3)
    A = rng.standard_normal((3, 3))
    model = mf.SelfAttention(1.0, Q=6.0 * A / np.linalg.norm(A, 2), V=rng.standard_normal((3, 3)))
    g = mf.SphereGrid(48)
    c = np.array([0.6, 0.0, 0.8])
    y = mf.Density.from_function(g, lambda x: np.exp(30.0 * (x @ c - 1.0))).values
    ref = SphereQuadrature(g, model.field)._field(y)
    loose = SphereMoments(g, model, model.field, tol=np.inf)
    err = relative(loose._field(y), ref)
    assert loose.fallbacks == 0 and 1e-14 < err <= loose.roundoff
    strict = SphereMoments(g, model, model.field, tol=0.1 * loose.roundoff)
    assert np.array_equal(strict._field(y), ref) and strict.fallbacks == 1
    # the right-hand side on the coefficients falls back too (the sums over the values the coefficients give),
    # equal to the quadrature path's up to the two divergence formulas' round-off
    tendency = strict.rate(y)
    assert strict.fallbacks == 2
    assert relative(tendency, SphereQuadrature(g, model.field).rate(y)) <= 1e-12


def test_moment_path_refuses_what_it_cannot_do():
    g = mf.SphereGrid(16)
    hot = mf.SelfAttention(60.0, Q=np.diag([1.0, 0.5, 0.2]))  # its kernel needs degree > the dealiased grid's
    assert rhs(SPHERE, hot, g).strategy == "quadrature"
    with pytest.raises(ValueError, match="needs a degree above"):
        rhs(SPHERE, hot, g, "moments")
    assert rhs(SPHERE, mf.SelfAttention(2.0), g).strategy == "spectral"  # zonal: Funk–Hecke stays the default


def test_solve_with_two_heads_moments_against_quadrature():
    """A whole solve, refining once (lmax 24 → 48): the moment and quadrature paths give the same density."""
    model = random_heads(4)
    mu0 = mf.Density(mf.SphereGrid(24), smooth(24))
    kw = dict(t_eval=[0, 0.3], dt=0.02)
    a = mf.solve(model, mu0, (0, 0.3), **kw)
    b = mf.solve(model, mu0, (0, 0.3), strategy="quadrature", **kw)
    assert a.strategy == "moments" and b.strategy == "quadrature" and a.densities[-1].grid.lmax == 48
    assert relative(a.densities[-1].values, b.densities[-1].values) <= 1e-11
