"""Transition diagrams and hysteresis loops (meanfield.solvers.transitions; docs/MATH.md §8).

The diagram's D_c(β) is checked against the closed form of the first degree's critical noise (σ_1 = 0), its folds
against the fold condition dD/dr = 0 on a fine continuation, its β_* against the Bessel-ratio root; the hysteresis
loop by time solves against the stationary solver: its jumps bracket D_f and D_c within the sweep's step, and the
states it settles in on the way up are the stable branch's.
"""

import numpy as np
import pytest
from scipy.special import iv

from meanfield.analysis import stationary as st
from meanfield.domains.circle import CircleGrid
from meanfield.domains.zonal_sphere import ZonalGrid
from meanfield.models import SelfAttention
from meanfield.integrate.monitor import ResolutionMonitor
from meanfield.solvers.transitions import hysteresis, order_parameter, transition_diagram


def _closed_form_critical(beta, d, c=1.0):
    """USA: D_c = c λ_1 ρ_0 / β with λ_1 = (2π)^{d/2} I_{d/2}(β)/β^{d/2-1} and ρ_0 = 1/|S^{d-1}|."""
    from scipy.special import gamma

    area = 2 * np.pi ** (d / 2) / gamma(d / 2)
    lam = (2 * np.pi) ** (d / 2) * iv(d / 2, beta) / beta ** (d / 2 - 1)
    return c * lam / area / beta


@pytest.mark.parametrize("domain, d", [("circle", 2), ("sphere", 3)])
def test_diagram_critical_noise_is_the_closed_form_and_folds_appear_past_beta_star(domain, d):
    betas = np.array([0.8, 1.5, 2.2, 3.0, 4.0])
    diagram = transition_diagram(domain, betas, c=1.5)
    np.testing.assert_allclose(diagram.critical, _closed_form_critical(betas, d, c=1.5), rtol=1e-12)
    beta_star = st.critical_beta(d)
    assert diagram.beta_star == pytest.approx(beta_star, rel=1e-12)
    past = betas > beta_star
    assert np.all(np.isnan(diagram.fold[~past])), diagram.fold   # continuous: no fold below β_*
    assert np.all(diagram.fold[past] > diagram.critical[past])   # discontinuous: a fold above D_c
    # The fold is the largest D of the branch: a fine continuation never exceeds it, and comes within its own
    # grid's error (Δr)² of it.
    beta = betas[-1]
    model = SelfAttention(beta, V=1.5 * np.eye(d), normalized=False)
    fine = st.branch(model, domain, np.linspace(0.005, 0.95, 400))
    top = float(np.max(fine.noise))
    assert top <= diagram.fold[-1] * (1 + 1e-12)
    assert diagram.fold[-1] - top < 1e-5 * diagram.fold[-1]


def test_sa_diagram_has_no_fold():
    diagram = transition_diagram("circle", [1.0, 3.0, 6.0], normalized=True)
    assert diagram.beta_star is None
    assert np.all(np.isnan(diagram.fold))


def test_diagram_figure(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    diagram = transition_diagram("sphere", np.linspace(1.0, 3.0, 5))
    ax = diagram.plot()
    ax.figure.savefig(tmp_path / "diagram.png")
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("D_c" in s for s in labels) and any("D_f" in s for s in labels) and any("beta_*" in s for s in labels)


def _loop(grid, domain, d, beta, step, t_settle, cfl):
    model = SelfAttention(beta, V=np.eye(d), normalized=False)
    b = st.branch(model, domain, np.linspace(0.01, 0.95, 60))
    Dc, Df = b.critical, b.folds[0, 1]
    noises = np.arange(Dc - 1.5 * step, Df + 1.5 * step, step)  # D_c midway between two noises
    start = st.stationary_state(model, domain, noise=noises[0], r_guess=0.9).density(grid)
    loop = hysteresis(model, start, noises, t_settle, method="rk4", cfl=cfl,
                      monitor=ResolutionMonitor(tail_tol=1e-8))
    # The jumps bracket the fold and the critical noise within the sweep's step.
    assert loop.jump_up - step < Df <= loop.jump_up
    assert loop.jump_down <= Dc < loop.jump_down + step
    assert Df - Dc <= loop.width < Df - Dc + 2 * step
    # On the way up the loop settles on the stable cluster branch (the stationary solver's state at each D).
    for D, r in zip(loop.up, loop.r_up):
        if D < Df:
            expected = st.stationary_state(model, domain, noise=D, r_guess=0.9).r
            assert r == pytest.approx(expected, abs=2e-4), D
    # On the way down, above D_c, the uniform law: the seed decayed.
    assert np.all(loop.r_down[loop.down > Dc] < loop.threshold / 10)
    return loop


@pytest.mark.slow
def test_hysteresis_loop_on_s2():
    """S² (the zonal grid at d = 3: S²'s axisymmetric densities, equal to the S² solver's to 3e-12), USA β = 3:
    the loop spans D_f − D_c = 0.080 within the step 0.02 (18 s; tests/meanfield/test_noise.py's hysteresis by hand
    runs by default)."""
    _loop(ZonalGrid(3, 48), ZonalGrid(3, 48).domain, 3, 3.0, 0.02, 150.0, 1.0)


@pytest.mark.slow
def test_hysteresis_loop_on_the_circle():
    """S¹, USA β = 4: the loop spans D_f − D_c = 0.144 within the step 0.04 (35 s: the USA step bound e^β)."""
    _loop(CircleGrid(64), "circle", 2, 4.0, 0.04, 150.0, 3.0)


def test_hysteresis_refuses_bad_input():
    grid = CircleGrid(32)
    model = SelfAttention(2.0, V=np.eye(2), normalized=False)
    clustered = st.stationary_state(model, "circle", noise=0.5, r_guess=0.9).density(grid)
    uniform = clustered.__class__(grid, np.ones(grid.shape)).unit_mass()
    assert order_parameter(uniform) < 1e-14
    with pytest.raises(ValueError, match="noises"):
        hysteresis(model, clustered, [0.6, 0.5], 10.0)
    with pytest.raises(ValueError, match="clustered"):
        hysteresis(model, uniform, [0.5, 0.6], 10.0)
    with pytest.raises(ValueError, match="seed"):
        hysteresis(model, clustered, [0.5, 0.6], 10.0, seed=0.1, threshold=0.05)
    with pytest.raises(ValueError, match="t_settle"):
        hysteresis(model, clustered, [0.5, 0.6], -1.0)


def test_diagram_in_high_dimension():
    """S^127, USA around β_* = 1.0157: no fold below, a fold above; the fold is the branch's largest D (at
    β = 1.3692… its location once met the moments' round-off floor at d = 128, where Newton's steps stop at 1e-13)."""
    from meanfield.domains import zonal_domain

    domain = zonal_domain(128)
    betas = np.array([0.9, 1.2, 1.369230769230769])
    diagram = transition_diagram(domain, betas)
    np.testing.assert_allclose(diagram.critical, _closed_form_critical(betas, 128), rtol=1e-12)
    assert np.isnan(diagram.fold[0]) and np.all(diagram.fold[1:] > diagram.critical[1:])
    model = SelfAttention(float(betas[-1]), V=np.eye(128), normalized=False)
    b = st.branch(model, domain, np.linspace(0.95 / 60, 0.95, 60))
    assert np.max(b.noise) <= diagram.fold[-1] * (1 + 1e-12)


def test_diagram_refuses_bad_input():
    with pytest.raises(ValueError, match="betas"):
        transition_diagram("circle", [2.0, 1.0])
    with pytest.raises(ValueError, match="r_max"):
        transition_diagram("circle", [1.0], r_max=1.0)
    with pytest.raises(ValueError, match="points"):
        transition_diagram("circle", [1.0], points=2)
    with pytest.raises(ValueError, match="zonal functions"):
        transition_diagram("euclidean", [1.0])
