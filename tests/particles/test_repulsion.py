"""Repulsive attention, β < 0 (MATH.md §13): closed forms, the synchronisation theorem's case, where it is refused."""

import numpy as np
import pytest

import meanfield as mf
import particles
from meanfield.analysis import exact
from meanfield.models import SelfAttention
from tests.helpers import EPS
from validation.synchronisation import classify, clopper_pearson, synchronisation


@pytest.mark.parametrize("beta", [-0.9, -3.0])
@pytest.mark.parametrize("normalized", [True, False])
def test_two_tokens_closed_form(beta, normalized):
    """Two tokens on S¹ at the angle φ_0 = 2.5: cos φ(t) against the closed form (ρ = cos φ, the equiangular ODE at
    n = 2 integrated with Ei, MATH.md §13) to 1e-10. Error model: DOP853 at rtol 1e-13, atol 1e-15 over t = 4 keeps
    the global error near 1e-13 (O(100) steps of local error 1e-15); the closed form is inverted to 1e-14."""
    phi0 = 2.5
    x = np.array([[1.0, 0.0], [np.cos(phi0), np.sin(phi0)]])
    t = np.array([0.0, 0.5, 1.5, 4.0])
    tr = particles.simulate(SelfAttention(beta, normalized=normalized), x, t, method="dop853", rtol=1e-13, atol=1e-15,
                            strategy="quadrature")
    rho = np.sum(tr.x[:, 0] * tr.x[:, 1], axis=-1)
    assert np.max(np.abs(rho - exact.equiangular_closed_form(t, 2, beta, np.cos(phi0), normalized))) < 1e-10


@pytest.mark.parametrize("beta", [-0.5, -2.0])
def test_equiangular_closed_form(beta):
    """n = 4 orthogonal tokens in d = 4 stay equiangular (GLPR Thm 6.8, any real β): every inner product against the
    closed form to 1e-10 (particles by DOP853 at rtol 1e-13, as above), and the ODE solution of exact.equiangular
    (DOP853, rtol 1e-13) against it to 1e-10."""
    n, t = 4, np.array([0.0, 0.7, 2.0, 5.0])
    tr = particles.simulate(SelfAttention(beta), np.eye(n), t, method="dop853", rtol=1e-13, atol=1e-15,
                            strategy="quadrature")
    closed = exact.equiangular_closed_form(t, n, beta)
    G = np.einsum("tid,tjd->tij", tr.x, tr.x)
    off = G[:, ~np.eye(n, dtype=bool)]
    assert np.max(np.abs(off - closed[:, None])) < 1e-10
    assert np.max(np.abs(exact.equiangular(t, n, beta) - closed)) < 1e-10


def test_closed_form_time_by_hand():
    """At β = 0 (SA = USA = Kuramoto) t(ρ) = ½ log((1 + (n − 1)ρ)/(1 − ρ)) from ρ_0 = 0."""
    rho = np.array([0.1, 0.5, 0.9])
    for normalized in (True, False):
        assert np.allclose(exact.equiangular_time(rho, 5, 0.0, normalized=normalized),
                           0.5 * np.log((1 + 4 * rho) / (1 - rho)), atol=10 * EPS, rtol=0)


def test_every_seed_synchronises_at_beta_minus_0_1():
    """β = −0.1 >= −0.16: every start synchronises (Polyanskiy, Rigollet & Yao, arXiv 2507.22857); 12 seeds each of
    n = 5 and 10."""
    for n in (5, 10):
        r = synchronisation(n, -0.1, 12, t_end=50.0, rng=n)
        assert r.synchronised == 12 and r.held == 0 and r.undecided == 0


def test_triangle_is_held_below_minus_two_thirds():
    """n = 3, β = −0.9 < −2/3: the equilateral triangle is a stable equilibrium (the non-rotational eigenvalue of the
    Jacobian there is < 0): a perturbed triangle returns to it and never synchronises; at β = −0.5 it synchronises."""
    th = 2 * np.pi * np.arange(3) / 3 + np.array([0.0, 0.05, -0.03])
    x = np.stack([np.cos(th), np.sin(th)], axis=-1)[None]
    held = particles.simulate(SelfAttention(-0.9), x, [0.0, 200.0]).x[-1]
    assert classify(SelfAttention(-0.9), held, 1e-8, 1e-9)[0] == 1
    G = held[0] @ held[0].T
    assert np.max(np.abs(G[~np.eye(3, dtype=bool)] + 0.5)) < 1e-8
    synced = particles.simulate(SelfAttention(-0.5), x, [0.0, 200.0]).x[-1]
    assert classify(SelfAttention(-0.5), synced, 1e-8, 1e-9)[0] == 0


def test_clopper_pearson():
    """The exact interval's ends solve P(Bin(n, lo) >= k) = P(Bin(n, hi) <= k) = 2.5 %; at k = n the lower end is
    0.025^(1/n) (P(Bin(n, p) >= n) = p^n)."""
    from scipy import stats

    lo, hi = clopper_pearson(7, 20)
    assert stats.binom.sf(6, 20, lo) == pytest.approx(0.025, rel=1e-8)
    assert stats.binom.cdf(7, 20, hi) == pytest.approx(0.025, rel=1e-8)
    assert clopper_pearson(20, 20) == (pytest.approx(0.025 ** (1 / 20), rel=1e-12), 1.0)


# ------------------------------------------------------------------ where β < 0 is taken, and where refused
def test_circle_density_takes_repulsion():
    """The circle's grid at β = −0.9: its spectral sums (multipliers e^{-β}I_k(β) = e^{2|β|}ive) against its
    quadrature sums of the model's field to 1e-12, SA and USA, and E_β non-decreasing (GLPR Lemma 3.7 holds for any
    β ≠ 0: X = ∇δE/δμ for USA, and SA's dE/dt = ∫|∇K_β*μ|²/(β²K_β*μ) dμ >= 0)."""
    g = mf.CircleGrid(64)
    d = mf.Density.from_function(g, lambda x: (1 + 0.5 * x[..., 0] + 0.3 * x[..., 1] ** 2) / (2 * np.pi))
    for normalized in (True, False):
        m = SelfAttention(-0.9, normalized=normalized)
        a, b = (mf.solve(m, d, (0.0, 1.0), t_eval=[0.0, 0.5, 1.0], strategy=s, dt=0.02) for s in ("spectral",
                                                                                                  "quadrature"))
        assert np.max(np.abs(a.densities[-1].values - b.densities[-1].values)) < 1e-12
        assert np.all(np.diff(a.energy) > 0)


def test_particle_strategies_agree_with_repulsion():
    """β = −0.9 on S¹ and S²: the compiled pairwise sums, the fused RK4 and (on S¹) the spectral sums give the
    reference quadrature's velocities and runs to round-off (1e-13)."""
    rng = np.random.default_rng(0)
    for d, fast in ((2, ("pairwise", "spectral")), (3, ("pairwise",))):
        x = rng.normal(size=(9, d))
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        m = SelfAttention(-0.9)
        ref = particles.velocity(m, x, strategy="quadrature")
        for s in fast:
            assert np.max(np.abs(particles.velocity(m, x, strategy=s) - ref)) < 1e-13
        a = particles.simulate(m, x[None], [0.0, 1.0], dt=0.05, strategy="quadrature").x[-1]
        b = particles.simulate(m, x[None], [0.0, 1.0], dt=0.05, strategy="fused").x[-1]
        assert np.max(np.abs(a - b)) < 1e-13


def test_repulsion_refused_with_the_reason():
    x = np.eye(3)
    with pytest.raises(ValueError, match="repulsive attention .* signs alternate"):
        particles.velocity(SelfAttention(-0.5), x, strategy="spectral")  # S² point sums: i_l(β) alternate
    with pytest.raises(ValueError, match="repulsive attention .* circle only"):
        mf.solve(SelfAttention(-0.5), mf.Density.uniform(mf.SphereGrid(8)), (0.0, 0.1))
    with pytest.raises(ValueError, match="repulsive attention"):
        mf.solve(SelfAttention(-0.5), mf.Density.uniform(mf.CircleGrid(32)), (0.0, 0.1), representation="nodes")
    from meanfield.models import Softmax

    with pytest.raises(ValueError, match="β only scales A"):
        Softmax(beta=-1.0)
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError, match="`beta` must be finite"):
            SelfAttention(bad)
