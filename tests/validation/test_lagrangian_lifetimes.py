r"""Lifetimes of the two-cluster state from the Lagrangian density (validation.metastability.lagrangian_merging_flow).

The exact reference: two point masses m₁, m₂ on S¹ at a gap φ₀ under SA merge (centres within arccos(1 − δ)) at
T(β; m₁, m₂, φ₀) = ∫ dφ/|φ̇| (:func:`validation.metastability.two_cluster_merge_time`, adaptive quadrature of the
two-point ODE). Two von Mises bumps of concentration κ are two clusters of width σ = κ^{-1/2}; their centres move as
point masses up to O(σ²) in the field while they collapse (in a time O(1)), then exactly as point masses. So the
merge the Lagrangian density shows lies within the output spacing of T, up to a relative error O(σ²) = 1/κ.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import ive

import meanfield as mf
from particles.metastability import merging_flow
from validation.metastability import lagrangian_merging_flow, lifetime_fit, two_cluster_merge_time, two_cluster_state

KAPPA, M1 = 200.0, 0.6


def bumps(gap, n=128):
    """ρ_0 = M1 vM(0, κ) + (1 − M1) vM(gap, κ) on a CircleGrid(n)."""
    def f(x):
        th = np.arctan2(x[..., 1], x[..., 0])
        vm = lambda c: np.exp(KAPPA * (np.cos(th - c) - 1.0)) / (2 * np.pi * ive(0, KAPPA))  # noqa: E731
        return M1 * vm(0.0) + (1 - M1) * vm(gap)

    return mf.Density.from_function(mf.CircleGrid(n), f)


def merge_of_bumps(beta, gap, spacing=0.02):
    """(the Lagrangian run's merge state, T exact): outputs every 0.25 to t = 4, then geometric by ``spacing``."""
    T = two_cluster_merge_time(beta, M1, 1 - M1, gap)
    t = np.concatenate([np.arange(0, 4, 0.25), np.geomspace(4, 1.5 * T, int(np.log(1.5 * T / 4) / spacing))])
    run = lagrangian_merging_flow(mf.SelfAttention(beta=beta), bumps(gap), t, lagrangian_tol=1e-7)
    st = run.states()
    assert [s.count for s in st.states] == [2, 1]  # two clusters formed at once, then one
    return run, st.states[0], T


def test_two_cluster_state_of_two_weighted_points_is_the_two_point_ode():
    """Two point masses (a merging run, exact but for LSODA's 1e-10): T₂ from t = 0 is the exact merge time to within
    the output spacing at the merge, and the state's prediction is that time itself (round-off of the quadrature)."""
    beta, gap, m = 2.0, 2.9, np.array([0.7, 0.3])
    T = two_cluster_merge_time(beta, *m, gap)
    t = np.concatenate([[0.0], np.geomspace(1.0, 2 * T, 400)])
    run = merging_flow(mf.SelfAttention(beta=beta), np.array([[1.0, 0.0], [np.cos(gap), np.sin(gap)]]), t, m)
    s = two_cluster_state(run, beta)
    assert s.start == 0.0 and s.masses == pytest.approx(tuple(m), abs=1e-15) and s.gap == pytest.approx(gap, abs=1e-12)
    assert s.prediction == pytest.approx(T, rel=1e-8)  # the same quadrature of the same masses and gap
    assert s.T2 - s.resolution < T <= s.T2, (s, T)  # the merge lies in (last output with two, first with one]


@pytest.mark.slow
def test_two_bumps_merge_when_the_two_point_ode_says():
    beta, gap = 1.0, 2.4
    run, two, T = merge_of_bumps(beta, gap)
    # the exact merge lies in (last output with two clusters, first with one], up to O(1/κ) = 0.5 % of T (2x margin)
    assert two.last - 0.01 * T <= T <= two.end + 0.01 * T, (two, T)
    # the prediction from the state's own masses and gap times the same merge from the state's start
    s = two_cluster_state(run, beta)
    assert s.T2 == pytest.approx(two.end - two.start)
    assert abs(s.start + s.prediction - T) <= 0.05 * T  # its masses (ρ >= 10× uniform) miss the bumps' tails: 5 %


def test_lagrangian_run_refuses_bad_input():
    rho = bumps(2.4)
    model = mf.SelfAttention(beta=1.0)
    for kw, word in (({"merge": 0.0}, "merge"), ({"collapsed": 1.5}, "collapsed"), ({"max_merged": 0}, "max_merged")):
        with pytest.raises(ValueError, match=word):
            lagrangian_merging_flow(model, rho, [0.0, 1.0], **kw)
    with pytest.raises(ValueError, match="t_eval"):
        lagrangian_merging_flow(model, rho, [1.0, 0.0])


@pytest.mark.slow
def test_lifetime_slope_of_two_bumps_contains_the_two_point_slope():
    """Over β = 1, 1.5, 2, 2.5 the fit of log(merge time) of the Lagrangian density has an interval holding the
    slope of the exact two-point merge times (a bump's merge errs by the output spacing 2 % and O(1/κ))."""
    betas, gap = np.array([1.0, 1.5, 2.0, 2.5]), 2.4
    measured, exact = [], []
    for b in betas:
        _, two, T = merge_of_bumps(b, gap)
        measured.append(two.end)
        exact.append(T)
    f, g = lifetime_fit(betas, measured), lifetime_fit(betas, exact)
    assert f.interval[0] <= g.c <= f.interval[1], (f, g)
    assert abs(f.c - g.c) <= 2 * 0.03 / (betas[-1] - betas[0]) * 2  # log T errs by <= 3 %: the slope by 2·3 %/Δβ, 2x
