"""Every branch of stationary states (issue 38): k-cluster branches from every unstable degree, exact folds, their
stability against long-time solves (docs/MATH.md §7, §9)."""

import numpy as np
import pytest
from scipy.special import iv

import meanfield as mf
from meanfield.analysis import stationary as st
from meanfield.domains import CIRCLE, SPHERE, zonal_domain
from tests.helpers import EPS


@pytest.mark.parametrize("normalized", [True, False])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_k_cluster_branches_leave_the_uniform_law_at_their_own_noise(normalized, k):
    """On S¹ the branch from mode k leaves the uniform law at D_k = c I_k(β)/(β s) (s = I_0(β) for SA, 1 for USA):
    located from the branch alone (Richardson to r = 0) it equals the closed form to 3e-10 (measured 5e-12 – 1.8e-10),
    and its states keep the k-fold symmetry to round-off: only the Fourier modes that are multiples of k."""
    beta, c = 4.0, 1.3
    model = mf.SelfAttention(beta, V=c * np.eye(2), normalized=normalized)
    closed = c * iv(k, beta) / (beta * (iv(0, beta) if normalized else 1.0))
    assert st.critical_noise(model, CIRCLE, k) == pytest.approx(closed, rel=1e-13)
    # the branch's first states, located by an iteration whose path round-off may change: 1.8e-10 measured
    assert st.bifurcation(model, CIRCLE, k) == pytest.approx(closed, rel=2e-9)
    b = st.branch(model, CIRCLE, np.linspace(0.02, 0.8, 12), degree=k)
    grid = mf.CircleGrid(256)
    for state in b.states:
        coeffs = np.abs(grid.coefficients(state.density(grid).values))
        modes = np.arange(coeffs.size)
        if k > 1:
            assert np.max(coeffs[modes % k != 0]) <= 1e-13 * coeffs[0]
        assert state.order == k and np.isclose(state.r, 2 * np.pi * coeffs[k] / (2 * np.pi * coeffs[0]), rtol=1e-10)


@pytest.mark.parametrize("domain", [SPHERE, zonal_domain(16)], ids=["S2", "S15"])
def test_branches_from_higher_degrees_on_spheres(domain):
    """On S² and S^{d−1} the branch from degree 2 leaves the uniform law at D_2, the zero of σ_2, in a transcritical
    bifurcation (both signs of r_2 = ∫P̃_2 dρ: caps at both poles, or a ring at the equator), located from the
    branches on both sides to 1e-7 (measured 2e-10 on S², 5e-8 on S^15); its states hold even degrees only."""
    model = mf.SelfAttention(4.0)
    D2 = st.critical_noise(model, domain, 2)
    assert st.bifurcation(model, domain, 2) == pytest.approx(D2, rel=1e-7)
    caps = st.branch(model, domain, np.linspace(0.01, 0.3, 8), degree=2)
    ring = st.branch(model, domain, -np.linspace(0.01, 0.05, 5), degree=2)
    assert np.all(caps.r > 0) and np.all(ring.r < 0)
    for state in caps.states + ring.states:
        assert np.all(state.moments[1::2] == 0.0)
    # the two sides are different states: D(r) is not even in r (transcritical), unlike the pitchfork of degree 1
    assert abs(caps.noise[0] - ring.noise[0]) > 1e-3 * D2


@pytest.mark.parametrize("domain", [CIRCLE, SPHERE], ids=["S1", "S2"])
def test_folds_located_exactly(domain):
    """USA β = 4 > β_*: the single-cluster branch folds; the fold is where dD/dr = 0 (the implicit derivative there
    below 1e-12 of D/r), D_f is the largest D of a fine continuation around it (401 states within 2e-3 in r) to
    1e-12, and the coarse branch's largest D lies below it."""
    model = mf.SelfAttention(4.0, normalized=False)
    b = st.branch(model, domain, np.linspace(0.01, 0.9, 60))
    assert b.folds.shape == (1, 2)
    rf, Df = b.folds[0]
    kernel = st._Kernel(model, domain)
    g, D, _, _ = st._newton(kernel, b.states[b.fold_indices[0]].moments, Df, rf)
    assert abs(st._slope(kernel, g, D, rf)) <= 1e-12 * Df / rf and abs(D - Df) <= 1e-14 * Df
    fine = st.branch(model, domain, np.linspace(rf - 2e-3, rf + 2e-3, 401) + 1e-5)  # not through r_f itself
    # D_f is the largest D: no state of the fine branch exceeds it but by the round-off of D(r) itself, a few ulps of
    # D_f (−0.8 ulp measured on an AVX2 CPU and on NumPy 1.26; the lower limit was 0)
    assert -64 * EPS * Df <= Df - fine.noise.max() <= 1e-12 * Df + 2e-10 * (1e-5 + 1e-5) ** 2 * Df / rf ** 2 * 1e6
    assert Df - fine.noise.max() <= 1e-9 * Df and b.noise.max() <= Df


def test_k_cluster_states_are_unstable_and_long_time_solves_leave_them():
    """SA β = 2 on S¹ at D = 0.8 D_2: the single cluster is stable (growth −0.93), the two-cluster state unstable
    (growth 0.18 in the odd block: one cluster drifting towards the other; 0.06 in the even block: mass passing from
    one to the other). A long-time solve (t = 80) from each, perturbed by 1e-4 (cos θ + sin θ), settles back on the
    single cluster, and leaves the two-cluster state for the single cluster."""
    model0 = mf.SelfAttention(2.0)
    D = 0.8 * st.critical_noise(model0, CIRCLE, 2)
    model = mf.SelfAttention(2.0, noise=D)
    one = st.stationary_states(st.branch(model0, CIRCLE, np.linspace(0.01, 0.95, 60)), D)[0]
    two = st.stationary_states(st.branch(model0, CIRCLE, np.linspace(0.01, 0.95, 60), degree=2), D)[0]
    grid = mf.CircleGrid(64)
    s1, s2 = st.stability(model, one, grid), st.stability(model, two, grid)
    assert s1.stable and not s2.stable and s2.growth == pytest.approx(np.max(s2.blocks["odd"].real), rel=1e-12)
    assert s2.growth > 0.1 and 0.01 < np.max(s2.blocks["even"].real) < s2.growth
    bump = 1e-4 * (grid.points[..., 0] + grid.points[..., 1])
    for state, stays in ((one, True), (two, False)):
        rho = state.density(grid).values
        start = mf.Density(grid, rho * (1 + bump)).unit_mass()
        end = mf.solve(model, start, (0, 80), method="rk45").densities[-1]
        r1 = abs(grid.integrate(end.values * np.exp(1j * grid.angles)))
        assert (abs(r1 - one.r) < 1e-6) if stays else (abs(r1 - one.r) < 1e-3 and abs(two.r) > 0.1)


def test_a_branch_from_a_stable_degree_is_refused_with_its_rate():
    """V = −I: every degree decays (σ_l < 0 at D = 0, I_l(β) > 0), so no branch leaves the uniform law; the refusal
    names the degree and its rate σ_l = −l² I_l(β)/β (USA on S¹)."""
    model = mf.SelfAttention(2.0, V=-np.eye(2), normalized=False)
    with pytest.raises(ValueError, match=rf"degree 3 is stable .* σ_3 = {-9 * iv(3, 2.0) / 2.0:.6g}"):
        st.branch(model, "circle", np.linspace(0.01, 0.5, 5), degree=3)
