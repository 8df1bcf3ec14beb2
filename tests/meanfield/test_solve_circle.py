"""The circle solver against mathematics: exact solutions, conservation, monotonicity, orders."""

import numpy as np
import pytest

import meanfield as mf
from meanfield.analysis import exact
from meanfield.domains import CIRCLE
from tests.helpers import cauchy_density, l1_error, smooth_density, rhs
from validation import observed_order

A0 = 0.3  # |z_0| = 0.3


# ------------------------------------------------------------------ exact solution at β = 0
@pytest.mark.parametrize("normalized", [True, False])
def test_ott_antonsen_t3(normalized):
    sol = mf.solve(mf.SelfAttention(0.0, normalized=normalized), cauchy_density(256, A0), (0, 3), t_eval=[0, 1.5, 3])
    for t, d in zip(sol.t, sol.densities):
        a = exact.ott_antonsen(t, A0)
        assert l1_error(d, exact.wrapped_cauchy(d.grid.angles, a)) <= 1e-8
        m = d.mean()
        assert abs(m[0] + 1j * m[1] - a) <= 1e-10
    assert sol.refinements == ()


@pytest.mark.parametrize("normalized", [True, False])
def test_ott_antonsen_t5_with_refinement(normalized):
    """At t = 5 the peak is ~0.03 rad wide; the solver refines from n = 64."""
    a5 = exact.ott_antonsen(5.0, A0)
    width = 2 * (1 - abs(a5)) / (1 + abs(a5))  # full width at half maximum of f_a, ≈ 0.033
    assert width < 0.035
    sol = mf.solve(mf.SelfAttention(0.0, normalized=normalized), cauchy_density(64, A0), (0, 5), refine=True)
    d = sol.densities[-1]
    assert d.grid.n > 64 and len(sol.refinements) >= 3
    assert l1_error(d, exact.wrapped_cauchy(d.grid.angles, a5)) <= 1e-8
    assert abs(sol.mass[-1] - 1) <= 1e-12


def test_ott_antonsen_complex_parameter_keeps_its_argument():
    a0 = 0.25 * np.exp(1.1j)
    sol = mf.solve(mf.SelfAttention(0.0), cauchy_density(128, a0), (0, 2), method="rk45")
    m = sol.densities[-1].mean()
    assert abs(m[0] + 1j * m[1] - exact.ott_antonsen(2.0, a0)) <= 1e-10


def test_ott_antonsen_formula_solves_its_ode():
    """ȧ = ½ a(1 − |a|²), checked independently by a high-order integrator."""
    from scipy.integrate import solve_ivp

    a0 = 0.3 + 0.2j
    f = lambda t, y: (lambda a: [(0.5 * a * (1 - abs(a) ** 2)).real, (0.5 * a * (1 - abs(a) ** 2)).imag])(y[0] + 1j * y[1])
    ts = np.linspace(0, 6, 7)
    r = solve_ivp(f, (0, 6), [a0.real, a0.imag], t_eval=ts, rtol=1e-13, atol=1e-15, method="DOP853")
    np.testing.assert_allclose(r.y[0] + 1j * r.y[1], exact.ott_antonsen(ts, a0), atol=1e-11)


# ------------------------------------------------------------------ spectral convergence
@pytest.mark.parametrize("beta", [1.0, 4.0, 8.0])
def test_spectral_convergence_in_n(beta):
    """Max error against a fine grid falls exponentially in n until round-off."""
    model = mf.SelfAttention(beta)
    kw = dict(method="dop853", rtol=1e-13, atol=1e-15)
    ref = mf.solve(model, smooth_density(256), (0, 1), **kw).densities[-1]
    # coarse grids are under-resolved on purpose: switch the monitor off
    loose = mf.ResolutionMonitor(tail_tol=1.0, neg_tol=1.0, energy_rtol=1.0)
    ns = [16, 24, 32, 48, 64]
    errs = []
    for n in ns:
        d = mf.solve(model, smooth_density(n), (0, 1), monitor=loose, **kw).densities[-1]
        errs.append(np.max(np.abs(d.grid.resample(d.values, 256) - ref.values)) / np.max(ref.values))
    errs = np.array(errs)
    assert errs[0] > 1e-4 and errs[-1] < 1e-9
    for e0, e1 in zip(errs[:-1], errs[1:]):
        assert e1 < 0.1 * e0 or e1 < 1e-12  # at least a decade per step of 8–16 modes
    # geometric decay: log error linear in n with a clearly negative slope
    slope = np.polyfit(ns, np.log(errs), 1)[0]
    assert slope < -0.3


# ------------------------------------------------------------------ conservation and monotonicity
@pytest.mark.parametrize("normalized", [True, False])
@pytest.mark.parametrize("c", [1.0, -1.0])
def test_mass_and_energy_monotone(normalized, c):
    model = mf.SelfAttention(2.0, V=c * np.eye(2), normalized=normalized)
    t_end = 2.0 if normalized else 2.0 / np.exp(2.0)  # USA runs e^β times faster
    sol = mf.solve(model, smooth_density(128), (0, t_end), refine=True)
    assert np.max(np.abs(sol.mass_steps - 1.0)) <= 1e-12
    dE = np.diff(sol.energy_steps)
    if c > 0:
        assert np.all(dE >= -1e-12 * np.abs(sol.energy_steps[1:]))
        assert sol.energy[-1] > sol.energy[0] + 1e-3
    else:
        assert np.all(dE <= 1e-12 * np.abs(sol.energy_steps[1:]))
        assert sol.energy[-1] < sol.energy[0] - 1e-3


@pytest.mark.parametrize("normalized", [True, False])
@pytest.mark.parametrize("c", [1.0, -1.0])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_linear_rates_around_uniform(normalized, c, k):
    """Mode k of a small perturbation of the uniform density grows like e^{λ_k t}.

    Linearising ∂_t ρ = −∂_θ(ρ v) at ρ_0 = 1/2π with v = (c/β)∂_θ(K_β*ρ)/Z gives
    λ_k = c k² I_k(β) / (β Z), Z = I_0(β) for SA and Z = 1 for USA.
    """
    from scipy.special import iv

    beta, eps, T = 2.0, 1e-7, 1.0
    lam = c * k**2 * iv(k, beta) / (beta * (iv(0, beta) if normalized else 1.0))
    g = mf.CircleGrid(32)
    mu0 = mf.Density(g, (1 + eps * np.cos(k * g.angles)) / (2 * np.pi))
    model = mf.SelfAttention(beta, V=c * np.eye(2), normalized=normalized)
    d = mf.solve(model, mu0, (0, T), method="dop853", rtol=1e-13, atol=1e-18).densities[-1]
    amp = 2 * np.pi * 2 * np.abs(g.coefficients(d.values)[k])
    # the nonlinear correction is O(ε²) relative to the mode, i.e. O(ε) relatively
    assert amp / eps == pytest.approx(np.exp(lam * T), rel=1e-6)


# ------------------------------------------------------------------ quadrature vs spectral
@pytest.mark.parametrize("beta", [0.0, 1.0, 8.0, 40.0])
@pytest.mark.parametrize("normalized", [True, False])
def test_quadrature_and_spectral_rates_agree(beta, normalized):
    d = smooth_density(128)
    model = mf.SelfAttention(beta, normalized=normalized)
    a = rhs(CIRCLE, model, d.grid, "spectral").rate(d.values)
    b = rhs(CIRCLE, model, d.grid, "quadrature").rate(d.values)
    scale = np.max(np.abs(a))
    assert np.max(np.abs(a - b)) <= 1e-10 * max(scale, 1.0)


def test_quadrature_and_spectral_solutions_agree():
    d = smooth_density(96)
    kw = dict(t_eval=[0, 0.5, 1.0], dt=0.01)
    s = mf.solve(mf.SelfAttention(3.0), d, (0, 1), strategy="spectral", **kw)
    q = mf.solve(mf.SelfAttention(3.0), d, (0, 1), strategy="quadrature", **kw)
    assert s.strategy == "spectral" and q.strategy == "quadrature"
    for ds, dq in zip(s.densities, q.densities):
        assert np.max(np.abs(ds.values - dq.values)) <= 1e-10


def test_general_qkv_rotation_invariance():
    """Q = K = R (a rotation) leaves ⟨Qx, Ky⟩ unchanged: the quadrature path must reproduce Q = K = I."""
    phi = 0.7
    R = np.array([[np.cos(phi), -np.sin(phi)], [np.sin(phi), np.cos(phi)]])
    d = smooth_density(96)
    ref = mf.solve(mf.SelfAttention(2.0), d, (0, 1), dt=0.01)
    rot = mf.solve(mf.SelfAttention(2.0, Q=R, K=R), d, (0, 1), dt=0.01)
    assert rot.strategy == "quadrature" and rot.energy is None
    assert np.max(np.abs(ref.densities[-1].values - rot.densities[-1].values)) <= 1e-10


def test_rotating_the_density_rotates_the_solution():
    """Q = K = V = I commutes with rotations: shifting θ by a whole number of nodes shifts the solution."""
    d = smooth_density(96)
    shifted = mf.Density(d.grid, np.roll(d.values, 17))
    a = mf.solve(mf.SelfAttention(3.0), d, (0, 1), dt=0.01).densities[-1].values
    b = mf.solve(mf.SelfAttention(3.0), shifted, (0, 1), dt=0.01).densities[-1].values
    np.testing.assert_allclose(np.roll(a, 17), b, atol=1e-13)


def test_multihead_on_the_circle_uses_quadrature_and_conserves_mass():
    heads = [mf.SelfAttention(1.0), mf.SelfAttention(2.0, V=np.array([[0.5, 0.2], [-0.1, 1.0]]))]
    sol = mf.solve(mf.MultiHeadAttention(heads), smooth_density(64), (0, 1), dt=0.02, refine=True)
    assert sol.strategy == "quadrature"
    assert np.max(np.abs(sol.mass_steps - 1)) <= 1e-12


# ------------------------------------------------------------------ time integration
def test_rk4_is_fourth_order():
    d = smooth_density(64)
    model = mf.SelfAttention(4.0)
    exact_ish = mf.solve(model, d, (0, 1), method="dop853", rtol=1e-13, atol=1e-16).densities[-1].values
    hs = np.array([1 / 8, 1 / 16, 1 / 32, 1 / 64])
    errs = [np.max(np.abs(mf.solve(model, d, (0, 1), dt=h).densities[-1].values - exact_ish)) for h in hs]
    fit = observed_order(hs, errs)
    assert abs(fit.order - 4) < 0.15, fit


def test_ssprk3_is_third_order():
    d = smooth_density(64)
    model = mf.SelfAttention(4.0)
    exact_ish = mf.solve(model, d, (0, 1), method="dop853", rtol=1e-13, atol=1e-16).densities[-1].values
    hs = np.array([1 / 16, 1 / 32, 1 / 64])
    errs = [np.max(np.abs(mf.solve(model, d, (0, 1), method="ssprk3", dt=h).densities[-1].values - exact_ish)) for h in hs]
    assert abs(observed_order(hs, errs).order - 3) < 0.15


def test_outputs_land_on_t_eval():
    t_eval = [0.0, 0.1, 0.333, 1.0]
    for method in ("rk4", "rk45"):
        sol = mf.solve(mf.SelfAttention(1.0), smooth_density(128), (0, 1), t_eval=t_eval, method=method)
        np.testing.assert_array_equal(sol.t, t_eval)
        assert len(sol.densities) == 4 and sol.success


# ------------------------------------------------------------------ loss of resolution
def test_collapse_returns_the_resolved_part_with_its_time_never_nan():
    """The grid alone cannot follow a collapse: the solution ends where the monitor stopped it, every frame
    resolved; raising is there on request, with the same partial solution."""
    mu0 = mf.Density.from_function(mf.CircleGrid(64), lambda x: np.exp(4 * x[..., 0]))
    partial = mf.solve(mf.SelfAttention(4.0), mu0, (0, 30), t_eval=np.linspace(0, 30, 31), refine=False,
                       representation="grid")
    assert partial.status is mf.Status.RESOLUTION_LOST and not partial.success and 0 < partial.t_reached < 30
    assert partial.t[-1] == partial.t_reached and partial.t[:-1].tolist() == list(range(partial.t.size - 1))
    assert "tail" in partial.message and "refine=True" in partial.hint
    for d in partial.densities:
        assert np.all(np.isfinite(d.values))
        assert d.grid.spectral_tail(d.values) <= 1e-10
    with pytest.raises(mf.ResolutionError) as info:
        partial.raise_for_status()
    err = info.value
    assert err.t == partial.t_reached and f"t = {err.t:.6g}" in str(err) and err.solution is partial


def test_refinement_stops_at_max_n():
    mu0 = mf.Density.from_function(mf.CircleGrid(64), lambda x: np.exp(4 * x[..., 0]))
    sol = mf.solve(mf.SelfAttention(4.0), mu0, (0, 30), refine=True, max_n=256, representation="grid")
    assert sol.status is mf.Status.RESOLUTION_LOST and "max_n = 256" in sol.message
    assert sol.densities[-1].grid.n == 256 and [r[2] for r in sol.refinements] == [128, 256]
    with pytest.raises(mf.ResolutionError, match="max_n = 256"):
        mf.solve(mf.SelfAttention(4.0), mu0, (0, 30), refine=True, max_n=256, representation="grid",
                 raise_on_failure=True)


def test_unresolved_initial_density_is_refused():
    mu0 = mf.Density.from_function(mf.CircleGrid(16), lambda x: np.exp(20 * x[..., 0]))
    with pytest.raises(mf.ResolutionError, match="initial density") as info:
        mf.solve(mf.SelfAttention(1.0), mu0, (0, 1), refine=True)
    assert info.value.t == 0


def test_large_beta_sa_has_no_overflow():
    d = smooth_density(256)
    sol = mf.solve(mf.SelfAttention(800.0), d, (0, 0.05))
    assert np.all(np.isfinite(sol.densities[-1].values))
    assert sol.energy is None  # E_β overflows float64; monotonicity is still monitored
    a = rhs(CIRCLE, mf.SelfAttention(800.0), d.grid, "spectral").rate(d.values)
    b = rhs(CIRCLE, mf.SelfAttention(800.0), d.grid, "quadrature").rate(d.values)
    # two sums of a kernel e^{800(cos − 1)} peaked on a few nodes, divided (SA): 1.8e-11 of the rate's scale measured
    assert np.max(np.abs(a - b)) <= 1e-9 * np.max(np.abs(a))


def test_usa_overflow_is_reported():
    with pytest.raises(OverflowError, match="USA"):
        mf.solve(mf.SelfAttention(800.0, normalized=False), smooth_density(64), (0, 1))


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(t_span=(1, 0)), ValueError, "t_span"),
        (dict(t_span=(0, np.nan)), ValueError, "t_span"),
        (dict(t_span=(0, 1), t_eval=[0, 2]), ValueError, "t_eval"),
        (dict(t_span=(0, 1), t_eval=[0.5, 0.2]), ValueError, "t_eval"),
        (dict(t_span=(0, 1), method="euler"), ValueError, "method"),
        (dict(t_span=(0, 1), dt=-0.1), ValueError, "dt"),
        (dict(t_span=(0, 1), dt=0.1, method="rk45"), ValueError, "dt"),
        (dict(t_span=(0, 1), max_n=8), ValueError, "max_n"),
        (dict(t_span=(0, 1), strategy="fast"), ValueError, "strategy"),
        (dict(t_span=(0, 1), max_points=10, representation="grid"), ValueError, "max_points.*panels"),
        (dict(t_span=(0, 1), refine=True, representation="nodes"), ValueError, "refine.*grid"),
        (dict(t_span=(0, 1), method="rk4", representation="lagrangian"), ValueError, "method.*panels"),
        (dict(t_span=(0, 1), method="rk4", representation="nodes"), ValueError, "dt"),
        (dict(t_span=(0, 1), representation=("nodes", "grid")), ValueError, "grid cannot take over"),
        (dict(t_span=(0, 1), trackers=[object()]), TypeError, "trackers"),
        (dict(t_span=(0, 1), events=[1.0]), TypeError, "events"),
    ],
)
def test_solve_rejects_bad_arguments(kwargs, exc, match):
    t_span = kwargs.pop("t_span")
    with pytest.raises(exc, match=match):
        mf.solve(mf.SelfAttention(1.0), smooth_density(32), t_span, **kwargs)


def test_solve_rejects_wrong_model_or_density():
    with pytest.raises(ValueError, match="3×3"):
        mf.solve(mf.SelfAttention(1.0, Q=np.eye(3)), smooth_density(32), (0, 1))
    with pytest.raises(TypeError, match="mu0"):
        mf.solve(mf.SelfAttention(1.0), np.ones(32), (0, 1))
    with pytest.raises(TypeError, match="model"):
        mf.solve("SA", smooth_density(32), (0, 1))
    with pytest.raises(ValueError, match="strategy.*spectral.*Q = qI"):
        mf.solve(mf.SelfAttention(1.0, Q=np.diag([1.0, 2.0])), smooth_density(32), (0, 1), strategy="spectral")


def test_a_refused_initial_density_is_the_errors_solution():
    """ResolutionError.solution always holds at least the initial state (``sol = e.solution`` in a handler)."""
    import meanfield as mf
    from meanfield.integrate.monitor import ResolutionError

    grid = mf.CircleGrid(16)
    th = grid.angles
    rho = np.exp(200 * (np.cos(th) - 1))
    mu0 = mf.Density(grid, rho / grid.integrate(rho))
    with pytest.raises(ResolutionError) as e:
        mf.solve(mf.SelfAttention(1.0), mu0, (0.0, 1.0))
    sol = e.value.solution
    assert e.value.initial and e.value.t == 0.0
    assert sol.t.tolist() == [0.0] and np.array_equal(sol.densities[0].values, mu0.values)
    assert sol.mass[0] == pytest.approx(1.0, abs=1e-14) and sol.status.value == "resolution lost"


def test_events_locate_the_exact_crossing_and_trackers_see_every_step():
    """β = 0 from a wrapped Cauchy law: |∫e^{iθ}dμ| = |a(t)| of Ott–Antonsen, |a|² = r²e^t/(1 − r² + r²e^t), crosses
    0.6 at t* = log(0.36(1 − r²)/(0.64 r²)). The event's secant root between accepted steps (dt = 0.01) is within
    1e-5 of t*; a terminal event stops there with status EVENT, a non-terminal one lets the run end; a user's
    tracker sees every accepted step."""
    r = 0.3
    t_star = np.log(0.36 * (1 - r * r) / (0.64 * r * r))

    def order(t, frame):
        points, weights = frame.as_measure()
        return abs(np.sum(weights * (points[:, 0] + 1j * points[:, 1]))) - 0.6

    class Steps:
        def __init__(self):
            self.t = []

        def handle(self, t, frame, dt):
            self.t.append(t)

    steps = Steps()
    order.terminal = False
    go_on = mf.solve(mf.SelfAttention(0.0), cauchy_density(256, r), (0.0, 3.0), dt=0.01, representation="grid",
                     events=[order], trackers=[steps])
    assert go_on.status is mf.Status.SUCCESS and go_on.t_reached == 3.0
    assert go_on.t_events[0].size == 1 and abs(go_on.t_events[0][0] - t_star) <= 1e-5
    assert len(steps.t) == go_on.nsteps and np.all(np.diff(steps.t) > 0)
    order.terminal = True
    stop = mf.solve(mf.SelfAttention(0.0), cauchy_density(256, r), (0.0, 3.0), dt=0.01, representation="grid",
                    events=[order])
    assert stop.status is mf.Status.EVENT and abs(stop.t_events[0][0] - t_star) <= 1e-5
    assert t_star <= stop.t_reached <= t_star + 0.01 + 1e-12


# ------------------------------------------------------------------ progress: auto by default
def test_progress_defaults_to_on_exactly_where_stderr_is_a_terminal(monkeypatch, tqdm_bars):
    """solve(progress=None), the default, resolves to sys.stderr.isatty(): off under pytest (standard error is
    captured, not a terminal), on where isatty says so; False and meanfield.core.checks.quiet() (the command's --quiet)
    turn it off there, True turns it on anywhere."""
    import sys

    from meanfield.core import checks

    def shown():  # whether each bar made so far is displayed
        return [on for on, _ in tqdm_bars]

    model, mu0 = mf.SelfAttention(1.0), mf.Density.uniform(mf.CircleGrid(16))
    assert not sys.stderr.isatty() and checks.progress(None) is False  # pytest's captured stream
    mf.solve(model, mu0, (0, 0.1))
    assert shown() == [False]
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert checks.progress(None) is True
    mf.solve(model, mu0, (0, 0.1))
    mf.solve(model, mu0, (0, 0.1), progress=False)
    with checks.quiet():
        assert checks.progress(None) is False and checks.progress(True) is True
        mf.solve(model, mu0, (0, 0.1))
    assert shown() == [False, True, False, False]
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    mf.solve(model, mu0, (0, 0.1), progress=True)
    assert shown()[-1] is True
    with pytest.raises(TypeError, match="progress"):
        checks.progress("yes")


def test_a_refinement_stop_names_the_grid_it_reached():
    """Issue 46, finding 7: the message said "refinement stopped at max_n = 1024" where the grid had reached a coarser
    one (the next doubling would pass max_n): it names the grid reached and the doubling refused (here in the reason
    of the hand-over to the panels, as the zonal hand-over's)."""
    sol = mf.solve(mf.SelfAttention(8.0), smooth_density(64), (0, 3), max_n=160)
    assert sol.refinements and sol.refinements[-1][2] == 128
    assert "refinement stopped at CircleGrid(n=128) (n = 128): the next grid, n = 256, would pass max_n = 160" \
        in sol.message, sol.message
