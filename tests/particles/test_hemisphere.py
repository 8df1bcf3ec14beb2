"""Open hemispheres (GLPR §6.1): Wendel's probability (Theorem 6.7) against the LP statistic
``particles.clusters.in_hemisphere``, and the cone collapse of Theorem 6.3 / Lemma 6.4."""

import math

import numpy as np
import pytest

import meanfield as mf
import particles as pt
from meanfield.analysis.exact import wendel
from particles import clusters


def _pairs(x):
    """The inner products ⟨x_i, x_j⟩, i < j, of each system: shape (..., n(n−1)/2)."""
    n = x.shape[-2]
    iu = np.triu_indices(n, 1)
    return (x @ np.swapaxes(x, -1, -2))[..., iu[0], iu[1]]


# ------------------------------------------------------------------ Wendel (GLPR Theorem 6.7) and the LP statistic
def test_wendel_values():
    """2^{−(n−1)} Σ_{k<d} C(n−1, k): 1 for n <= d, 11/16 for (5, 3), ½ for n = 2d (symmetry of Bin(2d − 1, ½)),
    2^{−(n−1)} on S⁰ (the n signs all equal), 1 − 2^{−(n−1)} for d = n − 1 (only C(n−1, n−1) = 1 is missing),
    the exact rational sum, and scipy's binomial distribution function past the exact range."""
    from fractions import Fraction

    from scipy.stats import binom

    assert wendel(5, 3) == 0.6875 and wendel(32, 16) == 0.5 and wendel(3, 3) == 1.0 and wendel(2, 7) == 1.0
    assert wendel(10, 1) == 2.0**-9 and wendel(1, 1) == 1.0
    assert wendel(40, 39) == float(1 - Fraction(1, 2**39))
    assert wendel(64, 16) == pytest.approx(binom.cdf(15, 63, 0.5), rel=1e-13)
    assert wendel(200, 100) == float(Fraction(sum(math.comb(199, k) for k in range(100)), 2**199))
    assert wendel(10**6, 5 * 10**5) == pytest.approx(0.5, abs=1e-14)  # n − 1 odd: exactly ½
    assert wendel(200_001, 99_000) == pytest.approx(binom.cdf(98_999, 200_000, 0.5), rel=1e-12)
    for bad in (0, -1, 2.5, True, "3"):
        with pytest.raises(ValueError, match="`n` must be an integer >= 1"):
            wendel(bad, 3)
    with pytest.raises(ValueError, match="`d` must be an integer >= 1, got 0"):
        wendel(4, 0)


def test_in_hemisphere_on_configurations_with_known_answers():
    e = np.eye(3)
    assert clusters.in_hemisphere(e).item()  # the positive octant's corners
    assert not clusters.in_hemisphere(np.stack([e[0], -e[0]])).item()  # antipodal: 0 on the segment
    assert not clusters.in_hemisphere(np.concatenate([e, -e])).item()  # the octahedron
    # three points on a great circle around 0: no strict hemisphere, although e3 has ⟨e3, x_i⟩ = 0 for all
    tri = np.array([[1.0, 0, 0], [-0.5, np.sqrt(3) / 2, 0], [-0.5, -np.sqrt(3) / 2, 0]])
    assert not clusters.in_hemisphere(tri).item()
    assert clusters.in_hemisphere(tri + [0, 0, 1e-3]).item()  # lifted off it: in {x_3 > 0}
    # shapes: any leading axes ({e1, e2, −e1} holds an antipodal pair); a single point is always in one
    got = clusters.in_hemisphere(np.stack([np.stack([e, e]), np.stack([np.concatenate([e[:2], -e[:1]]), e])]))
    assert got.shape == (2, 2) and got.tolist() == [[True, True], [False, True]]
    assert clusters.in_hemisphere(e[:1]).item()
    with pytest.raises(ValueError, match="non-finite"):
        clusters.in_hemisphere(np.full((3, 3), np.nan))
    with pytest.raises(ValueError, match="zero vector"):
        clusters.in_hemisphere(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="shape"):
        clusters.in_hemisphere(np.ones(3))


@pytest.mark.parametrize("n, d", [(5, 3), (32, 16), (64, 16)])
def test_in_hemisphere_frequency_is_wendels_probability(n, d):
    """The fraction of R = 1000 uniform systems in an open hemisphere is within three standard errors
    √(p(1 − p)/R) of Wendel's p (0.6875, 0.5, 1.9e-5: 3 SE = 0.044, 0.047, 4.1e-4; measured 0.679, 0.479, 0).
    About 1.5 ms per system (one LP, unless the points' mean already certifies the hemisphere)."""
    R = 1000
    x = pt.uniform_sphere(n, d, rng=np.random.default_rng([n, d]), batch=R)
    p = wendel(n, d)
    frac = clusters.in_hemisphere(x).mean()
    assert abs(frac - p) <= 3 * np.sqrt(p * (1 - p) / R), (frac, p)


# ------------------------------------------------------------------ GLPR Theorem 6.3 / Lemma 6.4: cone collapse
@pytest.mark.parametrize("d", [3, 16])
@pytest.mark.parametrize("beta", [1.0, 4.0])
def test_tokens_in_an_open_hemisphere_collapse_to_one_point(d, beta):
    """n = 32 tokens uniform on the half-sphere {x_1 > 0} (SA, Q = K = V = I), 8 systems: the hemisphere holds at
    every output time and min_i ⟨e_1, x_i(t)⟩ never decreases (Lemma 6.4, step 1: at the minimising i,
    d/dt⟨e_1, x_i⟩ = Σ_j a_ij(⟨e_1, x_j⟩ − ⟨x_i, x_j⟩⟨e_1, x_i⟩) >= 0), and by t = 30 every pair has
    1 − ⟨x_i, x_j⟩ <= 1e-12 (measured at t = 25: at most 9e-16 for β = 1 and 4 in d = 3 and 16; the decay is
    exponential: 9e-8 at t = 10 for β = 1, 4e-7 at t = 15 for β = 4, in d = 3). At β = 9 the same starts are
    still in several clusters at t = 60 (the rate of Theorem 6.3 is exponentially small in β), so the larger β
    tested is 4."""
    rng = np.random.default_rng([d, int(beta)])
    x0 = pt.uniform_sphere(32, d, rng=rng, batch=8)
    x0 = np.where(x0[..., :1] < 0, -x0, x0)
    assert clusters.in_hemisphere(x0).all()
    traj = pt.simulate(mf.SelfAttention(beta), x0, np.linspace(0, 30, 13), dt=0.1 / (1 + beta))
    assert clusters.in_hemisphere(traj.x).all()
    lowest = traj.x[..., 0].min(axis=-1)  # (T, batch)
    assert np.all(np.diff(lowest, axis=0) >= -1e-12)
    assert np.max(1 - _pairs(traj.x[-1])) <= 1e-12
